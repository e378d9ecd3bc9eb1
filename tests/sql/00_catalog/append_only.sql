-- Append-only history (migration 0004): audit_log and task_run_event refuse
-- UPDATE, DELETE and TRUNCATE with SQLSTATE FF011 for every role — the table
-- owner and a superuser included — while INSERT keeps working. So does the
-- state-machine engine's history, machine_transition (migration 0017), and
-- the triggers' firing log, trigger_firing (0022; its refusals are exercised
-- in tests/sql/60_triggers/fire.sql). Since 0032 the three are partitioned by
-- month: every partition, made by the migration or ahead by tick(), refuses
-- too. purge's own path through the triggers is tested in
-- tests/sql/70_maintenance/purge.sql.
BEGIN;
SET LOCAL client_min_messages = warning;
SELECT plan(82);

-- This file runs as the superuser that ran the migrations; below, it also
-- probes as whichever role owns the tables (the migrating role up to 0005,
-- flowforge_owner since 0006), as a non-superuser owner of its own making and
-- as a non-owner granted every privilege.
SELECT is((SELECT rolsuper FROM pg_roles WHERE rolname = current_user), true, 'the test runs as a superuser');

-- The triggers themselves.
SELECT triggers_are('flowforge', 'audit_log', ARRAY['audit_log_append_only', 'audit_log_no_truncate']);
SELECT triggers_are('flowforge', 'task_run_event', ARRAY['task_run_event_append_only', 'task_run_event_no_truncate']);
SELECT triggers_are('flowforge', 'machine_transition', ARRAY['machine_transition_append_only', 'machine_transition_no_truncate']);
SELECT triggers_are('flowforge', 'trigger_firing', ARRAY['trigger_firing_append_only', 'trigger_firing_no_truncate']);
SELECT trigger_is('flowforge', 'trigger_firing', 'trigger_firing_append_only', 'flowforge', 'refuse_history_change');
SELECT trigger_is('flowforge', 'trigger_firing', 'trigger_firing_no_truncate', 'flowforge', 'refuse_history_change');
SELECT trigger_is('flowforge', 'audit_log', 'audit_log_append_only', 'flowforge', 'refuse_history_change');
SELECT trigger_is('flowforge', 'task_run_event', 'task_run_event_append_only', 'flowforge', 'refuse_history_change');
SELECT trigger_is('flowforge', 'machine_transition', 'machine_transition_append_only', 'flowforge', 'refuse_history_change');
SELECT trigger_is('flowforge', 'machine_transition', 'machine_transition_no_truncate', 'flowforge', 'refuse_history_change');
SELECT results_eq(
    $$SELECT tgname::text COLLATE "default",
             -- tgtype bits: 1 ROW, 2 BEFORE, 8 DELETE, 16 UPDATE, 32 TRUNCATE
             (tgtype & 1) <> 0, (tgtype & 2) <> 0, (tgtype & 8) <> 0, (tgtype & 16) <> 0, (tgtype & 32) <> 0,
             (tgtype & 4) <> 0
      FROM pg_trigger
      WHERE tgrelid IN ('flowforge.audit_log'::regclass, 'flowforge.task_run_event'::regclass,
                        'flowforge.machine_transition'::regclass, 'flowforge.trigger_firing'::regclass) AND NOT tgisinternal
      ORDER BY 1$$,
    $$VALUES ('audit_log_append_only',          true,  true, true,  true,  false, false),
             ('audit_log_no_truncate',          false, true, false, false, true,  false),
             ('machine_transition_append_only', true,  true, true,  true,  false, false),
             ('machine_transition_no_truncate', false, true, false, false, true,  false),
             ('task_run_event_append_only',     true,  true, true,  true,  false, false),
             ('task_run_event_no_truncate',     false, true, false, false, true,  false),
             ('trigger_firing_append_only',     true,  true, true,  true,  false, false),
             ('trigger_firing_no_truncate',     false, true, false, false, true,  false)$$,
    'row triggers BEFORE UPDATE OR DELETE and statement triggers BEFORE TRUNCATE; none on INSERT'
);
-- tgenabled: O fires in origin and local mode only, A always (replica too).
SELECT results_eq(
    $$SELECT tgname::text COLLATE "default", tgenabled::text COLLATE "default" FROM pg_trigger
      WHERE tgfoid = 'flowforge.refuse_history_change()'::regprocedure
        AND tgrelid IN (SELECT c.oid FROM pg_class c WHERE c.relnamespace = 'flowforge'::regnamespace)
      ORDER BY 1$$,
    $$VALUES ('audit_log_append_only', 'A'), ('audit_log_no_truncate', 'A'),
             ('machine_transition_append_only', 'A'), ('machine_transition_no_truncate', 'A'),
             ('task_run_event_append_only', 'A'), ('task_run_event_no_truncate', 'A'),
             ('trigger_firing_append_only', 'A'), ('trigger_firing_no_truncate', 'A')$$,
    'the append-only triggers of the flowforge tables are exactly these eight, each ENABLE ALWAYS'
);

