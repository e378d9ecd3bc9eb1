-- FlowForge 0031: what 0030's columns need on tables that may be big, without
-- holding a lock on them for long: backfills in batches of 5,000 rows (each
-- batch its own transaction, walking the primary key), then the listings'
-- indexes built CONCURRENTLY, each with the query it serves as its comment.
--   engine_run     definition_name for the runs recorded before 0030 (0030's
--                  trigger keeps it from then on); the gateway's old
--                  '<login> via key ffk_<prefix>' creators become the key,
--                  'ffk_<prefix>', the caller a member's scope compares with
--   workflow_run   created_by from the directory; the deleted pair validated
--   engine_run_tenant_creator_created     a member's own runs, newest first (list_runs for the member role,
--                                         list_runs(creator => ...))
--   engine_run_tenant_definition_created  one workflow's runs of every version, newest first (list_runs(workflow))
--   engine_run_tenant_trigger_created     the runs one trigger started, newest first (list_runs(trigger_name))
--   workflow_tenant_latest_created        each name's latest version, newest first (list_workflows)
--   scheduled_trigger_tenant_created      the organization's triggers, newest first (list_triggers)
-- and engine_run_definition_recent's comment says what it still serves.
-- transactional: false
-- depends: 0030_ownership
DO $$
DECLARE
    v_last uuid := '00000000-0000-0000-0000-000000000000';
    v_ids uuid[];
BEGIN
    LOOP
        SELECT array_agg(x.id ORDER BY x.id) INTO v_ids
        FROM (SELECT e.id FROM flowforge.engine_run e WHERE e.id > v_last ORDER BY e.id LIMIT 5000) x;
        EXIT WHEN v_ids IS NULL;
        UPDATE flowforge.engine_run e
        SET definition_name = (SELECT w.name FROM flowforge.workflow w WHERE w.id = e.definition_id),
            created_by = coalesce(substring(e.created_by FROM ' via key (ffk_[0-9a-f]{12})$'), e.created_by),
            updated_by = coalesce(substring(e.updated_by FROM ' via key (ffk_[0-9a-f]{12})$'), e.updated_by),
            deleted_by = coalesce(substring(e.deleted_by FROM ' via key (ffk_[0-9a-f]{12})$'), e.deleted_by)
        WHERE e.id = ANY (v_ids)
          AND ((e.definition_name IS NULL AND e.definition_id IS NOT NULL)
               OR e.created_by ~ ' via key ffk_[0-9a-f]{12}$' OR e.updated_by ~ ' via key ffk_[0-9a-f]{12}$'
               OR e.deleted_by ~ ' via key ffk_[0-9a-f]{12}$');
        v_last := v_ids[cardinality(v_ids)];
        COMMIT;
    END LOOP;
END;
$$;
DO $$
DECLARE
    v_last uuid := '00000000-0000-0000-0000-000000000000';
    v_ids uuid[];
BEGIN
    LOOP
        SELECT array_agg(x.id ORDER BY x.id) INTO v_ids
        FROM (SELECT r.id FROM flowforge.workflow_run r WHERE r.id > v_last ORDER BY r.id LIMIT 5000) x;
        EXIT WHEN v_ids IS NULL;
        UPDATE flowforge.workflow_run r SET created_by = e.created_by
        FROM flowforge.engine_run e
        WHERE r.id = ANY (v_ids) AND r.created_by IS NULL
          AND e.organization_id = r.organization_id AND e.run_id = r.id;
        v_last := v_ids[cardinality(v_ids)];
        COMMIT;
    END LOOP;
END;
$$;
ALTER TABLE flowforge.workflow_run VALIDATE CONSTRAINT wfrun_deleted_pair;
CREATE INDEX CONCURRENTLY IF NOT EXISTS engine_run_tenant_creator_created
    ON flowforge.engine_run (organization_id, created_by, created_at DESC, id DESC);
CREATE INDEX CONCURRENTLY IF NOT EXISTS engine_run_tenant_definition_created
    ON flowforge.engine_run (organization_id, definition_name, created_at DESC, id DESC);
CREATE INDEX CONCURRENTLY IF NOT EXISTS engine_run_tenant_trigger_created
    ON flowforge.engine_run (organization_id, triggered_by, created_at DESC, id DESC) WHERE triggered_by IS NOT NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS workflow_tenant_latest_created
    ON flowforge.workflow (organization_id, created_at DESC, id DESC) WHERE superseded_at IS NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS scheduled_trigger_tenant_created
    ON flowforge.scheduled_trigger (organization_id, created_at DESC, id DESC);
COMMENT ON INDEX flowforge.engine_run_tenant_creator_created IS
  'WHERE organization_id = $1 AND created_by = $2 [AND (created_at, id) < cursor] ORDER BY created_at DESC, id DESC: '
  'a member''s own runs of every engine, newest first (list_runs for the member role, list_runs(creator => ...))';
COMMENT ON INDEX flowforge.engine_run_tenant_definition_created IS
  'WHERE organization_id = $1 AND definition_name = $2 [AND (created_at, id) < cursor] ORDER BY created_at DESC, id '
  'DESC: one workflow''s runs of every version and engine, newest first (list_runs(workflow => ...))';
COMMENT ON INDEX flowforge.engine_run_tenant_trigger_created IS
  'WHERE organization_id = $1 AND triggered_by = $2 [AND (created_at, id) < cursor] ORDER BY created_at DESC, id DESC: '
  'the runs one trigger started, newest first (list_runs(trigger_name => ...))';
COMMENT ON INDEX flowforge.workflow_tenant_latest_created IS
  'WHERE organization_id = $1 AND superseded_at IS NULL [AND (created_at, id) < cursor] ORDER BY created_at DESC, id '
  'DESC: each workflow name''s latest version, newest first (list_workflows)';
COMMENT ON INDEX flowforge.scheduled_trigger_tenant_created IS
  'WHERE organization_id = $1 [AND (created_at, id) < cursor] ORDER BY created_at DESC, id DESC: the organization''s '
  'triggers, newest first (list_triggers)';
-- engine_run_definition_recent no longer serves list_runs(workflow) (engine_run_tenant_definition_created does):
-- what it still serves.
COMMENT ON INDEX flowforge.engine_run_definition_recent IS
  'the RESTRICT check of engine_run_definition_fkey when a workflow version is deleted, and the newest runs of one '
  'version (definition_id), of any engine';
