-- Every CHECK and UNIQUE constraint of the migrations fires when a plain
-- INSERT/UPDATE bypasses every API function, and accepts a valid row (so no
-- check is vacuous). Plus the ON DELETE rules that protect history:
-- definitions are RESTRICTed by their runs, task runs CASCADE with their run,
-- and task_run_event (no FK) outlives a purged run; the substrate's (0015):
-- the directory RESTRICTs a definition, a graph run's walk CASCADEs with it,
-- a binding goes with its agent, a work item RESTRICTs its definition node;
-- the state-machine engine's (0017): a machine run RESTRICTs its definition,
-- its queued events, seen ids and timers CASCADE with it, and its history
-- (machine_transition, no FK) outlives it; fan-out's (0020): a checkpoint
-- RESTRICTs its definition and node and CASCADEs with its run's directory
-- row, its pages and children CASCADE with it; the triggers' (0022/0023): a
-- webhook's secret CASCADEs with its trigger's row, and the firing log (no
-- FK) outlives its trigger and the runs it started.
--
-- Valid rows are built through the API (define_workflow, start_run, claim,
-- complete) or direct inserts; each probe then runs in a subtransaction that
-- is always undone, so every probe sees the same fixture.
BEGIN;
SELECT plan(613);

-- ---------------------------------------------------------------------------
-- Helpers (pg_temp: gone with the session, never in the schema)
-- ---------------------------------------------------------------------------
CREATE TEMP TABLE ctx (k text PRIMARY KEY, v uuid NOT NULL);
CREATE TEMP TABLE probed (constraint_name text NOT NULL, outcome text NOT NULL);

CREATE FUNCTION pg_temp.id(p_key text) RETURNS uuid
LANGUAGE sql STABLE AS $$ SELECT v FROM pg_temp.ctx WHERE k = p_key $$;

-- The task run of task p_task in the run named p_run.
CREATE FUNCTION pg_temp.tr(p_run text, p_task text) RETURNS uuid
LANGUAGE sql STABLE AS $$
    SELECT tr.id FROM flowforge.task_run tr WHERE tr.workflow_run_id = pg_temp.id(p_run) AND tr.task_key = p_task
$$;

-- The task p_task of the workflow version named p_workflow.
CREATE FUNCTION pg_temp.task(p_workflow text, p_task text) RETURNS uuid
LANGUAGE sql STABLE AS $$
    SELECT t.id FROM flowforge.task t WHERE t.workflow_id = pg_temp.id(p_workflow) AND t.key = p_task
$$;

