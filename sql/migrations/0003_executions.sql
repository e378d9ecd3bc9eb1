-- FlowForge 0003: executions — one instantiation of a definition.
-- State changes reach these rows only through single conditional UPDATEs in
-- sql/functions/; the constraints below hold even when those are bypassed.
-- depends: 0002_definitions

CREATE TABLE flowforge.workflow_run (
    id               uuid        NOT NULL DEFAULT gen_random_uuid(),
    organization_id  uuid        NOT NULL,
    workflow_id      uuid        NOT NULL,
    state            varchar(20) NOT NULL DEFAULT 'pending',
    input            jsonb       NOT NULL DEFAULT '{}',
    idempotency_key  varchar(200),
    tasks_total      integer     NOT NULL,
    tasks_remaining  integer     NOT NULL,
    tasks_failed     integer     NOT NULL DEFAULT 0,
    reason           text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    started_at       timestamptz,
    finished_at      timestamptz,
    CONSTRAINT workflow_run_pkey PRIMARY KEY (id),
    CONSTRAINT workflow_run_workflow_fkey FOREIGN KEY (workflow_id)
        REFERENCES flowforge.workflow (id) ON DELETE RESTRICT,
    CONSTRAINT workflow_run_organization_fkey FOREIGN KEY (organization_id)
        REFERENCES flowforge.organization (id) ON DELETE RESTRICT,
    CONSTRAINT wfrun_state_valid
        CHECK (state IN ('pending', 'running', 'succeeded', 'failed', 'cancelled')),
    CONSTRAINT wfrun_finished_at_matches_state
        CHECK ((state IN ('succeeded', 'failed', 'cancelled')) = (finished_at IS NOT NULL)),
    CONSTRAINT wfrun_running_has_started_at
        CHECK (state <> 'running' OR started_at IS NOT NULL),
    CONSTRAINT wfrun_task_counters_valid
        CHECK (tasks_total >= 1 AND tasks_remaining BETWEEN 0 AND tasks_total
               AND tasks_failed BETWEEN 0 AND tasks_total),
    CONSTRAINT wfrun_input_is_object CHECK (jsonb_typeof(input) = 'object')
);
CREATE INDEX idx_wfrun_wf_recent ON flowforge.workflow_run (workflow_id, created_at DESC);
CREATE INDEX idx_wfrun_state_age ON flowforge.workflow_run (state, created_at);
-- `flowforge run list`: an organization's newest runs first.
CREATE INDEX idx_wfrun_org_recent ON flowforge.workflow_run (organization_id, created_at DESC);

CREATE TABLE flowforge.task_run (
    id                uuid        NOT NULL DEFAULT gen_random_uuid(),
    organization_id   uuid        NOT NULL,
    workflow_run_id   uuid        NOT NULL,
    task_id           uuid        NOT NULL,
    task_key          varchar(63) NOT NULL,
    queue             varchar(63) NOT NULL,
    priority          integer     NOT NULL DEFAULT 0,
    state             varchar(20) NOT NULL,
    attempt           integer     NOT NULL DEFAULT 1,
    max_attempts      integer     NOT NULL,
    fencing_token     bigint      NOT NULL DEFAULT 0,
    lease_owner       varchar(200),
    lease_expires_at  timestamptz,
    timeout           interval,
    ready_at          timestamptz,
    remaining_deps    integer     NOT NULL DEFAULT 0,
    output            jsonb,
    error             text,
    created_at        timestamptz NOT NULL DEFAULT now(),
    started_at        timestamptz,
    finished_at       timestamptz,
    CONSTRAINT task_run_pkey PRIMARY KEY (id),
    CONSTRAINT task_run_workflow_run_fkey FOREIGN KEY (workflow_run_id)
        REFERENCES flowforge.workflow_run (id) ON DELETE CASCADE,
    CONSTRAINT task_run_task_fkey FOREIGN KEY (task_id)
        REFERENCES flowforge.task (id) ON DELETE RESTRICT,
    CONSTRAINT task_run_organization_fkey FOREIGN KEY (organization_id)
        REFERENCES flowforge.organization (id) ON DELETE RESTRICT,
    CONSTRAINT uniq_taskrun_per_run_task UNIQUE (workflow_run_id, task_id),
    CONSTRAINT taskrun_state_valid
        CHECK (state IN ('pending', 'ready', 'running', 'succeeded', 'failed', 'cancelled', 'skipped')),
    CONSTRAINT taskrun_attempt_positive CHECK (attempt >= 1),
    CONSTRAINT taskrun_attempt_within_max CHECK (attempt <= max_attempts),
    CONSTRAINT taskrun_fencing_non_negative CHECK (fencing_token >= 0),
    CONSTRAINT taskrun_finished_after_started
        CHECK (finished_at IS NULL OR started_at IS NULL OR finished_at >= started_at),
    CONSTRAINT taskrun_lease_iff_running
        CHECK ((state = 'running') = (lease_expires_at IS NOT NULL)),
    CONSTRAINT taskrun_finished_at_matches_state
        CHECK ((state IN ('succeeded', 'failed', 'cancelled', 'skipped')) = (finished_at IS NOT NULL)),
    CONSTRAINT taskrun_ready_has_ready_at CHECK (state <> 'ready' OR ready_at IS NOT NULL),
    CONSTRAINT taskrun_remaining_deps_non_negative CHECK (remaining_deps >= 0),
    CONSTRAINT taskrun_pending_waits_on_deps CHECK (state <> 'pending' OR remaining_deps > 0)
) WITH (fillfactor = 80);
-- The claim: "ready tasks of these queues whose time has come, highest priority,
-- then longest ready" — reshaped from the seed's (state, created_at); see
-- docs/data-model.md. Partial, so it stays proportional to the ready backlog.
CREATE INDEX idx_taskrun_state_age ON flowforge.task_run
    (organization_id, queue, priority DESC, ready_at) WHERE state = 'ready';
