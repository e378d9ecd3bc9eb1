-- FlowForge 0004: history cannot be edited.
-- audit_log and task_run_event refuse UPDATE, DELETE and TRUNCATE for every
-- role, the table owner included: an audit trail that can be edited is not one.
-- (A superuser can still drop the trigger; that is DDL and shows in the DDL log.)
-- depends: 0003_executions

CREATE FUNCTION flowforge.refuse_history_change() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
    RAISE EXCEPTION '% on flowforge.% is not allowed: the table is append-only', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'FF011',
              HINT = 'History rows are facts; record a new event instead of changing one.';
END;
$$;
COMMENT ON FUNCTION flowforge.refuse_history_change() IS
  'Trigger function: refuses UPDATE, DELETE and TRUNCATE on append-only history tables (SQLSTATE FF011).';

CREATE TRIGGER audit_log_append_only
    BEFORE UPDATE OR DELETE ON flowforge.audit_log
    FOR EACH ROW EXECUTE FUNCTION flowforge.refuse_history_change();
CREATE TRIGGER audit_log_no_truncate
    BEFORE TRUNCATE ON flowforge.audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION flowforge.refuse_history_change();
CREATE TRIGGER task_run_event_append_only
    BEFORE UPDATE OR DELETE ON flowforge.task_run_event
    FOR EACH ROW EXECUTE FUNCTION flowforge.refuse_history_change();
CREATE TRIGGER task_run_event_no_truncate
    BEFORE TRUNCATE ON flowforge.task_run_event
    FOR EACH STATEMENT EXECUTE FUNCTION flowforge.refuse_history_change();

-- ALWAYS: also under session_replication_role = replica, which would otherwise
-- switch ordinary triggers off without any DDL.
ALTER TABLE flowforge.audit_log ENABLE ALWAYS TRIGGER audit_log_append_only;
ALTER TABLE flowforge.audit_log ENABLE ALWAYS TRIGGER audit_log_no_truncate;
ALTER TABLE flowforge.task_run_event ENABLE ALWAYS TRIGGER task_run_event_append_only;
ALTER TABLE flowforge.task_run_event ENABLE ALWAYS TRIGGER task_run_event_no_truncate;