-- Run p_sql in a subtransaction that is always rolled back. Returns
--   'accepted'             it succeeded and touched at least one row
--   'no row matched'       it succeeded vacuously (a broken probe)
--   '<SQLSTATE> <name>'    it failed; name is the violated constraint
--                          (the column for NOT NULL, else the message)
CREATE FUNCTION pg_temp.probe(p_sql text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_rows bigint;
    v_state text;
    v_constraint text;
    v_column text;
    v_message text;
BEGIN
    BEGIN
        EXECUTE p_sql;
        GET DIAGNOSTICS v_rows = ROW_COUNT;
        RAISE EXCEPTION '%', v_rows USING ERRCODE = 'FFT99';
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_constraint = CONSTRAINT_NAME,
                                v_column = COLUMN_NAME, v_message = MESSAGE_TEXT;
    END;
    IF v_state = 'FFT99' THEN
        RETURN CASE WHEN v_message::bigint > 0 THEN 'accepted' ELSE 'no row matched' END;
    END IF;
    RETURN v_state || ' ' || coalesce(nullif(v_constraint, ''), nullif(v_column, ''), v_message);
END;
$$;

-- A write that must be refused: returns '<SQLSTATE> <constraint>' and records it.
CREATE FUNCTION pg_temp.refused(p_sql text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_result text := pg_temp.probe(p_sql);
BEGIN
    IF v_result ~ '^23' THEN
        INSERT INTO pg_temp.probed VALUES (split_part(v_result, ' ', 2), 'refused');
    END IF;
    RETURN v_result;
END;
$$;

-- A valid write that the named constraint must let through.
CREATE FUNCTION pg_temp.accepted(p_constraint text, p_sql text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_result text := pg_temp.probe(p_sql);
BEGIN
    IF v_result = 'accepted' THEN
        INSERT INTO pg_temp.probed VALUES (p_constraint, 'accepted');
    END IF;
    RETURN v_result;
END;
$$;

-- ---------------------------------------------------------------------------
-- Fixture
--   W  ct_diamond v2 (a -> b, c -> d), the version R runs;  W2  ct_diamond v1;  WS  ct_single
--   R  run of W: a running (claimed), b, c, d pending
--   S  run of WS, idempotency key 'key-1': only succeeded (claimed, completed)
--   T  run of WS, idempotency key 'key-2': only ready
--   O  a second organization
--   queues ct-push (exchange, routing key) and ct-pull (no exchange)
--   GW  ct_graph (the review loop);  GR1 run of GW at review (draft's item WC completed, review's WP pending)
--   GR2 run of GW at draft (its item WD dispatched);  GS run of ct_gsingle, succeeded
--   agents ct-agent-a (two bindings, key:1 and key:2) and ct-agent-b; ct-agent-a also in O
--   engines ct-e1 serving the default organization and O, ct-e2 standby;  X a third organization nobody serves
--   MW  ct_machine (waiting -go-> working (action) -> finished, waiting -done-> finished, waiting -1 hour-> expired)
--   M1 run of MW suspended in working (events e-1 applied, e-2 queued);  M2 run of MW waiting (its timer set)
--   M3 run of MW succeeded (done)
--   FW  ct_fanout (a DAG task m mapping over $.run.n, max_concurrency 2);  FR run of FW over [1, 2, 3]:
--       checkpoint FC (element 0's child FC0 completed, 1's FD1 dispatched, 2's FP2 pending)
--   GFW ct_gfanout (a graph node mapping over $.state.n);  GFR run of GFW: checkpoint GFC under its held item GFP
--   triggers (create_trigger, fire_trigger): TN nightly and TH hourly (cron, start ct_single), TW ct-hook (a webhook
--   with its secret), TS ct-signal (a filesystem signal); firings FS (ct-hook started run FR1, delivery d-1) and
--   FX (refused: no trigger named ct-none)
-- ---------------------------------------------------------------------------
INSERT INTO ctx VALUES ('W', flowforge_test.define_diamond('ct_diamond'));
INSERT INTO ctx VALUES ('W2', flowforge_test.define_diamond('ct_diamond', '{"priority": 5}'));
INSERT INTO ctx VALUES ('WS', flowforge_test.define_single('ct_single'));
INSERT INTO ctx VALUES ('R', flowforge.start_run('ct_diamond'));
-- The second definition is the latest version, so R runs it: name it W, and v1 W2.
UPDATE ctx SET v = (SELECT workflow_id FROM flowforge.workflow_run WHERE id = pg_temp.id('R')) WHERE k = 'W';
UPDATE ctx SET v = (SELECT id FROM flowforge.workflow WHERE name = 'ct_diamond' AND version = 1) WHERE k = 'W2';
SELECT is((SELECT count(*)::int FROM flowforge_test.claim_key(pg_temp.id('R'), 'a')), 1, 'fixture: R.a claimed');
INSERT INTO ctx VALUES ('S', flowforge.start_run('ct_single', '{}', 'key-1'));
SELECT lives_ok($$SELECT flowforge.complete(c.task_run_id, c.fencing_token, '{"ok": true}')
                  FROM flowforge_test.claim_key(pg_temp.id('S'), 'only') c$$, 'fixture: S.only claimed and completed');
INSERT INTO ctx VALUES ('T', flowforge.start_run('ct_single', '{"n": 2}', 'key-2'));

INSERT INTO flowforge.organization (slug, name) VALUES ('ct-other', 'Other organization');
INSERT INTO ctx SELECT 'O', id FROM flowforge.organization WHERE slug = 'ct-other';
INSERT INTO flowforge.membership (organization_id, member) VALUES
    (flowforge.current_organization(), 'alice'), (flowforge.current_organization(), 'bob');
INSERT INTO flowforge.api_key (organization_id, name, prefix, hashed_key) VALUES
    (flowforge.current_organization(), 'ci', 'ffk_a', sha256('secret-a'::bytea)),
    (flowforge.current_organization(), 'ops', 'ffk_b', sha256('secret-b'::bytea));
INSERT INTO flowforge.queue (organization_id, name, exchange, routing_key, created_by) VALUES
    (flowforge.current_organization(), 'ct-push', 'flowforge.tasks', 'work', 'test'),
    (flowforge.current_organization(), 'ct-pull', NULL, NULL, 'test');
INSERT INTO flowforge.outbox_message (organization_id, task_run_id, workflow_run_id, exchange, routing_key,
                                      payload, fencing_token_snapshot, attempt_snapshot)
SELECT organization_id, id, workflow_run_id, 'flowforge', 'default', jsonb_build_object('task_run_id', id), g, 1
FROM flowforge.task_run, generate_series(1, 2) g
WHERE id = pg_temp.tr('R', 'a');

SELECT results_eq(
    $$SELECT task_key::text, state::text FROM flowforge.task_run WHERE workflow_run_id = pg_temp.id('R')
      UNION ALL SELECT 'S.' || task_key, state FROM flowforge.task_run WHERE workflow_run_id = pg_temp.id('S')
      UNION ALL SELECT 'T.' || task_key, state FROM flowforge.task_run WHERE workflow_run_id = pg_temp.id('T')
      ORDER BY 1$$,
    $$VALUES ('S.only', 'succeeded'), ('T.only', 'ready'), ('a', 'running'), ('b', 'pending'), ('c', 'pending'),
             ('d', 'pending')$$,
    'fixture: the API built a running, pending, ready and succeeded task run'
);

-- The substrate (0015), built through the API where it can be.
INSERT INTO ctx VALUES ('GW', flowforge_test.define_review_loop('ct_graph'));
INSERT INTO ctx VALUES ('GR1', flowforge.start_run('ct_graph', '{"topic": "t"}'));
INSERT INTO ctx VALUES ('WC', flowforge_test.item_of(pg_temp.id('GR1')));
SELECT is(flowforge_test.step(pg_temp.id('GR1'), '{"text": "v1"}') ->> 'node', 'draft', 'fixture: GR1''s draft claimed and completed');
INSERT INTO ctx VALUES ('WP', flowforge_test.item_of(pg_temp.id('GR1')));
INSERT INTO ctx VALUES ('GR2', flowforge.start_run('ct_graph'));
INSERT INTO ctx VALUES ('WD', flowforge_test.item_of(pg_temp.id('GR2')));
SELECT is((SELECT count(*)::int FROM flowforge_test.claim_item(pg_temp.id('WD'))), 1, 'fixture: GR2''s draft claimed');
INSERT INTO ctx VALUES ('GSW', flowforge_test.define_graph_single('ct_gsingle'));
INSERT INTO ctx VALUES ('GS', flowforge.start_run('ct_gsingle'));
SELECT is(flowforge_test.step(pg_temp.id('GS')) ->> 'node', 'work', 'fixture: GS''s only node completed');
SELECT isnt(flowforge.register_agent('ct-agent-a'), NULL, 'fixture: ct-agent-a registered');
SELECT isnt(flowforge.register_agent('ct-agent-b', '{"labels": {"gpu": true}}'), NULL, 'fixture: ct-agent-b registered');
INSERT INTO flowforge.agent (organization_id, name, created_by) VALUES (pg_temp.id('O'), 'ct-agent-a', 'test');
INSERT INTO flowforge.affinity_binding (organization_id, affinity_key, agent_id, created_by) VALUES
    (flowforge.current_organization(), 'key:1', 'ct-agent-a', 'test'),
    (flowforge.current_organization(), 'key:2', 'ct-agent-a', 'test');
SELECT is(flowforge.tick('ct-e1') -> 'serving' ?& ARRAY[flowforge.current_organization()::text, pg_temp.id('O')::text], true,
          'fixture: ct-e1 serves the default organization and O');
SELECT is(jsonb_typeof(flowforge.tick('ct-e2') -> 'serving'), 'object', 'fixture: ct-e2 ticked (standby)');
INSERT INTO flowforge.organization (slug, name) VALUES ('ct-third', 'Third organization');
INSERT INTO ctx SELECT 'X', id FROM flowforge.organization WHERE slug = 'ct-third';

-- The state-machine engine (0017), built through the API: define_workflow, start_run, send_event.
INSERT INTO ctx VALUES ('MW', flowforge.define_workflow($${
    "name": "ct_machine", "kind": "statemachine", "initial": "waiting",
    "states": {"waiting": {"on": {"go": "working", "done": "finished"}, "after": [{"delay": "1 hour", "target": "expired"}]},
               "working": {"action": {"task": "work"}, "on_done": "finished", "on_error": "waiting"},
               "expired": {"final": true}, "finished": {"final": true}}}$$));
INSERT INTO ctx VALUES ('M1', flowforge.start_run('ct_machine')), ('M2', flowforge.start_run('ct_machine')),
                       ('M3', flowforge.start_run('ct_machine'));
SELECT is(flowforge.send_event(pg_temp.id('M1'), 'go', '{}', 'e-1') ->> 'outcome', 'applied', 'fixture: M1 went to working');
SELECT is(flowforge.send_event(pg_temp.id('M1'), 'done', '{"n": 1}', 'e-2') ->> 'outcome', 'queued',
          'fixture: M1 queued done while its action runs');
SELECT is(flowforge.send_event(pg_temp.id('M3'), 'done') ->> 'outcome', 'applied', 'fixture: M3 went to finished');
SELECT results_eq(
    $$SELECT c.k, m.state::text, m.status::text, m.live, m.suspended, m.history_length,
             (SELECT count(*) FROM flowforge.machine_event_queue q WHERE q.run_id = m.run_id),
             (SELECT count(*) FROM flowforge.machine_event_seen e WHERE e.run_id = m.run_id),
             (SELECT count(*) FROM flowforge.machine_timer t WHERE t.run_id = m.run_id)
      FROM flowforge.machine_run m JOIN ctx c ON c.v = m.run_id
      ORDER BY 1$$,
    $$VALUES ('M1', 'working', 'running', true, true, 2::bigint, 1::bigint, 2::bigint, 0::bigint),
             ('M2', 'waiting', 'running', true, false, 1::bigint, 0::bigint, 0::bigint, 1::bigint),
             ('M3', 'finished', 'succeeded', false, false, 2::bigint, 0::bigint, 0::bigint, 0::bigint)$$,
    'fixture: the API built a suspended machine with a queued event and seen ids, a waiting one with a timer, and an ended one'
);

-- O's own copies of GW and MW (workflow rows only): a row of O may name only O's definitions (0034).
INSERT INTO flowforge.workflow (organization_id, name, version, kind, spec, content_hash, created_by)
SELECT pg_temp.id('O'), w.name, w.version, w.kind, w.spec, w.content_hash, w.created_by FROM flowforge.workflow w
WHERE w.id IN (pg_temp.id('GW'), pg_temp.id('MW'));
INSERT INTO ctx SELECT 'GWO', id FROM flowforge.workflow WHERE organization_id = pg_temp.id('O') AND name = 'ct_graph';
INSERT INTO ctx SELECT 'MWO', id FROM flowforge.workflow WHERE organization_id = pg_temp.id('O') AND name = 'ct_machine';

-- Fan-out (0020), built through the API: define_workflow, start_run, claim_work, complete_work.
INSERT INTO ctx VALUES ('FW', flowforge.define_workflow($${"name": "ct_fanout", "tasks": [
    {"key": "m", "queue": "ct-fan", "map": {"over": "$.run.n", "max_concurrency": 2}}]}$$));
INSERT INTO ctx VALUES ('FR', flowforge.start_run('ct_fanout', '{"n": [1, 2, 3]}'));
INSERT INTO ctx SELECT 'FC', id FROM flowforge.checkpoint WHERE run_id = pg_temp.id('FR');
INSERT INTO ctx VALUES ('FC0', flowforge_test.complete_child(pg_temp.id('FR'), 'm', 0, '"one"'));
INSERT INTO ctx SELECT 'FD1', work_item_id FROM flowforge_test.claim_child(pg_temp.id('FR'), 'm', 1);
INSERT INTO ctx VALUES ('FP2', flowforge_test.child_of(pg_temp.id('FR'), 'm', 2));
INSERT INTO ctx VALUES ('GFW', flowforge.define_workflow($${"name": "ct_gfanout", "kind": "graph", "start": "m",
    "nodes": [{"key": "m", "queue": "ct-gfan", "map": {"over": "$.state.n"}}, {"key": "done", "final": true}],
    "edges": [{"from": "m", "to": "done"}]}$$));
INSERT INTO ctx VALUES ('GFR', flowforge.start_run('ct_gfanout', '{"n": ["a", "b"]}'));
INSERT INTO ctx SELECT 'GFC', id FROM flowforge.checkpoint WHERE run_id = pg_temp.id('GFR');
INSERT INTO ctx SELECT 'GFP', id FROM flowforge.work_item WHERE run_id = pg_temp.id('GFR') AND checkpoint_id IS NULL;
SELECT results_eq(
    $$SELECT c.k, cp.engine_kind::text, cp.cursor, cp.idx, cp.total, cp.live, cp.max_concurrency, cp.done,
             (SELECT string_agg(w.item_index || ':' || w.status, ' ' ORDER BY w.item_index) FROM flowforge.work_item w
              WHERE w.checkpoint_id = cp.id)
      FROM flowforge.checkpoint cp JOIN ctx c ON c.v = cp.id ORDER BY 1$$,
    $$VALUES ('FC', 'dag', 3::bigint, 1::bigint, 3::bigint, 2, 2, false, '0:completed 1:dispatched 2:pending'),
             ('GFC', 'graph', 2, 0, 2, 2, 100, false, '0:pending 1:pending')$$,
    'fixture: the API built a DAG fan-out with a completed, a dispatched and a pending child, and a graph fan-out'
);

-- Triggers (0022), built through the API.
INSERT INTO ctx VALUES ('TN', flowforge.create_trigger('nightly', 'cron', 'start', 'ct_single', '{"cron": "0 3 * * *"}')),
                       ('TH', flowforge.create_trigger('hourly', 'cron', 'start', 'ct_single', '{"cron": "0 * * * *"}')),
                       ('TW', flowforge.create_trigger('ct-hook', 'webhook', 'start', 'ct_single', '{"secret": "ct-secret-0123456789"}')),
                       ('TS', flowforge.create_trigger('ct-signal', 'filesystem', 'signal', 'go', '{"path": "/in", "run_id_path": "$.run"}'));
INSERT INTO ctx SELECT 'FS', (a ->> 'firing_id')::uuid FROM (SELECT flowforge.fire_trigger('ct-hook', '{}', NULL, 'd-1') AS a) x;
INSERT INTO ctx SELECT 'FR1', run_id FROM flowforge.trigger_firing WHERE id = pg_temp.id('FS');
INSERT INTO ctx SELECT 'FX', (a ->> 'firing_id')::uuid FROM (SELECT flowforge.fire_trigger('ct-none', '{}') AS a) x;
SELECT results_eq(
    $$SELECT t.name::text, t.trigger_type::text, t.enabled, t.next_fire_at IS NOT NULL, (SELECT count(*) FROM flowforge.trigger_secret s WHERE s.trigger_id = t.id)
      FROM flowforge.scheduled_trigger t ORDER BY 1$$,
    $$VALUES ('ct-hook', 'webhook', true, false, 1::bigint), ('ct-signal', 'filesystem', true, false, 0), ('hourly', 'cron', true, true, 0),
             ('nightly', 'cron', true, true, 0)$$,
    'fixture: the API built two cron triggers with their next slots, a webhook with its secret and a signal trigger');
SELECT results_eq(
    $$SELECT f.outcome::text, f.trigger_id IS NOT NULL, f.run_id IS NOT NULL, f.delivery_id::text FROM flowforge.trigger_firing f ORDER BY 1 DESC$$,
    $$VALUES ('started', true, true, 'd-1'), ('refused', false, false, NULL)$$,
    'fixture: a started firing (its run FR1) and a refused one of no trigger');

SELECT results_eq(
    $$SELECT 'GR1', g.status::text, flowforge_test.item_status(pg_temp.id('WC')) || '/' || flowforge_test.item_status(pg_temp.id('WP'))
      FROM flowforge.graph_run g WHERE g.run_id = pg_temp.id('GR1')
      UNION ALL SELECT 'GR2', g.status, flowforge_test.item_status(pg_temp.id('WD')) FROM flowforge.graph_run g WHERE g.run_id = pg_temp.id('GR2')
      UNION ALL SELECT 'GS', g.status, '' FROM flowforge.graph_run g WHERE g.run_id = pg_temp.id('GS')
      UNION ALL SELECT 'engines', string_agg(e.engine_id || ':' || e.status, ',' ORDER BY e.engine_id, e.status), ''
      FROM flowforge.engine e
      ORDER BY 1$$,
    $$VALUES ('GR1', 'running', 'completed/pending'), ('GR2', 'running', 'dispatched'), ('GS', 'succeeded', ''),
             ('engines', 'ct-e1:serving,ct-e1:serving,ct-e2:standby', '')$$,
    'fixture: the API built graph runs, work items pending, dispatched and completed, and engine rows'
);

-- ===========================================================================
-- organization
-- ===========================================================================
SELECT is(pg_temp.refused($$UPDATE flowforge.organization SET slug = 'default' WHERE slug = 'ct-other'$$),
          '23505 uniq_organization_slug', 'uniq_organization_slug: two tenants cannot share a slug');
SELECT is(pg_temp.accepted('uniq_organization_slug', $$UPDATE flowforge.organization SET slug = 'ct-other-2' WHERE slug = 'ct-other'$$),
          'accepted', 'uniq_organization_slug: a fresh slug is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.organization SET slug = 'Other' WHERE slug = 'ct-other'$$),
          '23514 organization_slug_valid', 'organization_slug_valid: no upper case in a slug');
SELECT is(pg_temp.refused($$UPDATE flowforge.organization SET slug = '-other' WHERE slug = 'ct-other'$$),
          '23514 organization_slug_valid', 'organization_slug_valid: a slug starts with a letter');
SELECT is(pg_temp.accepted('organization_slug_valid', $$UPDATE flowforge.organization SET slug = 'o' WHERE slug = 'ct-other'$$),
          'accepted', 'organization_slug_valid: a one-letter slug is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.organization SET name = '   ' WHERE slug = 'ct-other'$$),
          '23514 organization_name_not_blank', 'organization_name_not_blank: a blank name is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.organization SET name = repeat('x', 201) WHERE slug = 'ct-other'$$),
          '23514 organization_name_not_blank', 'organization_name_not_blank: a 201-character name is refused');
SELECT is(pg_temp.accepted('organization_name_not_blank', $$UPDATE flowforge.organization SET name = repeat('x', 200) WHERE slug = 'ct-other'$$),
          'accepted', 'organization_name_not_blank: a 200-character name is accepted');

-- ===========================================================================
-- membership
-- ===========================================================================
SELECT is(pg_temp.refused($$UPDATE flowforge.membership SET member = 'alice' WHERE member = 'bob'$$),
          '23505 uniq_membership_org_member', 'uniq_membership_org_member: one membership per (organization, member)');
SELECT is(pg_temp.accepted('uniq_membership_org_member',
          $$UPDATE flowforge.membership SET member = 'alice', organization_id = pg_temp.id('O') WHERE member = 'bob'$$),
          'accepted', 'uniq_membership_org_member: the same member in another organization is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.membership SET role = 'superuser' WHERE member = 'bob'$$),
          '23514 membership_role_valid', 'membership_role_valid: an unknown role is refused');
SELECT is(pg_temp.accepted('membership_role_valid', $$UPDATE flowforge.membership SET role = 'viewer' WHERE member = 'bob'$$),
          'accepted', 'membership_role_valid: viewer is accepted');

-- ===========================================================================
-- api_key
-- ===========================================================================
SELECT is(pg_temp.refused($$UPDATE flowforge.api_key SET prefix = 'ffk_a' WHERE prefix = 'ffk_b'$$),
          '23505 uniq_api_key_prefix', 'uniq_api_key_prefix: a prefix finds exactly one key');
SELECT is(pg_temp.accepted('uniq_api_key_prefix', $$UPDATE flowforge.api_key SET prefix = 'ffk_c' WHERE prefix = 'ffk_b'$$),
          'accepted', 'uniq_api_key_prefix: a fresh prefix is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.api_key SET role = 'root' WHERE prefix = 'ffk_b'$$),
          '23514 api_key_role_valid', 'api_key_role_valid: an unknown role is refused');
SELECT is(pg_temp.accepted('api_key_role_valid', $$UPDATE flowforge.api_key SET role = 'owner' WHERE prefix = 'ffk_b'$$),
          'accepted', 'api_key_role_valid: owner is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.api_key SET hashed_key = decode(md5('secret-b'), 'hex') WHERE prefix = 'ffk_b'$$),
          '23514 api_key_hash_is_sha256', 'api_key_hash_is_sha256: a 16-byte digest is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.api_key SET hashed_key = 'ffk_b_plaintext_secret'::bytea WHERE prefix = 'ffk_b'$$),
          '23514 api_key_hash_is_sha256', 'api_key_hash_is_sha256: a plaintext secret is refused');
SELECT is(pg_temp.accepted('api_key_hash_is_sha256', $$UPDATE flowforge.api_key SET hashed_key = sha256('other'::bytea) WHERE prefix = 'ffk_b'$$),
          'accepted', 'api_key_hash_is_sha256: a 32-byte SHA-256 digest is accepted');

-- ===========================================================================
-- workflow  (W2 = ct_diamond v1, W = ct_diamond v2)
-- ===========================================================================
SELECT is(pg_temp.refused($$UPDATE flowforge.workflow SET version = 1 WHERE id = pg_temp.id('W')$$),
          '23505 uniq_workflow_name_version', 'uniq_workflow_name_version: two definitions cannot both be ct_diamond v1');
SELECT is(pg_temp.accepted('uniq_workflow_name_version',
          $$INSERT INTO flowforge.workflow (organization_id, name, version, kind, spec, content_hash, created_by)
            SELECT pg_temp.id('O'), name, 1, kind, spec, content_hash, created_by FROM flowforge.workflow WHERE id = pg_temp.id('W')$$),
          'accepted', 'uniq_workflow_name_version: the same name and version in another organization is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.workflow SET version = 0 WHERE id = pg_temp.id('W2')$$),
          '23514 workflow_version_positive', 'workflow_version_positive: version 0 is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.workflow SET version = -1 WHERE id = pg_temp.id('W2')$$),
          '23514 workflow_version_positive', 'workflow_version_positive: a negative version is refused');
SELECT is(pg_temp.accepted('workflow_version_positive', $$UPDATE flowforge.workflow SET version = 1 WHERE id = pg_temp.id('W2')$$),
          'accepted', 'workflow_version_positive: version 1 is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.workflow SET kind = 'machine' WHERE id = pg_temp.id('W2')$$),
          '23514 workflow_kind_valid', 'workflow_kind_valid: an unsupported kind is refused');
SELECT is(pg_temp.accepted('workflow_kind_valid', $$UPDATE flowforge.workflow SET kind = 'dag' WHERE id = pg_temp.id('W2')$$),
          'accepted', 'workflow_kind_valid: dag is accepted');
SELECT is(pg_temp.accepted('workflow_kind_valid', $$UPDATE flowforge.workflow SET kind = 'graph' WHERE id = pg_temp.id('GW')$$),
          'accepted', 'workflow_kind_valid: graph is accepted (0015)');
SELECT is(pg_temp.accepted('workflow_kind_valid', $$UPDATE flowforge.workflow SET kind = 'statemachine' WHERE id = pg_temp.id('W2')$$),
          'accepted', 'workflow_kind_valid: statemachine is accepted (0017)');
SELECT is(pg_temp.refused($$UPDATE flowforge.workflow SET name = '9lives' WHERE id = pg_temp.id('W2')$$),
          '23514 workflow_name_valid', 'workflow_name_valid: a name starts with a letter');
SELECT is(pg_temp.refused($$UPDATE flowforge.workflow SET name = 'has space' WHERE id = pg_temp.id('W2')$$),
          '23514 workflow_name_valid', 'workflow_name_valid: no spaces in a name');
SELECT is(pg_temp.accepted('workflow_name_valid', $$UPDATE flowforge.workflow SET name = 'Z' || repeat('a_-9', 15) || 'zz' WHERE id = pg_temp.id('W2')$$),
          'accepted', 'workflow_name_valid: a 63-character name of letters, digits, _ and - is accepted');

-- ===========================================================================
-- task  (tasks of W, the version R runs)
-- ===========================================================================
SELECT is(pg_temp.refused($$UPDATE flowforge.task SET key = 'a' WHERE id = pg_temp.task('W', 'b')$$),
          '23505 uniq_task_workflow_key', 'uniq_task_workflow_key: two steps with one key in one workflow');
SELECT is(pg_temp.accepted('uniq_task_workflow_key', $$UPDATE flowforge.task SET key = 'e' WHERE id = pg_temp.task('W', 'b')$$),
          'accepted', 'uniq_task_workflow_key: a fresh key is accepted (key a also exists in v1: scope is the version)');
SELECT is(pg_temp.refused($$UPDATE flowforge.task SET key = 'has space' WHERE id = pg_temp.task('W', 'b')$$),
          '23514 task_key_valid', 'task_key_valid: no spaces in a task key');
SELECT is(pg_temp.accepted('task_key_valid', $$UPDATE flowforge.task SET key = 'Z9_-x' WHERE id = pg_temp.task('W', 'b')$$),
          'accepted', 'task_key_valid: letters, digits, _ and - are accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.task SET queue = '.hidden' WHERE id = pg_temp.task('W', 'b')$$),
          '23514 task_queue_valid', 'task_queue_valid: a queue starts with a letter');
SELECT is(pg_temp.refused($$UPDATE flowforge.task SET queue = 'q/1' WHERE id = pg_temp.task('W', 'b')$$),
          '23514 task_queue_valid', 'task_queue_valid: no slash in a queue name');
SELECT is(pg_temp.accepted('task_queue_valid', $$UPDATE flowforge.task SET queue = 'eu-west.high_1' WHERE id = pg_temp.task('W', 'b')$$),
          'accepted', 'task_queue_valid: letters, digits, _, . and - are accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.task SET max_attempts = 0 WHERE id = pg_temp.task('W', 'b')$$),
          '23514 task_max_attempts_positive', 'task_max_attempts_positive: a task that may never be attempted');
SELECT is(pg_temp.accepted('task_max_attempts_positive', $$UPDATE flowforge.task SET max_attempts = 1 WHERE id = pg_temp.task('W', 'b')$$),
          'accepted', 'task_max_attempts_positive: one attempt is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.task SET backoff = '-1 second' WHERE id = pg_temp.task('W', 'b')$$),
          '23514 task_backoff_non_negative', 'task_backoff_non_negative: a negative backoff is refused');
SELECT is(pg_temp.accepted('task_backoff_non_negative', $$UPDATE flowforge.task SET backoff = '0' WHERE id = pg_temp.task('W', 'b')$$),
          'accepted', 'task_backoff_non_negative: zero backoff is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.task SET backoff_factor = 0.99 WHERE id = pg_temp.task('W', 'b')$$),
          '23514 task_backoff_factor_sane', 'task_backoff_factor_sane: a shrinking backoff (factor < 1) is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.task SET backoff_factor = 100.01 WHERE id = pg_temp.task('W', 'b')$$),
          '23514 task_backoff_factor_sane', 'task_backoff_factor_sane: a factor above 100 is refused');
SELECT is(pg_temp.accepted('task_backoff_factor_sane', $$UPDATE flowforge.task SET backoff_factor = 1 WHERE id = pg_temp.task('W', 'b')$$),
          'accepted', 'task_backoff_factor_sane: factor 1 (constant backoff) is accepted');
SELECT is(pg_temp.accepted('task_backoff_factor_sane', $$UPDATE flowforge.task SET backoff_factor = 100 WHERE id = pg_temp.task('W', 'b')$$),
          'accepted', 'task_backoff_factor_sane: factor 100 is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.task SET max_backoff = '999 milliseconds' WHERE id = pg_temp.task('W', 'b')$$),
          '23514 task_max_backoff_covers_backoff', 'task_max_backoff_covers_backoff: a cap below the first backoff is refused');
SELECT is(pg_temp.accepted('task_max_backoff_covers_backoff', $$UPDATE flowforge.task SET max_backoff = backoff WHERE id = pg_temp.task('W', 'b')$$),
          'accepted', 'task_max_backoff_covers_backoff: a cap equal to the backoff is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.task SET timeout = '0' WHERE id = pg_temp.task('W', 'b')$$),
          '23514 task_timeout_positive', 'task_timeout_positive: a zero timeout is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.task SET timeout = '-1 second' WHERE id = pg_temp.task('W', 'b')$$),
          '23514 task_timeout_positive', 'task_timeout_positive: a negative timeout is refused');
SELECT is(pg_temp.accepted('task_timeout_positive', $$UPDATE flowforge.task SET timeout = '1 millisecond' WHERE id = pg_temp.task('W', 'b')$$),
          'accepted', 'task_timeout_positive: a positive timeout is accepted');
SELECT is(pg_temp.accepted('task_timeout_positive', $$UPDATE flowforge.task SET timeout = NULL WHERE id = pg_temp.task('W', 'b')$$),
          'accepted', 'task_timeout_positive: no timeout (NULL) is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.task SET dependency_count = -1 WHERE id = pg_temp.task('W', 'b')$$),
          '23514 task_dependency_count_non_negative', 'task_dependency_count_non_negative: a negative count is refused');
SELECT is(pg_temp.accepted('task_dependency_count_non_negative', $$UPDATE flowforge.task SET dependency_count = 0 WHERE id = pg_temp.task('W', 'b')$$),
          'accepted', 'task_dependency_count_non_negative: zero is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.task SET spec = '[]' WHERE id = pg_temp.task('MW', 'waiting')$$),
          '23514 task_spec_is_object', 'task_spec_is_object: a state spec that is not an object is refused (0017)');
SELECT is(pg_temp.refused($$UPDATE flowforge.task SET spec = '"final"' WHERE id = pg_temp.task('W', 'b')$$),
          '23514 task_spec_is_object', 'task_spec_is_object: a scalar spec is refused');
SELECT is(pg_temp.accepted('task_spec_is_object', $$UPDATE flowforge.task SET spec = '{"final": true}' WHERE id = pg_temp.task('MW', 'waiting')$$),
          'accepted', 'task_spec_is_object: an object is accepted');
SELECT is(pg_temp.accepted('task_spec_is_object', $$UPDATE flowforge.task SET spec = NULL WHERE id = pg_temp.task('MW', 'waiting')$$),
          'accepted', 'task_spec_is_object: no spec (a DAG task, a graph node) is accepted');

-- ===========================================================================
-- task_dependency  (W: b -> a, c -> a, d -> b, d -> c)
-- ===========================================================================
SELECT is(pg_temp.refused($$UPDATE flowforge.task_dependency SET depends_on_task_id = task_id
                            WHERE task_id = pg_temp.task('W', 'b')$$),
          '23514 task_dependency_not_self', 'task_dependency_not_self: a task cannot wait on itself');
SELECT is(pg_temp.accepted('task_dependency_not_self', $$UPDATE flowforge.task_dependency SET depends_on_task_id = pg_temp.task('W', 'c')
                            WHERE task_id = pg_temp.task('W', 'b')$$),
          'accepted', 'task_dependency_not_self: an edge between two tasks is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.task_dependency SET depends_on_task_id = pg_temp.task('W', 'b')
                            WHERE task_id = pg_temp.task('W', 'd') AND depends_on_task_id = pg_temp.task('W', 'c')$$),
          '23505 task_dependency_pkey', 'task_dependency_pkey: an edge is stored once (dependency_count stays true)');
SELECT is(pg_temp.accepted('task_dependency_pkey', $$UPDATE flowforge.task_dependency SET depends_on_task_id = pg_temp.task('W', 'a')
                            WHERE task_id = pg_temp.task('W', 'd') AND depends_on_task_id = pg_temp.task('W', 'c')$$),
          'accepted', 'task_dependency_pkey: a distinct edge is accepted');

-- ===========================================================================
-- scheduled_trigger
-- ===========================================================================
-- (0022/0023: the general trigger table; seed 000's enabled_has_next became live_cron_has_next, its name key
-- scheduled_trigger_live_name_uq over live triggers only.)
SELECT is(pg_temp.refused($$UPDATE flowforge.scheduled_trigger SET next_fire_at = NULL WHERE id = pg_temp.id('TN')$$),
          '23514 scheduled_trigger_live_cron_has_next', 'scheduled_trigger_live_cron_has_next: a live enabled cron trigger tick() can never find');
SELECT is(pg_temp.accepted('scheduled_trigger_live_cron_has_next',
          $$UPDATE flowforge.scheduled_trigger SET enabled = false, next_fire_at = NULL WHERE id = pg_temp.id('TN')$$),
          'accepted', 'scheduled_trigger_live_cron_has_next: a disabled cron trigger without a next slot is accepted');
SELECT is(pg_temp.accepted('scheduled_trigger_live_cron_has_next',
          $$UPDATE flowforge.scheduled_trigger SET deleted_at = now(), deleted_by = 'test', next_fire_at = NULL WHERE id = pg_temp.id('TN')$$),
          'accepted', 'scheduled_trigger_live_cron_has_next: a dropped cron trigger without a next slot is accepted');
SELECT is(pg_temp.accepted('scheduled_trigger_live_cron_has_next',
          $$UPDATE flowforge.scheduled_trigger SET enabled = true, next_fire_at = NULL WHERE id = pg_temp.id('TW')$$),
          'accepted', 'scheduled_trigger_live_cron_has_next: an enabled webhook has no slot');
SELECT is(pg_temp.refused($$UPDATE flowforge.scheduled_trigger SET trigger_type = 'poll' WHERE id = pg_temp.id('TW')$$),
          '23514 scheduled_trigger_type_valid', 'scheduled_trigger_type_valid: a type nothing feeds is refused');
SELECT is(pg_temp.accepted('scheduled_trigger_type_valid', $$UPDATE flowforge.scheduled_trigger SET trigger_type = 'gitpoll' WHERE id = pg_temp.id('TW')$$),
          'accepted', 'scheduled_trigger_type_valid: gitpoll is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.scheduled_trigger SET action = 'stop' WHERE id = pg_temp.id('TW')$$),
          '23514 scheduled_trigger_action_valid', 'scheduled_trigger_action_valid: an action nothing performs is refused');
SELECT is(pg_temp.accepted('scheduled_trigger_action_valid', $$UPDATE flowforge.scheduled_trigger SET action = 'signal' WHERE id = pg_temp.id('TW')$$),
          'accepted', 'scheduled_trigger_action_valid: signal is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.scheduled_trigger SET cron = NULL WHERE id = pg_temp.id('TH')$$),
          '23514 scheduled_trigger_cron_iff_type', 'scheduled_trigger_cron_iff_type (=>): a cron trigger without a schedule');
SELECT is(pg_temp.refused($$UPDATE flowforge.scheduled_trigger SET cron = '* * * * *' WHERE id = pg_temp.id('TW')$$),
          '23514 scheduled_trigger_cron_iff_type', 'scheduled_trigger_cron_iff_type (<=): a webhook with a schedule');
SELECT is(pg_temp.accepted('scheduled_trigger_cron_iff_type',
          $$UPDATE flowforge.scheduled_trigger SET trigger_type = 'webhook', cron = NULL WHERE id = pg_temp.id('TH')$$),
          'accepted', 'scheduled_trigger_cron_iff_type: a cron trigger made a webhook, its schedule gone, is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.scheduled_trigger SET options = '["cron"]' WHERE id = pg_temp.id('TH')$$),
          '23514 scheduled_trigger_options_is_object', 'scheduled_trigger_options_is_object: options that are an array');
SELECT is(pg_temp.accepted('scheduled_trigger_options_is_object', $$UPDATE flowforge.scheduled_trigger SET options = '{}' WHERE id = pg_temp.id('TH')$$),
          'accepted', 'scheduled_trigger_options_is_object: an object is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.scheduled_trigger SET input = '"x"' WHERE id = pg_temp.id('TH')$$),
          '23514 scheduled_trigger_input_is_object', 'scheduled_trigger_input_is_object: an input that is no object (a run input must be one)');
SELECT is(pg_temp.accepted('scheduled_trigger_input_is_object', $$UPDATE flowforge.scheduled_trigger SET input = '{"k": 1}' WHERE id = pg_temp.id('TH')$$),
          'accepted', 'scheduled_trigger_input_is_object: an object is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.scheduled_trigger SET name = '9lives' WHERE id = pg_temp.id('TH')$$),
          '23514 scheduled_trigger_name_valid', 'scheduled_trigger_name_valid: a name starts with a letter');
SELECT is(pg_temp.refused($$UPDATE flowforge.scheduled_trigger SET name = 'on push' WHERE id = pg_temp.id('TH')$$),
          '23514 scheduled_trigger_name_valid', 'scheduled_trigger_name_valid: no spaces (a name is a URL segment of the webhook)');
SELECT is(pg_temp.accepted('scheduled_trigger_name_valid', $$UPDATE flowforge.scheduled_trigger SET name = 'N' || repeat('a_.-9', 12) || 'zz' WHERE id = pg_temp.id('TH')$$),
          'accepted', 'scheduled_trigger_name_valid: 63 letters, digits, _, . and - are accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.scheduled_trigger SET deleted_at = now() WHERE id = pg_temp.id('TH')$$),
          '23514 scheduled_trigger_deleted_pair', 'scheduled_trigger_deleted_pair: deleted_at without deleted_by');
SELECT is(pg_temp.refused($$UPDATE flowforge.scheduled_trigger SET deleted_by = 'someone' WHERE id = pg_temp.id('TH')$$),
          '23514 scheduled_trigger_deleted_pair', 'scheduled_trigger_deleted_pair: deleted_by without deleted_at');
SELECT is(pg_temp.accepted('scheduled_trigger_deleted_pair', $$UPDATE flowforge.scheduled_trigger SET deleted_at = now(), deleted_by = 'someone' WHERE id = pg_temp.id('TH')$$),
          'accepted', 'scheduled_trigger_deleted_pair: both are accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.scheduled_trigger SET name = 'nightly' WHERE id = pg_temp.id('TH')$$),
          '23505 scheduled_trigger_live_name_uq', 'scheduled_trigger_live_name_uq: two live triggers of one name in one organization');
SELECT is(pg_temp.refused($$INSERT INTO flowforge.scheduled_trigger (organization_id, name, trigger_type, target, created_by)
                            VALUES (flowforge.current_organization(), 'ct-hook', 'webhook', 'ct_single', 'test')$$),
          '23505 scheduled_trigger_live_name_uq', 'scheduled_trigger_live_name_uq: a racing second create of one name loses');
SELECT is(pg_temp.accepted('scheduled_trigger_live_name_uq',
          $$UPDATE flowforge.scheduled_trigger SET name = 'nightly', organization_id = pg_temp.id('O') WHERE id = pg_temp.id('TH')$$),
          'accepted', 'scheduled_trigger_live_name_uq: the same name in another organization is accepted');
SELECT is(pg_temp.accepted('scheduled_trigger_live_name_uq',
          $$UPDATE flowforge.scheduled_trigger SET name = 'nightly', deleted_at = now(), deleted_by = 'test' WHERE id = pg_temp.id('TH')$$),
          'accepted', 'scheduled_trigger_live_name_uq: a dropped trigger of a live trigger''s name is accepted (the name is free again)');

-- ===========================================================================
-- 0022: trigger_secret  (TW's key)
-- ===========================================================================
SELECT is(pg_temp.refused($$UPDATE flowforge.trigger_secret SET secret = '\x0102030405060708090a0b0c0d0e0f' WHERE trigger_id = pg_temp.id('TW')$$),
          '23514 trigger_secret_length', 'trigger_secret_length: a 15-byte key is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.trigger_secret SET secret = convert_to(repeat('k', 1025), 'UTF8') WHERE trigger_id = pg_temp.id('TW')$$),
          '23514 trigger_secret_length', 'trigger_secret_length: a 1025-byte key is refused');
SELECT is(pg_temp.accepted('trigger_secret_length', $$UPDATE flowforge.trigger_secret SET secret = convert_to(repeat('k', 16), 'UTF8') WHERE trigger_id = pg_temp.id('TW')$$),
          'accepted', 'trigger_secret_length: 16 bytes are accepted');
SELECT is(pg_temp.accepted('trigger_secret_length', $$UPDATE flowforge.trigger_secret SET secret = convert_to(repeat('k', 1024), 'UTF8') WHERE trigger_id = pg_temp.id('TW')$$),
          'accepted', 'trigger_secret_length: 1024 bytes are accepted');
SELECT is(pg_temp.refused($$INSERT INTO flowforge.trigger_secret (trigger_id, organization_id, secret)
                            VALUES (pg_temp.id('TW'), flowforge.current_organization(), convert_to(repeat('k', 32), 'UTF8'))$$),
          '23505 trigger_secret_pkey', 'trigger_secret_pkey: two keys for one webhook (which one verifies?)');
SELECT is(pg_temp.accepted('trigger_secret_pkey', $$INSERT INTO flowforge.trigger_secret (trigger_id, organization_id, secret)
                            VALUES (pg_temp.id('TS'), flowforge.current_organization(), convert_to(repeat('k', 32), 'UTF8'))$$),
          'accepted', 'trigger_secret_pkey: a key for another trigger is accepted');
SELECT is(pg_temp.probe($$INSERT INTO flowforge.trigger_secret (trigger_id, organization_id, secret)
                          VALUES (gen_random_uuid(), flowforge.current_organization(), convert_to(repeat('k', 32), 'UTF8'))$$),
          '23503 trigger_secret_trigger_fkey', 'trigger_secret_trigger_fkey: a key of no trigger is refused');

-- ===========================================================================
-- 0022: trigger_firing  (append-only: each probe INSERTs a row beside FS and FX)
-- ===========================================================================
CREATE FUNCTION pg_temp.firing(p_outcome text, p_run uuid, p_error text, p_action text DEFAULT NULL,
                               p_delivery text DEFAULT NULL, p_trigger uuid DEFAULT NULL) RETURNS text
LANGUAGE sql AS $$
    SELECT format('INSERT INTO flowforge.trigger_firing (organization_id, trigger_id, trigger_name, outcome, run_id, error, action,
                                                         delivery_id, fired_on, recorded_at, created_by)
                   VALUES (flowforge.current_organization(), %L, %L, %L, %L, %L, %L, %L, now(), now(), %L)',
                  p_trigger, 'probe', p_outcome, p_run, p_error, p_action, p_delivery, 'test')
$$;
SELECT is(pg_temp.refused(pg_temp.firing('ok', NULL, NULL)), '23514 trigger_firing_outcome_valid',
          'trigger_firing_outcome_valid: an outcome that is none of the four is refused');
SELECT is(pg_temp.accepted('trigger_firing_outcome_valid', pg_temp.firing('failed', NULL, 'boom')), 'accepted',
          'trigger_firing_outcome_valid: failed is accepted');
SELECT is(pg_temp.refused(pg_temp.firing('started', NULL, NULL)), '23514 trigger_firing_run_iff_acted',
          'trigger_firing_run_iff_acted (=>): a start without the run it started');
SELECT is(pg_temp.refused(pg_temp.firing('signalled', NULL, NULL)), '23514 trigger_firing_run_iff_acted',
          'trigger_firing_run_iff_acted (=>): a signal without the run it moved');
SELECT is(pg_temp.refused(pg_temp.firing('refused', pg_temp.id('FR1'), 'no')), '23514 trigger_firing_run_iff_acted',
          'trigger_firing_run_iff_acted (<=): a refusal claiming to have caused a run');
SELECT is(pg_temp.accepted('trigger_firing_run_iff_acted', pg_temp.firing('signalled', pg_temp.id('FR1'), NULL, 'signal')), 'accepted',
          'trigger_firing_run_iff_acted: a signal naming its run is accepted');
SELECT is(pg_temp.refused(pg_temp.firing('refused', NULL, NULL)), '23514 trigger_firing_error_iff_not_acted',
          'trigger_firing_error_iff_not_acted (<=): a refusal that does not say why');
SELECT is(pg_temp.refused(pg_temp.firing('failed', NULL, NULL)), '23514 trigger_firing_error_iff_not_acted',
          'trigger_firing_error_iff_not_acted (<=): a failure that does not say why');
SELECT is(pg_temp.refused(pg_temp.firing('started', pg_temp.id('FR1'), 'but also this')), '23514 trigger_firing_error_iff_not_acted',
          'trigger_firing_error_iff_not_acted (=>): a start with an error');
SELECT is(pg_temp.accepted('trigger_firing_error_iff_not_acted', pg_temp.firing('refused', NULL, 'disabled')), 'accepted',
          'trigger_firing_error_iff_not_acted: a refusal with its reason is accepted');
SELECT is(pg_temp.refused(pg_temp.firing('started', pg_temp.id('FR1'), NULL, 'stop')), '23514 trigger_firing_action_valid',
          'trigger_firing_action_valid: an action that is neither start nor signal');
SELECT is(pg_temp.accepted('trigger_firing_action_valid', pg_temp.firing('started', pg_temp.id('FR1'), NULL, 'start')), 'accepted',
          'trigger_firing_action_valid: start is accepted (and no action at all, above)');
SELECT is(pg_temp.refused(pg_temp.firing('refused', NULL, 'x', NULL, '')), '23514 trigger_firing_delivery_id_valid',
          'trigger_firing_delivery_id_valid: an empty delivery id is refused');
SELECT is(pg_temp.accepted('trigger_firing_delivery_id_valid', pg_temp.firing('refused', NULL, 'x', NULL, 'd')), 'accepted',
          'trigger_firing_delivery_id_valid: a one-character delivery id is accepted');
-- 0032: one firing per delivery is the key of trigger_delivery (the firing log is partitioned by time, so a
-- unique index there would have to include recorded_at); _record_firing writes the key with its firing.
SELECT is(pg_temp.refused($$INSERT INTO flowforge.trigger_delivery (organization_id, trigger_id, delivery_id, firing_id, recorded_at)
                            VALUES (flowforge.current_organization(), pg_temp.id('TW'), 'd-1', gen_random_uuid(), now())$$),
          '23505 trigger_firing_delivery_uq',
          'trigger_firing_delivery_uq: a second key of one delivery of one trigger (a redelivery, a cron slot twice)');
SELECT is(pg_temp.probe($$SELECT flowforge._record_firing(gen_random_uuid(), flowforge.current_organization(), pg_temp.id('TW'),
                                                          'ct-hook', 'webhook', '{}', NULL, NULL, NULL, NULL, 'refused',
                                                          'again', now(), 'd-1', now() + interval '40 days')$$),
          '23505 trigger_firing_delivery_uq',
          'trigger_firing_delivery_uq: _record_firing of a delivery already fired is refused, 40 days later too (its firing '
          'would land in another month''s partition; the key is not partitioned)');
SELECT is(pg_temp.accepted('trigger_firing_delivery_uq',
          $$INSERT INTO flowforge.trigger_delivery (organization_id, trigger_id, delivery_id, firing_id, recorded_at)
            VALUES (flowforge.current_organization(), pg_temp.id('TS'), 'd-1', gen_random_uuid(), now())$$), 'accepted',
          'trigger_firing_delivery_uq: the same delivery id of another trigger is accepted');
SELECT is(pg_temp.accepted('trigger_firing_delivery_uq',
          $$SELECT flowforge._record_firing(gen_random_uuid(), flowforge.current_organization(), pg_temp.id('TW'), 'ct-hook',
                                            'webhook', '{}', NULL, NULL, NULL, NULL, 'refused', 'again', now(), NULL, now())$$),
          'accepted', 'trigger_firing_delivery_uq: another firing of the trigger without a delivery id is accepted (it has no key)');
SELECT is(pg_temp.probe($$SELECT flowforge._record_firing(gen_random_uuid(), flowforge.current_organization(), NULL, 'ct-none',
                                                          NULL, '{}', NULL, NULL, NULL, NULL, 'refused', 'no trigger', now(),
                                                          'd-2', now())
                          FROM generate_series(1, 2)$$), 'accepted',
          'one delivery id twice for no trigger is accepted (a name that matched nothing has no key)');
SELECT is(pg_temp.refused($$INSERT INTO flowforge.trigger_delivery (organization_id, trigger_id, delivery_id, firing_id, recorded_at)
                            VALUES (flowforge.current_organization(), pg_temp.id('TS'), '', gen_random_uuid(), now())$$),
          '23514 trigger_delivery_id_valid', 'trigger_delivery_id_valid: an empty delivery id is refused');
SELECT is(pg_temp.accepted('trigger_delivery_id_valid',
          $$INSERT INTO flowforge.trigger_delivery (organization_id, trigger_id, delivery_id, firing_id, recorded_at)
            VALUES (flowforge.current_organization(), pg_temp.id('TS'), 'x', gen_random_uuid(), now())$$), 'accepted',
          'trigger_delivery_id_valid: a one-character delivery id is accepted');

-- ===========================================================================
-- workflow_run  (R running 4 tasks, S succeeded, T running)
-- ===========================================================================
SELECT is(pg_temp.refused($$UPDATE flowforge.workflow_run SET state = 'suceeded' WHERE id = pg_temp.id('R')$$),
          '23514 wfrun_state_valid', 'wfrun_state_valid: a typo''d state is refused');
SELECT is(pg_temp.accepted('wfrun_state_valid', $$UPDATE flowforge.workflow_run SET state = 'pending' WHERE id = pg_temp.id('R')$$),
          'accepted', 'wfrun_state_valid: pending is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.workflow_run SET finished_at = NULL WHERE id = pg_temp.id('S')$$),
          '23514 wfrun_finished_at_matches_state', 'wfrun_finished_at_matches_state (=>): a succeeded run without a finish time');
SELECT is(pg_temp.refused($$UPDATE flowforge.workflow_run SET state = 'cancelled', finished_at = NULL WHERE id = pg_temp.id('R')$$),
          '23514 wfrun_finished_at_matches_state', 'wfrun_finished_at_matches_state (=>): a cancelled run without a finish time');
SELECT is(pg_temp.refused($$UPDATE flowforge.workflow_run SET finished_at = now() WHERE id = pg_temp.id('R')$$),
          '23514 wfrun_finished_at_matches_state', 'wfrun_finished_at_matches_state (<=): a running run with a finish time');
SELECT is(pg_temp.refused($$UPDATE flowforge.workflow_run SET state = 'running' WHERE id = pg_temp.id('S')$$),
          '23514 wfrun_finished_at_matches_state', 'wfrun_finished_at_matches_state (<=): reopening a run but keeping its finish time');
SELECT is(pg_temp.accepted('wfrun_finished_at_matches_state',
          $$UPDATE flowforge.workflow_run SET state = 'cancelled', finished_at = now() WHERE id = pg_temp.id('R')$$),
          'accepted', 'wfrun_finished_at_matches_state: a cancelled run with a finish time is accepted');
SELECT is(pg_temp.accepted('wfrun_finished_at_matches_state',
          $$UPDATE flowforge.workflow_run SET state = 'running', finished_at = NULL WHERE id = pg_temp.id('S')$$),
          'accepted', 'wfrun_finished_at_matches_state: a reopened run without a finish time is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.workflow_run SET started_at = NULL WHERE id = pg_temp.id('R')$$),
          '23514 wfrun_running_has_started_at', 'wfrun_running_has_started_at: a running run with no start time');
SELECT is(pg_temp.accepted('wfrun_running_has_started_at',
          $$UPDATE flowforge.workflow_run SET state = 'pending', started_at = NULL WHERE id = pg_temp.id('R')$$),
          'accepted', 'wfrun_running_has_started_at: a pending run with no start time is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.workflow_run SET tasks_total = 0, tasks_remaining = 0 WHERE id = pg_temp.id('R')$$),
          '23514 wfrun_task_counters_valid', 'wfrun_task_counters_valid: a run of zero tasks');
SELECT is(pg_temp.refused($$UPDATE flowforge.workflow_run SET tasks_remaining = -1 WHERE id = pg_temp.id('R')$$),
          '23514 wfrun_task_counters_valid', 'wfrun_task_counters_valid: negative tasks_remaining (a double-counted finish)');
SELECT is(pg_temp.refused($$UPDATE flowforge.workflow_run SET tasks_remaining = tasks_total + 1 WHERE id = pg_temp.id('R')$$),
          '23514 wfrun_task_counters_valid', 'wfrun_task_counters_valid: more tasks remaining than exist');
SELECT is(pg_temp.refused($$UPDATE flowforge.workflow_run SET tasks_failed = -1 WHERE id = pg_temp.id('R')$$),
          '23514 wfrun_task_counters_valid', 'wfrun_task_counters_valid: negative tasks_failed');
SELECT is(pg_temp.refused($$UPDATE flowforge.workflow_run SET tasks_failed = tasks_total + 1 WHERE id = pg_temp.id('R')$$),
          '23514 wfrun_task_counters_valid', 'wfrun_task_counters_valid: more failures than tasks');
SELECT is(pg_temp.accepted('wfrun_task_counters_valid',
          $$UPDATE flowforge.workflow_run SET tasks_remaining = 0, tasks_failed = tasks_total WHERE id = pg_temp.id('R')$$),
          'accepted', 'wfrun_task_counters_valid: the boundaries (0 remaining, every task failed) are accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.workflow_run SET input = '[1, 2]' WHERE id = pg_temp.id('R')$$),
          '23514 wfrun_input_is_object', 'wfrun_input_is_object: an array input is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.workflow_run SET input = 'null'::jsonb WHERE id = pg_temp.id('R')$$),
          '23514 wfrun_input_is_object', 'wfrun_input_is_object: a JSON null input is refused');
SELECT is(pg_temp.accepted('wfrun_input_is_object', $$UPDATE flowforge.workflow_run SET input = '{"k": [1]}' WHERE id = pg_temp.id('R')$$),
          'accepted', 'wfrun_input_is_object: an object input is accepted');

-- ===========================================================================
-- task_run  (R.a running, R.b/c/d pending, S.only succeeded, T.only ready)
-- ===========================================================================
SELECT is(pg_temp.refused($$UPDATE flowforge.task_run SET state = 'retrying' WHERE id = pg_temp.tr('R', 'b')$$),
          '23514 taskrun_state_valid', 'taskrun_state_valid: an undeclared state (there is no retrying) is refused');
SELECT is(pg_temp.accepted('taskrun_state_valid', $$UPDATE flowforge.task_run SET state = 'skipped', finished_at = now() WHERE id = pg_temp.tr('R', 'b')$$),
          'accepted', 'taskrun_state_valid: skipped is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.task_run SET attempt = 0 WHERE id = pg_temp.tr('R', 'b')$$),
          '23514 taskrun_attempt_positive', 'taskrun_attempt_positive: attempt 0 is refused');
SELECT is(pg_temp.accepted('taskrun_attempt_positive', $$UPDATE flowforge.task_run SET attempt = 1, max_attempts = 1 WHERE id = pg_temp.tr('T', 'only')$$),
          'accepted', 'taskrun_attempt_positive: attempt 1 of 1 is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.task_run SET attempt = max_attempts + 1 WHERE id = pg_temp.tr('R', 'b')$$),
          '23514 taskrun_attempt_within_max', 'taskrun_attempt_within_max: an attempt beyond the budget is refused');
SELECT is(pg_temp.accepted('taskrun_attempt_within_max', $$UPDATE flowforge.task_run SET attempt = max_attempts WHERE id = pg_temp.tr('R', 'b')$$),
          'accepted', 'taskrun_attempt_within_max: the last attempt is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.task_run SET fencing_token = -1 WHERE id = pg_temp.tr('R', 'b')$$),
          '23514 taskrun_fencing_non_negative', 'taskrun_fencing_non_negative: a negative token is refused');
SELECT is(pg_temp.accepted('taskrun_fencing_non_negative', $$UPDATE flowforge.task_run SET fencing_token = 0 WHERE id = pg_temp.tr('R', 'a')$$),
          'accepted', 'taskrun_fencing_non_negative: token 0 is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.task_run SET finished_at = started_at - interval '1 millisecond' WHERE id = pg_temp.tr('S', 'only')$$),
          '23514 taskrun_finished_after_started', 'taskrun_finished_after_started: a negative duration is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.task_run SET started_at = finished_at + interval '1 second' WHERE id = pg_temp.tr('S', 'only')$$),
          '23514 taskrun_finished_after_started', 'taskrun_finished_after_started: a start after the finish is refused');
SELECT is(pg_temp.accepted('taskrun_finished_after_started', $$UPDATE flowforge.task_run SET finished_at = started_at WHERE id = pg_temp.tr('S', 'only')$$),
          'accepted', 'taskrun_finished_after_started: a zero duration is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.task_run SET lease_expires_at = NULL WHERE id = pg_temp.tr('R', 'a')$$),
          '23514 taskrun_lease_iff_running', 'taskrun_lease_iff_running (=>): a running task with no lease (the reaper could never see it)');
SELECT is(pg_temp.refused($$UPDATE flowforge.task_run SET lease_expires_at = now() + interval '30 seconds' WHERE id = pg_temp.tr('T', 'only')$$),
          '23514 taskrun_lease_iff_running', 'taskrun_lease_iff_running (<=): a ready task holding a lease');
SELECT is(pg_temp.refused($$UPDATE flowforge.task_run SET state = 'running' WHERE id = pg_temp.tr('T', 'only')$$),
          '23514 taskrun_lease_iff_running', 'taskrun_lease_iff_running (=>): claiming without setting a lease');
SELECT is(pg_temp.accepted('taskrun_lease_iff_running',
          $$UPDATE flowforge.task_run SET lease_expires_at = lease_expires_at + interval '30 seconds' WHERE id = pg_temp.tr('R', 'a')$$),
          'accepted', 'taskrun_lease_iff_running: a running task extending its lease is accepted');
SELECT is(pg_temp.accepted('taskrun_lease_iff_running',
          $$UPDATE flowforge.task_run SET state = 'ready', lease_expires_at = NULL, ready_at = now() WHERE id = pg_temp.tr('R', 'a')$$),
          'accepted', 'taskrun_lease_iff_running: a reaped task back to ready without a lease is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.task_run SET finished_at = NULL WHERE id = pg_temp.tr('S', 'only')$$),
          '23514 taskrun_finished_at_matches_state', 'taskrun_finished_at_matches_state (=>): a succeeded task without a finish time');
SELECT is(pg_temp.refused($$UPDATE flowforge.task_run SET state = 'skipped' WHERE id = pg_temp.tr('R', 'b')$$),
          '23514 taskrun_finished_at_matches_state', 'taskrun_finished_at_matches_state (=>): a skipped task without a finish time');
SELECT is(pg_temp.refused($$UPDATE flowforge.task_run SET finished_at = now() WHERE id = pg_temp.tr('R', 'b')$$),
          '23514 taskrun_finished_at_matches_state', 'taskrun_finished_at_matches_state (<=): a pending task with a finish time');
SELECT is(pg_temp.accepted('taskrun_finished_at_matches_state',
          $$UPDATE flowforge.task_run SET state = 'cancelled', finished_at = now() WHERE id = pg_temp.tr('R', 'c')$$),
          'accepted', 'taskrun_finished_at_matches_state: a cancelled task with a finish time is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.task_run SET ready_at = NULL WHERE id = pg_temp.tr('T', 'only')$$),
          '23514 taskrun_ready_has_ready_at', 'taskrun_ready_has_ready_at: a ready task no claim could order or pick');
SELECT is(pg_temp.refused($$UPDATE flowforge.task_run SET state = 'ready', remaining_deps = 0 WHERE id = pg_temp.tr('R', 'b')$$),
          '23514 taskrun_ready_has_ready_at', 'taskrun_ready_has_ready_at: releasing a task without stamping ready_at');
SELECT is(pg_temp.accepted('taskrun_ready_has_ready_at',
          $$UPDATE flowforge.task_run SET state = 'ready', remaining_deps = 0, ready_at = now() WHERE id = pg_temp.tr('R', 'b')$$),
          'accepted', 'taskrun_ready_has_ready_at: a released task with ready_at is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.task_run SET remaining_deps = -1 WHERE id = pg_temp.tr('T', 'only')$$),
          '23514 taskrun_remaining_deps_non_negative', 'taskrun_remaining_deps_non_negative: a double release is refused');
SELECT is(pg_temp.accepted('taskrun_remaining_deps_non_negative', $$UPDATE flowforge.task_run SET remaining_deps = 0 WHERE id = pg_temp.tr('T', 'only')$$),
          'accepted', 'taskrun_remaining_deps_non_negative: zero is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.task_run SET remaining_deps = 0 WHERE id = pg_temp.tr('R', 'b')$$),
          '23514 taskrun_pending_waits_on_deps', 'taskrun_pending_waits_on_deps: a pending task waiting on nothing (stranded forever)');
SELECT is(pg_temp.accepted('taskrun_pending_waits_on_deps', $$UPDATE flowforge.task_run SET remaining_deps = 1 WHERE id = pg_temp.tr('R', 'd')$$),
          'accepted', 'taskrun_pending_waits_on_deps: a pending task waiting on one dependency is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.task_run SET task_id = pg_temp.task('W', 'b') WHERE id = pg_temp.tr('R', 'c')$$),
          '23505 uniq_taskrun_per_run_task', 'uniq_taskrun_per_run_task: two rows for one step of one run');
SELECT is(pg_temp.accepted('uniq_taskrun_per_run_task', $$UPDATE flowforge.task_run SET workflow_run_id = pg_temp.id('R') WHERE id = pg_temp.tr('T', 'only')$$),
          'accepted', 'uniq_taskrun_per_run_task: the same task in another run is accepted (the pair is unique)');
SELECT is(pg_temp.probe($$UPDATE flowforge.task_run SET organization_id = NULL WHERE id = pg_temp.tr('R', 'b')$$),
          '23502 organization_id', 'task_run.organization_id: a row without a tenant is refused (NOT NULL)');

-- ===========================================================================
-- idempotency_key  (key-1 -> S, key-2 -> T, both written by start_run)
-- ===========================================================================
SELECT is(pg_temp.refused($$UPDATE flowforge.idempotency_key SET key = 'key-1' WHERE key = 'key-2'$$),
          '23505 idempotency_key_pkey', 'idempotency_key_pkey: a key names one run per organization');
SELECT is(pg_temp.accepted('idempotency_key_pkey',
          $$UPDATE flowforge.idempotency_key SET key = 'key-1', organization_id = pg_temp.id('O') WHERE key = 'key-2'$$),
          'accepted', 'idempotency_key_pkey: the same key in another organization is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.idempotency_key SET key = '' WHERE key = 'key-2'$$),
          '23514 idempotency_key_not_blank', 'idempotency_key_not_blank: an empty key is refused');
SELECT is(pg_temp.accepted('idempotency_key_not_blank', $$UPDATE flowforge.idempotency_key SET key = 'k' WHERE key = 'key-2'$$),
          'accepted', 'idempotency_key_not_blank: a one-character key is accepted');

-- ===========================================================================
-- outbox_message  (R.a, generations 1 and 2)
-- ===========================================================================
SELECT is(pg_temp.refused($$UPDATE flowforge.outbox_message SET fencing_token_snapshot = 1
                            WHERE task_run_id = pg_temp.tr('R', 'a') AND fencing_token_snapshot = 2$$),
          '23505 uniq_outbox_per_taskrun_generation', 'uniq_outbox_per_taskrun_generation: two dispatches of one live generation');
SELECT is(pg_temp.refused($$INSERT INTO flowforge.outbox_message (organization_id, task_run_id, workflow_run_id, exchange,
                                routing_key, payload, fencing_token_snapshot, attempt_snapshot)
                            SELECT organization_id, task_run_id, workflow_run_id, exchange, routing_key, payload,
                                   fencing_token_snapshot, attempt_snapshot
                            FROM flowforge.outbox_message WHERE task_run_id = pg_temp.tr('R', 'a') AND fencing_token_snapshot = 1$$),
          '23505 uniq_outbox_per_taskrun_generation', 'uniq_outbox_per_taskrun_generation: a racing second first-dispatch insert loses');
SELECT is(pg_temp.accepted('uniq_outbox_per_taskrun_generation', $$UPDATE flowforge.outbox_message SET fencing_token_snapshot = 3
                            WHERE task_run_id = pg_temp.tr('R', 'a') AND fencing_token_snapshot = 2$$),
          'accepted', 'uniq_outbox_per_taskrun_generation: a new generation is a new row');
SELECT is(pg_temp.refused($$UPDATE flowforge.outbox_message SET payload = '"x"' WHERE task_run_id = pg_temp.tr('R', 'a')$$),
          '23514 outbox_payload_is_object', 'outbox_payload_is_object: a scalar payload is refused');
SELECT is(pg_temp.accepted('outbox_payload_is_object', $$UPDATE flowforge.outbox_message SET payload = '{}' WHERE task_run_id = pg_temp.tr('R', 'a')$$),
          'accepted', 'outbox_payload_is_object: an object payload is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.outbox_message SET publish_attempts = -1 WHERE task_run_id = pg_temp.tr('R', 'a')$$),
          '23514 outbox_publish_attempts_non_negative', 'outbox_publish_attempts_non_negative: a negative count is refused');
SELECT is(pg_temp.accepted('outbox_publish_attempts_non_negative', $$UPDATE flowforge.outbox_message SET publish_attempts = 2 WHERE task_run_id = pg_temp.tr('R', 'a')$$),
          'accepted', 'outbox_publish_attempts_non_negative: a count of attempts is accepted');

-- ===========================================================================
-- task_run_event  (append-only, so its CHECK is proven on INSERT)
-- ===========================================================================
SELECT is(pg_temp.refused($$INSERT INTO flowforge.task_run_event (organization_id, workflow_run_id, kind)
                            VALUES (flowforge.current_organization(), pg_temp.id('R'), 'Claimed')$$),
          '23514 event_kind_valid', 'event_kind_valid: a kind outside [a-z_] is refused');
SELECT is(pg_temp.refused($$INSERT INTO flowforge.task_run_event (organization_id, workflow_run_id, kind)
                            VALUES (flowforge.current_organization(), pg_temp.id('R'), '')$$),
          '23514 event_kind_valid', 'event_kind_valid: an empty kind is refused');
SELECT is(pg_temp.accepted('event_kind_valid', $$INSERT INTO flowforge.task_run_event (organization_id, workflow_run_id, kind)
                            VALUES (flowforge.current_organization(), pg_temp.id('R'), 'lease_expired')$$),
          'accepted', 'event_kind_valid: lease_expired is accepted');

-- ===========================================================================
-- queue (0005)
-- ===========================================================================
SELECT is(pg_temp.refused($$UPDATE flowforge.queue SET name = '.q' WHERE name = 'ct-pull'$$),
          '23514 queue_name_valid', 'queue_name_valid: a queue name starts with a letter');
SELECT is(pg_temp.accepted('queue_name_valid', $$UPDATE flowforge.queue SET name = 'a.b-c_1' WHERE name = 'ct-pull'$$),
          'accepted', 'queue_name_valid: the task.queue alphabet is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.queue SET name = 'ct-push' WHERE name = 'ct-pull'$$),
          '23505 queue_pkey', 'queue_pkey: one settings row per queue per organization');
SELECT is(pg_temp.accepted('queue_pkey', $$UPDATE flowforge.queue SET name = 'ct-push', organization_id = pg_temp.id('O') WHERE name = 'ct-pull'$$),
          'accepted', 'queue_pkey: the same queue name in another organization is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.queue SET exchange = 'has space' WHERE name = 'ct-push'$$),
          '23514 queue_exchange_valid', 'queue_exchange_valid: no spaces in an exchange name');
SELECT is(pg_temp.refused($$UPDATE flowforge.queue SET exchange = '' WHERE name = 'ct-push'$$),
          '23514 queue_exchange_valid', 'queue_exchange_valid: an empty exchange (use NULL for pull) is refused');
SELECT is(pg_temp.accepted('queue_exchange_valid', $$UPDATE flowforge.queue SET exchange = 'amq.topic:x-1_2' WHERE name = 'ct-push'$$),
          'accepted', 'queue_exchange_valid: letters, digits and _ . : - are accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.queue SET exchange = NULL WHERE name = 'ct-push'$$),
          '23514 queue_routing_key_needs_exchange', 'queue_routing_key_needs_exchange: a routing key on a pull queue');
SELECT is(pg_temp.accepted('queue_routing_key_needs_exchange', $$UPDATE flowforge.queue SET exchange = NULL, routing_key = NULL WHERE name = 'ct-push'$$),
          'accepted', 'queue_routing_key_needs_exchange: turning a queue back to pull with no routing key is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.queue SET dispatch_lease = '999 milliseconds' WHERE name = 'ct-push'$$),
          '23514 queue_dispatch_lease_sane', 'queue_dispatch_lease_sane: a lease under a second is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.queue SET dispatch_lease = '1 day 1 second' WHERE name = 'ct-push'$$),
          '23514 queue_dispatch_lease_sane', 'queue_dispatch_lease_sane: a lease over a day is refused');
SELECT is(pg_temp.accepted('queue_dispatch_lease_sane', $$UPDATE flowforge.queue SET dispatch_lease = '1 second' WHERE name = 'ct-push'$$),
          'accepted', 'queue_dispatch_lease_sane: one second is accepted');
SELECT is(pg_temp.accepted('queue_dispatch_lease_sane', $$UPDATE flowforge.queue SET dispatch_lease = '1 day' WHERE name = 'ct-push'$$),
          'accepted', 'queue_dispatch_lease_sane: one day is accepted');

-- ===========================================================================
-- api_key_usage and server_secret (0012), bounds (0010, 0013)
-- ===========================================================================
SELECT is(pg_temp.refused($$INSERT INTO flowforge.api_key_usage (api_key_id, organization_id)
                            SELECT id, organization_id FROM flowforge.api_key, generate_series(1, 2) WHERE prefix = 'ffk_a'$$),
          '23505 api_key_usage_pkey', 'api_key_usage_pkey: one usage row per key');
SELECT is(pg_temp.accepted('api_key_usage_pkey', $$INSERT INTO flowforge.api_key_usage (api_key_id, organization_id)
                            SELECT id, organization_id FROM flowforge.api_key WHERE prefix = 'ffk_a'
                            ON CONFLICT ON CONSTRAINT api_key_usage_pkey DO UPDATE SET last_used_at = now()$$),
          'accepted', 'api_key_usage_pkey: updating a key''s one row is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.server_secret SET singleton = false$$),
          '23514 server_secret_singleton', 'server_secret_singleton: the key can only be true');
SELECT is(pg_temp.accepted('server_secret_singleton', $$UPDATE flowforge.server_secret SET singleton = true$$),
          'accepted', 'server_secret_singleton: true is accepted');
SELECT is(pg_temp.refused($$INSERT INTO flowforge.server_secret (gateway_key) VALUES (sha256('x'::bytea))$$),
          '23505 server_secret_pkey', 'server_secret_pkey: a second secret is refused');
SELECT is(pg_temp.accepted('server_secret_pkey', $$UPDATE flowforge.server_secret SET created_at = now()$$),
          'accepted', 'server_secret_pkey: changing the one row is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.server_secret SET gateway_key = '\x0102'$$),
          '23514 server_secret_key_is_256_bits', 'server_secret_key_is_256_bits: a short key is refused');
SELECT is(pg_temp.accepted('server_secret_key_is_256_bits', $$UPDATE flowforge.server_secret SET gateway_key = sha256('y'::bytea)$$),
          'accepted', 'server_secret_key_is_256_bits: 32 bytes are accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.outbox_message SET next_attempt_at = NULL
                            WHERE task_run_id = pg_temp.tr('R', 'a') AND published_at IS NULL$$),
          '23514 outbox_unpublished_has_next_attempt', 'outbox_unpublished_has_next_attempt: an unpublished row without a time is refused');
SELECT is(pg_temp.accepted('outbox_unpublished_has_next_attempt', $$UPDATE flowforge.outbox_message SET published_at = now(), next_attempt_at = NULL
                            WHERE task_run_id = pg_temp.tr('R', 'a')$$),
          'accepted', 'outbox_unpublished_has_next_attempt: a published row needs none');
SELECT is(pg_temp.refused($$UPDATE flowforge.task SET backoff = '1 day 1 second', max_backoff = '2 days' WHERE id = pg_temp.task('W', 'b')$$),
          '23514 task_durations_bounded', 'task_durations_bounded: a backoff over a day is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.task SET timeout = '1000000 years' WHERE id = pg_temp.task('W', 'b')$$),
          '23514 task_durations_bounded', 'task_durations_bounded: a timeout over 30 days is refused');
SELECT is(pg_temp.accepted('task_durations_bounded', $$UPDATE flowforge.task SET backoff = '1 day', max_backoff = '7 days', timeout = '30 days'
                            WHERE id = pg_temp.task('W', 'b')$$),
          'accepted', 'task_durations_bounded: the bounds themselves are accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.task_run SET timeout = '31 days' WHERE id = pg_temp.tr('R', 'b')$$),
          '23514 taskrun_timeout_bounded', 'taskrun_timeout_bounded: a run timeout over 30 days is refused');
SELECT is(pg_temp.accepted('taskrun_timeout_bounded', $$UPDATE flowforge.task_run SET timeout = '30 days' WHERE id = pg_temp.tr('R', 'b')$$),
          'accepted', 'taskrun_timeout_bounded: 30 days is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.setting SET max_json_depth = 7$$),
          '23514 setting_max_json_depth_sane', 'setting_max_json_depth_sane: under 8 levels is refused');
SELECT is(pg_temp.accepted('setting_max_json_depth_sane', $$UPDATE flowforge.setting SET max_json_depth = 1000$$),
          'accepted', 'setting_max_json_depth_sane: 1000 levels is accepted');

-- ===========================================================================
-- setting (0006)
-- ===========================================================================
SELECT is(pg_temp.refused($$UPDATE flowforge.setting SET singleton = false$$),
          '23514 setting_singleton', 'setting_singleton: the key can only be true');
SELECT is(pg_temp.accepted('setting_singleton', $$UPDATE flowforge.setting SET singleton = true$$),
          'accepted', 'setting_singleton: true is accepted');
SELECT is(pg_temp.refused($$INSERT INTO flowforge.setting DEFAULT VALUES$$),
          '23505 setting_pkey', 'setting_pkey: a second settings row is refused');
SELECT is(pg_temp.accepted('setting_pkey', $$UPDATE flowforge.setting SET max_payload_bytes = 2048$$),
          'accepted', 'setting_pkey: changing the one row is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.setting SET max_payload_bytes = 1023$$),
          '23514 setting_max_payload_sane', 'setting_max_payload_sane: under 1 KiB is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.setting SET max_payload_bytes = 268435457$$),
          '23514 setting_max_payload_sane', 'setting_max_payload_sane: over 256 MiB is refused');
SELECT is(pg_temp.accepted('setting_max_payload_sane', $$UPDATE flowforge.setting SET max_payload_bytes = 1024$$),
          'accepted', 'setting_max_payload_sane: 1 KiB is accepted');
SELECT is(pg_temp.accepted('setting_max_payload_sane', $$UPDATE flowforge.setting SET max_payload_bytes = 268435456$$),
          'accepted', 'setting_max_payload_sane: 256 MiB is accepted');

-- ===========================================================================
-- 0015: definition nodes and task runs carry selectors and affinity
-- ===========================================================================
SELECT is(pg_temp.refused($$UPDATE flowforge.task SET max_visits = 0 WHERE id = pg_temp.task('GW', 'review')$$),
          '23514 task_max_visits_positive', 'task_max_visits_positive: a node that may never be entered is refused');
SELECT is(pg_temp.accepted('task_max_visits_positive', $$UPDATE flowforge.task SET max_visits = 1 WHERE id = pg_temp.task('GW', 'review')$$),
          'accepted', 'task_max_visits_positive: one visit is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.task SET affinity_policy = 'sticky' WHERE id = pg_temp.task('GW', 'publish')$$),
          '23514 task_affinity_policy_valid', 'task_affinity_policy_valid: an unknown policy is refused');
SELECT is(pg_temp.accepted('task_affinity_policy_valid', $$UPDATE flowforge.task SET affinity_policy = 'hard' WHERE id = pg_temp.task('GW', 'publish')$$),
          'accepted', 'task_affinity_policy_valid: hard is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.task SET worker_params = '["gpu"]' WHERE id = pg_temp.task('W', 'b')$$),
          '23514 task_worker_params_is_object', 'task_worker_params_is_object: selectors that are not an object are refused');
SELECT is(pg_temp.accepted('task_worker_params_is_object', $$UPDATE flowforge.task SET worker_params = '{"gpu": true}' WHERE id = pg_temp.task('W', 'b')$$),
          'accepted', 'task_worker_params_is_object: an object of labels is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.task_run SET affinity_key = 'run:x' WHERE id = pg_temp.tr('R', 'b')$$),
          '23514 taskrun_affinity_valid', 'taskrun_affinity_valid: an affinity key without a policy is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.task_run SET affinity_policy = 'soft' WHERE id = pg_temp.tr('R', 'b')$$),
          '23514 taskrun_affinity_valid', 'taskrun_affinity_valid: a policy without a key is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.task_run SET affinity_key = 'run:x', affinity_policy = 'sticky' WHERE id = pg_temp.tr('R', 'b')$$),
          '23514 taskrun_affinity_policy_valid', 'taskrun_affinity_policy_valid: an unknown policy is refused (the column''s domain, 0040)');
SELECT is(pg_temp.accepted('taskrun_affinity_policy_valid', $$UPDATE flowforge.task_run SET affinity_key = 'run:x', affinity_policy = 'soft' WHERE id = pg_temp.tr('R', 'b')$$),
          'accepted', 'taskrun_affinity_policy_valid: soft is accepted');
SELECT is(pg_temp.accepted('taskrun_affinity_valid', $$UPDATE flowforge.task_run SET affinity_key = 'run:x', affinity_policy = 'hard' WHERE id = pg_temp.tr('R', 'b')$$),
          'accepted', 'taskrun_affinity_valid: a key with its policy is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.task_run SET worker_params = '"gpu"' WHERE id = pg_temp.tr('R', 'b')$$),
          '23514 taskrun_worker_params_is_object', 'taskrun_worker_params_is_object: a scalar is refused');
SELECT is(pg_temp.accepted('taskrun_worker_params_is_object', $$UPDATE flowforge.task_run SET worker_params = '{"gpu": true}' WHERE id = pg_temp.tr('R', 'b')$$),
          'accepted', 'taskrun_worker_params_is_object: an object is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.setting SET agent_timeout = '4 seconds'$$),
          '23514 setting_agent_timeout_sane', 'setting_agent_timeout_sane: under 5 seconds is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.setting SET agent_timeout = '1 day 1 second'$$),
          '23514 setting_agent_timeout_sane', 'setting_agent_timeout_sane: over a day is refused');
SELECT is(pg_temp.accepted('setting_agent_timeout_sane', $$UPDATE flowforge.setting SET agent_timeout = '5 seconds'$$),
          'accepted', 'setting_agent_timeout_sane: 5 seconds is accepted');
SELECT is(pg_temp.accepted('setting_agent_timeout_sane', $$UPDATE flowforge.setting SET agent_timeout = '1 day'$$),
          'accepted', 'setting_agent_timeout_sane: a day is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.setting SET duty_lease = '4 seconds'$$),
          '23514 setting_duty_lease_sane', 'setting_duty_lease_sane: under 5 seconds is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.setting SET duty_lease = '1 hour 1 second'$$),
          '23514 setting_duty_lease_sane', 'setting_duty_lease_sane: over an hour is refused');
SELECT is(pg_temp.accepted('setting_duty_lease_sane', $$UPDATE flowforge.setting SET duty_lease = '5 seconds'$$),
          'accepted', 'setting_duty_lease_sane: 5 seconds is accepted');
SELECT is(pg_temp.accepted('setting_duty_lease_sane', $$UPDATE flowforge.setting SET duty_lease = '1 hour'$$),
          'accepted', 'setting_duty_lease_sane: an hour is accepted');

-- ===========================================================================
-- engine_run  (the directory: R a DAG run, GR1 a graph run)
-- ===========================================================================
SELECT is(pg_temp.refused($$UPDATE flowforge.engine_run SET engine_kind = 'machine' WHERE run_id = pg_temp.id('GR1')$$),
          '23514 engine_run_kind_valid', 'engine_run_kind_valid: an unknown engine is refused');
SELECT is(pg_temp.accepted('engine_run_kind_valid', $$UPDATE flowforge.engine_run SET engine_kind = 'dag' WHERE run_id = pg_temp.id('GR1')$$),
          'accepted', 'engine_run_kind_valid: dag is accepted');
SELECT is(pg_temp.accepted('engine_run_kind_valid', $$UPDATE flowforge.engine_run SET engine_kind = 'statemachine' WHERE run_id = pg_temp.id('GR1')$$),
          'accepted', 'engine_run_kind_valid: statemachine is accepted (0017)');
SELECT is(pg_temp.refused($$UPDATE flowforge.engine_run SET run_id = pg_temp.id('R') WHERE run_id = pg_temp.id('GR1')$$),
          '23505 engine_run_tenant_run_uq', 'engine_run_tenant_run_uq: two directory rows for one run');
SELECT is(pg_temp.accepted('engine_run_tenant_run_uq',
          $$UPDATE flowforge.engine_run SET run_id = pg_temp.id('R'), organization_id = pg_temp.id('O'), definition_id = pg_temp.id('GWO')
            WHERE run_id = pg_temp.id('GR1')$$),
          'accepted', 'engine_run_tenant_run_uq: the same run id in another organization is accepted (the key is per organization)');
SELECT is(pg_temp.refused($$UPDATE flowforge.engine_run SET ended_at = created_at - interval '1 millisecond' WHERE run_id = pg_temp.id('R')$$),
          '23514 engine_run_ended_after_created', 'engine_run_ended_after_created: a run that ended before it began is refused');
SELECT is(pg_temp.accepted('engine_run_ended_after_created', $$UPDATE flowforge.engine_run SET ended_at = created_at WHERE run_id = pg_temp.id('R')$$),
          'accepted', 'engine_run_ended_after_created: ending the instant it began is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.engine_run SET deleted_at = now() WHERE run_id = pg_temp.id('R')$$),
          '23514 engine_run_deleted_pair', 'engine_run_deleted_pair: deleted_at without deleted_by is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.engine_run SET deleted_by = 'someone' WHERE run_id = pg_temp.id('R')$$),
          '23514 engine_run_deleted_pair', 'engine_run_deleted_pair: deleted_by without deleted_at is refused');
SELECT is(pg_temp.accepted('engine_run_deleted_pair', $$UPDATE flowforge.engine_run SET deleted_at = now(), deleted_by = 'someone' WHERE run_id = pg_temp.id('R')$$),
          'accepted', 'engine_run_deleted_pair: both together are accepted');

-- 0030: ownership and soft delete of definitions and DAG runs; one latest version per name.
SELECT is(pg_temp.refused($$UPDATE flowforge.workflow SET deleted_at = now() WHERE id = pg_temp.id('W')$$),
          '23514 workflow_deleted_pair', 'workflow_deleted_pair: deleted_at without deleted_by is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.workflow SET deleted_by = 'someone' WHERE id = pg_temp.id('W')$$),
          '23514 workflow_deleted_pair', 'workflow_deleted_pair: deleted_by without deleted_at is refused');
SELECT is(pg_temp.accepted('workflow_deleted_pair', $$UPDATE flowforge.workflow SET deleted_at = now(), deleted_by = 'someone' WHERE id = pg_temp.id('W')$$),
          'accepted', 'workflow_deleted_pair: both together are accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.workflow_run SET deleted_at = now() WHERE id = pg_temp.id('R')$$),
          '23514 wfrun_deleted_pair', 'wfrun_deleted_pair: deleted_at without deleted_by is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.workflow_run SET deleted_by = 'someone' WHERE id = pg_temp.id('R')$$),
          '23514 wfrun_deleted_pair', 'wfrun_deleted_pair: deleted_by without deleted_at is refused');
SELECT is(pg_temp.accepted('wfrun_deleted_pair', $$UPDATE flowforge.workflow_run SET deleted_at = now(), deleted_by = 'someone' WHERE id = pg_temp.id('R')$$),
          'accepted', 'wfrun_deleted_pair: both together are accepted');
SELECT is((SELECT array_agg(superseded_at IS NULL ORDER BY version) FROM flowforge.workflow WHERE name = 'ct_diamond'),
          ARRAY[false, true], 'fixture: ct_diamond v1 (W2) is superseded, v2 (W) its latest');
SELECT is(pg_temp.refused($$UPDATE flowforge.workflow SET superseded_at = NULL WHERE id = pg_temp.id('W2')$$),
          '23505 workflow_latest_uq', 'workflow_latest_uq: two latest versions of one name are refused');
SELECT is(pg_temp.accepted('workflow_latest_uq',
          $$INSERT INTO flowforge.workflow (organization_id, name, version, kind, spec, content_hash, created_by)
            SELECT pg_temp.id('O'), w.name, 1, w.kind, w.spec, w.content_hash, 'test' FROM flowforge.workflow w
            WHERE w.id = pg_temp.id('W')$$),
          'accepted', 'workflow_latest_uq: the same name''s latest version in another organization is accepted');

-- ===========================================================================
-- graph_run, graph_step, graph_visit, graph_edge  (GR1 running at review, GS succeeded)
-- ===========================================================================
SELECT is(pg_temp.refused($$UPDATE flowforge.graph_run SET status = 'done' WHERE run_id = pg_temp.id('GR1')$$),
          '23514 graph_run_status_valid', 'graph_run_status_valid: an unknown status is refused');
SELECT is(pg_temp.accepted('graph_run_status_valid', $$UPDATE flowforge.graph_run SET status = 'cancelled', finished_at = now() WHERE run_id = pg_temp.id('GR1')$$),
          'accepted', 'graph_run_status_valid: cancelled is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.graph_run SET finished_at = NULL WHERE run_id = pg_temp.id('GS')$$),
          '23514 graph_run_finished_matches_status', 'graph_run_finished_matches_status (=>): a succeeded run without a finish time');
SELECT is(pg_temp.refused($$UPDATE flowforge.graph_run SET status = 'failed' WHERE run_id = pg_temp.id('GR1')$$),
          '23514 graph_run_finished_matches_status', 'graph_run_finished_matches_status (=>): failing without a finish time');
SELECT is(pg_temp.refused($$UPDATE flowforge.graph_run SET finished_at = now() WHERE run_id = pg_temp.id('GR1')$$),
          '23514 graph_run_finished_matches_status', 'graph_run_finished_matches_status (<=): a running run with a finish time');
SELECT is(pg_temp.accepted('graph_run_finished_matches_status',
          $$UPDATE flowforge.graph_run SET status = 'running', finished_at = NULL WHERE run_id = pg_temp.id('GS')$$),
          'accepted', 'graph_run_finished_matches_status: a reopened run without a finish time is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.graph_run SET steps = -1 WHERE run_id = pg_temp.id('GR1')$$),
          '23514 graph_run_steps_within_max', 'graph_run_steps_within_max: a negative step count is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.graph_run SET steps = max_steps + 1 WHERE run_id = pg_temp.id('GR1')$$),
          '23514 graph_run_steps_within_max', 'graph_run_steps_within_max: a step beyond max_steps is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.graph_run SET steps = 0, max_steps = 0 WHERE run_id = pg_temp.id('GR1')$$),
          '23514 graph_run_steps_within_max', 'graph_run_steps_within_max: max_steps 0 is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.graph_run SET max_steps = 100001 WHERE run_id = pg_temp.id('GR1')$$),
          '23514 graph_run_steps_within_max', 'graph_run_steps_within_max: max_steps over 100000 is refused');
SELECT is(pg_temp.accepted('graph_run_steps_within_max', $$UPDATE flowforge.graph_run SET steps = max_steps WHERE run_id = pg_temp.id('GR1')$$),
          'accepted', 'graph_run_steps_within_max: the last step allowed is accepted');
SELECT is(pg_temp.accepted('graph_run_steps_within_max', $$UPDATE flowforge.graph_run SET max_steps = 100000 WHERE run_id = pg_temp.id('GR1')$$),
          'accepted', 'graph_run_steps_within_max: max_steps 100000 is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.graph_run SET state = '[1]' WHERE run_id = pg_temp.id('GR1')$$),
          '23514 graph_run_state_is_object', 'graph_run_state_is_object: run data that is not an object is refused');
SELECT is(pg_temp.accepted('graph_run_state_is_object', $$UPDATE flowforge.graph_run SET state = '{"k": [1]}' WHERE run_id = pg_temp.id('GR1')$$),
          'accepted', 'graph_run_state_is_object: an object is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.graph_run SET input = '"x"' WHERE run_id = pg_temp.id('GR1')$$),
          '23514 graph_run_input_is_object', 'graph_run_input_is_object: a scalar input is refused');
SELECT is(pg_temp.accepted('graph_run_input_is_object', $$UPDATE flowforge.graph_run SET input = '{}' WHERE run_id = pg_temp.id('GR1')$$),
          'accepted', 'graph_run_input_is_object: an object is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.graph_run SET deleted_by = 'someone' WHERE run_id = pg_temp.id('GR1')$$),
          '23514 graph_run_deleted_pair', 'graph_run_deleted_pair: deleted_by without deleted_at is refused');
SELECT is(pg_temp.accepted('graph_run_deleted_pair', $$UPDATE flowforge.graph_run SET deleted_at = now(), deleted_by = 'someone' WHERE run_id = pg_temp.id('GR1')$$),
          'accepted', 'graph_run_deleted_pair: both together are accepted');
SELECT is(pg_temp.refused($$INSERT INTO flowforge.graph_run (organization_id, run_id, definition_id, max_steps, status, created_by)
                            VALUES (flowforge.current_organization(), pg_temp.id('GR1'), pg_temp.id('GW'), 20, 'running', 'test')$$),
          '23505 graph_run_runid_uq', 'graph_run_runid_uq: two graph runs under one run id');
SELECT is(pg_temp.accepted('graph_run_runid_uq', $$INSERT INTO flowforge.graph_run (organization_id, run_id, definition_id, max_steps, status, created_by)
                            VALUES (pg_temp.id('O'), pg_temp.id('GR1'), pg_temp.id('GWO'), 20, 'running', 'test')$$),
          'accepted', 'graph_run_runid_uq: the same run id in another organization is accepted');

SELECT is(pg_temp.refused($$UPDATE flowforge.graph_step SET step = 0 WHERE run_id = pg_temp.id('GR1') AND step = 1$$),
          '23514 graph_step_positive', 'graph_step_positive: step 0 is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.graph_step SET visit = 0 WHERE run_id = pg_temp.id('GR1') AND step = 1$$),
          '23514 graph_step_positive', 'graph_step_positive: visit 0 is refused');
SELECT is(pg_temp.accepted('graph_step_positive', $$UPDATE flowforge.graph_step SET visit = 2 WHERE run_id = pg_temp.id('GR1') AND step = 1$$),
          'accepted', 'graph_step_positive: a second visit is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.graph_step SET step = 2 WHERE run_id = pg_temp.id('GR1') AND step = 1$$),
          '23505 graph_step_pkey', 'graph_step_pkey: two rows for one step of one run');
SELECT is(pg_temp.accepted('graph_step_pkey', $$UPDATE flowforge.graph_step SET step = 3 WHERE run_id = pg_temp.id('GR1') AND step = 2$$),
          'accepted', 'graph_step_pkey: a fresh step is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.graph_visit SET visits = 0 WHERE run_id = pg_temp.id('GR1') AND node = 'draft'$$),
          '23514 graph_visit_positive', 'graph_visit_positive: a counter row of zero visits is refused');
SELECT is(pg_temp.accepted('graph_visit_positive', $$UPDATE flowforge.graph_visit SET visits = 7 WHERE run_id = pg_temp.id('GR1') AND node = 'draft'$$),
          'accepted', 'graph_visit_positive: seven visits are accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.graph_visit SET node = 'draft' WHERE run_id = pg_temp.id('GR1') AND node = 'review'$$),
          '23505 graph_visit_pkey', 'graph_visit_pkey: two counters for one node of one run');
SELECT is(pg_temp.accepted('graph_visit_pkey', $$UPDATE flowforge.graph_visit SET node = 'publish' WHERE run_id = pg_temp.id('GR1') AND node = 'review'$$),
          'accepted', 'graph_visit_pkey: another node''s counter is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.graph_edge SET position = 0 WHERE from_task_id = pg_temp.task('GW', 'draft')$$),
          '23514 graph_edge_position_positive', 'graph_edge_position_positive: position 0 is refused');
SELECT is(pg_temp.accepted('graph_edge_position_positive', $$UPDATE flowforge.graph_edge SET position = 3 WHERE from_task_id = pg_temp.task('GW', 'draft')$$),
          'accepted', 'graph_edge_position_positive: a positive position is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.graph_edge SET position = 1 WHERE from_task_id = pg_temp.task('GW', 'review') AND position = 2$$),
          '23505 graph_edge_pkey', 'graph_edge_pkey: two edges of one node in one position (the order they are tried is total)');
SELECT is(pg_temp.accepted('graph_edge_pkey', $$UPDATE flowforge.graph_edge SET position = 5 WHERE from_task_id = pg_temp.task('GW', 'review') AND position = 2$$),
          'accepted', 'graph_edge_pkey: a free position is accepted');

-- ===========================================================================
-- agent, affinity_binding  (ct-agent-a with bindings key:1 and key:2, ct-agent-b)
-- ===========================================================================
SELECT is(pg_temp.refused($$INSERT INTO flowforge.agent (organization_id, name, created_by)
                            VALUES (flowforge.current_organization(), 'ct-agent-b', 'test')$$),
          '23505 agent_name_key', 'agent_name_key: two agents of one name in one organization');
SELECT is(pg_temp.accepted('agent_name_key', $$INSERT INTO flowforge.agent (organization_id, name, created_by)
                            VALUES (pg_temp.id('O'), 'ct-agent-b', 'test')$$),
          'accepted', 'agent_name_key: the same name in another organization is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.agent SET name = '' WHERE name = 'ct-agent-b'$$),
          '23514 agent_name_valid', 'agent_name_valid: an empty name is refused');
SELECT is(pg_temp.accepted('agent_name_valid', $$UPDATE flowforge.agent SET name = 'x' WHERE name = 'ct-agent-b'$$),
          'accepted', 'agent_name_valid: a one-character name is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.agent SET status = 'dead' WHERE name = 'ct-agent-b'$$),
          '23514 agent_status_valid', 'agent_status_valid: an unknown status is refused');
SELECT is(pg_temp.accepted('agent_status_valid', $$UPDATE flowforge.agent SET status = 'draining' WHERE name = 'ct-agent-b'$$),
          'accepted', 'agent_status_valid: draining is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.agent SET agent_type = 'cloud' WHERE name = 'ct-agent-b'$$),
          '23514 agent_type_valid', 'agent_type_valid: an unknown type is refused');
SELECT is(pg_temp.accepted('agent_type_valid', $$UPDATE flowforge.agent SET agent_type = 'local' WHERE name = 'ct-agent-b'$$),
          'accepted', 'agent_type_valid: local is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.agent SET metadata = '["gpu"]' WHERE name = 'ct-agent-b'$$),
          '23514 agent_metadata_is_object', 'agent_metadata_is_object: labels that are not an object are refused');
SELECT is(pg_temp.accepted('agent_metadata_is_object', $$UPDATE flowforge.agent SET metadata = '{"gpu": false}' WHERE name = 'ct-agent-b'$$),
          'accepted', 'agent_metadata_is_object: an object is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.agent SET metrics = '12.5' WHERE name = 'ct-agent-b'$$),
          '23514 agent_metrics_is_object', 'agent_metrics_is_object: a bare number is refused');
SELECT is(pg_temp.accepted('agent_metrics_is_object', $$UPDATE flowforge.agent SET metrics = '{"cpu_percent": 12.5}' WHERE name = 'ct-agent-b'$$),
          'accepted', 'agent_metrics_is_object: an object is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.agent SET heartbeat_interval = '999 milliseconds' WHERE name = 'ct-agent-b'$$),
          '23514 agent_heartbeat_interval_sane', 'agent_heartbeat_interval_sane: under a second is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.agent SET heartbeat_interval = '1 hour 1 second' WHERE name = 'ct-agent-b'$$),
          '23514 agent_heartbeat_interval_sane', 'agent_heartbeat_interval_sane: over an hour is refused');
SELECT is(pg_temp.accepted('agent_heartbeat_interval_sane', $$UPDATE flowforge.agent SET heartbeat_interval = '1 second' WHERE name = 'ct-agent-b'$$),
          'accepted', 'agent_heartbeat_interval_sane: a second is accepted');
SELECT is(pg_temp.accepted('agent_heartbeat_interval_sane', $$UPDATE flowforge.agent SET heartbeat_interval = '1 hour' WHERE name = 'ct-agent-b'$$),
          'accepted', 'agent_heartbeat_interval_sane: an hour is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.agent SET deleted_at = now() WHERE name = 'ct-agent-b'$$),
          '23514 agent_deleted_pair', 'agent_deleted_pair: deleted_at without deleted_by is refused');
SELECT is(pg_temp.accepted('agent_deleted_pair', $$UPDATE flowforge.agent SET deleted_at = now(), deleted_by = 'someone' WHERE name = 'ct-agent-b'$$),
          'accepted', 'agent_deleted_pair: both together are accepted');

SELECT is(pg_temp.refused($$UPDATE flowforge.affinity_binding SET affinity_key = 'key:1' WHERE affinity_key = 'key:2'$$),
          '23505 affinity_binding_key_uq', 'affinity_binding_key_uq: one key pinned twice (two agents racing both win)');
SELECT is(pg_temp.accepted('affinity_binding_key_uq',
          $$UPDATE flowforge.affinity_binding SET affinity_key = 'key:1', organization_id = pg_temp.id('O') WHERE affinity_key = 'key:2'$$),
          'accepted', 'affinity_binding_key_uq: the same key in another organization is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.affinity_binding SET affinity_key = '' WHERE affinity_key = 'key:2'$$),
          '23514 affinity_binding_key_valid', 'affinity_binding_key_valid: an empty key is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.affinity_binding SET affinity_key = repeat('k', 1001) WHERE affinity_key = 'key:2'$$),
          '23514 affinity_binding_key_valid', 'affinity_binding_key_valid: a key over 1000 characters is refused');
SELECT is(pg_temp.accepted('affinity_binding_key_valid', $$UPDATE flowforge.affinity_binding SET affinity_key = repeat('k', 1000) WHERE affinity_key = 'key:2'$$),
          'accepted', 'affinity_binding_key_valid: 1000 characters are accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.affinity_binding SET generation = 0 WHERE affinity_key = 'key:2'$$),
          '23514 affinity_binding_generation_positive', 'affinity_binding_generation_positive: generation 0 is refused');
SELECT is(pg_temp.accepted('affinity_binding_generation_positive', $$UPDATE flowforge.affinity_binding SET generation = generation + 1 WHERE affinity_key = 'key:2'$$),
          'accepted', 'affinity_binding_generation_positive: a rebind (generation + 1) is accepted');

-- ===========================================================================
-- work_item  (WP pending, WD dispatched, WC completed)
-- ===========================================================================
SELECT is(pg_temp.refused($$UPDATE flowforge.work_item SET status = 'running' WHERE id = pg_temp.id('WP')$$),
          '23514 work_item_status_valid', 'work_item_status_valid: a DAG task''s state name is not an item status');
SELECT is(pg_temp.accepted('work_item_status_valid', $$UPDATE flowforge.work_item SET status = 'cancelled', completed_at = now() WHERE id = pg_temp.id('WP')$$),
          'accepted', 'work_item_status_valid: cancelled is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.work_item SET engine_kind = 'machine' WHERE id = pg_temp.id('WP')$$),
          '23514 work_item_engine_kind_valid', 'work_item_engine_kind_valid: an unknown engine is refused');
SELECT is(pg_temp.accepted('work_item_engine_kind_valid', $$UPDATE flowforge.work_item SET engine_kind = 'dag' WHERE id = pg_temp.id('WP')$$),
          'accepted', 'work_item_engine_kind_valid: dag is accepted');
SELECT is(pg_temp.accepted('work_item_engine_kind_valid', $$UPDATE flowforge.work_item SET engine_kind = 'statemachine' WHERE id = pg_temp.id('WP')$$),
          'accepted', 'work_item_engine_kind_valid: statemachine is accepted (0017)');
SELECT is(pg_temp.refused($$UPDATE flowforge.work_item SET lease_expires_at = NULL WHERE id = pg_temp.id('WD')$$),
          '23514 work_item_lease_iff_dispatched', 'work_item_lease_iff_dispatched (=>): a dispatched item with no lease (the reaper could never see it)');
SELECT is(pg_temp.refused($$UPDATE flowforge.work_item SET status = 'dispatched' WHERE id = pg_temp.id('WP')$$),
          '23514 work_item_lease_iff_dispatched', 'work_item_lease_iff_dispatched (=>): dispatching without setting a lease');
SELECT is(pg_temp.refused($$UPDATE flowforge.work_item SET lease_expires_at = now() + interval '30 seconds' WHERE id = pg_temp.id('WP')$$),
          '23514 work_item_lease_iff_dispatched', 'work_item_lease_iff_dispatched (<=): a pending item holding a lease');
SELECT is(pg_temp.accepted('work_item_lease_iff_dispatched', $$UPDATE flowforge.work_item SET lease_expires_at = lease_expires_at + interval '30 seconds' WHERE id = pg_temp.id('WD')$$),
          'accepted', 'work_item_lease_iff_dispatched: a dispatched item extending its lease is accepted');
SELECT is(pg_temp.accepted('work_item_lease_iff_dispatched', $$UPDATE flowforge.work_item SET status = 'pending', lease_expires_at = NULL WHERE id = pg_temp.id('WD')$$),
          'accepted', 'work_item_lease_iff_dispatched: a reaped item back to pending without a lease is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.work_item SET completed_at = NULL WHERE id = pg_temp.id('WC')$$),
          '23514 work_item_completed_at_matches_status', 'work_item_completed_at_matches_status (=>): a completed item without a completion time');
SELECT is(pg_temp.refused($$UPDATE flowforge.work_item SET status = 'failed', lease_expires_at = NULL WHERE id = pg_temp.id('WD')$$),
          '23514 work_item_completed_at_matches_status', 'work_item_completed_at_matches_status (=>): failing without a completion time');
SELECT is(pg_temp.refused($$UPDATE flowforge.work_item SET completed_at = now() WHERE id = pg_temp.id('WP')$$),
          '23514 work_item_completed_at_matches_status', 'work_item_completed_at_matches_status (<=): a pending item with a completion time');
SELECT is(pg_temp.accepted('work_item_completed_at_matches_status',
          $$UPDATE flowforge.work_item SET status = 'failed', lease_expires_at = NULL, completed_at = dispatched_at WHERE id = pg_temp.id('WD')$$),
          'accepted', 'work_item_completed_at_matches_status: a failed item with a completion time is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.work_item SET completed_at = dispatched_at - interval '1 millisecond' WHERE id = pg_temp.id('WC')$$),
          '23514 work_item_completed_after_dispatched', 'work_item_completed_after_dispatched: completed before it was dispatched');
SELECT is(pg_temp.accepted('work_item_completed_after_dispatched', $$UPDATE flowforge.work_item SET completed_at = dispatched_at WHERE id = pg_temp.id('WC')$$),
          'accepted', 'work_item_completed_after_dispatched: a zero duration is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.work_item SET retry_count = -1 WHERE id = pg_temp.id('WP')$$),
          '23514 work_item_retries_valid', 'work_item_retries_valid: a negative retry count is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.work_item SET retry_count = 0, max_retries = -1 WHERE id = pg_temp.id('WP')$$),
          '23514 work_item_retries_valid', 'work_item_retries_valid: a negative retry budget is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.work_item SET retry_count = max_retries + 1 WHERE id = pg_temp.id('WP')$$),
          '23514 work_item_retries_valid', 'work_item_retries_valid: a retry beyond the budget is refused');
SELECT is(pg_temp.accepted('work_item_retries_valid', $$UPDATE flowforge.work_item SET retry_count = max_retries WHERE id = pg_temp.id('WP')$$),
          'accepted', 'work_item_retries_valid: the last retry is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.work_item SET fencing_token = -1 WHERE id = pg_temp.id('WD')$$),
          '23514 work_item_fencing_non_negative', 'work_item_fencing_non_negative: a negative token is refused');
SELECT is(pg_temp.accepted('work_item_fencing_non_negative', $$UPDATE flowforge.work_item SET fencing_token = 0 WHERE id = pg_temp.id('WD')$$),
          'accepted', 'work_item_fencing_non_negative: token 0 is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.work_item SET payload = '[]' WHERE id = pg_temp.id('WP')$$),
          '23514 work_item_payload_is_object', 'work_item_payload_is_object: an array payload is refused');
SELECT is(pg_temp.accepted('work_item_payload_is_object', $$UPDATE flowforge.work_item SET payload = '{}' WHERE id = pg_temp.id('WP')$$),
          'accepted', 'work_item_payload_is_object: an object payload is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.work_item SET worker_params = '"gpu"' WHERE id = pg_temp.id('WP')$$),
          '23514 work_item_worker_params_is_object', 'work_item_worker_params_is_object: a scalar is refused');
SELECT is(pg_temp.accepted('work_item_worker_params_is_object', $$UPDATE flowforge.work_item SET worker_params = '{"gpu": true}' WHERE id = pg_temp.id('WP')$$),
          'accepted', 'work_item_worker_params_is_object: an object is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.work_item SET affinity_key = 'run:x' WHERE id = pg_temp.id('WP')$$),
          '23514 work_item_affinity_valid', 'work_item_affinity_valid: an affinity key without a policy is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.work_item SET affinity_policy = 'hard' WHERE id = pg_temp.id('WP')$$),
          '23514 work_item_affinity_valid', 'work_item_affinity_valid: a policy without a key is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.work_item SET affinity_key = 'run:x', affinity_policy = 'sticky' WHERE id = pg_temp.id('WP')$$),
          '23514 work_item_affinity_valid', 'work_item_affinity_valid: an unknown policy is refused');
SELECT is(pg_temp.accepted('work_item_affinity_valid', $$UPDATE flowforge.work_item SET affinity_key = 'run:x', affinity_policy = 'hard' WHERE id = pg_temp.id('WP')$$),
          'accepted', 'work_item_affinity_valid: a key with its policy is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.work_item SET backoff = '-1 second' WHERE id = pg_temp.id('WP')$$),
          '23514 work_item_durations_bounded', 'work_item_durations_bounded: a negative backoff is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.work_item SET backoff = '1 day 1 second', max_backoff = '7 days' WHERE id = pg_temp.id('WP')$$),
          '23514 work_item_durations_bounded', 'work_item_durations_bounded: a backoff over a day is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.work_item SET max_backoff = '999 milliseconds' WHERE id = pg_temp.id('WP')$$),
          '23514 work_item_durations_bounded', 'work_item_durations_bounded: a cap below the backoff is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.work_item SET max_backoff = '7 days 1 second' WHERE id = pg_temp.id('WP')$$),
          '23514 work_item_durations_bounded', 'work_item_durations_bounded: a cap over 7 days is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.work_item SET backoff_factor = 0.99 WHERE id = pg_temp.id('WP')$$),
          '23514 work_item_durations_bounded', 'work_item_durations_bounded: a shrinking backoff (factor < 1) is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.work_item SET backoff_factor = 100.01 WHERE id = pg_temp.id('WP')$$),
          '23514 work_item_durations_bounded', 'work_item_durations_bounded: a factor above 100 is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.work_item SET timeout = '0' WHERE id = pg_temp.id('WP')$$),
          '23514 work_item_durations_bounded', 'work_item_durations_bounded: a zero timeout is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.work_item SET timeout = '30 days 1 second' WHERE id = pg_temp.id('WP')$$),
          '23514 work_item_durations_bounded', 'work_item_durations_bounded: a timeout over 30 days is refused');
SELECT is(pg_temp.accepted('work_item_durations_bounded',
          $$UPDATE flowforge.work_item SET backoff = '1 day', max_backoff = '7 days', backoff_factor = 100, timeout = '30 days' WHERE id = pg_temp.id('WP')$$),
          'accepted', 'work_item_durations_bounded: the upper bounds themselves are accepted');
SELECT is(pg_temp.accepted('work_item_durations_bounded',
          $$UPDATE flowforge.work_item SET backoff = '0', max_backoff = '0', backoff_factor = 1, timeout = '1 microsecond' WHERE id = pg_temp.id('WP')$$),
          'accepted', 'work_item_durations_bounded: the lower bounds themselves are accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.work_item SET queue = '.q' WHERE id = pg_temp.id('WP')$$),
          '23514 work_item_queue_valid', 'work_item_queue_valid: a queue starts with a letter');
SELECT is(pg_temp.accepted('work_item_queue_valid', $$UPDATE flowforge.work_item SET queue = 'a.b-c_1' WHERE id = pg_temp.id('WP')$$),
          'accepted', 'work_item_queue_valid: the task.queue alphabet is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.work_item SET deleted_at = now() WHERE id = pg_temp.id('WP')$$),
          '23514 work_item_deleted_pair', 'work_item_deleted_pair: deleted_at without deleted_by is refused');
SELECT is(pg_temp.accepted('work_item_deleted_pair', $$UPDATE flowforge.work_item SET deleted_at = now(), deleted_by = 'someone' WHERE id = pg_temp.id('WP')$$),
          'accepted', 'work_item_deleted_pair: both together are accepted');
SELECT is(pg_temp.probe($$UPDATE flowforge.work_item SET organization_id = NULL WHERE id = pg_temp.id('WP')$$),
          '23502 organization_id', 'work_item.organization_id: an item without a tenant is refused (NOT NULL)');

-- ===========================================================================
-- engine  (ct-e1 serving the default organization and O, ct-e2 standby in the default organization)
-- ===========================================================================
SELECT is(pg_temp.refused($$UPDATE flowforge.engine SET status = 'leader' WHERE engine_id = 'ct-e2'$$),
          '23514 engine_status_valid', 'engine_status_valid: an unknown status is refused');
SELECT is(pg_temp.accepted('engine_status_valid',
          $$UPDATE flowforge.engine SET status = 'standby', lease_expires_at = NULL WHERE engine_id = 'ct-e1' AND organization_id = pg_temp.id('O')$$),
          'accepted', 'engine_status_valid: giving an organization back (standby) is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.engine SET lease_expires_at = NULL WHERE engine_id = 'ct-e1'$$),
          '23514 engine_lease_iff_serving', 'engine_lease_iff_serving (=>): serving with no lease (nobody could ever take it over)');
SELECT is(pg_temp.refused($$UPDATE flowforge.engine SET lease_expires_at = now() + interval '30 seconds' WHERE engine_id = 'ct-e2'$$),
          '23514 engine_lease_iff_serving', 'engine_lease_iff_serving (<=): a standby row holding a lease');
SELECT is(pg_temp.accepted('engine_lease_iff_serving', $$UPDATE flowforge.engine SET lease_expires_at = lease_expires_at + interval '30 seconds' WHERE engine_id = 'ct-e1'$$),
          'accepted', 'engine_lease_iff_serving: renewing a lease is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.engine SET generation = -1 WHERE engine_id = 'ct-e2'$$),
          '23514 engine_generation_non_negative', 'engine_generation_non_negative: a negative generation is refused');
SELECT is(pg_temp.accepted('engine_generation_non_negative', $$UPDATE flowforge.engine SET generation = 0 WHERE engine_id = 'ct-e2'$$),
          'accepted', 'engine_generation_non_negative: generation 0 (never served) is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.engine SET engine_id = '' WHERE engine_id = 'ct-e2'$$),
          '23514 engine_id_valid', 'engine_id_valid: an empty engine id is refused');
SELECT is(pg_temp.accepted('engine_id_valid', $$UPDATE flowforge.engine SET engine_id = 'x' WHERE engine_id = 'ct-e2'$$),
          'accepted', 'engine_id_valid: a one-character id is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.engine SET engine_id = 'ct-e1' WHERE engine_id = 'ct-e2'$$),
          '23505 engine_tenant_engine_uq', 'engine_tenant_engine_uq: two rows of one daemon in one organization');
SELECT is(pg_temp.accepted('engine_tenant_engine_uq', $$INSERT INTO flowforge.engine (organization_id, engine_id, status, heartbeat_at)
                            VALUES (pg_temp.id('O'), 'ct-e2', 'standby', now())$$),
          'accepted', 'engine_tenant_engine_uq: the daemon''s row in another organization is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.engine SET status = 'serving', lease_expires_at = now() + interval '30 seconds'
                            WHERE engine_id = 'ct-e2'$$),
          '23505 engine_one_serving_per_org', 'engine_one_serving_per_org: a second daemon serving one organization''s duties');
SELECT is(pg_temp.accepted('engine_one_serving_per_org', $$INSERT INTO flowforge.engine (organization_id, engine_id, status, lease_expires_at, heartbeat_at)
                            VALUES (pg_temp.id('X'), 'ct-e2', 'serving', now() + interval '30 seconds', now())$$),
          'accepted', 'engine_one_serving_per_org: serving an organization nobody serves is accepted');

-- ===========================================================================
-- 0017: machine_run  (M1 suspended in working, M2 waiting, M3 succeeded)
-- ===========================================================================
SELECT is(pg_temp.refused($$UPDATE flowforge.machine_run SET status = 'done', finished_at = now() WHERE run_id = pg_temp.id('M2')$$),
          '23514 machine_run_status_valid', 'machine_run_status_valid: an unknown status is refused');
SELECT is(pg_temp.accepted('machine_run_status_valid', $$UPDATE flowforge.machine_run SET status = 'cancelled', finished_at = now() WHERE run_id = pg_temp.id('M2')$$),
          'accepted', 'machine_run_status_valid: cancelled is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.machine_run SET finished_at = NULL WHERE run_id = pg_temp.id('M3')$$),
          '23514 machine_run_finished_matches_status', 'machine_run_finished_matches_status (=>): a succeeded run without a finish time');
SELECT is(pg_temp.refused($$UPDATE flowforge.machine_run SET status = 'failed' WHERE run_id = pg_temp.id('M2')$$),
          '23514 machine_run_finished_matches_status', 'machine_run_finished_matches_status (=>): failing without a finish time');
SELECT is(pg_temp.refused($$UPDATE flowforge.machine_run SET finished_at = now() WHERE run_id = pg_temp.id('M2')$$),
          '23514 machine_run_finished_matches_status', 'machine_run_finished_matches_status (<=): a running machine with a finish time');
SELECT is(pg_temp.accepted('machine_run_finished_matches_status',
          $$UPDATE flowforge.machine_run SET status = 'running', finished_at = NULL WHERE run_id = pg_temp.id('M3')$$),
          'accepted', 'machine_run_finished_matches_status: a reopened run without a finish time is accepted (retry_run)');
SELECT is(pg_temp.refused($$UPDATE flowforge.machine_run SET status = 'cancelled', finished_at = now() WHERE run_id = pg_temp.id('M1')$$),
          '23514 machine_run_action_only_running', 'machine_run_action_only_running: ending a run that still waits on its action');
SELECT is(pg_temp.refused($$UPDATE flowforge.machine_run SET action_item_id = pg_temp.id('WP') WHERE run_id = pg_temp.id('M3')$$),
          '23514 machine_run_action_only_running', 'machine_run_action_only_running: an ended run suspended on an action');
SELECT is(pg_temp.accepted('machine_run_action_only_running', $$UPDATE flowforge.machine_run SET action_item_id = pg_temp.id('WP') WHERE run_id = pg_temp.id('M2')$$),
          'accepted', 'machine_run_action_only_running: a running machine suspended on an action is accepted');
SELECT is(pg_temp.accepted('machine_run_action_only_running',
          $$UPDATE flowforge.machine_run SET action_item_id = NULL, status = 'cancelled', finished_at = now() WHERE run_id = pg_temp.id('M1')$$),
          'accepted', 'machine_run_action_only_running: ending a run and dropping its action together is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.machine_run SET failure = 'boom' WHERE run_id = pg_temp.id('M2')$$),
          '23514 machine_run_failure_only_failed', 'machine_run_failure_only_failed: a running machine carrying a failure');
SELECT is(pg_temp.refused($$UPDATE flowforge.machine_run SET failure = 'boom' WHERE run_id = pg_temp.id('M3')$$),
          '23514 machine_run_failure_only_failed', 'machine_run_failure_only_failed: a succeeded run carrying a failure');
SELECT is(pg_temp.accepted('machine_run_failure_only_failed', $$UPDATE flowforge.machine_run SET status = 'failed', failure = 'boom' WHERE run_id = pg_temp.id('M3')$$),
          'accepted', 'machine_run_failure_only_failed: a failed run with its failure is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.machine_run SET context = '[]' WHERE run_id = pg_temp.id('M2')$$),
          '23514 machine_run_context_is_object', 'machine_run_context_is_object: context that is not an object is refused');
SELECT is(pg_temp.accepted('machine_run_context_is_object', $$UPDATE flowforge.machine_run SET context = '{"k": [1]}' WHERE run_id = pg_temp.id('M2')$$),
          'accepted', 'machine_run_context_is_object: an object is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.machine_run SET input = '"x"' WHERE run_id = pg_temp.id('M2')$$),
          '23514 machine_run_input_is_object', 'machine_run_input_is_object: a scalar input is refused');
SELECT is(pg_temp.accepted('machine_run_input_is_object', $$UPDATE flowforge.machine_run SET input = '{"n": 2}' WHERE run_id = pg_temp.id('M2')$$),
          'accepted', 'machine_run_input_is_object: an object is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.machine_run SET transitions = -1 WHERE run_id = pg_temp.id('M2')$$),
          '23514 machine_run_counters_valid', 'machine_run_counters_valid: a negative transition count is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.machine_run SET history_length = -1 WHERE run_id = pg_temp.id('M2')$$),
          '23514 machine_run_counters_valid', 'machine_run_counters_valid: a negative history length is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.machine_run SET next_event_seq = 0 WHERE run_id = pg_temp.id('M2')$$),
          '23514 machine_run_counters_valid', 'machine_run_counters_valid: queued event number 0 is refused');
SELECT is(pg_temp.accepted('machine_run_counters_valid',
          $$UPDATE flowforge.machine_run SET transitions = 0, history_length = 0, next_event_seq = 1 WHERE run_id = pg_temp.id('M2')$$),
          'accepted', 'machine_run_counters_valid: the starting values (0, 0, 1) are accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.machine_run SET deleted_at = now() WHERE run_id = pg_temp.id('M2')$$),
          '23514 machine_run_deleted_pair', 'machine_run_deleted_pair: deleted_at without deleted_by is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.machine_run SET deleted_by = 'someone' WHERE run_id = pg_temp.id('M2')$$),
          '23514 machine_run_deleted_pair', 'machine_run_deleted_pair: deleted_by without deleted_at is refused');
SELECT is(pg_temp.accepted('machine_run_deleted_pair', $$UPDATE flowforge.machine_run SET deleted_at = now(), deleted_by = 'someone' WHERE run_id = pg_temp.id('M2')$$),
          'accepted', 'machine_run_deleted_pair: both together are accepted');
SELECT is(pg_temp.refused($$INSERT INTO flowforge.machine_run (organization_id, run_id, definition_id, state, status, created_by, started_at)
                            VALUES (flowforge.current_organization(), pg_temp.id('M2'), pg_temp.id('MW'), 'waiting', 'running', 'test', now())$$),
          '23505 machine_run_runid_uq', 'machine_run_runid_uq: two machine runs under one run id (two answers to "where is it")');
SELECT is(pg_temp.accepted('machine_run_runid_uq', $$INSERT INTO flowforge.machine_run (organization_id, run_id, definition_id, state, status, created_by, started_at)
                            VALUES (pg_temp.id('O'), pg_temp.id('M2'), pg_temp.id('MWO'), 'waiting', 'running', 'test', now())$$),
          'accepted', 'machine_run_runid_uq: the same run id in another organization is accepted');
SELECT is(pg_temp.probe($$UPDATE flowforge.machine_run SET organization_id = NULL WHERE run_id = pg_temp.id('M2')$$),
          '23502 organization_id', 'machine_run.organization_id: a machine without a tenant is refused (NOT NULL)');
SELECT is(pg_temp.probe($$UPDATE flowforge.machine_run SET live = false WHERE run_id = pg_temp.id('M2')$$),
          '428C9 column "live" can only be updated to DEFAULT', 'machine_run.live cannot be written: it is derived from the status');

-- ===========================================================================
-- machine_transition  (append-only, so its CHECKs are proven on INSERT; M1 has entries 1 and 2)
-- ===========================================================================
SELECT is(pg_temp.refused($$INSERT INTO flowforge.machine_transition (organization_id, run_id, n, cause, outcome, to_state, created_at)
                            VALUES (flowforge.current_organization(), pg_temp.id('M1'), 3, 'magic', 'entered', 'finished', now())$$),
          '23514 machine_transition_cause_valid', 'machine_transition_cause_valid: an unknown cause is refused');
SELECT is(pg_temp.accepted('machine_transition_cause_valid', $$INSERT INTO flowforge.machine_transition (organization_id, run_id, n, cause, outcome, to_state, created_at)
                            VALUES (flowforge.current_organization(), pg_temp.id('M1'), 3, 'action_done', 'entered', 'finished', now())$$),
          'accepted', 'machine_transition_cause_valid: an action''s end is accepted');
SELECT is(pg_temp.refused($$INSERT INTO flowforge.machine_transition (organization_id, run_id, n, cause, outcome, created_at)
                            VALUES (flowforge.current_organization(), pg_temp.id('M1'), 3, 'cancel', 'moved', now())$$),
          '23514 machine_transition_outcome_valid', 'machine_transition_outcome_valid: an unknown outcome is refused');
SELECT is(pg_temp.accepted('machine_transition_outcome_valid', $$INSERT INTO flowforge.machine_transition (organization_id, run_id, n, cause, outcome, created_at)
                            VALUES (flowforge.current_organization(), pg_temp.id('M1'), 3, 'cancel', 'stopped', now())$$),
          'accepted', 'machine_transition_outcome_valid: a stop is accepted');
SELECT is(pg_temp.refused($$INSERT INTO flowforge.machine_transition (organization_id, run_id, n, cause, outcome, to_state, created_at)
                            VALUES (flowforge.current_organization(), pg_temp.id('M1'), 3, 'event', 'entered', 'finished', now())$$),
          '23514 machine_transition_event_named', 'machine_transition_event_named (=>): an event entry that names no event');
SELECT is(pg_temp.refused($$INSERT INTO flowforge.machine_transition (organization_id, run_id, n, cause, outcome, event, to_state, created_at)
                            VALUES (flowforge.current_organization(), pg_temp.id('M1'), 3, 'timer', 'entered', 'done', 'finished', now())$$),
          '23514 machine_transition_event_named', 'machine_transition_event_named (<=): a timer entry that names an event');
SELECT is(pg_temp.accepted('machine_transition_event_named', $$INSERT INTO flowforge.machine_transition (organization_id, run_id, n, cause, outcome, event, created_at)
                            VALUES (flowforge.current_organization(), pg_temp.id('M1'), 3, 'event', 'refused', 'done', now())$$),
          'accepted', 'machine_transition_event_named: an event entry naming its event is accepted');
SELECT is(pg_temp.refused($$INSERT INTO flowforge.machine_transition (organization_id, run_id, n, cause, outcome, created_at)
                            VALUES (flowforge.current_organization(), pg_temp.id('M1'), 3, 'timer', 'entered', now())$$),
          '23514 machine_transition_entered_has_target', 'machine_transition_entered_has_target: "entered" nowhere is refused');
SELECT is(pg_temp.accepted('machine_transition_entered_has_target', $$INSERT INTO flowforge.machine_transition (organization_id, run_id, n, cause, outcome, to_state, created_at)
                            VALUES (flowforge.current_organization(), pg_temp.id('M1'), 3, 'timer', 'entered', 'expired', now())$$),
          'accepted', 'machine_transition_entered_has_target: entering a named state is accepted');
SELECT is(pg_temp.refused($$INSERT INTO flowforge.machine_transition (organization_id, run_id, n, cause, outcome, to_state, created_at)
                            VALUES (flowforge.current_organization(), pg_temp.id('M1'), 0, 'retry', 'entered', 'working', now())$$),
          '23514 machine_transition_n_positive', 'machine_transition_n_positive: entry 0 is refused (the history counts from 1)');
SELECT is(pg_temp.accepted('machine_transition_n_positive', $$INSERT INTO flowforge.machine_transition (organization_id, run_id, n, cause, outcome, to_state, created_at)
                            VALUES (flowforge.current_organization(), pg_temp.id('M1'), 1000, 'retry', 'entered', 'working', now())$$),
          'accepted', 'machine_transition_n_positive: a positive entry number is accepted');
SELECT is(pg_temp.refused($$INSERT INTO flowforge.machine_transition (organization_id, run_id, n, cause, outcome, to_state, created_at)
                            VALUES (flowforge.current_organization(), pg_temp.id('M1'), 2, 'retry', 'entered', 'working', now())$$),
          '23505 machine_transition_pkey', 'machine_transition_pkey: two entries at one place of a run''s history');
SELECT is(pg_temp.accepted('machine_transition_pkey', $$INSERT INTO flowforge.machine_transition (organization_id, run_id, n, cause, outcome, to_state, created_at)
                            VALUES (flowforge.current_organization(), pg_temp.id('M2'), 2, 'retry', 'entered', 'working', now())$$),
          'accepted', 'machine_transition_pkey: entry 2 of another run is accepted');

-- ===========================================================================
-- machine_event_queue, machine_event_seen  (M1: done queued as 1, ids e-1 and e-2 seen)
-- ===========================================================================
SELECT is(pg_temp.refused($$UPDATE flowforge.machine_event_queue SET seq = 0 WHERE run_id = pg_temp.id('M1')$$),
          '23514 machine_event_queue_seq_positive', 'machine_event_queue_seq_positive: queued event 0 is refused');
SELECT is(pg_temp.accepted('machine_event_queue_seq_positive', $$UPDATE flowforge.machine_event_queue SET seq = 7 WHERE run_id = pg_temp.id('M1')$$),
          'accepted', 'machine_event_queue_seq_positive: a positive number is accepted');
SELECT is(pg_temp.refused($$INSERT INTO flowforge.machine_event_queue (organization_id, run_id, seq, event, received_at)
                            VALUES (flowforge.current_organization(), pg_temp.id('M1'), 1, 'go', now())$$),
          '23505 machine_event_queue_pkey', 'machine_event_queue_pkey: two events at one place of the arrival order');
SELECT is(pg_temp.accepted('machine_event_queue_pkey', $$INSERT INTO flowforge.machine_event_queue (organization_id, run_id, seq, event, received_at)
                            VALUES (flowforge.current_organization(), pg_temp.id('M1'), 2, 'go', now())$$),
          'accepted', 'machine_event_queue_pkey: the next place is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.machine_event_seen SET event_id = '' WHERE run_id = pg_temp.id('M1') AND event_id = 'e-2'$$),
          '23514 machine_event_seen_id_valid', 'machine_event_seen_id_valid: an empty event id is refused');
SELECT is(pg_temp.accepted('machine_event_seen_id_valid', $$UPDATE flowforge.machine_event_seen SET event_id = 'x' WHERE run_id = pg_temp.id('M1') AND event_id = 'e-2'$$),
          'accepted', 'machine_event_seen_id_valid: a one-character id is accepted');
SELECT is(pg_temp.accepted('machine_event_seen_id_valid', $$UPDATE flowforge.machine_event_seen SET event_id = repeat('x', 200) WHERE run_id = pg_temp.id('M1') AND event_id = 'e-2'$$),
          'accepted', 'machine_event_seen_id_valid: a 200-character id is accepted');
SELECT is(pg_temp.refused($$INSERT INTO flowforge.machine_event_seen (organization_id, run_id, event_id, seen_at)
                            VALUES (flowforge.current_organization(), pg_temp.id('M1'), 'e-1', now())$$),
          '23505 machine_event_seen_pkey', 'machine_event_seen_pkey: an event id seen twice by one run (what makes a redelivery a duplicate)');
SELECT is(pg_temp.accepted('machine_event_seen_pkey', $$INSERT INTO flowforge.machine_event_seen (organization_id, run_id, event_id, seen_at)
                            VALUES (flowforge.current_organization(), pg_temp.id('M2'), 'e-1', now())$$),
          'accepted', 'machine_event_seen_pkey: the same event id at another run is accepted');

-- ===========================================================================
-- machine_timer  (M2: the 1-hour timer of its first entry, position 1)
-- ===========================================================================
SELECT is(pg_temp.refused($$INSERT INTO flowforge.machine_timer (organization_id, run_id, entered, position, target, delay, fire_at)
                            SELECT organization_id, run_id, entered, position, 'finished', delay, fire_at
                            FROM flowforge.machine_timer WHERE run_id = pg_temp.id('M2')$$),
          '23505 machine_timer_one_per_entry', 'machine_timer_one_per_entry: one timer set twice for one entry (it would fire twice)');
SELECT is(pg_temp.accepted('machine_timer_one_per_entry', $$INSERT INTO flowforge.machine_timer (organization_id, run_id, entered, position, target, delay, fire_at)
                            SELECT organization_id, run_id, entered, position + 1, 'finished', delay, fire_at
                            FROM flowforge.machine_timer WHERE run_id = pg_temp.id('M2')$$),
          'accepted', 'machine_timer_one_per_entry: the entry''s next timer is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.machine_timer SET delay = '0' WHERE run_id = pg_temp.id('M2')$$),
          '23514 machine_timer_delay_positive', 'machine_timer_delay_positive: a zero delay is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.machine_timer SET delay = '-1 second' WHERE run_id = pg_temp.id('M2')$$),
          '23514 machine_timer_delay_positive', 'machine_timer_delay_positive: a negative delay (due before the state was entered) is refused');
SELECT is(pg_temp.accepted('machine_timer_delay_positive', $$UPDATE flowforge.machine_timer SET delay = '1 microsecond' WHERE run_id = pg_temp.id('M2')$$),
          'accepted', 'machine_timer_delay_positive: the shortest positive delay is accepted');

-- ===========================================================================
-- 0020: checkpoint  (FC: dag, total 3, cursor 3, idx 1 = succeeded 1, live 2 of 2;  GFC: graph)
-- ===========================================================================
SELECT is(pg_temp.refused($$UPDATE flowforge.checkpoint SET engine_kind = 'statemachine', parent_task_run_id = NULL WHERE id = pg_temp.id('FC')$$),
          '23514 checkpoint_engine_kind_valid', 'checkpoint_engine_kind_valid: an engine that does not fan out is refused');
SELECT is(pg_temp.accepted('checkpoint_engine_kind_valid',
          $$UPDATE flowforge.checkpoint SET engine_kind = 'graph', parent_task_run_id = NULL, parent_work_item_id = pg_temp.id('GFP')
            WHERE id = pg_temp.id('FC')$$),
          'accepted', 'checkpoint_engine_kind_valid: graph (with a parent item) is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.checkpoint SET parent_task_run_id = NULL WHERE id = pg_temp.id('FC')$$),
          '23514 checkpoint_parent_of_its_engine', 'checkpoint_parent_of_its_engine: a DAG fan-out without its task run');
SELECT is(pg_temp.refused($$UPDATE flowforge.checkpoint SET parent_work_item_id = pg_temp.id('GFP') WHERE id = pg_temp.id('FC')$$),
          '23514 checkpoint_parent_of_its_engine', 'checkpoint_parent_of_its_engine: a DAG fan-out naming a work item as its parent too');
SELECT is(pg_temp.refused($$UPDATE flowforge.checkpoint SET parent_work_item_id = NULL WHERE id = pg_temp.id('GFC')$$),
          '23514 checkpoint_parent_of_its_engine', 'checkpoint_parent_of_its_engine: a graph fan-out without its held item');
SELECT is(pg_temp.refused($$UPDATE flowforge.checkpoint SET parent_task_run_id = pg_temp.tr('FR', 'm') WHERE id = pg_temp.id('GFC')$$),
          '23514 checkpoint_parent_of_its_engine', 'checkpoint_parent_of_its_engine: a graph fan-out naming a task run');
SELECT is(pg_temp.accepted('checkpoint_parent_of_its_engine',
          $$UPDATE flowforge.checkpoint SET parent_task_run_id = pg_temp.tr('T', 'only') WHERE id = pg_temp.id('FC')$$),
          'accepted', 'checkpoint_parent_of_its_engine: a DAG fan-out under (another) task run is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.checkpoint SET iterator_type = 'reduce' WHERE id = pg_temp.id('FC')$$),
          '23514 checkpoint_iterator_type_valid', 'checkpoint_iterator_type_valid: an unknown iterator is refused');
SELECT is(pg_temp.accepted('checkpoint_iterator_type_valid', $$UPDATE flowforge.checkpoint SET iterator_type = 'foreach' WHERE id = pg_temp.id('FC')$$),
          'accepted', 'checkpoint_iterator_type_valid: foreach is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.checkpoint SET generation = 0 WHERE id = pg_temp.id('FC')$$),
          '23514 checkpoint_counts_valid', 'checkpoint_counts_valid: generation 0 is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.checkpoint SET total = 1000001 WHERE id = pg_temp.id('FC')$$),
          '23514 checkpoint_counts_valid', 'checkpoint_counts_valid: more than 1,000,000 elements is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.checkpoint SET cursor = total + 1 WHERE id = pg_temp.id('FC')$$),
          '23514 checkpoint_counts_valid', 'checkpoint_counts_valid: a cursor past the last element is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.checkpoint SET cursor = -1 WHERE id = pg_temp.id('FC')$$),
          '23514 checkpoint_counts_valid', 'checkpoint_counts_valid: a negative cursor is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.checkpoint SET succeeded = -1, failed = 2 WHERE id = pg_temp.id('FC')$$),
          '23514 checkpoint_counts_valid', 'checkpoint_counts_valid: a negative succeeded count is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.checkpoint SET succeeded = 2, failed = -1 WHERE id = pg_temp.id('FC')$$),
          '23514 checkpoint_counts_valid', 'checkpoint_counts_valid: a negative failed count is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.checkpoint SET idx = 0 WHERE id = pg_temp.id('FC')$$),
          '23514 checkpoint_counts_valid', 'checkpoint_counts_valid: idx that is not succeeded + failed (a lost count) is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.checkpoint SET idx = 4, succeeded = 4, live = 0 WHERE id = pg_temp.id('FC')$$),
          '23514 checkpoint_counts_valid', 'checkpoint_counts_valid: more settled than there are elements is refused');
SELECT is(pg_temp.accepted('checkpoint_counts_valid', $$UPDATE flowforge.checkpoint SET generation = 2, total = 1000000 WHERE id = pg_temp.id('FC')$$),
          'accepted', 'checkpoint_counts_valid: generation 2 of 1,000,000 elements is accepted');
SELECT is(pg_temp.accepted('checkpoint_counts_valid',
          $$UPDATE flowforge.checkpoint SET cursor = 0, idx = 0, succeeded = 0, failed = 0, live = 0, total = 0 WHERE id = pg_temp.id('FC')$$),
          'accepted', 'checkpoint_counts_valid: an empty fan-out (all zero) is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.checkpoint SET live = 3, total = 10 WHERE id = pg_temp.id('FC')$$),
          '23514 checkpoint_within_concurrency', 'checkpoint_within_concurrency: a third live child under max_concurrency 2 (the bound broken)');
SELECT is(pg_temp.refused($$UPDATE flowforge.checkpoint SET live = -1 WHERE id = pg_temp.id('FC')$$),
          '23514 checkpoint_within_concurrency', 'checkpoint_within_concurrency: a negative live count is refused');
SELECT is(pg_temp.accepted('checkpoint_within_concurrency', $$UPDATE flowforge.checkpoint SET max_concurrency = 3, live = 3, total = 10 WHERE id = pg_temp.id('FC')$$),
          'accepted', 'checkpoint_within_concurrency: exactly max_concurrency live is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.checkpoint SET max_concurrency = 0, live = 0 WHERE id = pg_temp.id('FC')$$),
          '23514 checkpoint_concurrency_valid', 'checkpoint_concurrency_valid: max_concurrency 0 is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.checkpoint SET max_concurrency = 10001 WHERE id = pg_temp.id('FC')$$),
          '23514 checkpoint_concurrency_valid', 'checkpoint_concurrency_valid: max_concurrency 10001 is refused');
SELECT is(pg_temp.accepted('checkpoint_concurrency_valid', $$UPDATE flowforge.checkpoint SET max_concurrency = 10000 WHERE id = pg_temp.id('FC')$$),
          'accepted', 'checkpoint_concurrency_valid: 10000 is accepted');
SELECT is(pg_temp.accepted('checkpoint_concurrency_valid', $$UPDATE flowforge.checkpoint SET max_concurrency = 1, live = 1 WHERE id = pg_temp.id('FC')$$),
          'accepted', 'checkpoint_concurrency_valid: 1 is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.checkpoint SET max_concurrency = 5, live = 3 WHERE id = pg_temp.id('FC')$$),
          '23514 checkpoint_settled_plus_live_within_total', 'checkpoint_settled_plus_live_within_total: settled plus live over the elements (a child too many)');
SELECT is(pg_temp.accepted('checkpoint_settled_plus_live_within_total', $$UPDATE flowforge.checkpoint SET max_concurrency = 5, live = 2 WHERE id = pg_temp.id('FC')$$),
          'accepted', 'checkpoint_settled_plus_live_within_total: settled plus live equal to the elements is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.checkpoint SET tolerated_failures = -1 WHERE id = pg_temp.id('FC')$$),
          '23514 checkpoint_tolerated_valid', 'checkpoint_tolerated_valid: a negative tolerance is refused');
SELECT is(pg_temp.accepted('checkpoint_tolerated_valid', $$UPDATE flowforge.checkpoint SET tolerated_failures = NULL WHERE id = pg_temp.id('FC')$$),
          'accepted', 'checkpoint_tolerated_valid: NULL (continue: every failure tolerated) is accepted');
SELECT is(pg_temp.accepted('checkpoint_tolerated_valid', $$UPDATE flowforge.checkpoint SET tolerated_failures = 5 WHERE id = pg_temp.id('FC')$$),
          'accepted', 'checkpoint_tolerated_valid: a count is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.checkpoint SET done = true, live = 0 WHERE id = pg_temp.id('FC')$$),
          '23514 checkpoint_done_iff_outcome', 'checkpoint_done_iff_outcome (=>): done with no outcome is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.checkpoint SET outcome = 'succeeded' WHERE id = pg_temp.id('FC')$$),
          '23514 checkpoint_done_iff_outcome', 'checkpoint_done_iff_outcome (<=): an outcome while not done is refused');
SELECT is(pg_temp.accepted('checkpoint_done_iff_outcome', $$UPDATE flowforge.checkpoint SET done = true, outcome = 'cancelled', live = 0 WHERE id = pg_temp.id('FC')$$),
          'accepted', 'checkpoint_done_iff_outcome: done with an outcome is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.checkpoint SET done = true, outcome = 'finished', live = 0 WHERE id = pg_temp.id('FC')$$),
          '23514 checkpoint_outcome_valid', 'checkpoint_outcome_valid: an unknown outcome is refused');
SELECT is(pg_temp.accepted('checkpoint_outcome_valid', $$UPDATE flowforge.checkpoint SET done = true, outcome = 'failed', live = 0 WHERE id = pg_temp.id('FC')$$),
          'accepted', 'checkpoint_outcome_valid: failed is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.checkpoint SET done = true, outcome = 'succeeded' WHERE id = pg_temp.id('FC')$$),
          '23514 checkpoint_done_has_nothing_live', 'checkpoint_done_has_nothing_live: a done fan-out with live children is refused');
SELECT is(pg_temp.accepted('checkpoint_done_has_nothing_live', $$UPDATE flowforge.checkpoint SET done = true, outcome = 'succeeded', live = 0 WHERE id = pg_temp.id('FC')$$),
          'accepted', 'checkpoint_done_has_nothing_live: done with nothing live is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.checkpoint SET deleted_at = now() WHERE id = pg_temp.id('FC')$$),
          '23514 checkpoint_deleted_pair', 'checkpoint_deleted_pair: deleted_at without deleted_by is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.checkpoint SET deleted_by = 'someone' WHERE id = pg_temp.id('FC')$$),
          '23514 checkpoint_deleted_pair', 'checkpoint_deleted_pair: deleted_by without deleted_at is refused');
SELECT is(pg_temp.accepted('checkpoint_deleted_pair', $$UPDATE flowforge.checkpoint SET deleted_at = now(), deleted_by = 'someone' WHERE id = pg_temp.id('FC')$$),
          'accepted', 'checkpoint_deleted_pair: both together are accepted');
SELECT is(pg_temp.refused($$INSERT INTO flowforge.checkpoint (organization_id, run_id, node_name, definition_id, task_id, engine_kind,
                                parent_task_run_id, iterator_type, total, max_concurrency, created_by)
                            SELECT organization_id, run_id, node_name, definition_id, task_id, engine_kind, parent_task_run_id,
                                   iterator_type, total, max_concurrency, 'test'
                            FROM flowforge.checkpoint WHERE id = pg_temp.id('FC')$$),
          '23505 checkpoint_run_node_uq', 'checkpoint_run_node_uq: two checkpoints for one node of one run (two answers to "where does it stand")');
SELECT is(pg_temp.accepted('checkpoint_run_node_uq', $$INSERT INTO flowforge.checkpoint (organization_id, run_id, node_name, definition_id, task_id, engine_kind,
                                parent_task_run_id, iterator_type, total, max_concurrency, created_by)
                            SELECT organization_id, run_id, 'other', definition_id, task_id, engine_kind, parent_task_run_id,
                                   iterator_type, total, max_concurrency, 'test'
                            FROM flowforge.checkpoint WHERE id = pg_temp.id('FC')$$),
          'accepted', 'checkpoint_run_node_uq: another node of the run is accepted');

-- ===========================================================================
-- 0020: checkpoint_page  (FC: page 0 = [1, 2, 3])
-- ===========================================================================
SELECT is(pg_temp.refused($$UPDATE flowforge.checkpoint_page SET elements = '{"0": 1}' WHERE checkpoint_id = pg_temp.id('FC')$$),
          '23514 checkpoint_page_is_array', 'checkpoint_page_is_array: a page that is not an array is refused');
SELECT is(pg_temp.accepted('checkpoint_page_is_array', $$UPDATE flowforge.checkpoint_page SET elements = '[]' WHERE checkpoint_id = pg_temp.id('FC')$$),
          'accepted', 'checkpoint_page_is_array: an array is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.checkpoint_page SET page = -1 WHERE checkpoint_id = pg_temp.id('FC')$$),
          '23514 checkpoint_page_non_negative', 'checkpoint_page_non_negative: page -1 is refused');
SELECT is(pg_temp.accepted('checkpoint_page_non_negative', $$UPDATE flowforge.checkpoint_page SET page = 7 WHERE checkpoint_id = pg_temp.id('FC')$$),
          'accepted', 'checkpoint_page_non_negative: page 7 is accepted');
SELECT is(pg_temp.refused($$INSERT INTO flowforge.checkpoint_page (organization_id, checkpoint_id, page, elements)
                            VALUES (flowforge.current_organization(), pg_temp.id('FC'), 0, '[4]')$$),
          '23505 checkpoint_page_pkey', 'checkpoint_page_pkey: two rows for one page (an element read two ways)');
SELECT is(pg_temp.accepted('checkpoint_page_pkey', $$INSERT INTO flowforge.checkpoint_page (organization_id, checkpoint_id, page, elements)
                            VALUES (flowforge.current_organization(), pg_temp.id('FC'), 1, '[4]')$$),
          'accepted', 'checkpoint_page_pkey: the next page is accepted');

-- ===========================================================================
-- 0020: fan-out children  (FC0 completed, FD1 dispatched, FP2 pending; WP an ordinary pending item)
-- ===========================================================================
SELECT is(pg_temp.refused($$UPDATE flowforge.work_item SET item_index = NULL WHERE id = pg_temp.id('FP2')$$),
          '23514 work_item_child_complete', 'work_item_child_complete: a child without its element is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.work_item SET checkpoint_generation = NULL WHERE id = pg_temp.id('FP2')$$),
          '23514 work_item_child_complete', 'work_item_child_complete: a child without its generation is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.work_item SET checkpoint_id = NULL WHERE id = pg_temp.id('FP2')$$),
          '23514 work_item_child_complete', 'work_item_child_complete: an element and generation without a checkpoint are refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.work_item SET item_index = 3 WHERE id = pg_temp.id('WP')$$),
          '23514 work_item_child_complete', 'work_item_child_complete: an element index on an ordinary item is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.work_item SET item_index = -1 WHERE id = pg_temp.id('FP2')$$),
          '23514 work_item_child_complete', 'work_item_child_complete: a negative element index is refused');
SELECT is(pg_temp.accepted('work_item_child_complete', $$UPDATE flowforge.work_item SET item_index = 9 WHERE id = pg_temp.id('FP2')$$),
          'accepted', 'work_item_child_complete: a child naming checkpoint, generation and element is accepted');
SELECT is(pg_temp.accepted('work_item_child_complete',
          $$UPDATE flowforge.work_item SET checkpoint_id = NULL, checkpoint_generation = NULL, item_index = NULL WHERE id = pg_temp.id('FP2')$$),
          'accepted', 'work_item_child_complete: an item naming none of the three is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.work_item SET item_index = 1 WHERE id = pg_temp.id('FP2')$$),
          '23505 work_item_checkpoint_live_uq', 'work_item_checkpoint_live_uq: two live children of one element (dispatched twice)');
SELECT is(pg_temp.refused($$INSERT INTO flowforge.work_item (organization_id, engine_kind, run_id, task_id, task_name, queue, payload,
                                status, next_attempt_at, checkpoint_id, checkpoint_generation, item_index, created_by)
                            SELECT organization_id, engine_kind, run_id, task_id, task_name, queue, payload, 'pending', now(),
                                   checkpoint_id, checkpoint_generation, item_index, 'test'
                            FROM flowforge.work_item WHERE id = pg_temp.id('FP2')$$),
          '23505 work_item_checkpoint_live_uq', 'work_item_checkpoint_live_uq: a racing second child of one element loses');
SELECT is(pg_temp.accepted('work_item_checkpoint_live_uq', $$UPDATE flowforge.work_item SET item_index = 0 WHERE id = pg_temp.id('FP2')$$),
          'accepted', 'work_item_checkpoint_live_uq: a live child of an element whose other child completed is accepted');
SELECT is(pg_temp.accepted('work_item_checkpoint_live_uq', $$UPDATE flowforge.work_item SET checkpoint_generation = 2, item_index = 1 WHERE id = pg_temp.id('FP2')$$),
          'accepted', 'work_item_checkpoint_live_uq: the same element in another generation is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.work_item SET status = 'completed', lease_expires_at = NULL, completed_at = dispatched_at, item_index = 0
                            WHERE id = pg_temp.id('FD1')$$),
          '23505 work_item_checkpoint_done_uq', 'work_item_checkpoint_done_uq: a second success of one element (its output twice)');
