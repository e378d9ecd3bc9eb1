-- create_trigger, set_trigger_enabled, drop_trigger, list_triggers: every
-- type and action, every option checked (FF002 "invalid trigger: ..." naming
-- it; a cron expression naming its field; an unknown zone), the options as
-- stored (normalized, the webhook secret kept apart and never shown), the
-- name key (FF003 a live name, a dropped one free again), pausing (a cron
-- trigger enabled again starts from its next slot after now) and the soft
-- delete (the row, its firings and its runs stay; its secret goes).
BEGIN;
SET LOCAL client_min_messages = warning;
SET LOCAL TimeZone = 'UTC';
SELECT plan(144);
SELECT flowforge_test.freeze_clock('2030-01-01 00:02:00+00');

SELECT isnt(flowforge_test.define_single('cr_job'), NULL, 'fixture: workflow cr_job (a DAG)');
SELECT isnt(flowforge_test.define_graph_single('cr_graph'), NULL, 'fixture: workflow cr_graph (a graph)');
SELECT isnt(flowforge_test.define_order('cr_order'), NULL, 'fixture: workflow cr_order (a state machine)');

-- ------------------------------------------------------------------ every type x action
CREATE TEMP TABLE made (name text PRIMARY KEY, id uuid);
INSERT INTO made VALUES
    ('c-start', flowforge.create_trigger('c-start', 'cron', 'start', 'cr_job', '{"cron": "*/5 * * * *", "input": {"k": 1}}')),
    ('c-signal', flowforge.create_trigger('c-signal', 'cron', 'signal', 'paid',
        '{"cron": "@daily", "timezone": "Europe/Berlin", "run_id_path": "$.run_id", "catchup": "all", "max_catchup": 5.0,
          "on_gap": "skip", "on_repeat": "both", "event_id_path": "$.id"}')),
    ('w-start', flowforge.create_trigger('w-start', 'webhook', 'start', 'cr_graph', '{"secret": "0123456789abcdef"}')),
    ('w-signal', flowforge.create_trigger('w-signal', 'webhook', 'signal', 'paid',
        '{"secret": "fedcba9876543210-and-more", "run_id": "01234567-89AB-CDEF-0123-456789ABCDEF"}')),
    ('f-start', flowforge.create_trigger('f-start', 'filesystem', 'start', 'cr_order', '{"path": "/data/in"}')),
    ('f-signal', flowforge.create_trigger('f-signal', 'filesystem', 'signal', 'paid',
        '{"path": "/data/in", "pattern": "*.csv", "run_id": "0123456789abcdef0123456789abcdef"}')),
    ('g-start', flowforge.create_trigger('g-start', 'gitpoll', 'start', 'cr_job', '{"repo": "/src/repo", "input": {"env": "ci"}}')),
    ('g-signal', flowforge.create_trigger('g-signal', 'gitpoll', 'signal', 'cr.done:v1',
        '{"repo": "/src/repo", "branch": "release/1.x", "run_id_path": "$.a[0].b"}'));
SELECT is((SELECT count(DISTINCT id)::int FROM made WHERE id IS NOT NULL), 8,
          'create_trigger returns a new id for each of the four types x two actions');

SELECT results_eq(
    $$SELECT name, trigger_type, action, target, enabled, options, input, next_fire_at, last_fired_at, created_by
      FROM flowforge.list_triggers() ORDER BY name$$,
    $$VALUES ('c-signal', 'cron', 'signal', 'paid', true,
              '{"cron": "@daily", "timezone": "Europe/Berlin", "catchup": "all", "max_catchup": 5, "on_gap": "skip",
                "on_repeat": "both", "run_id_path": "$.\"run_id\"", "event_id_path": "$.\"id\""}'::jsonb,
              '{}'::jsonb, '2030-01-01 23:00+00'::timestamptz, NULL::timestamptz, 'postgres'),
             ('c-start', 'cron', 'start', 'cr_job', true,
              '{"cron": "*/5 * * * *", "timezone": "UTC", "catchup": "latest", "max_catchup": 100, "on_gap": "shift",
                "on_repeat": "first"}', '{"k": 1}', '2030-01-01 00:05+00', NULL, 'postgres'),
             ('f-signal', 'filesystem', 'signal', 'paid', true,
              '{"path": "/data/in", "pattern": "*.csv", "run_id": "01234567-89ab-cdef-0123-456789abcdef"}', '{}', NULL, NULL,
              'postgres'),
             ('f-start', 'filesystem', 'start', 'cr_order', true, '{"path": "/data/in", "pattern": "*"}', '{}', NULL, NULL,
              'postgres'),
             ('g-signal', 'gitpoll', 'signal', 'cr.done:v1', true,
              '{"repo": "/src/repo", "branch": "release/1.x", "run_id_path": "$.\"a\"[0].\"b\""}', '{}', NULL, NULL, 'postgres'),
             ('g-start', 'gitpoll', 'start', 'cr_job', true, '{"repo": "/src/repo", "branch": "main"}', '{"env": "ci"}', NULL,
              NULL, 'postgres'),
             ('w-signal', 'webhook', 'signal', 'paid', true,
              '{"run_id": "01234567-89ab-cdef-0123-456789abcdef", "secret": "(set, never shown)"}', '{}', NULL, NULL, 'postgres'),
             ('w-start', 'webhook', 'start', 'cr_graph', true, '{"secret": "(set, never shown)"}', '{}', NULL, NULL, 'postgres')$$,
    'list_triggers: every trigger by name, its options normalized (defaults filled in: timezone UTC, catchup latest, '
    'max_catchup 100, on_gap shift, on_repeat first, pattern *, branch main; jsonpaths canonical; run ids lower-case '
    'with dashes), input apart, a cron trigger''s first slot the first after now, a webhook''s secret never shown');
