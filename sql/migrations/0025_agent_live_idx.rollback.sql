-- transactional: false
-- One inverse per statement of 0025, last first (yoyo pairs them up).
SELECT 1;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.agent_live_idx;