SELECT is(pg_temp.accepted('work_item_checkpoint_done_uq', $$UPDATE flowforge.work_item SET status = 'completed', lease_expires_at = NULL, completed_at = dispatched_at
                            WHERE id = pg_temp.id('FD1')$$),
          'accepted', 'work_item_checkpoint_done_uq: one success per element is accepted');
SELECT is(pg_temp.accepted('work_item_checkpoint_done_uq', $$UPDATE flowforge.work_item SET status = 'failed', lease_expires_at = NULL, completed_at = dispatched_at, item_index = 0
                            WHERE id = pg_temp.id('FD1')$$),
          'accepted', 'work_item_checkpoint_done_uq: a failed child beside an element''s success is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.setting SET max_fanout_items = 0$$),
          '23514 setting_max_fanout_items_sane', 'setting_max_fanout_items_sane: no element at all is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.setting SET max_fanout_items = 1000001$$),
          '23514 setting_max_fanout_items_sane', 'setting_max_fanout_items_sane: more than a checkpoint can count (1,000,000) is refused');
SELECT is(pg_temp.accepted('setting_max_fanout_items_sane', $$UPDATE flowforge.setting SET max_fanout_items = 1$$),
          'accepted', 'setting_max_fanout_items_sane: 1 is accepted');
SELECT is(pg_temp.accepted('setting_max_fanout_items_sane', $$UPDATE flowforge.setting SET max_fanout_items = 1000000$$),
          'accepted', 'setting_max_fanout_items_sane: 1,000,000 is accepted');
