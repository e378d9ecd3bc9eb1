-- Guards and assignments: jsonpath over {"event": payload, "context": ...},
-- evaluated in SQL. Candidates are tried in order and the first whose guard
-- holds wins; a guard that errors or finds nothing does not hold; assignments
-- read the document as it was before the transition; an expression that
-- yields nothing sets null.
BEGIN;
SELECT plan(39);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset

SELECT flowforge.define_workflow($${"name": "ga", "kind": "statemachine", "initial": "s",
  "context": {"n": 0, "limit": 10, "who": "ann", "keep": "me"},
  "states": {
    "s": {"on": {
        "pick":   [{"target": "a", "guard": "$.event.k == 1"},
                   {"target": "b", "guard": "$.event.k >= 1"},
                   {"target": "c"}],
        "ctx":    [{"target": "a", "guard": "$.context.n >= $.context.limit"},
                   {"target": "b", "guard": "$.context.who == $.event.who"}],
        "count":  [{"target": "s", "assign": {"n": "$.context.n + 1"}}],
        "set":    [{"target": "s", "assign": {"from_event": "$.event.v", "from_context": "$.context.who",
                                              "lit_s": "\"shipped\"", "lit_n": "42", "lit_b": "true",
                                              "missing": "$.event.nope", "obj": "$.event.o", "first": "$.event.xs[*]",
                                              "cmp": "$.event.v > 1", "ev_null": "$.event.z"}}],
        "swap":   [{"target": "s", "assign": {"n": "$.context.limit", "limit": "$.context.n"}}],
        "chain":  [{"target": "s", "assign": {"n": "$.context.n + 1", "was": "$.context.n", "twice": "$.context.n * 2"}}],
        "err":    [{"target": "a", "guard": "$.event.s + 1 > 0"},
                   {"target": "b", "guard": "$.event.k / 0 > 0"},
                   {"target": "c", "guard": "$.context.nope.deep == 1"},
                   {"target": "s", "assign": {"q": "$.event.k / 0", "r": "$.event.s * 2"}}],
        "strict": [{"target": "a", "guard": "strict $.event.nope == 1"}, {"target": "b"}],
        "flag":   [{"target": "a", "guard": "exists($.event.flag)"}, {"target": "b", "guard": "!exists($.event.flag)"}],
        "mail":   [{"target": "a", "guard": "$.event.email like_regex \"@example[.]com$\""}, {"target": "b"}],
        "both":   [{"target": "a", "guard": "$.event.amount >= $.context.limit && $.context.who == \"ann\""}],
        "rename": [{"target": "s", "assign": {"who": "$.event.who"}}]}},
    "a": {"on": {"back": "s"}}, "b": {"on": {"back": "s"}}, "c": {"on": {"back": "s"}}}}$$) \gset
SELECT flowforge.start_run('ga') AS r \gset

-- The state the event leads to, and which candidate took it.
CREATE FUNCTION pg_temp.send(p_event text, p_payload jsonb DEFAULT '{}') RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    v_run uuid := current_setting('ga.run')::uuid;
    v_state text;
BEGIN
    v_state := flowforge.send_event(v_run, p_event, p_payload) ->> 'state';
    RETURN v_state || ' by candidate ' || (SELECT t.detail ->> 'candidate' FROM flowforge.machine_transition t
                                           WHERE t.run_id = v_run ORDER BY t.n DESC LIMIT 1);
END;
$$;
SELECT set_config('ga.run', :'r', true) \gset
CREATE FUNCTION pg_temp.back() RETURNS boolean LANGUAGE sql AS $$
    SELECT flowforge.send_event(current_setting('ga.run')::uuid, 'back') ->> 'state' = 's';
$$;
CREATE FUNCTION pg_temp.context() RETURNS jsonb LANGUAGE sql AS $$
    SELECT m.context FROM flowforge.machine_run m WHERE m.run_id = current_setting('ga.run')::uuid
$$;