-- ---------------------------------------------------------------------------
-- The partitions (0032): task_run_event, audit_log and trigger_firing are
-- partitioned by month, and TRUNCATE of one partition fires that partition's
-- triggers only, so every partition — those made by the migration, and those
-- tick() makes ahead (here: a steered clock in June 2031 makes June to
-- September) — carries both triggers, ENABLE ALWAYS: the row trigger cloned
-- from its parent, its own TRUNCATE trigger.
-- ---------------------------------------------------------------------------
SELECT is((SELECT count(*)::int FROM pg_inherits i WHERE i.inhparent = 'flowforge.task_run_event'::regclass
             AND i.inhrelid::regclass::text LIKE 'flowforge_history.task_run_event_p2031%'), 0,
          'no partition of 2031 before the clock gets there');
SELECT flowforge_test.freeze_clock('2031-06-15 12:00:00+00') \gset
-- (tick()'s duty itself, which would also drop this installation's empty past months, is tested in
-- tests/sql/70_maintenance/history_partitions.sql.)
SELECT is((flowforge._history_partitions_ahead(flowforge.now()) ->> 'created')::int, 12,
          'tick()''s partitions duty in June 2031 makes the partitions of June to September, three tables');
SELECT flowforge_test.freeze_clock(pg_catalog.now()) \gset
CREATE TEMP TABLE history_partitions AS
SELECT i.inhparent::regclass::text AS parent, c.oid::regclass AS part, c.relname::text AS name
FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent IN ('flowforge.task_run_event'::regclass, 'flowforge.audit_log'::regclass, 'flowforge.trigger_firing'::regclass);
SELECT is((SELECT count(*)::int FROM history_partitions WHERE name ~ '_p20310[6-9]$'), 12,
          'the twelve partitions tick() made exist');
SELECT is((SELECT count(*)::int FROM history_partitions WHERE name ~ '_default$'), 3, 'each table has its DEFAULT partition');
SELECT is_empty(
    $$SELECT p.name || ': ' || coalesce(string_agg(t.tgname || '/' || t.tgenabled::text || '/' || t.tgtype::text, ', ' ORDER BY t.tgname), 'none')
      FROM history_partitions p
      LEFT JOIN pg_trigger t ON t.tgrelid = p.part AND t.tgfoid = 'flowforge.refuse_history_change()'::regprocedure
      GROUP BY p.name, p.parent
      HAVING coalesce(string_agg(t.tgname || '/' || t.tgenabled::text || '/' || t.tgtype::text, ', ' ORDER BY t.tgname), '')
             IS DISTINCT FROM format('%1$s_append_only/A/27, %1$s_no_truncate/A/34', split_part(p.parent, '.', 2))$$,
    'every partition of every history table, existing and made ahead, has its row trigger (BEFORE UPDATE OR DELETE, '
    'each row) and its TRUNCATE trigger (BEFORE, statement), both ENABLE ALWAYS');
