-- transactional: false
DROP INDEX CONCURRENTLY IF EXISTS flowforge.agent_live_idx;