SELECT is((SELECT id FROM flowforge.list_triggers() WHERE name = 'w-start'), (SELECT id FROM made WHERE name = 'w-start'),
          'list_triggers: the id create_trigger returned');
SELECT results_eq(
    $$SELECT name::text, trigger_type::text, cron, timezone, options, created_at, updated_at, deleted_at, feeder_state
      FROM flowforge.scheduled_trigger WHERE name IN ('c-start', 'c-signal', 'w-start', 'g-start') ORDER BY name$$,
    $$VALUES ('c-signal', 'cron', '@daily', 'Europe/Berlin',
              '{"cron": "@daily", "timezone": "Europe/Berlin", "catchup": "all", "max_catchup": 5, "on_gap": "skip",
                "on_repeat": "both", "run_id_path": "$.\"run_id\"", "event_id_path": "$.\"id\""}'::jsonb,
              '2030-01-01 00:02+00'::timestamptz, NULL::timestamptz, NULL::timestamptz, NULL::jsonb),
             ('c-start', 'cron', '*/5 * * * *', 'UTC',
              '{"cron": "*/5 * * * *", "timezone": "UTC", "catchup": "latest", "max_catchup": 100, "on_gap": "shift",
                "on_repeat": "first"}', '2030-01-01 00:02+00', NULL, NULL, NULL),
             ('g-start', 'gitpoll', NULL, 'UTC', '{"repo": "/src/repo", "branch": "main"}', '2030-01-01 00:02+00', NULL, NULL,
              NULL),
             ('w-start', 'webhook', NULL, 'UTC', '{}', '2030-01-01 00:02+00', NULL, NULL, NULL)$$,
    'the stored row: the expression as written in cron (NULL for the other types), its zone in timezone, the secret in '
    'neither options nor anywhere in the row');

-- The secret: stored apart, as the UTF-8 bytes it was given; no read shows it.
SELECT results_eq(
    $$SELECT m.name, s.secret, s.organization_id, s.created_at FROM flowforge.trigger_secret s JOIN made m ON m.id = s.trigger_id
      ORDER BY 1$$,
    $$VALUES ('w-signal', convert_to('fedcba9876543210-and-more', 'UTF8'), '00000000-0000-0000-0000-000000000001'::uuid,
              '2030-01-01 00:02+00'::timestamptz),
             ('w-start', convert_to('0123456789abcdef', 'UTF8'), '00000000-0000-0000-0000-000000000001', '2030-01-01 00:02+00')$$,
    'trigger_secret holds each webhook''s key (its bytes, its organization) and nothing for the other types');
SELECT is((SELECT count(*)::int FROM flowforge.list_triggers() t
           WHERE t::text ~ '0123456789abcdef|fedcba9876543210' OR t.options::text ~ '0123456789abcdef|fedcba9876543210'), 0,
          'list_triggers never returns a secret');
SELECT is((SELECT count(*)::int FROM flowforge.scheduled_trigger t WHERE t::text ~ '0123456789abcdef|fedcba9876543210'), 0,
          'no column of scheduled_trigger holds a secret');
SELECT is((SELECT count(*)::int FROM flowforge.audit_log a WHERE a::text ~ '0123456789abcdef|fedcba9876543210'), 0,
          'the audit trail does not hold a secret either');
SELECT results_eq(
    $$SELECT a.action::text, a.actor::text, a.fields FROM flowforge.audit_log a JOIN made m ON m.id::text = a.entity_id
      WHERE a.entity = 'trigger' AND m.name = 'w-start'$$,
    $$VALUES ('create', 'postgres', ARRAY['name', 'trigger_type', 'action', 'target', 'options'])$$,
    'create_trigger is audited (the fields it set, not their values)');

-- The first slot of a cron trigger is the first after now, in its zone.
SELECT is((SELECT next_fire_at FROM flowforge.scheduled_trigger WHERE name = 'c-start'), '2030-01-01 00:05+00'::timestamptz,
          'cron */5 created at 00:02 UTC: first slot 00:05');
SELECT is((SELECT next_fire_at FROM flowforge.scheduled_trigger WHERE name = 'c-signal'), '2030-01-01 23:00+00'::timestamptz,
          'cron @daily in Europe/Berlin: first slot midnight Berlin (23:00 UTC)');
SELECT lives_ok($$SELECT flowforge.create_trigger('c-macro', 'cron', 'start', 'cr_job', '{"cron": "@hourly", "timezone": "Asia/Kolkata"}')$$,
                'a macro in a zone with a half-hour offset');