SELECT is_empty(
    $$SELECT p.name FROM history_partitions p
      JOIN pg_trigger t ON t.tgrelid = p.part AND t.tgname LIKE '%_append_only'
      WHERE NOT EXISTS (SELECT 1 FROM pg_trigger pt WHERE pt.oid = t.tgparentid AND pt.tgrelid = p.parent::regclass)$$,
    'each partition''s row trigger is its parent''s (a clone: dropping it alone is refused)');
SELECT is_empty(
    $$SELECT p.name FROM history_partitions p JOIN pg_class c ON c.oid = p.part
      WHERE NOT (c.relrowsecurity AND c.relforcerowsecurity)
         OR EXISTS (SELECT 1 FROM pg_policy pol WHERE pol.polrelid = p.part)$$,
    'every partition has row-level security enabled and forced, with no policy: it shows nobody anything directly');
SELECT is_empty(
    $$SELECT p.name || ' ' || coalesce(c.relacl::text, '') FROM history_partitions p JOIN pg_class c ON c.oid = p.part
      WHERE c.relacl IS DISTINCT FROM ARRAY[format('flowforge_owner=arwdDxt/flowforge_owner'),
                                            format('flowforge_system=D/flowforge_owner')]::aclitem[]$$,
    'every partition is the owner''s, and flowforge_system may only TRUNCATE it (purge)');

-- ---------------------------------------------------------------------------
-- INSERT still works
-- ---------------------------------------------------------------------------
SELECT lives_ok($$INSERT INTO flowforge.audit_log (organization_id, actor, action, entity, entity_id, fields)
                  VALUES (flowforge.current_organization(), 'tester', 'update', 'workflow', 'w-1', '{name}')$$,
                'audit_log: INSERT works');
SELECT isnt(flowforge.start_run('ao_single'), NULL, 'start_run writes run history')
FROM (SELECT flowforge_test.define_single('ao_single')) d;
SELECT lives_ok($$INSERT INTO flowforge.task_run_event (organization_id, workflow_run_id, task_run_id, kind, to_state)
                  SELECT organization_id, workflow_run_id, id, 'note', state FROM flowforge.task_run WHERE task_key = 'only'
                  LIMIT 1$$,
                'task_run_event: INSERT works');
SELECT is(flowforge.send_event(flowforge.start_run('ao_machine'), 'go') ->> 'state', 'done',
          'start_run and send_event write a machine''s history')
FROM (SELECT flowforge.define_workflow($${"name": "ao_machine", "kind": "statemachine", "initial": "idle",
                                         "states": {"idle": {"on": {"go": "done"}}, "done": {"final": true}}}$$)) d;
SELECT lives_ok($$INSERT INTO flowforge.machine_transition (organization_id, run_id, n, cause, outcome, event, created_at)
                  SELECT organization_id, run_id, 3, 'event', 'refused', 'note', now() FROM flowforge.machine_transition
                  WHERE n = 1 LIMIT 1$$,
                'machine_transition: INSERT works');
CREATE TEMP TABLE before AS
SELECT (SELECT count(*) FROM flowforge.audit_log) AS audit, (SELECT count(*) FROM flowforge.task_run_event) AS events,
       (SELECT count(*) FROM flowforge.machine_transition) AS transitions;
SELECT ok((SELECT audit >= 1 AND events >= 3 AND transitions = 3 FROM before), 'the three tables hold rows to refuse changes to');

-- ---------------------------------------------------------------------------
-- UPDATE, DELETE, TRUNCATE are refused with FF011, as owner and superuser
-- ---------------------------------------------------------------------------
SELECT throws_ok($$UPDATE flowforge.audit_log SET actor = 'someone else'$$, 'FF011',
                 'UPDATE on flowforge.audit_log is not allowed: the table is append-only', 'audit_log: UPDATE is refused');
SELECT throws_ok($$DELETE FROM flowforge.audit_log$$, 'FF011',
                 'DELETE on flowforge.audit_log is not allowed: the table is append-only', 'audit_log: DELETE is refused');
