-- transactional: false
-- One inverse per statement of 0038, last first (yoyo pairs them up).
SELECT 'the comment goes with its index';
SELECT 'the comment goes with its index';
DROP INDEX CONCURRENTLY IF EXISTS flowforge.trigger_firing_recorded;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.idx_event_retries;