-- --------------------------------------------------------- candidates in order
SELECT is(pg_temp.send('pick', '{"k": 1}'), 'a by candidate 1', 'k = 1: the first guard holds (the second would too): the first wins');
SELECT pg_temp.back() AS ignored \gset
SELECT is(pg_temp.send('pick', '{"k": 2}'), 'b by candidate 2', 'k = 2: the first guard is false, the second holds');
SELECT pg_temp.back() AS ignored \gset
SELECT is(pg_temp.send('pick', '{"k": 0}'), 'c by candidate 3', 'k = 0: both guards false, the unguarded candidate is taken');
SELECT pg_temp.back() AS ignored \gset
SELECT is(pg_temp.send('pick'), 'c by candidate 3', 'no k at all: the guards find nothing and do not hold');
SELECT pg_temp.back() AS ignored \gset
SELECT is(pg_temp.send('pick', '{"k": "1"}'), 'c by candidate 3', 'k a string: "1" == 1 is not true (no coercion)');
SELECT pg_temp.back() AS ignored \gset

-- --------------------------------------------------------- guards over the context
SELECT is(pg_temp.send('ctx', '{"who": "ann"}'), 'b by candidate 2',
    'a guard over the context alone (n >= limit: false), then one comparing context and event (true)');
SELECT pg_temp.back() AS ignored \gset
SELECT throws_ok(format($$SELECT flowforge.send_event(%L, 'ctx', '{"who": "bob"}')$$, :'r'), 'FF012',
    'event "ctx" refused: no guard of event "ctx" holds in state "s"', 'every guard false: FF012');
SELECT is(pg_temp.send('both', '{"amount": 10}'), 'a by candidate 1', 'a guard with && over event and context holds');
SELECT pg_temp.back() AS ignored \gset
SELECT throws_ok(format($$SELECT flowforge.send_event(%L, 'both', '{"amount": 9}')$$, :'r'), 'FF012', NULL,
    'and does not when one side is false');

-- --------------------------------------------------------- erroring / unknown guards
SELECT is(pg_temp.send('err', '{"s": "text", "k": 5}'), 's by candidate 4',
    'a guard that errors (string + 1, division by zero) or finds nothing (an unknown context key) does not hold');
SELECT is(pg_temp.context() -> 'q', 'null'::jsonb, 'an assignment that errors (division by zero) sets null');
SELECT is(pg_temp.context() -> 'r', 'null'::jsonb, 'an assignment of the wrong type (string * 2) sets null');
SELECT is(pg_temp.send('strict', '{}'), 'b by candidate 2', 'a strict-mode guard on a missing key errors and does not hold');
SELECT pg_temp.back() AS ignored \gset
SELECT is(pg_temp.send('flag', '{"flag": false}'), 'a by candidate 1', 'exists() holds for a key that is there (even false)');
SELECT pg_temp.back() AS ignored \gset
SELECT is(pg_temp.send('flag', '{}'), 'b by candidate 2', '!exists() holds when it is not');
SELECT pg_temp.back() AS ignored \gset
SELECT is(pg_temp.send('mail', '{"email": "ada@example.com"}'), 'a by candidate 1', 'like_regex holds on a match');
SELECT pg_temp.back() AS ignored \gset
SELECT is(pg_temp.send('mail', '{"email": "ada@example.org"}'), 'b by candidate 2', 'and not otherwise');
SELECT pg_temp.back() AS ignored \gset
SELECT is(pg_temp.send('mail', '{"email": 7}'), 'b by candidate 2', 'like_regex on a number does not hold');
SELECT pg_temp.back() AS ignored \gset

-- ------------------------------------------------------------------ assignments
SELECT flowforge.send_event(:'r', 'count') ->> 'state' AS ignored \gset
SELECT flowforge.send_event(:'r', 'count') ->> 'state' AS ignored \gset
SELECT flowforge.send_event(:'r', 'count') ->> 'state' AS ignored \gset
SELECT is(pg_temp.context() -> 'n', '3'::jsonb, 'arithmetic: $.context.n + 1, three times, from 0');
SELECT is(flowforge.send_event(:'r', 'set', '{"v": 5, "o": {"deep": [1, 2]}, "xs": [7, 8, 9], "z": null}') ->> 'outcome',
    'applied', 'setup: the set event');