SELECT is((SELECT next_fire_at FROM flowforge.scheduled_trigger WHERE name = 'c-macro'), '2030-01-01 00:30+00'::timestamptz,
          '@hourly in Asia/Kolkata (UTC+05:30) created at 00:02 UTC: first slot 00:30 UTC (06:00 local)');

-- ------------------------------------------------------------------ refusals: what is checked, and how it is named
CREATE TEMP TABLE refusal (n serial, what text, trigger_type text, action text, target text, options jsonb, expected text);
INSERT INTO refusal (what, trigger_type, action, target, options, expected) VALUES
    -- the type, the action, the target
    ('an unknown type', 'poll', 'start', 'cr_job', '{}', '^FF002 invalid trigger: trigger_type must be cron, webhook, gitpoll or filesystem, got ''poll''$'),
    ('a NULL type', NULL, 'start', 'cr_job', '{}', '^FF002 invalid trigger: trigger_type .*got NULL$'),
    ('an unknown action', 'webhook', 'stop', 'cr_job', '{"secret": "0123456789abcdef"}', '^FF002 invalid trigger: action must be start .* or signal .*got ''stop''$'),
    ('a NULL action', 'webhook', NULL, 'cr_job', '{"secret": "0123456789abcdef"}', '^FF002 invalid trigger: action .*got NULL$'),
    ('a signal without an event', 'webhook', 'signal', NULL, '{"secret": "0123456789abcdef", "run_id_path": "$.r"}', '^FF002 invalid trigger: a signal trigger''s target is the event it sends.*got NULL$'),
    ('a signal whose event is no event name', 'webhook', 'signal', 'pay day', '{"secret": "0123456789abcdef", "run_id_path": "$.r"}', '^FF002 invalid trigger: a signal trigger''s target .*got ''pay day''$'),
    ('a signal whose event starts with a digit', 'webhook', 'signal', '1paid', '{"secret": "0123456789abcdef", "run_id_path": "$.r"}', '^FF002 invalid trigger: a signal trigger''s target'),
    -- options in general
    ('options that are not an object', 'webhook', 'start', 'cr_job', '["secret"]', '^FF002 invalid trigger: options must be a JSON object$'),
    ('an unknown option', 'webhook', 'start', 'cr_job', '{"secret": "0123456789abcdef", "sekret": 1}', '^FF002 invalid trigger: unknown option "sekret" for a webhook trigger that starts \(known: input, secret\)$'),
    ('a cron option on a webhook', 'webhook', 'start', 'cr_job', '{"secret": "0123456789abcdef", "cron": "* * * * *"}', '^FF002 invalid trigger: unknown option "cron" for a webhook trigger'),
    ('a webhook option on a cron trigger', 'cron', 'start', 'cr_job', '{"cron": "* * * * *", "secret": "0123456789abcdef"}', '^FF002 invalid trigger: unknown option "secret" for a cron trigger that starts \(known: input, cron, timezone, catchup, max_catchup, on_gap, on_repeat\)$'),
    ('run_id_path on a start trigger', 'filesystem', 'start', 'cr_job', '{"path": "/d", "run_id_path": "$.r"}', '^FF002 invalid trigger: unknown option "run_id_path" for a filesystem trigger that starts'),
    ('run_id on a start trigger', 'gitpoll', 'start', 'cr_job', '{"repo": "/r", "run_id": "01234567-89ab-cdef-0123-456789abcdef"}', '^FF002 invalid trigger: unknown option "run_id" for a gitpoll trigger that starts'),
    ('event_id_path on a start trigger', 'webhook', 'start', 'cr_job', '{"secret": "0123456789abcdef", "event_id_path": "$.id"}', '^FF002 invalid trigger: unknown option "event_id_path" for a webhook trigger that starts'),
    ('an input that is not an object', 'webhook', 'start', 'cr_job', '{"secret": "0123456789abcdef", "input": [1]}', '^FF002 invalid trigger: input must be a JSON object'),
    ('a NULL input', 'webhook', 'start', 'cr_job', '{"secret": "0123456789abcdef", "input": null}', '^FF002 invalid trigger: input must be a JSON object'),
    ('an event_id_path that is no jsonpath', 'webhook', 'signal', 'paid', '{"secret": "0123456789abcdef", "run_id_path": "$.run", "event_id_path": "$.["}', '^FF002 invalid trigger: event_id_path must be a jsonpath into the payload, such as "\$.run_id", got "\$.\["$'),
    ('an event_id_path that is a number', 'webhook', 'signal', 'paid', '{"secret": "0123456789abcdef", "run_id_path": "$.run", "event_id_path": 7}', '^FF002 invalid trigger: event_id_path must be a jsonpath'),
    -- a signal names its run
    ('a signal naming no run', 'webhook', 'signal', 'paid', '{"secret": "0123456789abcdef"}', '^FF002 invalid trigger: a signal names the run it moves: give run_id_path .* or run_id, not both$'),
    ('a signal naming its run twice', 'webhook', 'signal', 'paid', '{"secret": "0123456789abcdef", "run_id_path": "$.r", "run_id": "01234567-89ab-cdef-0123-456789abcdef"}', '^FF002 invalid trigger: a signal names the run it moves'),
    ('a run_id_path that is no jsonpath', 'webhook', 'signal', 'paid', '{"secret": "0123456789abcdef", "run_id_path": "run id"}', '^FF002 invalid trigger: run_id_path must be a jsonpath into the payload'),
    ('a run_id_path that is a predicate', 'webhook', 'signal', 'paid', '{"secret": "0123456789abcdef", "run_id_path": "$.r == 1"}', '^FF002 invalid trigger: run_id_path must be a jsonpath into the payload'),
    ('a run_id that is no uuid', 'webhook', 'signal', 'paid', '{"secret": "0123456789abcdef", "run_id": "run-1"}', '^FF002 invalid trigger: run_id must be a run''s uuid, got "run-1"$'),
    ('a run_id that is a number', 'webhook', 'signal', 'paid', '{"secret": "0123456789abcdef", "run_id": 12}', '^FF002 invalid trigger: run_id must be a run''s uuid, got 12$'),
    -- cron
    ('a cron trigger without cron', 'cron', 'start', 'cr_job', '{}', '^FF002 invalid trigger: a cron trigger needs options.cron'),
    ('a cron that is not a string', 'cron', 'start', 'cr_job', '{"cron": 5}', '^FF002 invalid trigger: a cron trigger needs options.cron'),
    ('a minute out of range', 'cron', 'start', 'cr_job', '{"cron": "61 * * * *"}', '^FF002 invalid cron schedule: minute field "61": 61 is out of range 0-59$'),
    ('an hour out of range', 'cron', 'start', 'cr_job', '{"cron": "0 24 * * *"}', '^FF002 invalid cron schedule: hour field "24"'),
    ('an unknown day-of-week name', 'cron', 'start', 'cr_job', '{"cron": "0 0 * * FUN"}', '^FF002 invalid cron schedule: day-of-week field "FUN": unknown name "FUN"'),
    ('a month field that cannot be read', 'cron', 'start', 'cr_job', '{"cron": "0 0 1 1-2-3 *"}', '^FF002 invalid cron schedule: month field "1-2-3"'),
    ('four fields', 'cron', 'start', 'cr_job', '{"cron": "0 0 1 1"}', '^FF002 invalid cron schedule: "0 0 1 1" has 4 fields'),
    ('a schedule that never fires', 'cron', 'start', 'cr_job', '{"cron": "0 0 30 2 *"}', '^FF002 invalid cron schedule: "0 0 30 2 \*" never fires'),
    ('an unknown zone', 'cron', 'start', 'cr_job', '{"cron": "* * * * *", "timezone": "Mars/Olympus_Mons"}', '^FF002 invalid cron schedule: unknown time zone "Mars/Olympus_Mons"$'),
    ('a zone in the wrong case', 'cron', 'start', 'cr_job', '{"cron": "* * * * *", "timezone": "utc"}', '^FF002 invalid cron schedule: unknown time zone "utc" \(did you mean "UTC"\?\)$'),
    ('an unknown catchup', 'cron', 'start', 'cr_job', '{"cron": "* * * * *", "catchup": "some"}', '^FF002 invalid trigger: catchup must be latest, all or none, got "some"$'),
    ('an unknown on_gap', 'cron', 'start', 'cr_job', '{"cron": "* * * * *", "on_gap": "later"}', '^FF002 invalid trigger: on_gap must be shift or skip, got "later"$'),
    ('an unknown on_repeat', 'cron', 'start', 'cr_job', '{"cron": "* * * * *", "on_repeat": "twice"}', '^FF002 invalid trigger: on_repeat must be first, last or both, got "twice"$'),
    ('max_catchup 0', 'cron', 'start', 'cr_job', '{"cron": "* * * * *", "max_catchup": 0}', '^FF002 invalid trigger: max_catchup must be an integer from 1 to 1000, got 0$'),
    ('max_catchup 1001', 'cron', 'start', 'cr_job', '{"cron": "* * * * *", "max_catchup": 1001}', '^FF002 invalid trigger: max_catchup must be an integer from 1 to 1000, got 1001$'),
    ('max_catchup 2.5', 'cron', 'start', 'cr_job', '{"cron": "* * * * *", "max_catchup": 2.5}', '^FF002 invalid trigger: max_catchup must be an integer from 1 to 1000, got 2.5$'),
    ('max_catchup as text', 'cron', 'start', 'cr_job', '{"cron": "* * * * *", "max_catchup": "5"}', '^FF002 invalid trigger: max_catchup must be an integer from 1 to 1000, got "5"$'),
    -- webhook
    ('a webhook without a secret', 'webhook', 'start', 'cr_job', '{}', '^FF002 invalid trigger: a webhook trigger needs options.secret, 16 to 1024'),
    ('a 15-character secret', 'webhook', 'start', 'cr_job', '{"secret": "0123456789abcde"}', '^FF002 invalid trigger: a webhook trigger needs options.secret, 16 to 1024'),
    ('a 1025-character secret', 'webhook', 'start', 'cr_job', jsonb_build_object('secret', repeat('s', 1025)), '^FF002 invalid trigger: a webhook trigger needs options.secret, 16 to 1024'),
    ('a secret of 600 two-byte characters (1200 bytes)', 'webhook', 'start', 'cr_job', jsonb_build_object('secret', repeat('é', 600)), '^FF002 invalid trigger: a webhook trigger needs options.secret, 16 to 1024'),
    ('a secret that is not a string', 'webhook', 'start', 'cr_job', '{"secret": 1234567890123456}', '^FF002 invalid trigger: a webhook trigger needs options.secret'),
    -- filesystem
    ('a filesystem trigger without a path', 'filesystem', 'start', 'cr_job', '{}', '^FF002 invalid trigger: a filesystem trigger needs options.path, the absolute path'),
    ('a relative path', 'filesystem', 'start', 'cr_job', '{"path": "data/in"}', '^FF002 invalid trigger: a filesystem trigger needs options.path'),
    ('a pattern that is not a string', 'filesystem', 'start', 'cr_job', '{"path": "/d", "pattern": ["*.csv"]}', '^FF002 invalid trigger: pattern must be a glob'),
    -- gitpoll
    ('a gitpoll trigger without a repo', 'gitpoll', 'start', 'cr_job', '{"branch": "main"}', '^FF002 invalid trigger: a gitpoll trigger needs options.repo, the absolute path'),
    ('a relative repo', 'gitpoll', 'start', 'cr_job', '{"repo": "./repo"}', '^FF002 invalid trigger: a gitpoll trigger needs options.repo'),
    ('a branch that is no branch name', 'gitpoll', 'start', 'cr_job', '{"repo": "/r", "branch": "-x"}', '^FF002 invalid trigger: branch must be a branch name, got "-x"$'),
    ('a branch that is not a string', 'gitpoll', 'start', 'cr_job', '{"repo": "/r", "branch": 1}', '^FF002 invalid trigger: branch must be a branch name, got 1$');