-- 0032: retention (NULL keeps everything)
SELECT is(pg_temp.refused(format($$UPDATE flowforge.setting SET %I = '59 minutes'$$, c)), '23514 setting_' || c || '_sane',
          format('setting_%s_sane: under an hour is refused', c))
FROM unnest(ARRAY['retention_runs', 'retention_firings', 'retention_audit']) c;
SELECT is(pg_temp.refused(format($$UPDATE flowforge.setting SET %I = '101 years'$$, c)), '23514 setting_' || c || '_sane',
          format('setting_%s_sane: over 100 years is refused', c))
FROM unnest(ARRAY['retention_runs', 'retention_firings', 'retention_audit']) c;
SELECT is(pg_temp.accepted('setting_' || c || '_sane', format($$UPDATE flowforge.setting SET %I = '1 hour'$$, c)), 'accepted',
          format('setting_%s_sane: an hour is accepted', c))
FROM unnest(ARRAY['retention_runs', 'retention_firings', 'retention_audit']) c;
SELECT is(pg_temp.accepted('setting_' || c || '_sane', format($$UPDATE flowforge.setting SET %I = NULL$$, c)), 'accepted',
          format('setting_%s_sane: NULL (keep forever) is accepted', c))
FROM unnest(ARRAY['retention_runs', 'retention_firings', 'retention_audit']) c;

