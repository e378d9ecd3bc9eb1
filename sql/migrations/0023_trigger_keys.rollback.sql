-- transactional: false
-- One inverse per statement of 0023, last first (yoyo pairs them up).
DROP INDEX CONCURRENTLY IF EXISTS flowforge.engine_run_triggered_by;
ALTER TABLE flowforge.scheduled_trigger ADD CONSTRAINT uniq_scheduled_trigger_org_name UNIQUE (organization_id, name);
DROP INDEX CONCURRENTLY IF EXISTS flowforge.scheduled_trigger_live_name_uq;
SELECT 1;
SELECT 1;
SELECT 1;
SELECT 1;
SELECT 1;
SELECT 1;
SELECT 1;
SELECT 1;
