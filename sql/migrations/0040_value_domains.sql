-- FlowForge 0040: the single-column value checks of the three tables every
-- DAG task updates (task_run, workflow_run, engine_run) move from the table
-- onto a domain per column, under the same constraint name.
-- Why: PostgreSQL 15 re-reads, plans and compiles every CHECK of a table from
-- its stored node tree on each execution of each statement that writes the
-- table (ExecRelCheck), whichever columns the statement sets; one task of a
-- fan-out writes task_run three times (claim, complete, its dependent's
-- release), so it paid for all fifteen of task_run's checks three times. A
-- domain's check is kept compiled in the type cache and runs only when a
-- value is written to that column. Measured: docs/data-model.md, "Value
-- checks live on domains".
-- What moves: a check that reads one column and nothing else. A check that
-- relates two columns stays on the table; where one did both
-- (taskrun_affinity_valid, taskrun_flow_token_valid), the one-column part
-- moves under a new name (taskrun_affinity_policy_valid,
-- taskrun_flow_token_positive) and the relation keeps the old name. A
-- violation still raises 23514 naming the constraint; the message reads
-- "value for domain flowforge.task_run_state violates check constraint
-- "taskrun_state_valid"" where it read "new row for relation ...".
-- task_run_event keeps its check: it is partitioned, and retyping a column
-- of a partitioned table recreates its partitions' indexes under generated
-- names (the history's naming rule, 0038, would be lost).
-- Each domain keeps its column's type (varchar(20) stays varchar(20)), so the
-- column changes rewrite no table; PostgreSQL does rebuild the five partial
-- indexes of task_run whose predicate reads state (small: only ready or
-- running rows, but each reads the table once; docs/data-model.md). The
-- domains' checks are added after the columns change and validate the rows
-- already there (one scan per table, under this migration's locks: on a
-- large task_run, run it when claims may pause for that scan).
-- PostgreSQL refuses to retype a column that a view or a trigger's WHEN
-- reads, so those views and triggers are saved, dropped and recreated as
-- they were (definition, options, owner, grants, comment), all in this one
-- transaction. The rollback is the same steps backwards.
-- depends: 0039_compact_checks

CREATE DOMAIN flowforge.task_run_state AS varchar(20);
CREATE DOMAIN flowforge.task_run_attempt AS integer;
CREATE DOMAIN flowforge.task_run_fencing_token AS bigint;
CREATE DOMAIN flowforge.task_run_timeout AS interval;
CREATE DOMAIN flowforge.task_run_remaining_deps AS integer;
CREATE DOMAIN flowforge.task_run_worker_params AS jsonb;
CREATE DOMAIN flowforge.task_run_affinity_policy AS varchar(10);
CREATE DOMAIN flowforge.task_run_flow_token AS bigint;
CREATE DOMAIN flowforge.workflow_run_state AS varchar(20);
CREATE DOMAIN flowforge.workflow_run_input AS jsonb;
CREATE DOMAIN flowforge.engine_run_kind AS varchar(20);

-- The views that read the three tables, and the views over them.
CREATE TEMP TABLE retype_saved_view ON COMMIT DROP AS
WITH RECURSIVE reader(oid, depth) AS (
    SELECT r.ev_class, 1 FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid
    WHERE d.refobjid = ANY (ARRAY['flowforge.task_run'::regclass, 'flowforge.workflow_run'::regclass,
                                  'flowforge.engine_run'::regclass])
      AND r.ev_class <> d.refobjid
    UNION
    SELECT r.ev_class, reader.depth + 1 FROM reader JOIN pg_depend d ON d.refobjid = reader.oid
    JOIN pg_rewrite r ON r.oid = d.objid
    WHERE r.ev_class <> reader.oid
)
SELECT c.oid::regclass::text AS name, max(reader.depth) AS depth, pg_get_viewdef(c.oid) AS def, c.reloptions,
       c.relacl, c.relowner, obj_description(c.oid, 'pg_class') AS comment
FROM reader JOIN pg_class c ON c.oid = reader.oid
GROUP BY c.oid;
DO $$
DECLARE
    v record;
BEGIN
    FOR v IN SELECT * FROM retype_saved_view ORDER BY depth DESC LOOP
        EXECUTE format('DROP VIEW %s', v.name);
    END LOOP;
END;
$$;

-- The flow-control release triggers (0028) read task_run's state and tokens in their WHEN.
DROP TRIGGER task_run_flow_release ON flowforge.task_run;
DROP TRIGGER task_run_flow_release_deleted ON flowforge.task_run;
DROP TRIGGER work_item_flow_release ON flowforge.work_item;
DROP TRIGGER work_item_flow_release_deleted ON flowforge.work_item;

ALTER TABLE flowforge.task_run
    DROP CONSTRAINT taskrun_state_valid, DROP CONSTRAINT taskrun_attempt_positive,
    DROP CONSTRAINT taskrun_fencing_non_negative, DROP CONSTRAINT taskrun_timeout_bounded,
    DROP CONSTRAINT taskrun_remaining_deps_non_negative, DROP CONSTRAINT taskrun_worker_params_is_object,
    DROP CONSTRAINT taskrun_affinity_valid, DROP CONSTRAINT taskrun_flow_token_valid,
    ALTER COLUMN state TYPE flowforge.task_run_state,
    ALTER COLUMN attempt TYPE flowforge.task_run_attempt,
    ALTER COLUMN fencing_token TYPE flowforge.task_run_fencing_token,
    ALTER COLUMN timeout TYPE flowforge.task_run_timeout,
    ALTER COLUMN remaining_deps TYPE flowforge.task_run_remaining_deps,
    ALTER COLUMN worker_params TYPE flowforge.task_run_worker_params,
    ALTER COLUMN affinity_policy TYPE flowforge.task_run_affinity_policy,
    ALTER COLUMN flow_token TYPE flowforge.task_run_flow_token,
    ADD CONSTRAINT taskrun_affinity_valid CHECK ((affinity_key IS NULL) = (affinity_policy IS NULL)),
    ADD CONSTRAINT taskrun_flow_token_valid CHECK (flow_token <= fencing_token);
ALTER TABLE flowforge.workflow_run
    DROP CONSTRAINT wfrun_state_valid, DROP CONSTRAINT wfrun_input_is_object,
    ALTER COLUMN state TYPE flowforge.workflow_run_state,
    ALTER COLUMN input TYPE flowforge.workflow_run_input;
ALTER TABLE flowforge.engine_run
    DROP CONSTRAINT engine_run_kind_valid,
    ALTER COLUMN engine_kind TYPE flowforge.engine_run_kind;

-- A list of values is one array constant, as 0039 made every table's.
ALTER DOMAIN flowforge.task_run_state ADD CONSTRAINT taskrun_state_valid
    CHECK (VALUE::text = ANY ('{pending,ready,running,succeeded,failed,cancelled,skipped}'::text[]));
ALTER DOMAIN flowforge.task_run_attempt ADD CONSTRAINT taskrun_attempt_positive CHECK (VALUE >= 1);
ALTER DOMAIN flowforge.task_run_fencing_token ADD CONSTRAINT taskrun_fencing_non_negative CHECK (VALUE >= 0);
ALTER DOMAIN flowforge.task_run_timeout ADD CONSTRAINT taskrun_timeout_bounded CHECK (VALUE <= interval '30 days');
ALTER DOMAIN flowforge.task_run_remaining_deps ADD CONSTRAINT taskrun_remaining_deps_non_negative CHECK (VALUE >= 0);
ALTER DOMAIN flowforge.task_run_worker_params ADD CONSTRAINT taskrun_worker_params_is_object
    CHECK (jsonb_typeof(VALUE) = 'object');
ALTER DOMAIN flowforge.task_run_affinity_policy ADD CONSTRAINT taskrun_affinity_policy_valid
    CHECK (VALUE::text = ANY ('{soft,hard}'::text[]));
ALTER DOMAIN flowforge.task_run_flow_token ADD CONSTRAINT taskrun_flow_token_positive CHECK (VALUE >= 1);
ALTER DOMAIN flowforge.workflow_run_state ADD CONSTRAINT wfrun_state_valid
    CHECK (VALUE::text = ANY ('{pending,running,succeeded,failed,cancelled}'::text[]));
ALTER DOMAIN flowforge.workflow_run_input ADD CONSTRAINT wfrun_input_is_object CHECK (jsonb_typeof(VALUE) = 'object');
ALTER DOMAIN flowforge.engine_run_kind ADD CONSTRAINT engine_run_kind_valid
    CHECK (VALUE::text = ANY ('{dag,graph,statemachine}'::text[]));

COMMENT ON DOMAIN flowforge.task_run_state IS 'task_run.state: one of the seven task states (taskrun_state_valid)';
COMMENT ON DOMAIN flowforge.task_run_attempt IS 'task_run.attempt: counted from 1 (taskrun_attempt_positive)';
COMMENT ON DOMAIN flowforge.task_run_fencing_token IS 'task_run.fencing_token: 0 until the first claim (taskrun_fencing_non_negative)';
COMMENT ON DOMAIN flowforge.task_run_timeout IS 'task_run.timeout: at most 30 days (taskrun_timeout_bounded)';
COMMENT ON DOMAIN flowforge.task_run_remaining_deps IS 'task_run.remaining_deps: never below 0 (taskrun_remaining_deps_non_negative)';
COMMENT ON DOMAIN flowforge.task_run_worker_params IS 'task_run.worker_params: a JSON object of selectors (taskrun_worker_params_is_object)';
COMMENT ON DOMAIN flowforge.task_run_affinity_policy IS 'task_run.affinity_policy: soft or hard (taskrun_affinity_policy_valid)';
COMMENT ON DOMAIN flowforge.task_run_flow_token IS 'task_run.flow_token: a generation that was issued, from 1 (taskrun_flow_token_positive)';
COMMENT ON DOMAIN flowforge.workflow_run_state IS 'workflow_run.state: one of the five run states (wfrun_state_valid)';
COMMENT ON DOMAIN flowforge.workflow_run_input IS 'workflow_run.input: a JSON object (wfrun_input_is_object)';
COMMENT ON DOMAIN flowforge.engine_run_kind IS 'engine_run.engine_kind: dag, graph or statemachine (engine_run_kind_valid)';

DO $$
DECLARE
    v record;
BEGIN
    FOR v IN SELECT * FROM retype_saved_view ORDER BY depth LOOP
        EXECUTE format('CREATE VIEW %s WITH (%s) AS %s', v.name, array_to_string(v.reloptions, ', '), v.def);
        EXECUTE format('ALTER VIEW %s OWNER TO %I', v.name, pg_get_userbyid(v.relowner));
        EXECUTE format('COMMENT ON VIEW %s IS %L', v.name, v.comment);
        IF v.relacl IS NOT NULL THEN
            EXECUTE format('REVOKE ALL ON %s FROM PUBLIC', v.name);
            EXECUTE coalesce((SELECT string_agg(format('GRANT %s ON %s TO %s', a.privilege_type, v.name,
                                                       CASE WHEN a.grantee = 0 THEN 'PUBLIC'
                                                            ELSE quote_ident(pg_get_userbyid(a.grantee)) END), '; ')
                              FROM aclexplode(v.relacl) a WHERE a.grantee <> v.relowner), 'SELECT');
        END IF;
    END LOOP;
END;
$$;

-- The release triggers again, each WHEN now only "this unit's claim ever took slots": a WHEN
-- is compiled on every statement that writes the table, like a CHECK, and the full test
-- (this generation's claim took them, and it leaves running / dispatched) was 1.4 KB of node
-- tree on each claim, complete and release. _flow_release() makes that test itself, on the
-- column and state the trigger names.
CREATE TRIGGER task_run_flow_release
    AFTER UPDATE OF state ON flowforge.task_run
    FOR EACH ROW WHEN (OLD.flow_token IS NOT NULL)
    EXECUTE FUNCTION flowforge._flow_release('state', 'running');
CREATE TRIGGER task_run_flow_release_deleted
    AFTER DELETE ON flowforge.task_run
    FOR EACH ROW WHEN (OLD.flow_token IS NOT NULL)
    EXECUTE FUNCTION flowforge._flow_release('state', 'running');
CREATE TRIGGER work_item_flow_release
    AFTER UPDATE OF status ON flowforge.work_item
    FOR EACH ROW WHEN (OLD.flow_token IS NOT NULL)
    EXECUTE FUNCTION flowforge._flow_release('status', 'dispatched');
CREATE TRIGGER work_item_flow_release_deleted
    AFTER DELETE ON flowforge.work_item
    FOR EACH ROW WHEN (OLD.flow_token IS NOT NULL)
    EXECUTE FUNCTION flowforge._flow_release('status', 'dispatched');