-- ===========================================================================
-- Coverage: every CHECK and UNIQUE constraint of the schema was seen to fire
-- and to accept (a constraint added by a later migration fails this until
-- it gets its pair of tests here).
-- ===========================================================================
-- ---------------------------------------------------------------------------
-- 0028: flow control — the queue's limits, a definition's flow, a unit's slot
-- generation, and the counted rows (lanes, counters, buckets, passes).
-- ---------------------------------------------------------------------------
SELECT is(pg_temp.refused($$UPDATE flowforge.queue SET max_running = 0 WHERE name = 'ct-pull'$$),
          '23514 queue_max_running_valid', 'queue_max_running_valid: max_running 0 is refused (pause_queue stops a queue)');
SELECT is(pg_temp.accepted('queue_max_running_valid', $$UPDATE flowforge.queue SET max_running = 100000 WHERE name = 'ct-pull'$$),
          'accepted', 'queue_max_running_valid: 100,000 is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.queue SET rate_limit = 10 WHERE name = 'ct-pull'$$),
          '23514 queue_rate_valid', 'queue_rate_valid: a limit without its period is refused');
SELECT is(pg_temp.refused($$UPDATE flowforge.queue SET rate_limit = 10, rate_per = '2 days' WHERE name = 'ct-pull'$$),
          '23514 queue_rate_valid', 'queue_rate_valid: a period over a day is refused');
