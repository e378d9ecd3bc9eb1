-- FlowForge 0009: indexes for lookups that scanned.
--   * a worker that handles some task names claims only those
--     (claim(task_names => ...)): without an index led by the name, its claim
--     would walk past every ready task of names it does not handle;
--   * "who did what to entity X" in the audit log.
-- Built CONCURRENTLY (this file runs outside a transaction), so a live
-- database keeps claiming and writing while they build. A build that fails
-- leaves an INVALID index behind; the IF NOT EXISTS guard would then keep it,
-- so the rollback drops them and a re-run builds them again.
-- transactional: false
-- depends: 0008_views

CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_taskrun_ready_by_name ON flowforge.task_run
    (organization_id, queue, task_key, priority DESC, ready_at) WHERE state = 'ready';

CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_audit_org_entity ON flowforge.audit_log
    (organization_id, entity, entity_id, created_at DESC);
