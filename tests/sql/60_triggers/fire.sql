-- fire_trigger: every outcome, and exactly one trigger_firing row per firing.
--   started    a run of the trigger's workflow (any kind), its directory row
--              naming the trigger and the firing; input = the payload's keys
--              || the trigger's input (a non-object payload under "payload")
--   signalled  the event sent to the machine run the payload (or the trigger)
--              names, the machine moved (a duplicate event id is still signalled)
--   refused    unknown or disabled trigger; a signal to an unknown, foreign or
--              ended run, or one the machine refuses (FF012), or a payload
--              naming no run; a start whose input fails validation or whose
--              workflow is gone; any FF refusal the action raises
--   failed     the action raised for another reason
-- Each with what arrived (payload), the action, definition and event, the run
-- (empty on a refusal), the error, fired_on (the source's, default now) and
-- recorded_at (ours). A refused or failed action leaves nothing behind. The
-- same delivery id for the same trigger returns the first firing and does
-- nothing. trigger_firing is append-only (FF011), for its owner too and in
-- replica mode.
BEGIN;
SET LOCAL client_min_messages = warning;
SET LOCAL TimeZone = 'UTC';
SELECT plan(135);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00');

-- What each fire_trigger call answered, in order (the one-row rule is checked against it).
CREATE TEMP TABLE fired (n serial PRIMARY KEY, label text UNIQUE NOT NULL, answer jsonb NOT NULL);
CREATE FUNCTION pg_temp.fire(p_label text, p_name text, p_payload jsonb DEFAULT '{}', p_fired_on timestamptz DEFAULT NULL,
                             p_delivery_id text DEFAULT NULL) RETURNS jsonb
LANGUAGE sql AS $$
    INSERT INTO fired (label, answer)
    SELECT p_label, flowforge.fire_trigger(p_name, p_payload, p_fired_on, p_delivery_id)
    RETURNING answer
$$;
CREATE FUNCTION pg_temp.answer(p_label text) RETURNS jsonb LANGUAGE sql AS $$ SELECT answer FROM fired WHERE label = p_label $$;
-- The firing row an answer names, as jsonb (every column).
CREATE FUNCTION pg_temp.firing(p_label text) RETURNS jsonb LANGUAGE sql AS $$
    SELECT to_jsonb(f) FROM flowforge.trigger_firing f WHERE f.id = (SELECT (answer ->> 'firing_id')::uuid FROM fired WHERE label = p_label)
$$;
-- Everything a start could have written: runs of every engine, their units, history, audit.
CREATE FUNCTION pg_temp.footprint() RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object(
        'engine_run', (SELECT count(*) FROM flowforge.engine_run), 'workflow_run', (SELECT count(*) FROM flowforge.workflow_run),
        'task_run', (SELECT count(*) FROM flowforge.task_run), 'graph_run', (SELECT count(*) FROM flowforge.graph_run),
        'machine_run', (SELECT count(*) FROM flowforge.machine_run), 'work_item', (SELECT count(*) FROM flowforge.work_item),
        'task_run_event', (SELECT count(*) FROM flowforge.task_run_event),
        'machine_transition', (SELECT count(*) FROM flowforge.machine_transition),
        'audit_start', (SELECT count(*) FROM flowforge.audit_log WHERE action = 'start'))
$$;

-- ------------------------------------------------------------------ fixture
SELECT isnt(flowforge_test.define_single('fr_job'), NULL, 'fixture: fr_job v1 (a DAG)');
SELECT isnt(flowforge_test.define_graph_single('fr_graph'), NULL, 'fixture: fr_graph (a graph)');
SELECT isnt(flowforge_test.define_order('fr_order'), NULL, 'fixture: fr_order (the order machine)');
SELECT isnt(flowforge.create_trigger('fr-start', 'webhook', 'start', 'fr_job',
                                     '{"secret": "0123456789abcdef", "input": {"source": "hook", "n": 0}}'), NULL,
            'fixture: fr-start, a webhook starting fr_job with input {"source": "hook", "n": 0}');
SELECT isnt(flowforge_test.define_diamond('fr_job'), NULL, 'fixture: fr_job v2 (a diamond), defined after the trigger');
SELECT isnt(flowforge.create_trigger('fr-graph', 'filesystem', 'start', 'fr_graph', '{"path": "/in"}'), NULL, 'fixture: fr-graph');
SELECT isnt(flowforge.create_trigger('fr-machine', 'gitpoll', 'start', 'fr_order', '{"repo": "/repo"}'), NULL, 'fixture: fr-machine');
SELECT isnt(flowforge.create_trigger('fr-pay', 'webhook', 'signal', 'paid',
                                     '{"secret": "0123456789abcdef", "run_id_path": "$.order.run", "event_id_path": "$.id",
                                       "input": {"via": "hook"}}'), NULL,
            'fixture: fr-pay, a webhook signalling paid to the run at $.order.run, event id at $.id');
SELECT isnt(flowforge.create_trigger('fr-off', 'webhook', 'start', 'fr_job', '{"secret": "0123456789abcdef"}'), NULL, 'fixture: fr-off');
SELECT lives_ok($$SELECT flowforge.set_trigger_enabled('fr-off', false)$$, 'fixture: fr-off disabled');
-- A test-only fault: with fr.fault set to a SQLSTATE, the directory row's
-- cause (the last write of a start, after the run's own rows and events)
-- raises it; so does a machine's history entry (the last write of an event).
CREATE FUNCTION pg_temp.fault() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF coalesce(current_setting('fr.fault', true), '') <> ''
       AND (TG_TABLE_NAME <> 'engine_run' OR to_jsonb(NEW) ->> 'triggered_by' IS NOT NULL) THEN
        RAISE EXCEPTION 'injected fault on %', TG_TABLE_NAME USING ERRCODE = current_setting('fr.fault');
    END IF;
    RETURN NEW;
END;
$$;
CREATE TRIGGER fr_fault BEFORE INSERT OR UPDATE ON flowforge.engine_run FOR EACH ROW EXECUTE FUNCTION pg_temp.fault();
CREATE TRIGGER fr_fault BEFORE INSERT ON flowforge.machine_transition FOR EACH ROW EXECUTE FUNCTION pg_temp.fault();

-- ------------------------------------------------------------------ started
SELECT flowforge_test.set_clock('2030-01-01 00:01:00+00');
SELECT is(pg_temp.fire('start', 'fr-start', '{"n": 1, "x": "a"}', '2029-12-31 23:59:00+00') ->> 'outcome', 'started',
          'started: fire_trigger answers outcome started');
SELECT is(pg_temp.answer('start') - 'firing_id' - 'run_id',
          '{"outcome": "started", "error": null}'::jsonb, 'the answer: {firing_id, outcome, run_id, error}');
SELECT is(pg_temp.firing('start') - 'id' - 'run_id' - 'trigger_id',
          jsonb_build_object('organization_id', '00000000-0000-0000-0000-000000000001', 'trigger_name', 'fr-start',
                             'trigger_type', 'webhook', 'payload', '{"n": 1, "x": "a"}'::jsonb, 'action', 'start',
                             'definition_id', (SELECT id FROM flowforge.workflow WHERE name = 'fr_job' AND version = 2),
                             'event', NULL, 'outcome', 'started', 'error', NULL,
                             'fired_on', '2029-12-31T23:59:00+00:00', 'recorded_at', '2030-01-01T00:01:00+00:00',
                             'delivery_id', NULL, 'created_by', 'postgres'),
          'its one firing row: what arrived, the action, the definition (the latest version), no event, the outcome, no '
          'error, the source''s fired_on and our recorded_at, the actor');
SELECT is(pg_temp.firing('start') ->> 'trigger_id', (SELECT id::text FROM flowforge.scheduled_trigger WHERE name = 'fr-start'),
          'the firing names the trigger by id');
SELECT is((pg_temp.firing('start') ->> 'run_id'), pg_temp.answer('start') ->> 'run_id', 'and the run it started');
SELECT results_eq(
    $$SELECT engine_kind::text, definition_id, triggered_by::text, trigger_firing_id FROM flowforge.engine_run
      WHERE run_id = (pg_temp.answer('start') ->> 'run_id')::uuid$$,
    $$SELECT 'dag', (SELECT id FROM flowforge.workflow WHERE name = 'fr_job' AND version = 2), 'fr-start',
             (pg_temp.answer('start') ->> 'firing_id')::uuid$$,
    'the run''s directory row names the trigger (triggered_by) and the firing (trigger_firing_id)');
SELECT results_eq(
    $$SELECT workflow_id, state::text, input::jsonb, tasks_total FROM flowforge.workflow_run WHERE id = (pg_temp.answer('start') ->> 'run_id')::uuid$$,
    $$SELECT (SELECT id FROM flowforge.workflow WHERE name = 'fr_job' AND version = 2), 'running',
             '{"n": 0, "x": "a", "source": "hook"}'::jsonb, 4$$,
    'the run: the latest version (the diamond defined after the trigger), input = the payload''s keys || the trigger''s '
    'input (its n wins)');
SELECT is((SELECT last_fired_at FROM flowforge.scheduled_trigger WHERE name = 'fr-start'), '2029-12-31 23:59+00'::timestamptz,
          'the trigger''s last_fired_at is the firing''s fired_on');
SELECT is((SELECT fields FROM flowforge.audit_log WHERE action = 'start' AND entity_id = pg_temp.answer('start') ->> 'run_id'),
          ARRAY['workflow', 'input', 'trigger'], 'the start is audited, naming the trigger as a field');

SELECT is(pg_temp.fire('array', 'fr-start', '[1, 2]') ->> 'outcome', 'started', 'a payload that is an array starts a run');
SELECT is((SELECT input::jsonb FROM flowforge.workflow_run WHERE id = (pg_temp.answer('array') ->> 'run_id')::uuid),
          '{"payload": [1, 2], "source": "hook", "n": 0}'::jsonb, 'with the array under "payload", then the trigger''s input');
SELECT is(pg_temp.fire('scalar', 'fr-start', '"main"') ->> 'outcome', 'started', 'so does a string');
SELECT is((SELECT input::jsonb FROM flowforge.workflow_run WHERE id = (pg_temp.answer('scalar') ->> 'run_id')::uuid),
          '{"payload": "main", "source": "hook", "n": 0}'::jsonb, 'under "payload"');
SELECT is(pg_temp.firing('scalar') -> 'payload', '"main"'::jsonb, 'the firing keeps the payload as it arrived');
SELECT is(pg_temp.firing('scalar') ->> 'fired_on', '2030-01-01T00:01:00+00:00', 'fired_on defaults to now');
SELECT is((SELECT last_fired_at FROM flowforge.scheduled_trigger WHERE name = 'fr-start'), '2030-01-01 00:01+00'::timestamptz,
          'last_fired_at moves to the newest fired_on');
SELECT is(pg_temp.fire('older', 'fr-start', '{}', '2029-06-01 00:00+00') ->> 'outcome', 'started', 'a firing from the past');
SELECT is((SELECT last_fired_at FROM flowforge.scheduled_trigger WHERE name = 'fr-start'), '2030-01-01 00:01+00'::timestamptz,
          'never moves last_fired_at back');
SELECT is(pg_temp.fire('null', 'fr-start', NULL) ->> 'outcome', 'started', 'a NULL payload starts a run');
SELECT is(pg_temp.firing('null') -> 'payload', '{}'::jsonb, 'recorded as {}');

SELECT is(pg_temp.fire('graph', 'fr-graph', '{"path": "/in/a.csv"}') ->> 'outcome', 'started', 'a graph workflow started');
SELECT results_eq(
    $$SELECT e.engine_kind::text, e.triggered_by::text, e.trigger_firing_id, g.status::text, g.input
      FROM flowforge.engine_run e JOIN flowforge.graph_run g ON g.run_id = e.run_id
      WHERE e.run_id = (pg_temp.answer('graph') ->> 'run_id')::uuid$$,
    $$SELECT 'graph', 'fr-graph', (pg_temp.answer('graph') ->> 'firing_id')::uuid, 'running', '{"path": "/in/a.csv"}'::jsonb$$,
    'a graph run: its directory row names the trigger and the firing');
SELECT is(pg_temp.fire('machine', 'fr-machine', '{"total": 20}') ->> 'outcome', 'started', 'a state machine started');
SELECT results_eq(
    $$SELECT e.engine_kind::text, e.triggered_by::text, e.trigger_firing_id, m.state::text, m.context
      FROM flowforge.engine_run e JOIN flowforge.machine_run m ON m.run_id = e.run_id
      WHERE e.run_id = (pg_temp.answer('machine') ->> 'run_id')::uuid$$,
    $$SELECT 'statemachine', 'fr-machine', (pg_temp.answer('machine') ->> 'firing_id')::uuid, 'awaiting_payment', '{"total": 20}'::jsonb$$,
    'a machine run: its directory row names the trigger and the firing; the payload became its context');

-- ------------------------------------------------------------------ signalled
CREATE TEMP TABLE runs AS
SELECT 'M1'::text AS k, flowforge.start_run('fr_order') AS id
UNION ALL SELECT 'M2', flowforge.start_run('fr_order')
UNION ALL SELECT 'M3', flowforge.start_run('fr_order')
UNION ALL SELECT 'D', flowforge.start_run('fr_job');
CREATE FUNCTION pg_temp.run(p_k text) RETURNS uuid LANGUAGE sql AS $$ SELECT id FROM runs WHERE k = p_k $$;
SELECT flowforge_test.set_clock('2030-01-01 00:02:00+00');
SELECT is(pg_temp.fire('signal', 'fr-pay', jsonb_build_object('order', jsonb_build_object('run', pg_temp.run('M1')), 'amount', 150, 'id', 'evt-1'))
          ->> 'outcome', 'signalled', 'signalled: the event moved the machine the payload names');
SELECT is(pg_temp.answer('signal') -> 'run_id', to_jsonb(pg_temp.run('M1')), 'the answer names the run');
SELECT is(pg_temp.answer('signal') -> 'signal', '{"outcome": "applied", "state": "shipping", "live": true, "suspended": true}'::jsonb,
          'and carries send_event''s answer under "signal"');
SELECT is(flowforge_test.machine_state(pg_temp.run('M1')), 'shipping', 'the machine is in shipping');
SELECT results_eq(
    $$SELECT event::text, event_id::text, payload FROM flowforge.machine_transition WHERE run_id = pg_temp.run('M1') AND n = 2$$,
    $$SELECT 'paid', 'evt-1', jsonb_build_object('order', jsonb_build_object('run', pg_temp.run('M1')), 'amount', 150, 'id', 'evt-1',
                                                 'via', 'hook')$$,
    'its history: the event, its id from event_id_path, the payload merged with the trigger''s input');
SELECT is(pg_temp.firing('signal') - 'id' - 'trigger_id' - 'payload',
          jsonb_build_object('organization_id', '00000000-0000-0000-0000-000000000001', 'trigger_name', 'fr-pay',
                             'trigger_type', 'webhook', 'action', 'signal',
                             'definition_id', (SELECT e.definition_id FROM flowforge.engine_run e
                                               WHERE e.run_id = pg_temp.run('M1')),
                             'event', 'paid', 'run_id', pg_temp.run('M1'), 'outcome', 'signalled', 'error', NULL,
                             'fired_on', '2030-01-01T00:02:00+00:00', 'recorded_at', '2030-01-01T00:02:00+00:00',
                             'delivery_id', NULL, 'created_by', 'postgres'),
          'its firing row: action signal, the event, the run it moved and that run''s definition (the machine)');
SELECT is(pg_temp.fire('signal again', 'fr-pay', jsonb_build_object('order', jsonb_build_object('run', pg_temp.run('M1')), 'amount', 150, 'id', 'evt-1'))
          -> 'signal' ->> 'outcome', 'duplicate', 'the same event id again: send_event says duplicate');
SELECT results_eq($$SELECT pg_temp.answer('signal again') ->> 'outcome', pg_temp.answer('signal again') ->> 'run_id',
                           flowforge_test.machine_state(pg_temp.run('M1'))$$,
                  $$VALUES ('signalled', pg_temp.run('M1')::text, 'shipping')$$,
                  'still signalled, naming the run (its event reached it), and the machine did not move again');
SELECT is((SELECT count(*)::int FROM flowforge.machine_transition WHERE run_id = pg_temp.run('M1')), 2, 'nor did its history grow');
-- The event id falls back to the delivery id.
SELECT isnt(flowforge.create_trigger('fr-cancel', 'gitpoll', 'signal', 'cancel', jsonb_build_object('repo', '/repo', 'run_id', pg_temp.run('M2'))),
            NULL, 'fixture: fr-cancel, a signal to one fixed run (options.run_id)');
SELECT is(pg_temp.fire('cancel', 'fr-cancel', '"stop it"', NULL, 'sha-1') ->> 'outcome', 'signalled', 'a signal to a fixed run');
SELECT results_eq(
    $$SELECT event::text, event_id::text, payload FROM flowforge.machine_transition WHERE run_id = pg_temp.run('M2') AND n = 2$$,
    $$VALUES ('cancel', 'sha-1', '{"payload": "stop it"}'::jsonb)$$,
    'without event_id_path the event id is the delivery id; a non-object payload goes under "payload"');
SELECT results_eq($$SELECT flowforge_test.machine_state(pg_temp.run('M2')), flowforge_test.machine_status(pg_temp.run('M2'))$$,
                  $$VALUES ('cancelled', 'succeeded')$$, 'M2 reached its final state cancelled');

-- ------------------------------------------------------------------ refused
CREATE TEMP TABLE before AS SELECT pg_temp.footprint() AS f, flowforge_test.machine_footprint(pg_temp.run('M1')) AS m1,
                                     flowforge_test.machine_footprint(pg_temp.run('M3')) AS m3;
SELECT flowforge_test.set_clock('2030-01-01 00:03:00+00');
SELECT is(pg_temp.fire('unknown', 'fr-nope', '{"a": 1}', '2029-01-01 00:00+00', 'd-nope') ->> 'outcome', 'refused',
          'refused: a trigger that does not exist');
SELECT is(pg_temp.firing('unknown') - 'id',
          jsonb_build_object('organization_id', '00000000-0000-0000-0000-000000000001', 'trigger_id', NULL,
                             'trigger_name', 'fr-nope', 'trigger_type', NULL, 'payload', '{"a": 1}'::jsonb, 'action', NULL,
                             'definition_id', NULL, 'event', NULL, 'run_id', NULL, 'outcome', 'refused',
                             'error', 'no trigger named ''fr-nope''', 'fired_on', '2029-01-01T00:00:00+00:00',
                             'recorded_at', '2030-01-01T00:03:00+00:00', 'delivery_id', 'd-nope', 'created_by', 'postgres'),
          'one firing row with no trigger id: the name it was called by, what arrived, why');
SELECT is(pg_temp.answer('unknown') - 'firing_id',
          '{"outcome": "refused", "run_id": null, "error": "no trigger named ''fr-nope''"}'::jsonb, 'the answer says why');
SELECT is(pg_temp.fire('unknown again', 'fr-nope', '{"a": 1}', NULL, 'd-nope') ->> 'outcome', 'refused',
          'the same delivery id to an unknown trigger again');
SELECT isnt(pg_temp.answer('unknown again') ->> 'firing_id', pg_temp.answer('unknown') ->> 'firing_id',
            'is a second firing: no trigger, no delivery key');
SELECT is(pg_temp.fire('no name', NULL) ->> 'error', 'no trigger named NULL', 'refused: no name at all');
SELECT is(pg_temp.firing('no name') ->> 'trigger_name', '', 'recorded under the empty name');
SELECT is(pg_temp.fire('long name', repeat('n', 100)) ->> 'outcome', 'refused', 'refused: a name longer than any trigger''s');
SELECT is(pg_temp.firing('long name') ->> 'trigger_name', repeat('n', 63), 'recorded under its first 63 characters');
SELECT is(pg_temp.fire('disabled', 'fr-off', '{"b": 2}') ->> 'outcome', 'refused', 'refused: a disabled trigger');
SELECT results_eq(
    $$SELECT trigger_id, trigger_type::text, action::text, definition_id, run_id, error FROM flowforge.trigger_firing
      WHERE id = (pg_temp.answer('disabled') ->> 'firing_id')::uuid$$,
    $$SELECT (SELECT id FROM flowforge.scheduled_trigger WHERE name = 'fr-off'), 'webhook', 'start', NULL::uuid, NULL::uuid,
             'trigger ''fr-off'' is disabled'$$,
    'the firing names the trigger and its action; nothing was looked up (no definition), nothing started');
SELECT is((SELECT last_fired_at FROM flowforge.scheduled_trigger WHERE name = 'fr-off'), NULL, 'a refusal does not set last_fired_at');

-- Signals the target refuses.
SELECT is(pg_temp.fire('no run', 'fr-pay', '{"order": {}, "amount": 150}') - 'firing_id',
          '{"outcome": "refused", "run_id": null, "error": "the payload names no run at $.\"order\".\"run\" (found nothing) (FF003)"}'::jsonb,
          'refused: a payload that names no run at run_id_path (FF003)');
SELECT is(pg_temp.fire('bad run', 'fr-pay', '{"order": {"run": "order-17"}}') ->> 'error',
          'the payload names no run at $."order"."run" (found ''order-17'') (FF003)', 'refused: a payload whose run is no uuid (FF003)');
SELECT is(pg_temp.fire('unknown run', 'fr-pay', '{"order": {"run": "00000000-0000-0000-0000-0000000000aa"}, "amount": 150}') ->> 'error',
          'run 00000000-0000-0000-0000-0000000000aa not found (FF001)', 'refused: a run that does not exist (FF001)');
SELECT is(pg_temp.fire('guard', 'fr-pay', jsonb_build_object('order', jsonb_build_object('run', pg_temp.run('M3')), 'amount', 10)) ->> 'error',
          'event "paid" refused: no guard of event "paid" holds in state "awaiting_payment" (FF012)',
          'refused: an event the machine refuses (its guard does not hold: FF012)');
SELECT is(pg_temp.fire('not accepted', 'fr-pay', jsonb_build_object('order', jsonb_build_object('run', pg_temp.run('M1')), 'id', 'evt-9')) ->> 'outcome',
          'signalled', '(paid to the suspended M1 is queued, not refused: a state of the machine accepts it)');
SELECT is(pg_temp.fire('ended', 'fr-cancel', '{}') ->> 'error',
          'event "cancel" refused: the run has ended (succeeded: reached final state "cancelled") (FF012)', 'refused: a signal to an ended run (FF012)');
SELECT is(pg_temp.fire('dag run', 'fr-pay', jsonb_build_object('order', jsonb_build_object('run', pg_temp.run('D')))) ->> 'error',
          format('event "paid" refused: run %s is a dag run, and only statemachine runs take events (FF012)', pg_temp.run('D')),
          'refused: a signal to a run that is no state machine (FF012)');
SELECT results_eq(
    $$SELECT f.outcome::text, f.action::text, f.event::text, f.run_id, f.definition_id
      FROM fired x JOIN flowforge.trigger_firing f ON f.id = (x.answer ->> 'firing_id')::uuid
      WHERE x.label IN ('no run', 'bad run', 'unknown run', 'guard', 'ended', 'dag run')
      ORDER BY x.n$$,
    $$VALUES ('refused', 'signal', 'paid', NULL::uuid, NULL::uuid), ('refused', 'signal', 'paid', NULL, NULL),
             ('refused', 'signal', 'paid', NULL, NULL), ('refused', 'signal', 'paid', NULL, NULL),
             ('refused', 'signal', 'cancel', NULL, NULL), ('refused', 'signal', 'paid', NULL, NULL)$$,
    'each refused signal is one row with its action and event, and no run (the run is empty on a refusal)');
SELECT is(flowforge_test.machine_footprint(pg_temp.run('M3')), (SELECT m3 FROM before), 'the refused event wrote nothing to M3');
-- Another organization's run is not found, exactly like one that does not exist.
SELECT isnt(flowforge.create_organization('fr-other', 'Other'), NULL, 'fixture: another organization');
SELECT flowforge_test.login('ff_t16_fr_other', 'fr-other', 'admin');
SELECT is(flowforge_test.as_login('ff_t16_fr_other', $$SELECT to_jsonb(flowforge.define_workflow('{"name": "fr_order",
              "kind": "statemachine", "initial": "awaiting_payment", "states": {"awaiting_payment": {"on": {"paid": "done"}},
              "done": {"final": true}}}'))$$) ->> 'sqlstate', NULL,
          'fixture: the other organization defines its own fr_order');
INSERT INTO runs SELECT 'X', (flowforge_test.as_login('ff_t16_fr_other', $$SELECT to_jsonb(flowforge.start_run('fr_order'))$$) #>> '{}')::uuid;
SELECT is((SELECT organization_id FROM flowforge.engine_run WHERE run_id = pg_temp.run('X')),
          (SELECT id FROM flowforge.organization WHERE slug = 'fr-other'), 'fixture: run X is the other organization''s');
SELECT is(pg_temp.fire('foreign run', 'fr-pay', jsonb_build_object('order', jsonb_build_object('run', pg_temp.run('X')), 'amount', 150)) ->> 'error',
          format('run %s not found (FF001)', pg_temp.run('X')),
          'refused: another organization''s run is not found (FF001)');
SELECT is(flowforge_test.machine_state(pg_temp.run('X')), 'awaiting_payment', 'and it did not move');
UPDATE before SET f = pg_temp.footprint();  -- X is a run of the fixture's

-- Starts that fail validation, or whose workflow is gone.
UPDATE flowforge.setting SET max_payload_bytes = 1024;
SELECT isnt(flowforge.create_trigger('fr-big', 'filesystem', 'start', 'fr_job', jsonb_build_object('path', '/big', 'input',
                                     jsonb_build_object('pad', repeat('i', 600)))), NULL,
            'fixture: fr-big, whose input is 600 characters (max_payload_bytes lowered to 1024)');
SELECT is(pg_temp.fire('too big', 'fr-big', jsonb_build_object('more', repeat('p', 600))) - 'firing_id',
          '{"outcome": "refused", "run_id": null, "error": "run input is 1223 bytes, over the limit of 1024 bytes (FF009)"}'::jsonb,
          'refused: a payload within the limit whose merge with the trigger''s input is not (FF009)');
SELECT is(pg_temp.firing('too big') ->> 'definition_id', (SELECT id::text FROM flowforge.workflow WHERE name = 'fr_job' AND version = 2),
          'a refused start records the definition it would have started');
SELECT is(pg_temp.firing('too big') -> 'payload', jsonb_build_object('more', repeat('p', 600)), 'and the payload that arrived');
UPDATE flowforge.setting SET max_payload_bytes = 1048576;
SELECT isnt(flowforge_test.define_single('fr_gone'), NULL, 'fixture: fr_gone, never run');
SELECT isnt(flowforge.create_trigger('fr-gone', 'filesystem', 'start', 'fr_gone', '{"path": "/gone"}'), NULL, 'fixture: fr-gone');
DELETE FROM flowforge.workflow WHERE name = 'fr_gone';
SELECT is(pg_temp.fire('gone', 'fr-gone') ->> 'error', 'workflow ''fr_gone'' not found (FF001)',
          'refused: a start whose workflow was deleted since (FF001)');
SELECT is(pg_temp.firing('gone') -> 'definition_id', 'null'::jsonb, 'with no definition');

-- A refusal raised after the run's rows were written: the savepoint takes them all back.
SET LOCAL fr.fault = 'FF003';
SELECT is(pg_temp.fire('late refusal', 'fr-start', '{"n": 9}') - 'firing_id',
          '{"outcome": "refused", "run_id": null, "error": "injected fault on engine_run (FF003)"}'::jsonb,
          'refused: an FF refusal raised by the last write of a start');
SET LOCAL fr.fault = '';
SELECT is(pg_temp.footprint() - 'machine_transition', (SELECT f FROM before) - 'machine_transition',
          'no refused start left anything behind: no run of any engine, task, event or audit entry');

-- ------------------------------------------------------------------ failed
SET LOCAL fr.fault = 'P0001';
SELECT is(pg_temp.fire('failed start', 'fr-start', '{"n": 10}', NULL, 'd-failed') - 'firing_id',
          '{"outcome": "failed", "run_id": null, "error": "injected fault on engine_run (P0001)"}'::jsonb,
          'failed: the start raised for another reason');
SELECT is(pg_temp.firing('failed start') - 'id' - 'trigger_id' - 'recorded_at' - 'fired_on',
          jsonb_build_object('organization_id', '00000000-0000-0000-0000-000000000001', 'trigger_name', 'fr-start',
                             'trigger_type', 'webhook', 'payload', '{"n": 10}'::jsonb, 'action', 'start',
                             'definition_id', (SELECT id FROM flowforge.workflow WHERE name = 'fr_job' AND version = 2),
                             'event', NULL, 'run_id', NULL, 'outcome', 'failed', 'error', 'injected fault on engine_run (P0001)',
                             'delivery_id', 'd-failed', 'created_by', 'postgres'),
          'one firing row: the action and definition, no run, the error with its SQLSTATE');
SELECT is(pg_temp.fire('failed graph', 'fr-graph', '{}') ->> 'outcome', 'failed', 'failed: a graph start');
SELECT is(pg_temp.fire('failed signal', 'fr-pay', jsonb_build_object('order', jsonb_build_object('run', pg_temp.run('M3')), 'amount', 150, 'id', 'evt-2'))
          - 'firing_id', '{"outcome": "failed", "run_id": null, "error": "injected fault on machine_transition (P0001)"}'::jsonb,
          'failed: a signal whose history entry could not be written');
SET LOCAL fr.fault = '';
SELECT is(pg_temp.footprint() - 'machine_transition', (SELECT f FROM before) - 'machine_transition', 'no failed action left anything behind');
SELECT is(flowforge_test.machine_footprint(pg_temp.run('M3')), (SELECT m3 FROM before),
          'the failed signal wrote nothing to M3 either (not even its event id as seen)');
SELECT is(pg_temp.fire('retried', 'fr-pay', jsonb_build_object('order', jsonb_build_object('run', pg_temp.run('M3')), 'amount', 150, 'id', 'evt-2'))
          -> 'signal' ->> 'outcome', 'applied', 'so the same event sent again (no fault now) is applied, not a duplicate');
SELECT is(flowforge_test.machine_state(pg_temp.run('M3')), 'shipping', 'M3 moved to shipping');

-- ------------------------------------------------------------------ one row per firing
SELECT is((SELECT count(*)::int FROM flowforge.trigger_firing), (SELECT count(*)::int FROM fired),
          'exactly one trigger_firing row per fire_trigger call, whatever its outcome');
SELECT is((SELECT count(*)::int FROM fired f JOIN flowforge.trigger_firing t ON t.id = (f.answer ->> 'firing_id')::uuid
           WHERE t.outcome = f.answer ->> 'outcome' AND t.run_id IS NOT DISTINCT FROM (f.answer ->> 'run_id')::uuid
             AND t.error IS NOT DISTINCT FROM f.answer ->> 'error'),
          (SELECT count(*)::int FROM fired), 'and each answer is its row: the same firing id, outcome, run and error');
SELECT results_eq(
    $$SELECT outcome::text, count(*)::int FROM flowforge.trigger_firing GROUP BY 1 ORDER BY 1$$,
    $$VALUES ('failed', 3), ('refused', 15), ('signalled', 5), ('started', 7)$$,
    'every outcome was seen');
SELECT is((SELECT count(*)::int FROM flowforge.engine_run WHERE trigger_firing_id IS NOT NULL),
          (SELECT count(*)::int FROM flowforge.trigger_firing WHERE outcome = 'started'),
          'a run names a firing exactly when a firing started it');

-- ------------------------------------------------------------------ delivery ids
SELECT flowforge_test.set_clock('2030-01-01 00:04:00+00');
SELECT is(pg_temp.fire('push-1', 'fr-start', '{"ref": "main"}', NULL, 'push-1') ->> 'outcome', 'started', 'a delivery with an id');
TRUNCATE before;
INSERT INTO before SELECT pg_temp.footprint(), NULL;
SELECT is(pg_temp.fire('push-1 again', 'fr-start', '{"ref": "other"}', NULL, 'push-1'),
          pg_temp.answer('push-1') || '{"duplicate": true}', 'the same id again returns the first firing (duplicate: true)');
SELECT is(pg_temp.footprint(), (SELECT f FROM before), 'and starts nothing');
SELECT is((SELECT count(*)::int FROM flowforge.trigger_firing WHERE delivery_id = 'push-1'), 1, 'nor records a second firing');
SELECT is(pg_temp.fire('push-1 graph', 'fr-graph', '{}', NULL, 'push-1') ->> 'outcome', 'started',
          'another trigger''s delivery of the same id is its own');
SELECT isnt(pg_temp.answer('push-1 graph') ->> 'firing_id', pg_temp.answer('push-1') ->> 'firing_id', 'a firing of its own');
SELECT is(pg_temp.fire('failed again', 'fr-start', '{"n": 10}', NULL, 'd-failed') - 'firing_id',
          '{"outcome": "failed", "run_id": null, "error": "injected fault on engine_run (P0001)", "duplicate": true}'::jsonb,
          'a failed delivery sent again returns the failed firing: it is not tried again');
SELECT is(pg_temp.fire('off-1', 'fr-off', '{}', NULL, 'off-1') ->> 'outcome', 'refused', 'a delivery to the disabled trigger');
SELECT lives_ok($$SELECT flowforge.set_trigger_enabled('fr-off', true)$$, 'the trigger enabled');
SELECT is(pg_temp.fire('off-1 again', 'fr-off', '{}', NULL, 'off-1') - 'firing_id',
          '{"outcome": "refused", "run_id": null, "error": "trigger ''fr-off'' is disabled", "duplicate": true}'::jsonb,
          'the same delivery after enabling returns the first (refused) firing: one firing per delivery, whatever it was');
SELECT is(pg_temp.fire('off-2', 'fr-off', '{}', NULL, 'off-2') ->> 'outcome', 'started', 'a new delivery starts');
SELECT lives_ok(format('SELECT flowforge.fire_trigger(%L, %L, NULL, %L)', 'fr-graph', '{}', repeat('d', 200)),
                'a delivery id of 200 characters');
CREATE TEMP TABLE n_firings AS SELECT count(*) AS n FROM flowforge.trigger_firing;
SELECT throws_ok(format('SELECT flowforge.fire_trigger(%L, %L, NULL, %L)', 'fr-graph', '{}', repeat('d', 201)),
                 'FF003', 'delivery_id must be 1 to 200 characters', 'a delivery id of 201 characters: FF003');
SELECT throws_ok($$SELECT flowforge.fire_trigger('fr-graph', '{}', NULL, '')$$,
                 'FF003', 'delivery_id must be 1 to 200 characters', 'an empty delivery id: FF003');
SELECT throws_ok($$SELECT flowforge.fire_trigger('fr-nope', '{}', NULL, '')$$,
                 'FF003', NULL, 'also for a trigger that does not exist (checked first)');
SELECT throws_ok(format('SELECT flowforge.fire_trigger(%L, %L)', 'fr-graph', jsonb_build_object('x', repeat('y', 1048576))),
                 'FF009', NULL, 'a payload over max_payload_bytes: FF009');
SELECT throws_ok(format('SELECT flowforge.fire_trigger(%L, %L)', 'fr-graph', repeat('[', 65) || '1' || repeat(']', 65)),
                 'FF009', NULL, 'a payload nested deeper than max_json_depth: FF009');
SELECT is((SELECT count(*) FROM flowforge.trigger_firing), (SELECT n FROM n_firings), 'the raised refusals recorded nothing');

-- ------------------------------------------------------------------ rights and named arguments
SELECT flowforge_test.login('ff_t16_fr_viewer', 'default', 'viewer');
SELECT flowforge_test.login('ff_t16_fr_member', 'default', 'member');
SELECT is(flowforge_test.as_login('ff_t16_fr_viewer', $$SELECT flowforge.fire_trigger('fr-graph')$$) ->> 'sqlstate', 'FF007',
          'a viewer cannot fire a trigger (FF007)');
SELECT is(flowforge_test.as_login('ff_t16_fr_member', $$SELECT flowforge.fire_trigger('fr-graph', '{"by": "member"}')$$) ->> 'outcome',
          'started', 'a member fires one');
SELECT results_eq(
    $$SELECT f.created_by, e.created_by FROM flowforge.trigger_firing f JOIN flowforge.engine_run e ON e.trigger_firing_id = f.id
      WHERE f.payload = '{"by": "member"}'$$,
    $$VALUES ('ff_t16_fr_member'::text, (SELECT created_by FROM flowforge.scheduled_trigger WHERE name = 'fr-graph'))$$,
    'the firing records the member who fired it; the run belongs to the trigger''s creator');
SELECT is(flowforge_test.as_login('ff_t16_fr_other', $$SELECT flowforge.fire_trigger('fr-graph')$$) - 'firing_id',
          '{"outcome": "refused", "run_id": null, "error": "no trigger named ''fr-graph''"}'::jsonb,
          'another organization firing our trigger''s name: refused as a trigger that does not exist');
SELECT results_eq(
    $$SELECT o.slug::text, f.trigger_id FROM flowforge.trigger_firing f JOIN flowforge.organization o ON o.id = f.organization_id
      WHERE f.created_by = 'ff_t16_fr_other'$$,
    $$VALUES ('fr-other', NULL::uuid)$$, 'recorded in its own organization, naming no trigger');
SELECT is((flowforge.fire_trigger(name => 'fr-graph', payload => '{"named": true}', fired_on => '2029-01-01 00:00+00',
                                  delivery_id => 'named-1')) ->> 'outcome', 'started', 'fire_trigger with named arguments');
SELECT results_eq($$SELECT payload, fired_on, delivery_id::text FROM flowforge.trigger_firing WHERE delivery_id = 'named-1'$$,
                  $$VALUES ('{"named": true}'::jsonb, '2029-01-01 00:00+00'::timestamptz, 'named-1')$$, 'each argument where it belongs');
SELECT is((flowforge.fire_trigger(delivery_id => 'named-2', name => 'fr-graph')) ->> 'outcome', 'started',
          'named arguments in any order, payload and fired_on defaulted');

-- ------------------------------------------------------------------ append-only
CREATE TEMP TABLE kept AS SELECT count(*) AS n, string_agg(f::text, ',' ORDER BY f.id) AS rows FROM flowforge.trigger_firing f;
SELECT throws_ok($$UPDATE flowforge.trigger_firing SET outcome = 'started' WHERE outcome = 'refused'$$, 'FF011',
                 'UPDATE on flowforge.trigger_firing is not allowed: the table is append-only', 'UPDATE of a firing: FF011');
SELECT throws_ok($$DELETE FROM flowforge.trigger_firing WHERE outcome = 'failed'$$, 'FF011',
                 'DELETE on flowforge.trigger_firing is not allowed: the table is append-only', 'DELETE of a firing: FF011');
SELECT throws_ok($$TRUNCATE flowforge.trigger_firing$$, 'FF011',
                 'TRUNCATE on flowforge.trigger_firing is not allowed: the table is append-only', 'TRUNCATE: FF011');
SELECT throws_ok($$INSERT INTO flowforge.trigger_firing SELECT * FROM flowforge.trigger_firing LIMIT 1
                   ON CONFLICT (organization_id, id, recorded_at) DO UPDATE SET error = 'rewritten'$$, 'FF011', NULL,
                 'INSERT ... ON CONFLICT DO UPDATE cannot rewrite a firing');
SELECT throws_ok($$TRUNCATE flowforge.organization CASCADE$$, 'FF011', NULL, 'TRUNCATE of organization CASCADE cannot empty it');
CREATE FUNCTION pg_temp.as_owner(p_sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    v_state text;
    v_rows bigint;
BEGIN
    SET LOCAL ROLE flowforge_owner;
    BEGIN
        EXECUTE p_sql;
        GET DIAGNOSTICS v_rows = ROW_COUNT;
        v_state := 'accepted ' || v_rows;
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE;
    END;
    RESET ROLE;
    RETURN v_state;
END;
$$;
SELECT is(pg_temp.as_owner($$SELECT count(*) FROM flowforge.trigger_firing$$), 'accepted 1',
          'flowforge_owner (the table''s owner) reads the firings (a meaningful probe)');
SELECT is(pg_temp.as_owner($$UPDATE flowforge.trigger_firing SET error = 'x'$$), 'FF011', 'as flowforge_owner: UPDATE is refused');
SELECT is(pg_temp.as_owner($$DELETE FROM flowforge.trigger_firing$$), 'FF011', 'as flowforge_owner: DELETE is refused');
SELECT is(pg_temp.as_owner($$TRUNCATE flowforge.trigger_firing$$), 'FF011', 'as flowforge_owner: TRUNCATE is refused');
SELECT throws_ok($q$DO $do$ BEGIN
                     SET LOCAL session_replication_role = replica;
                     UPDATE flowforge.trigger_firing SET outcome = 'started';
                   END $do$$q$, 'FF011', NULL, 'session_replication_role = replica: UPDATE is still refused');
SET LOCAL session_replication_role = origin;
SELECT throws_ok($q$DO $do$ BEGIN
                     SET LOCAL session_replication_role = replica;
                     DELETE FROM flowforge.trigger_firing;
                   END $do$$q$, 'FF011', NULL, 'session_replication_role = replica: DELETE is still refused');
SET LOCAL session_replication_role = origin;
SELECT throws_ok($q$DO $do$ BEGIN
                     SET LOCAL session_replication_role = replica;
                     TRUNCATE flowforge.trigger_firing;
                   END $do$$q$, 'FF011', NULL, 'session_replication_role = replica: TRUNCATE is still refused');
SET LOCAL session_replication_role = origin;
SELECT is((SELECT count(*) FROM flowforge.trigger_firing), (SELECT n FROM kept), 'no firing was lost');
SELECT is((SELECT string_agg(f::text, ',' ORDER BY f.id) FROM flowforge.trigger_firing f), (SELECT rows FROM kept),
          'no firing was changed');

SELECT * FROM finish();
ROLLBACK;
