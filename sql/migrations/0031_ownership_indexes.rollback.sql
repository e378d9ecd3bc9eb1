-- transactional: false
-- One inverse per statement of 0031, last first (yoyo pairs them up). The
-- backfills and the validation stay: 0030's rollback drops their columns.
COMMENT ON INDEX flowforge.engine_run_definition_recent IS
  'list_runs(workflow): the newest runs of each version of a workflow, of any engine';
SELECT 'the comment goes with its index';
SELECT 'the comment goes with its index';
SELECT 'the comment goes with its index';
SELECT 'the comment goes with its index';
SELECT 'the comment goes with its index';
DROP INDEX CONCURRENTLY IF EXISTS flowforge.scheduled_trigger_tenant_created;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.workflow_tenant_latest_created;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.engine_run_tenant_trigger_created;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.engine_run_tenant_definition_created;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.engine_run_tenant_creator_created;
SELECT 'the validation stays (0030''s rollback drops the constraint)';
SELECT 'the backfill of workflow_run.created_by stays (0030''s rollback drops the column)';
SELECT 'the backfill of the directory stays (0030''s rollback drops definition_name)';