SELECT throws_ok($$TRUNCATE flowforge.audit_log$$, 'FF011',
                 'TRUNCATE on flowforge.audit_log is not allowed: the table is append-only', 'audit_log: TRUNCATE is refused');
SELECT throws_ok($$UPDATE flowforge.task_run_event SET kind = 'claimed' WHERE kind = 'note'$$, 'FF011',
                 'UPDATE on flowforge.task_run_event is not allowed: the table is append-only', 'task_run_event: UPDATE is refused');
SELECT throws_ok($$DELETE FROM flowforge.task_run_event WHERE kind = 'run_started'$$, 'FF011',
                 'DELETE on flowforge.task_run_event is not allowed: the table is append-only', 'task_run_event: DELETE is refused');
SELECT throws_ok($$TRUNCATE flowforge.task_run_event$$, 'FF011',
                 'TRUNCATE on flowforge.task_run_event is not allowed: the table is append-only', 'task_run_event: TRUNCATE is refused');
SELECT throws_ok($$UPDATE flowforge.machine_transition SET to_state = 'idle' WHERE n = 2$$, 'FF011',
                 'UPDATE on flowforge.machine_transition is not allowed: the table is append-only', 'machine_transition: UPDATE is refused');
SELECT throws_ok($$DELETE FROM flowforge.machine_transition WHERE cause = 'start'$$, 'FF011',
                 'DELETE on flowforge.machine_transition is not allowed: the table is append-only', 'machine_transition: DELETE is refused');
SELECT throws_ok($$TRUNCATE flowforge.machine_transition$$, 'FF011',
                 'TRUNCATE on flowforge.machine_transition is not allowed: the table is append-only', 'machine_transition: TRUNCATE is refused');
-- Sideways routes to the same rows.
SELECT throws_ok($$INSERT INTO flowforge.machine_transition (organization_id, run_id, n, cause, outcome, to_state, created_at)
                   SELECT organization_id, run_id, n, cause, outcome, 'idle', created_at FROM flowforge.machine_transition
                   ON CONFLICT ON CONSTRAINT machine_transition_pkey DO UPDATE SET to_state = 'rewritten'$$,
                 'FF011', NULL, 'machine_transition: INSERT ... ON CONFLICT DO UPDATE cannot rewrite an entry');
SELECT throws_ok($$UPDATE flowforge.task_run_event SET detail = '{}' WHERE id = (SELECT min(id::text)::uuid FROM flowforge.task_run_event)$$,
                 'FF011', NULL, 'task_run_event: a single-row UPDATE is refused');
SELECT throws_ok($$WITH gone AS (DELETE FROM flowforge.audit_log RETURNING id) SELECT count(*) FROM gone$$,
                 'FF011', NULL, 'audit_log: DELETE inside a CTE is refused');
-- (The key of a partitioned table includes its partition column: 0032.)
SELECT throws_ok($$INSERT INTO flowforge.audit_log (id, organization_id, actor, action, entity, created_at)
                   SELECT id, organization_id, 'x', 'y', 'z', created_at FROM flowforge.audit_log
                   ON CONFLICT (organization_id, id, created_at) DO UPDATE SET actor = 'rewritten'$$,
                 'FF011', NULL, 'audit_log: INSERT ... ON CONFLICT DO UPDATE cannot rewrite a row');
SELECT throws_ok($$TRUNCATE flowforge.organization CASCADE$$, 'FF011', NULL,
                 'TRUNCATE of organization CASCADE cannot empty the history tables');
SELECT throws_ok($$TRUNCATE flowforge.outbox_message, flowforge.task_run_event$$, 'FF011', NULL,
                 'TRUNCATE of several tables including task_run_event is refused as a whole');
SELECT throws_ok($$DELETE FROM flowforge.organization WHERE id = flowforge.current_organization()$$, '23503', NULL,
                 'deleting the organization cannot remove its audit trail (FK RESTRICT)');