SELECT is(pg_temp.accepted('queue_rate_valid', $$UPDATE flowforge.queue SET rate_limit = 10, rate_per = '1 second' WHERE name = 'ct-pull'$$),
          'accepted', 'queue_rate_valid: 10 per second is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.task SET flow = '[]' WHERE id = pg_temp.task('WS', 'only')$$),
          '23514 task_flow_is_object', 'task_flow_is_object: a flow that is not an object is refused');
SELECT is(pg_temp.accepted('task_flow_is_object', $$UPDATE flowforge.task SET flow = '{"concurrency": {"key": "$.run.c", "max": 1}}'
                                                   WHERE id = pg_temp.task('WS', 'only')$$),
          'accepted', 'task_flow_is_object: an object is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.task_run SET flow_token = fencing_token + 1 WHERE id = pg_temp.tr('R', 'a')$$),
          '23514 taskrun_flow_token_valid', 'taskrun_flow_token_valid: slots held by a generation that was never claimed');
SELECT is(pg_temp.accepted('taskrun_flow_token_valid', $$UPDATE flowforge.task_run SET flow_token = fencing_token WHERE id = pg_temp.tr('R', 'a')$$),
          'accepted', 'taskrun_flow_token_valid: the current generation is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.task_run SET flow_token = 0 WHERE id = pg_temp.tr('R', 'a')$$),
          '23514 taskrun_flow_token_positive', 'taskrun_flow_token_positive: generation 0 was never issued (the column''s domain, 0040)');