SELECT matches(flowforge_test.error_of(format('SELECT flowforge.create_trigger(%L, %L, %L, %L, %L)',
                                              'cr-refused-' || n, trigger_type, action, target, options)),
               expected, 'create_trigger refuses ' || what)
FROM refusal ORDER BY n;
SELECT is((SELECT count(*)::int FROM flowforge.scheduled_trigger WHERE name LIKE 'cr-refused-%')
          + (SELECT count(*)::int FROM flowforge.audit_log WHERE entity = 'trigger' AND action = 'create'), 9,
          'a refused trigger writes nothing (no row, no audit entry: only the nine created above)');

-- The name.
SELECT matches(flowforge_test.error_of($$SELECT flowforge.create_trigger('9-lives', 'webhook', 'start', 'cr_job', '{"secret": "0123456789abcdef"}')$$),
               '^FF002 invalid trigger: name must be 1-63 letters, digits, "_", "." or "-" starting with a letter, got ''9-lives''$',
               'a name starting with a digit: FF002');
SELECT matches(flowforge_test.error_of($$SELECT flowforge.create_trigger('has space', 'webhook', 'start', 'cr_job', '{"secret": "0123456789abcdef"}')$$),
               '^FF002 invalid trigger: name must be', 'a name with a space: FF002');
