-- transactional: false
-- One inverse per statement of 0029, last first (yoyo pairs them up).
SELECT 1;
SELECT 1;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.work_item_flow_lane_idx;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.idx_taskrun_flow_lane;
