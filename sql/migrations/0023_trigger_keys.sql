-- FlowForge 0023: 0022's constraints on scheduled_trigger validated (SHARE
-- UPDATE EXCLUSIVE), and the name key replaced, CONCURRENTLY, by one over
-- live triggers only: a dropped trigger keeps its row (its firings and the
-- runs it caused stay readable) and frees its name; and the directory's
-- index for "the runs this trigger caused".
-- transactional: false
-- depends: 0022_triggers

ALTER TABLE flowforge.scheduled_trigger VALIDATE CONSTRAINT scheduled_trigger_type_valid;
ALTER TABLE flowforge.scheduled_trigger VALIDATE CONSTRAINT scheduled_trigger_action_valid;
ALTER TABLE flowforge.scheduled_trigger VALIDATE CONSTRAINT scheduled_trigger_cron_iff_type;
ALTER TABLE flowforge.scheduled_trigger VALIDATE CONSTRAINT scheduled_trigger_live_cron_has_next;
ALTER TABLE flowforge.scheduled_trigger VALIDATE CONSTRAINT scheduled_trigger_options_is_object;
ALTER TABLE flowforge.scheduled_trigger VALIDATE CONSTRAINT scheduled_trigger_input_is_object;
ALTER TABLE flowforge.scheduled_trigger VALIDATE CONSTRAINT scheduled_trigger_name_valid;
ALTER TABLE flowforge.scheduled_trigger VALIDATE CONSTRAINT scheduled_trigger_deleted_pair;
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS scheduled_trigger_live_name_uq ON flowforge.scheduled_trigger
    (organization_id, name) WHERE deleted_at IS NULL;
ALTER TABLE flowforge.scheduled_trigger DROP CONSTRAINT IF EXISTS uniq_scheduled_trigger_org_name;
-- The seed's first tracing query: the runs a trigger caused, newest first.
CREATE INDEX CONCURRENTLY IF NOT EXISTS engine_run_triggered_by ON flowforge.engine_run (triggered_by, created_at DESC)
    WHERE triggered_by IS NOT NULL;
