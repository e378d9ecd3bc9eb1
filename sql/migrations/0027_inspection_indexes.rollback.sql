-- transactional: false
-- One inverse per statement of 0027, last first (yoyo pairs them up).
SELECT 'the comment goes with its index';
SELECT 'the comment goes with its index';
SELECT 'the comment goes with its index';
DROP INDEX CONCURRENTLY IF EXISTS flowforge.machine_run_live_age;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.graph_run_live_age;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.idx_event_throughput;