CREATE INDEX idx_taskrun_run_state ON flowforge.task_run (workflow_run_id, state);
CREATE INDEX idx_taskrun_lease_expiry ON flowforge.task_run (lease_expires_at) WHERE state = 'running';
-- Serves the RESTRICT check when a definition's task is deleted.
CREATE INDEX idx_taskrun_task ON flowforge.task_run (task_id);

CREATE TABLE flowforge.idempotency_key (
    organization_id  uuid         NOT NULL,
    key              varchar(200) NOT NULL,
    workflow_run_id  uuid         NOT NULL,
    request_hash     text         NOT NULL,
    created_at       timestamptz  NOT NULL DEFAULT now(),
    CONSTRAINT idempotency_key_pkey PRIMARY KEY (organization_id, key),
    -- Deferred: start_run claims the key before it inserts the run it names.
    CONSTRAINT idempotency_key_run_fkey FOREIGN KEY (workflow_run_id)
        REFERENCES flowforge.workflow_run (id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
    CONSTRAINT idempotency_key_organization_fkey FOREIGN KEY (organization_id)
        REFERENCES flowforge.organization (id) ON DELETE CASCADE,
    CONSTRAINT idempotency_key_not_blank CHECK (length(key) >= 1)
);
-- Serves the cascade when a run is deleted.
CREATE INDEX idx_idempotency_run ON flowforge.idempotency_key (workflow_run_id);

CREATE TABLE flowforge.outbox_message (
    id                      uuid         NOT NULL DEFAULT gen_random_uuid(),
    organization_id         uuid         NOT NULL,
    task_run_id             uuid         NOT NULL,
    workflow_run_id         uuid         NOT NULL,
    exchange                varchar(255) NOT NULL,
    routing_key             varchar(255) NOT NULL,
    payload                 jsonb        NOT NULL,
    fencing_token_snapshot  bigint       NOT NULL,
    attempt_snapshot        integer      NOT NULL,
    published_at            timestamptz,
    created_at              timestamptz  NOT NULL DEFAULT now(),
    CONSTRAINT outbox_message_pkey PRIMARY KEY (id),
    CONSTRAINT outbox_message_task_run_fkey FOREIGN KEY (task_run_id)
        REFERENCES flowforge.task_run (id) ON DELETE CASCADE,
    CONSTRAINT outbox_message_workflow_run_fkey FOREIGN KEY (workflow_run_id)
        REFERENCES flowforge.workflow_run (id) ON DELETE CASCADE,
    CONSTRAINT outbox_message_organization_fkey FOREIGN KEY (organization_id)
        REFERENCES flowforge.organization (id) ON DELETE RESTRICT,
    CONSTRAINT uniq_outbox_per_taskrun_generation UNIQUE (task_run_id, fencing_token_snapshot),
    CONSTRAINT outbox_payload_is_object CHECK (jsonb_typeof(payload) = 'object')
);
CREATE INDEX idx_outbox_pending ON flowforge.outbox_message (created_at) WHERE published_at IS NULL;
-- Serves the cascade when a run is deleted.
CREATE INDEX idx_outbox_run ON flowforge.outbox_message (workflow_run_id);

-- History: one row per transition, appended in the transaction that made it.
-- No foreign keys on purpose: history must outlive a purge of the runs it
-- describes and be partitionable by time, and a key check on every transition
-- would take a FOR KEY SHARE lock on the one organization row that every
-- worker of the tenant shares (docs/data-model.md).
CREATE TABLE flowforge.task_run_event (
    id               uuid        NOT NULL DEFAULT gen_random_uuid(),
    seq              bigint      GENERATED ALWAYS AS IDENTITY,
    organization_id  uuid        NOT NULL,
    workflow_run_id  uuid        NOT NULL,
    task_run_id      uuid,
    kind             varchar(30) NOT NULL,
    from_state       varchar(20),
    to_state         varchar(20),
    fencing_token    bigint,
    attempt          integer,
    detail           jsonb,
    created_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT task_run_event_pkey PRIMARY KEY (id),
    CONSTRAINT event_kind_valid CHECK (kind ~ '^[a-z_]{1,30}$')
);
CREATE INDEX idx_event_taskrun_created ON flowforge.task_run_event (task_run_id, created_at);
-- Run-level events (task_run_id IS NULL: run created, cancelled, finished, retried).
CREATE INDEX idx_event_run_level ON flowforge.task_run_event (workflow_run_id, created_at)
    WHERE task_run_id IS NULL;