SELECT matches(flowforge_test.error_of(format('SELECT flowforge.create_trigger(%L, ''webhook'', ''start'', ''cr_job'', ''{"secret": "0123456789abcdef"}'')',
                                              'n' || repeat('x', 63))),
               '^FF002 invalid trigger: name must be', 'a 64-character name: FF002');
SELECT matches(flowforge_test.error_of($$SELECT flowforge.create_trigger(NULL, 'webhook', 'start', 'cr_job', '{"secret": "0123456789abcdef"}')$$),
               '^FF002 invalid trigger: name must be .*got NULL$', 'a NULL name: FF002');
SELECT lives_ok(format('SELECT flowforge.create_trigger(%L, ''webhook'', ''start'', ''cr_job'', ''{"secret": "0123456789abcdef"}'')',
                       'N' || repeat('a_.-9', 12) || 'zz'),
                'a 63-character name of letters, digits, _, . and - is accepted');
SELECT lives_ok($$SELECT flowforge.create_trigger('c-min', 'cron', 'start', 'cr_job', '{"cron": "* * * * *", "max_catchup": 1}')$$,
                'max_catchup 1 is accepted');
SELECT lives_ok($$SELECT flowforge.create_trigger('c-max', 'cron', 'start', 'cr_job', '{"cron": "* * * * *", "max_catchup": 1000, "catchup": "none"}')$$,
                'max_catchup 1000 and catchup none are accepted');
SELECT lives_ok($$SELECT flowforge.create_trigger('w-long', 'webhook', 'start', 'cr_job', jsonb_build_object('secret', repeat('é', 512)))$$,
                'a secret of 512 two-byte characters (1024 bytes) is accepted');
SELECT is((SELECT octet_length(s.secret) FROM flowforge.trigger_secret s JOIN flowforge.scheduled_trigger t ON t.id = s.trigger_id
           WHERE t.name = 'w-long'), 1024, 'and stored as its 1024 UTF-8 bytes');

