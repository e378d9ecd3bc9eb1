-- FlowForge 0022: triggers — cron, webhook, gitpoll, filesystem — and the
-- append-only firing log (seed 002's trigger_firing).
--
--   scheduled_trigger  seed 000's cron table becomes the general trigger table: one
--                      table answers "which triggers exist" (docs/data-model.md says why);
--                      cron columns stay for cron triggers, NULL for the others
--   trigger_secret     a webhook trigger's HMAC key: no read returns it, no runtime role
--                      or DBA read role may select it
--   trigger_firing     what a trigger sent and what became of it, one row per firing,
--                      written once after the outcome is known; refused ones included
--   flowforge_webhook  the role of the HTTP receiver: it may call receive_webhook only
-- Constraints on the existing table are added NOT VALID; 0023 validates them
-- and swaps the name key for one that frees a dropped trigger's name, CONCURRENTLY.
-- depends: 0021_fanout_indexes

LOCK TABLE pg_catalog.pg_authid, pg_catalog.pg_auth_members IN SHARE ROW EXCLUSIVE MODE;
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'flowforge_webhook') THEN
        CREATE ROLE flowforge_webhook NOLOGIN;
    END IF;
END;
$$;
ALTER ROLE flowforge_webhook SET statement_timeout = '30s';
ALTER ROLE flowforge_webhook SET lock_timeout = '5s';
ALTER ROLE flowforge_webhook SET idle_in_transaction_session_timeout = '30s';

ALTER TABLE flowforge.scheduled_trigger RENAME COLUMN workflow_name TO target;
ALTER TABLE flowforge.scheduled_trigger
    ALTER COLUMN target TYPE varchar(200),
    ALTER COLUMN cron DROP NOT NULL,
    ADD COLUMN trigger_type  varchar(20)  NOT NULL DEFAULT 'cron',
    ADD COLUMN action        varchar(10)  NOT NULL DEFAULT 'start',
    ADD COLUMN options       jsonb        NOT NULL DEFAULT '{}',
    ADD COLUMN timezone      text         NOT NULL DEFAULT 'UTC',
    ADD COLUMN feeder_state  jsonb,
    ADD COLUMN created_by    text,
    ADD COLUMN updated_at    timestamptz,
    ADD COLUMN updated_by    text,
    ADD COLUMN deleted_at    timestamptz,
    ADD COLUMN deleted_by    text,
    DROP CONSTRAINT scheduled_trigger_enabled_has_next,
    ADD CONSTRAINT scheduled_trigger_type_valid
        CHECK (trigger_type IN ('cron', 'webhook', 'gitpoll', 'filesystem')) NOT VALID,
    ADD CONSTRAINT scheduled_trigger_action_valid CHECK (action IN ('start', 'signal')) NOT VALID,
    ADD CONSTRAINT scheduled_trigger_cron_iff_type CHECK ((trigger_type = 'cron') = (cron IS NOT NULL)) NOT VALID,
    ADD CONSTRAINT scheduled_trigger_live_cron_has_next
        CHECK (NOT enabled OR deleted_at IS NOT NULL OR trigger_type <> 'cron' OR next_fire_at IS NOT NULL) NOT VALID,
    ADD CONSTRAINT scheduled_trigger_options_is_object CHECK (jsonb_typeof(options) = 'object') NOT VALID,
    ADD CONSTRAINT scheduled_trigger_input_is_object CHECK (jsonb_typeof(input) = 'object') NOT VALID,
    ADD CONSTRAINT scheduled_trigger_name_valid CHECK (name ~ '^[A-Za-z][A-Za-z0-9_.-]{0,62}$') NOT VALID,
    ADD CONSTRAINT scheduled_trigger_deleted_pair CHECK ((deleted_at IS NULL) = (deleted_by IS NULL)) NOT VALID;
-- A cron trigger's schedule as seed 000 had it: every row so far is one.
UPDATE flowforge.scheduled_trigger SET created_by = 'migration 0022' WHERE created_by IS NULL;
ALTER TABLE flowforge.scheduled_trigger ALTER COLUMN created_by SET NOT NULL;

CREATE TABLE flowforge.trigger_secret (
    trigger_id       uuid         NOT NULL,
    organization_id  uuid         NOT NULL,
    secret           bytea        NOT NULL,
    created_at       timestamptz  NOT NULL DEFAULT now(),
    CONSTRAINT trigger_secret_pkey PRIMARY KEY (trigger_id),
    CONSTRAINT trigger_secret_trigger_fkey FOREIGN KEY (trigger_id)
        REFERENCES flowforge.scheduled_trigger (id) ON DELETE CASCADE,
    CONSTRAINT trigger_secret_length CHECK (octet_length(secret) BETWEEN 16 AND 1024)
);

