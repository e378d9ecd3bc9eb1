-- Machine definitions: every refusal of _normalize_machine_spec is FF002 with
-- a message naming the problem (the state, the event, the timer) and writes
-- nothing; a valid spec is normalized (transitions as candidate lists,
-- jsonpaths and durations canonical), versioned by content, and materialised
-- as one task row per state.
BEGIN;
SELECT plan(107);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset

-- A valid machine every refusal below breaks in one place:
--   idle --go--> work (action) --done--> done; work --error--> idle; idle --1 hour--> done.
CREATE FUNCTION pg_temp.base() RETURNS jsonb LANGUAGE sql AS $f$
    SELECT $${"name": "vm", "kind": "statemachine", "initial": "idle", "context": {"n": 0},
              "states": {
                "idle": {"on": {"go": "work"}, "after": [{"delay": "1 hour", "target": "done"}]},
                "work": {"action": {"task": "do_it"}, "on_done": "done", "on_error": "idle"},
                "done": {"final": true}}}$$::jsonb
$f$;
-- The base with one value set (jsonb_set creates the last key if missing), or one removed.
CREATE FUNCTION pg_temp.with(p_path text[], p_value jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_set(pg_temp.base(), p_path, p_value, true)
$$;
CREATE FUNCTION pg_temp.without(p_path text[]) RETURNS jsonb LANGUAGE sql AS $$ SELECT pg_temp.base() #- p_path $$;
-- define_workflow(p_spec) is refused with FF002 and the message (prefix added); NULL = any message.
CREATE FUNCTION pg_temp.refused(p_spec jsonb, p_message text, p_description text) RETURNS text LANGUAGE sql AS $$
    SELECT throws_ok(format('SELECT flowforge.define_workflow(%L::jsonb)', p_spec), 'FF002',
                     CASE WHEN p_message IS NOT NULL THEN 'invalid workflow definition: ' || p_message END,
                     p_description)
$$;

SELECT lives_ok(format('SELECT flowforge.define_workflow(%L::jsonb)', pg_temp.base()), 'setup: the base machine is valid');
SELECT count(*) AS workflows_before FROM flowforge.workflow \gset
SELECT count(*) AS tasks_before FROM flowforge.task \gset
SELECT count(*) AS audit_before FROM flowforge.audit_log \gset

-- ------------------------------------------------------------ the spec itself
SELECT pg_temp.refused(pg_temp.base() || '{"kind": "machine"}',
    'kind "machine" is not supported (supported: "dag", "graph", "statemachine")',
    'an unknown kind: FF002 listing the kinds, statemachine among them');
SELECT pg_temp.refused(pg_temp.with('{tasks}', '[]'),
    'unknown field "tasks" (known for a statemachine: name, kind, description, initial, context, states)',
    'an unknown field of the spec: FF002 listing the known ones');
SELECT pg_temp.refused(pg_temp.with('{name}', '"1vm"'),
    'name must be a string of 1-63 letters, digits, "_" or "-" starting with a letter, got "1vm"', 'a bad name: FF002');
SELECT pg_temp.refused(pg_temp.without('{name}'),
    'name must be a string of 1-63 letters, digits, "_" or "-" starting with a letter, got nothing', 'no name: FF002');
SELECT pg_temp.refused(pg_temp.with('{description}', '5'), 'description must be a string', 'a description that is not a string: FF002');
SELECT pg_temp.refused(pg_temp.with('{context}', '[1, 2]'),
    'context must be a JSON object (the machine''s starting data), got array', 'context an array: FF002');
SELECT pg_temp.refused(pg_temp.with('{context}', '"n"'),
    'context must be a JSON object (the machine''s starting data), got string', 'context a string: FF002');
SELECT pg_temp.refused(pg_temp.with('{states}', '{}'),
    'states must be a non-empty object of state names and states', 'no states: FF002');
SELECT pg_temp.refused(pg_temp.with('{states}', '[{"name": "idle"}]'),
    'states must be a non-empty object of state names and states', 'states a list: FF002');
SELECT pg_temp.refused(pg_temp.without('{states}'),
    'states must be a non-empty object of state names and states', 'states missing: FF002');

-- --------------------------------------------------------------------- initial
SELECT pg_temp.refused(pg_temp.with('{initial}', '"nowhere"'), 'initial names unknown state "nowhere"',
    'an unknown initial: FF002 naming it');
SELECT pg_temp.refused(pg_temp.without('{initial}'), 'initial must name the state a run begins in', 'no initial: FF002');
SELECT pg_temp.refused(pg_temp.with('{initial}', '["idle"]'), 'initial must name the state a run begins in',
    'initial not a string: FF002');

-- ----------------------------------------------------------------- state names
SELECT pg_temp.refused(pg_temp.with('{states,1st}', '{"final": true}'),
    'state name "1st" must be 1-63 letters, digits, "_" or "-" starting with a letter', 'a state name starting with a digit: FF002');
SELECT pg_temp.refused(pg_temp.with('{states,on hold}', '{"final": true}'),
    'state name "on hold" must be 1-63 letters, digits, "_" or "-" starting with a letter', 'a state name with a space: FF002');
SELECT pg_temp.refused(pg_temp.with(ARRAY['states', 's' || repeat('x', 63)], '{"final": true}'), NULL,
    'a state name of 64 characters: FF002');
SELECT pg_temp.refused(pg_temp.with('{states,idle}', '"work"'), 'state "idle" must be an object, got "work"',
    'a state that is not an object: FF002 naming it');

-- ---------------------------------------------------------------- unknown targets
SELECT pg_temp.refused(pg_temp.with('{states,idle,on,go}', '"nowhere"'),
    'state "idle", event "go": target names unknown state "nowhere"', 'an unknown target in on: FF002 naming the state and event');
SELECT pg_temp.refused(pg_temp.with('{states,idle,on,go}', '[{"target": "work", "guard": "$.event.x == 1"}, {"target": "nowhere"}]'),
    'state "idle", event "go": target names unknown state "nowhere"', 'an unknown target in the second candidate: FF002');
SELECT pg_temp.refused(pg_temp.with('{states,idle,on,go}', '[{"guard": "$.event.x == 1"}]'),
    'state "idle", event "go": target names unknown state nothing', 'a candidate without a target: FF002');
SELECT pg_temp.refused(pg_temp.with('{states,idle,on,go}', '[{"target": 5}]'),
    'state "idle", event "go": target names unknown state 5', 'a target that is not a string: FF002');
SELECT pg_temp.refused(pg_temp.with('{states,idle,after}', '[{"delay": "1 hour", "target": "nowhere"}]'),
    'state "idle", timer 1: target names unknown state "nowhere"', 'an unknown target in after: FF002 naming the state and timer');
SELECT pg_temp.refused(pg_temp.with('{states,idle,after}', '[{"delay": "1 hour", "target": "done"}, {"delay": "2 hours"}]'),
    'state "idle", timer 2: target names unknown state nothing', 'a second timer without a target: FF002 naming timer 2');
SELECT pg_temp.refused(pg_temp.with('{states,work,on_done}', '"nowhere"'),
    'state "work": on_done names unknown state "nowhere"', 'an unknown on_done: FF002');
SELECT pg_temp.refused(pg_temp.with('{states,work,on_error}', '"nowhere"'),
    'state "work": on_error names unknown state "nowhere"', 'an unknown on_error: FF002');
SELECT pg_temp.refused(pg_temp.with('{states,work,on_done}', '["done"]'),
    'state "work": on_done names unknown state ["done"]', 'on_done not a state name: FF002');

-- ------------------------------------------------------------------ reachability
SELECT pg_temp.refused(pg_temp.with('{states,orphan}', '{"final": true}'),
    'state "orphan" cannot be reached from initial "idle"', 'a state nothing leads to: FF002 naming it');
SELECT pg_temp.refused(pg_temp.with('{states,island}', '{"on": {"again": "island"}}'),
    'state "island" cannot be reached from initial "idle"', 'a state only reachable from itself: FF002');
SELECT lives_ok(format('SELECT flowforge._normalize_machine_spec(%L::jsonb)', pg_temp.with('{states}',
        '{"idle": {"on": {"go": "work"}}, "work": {"action": {"task": "do_it"}, "on_done": "done"}, "done": {"final": true}}')),
    'a state reached only through on_done counts as reachable');
SELECT lives_ok(format('SELECT flowforge._normalize_machine_spec(%L::jsonb)', pg_temp.with('{states}',
        '{"idle": {"on": {"go": "work"}}, "work": {"action": {"task": "do_it"}, "on_done": "idle", "on_error": "done"},
          "done": {"final": true}}')),
    'a state reached only through on_error counts as reachable');
SELECT lives_ok(format('SELECT flowforge._normalize_machine_spec(%L::jsonb)', pg_temp.with('{states}',
        '{"idle": {"on": {"go": "idle"}, "after": [{"delay": "1 hour", "target": "done"}]}, "done": {"final": true}}')),
    'a state reached only through a timer counts as reachable');
SELECT lives_ok(format('SELECT flowforge._normalize_machine_spec(%L::jsonb)', pg_temp.with('{states}',
        '{"idle": {"on": {"go": [{"target": "idle", "guard": "$.event.x == 1"}, {"target": "done"}]}}, "done": {"final": true}}')),
    'a state reached only through a later candidate counts as reachable');

-- ---------------------------------------------------------------- final states
SELECT pg_temp.refused(pg_temp.with('{states,done,on}', '{"go": "idle"}'),
    'state "done" is final: it ends the run, so it takes no "on" (only final, description)', 'a final state with on: FF002');
SELECT pg_temp.refused(pg_temp.with('{states,done,after}', '[{"delay": "1 hour", "target": "idle"}]'),
    'state "done" is final: it ends the run, so it takes no "after" (only final, description)', 'a final state with after: FF002');
SELECT pg_temp.refused(pg_temp.with('{states,done,action}', '{"task": "do_it"}'),
    'state "done" is final: it ends the run, so it takes no "action" (only final, description)', 'a final state with an action: FF002');
SELECT pg_temp.refused(pg_temp.with('{states,done,on_done}', '"idle"'),
    'state "done" is final: it ends the run, so it takes no "on_done" (only final, description)', 'a final state with on_done: FF002');
SELECT pg_temp.refused(pg_temp.with('{states,done,final}', '"yes"'),
    'state "done": final must be true or false', 'final not a boolean: FF002');

-- --------------------------------------------------------------- action states
SELECT pg_temp.refused(pg_temp.without('{states,work,on_done}'),
    'state "work" has an action but no on_done: name the state the machine enters when it succeeds',
    'an action state without on_done: FF002');
SELECT pg_temp.refused(pg_temp.with('{states,work,on}', '{"go": "done"}'),
    'state "work" has an action: events wait while it runs and it is left by on_done / on_error, so it takes no '
    '"on" or "after" (put them on the state on_done leads to)', 'an action state with on: FF002');
SELECT pg_temp.refused(pg_temp.with('{states,work,after}', '[{"delay": "1 hour", "target": "done"}]'),
    'state "work" has an action: events wait while it runs and it is left by on_done / on_error, so it takes no '
    '"on" or "after" (put them on the state on_done leads to)', 'an action state with after: FF002');
SELECT pg_temp.refused(pg_temp.with('{states,idle,on_done}', '"done"'),
    'state "idle": on_done and on_error follow an action, and this state has none', 'on_done without an action: FF002');
SELECT pg_temp.refused(pg_temp.with('{states,idle,on_error}', '"done"'),
    'state "idle": on_done and on_error follow an action, and this state has none', 'on_error without an action: FF002');
SELECT pg_temp.refused(pg_temp.with('{states,work,action}', '"do_it"'),
    'state "work": action must be an object {"task", ...}', 'an action that is not an object: FF002');
SELECT pg_temp.refused(pg_temp.with('{states,work,action}', '{"queue": "q"}'),
    'state "work", action: task must be the task name a worker handles (1-63 letters, digits, "_" or "-" starting '
    'with a letter), got nothing', 'an action without a task: FF002');
SELECT pg_temp.refused(pg_temp.with('{states,work,action,task}', '"do it"'),
    'state "work", action: task must be the task name a worker handles (1-63 letters, digits, "_" or "-" starting '
    'with a letter), got "do it"', 'a bad task name: FF002');
SELECT pg_temp.refused(pg_temp.with('{states,work,action,max_attempts}', '0'),
    'state "work", action: max_attempts must be an integer between 1 and 1000, got 0',
    'an action''s unit fields are validated like a task''s (max_attempts 0): FF002 naming the state');
SELECT pg_temp.refused(pg_temp.with('{states,work,action,queue}', '"no queue"'),
    'state "work", action: queue must be 1-63 letters, digits, "_", "." or "-" starting with a letter, got "no queue"',
    'a bad action queue: FF002');
SELECT pg_temp.refused(pg_temp.with('{states,work,action,backoff}', '"-1 second"'),
    'state "work", action: backoff must not be negative, got "-1 second"', 'a negative action backoff: FF002');

-- ---------------------------------------------------------------- no way out
SELECT pg_temp.refused(pg_temp.with('{states,idle}', '{"on": {}}'),
    'state "idle" is not final and has no way out: give it "on" events, "after" timers or an action',
    'a state with an empty on: FF002');
SELECT pg_temp.refused(jsonb_set(pg_temp.with('{states,idle,on,stuck}', '"stuck"'), '{states,stuck}',
                                 '{"description": "waits forever"}'),
    'state "stuck" is not final and has no way out: give it "on" events, "after" timers or an action',
    'a state with nothing but a description: FF002 naming it');
SELECT pg_temp.refused(pg_temp.with('{states,idle}', '{"final": false}'),
    'state "idle" is not final and has no way out: give it "on" events, "after" timers or an action',
    'a state that is only "final": false: FF002');

-- --------------------------------------------------------------- transitions
SELECT pg_temp.refused(pg_temp.with('{states,idle,on}', '["go"]'),
    'state "idle": on must be an object of event names and transitions, such as {"paid": "shipping"}', 'on a list: FF002');
SELECT pg_temp.refused(pg_temp.with('{states,idle,on,go}', '[]'),
    'state "idle", event "go": a transition is a target state name or a list of 1 to 100 candidates {"target", '
    '"guard", "assign"}, got []', 'an empty candidate list: FF002');
SELECT pg_temp.refused(pg_temp.with('{states,idle,on,go}', '5'), NULL, 'a transition that is a number: FF002');
SELECT pg_temp.refused(pg_temp.with('{states,idle,on,go}', '["work"]'),
    'state "idle", event "go", candidate 1: must be an object, got "work"', 'a list of names, not candidates: FF002');
SELECT pg_temp.refused(pg_temp.with('{states,idle,on,go}', '[{"target": "work", "description": 5}]'),
    'state "idle", event "go": description must be a string', 'a candidate description that is not a string: FF002');

-- ----------------------------------------------------------------- event names
SELECT pg_temp.refused(pg_temp.with('{states,idle,on,1go}', '"work"'),
    'state "idle": event name "1go" must be 1-200 letters, digits, "_", ".", ":" or "-" starting with a letter',
    'an event name starting with a digit: FF002 naming the state and event');
SELECT pg_temp.refused(pg_temp.with('{states,idle,on,go now}', '"work"'),
    'state "idle": event name "go now" must be 1-200 letters, digits, "_", ".", ":" or "-" starting with a letter',
    'an event name with a space: FF002');
SELECT pg_temp.refused(pg_temp.with(ARRAY['states', 'idle', 'on', 'e' || repeat('x', 200)], '"work"'), NULL,
    'an event name of 201 characters: FF002');
SELECT lives_ok(format('SELECT flowforge._normalize_machine_spec(%L::jsonb)',
                       pg_temp.with('{states,idle,on}', jsonb_build_object('order.paid', 'work', 'stripe:charge.succeeded-2', 'work',
                                                                           'e' || repeat('x', 199), 'work'))),
    'event names with ".", ":" and "-", and of 200 characters, are accepted');

-- -------------------------------------------------------------------- guards
SELECT pg_temp.refused(pg_temp.with('{states,idle,on,go}', '[{"target": "work", "guard": "$.event.amount >="}]'),
    'state "idle", event "go": guard must be a jsonpath predicate over {"event", "context"}, such as '
    '"$.event.amount >= $.context.total", got "$.event.amount >="',
    'a guard that is not a jsonpath: FF002 naming the state and event');
SELECT pg_temp.refused(pg_temp.with('{states,idle,on,go}', '[{"target": "work", "guard": "$.event.amount"}]'),
    'state "idle", event "go": guard must be a jsonpath predicate over {"event", "context"}, such as '
    '"$.event.amount >= $.context.total", got "$.event.amount"',
    'a guard that is a path, not a predicate: FF002 naming the state and event');
SELECT pg_temp.refused(pg_temp.with('{states,idle,on,go}', '[{"target": "work", "guard": "$.context"}]'), NULL,
    'a guard that is a path to an object: FF002');
SELECT pg_temp.refused(pg_temp.with('{states,idle,on,go}', '[{"target": "work", "guard": true}]'),
    'state "idle", event "go": guard must be a jsonpath predicate over {"event", "context"}, such as '
    '"$.event.amount >= $.context.total", got true', 'a guard that is a JSON boolean, not a string: FF002');

-- ------------------------------------------------------------------- assign
SELECT pg_temp.refused(pg_temp.with('{states,idle,on,go}', '[{"target": "work", "assign": {"paid": "$.event.("}}]'),
    'state "idle", event "go": assign "paid" must be a jsonpath expression over {"event", "context"}, got "$.event.("',
    'an assignment that is not a jsonpath: FF002 naming the state, the event and the key');
SELECT pg_temp.refused(pg_temp.with('{states,idle,on,go}', '[{"target": "work", "assign": {"paid": 5}}]'),
    'state "idle", event "go": assign "paid" must be a jsonpath expression over {"event", "context"}, got 5',
    'an assignment that is a number, not a jsonpath string: FF002');
SELECT pg_temp.refused(pg_temp.with('{states,idle,on,go}', '[{"target": "work", "assign": {}}]'),
    'state "idle", event "go": assign must be a non-empty object of context keys and jsonpath expressions, such as '
    '{"paid_amount": "$.event.amount"}', 'an empty assign: FF002');
SELECT pg_temp.refused(pg_temp.with('{states,idle,on,go}', '[{"target": "work", "assign": ["$.event.a"]}]'), NULL,
    'an assign that is a list: FF002');
SELECT pg_temp.refused(pg_temp.with('{states,idle,on,go}', '[{"target": "work", "assign": {"": "$.event.a"}}]'),
    'state "idle", event "go": assign keys must be 1 to 200 characters', 'an empty assign key: FF002');

-- -------------------------------------------------------------------- delays
SELECT pg_temp.refused(pg_temp.with('{states,idle,after,0,delay}', '"-1 hour"'),
    'state "idle", timer 1: delay must not be negative, got "-1 hour"', 'a negative delay: FF002 naming the state and timer');
SELECT pg_temp.refused(pg_temp.with('{states,idle,after,0,delay}', '"1 day -25 hours"'),
    'state "idle", timer 1: delay must not be negative, got "1 day -25 hours"', 'a delay that adds up to negative: FF002');
SELECT pg_temp.refused(pg_temp.with('{states,idle,after,0,delay}', '"0 seconds"'),
    'state "idle", timer 1: delay must be longer than zero', 'a zero delay: FF002');
SELECT pg_temp.refused(pg_temp.with('{states,idle,after,0,delay}', '"367 days"'),
    'state "idle", timer 1: delay must be at most 366 days, got "367 days"', 'a delay over 366 days: FF002');
SELECT pg_temp.refused(pg_temp.with('{states,idle,after,0,delay}', '"366 days 1 second"'),
    'state "idle", timer 1: delay must be at most 366 days, got "366 days 1 second"', 'one second over 366 days: FF002');
SELECT lives_ok(format('SELECT flowforge._normalize_machine_spec(%L::jsonb)', pg_temp.with('{states,idle,after,0,delay}', '"366 days"')),
    'a delay of exactly 366 days is accepted');
SELECT lives_ok(format('SELECT flowforge._normalize_machine_spec(%L::jsonb)', pg_temp.with('{states,idle,after,0,delay}', '"1 microsecond"')),
    'the shortest delay is accepted');
SELECT pg_temp.refused(pg_temp.with('{states,idle,after,0,delay}', '"soon"'),
    'state "idle", timer 1: delay is not a duration: "soon"', 'a delay that is not a duration: FF002');
SELECT pg_temp.refused(pg_temp.with('{states,idle,after,0,delay}', '3600'),
    'state "idle", timer 1: delay must be a duration string such as "5 seconds", got 3600', 'a delay that is a number: FF002');
SELECT pg_temp.refused(pg_temp.without('{states,idle,after,0,delay}'),
    'state "idle", timer 1: delay must be a duration string such as "5 seconds", got null', 'a timer without a delay: FF002');
SELECT pg_temp.refused(pg_temp.with('{states,idle,after}', '[]'),
    'state "idle": after must be a list of 1 to 10 timers {"delay", "target"}', 'an empty after: FF002');
SELECT pg_temp.refused(pg_temp.with('{states,idle,after}',
                           (SELECT jsonb_agg(jsonb_build_object('delay', i || ' minutes', 'target', 'done'))
                            FROM generate_series(1, 11) i)),
    'state "idle": after must be a list of 1 to 10 timers {"delay", "target"}', 'eleven timers: FF002');
SELECT pg_temp.refused(pg_temp.with('{states,idle,after}', '{"delay": "1 hour", "target": "done"}'),
    'state "idle": after must be a list of 1 to 10 timers {"delay", "target"}', 'after an object, not a list: FF002');
SELECT pg_temp.refused(pg_temp.with('{states,idle,after}', '["1 hour"]'),
    'state "idle", timer 1: must be an object {"delay", "target"}', 'a timer that is not an object: FF002');

-- ---------------------------------------------------- unknown fields at every level
SELECT pg_temp.refused(pg_temp.with('{states,idle,exit}', '"done"'),
    'state "idle": unknown field "exit" (known: on, after, action, on_done, on_error, final, description)',
    'an unknown field of a state: FF002 naming the state and field');
SELECT pg_temp.refused(pg_temp.with('{states,idle,on,go}', '[{"target": "work", "when": "$.event.x == 1"}]'),
    'state "idle", event "go", candidate 1: unknown field "when" (known: target, guard, assign, description)',
    'an unknown field of a candidate: FF002 naming the state, event and candidate');
SELECT pg_temp.refused(pg_temp.with('{states,idle,after,0,repeat}', 'true'),
    'state "idle", timer 1: unknown field "repeat" (known: delay, target, description)',
    'an unknown field of a timer: FF002 naming the state and timer');
SELECT pg_temp.refused(pg_temp.with('{states,work,action,retries}', '3'),
    'state "work", action: unknown field "retries"', 'an unknown field of an action: FF002 naming the state');
SELECT pg_temp.refused(pg_temp.with('{states,done,color}', '"green"'),
    'state "done": unknown field "color" (known: on, after, action, on_done, on_error, final, description)',
    'an unknown field of a final state: FF002');

-- -------------------------------------------------------------- nothing written
SELECT is((SELECT count(*) FROM flowforge.workflow), :'workflows_before'::bigint, 'no refused spec wrote a workflow');
SELECT is((SELECT count(*) FROM flowforge.task), :'tasks_before'::bigint, 'no refused spec wrote a task row');
SELECT is((SELECT count(*) FROM flowforge.audit_log), :'audit_before'::bigint, 'no refused spec wrote an audit row');

-- ========================================================== a valid machine
SELECT flowforge.define_workflow($${
  "name": "shop", "kind": "statemachine", "description": "an order", "initial": "awaiting_payment",
  "context": {"total": 100, "tags": ["a"]},
  "states": {
    "awaiting_payment": {
      "description": "waits for the money",
      "on": {"paid": [{"target": "shipping", "guard": "$.event.amount>=$.context.total",
                       "assign": {"paid_amount": "$.event.amount", "n": "$.context.n+1"}, "description": "enough"},
                      {"target": "awaiting_payment", "assign": {"short": "true"}}],
             "cancel": "cancelled",
             "nudge": {"target": "awaiting_payment", "guard": "exists($.event.note)"}},
      "after": [{"delay": "2 days", "target": "expired", "description": "too late"},
                {"delay": "90 minutes", "target": "awaiting_payment"}]},
    "shipping": {"action": {"task": "ship", "queue": "ship_q", "priority": 7, "max_attempts": 4,
                            "backoff": "2 seconds", "backoff_factor": 3.0, "max_backoff": "1 minute",
                            "timeout": "5 minutes", "worker_params": {"region": "eu"}},
                 "on_done": "delivered", "on_error": "needs_attention"},
    "needs_attention": {"on": {"retry": "shipping", "give_up": "cancelled"}},
    "delivered": {"final": true, "description": "done"}, "cancelled": {"final": true}, "expired": {"final": true}}}$$) AS shop \gset

SELECT is((SELECT spec FROM flowforge.workflow WHERE id = :'shop'), $${
  "name": "shop", "kind": "statemachine", "description": "an order", "initial": "awaiting_payment",
  "context": {"total": 100, "tags": ["a"]},
  "states": {
    "awaiting_payment": {
      "final": false, "description": "waits for the money",
      "on": {"paid": [{"target": "shipping", "guard": "($.\"event\".\"amount\" >= $.\"context\".\"total\")",
                       "assign": {"paid_amount": "$.\"event\".\"amount\"", "n": "($.\"context\".\"n\" + 1)"},
                       "description": "enough"},
                      {"target": "awaiting_payment", "assign": {"short": "true"}}],
             "cancel": [{"target": "cancelled"}],
             "nudge": [{"target": "awaiting_payment", "guard": "exists ($.\"event\".\"note\")"}]},
      "after": [{"delay": "2 days", "target": "expired", "description": "too late"},
                {"delay": "01:30:00", "target": "awaiting_payment"}]},
    "shipping": {"final": false,
                 "action": {"task": "ship", "queue": "ship_q", "priority": 7, "max_attempts": 4, "backoff": "00:00:02",
                            "backoff_factor": 3, "max_backoff": "00:01:00", "timeout": "00:05:00",
                            "worker_params": {"region": "eu"}},
                 "on_done": "delivered", "on_error": "needs_attention"},
    "needs_attention": {"final": false, "on": {"retry": [{"target": "shipping"}], "give_up": [{"target": "cancelled"}]}},
    "delivered": {"final": true, "description": "done"}, "cancelled": {"final": true}, "expired": {"final": true}}}$$::jsonb,
    'the stored spec is normalized: every transition a list of candidates (a bare name and a lone object alike), '
    'jsonpaths and durations canonical, action defaults filled in, final explicit');
SELECT is((SELECT kind::text FROM flowforge.workflow WHERE id = :'shop'), 'statemachine', 'the workflow row is of kind statemachine');

-- One task row per state: the state's normalized spec beside its action's unit fields.
SELECT results_eq(
    format($$SELECT key::text, queue::text, priority, max_attempts, backoff, backoff_factor, max_backoff, timeout,
                    is_final, worker_params, dependency_count
             FROM flowforge.task WHERE workflow_id = %L ORDER BY key$$, :'shop'),
    $$VALUES ('awaiting_payment', 'default', 0, 1, interval '1 second', 2::numeric, interval '10 minutes', NULL::interval, false, NULL::jsonb, 0),
             ('cancelled', 'default', 0, 1, interval '1 second', 2, interval '10 minutes', NULL, true, NULL, 0),
             ('delivered', 'default', 0, 1, interval '1 second', 2, interval '10 minutes', NULL, true, NULL, 0),
             ('expired', 'default', 0, 1, interval '1 second', 2, interval '10 minutes', NULL, true, NULL, 0),
             ('needs_attention', 'default', 0, 1, interval '1 second', 2, interval '10 minutes', NULL, false, NULL, 0),
             ('shipping', 'ship_q', 7, 4, interval '2 seconds', 3, interval '1 minute', interval '5 minutes', false,
              '{"region": "eu"}'::jsonb, 0)$$,
    'one task row per state: the action state carries its queue, priority, attempts, backoff, timeout and selectors; '
    'the others the defaults; final states is_final');
SELECT is(
    (SELECT count(*)::int FROM flowforge.task t JOIN flowforge.workflow w ON w.id = t.workflow_id
     WHERE t.workflow_id = :'shop' AND t.spec = w.spec -> 'states' -> t.key::text),
    6, 'each task row''s spec is its state''s normalized spec');

-- Versioned by content: the same machine written differently is the same version.
SELECT is(flowforge.define_workflow($${
  "kind": "statemachine", "name": "shop", "initial": "awaiting_payment", "description": "an order",
  "context": {"tags": ["a"], "total": 100},
  "states": {
    "expired": {"final": true}, "cancelled": {"final": true}, "delivered": {"description": "done", "final": true},
    "needs_attention": {"on": {"give_up": [{"target": "cancelled"}], "retry": {"target": "shipping"}}, "final": false},
    "shipping": {"on_error": "needs_attention", "on_done": "delivered",
                 "action": {"worker_params": {"region": "eu"}, "timeout": "300 seconds", "max_backoff": "60 seconds",
                            "backoff_factor": 3, "backoff": "2 secs", "max_attempts": 4, "priority": 7, "queue": "ship_q",
                            "task": "ship"}},
    "awaiting_payment": {
      "after": [{"target": "expired", "delay": "P2D", "description": "too late"},
                {"target": "awaiting_payment", "delay": "1 hour 30 minutes"}],
      "on": {"nudge": [{"guard": "exists($.event.note)", "target": "awaiting_payment"}],
             "cancel": [{"target": "cancelled"}],
             "paid": [{"description": "enough", "assign": {"n": "$.context.n + 1", "paid_amount": "$.\"event\".amount"},
                       "guard": "$.event.amount >= $.context.total", "target": "shipping"},
                      {"assign": {"short": "true"}, "target": "awaiting_payment"}]},
      "description": "waits for the money"}}}$$), :'shop'::uuid,
    'equal content (key order, jsonpath spacing and quoting, bare vs listed targets, "P2D" vs "2 days", "300 seconds" '
    'vs "5 minutes", 3 vs 3.0) is the same version: the same id');
SELECT is((SELECT count(*)::int FROM flowforge.workflow WHERE name = 'shop'), 1, 'and no second version was written');
SELECT is((SELECT count(*)::int FROM flowforge.task WHERE workflow_id = :'shop'), 6, 'nor a second set of task rows');
SELECT flowforge.define_workflow(jsonb_set((SELECT spec FROM flowforge.workflow WHERE id = :'shop'),
                                           '{states,awaiting_payment,after,0,delay}', '"3 days"')) AS shop2 \gset
SELECT results_eq($$SELECT version FROM flowforge.workflow WHERE name = 'shop' ORDER BY version$$, $$VALUES (1), (2)$$,
    'a changed delay is a new version');
SELECT is((SELECT count(*)::int FROM flowforge.task WHERE workflow_id = :'shop2'), 6, 'with its own task rows');
SELECT is(flowforge.define_workflow((SELECT spec FROM flowforge.workflow WHERE id = :'shop2')), :'shop2'::uuid,
    'its own normalized spec defined again is that version (normalizing is idempotent)');

-- Defaults: a spec without context has {}; an action without fields gets the unit defaults.
SELECT flowforge.define_workflow(pg_temp.without('{context}') || '{"name": "vm2"}') AS vm2 \gset
SELECT is((SELECT spec -> 'context' FROM flowforge.workflow WHERE id = :'vm2'), '{}'::jsonb,
    'a machine without context has the empty context');
SELECT is((SELECT spec -> 'states' -> 'work' -> 'action' FROM flowforge.workflow WHERE name = 'vm'),
    '{"task": "do_it", "queue": "default", "priority": 0, "max_attempts": 3, "backoff": "00:00:01", "backoff_factor": 2,
      "max_backoff": "00:10:00", "timeout": null}'::jsonb,
    'an action of only a task gets the unit defaults (queue default, 3 attempts, 1 second backoff...)');
SELECT results_eq($$SELECT queue::text, max_attempts, backoff FROM flowforge.task t JOIN flowforge.workflow w ON w.id = t.workflow_id
                    WHERE w.name = 'vm' AND t.key = 'work'$$,
    $$VALUES ('default', 3, interval '1 second')$$, 'and its task row says the same');
SELECT is((SELECT spec -> 'states' -> 'idle' FROM flowforge.workflow WHERE name = 'vm'),
    '{"final": false, "on": {"go": [{"target": "work"}]}, "after": [{"delay": "01:00:00", "target": "done"}]}'::jsonb,
    'a resting state: final false, on as candidate lists, after with canonical delays');

-- A one-state machine whose initial state is final is valid.
SELECT lives_ok($$SELECT flowforge.define_workflow('{"name": "instant", "kind": "statemachine", "initial": "done",
                                                      "states": {"done": {"final": true}}}')$$,
    'a machine whose initial state is final is valid');

SELECT * FROM finish();
ROLLBACK;