-- The start target.
SELECT throws_ok($$SELECT flowforge.create_trigger('cr-nowf', 'webhook', 'start', 'no_such_workflow', '{"secret": "0123456789abcdef"}')$$,
                 'FF001', 'workflow ''no_such_workflow'' not found', 'a start trigger of a workflow that does not exist: FF001');
SELECT throws_ok($$SELECT flowforge.create_trigger('cr-nowf', 'cron', 'start', NULL, '{"cron": "* * * * *"}')$$,
                 'FF001', 'workflow NULL not found', 'a start trigger without a target: FF001');
SELECT is(flowforge_test.error_of($$SELECT flowforge.create_trigger('cr-nowf', 'webhook', 'start', 'no_such_workflow', '{}')$$),
          'FF001 workflow ''no_such_workflow'' not found', 'the target is checked before the options');

-- The name key: one live trigger per name.
SELECT throws_ok($$SELECT flowforge.create_trigger('w-start', 'filesystem', 'start', 'cr_job', '{"path": "/x"}')$$,
                 'FF003', 'trigger ''w-start'' already exists', 'a second live trigger of one name: FF003 (whatever its type)');
SELECT is((SELECT count(*)::int FROM flowforge.scheduled_trigger WHERE name = 'w-start'), 1, 'and nothing was written');
SELECT matches(flowforge_test.error_of($$SELECT flowforge.create_trigger('w-start', 'filesystem', 'start', 'cr_job', '{"path": "x"}')$$),
               '^FF002 ', 'the options are checked before the name key');

-- ------------------------------------------------------------------ set_trigger_enabled
SELECT lives_ok($$SELECT flowforge.set_trigger_enabled('c-start', false)$$, 'set_trigger_enabled: a cron trigger paused');
SELECT results_eq($$SELECT enabled, next_fire_at FROM flowforge.list_triggers() WHERE name = 'c-start'$$,
                  $$VALUES (false, '2030-01-01 00:05+00'::timestamptz)$$,
                  'a paused cron trigger keeps its next slot (the tick skips it: idx_trigger_due is WHERE enabled)');
SELECT results_eq($$SELECT updated_at, updated_by FROM flowforge.scheduled_trigger WHERE name = 'c-start'$$,
                  $$VALUES ('2030-01-01 00:02+00'::timestamptz, 'postgres')$$, 'the change is stamped: updated_at, updated_by');
SELECT lives_ok($$SELECT flowforge.set_trigger_enabled('c-start', false)$$, 'pausing a paused trigger again is harmless');
SELECT flowforge_test.set_clock('2030-01-01 01:07:30+00');
SELECT lives_ok($$SELECT flowforge.set_trigger_enabled('c-start', true)$$, 'an hour later: enabled again');
SELECT results_eq($$SELECT enabled, next_fire_at FROM flowforge.list_triggers() WHERE name = 'c-start'$$,
                  $$VALUES (true, '2030-01-01 01:10+00'::timestamptz)$$,
                  'a cron trigger enabled again starts from its next slot after now (01:10), the slots it missed are not caught up');
SELECT flowforge_test.set_clock('2030-01-01 01:08:00+00');
SELECT lives_ok($$SELECT flowforge.set_trigger_enabled('c-start', true)$$, 'enabling an enabled trigger');
SELECT is((SELECT next_fire_at FROM flowforge.scheduled_trigger WHERE name = 'c-start'), '2030-01-01 01:10+00'::timestamptz,
          'enabling an enabled trigger leaves its next slot as it was');
SELECT lives_ok($$SELECT flowforge.set_trigger_enabled('c-signal', false)$$, 'a Berlin cron trigger paused');
SELECT flowforge_test.set_clock('2030-01-03 12:00:00+00');
SELECT lives_ok($$SELECT flowforge.set_trigger_enabled('c-signal', true)$$, 'and enabled two days later');
SELECT is((SELECT next_fire_at FROM flowforge.scheduled_trigger WHERE name = 'c-signal'), '2030-01-03 23:00+00'::timestamptz,
          'its next slot is the next midnight in its own zone after now');
SELECT lives_ok($$SELECT flowforge.set_trigger_enabled('w-start', false)$$, 'a webhook trigger paused');
SELECT results_eq($$SELECT enabled, next_fire_at FROM flowforge.list_triggers() WHERE name = 'w-start'$$,
                  $$VALUES (false, NULL::timestamptz)$$, 'a paused webhook trigger: disabled, no slot');
SELECT lives_ok($$SELECT flowforge.set_trigger_enabled('w-start', true)$$, 'and enabled again');
SELECT results_eq($$SELECT enabled, next_fire_at FROM flowforge.list_triggers() WHERE name = 'w-start'$$,
                  $$VALUES (true, NULL::timestamptz)$$, 'an enabled webhook trigger has no slot either');
SELECT results_eq(
    $$SELECT a.action::text, a.fields FROM flowforge.audit_log a JOIN made m ON m.id::text = a.entity_id
      WHERE a.entity = 'trigger' AND m.name = 'w-start' ORDER BY a.created_at, a.action$$,
    $$VALUES ('create', ARRAY['name', 'trigger_type', 'action', 'target', 'options']), ('disable', ARRAY['enabled']),
             ('enable', ARRAY['enabled'])$$,
    'pausing and resuming are audited (disable, enable)');
