-- Undoes 0030. The rewritten gateway creators of scheduled_trigger stay in
-- the key's form ('ffk_<prefix>'): the login that carried the key is not kept
-- anywhere to put back.
ALTER TABLE flowforge.queue DROP COLUMN updated_by, DROP COLUMN created_by;
DROP TRIGGER engine_run_definition_name ON flowforge.engine_run;
DROP FUNCTION flowforge.engine_run_definition_name();
ALTER TABLE flowforge.engine_run DROP COLUMN definition_name;
ALTER TABLE flowforge.workflow_run
    DROP CONSTRAINT wfrun_deleted_pair,
    DROP COLUMN deleted_by, DROP COLUMN deleted_at, DROP COLUMN updated_by, DROP COLUMN updated_at,
    DROP COLUMN created_by;
DROP INDEX flowforge.workflow_latest_uq;
ALTER TABLE flowforge.workflow
    DROP CONSTRAINT workflow_deleted_pair,
    DROP COLUMN superseded_at, DROP COLUMN deleted_by, DROP COLUMN deleted_at, DROP COLUMN updated_by,
    DROP COLUMN updated_at, DROP COLUMN created_by;