SELECT is(pg_temp.accepted('taskrun_flow_token_positive', $$UPDATE flowforge.task_run SET flow_token = 1 WHERE id = pg_temp.tr('R', 'a')$$),
          'accepted', 'taskrun_flow_token_positive: generation 1 is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.task_run SET flow_token = NULL, flow_queue_slot = true WHERE id = pg_temp.tr('R', 'a')$$),
          '23514 taskrun_flow_queue_slot_has_token', 'taskrun_flow_queue_slot_has_token: a queue slot held by no generation');
SELECT is(pg_temp.accepted('taskrun_flow_queue_slot_has_token', $$UPDATE flowforge.task_run SET flow_token = fencing_token, flow_queue_slot = true
                                                                 WHERE id = pg_temp.tr('R', 'a')$$),
          'accepted', 'taskrun_flow_queue_slot_has_token: a queue slot held by the current generation is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.work_item SET flow_queue_slot = true WHERE id = pg_temp.id('WD')$$),
          '23514 work_item_flow_queue_slot_has_token', 'work_item_flow_queue_slot_has_token: a queue slot held by no generation');
SELECT is(pg_temp.accepted('work_item_flow_queue_slot_has_token', $$UPDATE flowforge.work_item SET flow_token = fencing_token, flow_queue_slot = true
                                                                    WHERE id = pg_temp.id('WD')$$),
          'accepted', 'work_item_flow_queue_slot_has_token: a queue slot held by the current generation is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.work_item SET flow_token = 0 WHERE id = pg_temp.id('WD')$$),
          '23514 work_item_flow_token_valid', 'work_item_flow_token_valid: token 0 (never issued) is refused');
SELECT is(pg_temp.accepted('work_item_flow_token_valid', $$UPDATE flowforge.work_item SET flow_token = fencing_token WHERE id = pg_temp.id('WD')$$),
          'accepted', 'work_item_flow_token_valid: the current generation is accepted');
INSERT INTO flowforge.flow_lane (organization_id, identity, conc_name, conc_value, conc_max)
VALUES (flowforge.current_organization(), 'ct-lane', '$.run.c', '"x"', 2);
SELECT is(pg_temp.refused($$INSERT INTO flowforge.flow_lane (organization_id, identity) VALUES (flowforge.current_organization(), 'ct-lane')$$),
          '23505 flow_lane_identity_uq', 'flow_lane_identity_uq: one lane per evaluated flow control');
SELECT is(pg_temp.accepted('flow_lane_identity_uq', $$INSERT INTO flowforge.flow_lane (organization_id, identity) VALUES (pg_temp.id('O'), 'ct-lane')$$),
          'accepted', 'flow_lane_identity_uq: the same identity in another organization is accepted');
SELECT is(pg_temp.refused($$INSERT INTO flowforge.flow_lane (organization_id, identity, conc_name, conc_value)
                            VALUES (flowforge.current_organization(), 'ct-l2', '$.run.c', '"x"')$$),
          '23514 flow_lane_concurrency_complete', 'flow_lane_concurrency_complete: a concurrency key without its max');
SELECT is(pg_temp.refused($$UPDATE flowforge.flow_lane SET conc_max = 10001 WHERE identity = 'ct-lane'$$),
          '23514 flow_lane_concurrency_complete', 'flow_lane_concurrency_complete: a max over 10,000');
