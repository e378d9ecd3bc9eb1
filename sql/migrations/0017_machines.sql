-- FlowForge 0017: the state-machine engine (seed 002's machine_run).
-- "A machine rests between events, so a run is a state and what it carries."
--
--   machine_run          the run: state, context, status (live and suspended derived),
--                        failure, reason, a transition counter (compare-and-set for timers)
--   machine_transition   the history, one row per transition, refusal or stop, append-only
--                        (the seed's history column, without rewriting it per event)
--   machine_event_queue  events that arrived while the machine was suspended, in arrival order
--   machine_event_seen   one row per (run, event id): a redelivered event is a key lookup
--   machine_timer        the "after" timers of the state a machine rests in
-- A state is a task row of its definition (its action's queue, retries,
-- timeout...), with the state's normalized spec in task.spec.
-- depends: 0016_lower_priority_first

ALTER TABLE flowforge.workflow DROP CONSTRAINT workflow_kind_valid,
    ADD CONSTRAINT workflow_kind_valid CHECK (kind IN ('dag', 'graph', 'statemachine'));
ALTER TABLE flowforge.engine_run DROP CONSTRAINT engine_run_kind_valid,
    ADD CONSTRAINT engine_run_kind_valid CHECK (engine_kind IN ('dag', 'graph', 'statemachine'));
ALTER TABLE flowforge.work_item DROP CONSTRAINT work_item_engine_kind_valid,
    ADD CONSTRAINT work_item_engine_kind_valid CHECK (engine_kind IN ('dag', 'graph', 'statemachine'));
ALTER TABLE flowforge.task ADD COLUMN spec jsonb,
    ADD CONSTRAINT task_spec_is_object CHECK (spec IS NULL OR jsonb_typeof(spec) = 'object');

CREATE TABLE flowforge.machine_run (
    id               uuid         NOT NULL DEFAULT flowforge.uuid7(),
    organization_id  uuid         NOT NULL,
    run_id           uuid         NOT NULL,
    definition_id    uuid         NOT NULL,
    state            varchar(63)  NOT NULL,
    context          jsonb        NOT NULL DEFAULT '{}',
    status           varchar(20)  NOT NULL,
    -- The seed's live and suspended, derived so they can never disagree with
    -- the status and the action they summarise.
    live             boolean      GENERATED ALWAYS AS (status = 'running') STORED,
    suspended        boolean      GENERATED ALWAYS AS (action_item_id IS NOT NULL) STORED,
    failure          text,
    reason           text,
    transitions      bigint       NOT NULL DEFAULT 0,
    history_length   bigint       NOT NULL DEFAULT 0,
    next_event_seq   bigint       NOT NULL DEFAULT 1,
    action_item_id   uuid,
    input            jsonb        NOT NULL DEFAULT '{}',
    idempotency_key  varchar(200),
    created_at       timestamptz  NOT NULL DEFAULT now(),
    created_by       text         NOT NULL,
    updated_at       timestamptz,
    updated_by       text,
    deleted_at       timestamptz,
    deleted_by       text,
    started_at       timestamptz  NOT NULL,
    finished_at      timestamptz,
    CONSTRAINT machine_run_pkey PRIMARY KEY (id),
    CONSTRAINT machine_run_organization_fkey FOREIGN KEY (organization_id)
        REFERENCES flowforge.organization (id) ON DELETE RESTRICT,
    CONSTRAINT machine_run_definition_fkey FOREIGN KEY (definition_id)
        REFERENCES flowforge.workflow (id) ON DELETE RESTRICT,
    CONSTRAINT machine_run_runid_uq UNIQUE (organization_id, run_id),
    CONSTRAINT machine_run_status_valid CHECK (status IN ('running', 'succeeded', 'failed', 'cancelled')),
    CONSTRAINT machine_run_finished_matches_status CHECK ((status = 'running') = (finished_at IS NULL)),
    CONSTRAINT machine_run_action_only_running CHECK (action_item_id IS NULL OR status = 'running'),
    CONSTRAINT machine_run_failure_only_failed CHECK (failure IS NULL OR status = 'failed'),
    CONSTRAINT machine_run_context_is_object CHECK (jsonb_typeof(context) = 'object'),
    CONSTRAINT machine_run_input_is_object CHECK (jsonb_typeof(input) = 'object'),
    CONSTRAINT machine_run_counters_valid CHECK (transitions >= 0 AND history_length >= 0 AND next_event_seq >= 1),
    CONSTRAINT machine_run_deleted_pair CHECK ((deleted_at IS NULL) = (deleted_by IS NULL))
);

-- One row per entry of the history: a state entered (by the start, an event,
-- a timer, an action's end, a retry), an event refused after waiting in the
-- queue, the run stopped (cancelled, failed). n is the run's history_length.
CREATE TABLE flowforge.machine_transition (
    organization_id  uuid         NOT NULL,
    run_id           uuid         NOT NULL,
    n                bigint       NOT NULL,
    cause            varchar(20)  NOT NULL,
    outcome          varchar(20)  NOT NULL,
    event            varchar(200),
    event_id         varchar(200),
    payload          jsonb,
    from_state       varchar(63),
    to_state         varchar(63),
    detail           jsonb,
    created_at       timestamptz  NOT NULL,
    CONSTRAINT machine_transition_pkey PRIMARY KEY (run_id, n),
    CONSTRAINT machine_transition_cause_valid
        CHECK (cause IN ('start', 'event', 'timer', 'action_done', 'action_error', 'cancel', 'retry')),
    CONSTRAINT machine_transition_outcome_valid CHECK (outcome IN ('entered', 'refused', 'stopped')),
    CONSTRAINT machine_transition_event_named CHECK ((cause = 'event') = (event IS NOT NULL)),
    CONSTRAINT machine_transition_entered_has_target CHECK (outcome <> 'entered' OR to_state IS NOT NULL),
    CONSTRAINT machine_transition_n_positive CHECK (n >= 1)
);
-- No foreign key, like task_run_event: history outlives purges and is partitionable.
CREATE TRIGGER machine_transition_append_only
    BEFORE UPDATE OR DELETE ON flowforge.machine_transition
    FOR EACH ROW EXECUTE FUNCTION flowforge.refuse_history_change();
CREATE TRIGGER machine_transition_no_truncate
    BEFORE TRUNCATE ON flowforge.machine_transition
    FOR EACH STATEMENT EXECUTE FUNCTION flowforge.refuse_history_change();
ALTER TABLE flowforge.machine_transition ENABLE ALWAYS TRIGGER machine_transition_append_only;
ALTER TABLE flowforge.machine_transition ENABLE ALWAYS TRIGGER machine_transition_no_truncate;

CREATE TABLE flowforge.machine_event_queue (
    organization_id  uuid          NOT NULL,
    run_id           uuid          NOT NULL,
    seq              bigint        NOT NULL,
    event            varchar(200)  NOT NULL,
    payload          jsonb         NOT NULL DEFAULT '{}',
    event_id         varchar(200),
    received_at      timestamptz   NOT NULL,
    CONSTRAINT machine_event_queue_pkey PRIMARY KEY (run_id, seq),
    CONSTRAINT machine_event_queue_run_fkey FOREIGN KEY (organization_id, run_id)
        REFERENCES flowforge.machine_run (organization_id, run_id) ON DELETE CASCADE,
    CONSTRAINT machine_event_queue_seq_positive CHECK (seq >= 1)
);

CREATE TABLE flowforge.machine_event_seen (
    organization_id  uuid          NOT NULL,
    run_id           uuid          NOT NULL,
    event_id         varchar(200)  NOT NULL,
    seen_at          timestamptz   NOT NULL,
    CONSTRAINT machine_event_seen_pkey PRIMARY KEY (run_id, event_id),
    CONSTRAINT machine_event_seen_run_fkey FOREIGN KEY (organization_id, run_id)
        REFERENCES flowforge.machine_run (organization_id, run_id) ON DELETE CASCADE,
    CONSTRAINT machine_event_seen_id_valid CHECK (length(event_id) BETWEEN 1 AND 200)
);

CREATE TABLE flowforge.machine_timer (
    id               uuid         NOT NULL DEFAULT flowforge.uuid7(),
    organization_id  uuid         NOT NULL,
    run_id           uuid         NOT NULL,
    entered          bigint       NOT NULL,
    position         integer      NOT NULL,
    target           varchar(63)  NOT NULL,
    delay            interval     NOT NULL,
    fire_at          timestamptz  NOT NULL,
    CONSTRAINT machine_timer_pkey PRIMARY KEY (id),
    CONSTRAINT machine_timer_run_fkey FOREIGN KEY (organization_id, run_id)
        REFERENCES flowforge.machine_run (organization_id, run_id) ON DELETE CASCADE,
    CONSTRAINT machine_timer_one_per_entry UNIQUE (run_id, entered, position),
    CONSTRAINT machine_timer_delay_positive CHECK (delay > interval '0')
);
-- The timer duty: due timers, oldest first.
CREATE INDEX machine_timer_due_idx ON flowforge.machine_timer (fire_at);

DO $$
DECLARE
    v_table text;
BEGIN
    FOREACH v_table IN ARRAY ARRAY['machine_run', 'machine_transition', 'machine_event_queue', 'machine_event_seen',
                                   'machine_timer'] LOOP
        EXECUTE format('ALTER TABLE flowforge.%I OWNER TO flowforge_owner', v_table);
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON flowforge.%I TO flowforge_system', v_table);
        EXECUTE format('GRANT SELECT ON flowforge.%I TO flowforge_readonly', v_table);
        EXECUTE format('ALTER TABLE flowforge.%I ENABLE ROW LEVEL SECURITY', v_table);
        EXECUTE format('ALTER TABLE flowforge.%I FORCE ROW LEVEL SECURITY', v_table);
        EXECUTE format('CREATE POLICY system_all ON flowforge.%I AS PERMISSIVE FOR ALL TO flowforge_system '
                       'USING (true) WITH CHECK (true)', v_table);
        EXECUTE format('CREATE POLICY readonly_select ON flowforge.%I AS PERMISSIVE FOR SELECT TO flowforge_readonly '
                       'USING (true)', v_table);
        EXECUTE format('CREATE POLICY tenant_isolation ON flowforge.%I AS PERMISSIVE FOR ALL TO flowforge_owner '
                       'USING (organization_id = (SELECT flowforge.current_organization())) '
                       'WITH CHECK (organization_id = (SELECT flowforge.current_organization()))', v_table);
    END LOOP;
END;
$$;