SELECT throws_ok($$SELECT flowforge.set_trigger_enabled('no-such-trigger', false)$$, 'FF001', 'trigger ''no-such-trigger'' not found',
                 'set_trigger_enabled of an unknown trigger: FF001');
SELECT throws_ok($$SELECT flowforge.set_trigger_enabled('w-start', NULL)$$, 'FF003', 'enabled must be true or false',
                 'set_trigger_enabled with enabled NULL: FF003');
SELECT is((SELECT enabled FROM flowforge.scheduled_trigger WHERE name = 'w-start'), true, 'and nothing changed');

-- ------------------------------------------------------------------ drop_trigger
-- A firing and a run of w-start first, so there is something to keep.
SELECT is(flowforge.fire_trigger('w-start', '{"n": 1}') ->> 'outcome', 'started', 'fixture: w-start fired once, a run started');
SELECT flowforge_test.set_clock('2030-01-03 13:00:00+00');
SELECT lives_ok($$SELECT flowforge.drop_trigger('w-start')$$, 'drop_trigger: w-start dropped');
SELECT results_eq(
    $$SELECT id, enabled, deleted_at, deleted_by, updated_at FROM flowforge.scheduled_trigger WHERE name = 'w-start'$$,
    $$SELECT id, false, '2030-01-03 13:00+00'::timestamptz, 'postgres'::text, '2030-01-03 13:00+00'::timestamptz FROM made
      WHERE name = 'w-start'$$,
    'a soft delete: the row stays, disabled, with deleted_at and deleted_by');
SELECT is((SELECT count(*)::int FROM flowforge.trigger_secret WHERE trigger_id = (SELECT id FROM made WHERE name = 'w-start')), 0,
          'its secret is erased at once');
SELECT is((SELECT count(*)::int FROM flowforge.trigger_secret WHERE trigger_id = (SELECT id FROM made WHERE name = 'w-signal')), 1,
          'the other webhook''s secret stays');
SELECT is((SELECT count(*)::int FROM flowforge.trigger_firing WHERE trigger_id = (SELECT id FROM made WHERE name = 'w-start')), 1,
          'its firing stays');
SELECT is((SELECT count(*)::int FROM flowforge.engine_run WHERE triggered_by = 'w-start'), 1,
          'the run it caused stays, naming it');
SELECT is((SELECT count(*)::int FROM flowforge.list_firings('w-start')), 1, 'list_firings still shows the dropped trigger''s firing');
SELECT is((SELECT count(*)::int FROM flowforge.list_triggers() WHERE name = 'w-start'), 0, 'list_triggers no longer shows it');
SELECT throws_ok($$SELECT flowforge.drop_trigger('w-start')$$, 'FF001', 'trigger ''w-start'' not found', 'dropping it again: FF001');
SELECT throws_ok($$SELECT flowforge.set_trigger_enabled('w-start', true)$$, 'FF001', 'trigger ''w-start'' not found',
                 'enabling a dropped trigger: FF001');
SELECT is(flowforge.fire_trigger('w-start') ->> 'outcome', 'refused', 'firing a dropped trigger is refused (and recorded)');
SELECT is((SELECT trigger_id FROM flowforge.trigger_firing WHERE trigger_name = 'w-start' ORDER BY recorded_at DESC, id DESC LIMIT 1),
          NULL, 'as a firing of no trigger');
SELECT throws_ok($$SELECT flowforge.drop_trigger('no-such-trigger')$$, 'FF001', 'trigger ''no-such-trigger'' not found',
                 'drop_trigger of an unknown trigger: FF001');
SELECT results_eq(
    $$SELECT a.action::text, a.created_at FROM flowforge.audit_log a JOIN made m ON m.id::text = a.entity_id
      WHERE a.entity = 'trigger' AND m.name = 'w-start' AND a.action = 'drop'$$,
    $$VALUES ('drop', '2030-01-03 13:00+00'::timestamptz)$$, 'drop_trigger is audited');
-- A dropped name is free again; the new trigger is another row.
SELECT isnt(flowforge.create_trigger('w-start', 'cron', 'start', 'cr_job', '{"cron": "0 * * * *"}'),
            (SELECT id FROM made WHERE name = 'w-start'), 'a dropped trigger''s name can be used again: a new trigger, a new id');
SELECT results_eq(
    $$SELECT trigger_type::text, deleted_at IS NULL FROM flowforge.scheduled_trigger WHERE name = 'w-start' ORDER BY created_at, deleted_at$$,
    $$VALUES ('webhook', false), ('cron', true)$$, 'both rows exist: the dropped one and the live one');
SELECT throws_ok($$SELECT flowforge.create_trigger('w-start', 'cron', 'start', 'cr_job', '{"cron": "0 * * * *"}')$$,
                 'FF003', NULL, 'and the name is taken again');
SELECT lives_ok($$SELECT flowforge.drop_trigger('w-start')$$, 'the new one dropped too');
SELECT is((SELECT count(*)::int FROM flowforge.scheduled_trigger WHERE name = 'w-start' AND deleted_at IS NOT NULL), 2,
          'two dropped rows of one name: the key is over live triggers only (scheduled_trigger_live_name_uq)');