SELECT is(pg_temp.accepted('flow_lane_concurrency_complete', $$UPDATE flowforge.flow_lane SET conc_max = 10000 WHERE identity = 'ct-lane'$$),
          'accepted', 'flow_lane_concurrency_complete: key, value and max 10,000 are accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.flow_lane SET rate_name = 'api', rate_value = 'null', rate_limit = 5 WHERE identity = 'ct-lane'$$),
          '23514 flow_lane_rate_complete', 'flow_lane_rate_complete: a rate limit without its period');
SELECT is(pg_temp.accepted('flow_lane_rate_complete', $$UPDATE flowforge.flow_lane SET rate_name = 'api', rate_value = 'null', rate_limit = 5,
                                                        rate_per = '1 minute' WHERE identity = 'ct-lane'$$),
          'accepted', 'flow_lane_rate_complete: a complete rate limit is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.flow_lane SET fair_weight = 0 WHERE identity = 'ct-lane'$$),
          '23514 flow_lane_weight_valid', 'flow_lane_weight_valid: a weight of 0 would never be served');
SELECT is(pg_temp.accepted('flow_lane_weight_valid', $$UPDATE flowforge.flow_lane SET fair_weight = 1000 WHERE identity = 'ct-lane'$$),
          'accepted', 'flow_lane_weight_valid: 1000 is accepted');
INSERT INTO flowforge.flow_slot (organization_id, scope, name, value, running)
VALUES (flowforge.current_organization(), 'key', '$.run.c', '"x"', 1);
SELECT is(pg_temp.refused($$INSERT INTO flowforge.flow_slot (organization_id, scope, name) VALUES (flowforge.current_organization(), 'run', 'r')$$),
          '23514 flow_slot_scope_valid', 'flow_slot_scope_valid: only queue and key counters');
SELECT is(pg_temp.accepted('flow_slot_scope_valid', $$INSERT INTO flowforge.flow_slot (organization_id, scope, name) VALUES (flowforge.current_organization(), 'queue', 'ct-pull')$$),
          'accepted', 'flow_slot_scope_valid: a queue counter is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.flow_slot SET running = running - 2 WHERE name = '$.run.c'$$),
          '23514 flow_slot_running_non_negative', 'flow_slot_running_non_negative: a slot given back twice would go below 0');
SELECT is(pg_temp.accepted('flow_slot_running_non_negative', $$UPDATE flowforge.flow_slot SET running = running - 1 WHERE name = '$.run.c'$$),
          'accepted', 'flow_slot_running_non_negative: back to 0 is accepted');
INSERT INTO flowforge.flow_bucket (organization_id, scope, name, value, rate_limit, rate_per, level, refilled_at)
VALUES (flowforge.current_organization(), 'key', 'api', 'null', 5, '1 second', 0, now());
SELECT is(pg_temp.refused($$UPDATE flowforge.flow_bucket SET scope = 'run' WHERE name = 'api'$$),
          '23514 flow_bucket_scope_valid', 'flow_bucket_scope_valid: only queue and key buckets');
SELECT is(pg_temp.accepted('flow_bucket_scope_valid', $$UPDATE flowforge.flow_bucket SET scope = 'queue' WHERE name = 'api'$$),
          'accepted', 'flow_bucket_scope_valid: a queue bucket is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.flow_bucket SET rate_limit = 0 WHERE name = 'api'$$),
          '23514 flow_bucket_rate_valid', 'flow_bucket_rate_valid: a limit of 0');
SELECT is(pg_temp.accepted('flow_bucket_rate_valid', $$UPDATE flowforge.flow_bucket SET rate_per = '1 day' WHERE name = 'api'$$),
          'accepted', 'flow_bucket_rate_valid: a period of a day is accepted');
SELECT is(pg_temp.refused($$UPDATE flowforge.flow_bucket SET level = 5 * 1000000 + 1 WHERE name = 'api'$$),
          '23514 flow_bucket_level_within_capacity', 'flow_bucket_level_within_capacity: more than limit tokens (5 per second)');
SELECT is(pg_temp.refused($$UPDATE flowforge.flow_bucket SET level = -1 WHERE name = 'api'$$),
          '23514 flow_bucket_level_within_capacity', 'flow_bucket_level_within_capacity: a negative level (a token taken twice)');
SELECT is(pg_temp.accepted('flow_bucket_level_within_capacity', $$UPDATE flowforge.flow_bucket SET level = 5 * 1000000 WHERE name = 'api'$$),
          'accepted', 'flow_bucket_level_within_capacity: exactly full is accepted');
INSERT INTO flowforge.flow_fair (organization_id, queue, value) VALUES (flowforge.current_organization(), 'ct-pull', '"a"');
SELECT is(pg_temp.refused($$UPDATE flowforge.flow_fair SET pass = -1 WHERE queue = 'ct-pull'$$),
          '23514 flow_fair_pass_non_negative', 'flow_fair_pass_non_negative: a negative pass');
SELECT is(pg_temp.accepted('flow_fair_pass_non_negative', $$UPDATE flowforge.flow_fair SET pass = 2.5 WHERE queue = 'ct-pull'$$),
          'accepted', 'flow_fair_pass_non_negative: a pass of 2.5 is accepted');

SELECT set_eq(
    $$SELECT conname::text FROM pg_constraint WHERE connamespace = 'flowforge'::regnamespace AND contype IN ('c', 'u')
      UNION VALUES ('task_dependency_pkey'), ('idempotency_key_pkey'), ('queue_pkey'), ('api_key_usage_pkey'),
                   ('server_secret_pkey'), ('setting_pkey'), ('graph_step_pkey'), ('graph_visit_pkey'),
                   ('graph_edge_pkey'), ('engine_one_serving_per_org'), ('machine_transition_pkey'),
                   ('machine_event_queue_pkey'), ('machine_event_seen_pkey'), ('checkpoint_page_pkey'),
                   ('work_item_checkpoint_live_uq'), ('work_item_checkpoint_done_uq'), ('scheduled_trigger_live_name_uq'),
                   ('trigger_secret_pkey'), ('trigger_firing_delivery_uq'), ('workflow_latest_uq')$$,
    $$SELECT constraint_name FROM probed WHERE outcome = 'refused'$$,
    'every CHECK and UNIQUE constraint was seen to refuse a plain write'
);
SELECT set_eq(
    $$SELECT conname::text FROM pg_constraint WHERE connamespace = 'flowforge'::regnamespace AND contype IN ('c', 'u')
      UNION VALUES ('task_dependency_pkey'), ('idempotency_key_pkey'), ('queue_pkey'), ('api_key_usage_pkey'),
                   ('server_secret_pkey'), ('setting_pkey'), ('graph_step_pkey'), ('graph_visit_pkey'),
                   ('graph_edge_pkey'), ('engine_one_serving_per_org'), ('machine_transition_pkey'),
                   ('machine_event_queue_pkey'), ('machine_event_seen_pkey'), ('checkpoint_page_pkey'),
                   ('work_item_checkpoint_live_uq'), ('work_item_checkpoint_done_uq'), ('scheduled_trigger_live_name_uq'),
                   ('trigger_secret_pkey'), ('trigger_firing_delivery_uq'), ('workflow_latest_uq')$$,
    $$SELECT constraint_name FROM probed WHERE outcome = 'accepted'$$,
    'every CHECK and UNIQUE constraint was seen to accept a valid write'
);

-- ===========================================================================
-- Foreign keys between tenant tables include organization_id (0034): a row
-- naming another organization's row is refused, whatever the id says.
-- ===========================================================================
SELECT is(pg_temp.probe($$UPDATE flowforge.engine_run SET organization_id = pg_temp.id('O') WHERE run_id = pg_temp.id('GR1')$$),
          '23503 engine_run_definition_fkey', 'engine_run_definition_fkey: a directory row of O cannot name the default organization''s definition');
SELECT is(pg_temp.probe($$UPDATE flowforge.engine_run SET organization_id = pg_temp.id('O'), definition_id = pg_temp.id('GWO')
                          WHERE run_id = pg_temp.id('GR1')$$),
          'accepted', 'engine_run_definition_fkey: the same row naming O''s own definition is accepted');
SELECT is(pg_temp.probe($$INSERT INTO flowforge.api_key_usage (api_key_id, organization_id)
                          SELECT id, pg_temp.id('O') FROM flowforge.api_key WHERE prefix = 'ffk_a'$$),
          '23503 api_key_usage_key_fkey', 'api_key_usage_key_fkey: a usage row of O cannot belong to another organization''s key');
SELECT is(pg_temp.probe($$UPDATE flowforge.trigger_secret SET organization_id = pg_temp.id('O') WHERE trigger_id = pg_temp.id('TW')$$),
          '23503 trigger_secret_trigger_fkey', 'trigger_secret_trigger_fkey: a secret of O cannot key another organization''s trigger');
SELECT is(pg_temp.probe($$UPDATE flowforge.task_run SET organization_id = pg_temp.id('O') WHERE id = pg_temp.tr('T', 'only')$$)
          ~ '^23503 task_run_(task|workflow_run)_fkey$', true,
          'task_run_task_fkey / task_run_workflow_run_fkey: a task run of O cannot belong to another organization''s run and task');

-- ===========================================================================
-- ON DELETE rules
-- ===========================================================================
-- Definitions that have been executed cannot be deleted (RESTRICT).
INSERT INTO ctx VALUES ('WB', flowforge_test.define_single('ct_bare'));
INSERT INTO flowforge.workflow_run (organization_id, workflow_id, tasks_total, tasks_remaining)
VALUES (flowforge.current_organization(), pg_temp.id('WB'), 1, 1);
INSERT INTO ctx VALUES ('WU', flowforge_test.define_single('ct_unused'));

SELECT is(pg_temp.probe($$DELETE FROM flowforge.workflow WHERE id = pg_temp.id('WB')$$),
          '23503 workflow_run_workflow_fkey', 'RESTRICT: a workflow version with a run cannot be deleted');
SELECT is(pg_temp.probe($$DELETE FROM flowforge.task WHERE id = pg_temp.task('W', 'd')$$),
          '23503 task_run_task_fkey', 'RESTRICT: a task with task runs cannot be deleted');
SELECT throws_ok($$DELETE FROM flowforge.workflow WHERE id = pg_temp.id('W')$$, '23503', NULL,
                 'RESTRICT: the workflow version run R executed cannot be deleted');
SELECT is(pg_temp.probe($$DELETE FROM flowforge.organization WHERE id = flowforge.current_organization()$$) ~ '^23503 ', true,
          'RESTRICT: an organization with definitions and history cannot be deleted');
SELECT lives_ok($$DELETE FROM flowforge.workflow WHERE id = pg_temp.id('WU')$$,
                'a workflow version never run can be deleted');
SELECT is((SELECT count(*)::int FROM flowforge.task WHERE workflow_id = pg_temp.id('WU')), 0,
          'CASCADE: deleting a definition deletes its tasks');

-- A run and its task runs are one unit: task runs, outbox rows and its
-- idempotency key go with it; its events (no FK) stay.
SELECT ok((SELECT count(*) FROM flowforge.task_run_event e JOIN flowforge.task_run tr ON tr.id = e.task_run_id
           WHERE tr.workflow_run_id = pg_temp.id('R')) > 0,
          'run R''s task runs have events before the purge');
CREATE TEMP TABLE r_task_runs AS SELECT id FROM flowforge.task_run WHERE workflow_run_id = pg_temp.id('R');
SELECT lives_ok($$DELETE FROM flowforge.workflow_run WHERE id = pg_temp.id('R')$$,
                'a run whose task runs have events can be deleted (task_run_event has no FK)');
SELECT is((SELECT count(*)::int FROM flowforge.task_run WHERE workflow_run_id = pg_temp.id('R')), 0,
          'CASCADE: the run''s task runs went with it');
SELECT is((SELECT count(*)::int FROM flowforge.outbox_message WHERE workflow_run_id = pg_temp.id('R')), 0,
          'CASCADE: the run''s outbox messages went with it');
SELECT ok((SELECT count(*) FROM flowforge.task_run_event WHERE task_run_id IN (SELECT id FROM r_task_runs)) > 0
          AND (SELECT count(*) FROM flowforge.task_run_event WHERE workflow_run_id = pg_temp.id('R') AND task_run_id IS NULL) > 0,
          'the run''s task and run-level events outlive the purge');
SELECT lives_ok($$DELETE FROM flowforge.workflow_run WHERE id = pg_temp.id('S')$$, 'run S can be deleted');
SELECT is((SELECT count(*)::int FROM flowforge.idempotency_key WHERE key = 'key-1'), 1,
          'its idempotency key names the run''s directory row (0018), which is still there');
SELECT lives_ok($$DELETE FROM flowforge.engine_run WHERE run_id = pg_temp.id('S')$$, 'run S''s directory row can be deleted');
SELECT is((SELECT count(*)::int FROM flowforge.idempotency_key WHERE key = 'key-1'), 0,
          'CASCADE: the run''s idempotency key went with its directory row');

-- The substrate (0015): the directory keeps a definition; a graph run's walk
-- goes with it; a work item keeps its node; bindings go with their agent.
INSERT INTO ctx VALUES ('GB', flowforge_test.define_graph_single('ct_gbare'));
INSERT INTO flowforge.engine_run (organization_id, run_id, engine_kind, definition_id, created_by)
VALUES (flowforge.current_organization(), gen_random_uuid(), 'graph', pg_temp.id('GB'), 'test');
SELECT is(pg_temp.probe($$DELETE FROM flowforge.workflow WHERE id = pg_temp.id('GB')$$),
          '23503 engine_run_definition_fkey', 'RESTRICT: a definition the run directory names cannot be deleted');
SELECT is(pg_temp.probe($$DELETE FROM flowforge.task WHERE id = pg_temp.task('GW', 'draft')$$),
          '23503 work_item_task_fkey', 'RESTRICT: a graph node with work items cannot be deleted');
SELECT ok((SELECT count(*) FROM flowforge.graph_step WHERE run_id = pg_temp.id('GS')) > 0
          AND (SELECT count(*) FROM flowforge.graph_visit WHERE run_id = pg_temp.id('GS')) > 0,
          'graph run GS has its walk before the purge');
SELECT lives_ok($$DELETE FROM flowforge.graph_run WHERE run_id = pg_temp.id('GS')$$, 'graph run GS can be deleted');
SELECT is((SELECT count(*)::int FROM flowforge.graph_step WHERE run_id = pg_temp.id('GS'))
          + (SELECT count(*)::int FROM flowforge.graph_visit WHERE run_id = pg_temp.id('GS')), 0,
          'CASCADE: its steps and visit counters went with it');
SELECT lives_ok($$DELETE FROM flowforge.agent WHERE name = 'ct-agent-a' AND organization_id = flowforge.current_organization()$$,
                'an agent holding bindings can be deleted');
SELECT is((SELECT count(*)::int FROM flowforge.affinity_binding WHERE agent_id = 'ct-agent-a'
             AND organization_id = flowforge.current_organization()), 0,
          'CASCADE: its bindings went with it');

-- Fan-out (0020): a checkpoint keeps its definition and its node (RESTRICT)
-- and goes with its run's directory row; its pages and children go with it.
-- CP is an artificial row naming the definition of one never-run version and
-- the node of another, so each RESTRICT is the only reference in the way.
INSERT INTO ctx VALUES ('CPD', flowforge_test.define_single('ct_cpdef')), ('CPT', flowforge_test.define_single('ct_cptask'));
INSERT INTO ctx VALUES ('CPR', gen_random_uuid());
INSERT INTO flowforge.engine_run (organization_id, run_id, engine_kind, definition_id, created_by)
VALUES (flowforge.current_organization(), pg_temp.id('CPR'), 'dag', pg_temp.id('FW'), 'test');
INSERT INTO flowforge.checkpoint (organization_id, run_id, node_name, definition_id, task_id, engine_kind, parent_task_run_id,
                                  iterator_type, total, max_concurrency, created_by)
VALUES (flowforge.current_organization(), pg_temp.id('CPR'), 'only', pg_temp.id('CPD'), pg_temp.task('CPT', 'only'), 'dag',
        pg_temp.tr('T', 'only'), 'map', 0, 1, 'test');
SELECT is(pg_temp.probe($$DELETE FROM flowforge.workflow WHERE id = pg_temp.id('CPD')$$),
          '23503 checkpoint_definition_fkey', 'RESTRICT: a definition a checkpoint names cannot be deleted');
SELECT is(pg_temp.probe($$DELETE FROM flowforge.task WHERE id = pg_temp.task('CPT', 'only')$$),
          '23503 checkpoint_task_fkey', 'RESTRICT: a node a checkpoint names cannot be deleted');
SELECT ok((SELECT count(*) FROM flowforge.checkpoint_page WHERE checkpoint_id = pg_temp.id('GFC')) > 0
          AND (SELECT count(*) FROM flowforge.work_item WHERE checkpoint_id = pg_temp.id('GFC')) > 0,
          'checkpoint GFC has pages and children before the purge');
SELECT lives_ok($$DELETE FROM flowforge.checkpoint WHERE id = pg_temp.id('GFC')$$, 'a checkpoint with pages and children can be deleted');
SELECT is((SELECT count(*)::int FROM flowforge.checkpoint_page WHERE checkpoint_id = pg_temp.id('GFC'))
          + (SELECT count(*)::int FROM flowforge.work_item WHERE checkpoint_id = pg_temp.id('GFC')), 0,
          'CASCADE: its pages and children went with it');
SELECT is(flowforge_test.item_status(pg_temp.id('GFP')), 'dispatched', 'the held item that was its parent stays (it is no child)');
SELECT lives_ok($$DELETE FROM flowforge.engine_run WHERE run_id = pg_temp.id('FR')$$, 'run FR''s directory row can be deleted');
SELECT is((SELECT count(*)::int FROM flowforge.checkpoint WHERE id = pg_temp.id('FC'))
          + (SELECT count(*)::int FROM flowforge.checkpoint_page WHERE checkpoint_id = pg_temp.id('FC'))
          + (SELECT count(*)::int FROM flowforge.work_item WHERE id IN (pg_temp.id('FC0'), pg_temp.id('FD1'), pg_temp.id('FP2'))), 0,
          'CASCADE: its checkpoint went with it, and with the checkpoint its pages and children');

-- Triggers (0022): a webhook's secret goes with its trigger's row (a purge:
-- drop_trigger only soft-deletes); the firing log (no FK) outlives its trigger
-- and the run it started.
SELECT ok((SELECT count(*) FROM flowforge.trigger_secret WHERE trigger_id = pg_temp.id('TW')) = 1
          AND (SELECT count(*) FROM flowforge.trigger_firing WHERE trigger_id = pg_temp.id('TW')) > 0,
          'ct-hook has its secret and firings before the purge');
SELECT lives_ok($$DELETE FROM flowforge.scheduled_trigger WHERE id = pg_temp.id('TW')$$, 'a trigger with a secret and firings can be deleted');
SELECT is((SELECT count(*)::int FROM flowforge.trigger_secret WHERE trigger_id = pg_temp.id('TW')), 0, 'CASCADE: its secret went with it');
SELECT is((SELECT count(*)::int FROM flowforge.trigger_firing WHERE id = pg_temp.id('FS')), 1, 'its firing outlives it (trigger_firing has no FK)');
SELECT lives_ok($$DELETE FROM flowforge.workflow_run WHERE id = pg_temp.id('FR1')$$, 'the run the firing started can be deleted');
SELECT lives_ok($$DELETE FROM flowforge.engine_run WHERE run_id = pg_temp.id('FR1')$$, 'and its directory row');
SELECT is((SELECT run_id FROM flowforge.trigger_firing WHERE id = pg_temp.id('FS')), pg_temp.id('FR1'),
          'the firing still names the run it started');

-- The state-machine engine (0017): a machine run keeps its definition and its
-- organization; its queued events, seen ids and timers go with it; its
-- history (no FK) stays.
INSERT INTO ctx VALUES ('MB', flowforge.define_workflow($${"name": "ct_mbare", "kind": "statemachine", "initial": "a",
    "states": {"a": {"on": {"go": "b"}}, "b": {"final": true}}}$$));
INSERT INTO flowforge.organization (slug, name) VALUES ('ct-fourth', 'Fourth organization');
INSERT INTO ctx SELECT 'Y', id FROM flowforge.organization WHERE slug = 'ct-fourth';
-- Y's own copy of MB: a run of Y may name only Y's definitions (0034).
INSERT INTO flowforge.workflow (organization_id, name, version, kind, spec, content_hash, created_by)
SELECT pg_temp.id('Y'), w.name, w.version, w.kind, w.spec, w.content_hash, w.created_by FROM flowforge.workflow w
WHERE w.id = pg_temp.id('MB');
INSERT INTO ctx SELECT 'MBY', id FROM flowforge.workflow WHERE organization_id = pg_temp.id('Y') AND name = 'ct_mbare';
INSERT INTO flowforge.machine_run (organization_id, run_id, definition_id, state, status, created_by, started_at)
VALUES (pg_temp.id('Y'), gen_random_uuid(), pg_temp.id('MBY'), 'a', 'running', 'test', now());
SELECT is(pg_temp.probe($$DELETE FROM flowforge.workflow WHERE id = pg_temp.id('MBY')$$),
          '23503 machine_run_definition_fkey', 'RESTRICT: a definition with a machine run cannot be deleted');
-- (Y's definition holds the organization too: its key is set aside inside the probe, which rolls back.)
SELECT is(pg_temp.probe($$ALTER TABLE flowforge.workflow DROP CONSTRAINT workflow_organization_fkey;
                          DELETE FROM flowforge.organization WHERE id = pg_temp.id('Y')$$),
          '23503 machine_run_organization_fkey', 'RESTRICT: an organization with a machine run cannot be deleted');
SELECT ok((SELECT count(*) FROM flowforge.machine_event_queue WHERE run_id = pg_temp.id('M1')) > 0
          AND (SELECT count(*) FROM flowforge.machine_event_seen WHERE run_id = pg_temp.id('M1')) > 0
          AND (SELECT count(*) FROM flowforge.machine_timer WHERE run_id = pg_temp.id('M2')) > 0,
          'machine runs M1 and M2 have queued events, seen ids and a timer before the purge');
SELECT lives_ok($$DELETE FROM flowforge.machine_run WHERE run_id IN (pg_temp.id('M1'), pg_temp.id('M2'))$$,
                'machine runs with a history, a queue, seen ids and timers can be deleted (machine_transition has no FK)');
SELECT is((SELECT count(*)::int FROM flowforge.machine_event_queue WHERE run_id IN (pg_temp.id('M1'), pg_temp.id('M2')))
          + (SELECT count(*)::int FROM flowforge.machine_event_seen WHERE run_id IN (pg_temp.id('M1'), pg_temp.id('M2')))
          + (SELECT count(*)::int FROM flowforge.machine_timer WHERE run_id IN (pg_temp.id('M1'), pg_temp.id('M2'))), 0,
          'CASCADE: their queued events, seen ids and timers went with them');
SELECT is((SELECT count(*)::int FROM flowforge.machine_transition WHERE run_id IN (pg_temp.id('M1'), pg_temp.id('M2'))), 3,
          'their history (M1''s two entries, M2''s one) outlives the purge');

SELECT * FROM finish();
ROLLBACK;