SELECT is(pg_temp.context() -> 'from_event', '5'::jsonb, 'assign from the event');
SELECT is(pg_temp.context() -> 'from_context', '"ann"'::jsonb, 'assign from the context');
SELECT is(pg_temp.context() -> 'lit_s', '"shipped"'::jsonb, 'a string literal');
SELECT is(pg_temp.context() -> 'lit_n', '42'::jsonb, 'a number literal');
SELECT is(pg_temp.context() -> 'lit_b', 'true'::jsonb, 'a boolean literal');
SELECT is(pg_temp.context() -> 'obj', '{"deep": [1, 2]}'::jsonb, 'an object from the event, whole');
SELECT is(pg_temp.context() -> 'first', '7'::jsonb, 'a path yielding several values: the first');
SELECT is(pg_temp.context() -> 'cmp', 'true'::jsonb, 'a predicate as an expression: its boolean');
SELECT ok(pg_temp.context() ? 'missing' AND pg_temp.context() -> 'missing' = 'null'::jsonb,
    'an assignment that yields nothing sets the key, to null');
SELECT is(pg_temp.context() -> 'ev_null', 'null'::jsonb, 'an event value that is null is null');
SELECT is(pg_temp.context() - ARRAY['from_event', 'from_context', 'lit_s', 'lit_n', 'lit_b', 'obj', 'first', 'cmp', 'missing',
                                    'ev_null', 'q', 'r'],
    '{"n": 3, "limit": 10, "who": "ann", "keep": "me"}'::jsonb, 'keys not assigned are kept');

-- Against the pre-transition document.
SELECT flowforge.send_event(:'r', 'swap') ->> 'state' AS ignored \gset
SELECT results_eq($$SELECT pg_temp.context() -> 'n', pg_temp.context() -> 'limit'$$, $$VALUES ('10'::jsonb, '3'::jsonb)$$,
    'n := limit and limit := n swap: both read the context as it was before the transition');
SELECT flowforge.send_event(:'r', 'chain') ->> 'state' AS ignored \gset
SELECT results_eq($$SELECT pg_temp.context() -> 'n', pg_temp.context() -> 'was', pg_temp.context() -> 'twice'$$,
    $$VALUES ('11'::jsonb, '10'::jsonb, '20'::jsonb)$$,
    'n := n + 1 beside was := n and twice := n * 2: the others see the old n');
SELECT flowforge.send_event(:'r', 'rename', '{"who": "bob"}') ->> 'state' AS ignored \gset
SELECT is(pg_temp.context() ->> 'who', 'bob', 'an assignment replaces an existing context key');
SELECT is(pg_temp.context() ->> 'keep', 'me', 'and leaves the others');
SELECT is(pg_temp.send('ctx', '{"who": "nobody"}'), 'a by candidate 1',
    'a later guard sees the context earlier assignments left (n 11 >= limit 3 now holds; at the start it did not)');

-- The transition that assigns records the payload; the context change is in the run row.
SELECT results_eq(format($$SELECT event::text, payload FROM flowforge.machine_transition WHERE run_id = %L AND event = 'rename'$$, :'r'),
    $$VALUES ('rename', '{"who": "bob"}'::jsonb)$$, 'the history keeps the payload the guards and assignments read');

-- Guards and assignments are judged per candidate, in definition order, on every path:
-- a guard that is false leaves the context untouched.
SELECT pg_temp.back() AS ignored \gset
SELECT pg_temp.context() AS before_refusal \gset
SELECT throws_ok(format($$SELECT flowforge.send_event(%L, 'both', '{"amount": 1}')$$, :'r'), 'FF012', NULL,
    'a refused event (guard false)');
SELECT is(pg_temp.context(), :'before_refusal'::jsonb, 'leaves the context as it was');

SELECT * FROM finish();
ROLLBACK;