SELECT lives_ok($$SELECT flowforge.drop_trigger('c-start')$$, 'a cron trigger dropped');
SELECT results_eq($$SELECT enabled, next_fire_at FROM flowforge.scheduled_trigger WHERE name = 'c-start'$$,
                  $$VALUES (false, '2030-01-01 01:10+00'::timestamptz)$$,
                  'a dropped cron trigger is disabled, so no tick finds it (idx_trigger_due is WHERE enabled)');

-- ------------------------------------------------------------------ rights: a viewer reads, a member writes
SELECT flowforge_test.login('ff_t16_cr_viewer', 'default', 'viewer');
SELECT flowforge_test.login('ff_t16_cr_member', 'default', 'member');
SELECT is(flowforge_test.as_login('ff_t16_cr_viewer', $$SELECT jsonb_agg(name ORDER BY name) FROM flowforge.list_triggers() WHERE name LIKE 'g-%'$$),
          '["g-signal", "g-start"]', 'a viewer lists the triggers');
SELECT is(flowforge_test.as_login('ff_t16_cr_viewer', $$SELECT to_jsonb(flowforge.create_trigger('cr-v', 'filesystem', 'start', 'cr_job', '{"path": "/v"}'))$$) ->> 'sqlstate',
          'FF007', 'a viewer cannot create a trigger (FF007)');
SELECT is(flowforge_test.as_login('ff_t16_cr_viewer', $$SELECT to_jsonb(flowforge.set_trigger_enabled('g-start', false))$$) ->> 'sqlstate',
          'FF007', 'nor pause one');
SELECT is(flowforge_test.as_login('ff_t16_cr_viewer', $$SELECT to_jsonb(flowforge.drop_trigger('g-start'))$$) ->> 'sqlstate',
          'FF007', 'nor drop one');
SELECT is(flowforge_test.as_login('ff_t16_cr_member', $$SELECT to_jsonb(flowforge.create_trigger('cr-m', 'filesystem', 'start', 'cr_job', '{"path": "/m"}'))$$) ->> 'sqlstate',
          NULL, 'a member creates a trigger');
SELECT is((SELECT created_by FROM flowforge.scheduled_trigger WHERE name = 'cr-m'), 'ff_t16_cr_member', 'created_by is the member''s login');
SELECT is(flowforge_test.as_login('ff_t16_cr_member', $$SELECT jsonb_build_array(flowforge.set_trigger_enabled('cr-m', false), flowforge.drop_trigger('cr-m'))$$) ->> 'sqlstate',
          NULL, 'a member pauses and drops it');
SELECT results_eq($$SELECT updated_by, deleted_by FROM flowforge.scheduled_trigger WHERE name = 'cr-m'$$,
                  $$VALUES ('ff_t16_cr_member'::text, 'ff_t16_cr_member'::text)$$, 'updated_by and deleted_by name the member');

-- ------------------------------------------------------------------ named arguments
SELECT isnt(flowforge.create_trigger(name => 'cr-named', trigger_type => 'gitpoll', action => 'start', target => 'cr_job',
                                     options => '{"repo": "/named"}'), NULL, 'create_trigger with named arguments');
SELECT isnt(flowforge.create_trigger(target => 'cr_job', action => 'start', trigger_type => 'filesystem', name => 'cr-named-2',
                                     options => '{"path": "/named"}'), NULL, 'create_trigger with named arguments in any order');
SELECT matches(flowforge_test.error_of($$SELECT flowforge.create_trigger(name => 'cr-named-3', trigger_type => 'webhook', action => 'start', target => 'cr_job')$$),
               '^FF002 invalid trigger: a webhook trigger needs options.secret', 'options defaults to {} (a webhook then lacks its secret)');
SELECT lives_ok($$SELECT flowforge.create_trigger(name => 'cr-named-4', trigger_type => 'filesystem', action => 'signal', target => 'paid',
                                                  options => '{"path": "/p", "run_id_path": "$.run"}')$$,
                'a signal trigger with named arguments');
SELECT lives_ok($$SELECT flowforge.set_trigger_enabled(name => 'cr-named', enabled => false)$$, 'set_trigger_enabled with named arguments');
SELECT lives_ok($$SELECT flowforge.set_trigger_enabled(enabled => true, name => 'cr-named')$$, 'in any order');
SELECT lives_ok($$SELECT flowforge.drop_trigger(name => 'cr-named')$$, 'drop_trigger with a named argument');
SELECT is((SELECT count(*)::int FROM flowforge.list_triggers() WHERE name LIKE 'cr-named%'), 2,
          'list_triggers() takes no argument: the two named triggers still live');
SELECT is(flowforge.cron_next(expr => '30 2 * * *', after => '2024-03-09 12:00+00', timezone => 'America/New_York'),
          '2024-03-10 07:00+00'::timestamptz, 'cron_next with named arguments (02:30 on the day of the gap: 03:00 EDT)');
SELECT is(flowforge.cron_next(after => '2024-03-09 12:00+00', expr => '@daily'), '2024-03-10 00:00+00'::timestamptz,
          'cron_next with named arguments in any order, timezone defaulted to UTC');

SELECT * FROM finish();
ROLLBACK;
