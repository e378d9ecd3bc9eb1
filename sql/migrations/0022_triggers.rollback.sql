DROP TABLE flowforge.trigger_firing;
DROP TABLE flowforge.trigger_secret;
DELETE FROM flowforge.scheduled_trigger WHERE trigger_type <> 'cron' OR action <> 'start';
ALTER TABLE flowforge.scheduled_trigger
    DROP CONSTRAINT scheduled_trigger_deleted_pair, DROP CONSTRAINT scheduled_trigger_name_valid,
    DROP CONSTRAINT scheduled_trigger_input_is_object, DROP CONSTRAINT scheduled_trigger_options_is_object,
    DROP CONSTRAINT scheduled_trigger_live_cron_has_next, DROP CONSTRAINT scheduled_trigger_cron_iff_type,
    DROP CONSTRAINT scheduled_trigger_action_valid, DROP CONSTRAINT scheduled_trigger_type_valid,
    DROP COLUMN deleted_by, DROP COLUMN deleted_at, DROP COLUMN updated_by, DROP COLUMN updated_at,
    DROP COLUMN created_by, DROP COLUMN feeder_state, DROP COLUMN timezone, DROP COLUMN options, DROP COLUMN action,
    DROP COLUMN trigger_type,
    ALTER COLUMN cron SET NOT NULL,
    ALTER COLUMN target TYPE varchar(63),
    ADD CONSTRAINT scheduled_trigger_enabled_has_next CHECK (NOT enabled OR next_fire_at IS NOT NULL);
ALTER TABLE flowforge.scheduled_trigger RENAME COLUMN target TO workflow_name;
-- The role flowforge_webhook stays: roles are cluster-wide (another database may use it).