SELECT is((SELECT count(*) FROM flowforge.audit_log), (SELECT audit FROM before), 'audit_log: no row was lost');
SELECT is((SELECT count(*) FROM flowforge.task_run_event), (SELECT events FROM before), 'task_run_event: no row was lost');
SELECT is((SELECT actor FROM flowforge.audit_log WHERE entity_id = 'w-1'), 'tester', 'audit_log: no row was changed');
SELECT is((SELECT count(*)::int FROM flowforge.task_run_event WHERE kind = 'note'), 1, 'task_run_event: no row was changed');
SELECT is((SELECT count(*) FROM flowforge.machine_transition), (SELECT transitions FROM before), 'machine_transition: no row was lost');
SELECT is((SELECT string_agg(n || ':' || cause || ':' || outcome || ':' || coalesce(to_state, '-'), ',' ORDER BY n)
           FROM flowforge.machine_transition), '1:start:entered:idle,2:event:entered:done,3:event:refused:-',
          'machine_transition: no row was changed');

-- ---------------------------------------------------------------------------
-- The owner, a non-superuser owner and a non-owner granted every privilege
-- fare no better. (Roles are cluster-wide; created inside this transaction,
-- they roll back.)
-- ---------------------------------------------------------------------------
-- Run p_sql as role p_role in a subtransaction that is always undone; returns
-- the SQLSTATE it failed with, 'accepted', or 'no row matched' (a vacuous probe).
CREATE FUNCTION pg_temp.as_role(p_role text, p_sql text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_rows bigint;
    v_state text;
    v_message text;
BEGIN
    EXECUTE format('SET LOCAL ROLE %I', p_role);
    BEGIN
        EXECUTE p_sql;
        GET DIAGNOSTICS v_rows = ROW_COUNT;
        RAISE EXCEPTION '%', v_rows USING ERRCODE = 'FFT99';
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT;
    END;
    RESET ROLE;
    IF v_state = 'FFT99' THEN
        RETURN CASE WHEN v_message::bigint > 0 THEN 'accepted' ELSE 'no row matched' END;
    END IF;
    RETURN v_state;
END;
$$;

CREATE TEMP TABLE owners AS
SELECT tablename::text AS t, tableowner::text AS owner FROM pg_tables
WHERE schemaname = 'flowforge' AND tablename IN ('audit_log', 'task_run_event', 'machine_transition');
SELECT is(pg_temp.as_role((SELECT owner FROM owners WHERE t = 'audit_log'), $$UPDATE flowforge.audit_log SET actor = 'x'$$),
          'FF011', 'as the owner of audit_log: UPDATE is refused');
SELECT is(pg_temp.as_role((SELECT owner FROM owners WHERE t = 'audit_log'), $$DELETE FROM flowforge.audit_log$$),
          'FF011', 'as the owner of audit_log: DELETE is refused');
SELECT is(pg_temp.as_role((SELECT owner FROM owners WHERE t = 'task_run_event'), $$TRUNCATE flowforge.task_run_event$$),
          'FF011', 'as the owner of task_run_event: TRUNCATE is refused');
SELECT is(pg_temp.as_role((SELECT owner FROM owners WHERE t = 'machine_transition'), $$UPDATE flowforge.machine_transition SET detail = '{}'$$),
          'FF011', 'as the owner of machine_transition: UPDATE is refused');
SELECT is(pg_temp.as_role((SELECT owner FROM owners WHERE t = 'machine_transition'), $$DELETE FROM flowforge.machine_transition$$),
          'FF011', 'as the owner of machine_transition: DELETE is refused');
SELECT is(pg_temp.as_role((SELECT owner FROM owners WHERE t = 'machine_transition'), $$TRUNCATE flowforge.machine_transition$$),
          'FF011', 'as the owner of machine_transition: TRUNCATE is refused');

CREATE ROLE ff_test_history_owner NOLOGIN;
CREATE ROLE ff_test_history_writer NOLOGIN;
GRANT USAGE ON SCHEMA flowforge TO ff_test_history_owner, ff_test_history_writer;
ALTER TABLE flowforge.audit_log OWNER TO ff_test_history_owner;
ALTER TABLE flowforge.task_run_event OWNER TO ff_test_history_owner;
GRANT ALL ON flowforge.audit_log, flowforge.task_run_event TO ff_test_history_writer;
GRANT EXECUTE ON FUNCTION flowforge.current_organization() TO ff_test_history_owner, ff_test_history_writer;
-- Row-level security (forced since 0006) would hide every row from these
-- roles and make the probes vacuous; let them see and write everything.
CREATE POLICY ff_test_all ON flowforge.audit_log FOR ALL TO ff_test_history_owner, ff_test_history_writer
    USING (true) WITH CHECK (true);
CREATE POLICY ff_test_all ON flowforge.task_run_event FOR ALL TO ff_test_history_owner, ff_test_history_writer
    USING (true) WITH CHECK (true);

SELECT is(pg_temp.as_role('ff_test_history_owner', $$INSERT INTO flowforge.audit_log (organization_id, actor, action, entity)
                          VALUES ('00000000-0000-0000-0000-000000000001', 'owner', 'create', 'workflow')$$),
          'accepted', 'non-superuser owner: INSERT into audit_log works');
SELECT is(pg_temp.as_role('ff_test_history_owner', $$UPDATE flowforge.audit_log SET actor = 'x'$$), 'FF011',
          'non-superuser owner: UPDATE of audit_log is refused');
SELECT is(pg_temp.as_role('ff_test_history_owner', $$DELETE FROM flowforge.task_run_event$$), 'FF011',
          'non-superuser owner: DELETE from task_run_event is refused');
SELECT is(pg_temp.as_role('ff_test_history_owner', $$TRUNCATE flowforge.task_run_event$$), 'FF011',
          'non-superuser owner: TRUNCATE of task_run_event is refused');
SELECT is(pg_temp.as_role('ff_test_history_writer', $$UPDATE flowforge.task_run_event SET detail = NULL$$), 'FF011',
          'non-owner with ALL privileges: UPDATE of task_run_event is refused');
SELECT is(pg_temp.as_role('ff_test_history_writer', $$TRUNCATE flowforge.audit_log$$), 'FF011',
          'non-owner with ALL privileges: TRUNCATE of audit_log is refused');
SELECT is(current_user::text, session_user::text, 'back to the session role after the role probes');

-- Straight at a partition (0032): its own triggers refuse, naming the table
-- the rows belong to; its owner fares no better, nor does the setting purge's
-- path needs (flowforge.history_purge) without purge's role.
SELECT tableoid::regclass::text AS ev_part FROM flowforge.task_run_event WHERE kind = 'note' \gset
SELECT tableoid::regclass::text AS au_part FROM flowforge.audit_log WHERE entity_id = 'w-1' \gset
SELECT is(:'ev_part' LIKE 'flowforge_history.task_run_event_p%', true, 'the event is in a month partition of task_run_event');
SELECT throws_ok(format('UPDATE %s SET kind = %L WHERE kind = %L', :'ev_part', 'claimed', 'note'), 'FF011',
                 'UPDATE on flowforge.task_run_event is not allowed: the table is append-only',
                 'UPDATE straight on a partition is refused, naming its table');
SELECT throws_ok(format('DELETE FROM %s', :'ev_part'), 'FF011',
                 'DELETE on flowforge.task_run_event is not allowed: the table is append-only',
                 'DELETE straight from a partition is refused');
SELECT throws_ok(format('TRUNCATE %s', :'ev_part'), 'FF011',
                 'TRUNCATE on flowforge.task_run_event is not allowed: the table is append-only',
                 'TRUNCATE of one partition of task_run_event is refused by the partition''s own trigger');
SELECT throws_ok(format('TRUNCATE %s', :'au_part'), 'FF011',
                 'TRUNCATE on flowforge.audit_log is not allowed: the table is append-only',
                 'TRUNCATE of one partition of audit_log is refused');
SELECT throws_ok($$TRUNCATE flowforge_history.trigger_firing_p203107$$, 'FF011',
                 'TRUNCATE on flowforge.trigger_firing is not allowed: the table is append-only',
                 'TRUNCATE of a partition tick() made ahead is refused');
SELECT lives_ok($$INSERT INTO flowforge.audit_log (organization_id, actor, action, entity, created_at)
                  VALUES ('00000000-0000-0000-0000-000000000001', 'tester', 'far', 'future', '2040-01-01 00:00+00')$$,
                'a row no month partition holds goes to the DEFAULT partition');
SELECT is((SELECT tableoid::regclass::text FROM flowforge.audit_log WHERE action = 'far'), 'flowforge_history.audit_log_default',
          'it is in the DEFAULT partition');
SELECT throws_ok($$DELETE FROM flowforge_history.audit_log_default$$, 'FF011', NULL,
                 'the DEFAULT partition refuses a DELETE too');
SELECT is(pg_temp.as_role('flowforge_owner', format('TRUNCATE %s', :'ev_part')), 'FF011',
          'as flowforge_owner (the partition''s owner): TRUNCATE of a partition is refused');
SELECT is(pg_temp.as_role('flowforge_owner', format('DO $do$ BEGIN PERFORM set_config(''flowforge.history_purge'', ''on'', true); '
                                                    'TRUNCATE %s; END $do$', :'au_part')),
          'FF011', 'as flowforge_owner with flowforge.history_purge on: TRUNCATE still refused (only purge''s role passes)');
SELECT throws_ok(format('DO $do$ BEGIN PERFORM set_config(''flowforge.history_purge'', ''on'', true); DELETE FROM %s; END $do$',
                        :'ev_part'), 'FF011', NULL, 'as a superuser with flowforge.history_purge on: DELETE still refused');
SELECT throws_ok(format('DO $do$ BEGIN SET LOCAL session_replication_role = replica; DELETE FROM %s; END $do$', :'au_part'),
                 'FF011', NULL, 'session_replication_role = replica: DELETE straight from a partition is still refused');
SET LOCAL session_replication_role = origin;
SELECT is((SELECT count(*) FROM flowforge.audit_log), (SELECT audit + 1 FROM before), 'audit_log: still no row lost (one added)');
SELECT is((SELECT count(*) FROM flowforge.task_run_event), (SELECT events FROM before), 'task_run_event: still no row lost');

-- ---------------------------------------------------------------------------
-- session_replication_role = replica skips ordinary triggers, so a superuser
-- could edit history without any DDL; 0004 marks the four triggers ENABLE
-- ALWAYS, and 0017 machine_transition's two.
-- ---------------------------------------------------------------------------
SELECT throws_ok($q$DO $do$ BEGIN
                     SET LOCAL session_replication_role = replica;
                     DELETE FROM flowforge.audit_log;
                   END $do$$q$, 'FF011', NULL,
                 'session_replication_role = replica does not switch the append-only triggers off');
SET LOCAL session_replication_role = origin;
SELECT throws_ok($q$DO $do$ BEGIN
                     SET LOCAL session_replication_role = replica;
                     UPDATE flowforge.machine_transition SET to_state = 'idle';
                   END $do$$q$, 'FF011', NULL,
                 'session_replication_role = replica: UPDATE of machine_transition is still refused');
SET LOCAL session_replication_role = origin;
SELECT throws_ok($q$DO $do$ BEGIN
                     SET LOCAL session_replication_role = replica;
                     DELETE FROM flowforge.machine_transition;
                   END $do$$q$, 'FF011', NULL,
                 'session_replication_role = replica: DELETE from machine_transition is still refused');
SET LOCAL session_replication_role = origin;
SELECT throws_ok($q$DO $do$ BEGIN
                     SET LOCAL session_replication_role = replica;
                     TRUNCATE flowforge.machine_transition;
                   END $do$$q$, 'FF011', NULL,
                 'session_replication_role = replica: TRUNCATE of machine_transition is still refused');
SET LOCAL session_replication_role = origin;
SELECT is((SELECT count(*) FROM flowforge.machine_transition), (SELECT transitions FROM before),
          'machine_transition: no row was lost in replica mode');

SELECT * FROM finish();
ROLLBACK;