CREATE TABLE flowforge.trigger_firing (
    id               uuid          NOT NULL DEFAULT flowforge.uuid7(),
    organization_id  uuid          NOT NULL,
    trigger_id       uuid,
    trigger_name     varchar(63)   NOT NULL,
    trigger_type     varchar(20),
    payload          jsonb,
    action           varchar(10),
    definition_id    uuid,
    event            varchar(200),
    run_id           uuid,
    outcome          varchar(20)   NOT NULL,
    error            text,
    fired_on         timestamptz   NOT NULL,
    recorded_at      timestamptz   NOT NULL,
    delivery_id      varchar(200),
    created_by       text          NOT NULL,
    CONSTRAINT trigger_firing_pkey PRIMARY KEY (id),
    CONSTRAINT trigger_firing_outcome_valid CHECK (outcome IN ('started', 'signalled', 'refused', 'failed')),
    -- What it started or moved; empty when it did nothing.
    CONSTRAINT trigger_firing_run_iff_acted CHECK ((outcome IN ('started', 'signalled')) = (run_id IS NOT NULL)),
    CONSTRAINT trigger_firing_error_iff_not_acted CHECK ((outcome IN ('refused', 'failed')) = (error IS NOT NULL)),
    CONSTRAINT trigger_firing_action_valid CHECK (action IS NULL OR action IN ('start', 'signal')),
    CONSTRAINT trigger_firing_delivery_id_valid CHECK (delivery_id IS NULL OR length(delivery_id) >= 1)
);
-- "What has fired here lately" (the organization's newest firings).
CREATE INDEX trigger_firing_tenant_fired ON flowforge.trigger_firing (organization_id, fired_on DESC, id DESC);
-- "Everything this trigger has done".
CREATE INDEX trigger_firing_tenant_trigger ON flowforge.trigger_firing (organization_id, trigger_name, fired_on DESC, id DESC);
-- The reverse walk: which firing started or moved this run.
CREATE INDEX trigger_firing_run ON flowforge.trigger_firing (run_id) WHERE run_id IS NOT NULL;
-- The seed's second tracing query: the firings that caused nothing, newest first.
CREATE INDEX trigger_firing_caused_nothing ON flowforge.trigger_firing (fired_on DESC) WHERE outcome IN ('refused', 'failed');
-- One firing per delivery of a trigger: a redelivered webhook, a cron slot, a file, a commit.
CREATE UNIQUE INDEX trigger_firing_delivery_uq ON flowforge.trigger_firing (trigger_id, delivery_id)
    WHERE trigger_id IS NOT NULL AND delivery_id IS NOT NULL;
-- No foreign keys, like task_run_event: a firing outlives its trigger and its run.
CREATE TRIGGER trigger_firing_append_only
    BEFORE UPDATE OR DELETE ON flowforge.trigger_firing
    FOR EACH ROW EXECUTE FUNCTION flowforge.refuse_history_change();
CREATE TRIGGER trigger_firing_no_truncate
    BEFORE TRUNCATE ON flowforge.trigger_firing
    FOR EACH STATEMENT EXECUTE FUNCTION flowforge.refuse_history_change();
ALTER TABLE flowforge.trigger_firing ENABLE ALWAYS TRIGGER trigger_firing_append_only;
ALTER TABLE flowforge.trigger_firing ENABLE ALWAYS TRIGGER trigger_firing_no_truncate;

DO $$
DECLARE
    v_table text;
BEGIN
    FOREACH v_table IN ARRAY ARRAY['trigger_secret', 'trigger_firing'] LOOP
        EXECUTE format('ALTER TABLE flowforge.%I OWNER TO flowforge_owner', v_table);
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON flowforge.%I TO flowforge_system', v_table);
        EXECUTE format('ALTER TABLE flowforge.%I ENABLE ROW LEVEL SECURITY', v_table);
        EXECUTE format('ALTER TABLE flowforge.%I FORCE ROW LEVEL SECURITY', v_table);
        EXECUTE format('CREATE POLICY system_all ON flowforge.%I AS PERMISSIVE FOR ALL TO flowforge_system '
                       'USING (true) WITH CHECK (true)', v_table);
        EXECUTE format('CREATE POLICY tenant_isolation ON flowforge.%I AS PERMISSIVE FOR ALL TO flowforge_owner '
                       'USING (organization_id = (SELECT flowforge.current_organization())) '
                       'WITH CHECK (organization_id = (SELECT flowforge.current_organization()))', v_table);
    END LOOP;
END;
$$;
-- The DBA read role reads firings (payloads included: it reads every table), never secrets.
GRANT SELECT ON flowforge.trigger_firing TO flowforge_readonly;
CREATE POLICY readonly_select ON flowforge.trigger_firing AS PERMISSIVE FOR SELECT TO flowforge_readonly USING (true);
