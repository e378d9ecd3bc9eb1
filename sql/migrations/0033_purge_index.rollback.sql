-- transactional: false
-- One inverse per statement of 0033, last first (yoyo pairs them up).
SELECT 'the comment goes with its index';
SELECT 'the comment goes with its index';
DROP INDEX CONCURRENTLY IF EXISTS flowforge.engine_run_live_created;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.engine_run_ended_created;
