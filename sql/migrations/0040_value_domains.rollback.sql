-- Back to 0039: the eleven domains' checks return to their tables under the
-- same names, the split ones whole again (taskrun_affinity_valid,
-- taskrun_flow_token_valid), each column to its domain's own type (no
-- table rewrite, as forward), and the domains are dropped. The views
-- and triggers that read the columns are saved, dropped and recreated around
-- it, as forward.

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
    DROP CONSTRAINT taskrun_affinity_valid, DROP CONSTRAINT taskrun_flow_token_valid,
    ALTER COLUMN state TYPE varchar(20),
    ALTER COLUMN attempt TYPE integer,
    ALTER COLUMN fencing_token TYPE bigint,
    ALTER COLUMN timeout TYPE interval,
    ALTER COLUMN remaining_deps TYPE integer,
    ALTER COLUMN worker_params TYPE jsonb,
    ALTER COLUMN affinity_policy TYPE varchar(10),
    ALTER COLUMN flow_token TYPE bigint,
    ADD CONSTRAINT taskrun_state_valid
        CHECK (state::text = ANY ('{pending,ready,running,succeeded,failed,cancelled,skipped}'::text[])),
    ADD CONSTRAINT taskrun_attempt_positive CHECK (attempt >= 1),
    ADD CONSTRAINT taskrun_fencing_non_negative CHECK (fencing_token >= 0),
    ADD CONSTRAINT taskrun_timeout_bounded CHECK (timeout IS NULL OR timeout <= interval '30 days'),
    ADD CONSTRAINT taskrun_remaining_deps_non_negative CHECK (remaining_deps >= 0),
    ADD CONSTRAINT taskrun_worker_params_is_object
        CHECK (worker_params IS NULL OR jsonb_typeof(worker_params) = 'object'),
    ADD CONSTRAINT taskrun_affinity_valid
        CHECK ((affinity_key IS NULL) = (affinity_policy IS NULL)
               AND (affinity_policy IS NULL OR affinity_policy::text = ANY ('{soft,hard}'::text[]))),
    ADD CONSTRAINT taskrun_flow_token_valid
        CHECK (flow_token IS NULL OR (flow_token >= 1 AND flow_token <= fencing_token));
ALTER TABLE flowforge.workflow_run
    ALTER COLUMN state TYPE varchar(20),
    ALTER COLUMN input TYPE jsonb,
    ADD CONSTRAINT wfrun_state_valid
        CHECK (state::text = ANY ('{pending,running,succeeded,failed,cancelled}'::text[])),
    ADD CONSTRAINT wfrun_input_is_object CHECK (jsonb_typeof(input) = 'object');
ALTER TABLE flowforge.engine_run
    ALTER COLUMN engine_kind TYPE varchar(20),
    ADD CONSTRAINT engine_run_kind_valid CHECK (engine_kind::text = ANY ('{dag,graph,statemachine}'::text[]));

DROP DOMAIN flowforge.task_run_state, flowforge.task_run_attempt, flowforge.task_run_fencing_token,
    flowforge.task_run_timeout, flowforge.task_run_remaining_deps, flowforge.task_run_worker_params,
    flowforge.task_run_affinity_policy, flowforge.task_run_flow_token, flowforge.workflow_run_state,
    flowforge.workflow_run_input, flowforge.engine_run_kind;

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

-- The release triggers as 0028 declared them: the whole test in the WHEN.
CREATE TRIGGER task_run_flow_release
    AFTER UPDATE OF state ON flowforge.task_run
    FOR EACH ROW WHEN (OLD.flow_token = OLD.fencing_token AND OLD.state = 'running' AND NEW.state <> 'running')
    EXECUTE FUNCTION flowforge._flow_release();
CREATE TRIGGER task_run_flow_release_deleted
    AFTER DELETE ON flowforge.task_run
    FOR EACH ROW WHEN (OLD.flow_token = OLD.fencing_token AND OLD.state = 'running')
    EXECUTE FUNCTION flowforge._flow_release();
CREATE TRIGGER work_item_flow_release
    AFTER UPDATE OF status ON flowforge.work_item
    FOR EACH ROW WHEN (OLD.flow_token = OLD.fencing_token AND OLD.status = 'dispatched' AND NEW.status <> 'dispatched')
    EXECUTE FUNCTION flowforge._flow_release();
CREATE TRIGGER work_item_flow_release_deleted
    AFTER DELETE ON flowforge.work_item
    FOR EACH ROW WHEN (OLD.flow_token = OLD.fencing_token AND OLD.status = 'dispatched')
    EXECUTE FUNCTION flowforge._flow_release();
