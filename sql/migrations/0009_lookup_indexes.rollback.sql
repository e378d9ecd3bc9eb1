-- transactional: false
DROP INDEX CONCURRENTLY IF EXISTS flowforge.idx_audit_org_entity;
DROP INDEX CONCURRENTLY IF EXISTS flowforge.idx_taskrun_ready_by_name;
