-- FlowForge 0015: the substrate every engine shares (seed 002), and the graph engine's tables.
--
--   engine_run        the run directory: one row per run of any engine
--   work_item         the queue every engine but a DAG task's own attempt claims from
--   agent             registered workers; other tables store the agent's name
--   affinity_binding  a key pinned to an agent; the unique constraint settles races
--   engine            which daemon serves which organization's periodic duties, with a lease
--   graph_run         a graph run: a position, a step count, the run's data
--   graph_step        the walk, one row per step (the seed's path, without rewriting it)
--   graph_visit       visits per node (the seed's run_counts), one counter per node
--   graph_edge        a graph definition's edges, in the order they are tried
--
-- Seed 002's ULIDs are time-ordered UUIDs (flowforge.uuid7()); its kisai.common
-- columns are created_at/created_by, updated_at/updated_by, deleted_at/deleted_by;
-- its epoch-nanosecond columns are timestamptz (docs/data-model.md says why).
-- depends: 0014_validate_bounds

-- Bootstrap: the column defaults below need the function. The post-migrate
-- re-apply of sql/functions/ replaces it with the same text (00_core/30_ids.sql).
DO $$
BEGIN
    IF to_regprocedure('flowforge.uuid7()') IS NULL THEN
        CREATE FUNCTION flowforge.uuid7() RETURNS uuid
        LANGUAGE sql VOLATILE PARALLEL SAFE
        AS $f$
            SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
                          PLACING substring(int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
                          FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid
        $f$;
    END IF;
END;
$$;

ALTER TABLE flowforge.workflow DROP CONSTRAINT workflow_kind_valid,
    ADD CONSTRAINT workflow_kind_valid CHECK (kind IN ('dag', 'graph'));

-- Definition nodes of every kind are task rows: a DAG's tasks, a graph's nodes.
ALTER TABLE flowforge.task
    ADD COLUMN max_visits integer,
    ADD COLUMN is_final boolean NOT NULL DEFAULT false,
    ADD COLUMN affinity text,
    ADD COLUMN affinity_policy varchar(10) NOT NULL DEFAULT 'soft',
    ADD COLUMN worker_params jsonb,
    ADD CONSTRAINT task_max_visits_positive CHECK (max_visits IS NULL OR max_visits >= 1),
    ADD CONSTRAINT task_affinity_policy_valid CHECK (affinity_policy IN ('soft', 'hard')),
    ADD CONSTRAINT task_worker_params_is_object CHECK (worker_params IS NULL OR jsonb_typeof(worker_params) = 'object');

-- A DAG task's selectors and affinity travel with its run rows (the claim reads them).
ALTER TABLE flowforge.task_run
    ADD COLUMN worker_params jsonb,
    ADD COLUMN affinity_key text,
    ADD COLUMN affinity_policy varchar(10),
    ADD CONSTRAINT taskrun_affinity_valid
        CHECK ((affinity_key IS NULL) = (affinity_policy IS NULL) AND (affinity_policy IS NULL OR affinity_policy IN ('soft', 'hard'))),
    ADD CONSTRAINT taskrun_worker_params_is_object CHECK (worker_params IS NULL OR jsonb_typeof(worker_params) = 'object');

-- History of work items shares the event table (workflow_run_id holds the run id of any engine).
ALTER TABLE flowforge.task_run_event ADD COLUMN work_item_id uuid;
CREATE INDEX idx_event_work_item ON flowforge.task_run_event (work_item_id, created_at) WHERE work_item_id IS NOT NULL;

ALTER TABLE flowforge.setting
    ADD COLUMN agent_timeout interval NOT NULL DEFAULT '60 seconds',
    ADD COLUMN duty_lease interval NOT NULL DEFAULT '30 seconds',
    ADD CONSTRAINT setting_agent_timeout_sane CHECK (agent_timeout BETWEEN interval '5 seconds' AND interval '1 day'),
    ADD CONSTRAINT setting_duty_lease_sane CHECK (duty_lease BETWEEN interval '5 seconds' AND interval '1 hour');

CREATE TABLE flowforge.engine_run (
    id                 uuid         NOT NULL DEFAULT flowforge.uuid7(),
    organization_id    uuid         NOT NULL,
    run_id             uuid         NOT NULL,
    engine_kind        varchar(20)  NOT NULL,
    definition_id      uuid,
    parent_run_id      uuid,
    triggered_by       varchar(63),
    trigger_firing_id  uuid,
    ended_at           timestamptz,
    created_at         timestamptz  NOT NULL DEFAULT now(),
    created_by         text         NOT NULL,
    updated_at         timestamptz,
    updated_by         text,
    deleted_at         timestamptz,
    deleted_by         text,
    CONSTRAINT engine_run_pkey PRIMARY KEY (id),
    CONSTRAINT engine_run_organization_fkey FOREIGN KEY (organization_id)
        REFERENCES flowforge.organization (id) ON DELETE RESTRICT,
    CONSTRAINT engine_run_definition_fkey FOREIGN KEY (definition_id)
        REFERENCES flowforge.workflow (id) ON DELETE RESTRICT,
    CONSTRAINT engine_run_tenant_run_uq UNIQUE (organization_id, run_id),
    CONSTRAINT engine_run_kind_valid CHECK (engine_kind IN ('dag', 'graph')),
    CONSTRAINT engine_run_deleted_pair CHECK ((deleted_at IS NULL) = (deleted_by IS NULL)),
    CONSTRAINT engine_run_ended_after_created CHECK (ended_at IS NULL OR ended_at >= created_at)
);
CREATE INDEX engine_run_tenant_created ON flowforge.engine_run (organization_id, created_at DESC, id DESC);
-- A run id alone (the operator's read path does not know the organization;
-- resolve_run_id's prefix range across organizations).
CREATE INDEX engine_run_run_idx ON flowforge.engine_run (run_id);
-- "The last N runs of this workflow (version)", of any engine (list_runs(workflow)).
CREATE INDEX engine_run_definition_recent ON flowforge.engine_run (definition_id, created_at DESC, id DESC);

-- Every DAG run already started gets its directory row.
INSERT INTO flowforge.engine_run (organization_id, run_id, engine_kind, definition_id, ended_at, created_at, created_by)
SELECT r.organization_id, r.id, 'dag', r.workflow_id, r.finished_at, r.created_at, 'migration 0015'
FROM flowforge.workflow_run r;

CREATE TABLE flowforge.graph_run (
    id               uuid         NOT NULL DEFAULT flowforge.uuid7(),
    organization_id  uuid         NOT NULL,
    run_id           uuid         NOT NULL,
    definition_id    uuid         NOT NULL,
    task             varchar(63),
    steps            bigint       NOT NULL DEFAULT 0,
    max_steps        integer      NOT NULL,
    state            jsonb        NOT NULL DEFAULT '{}',
    input            jsonb        NOT NULL DEFAULT '{}',
    status           varchar(20)  NOT NULL,
    reason           text,
    error            text,
    idempotency_key  varchar(200),
    created_at       timestamptz  NOT NULL DEFAULT now(),
    created_by       text         NOT NULL,
    updated_at       timestamptz,
    updated_by       text,
    deleted_at       timestamptz,
    deleted_by       text,
    started_at       timestamptz,
    finished_at      timestamptz,
    CONSTRAINT graph_run_pkey PRIMARY KEY (id),
    CONSTRAINT graph_run_organization_fkey FOREIGN KEY (organization_id)
        REFERENCES flowforge.organization (id) ON DELETE RESTRICT,
    CONSTRAINT graph_run_definition_fkey FOREIGN KEY (definition_id)
        REFERENCES flowforge.workflow (id) ON DELETE RESTRICT,
    CONSTRAINT graph_run_runid_uq UNIQUE (organization_id, run_id),
    CONSTRAINT graph_run_status_valid CHECK (status IN ('running', 'succeeded', 'failed', 'cancelled')),
    CONSTRAINT graph_run_finished_matches_status
        CHECK ((status IN ('succeeded', 'failed', 'cancelled')) = (finished_at IS NOT NULL)),
    CONSTRAINT graph_run_steps_within_max CHECK (steps >= 0 AND max_steps BETWEEN 1 AND 100000 AND steps <= max_steps),
    CONSTRAINT graph_run_state_is_object CHECK (jsonb_typeof(state) = 'object'),
    CONSTRAINT graph_run_input_is_object CHECK (jsonb_typeof(input) = 'object'),
    CONSTRAINT graph_run_deleted_pair CHECK ((deleted_at IS NULL) = (deleted_by IS NULL))
);

CREATE TABLE flowforge.graph_step (
    organization_id  uuid         NOT NULL,
    run_id           uuid         NOT NULL,
    step             bigint       NOT NULL,
    node             varchar(63)  NOT NULL,
    visit            integer      NOT NULL,
    work_item_id     uuid,
    entered_at       timestamptz  NOT NULL,
    CONSTRAINT graph_step_pkey PRIMARY KEY (run_id, step),
    CONSTRAINT graph_step_run_fkey FOREIGN KEY (organization_id, run_id)
        REFERENCES flowforge.graph_run (organization_id, run_id) ON DELETE CASCADE,
    CONSTRAINT graph_step_positive CHECK (step >= 1 AND visit >= 1)
);

CREATE TABLE flowforge.graph_visit (
    organization_id  uuid         NOT NULL,
    run_id           uuid         NOT NULL,
    node             varchar(63)  NOT NULL,
    visits           integer      NOT NULL,
    CONSTRAINT graph_visit_pkey PRIMARY KEY (run_id, node),
    CONSTRAINT graph_visit_run_fkey FOREIGN KEY (organization_id, run_id)
        REFERENCES flowforge.graph_run (organization_id, run_id) ON DELETE CASCADE,
    CONSTRAINT graph_visit_positive CHECK (visits >= 1)
);

CREATE TABLE flowforge.graph_edge (
    organization_id  uuid     NOT NULL,
    workflow_id      uuid     NOT NULL,
    from_task_id     uuid     NOT NULL,
    position         integer  NOT NULL,
    to_task_id       uuid     NOT NULL,
    condition        jsonpath,
    CONSTRAINT graph_edge_pkey PRIMARY KEY (from_task_id, position),
    CONSTRAINT graph_edge_organization_fkey FOREIGN KEY (organization_id)
        REFERENCES flowforge.organization (id) ON DELETE RESTRICT,
    CONSTRAINT graph_edge_workflow_fkey FOREIGN KEY (workflow_id)
        REFERENCES flowforge.workflow (id) ON DELETE CASCADE,
    CONSTRAINT graph_edge_from_fkey FOREIGN KEY (from_task_id) REFERENCES flowforge.task (id) ON DELETE CASCADE,
    CONSTRAINT graph_edge_to_fkey FOREIGN KEY (to_task_id) REFERENCES flowforge.task (id) ON DELETE CASCADE,
    CONSTRAINT graph_edge_position_positive CHECK (position >= 1)
);
-- Serves the cascade when a workflow version is deleted.
CREATE INDEX idx_graph_edge_workflow ON flowforge.graph_edge (workflow_id);

CREATE TABLE flowforge.agent (
    id                  uuid          NOT NULL DEFAULT flowforge.uuid7(),
    organization_id     uuid          NOT NULL,
    name                varchar(200)  NOT NULL,
    http_address        text,
    grpc_address        text,
    infra_address       text,
    agent_version       varchar(100),
    binary_path         text,
    agent_type          varchar(20)   NOT NULL DEFAULT 'remote',
    status              varchar(20)   NOT NULL DEFAULT 'active',
    metrics             jsonb,
    metadata            jsonb         NOT NULL DEFAULT '{}',
    heartbeat_interval  interval,
    last_heartbeat_at   timestamptz,
    last_claim_at       timestamptz,
    created_at          timestamptz   NOT NULL DEFAULT now(),
    created_by          text          NOT NULL,
    updated_at          timestamptz,
    updated_by          text,
    deleted_at          timestamptz,
    deleted_by          text,
    CONSTRAINT agent_pkey PRIMARY KEY (id),
    CONSTRAINT agent_organization_fkey FOREIGN KEY (organization_id)
        REFERENCES flowforge.organization (id) ON DELETE CASCADE,
    CONSTRAINT agent_name_key UNIQUE (organization_id, name),
    CONSTRAINT agent_name_valid CHECK (length(name) BETWEEN 1 AND 200),
    CONSTRAINT agent_status_valid CHECK (status IN ('active', 'draining', 'inactive')),
    CONSTRAINT agent_type_valid CHECK (agent_type IN ('remote', 'local')),
    CONSTRAINT agent_metadata_is_object CHECK (jsonb_typeof(metadata) = 'object'),
    CONSTRAINT agent_metrics_is_object CHECK (metrics IS NULL OR jsonb_typeof(metrics) = 'object'),
    CONSTRAINT agent_heartbeat_interval_sane
        CHECK (heartbeat_interval IS NULL OR heartbeat_interval BETWEEN interval '1 second' AND interval '1 hour'),
    CONSTRAINT agent_deleted_pair CHECK ((deleted_at IS NULL) = (deleted_by IS NULL))
);

CREATE TABLE flowforge.affinity_binding (
    id               uuid          NOT NULL DEFAULT flowforge.uuid7(),
    organization_id  uuid          NOT NULL,
    affinity_key     text          NOT NULL,
    agent_id         varchar(200)  NOT NULL,
    generation       bigint        NOT NULL DEFAULT 1,
    created_at       timestamptz   NOT NULL DEFAULT now(),
    created_by       text          NOT NULL,
    updated_at       timestamptz,
    updated_by       text,
    CONSTRAINT affinity_binding_pkey PRIMARY KEY (id),
    CONSTRAINT affinity_binding_agent_fkey FOREIGN KEY (organization_id, agent_id)
        REFERENCES flowforge.agent (organization_id, name) ON DELETE CASCADE,
    CONSTRAINT affinity_binding_key_uq UNIQUE (organization_id, affinity_key),
    CONSTRAINT affinity_binding_key_valid CHECK (length(affinity_key) BETWEEN 1 AND 1000),
    CONSTRAINT affinity_binding_generation_positive CHECK (generation >= 1)
);
-- What is pinned to an agent: releasing an inactive agent's bindings, list_agents.
CREATE INDEX affinity_binding_agent_idx ON flowforge.affinity_binding (organization_id, agent_id);

CREATE TABLE flowforge.work_item (
    id                   uuid          NOT NULL DEFAULT flowforge.uuid7(),
    organization_id      uuid          NOT NULL,
    engine_id            varchar(200),
    engine_kind          varchar(20)   NOT NULL,
    parent_work_item_id  uuid,
    run_id               uuid          NOT NULL,
    task_id              uuid,
    task_name            varchar(63)   NOT NULL,
    queue                varchar(63)   NOT NULL,
    worker_params        jsonb,
    payload              jsonb         NOT NULL,
    output               jsonb,
    status               varchar(20)   NOT NULL DEFAULT 'pending',
    priority             integer       NOT NULL DEFAULT 0,
    fencing_token        bigint        NOT NULL DEFAULT 0,
    agent_id             varchar(200),
    leased_by            varchar(200),
    dispatched_at        timestamptz,
    completed_at         timestamptz,
    lease_expires_at     timestamptz,
    next_attempt_at      timestamptz   NOT NULL,
    retry_count          integer       NOT NULL DEFAULT 0,
    max_retries          integer       NOT NULL DEFAULT 2,
    backoff              interval      NOT NULL DEFAULT '1 second',
    backoff_factor       numeric       NOT NULL DEFAULT 2,
    max_backoff          interval      NOT NULL DEFAULT '10 minutes',
    timeout              interval,
    affinity_key         text,
    affinity_policy      varchar(10),
    error                text,
    created_at           timestamptz   NOT NULL DEFAULT now(),
    created_by           text          NOT NULL,
    updated_at           timestamptz,
    updated_by           text,
    deleted_at           timestamptz,
    deleted_by           text,
    CONSTRAINT work_item_pkey PRIMARY KEY (id),
    CONSTRAINT work_item_organization_fkey FOREIGN KEY (organization_id)
        REFERENCES flowforge.organization (id) ON DELETE RESTRICT,
    CONSTRAINT work_item_parent_fkey FOREIGN KEY (parent_work_item_id)
        REFERENCES flowforge.work_item (id) ON DELETE CASCADE,
    CONSTRAINT work_item_task_fkey FOREIGN KEY (task_id) REFERENCES flowforge.task (id) ON DELETE RESTRICT,
    CONSTRAINT work_item_status_valid CHECK (status IN ('pending', 'dispatched', 'completed', 'failed', 'cancelled')),
    CONSTRAINT work_item_engine_kind_valid CHECK (engine_kind IN ('dag', 'graph')),
    CONSTRAINT work_item_lease_iff_dispatched CHECK ((status = 'dispatched') = (lease_expires_at IS NOT NULL)),
    CONSTRAINT work_item_completed_at_matches_status
        CHECK ((status IN ('completed', 'failed', 'cancelled')) = (completed_at IS NOT NULL)),
    CONSTRAINT work_item_completed_after_dispatched
        CHECK (completed_at IS NULL OR dispatched_at IS NULL OR completed_at >= dispatched_at),
    CONSTRAINT work_item_retries_valid CHECK (retry_count >= 0 AND max_retries >= 0 AND retry_count <= max_retries),
    CONSTRAINT work_item_fencing_non_negative CHECK (fencing_token >= 0),
    CONSTRAINT work_item_payload_is_object CHECK (jsonb_typeof(payload) = 'object'),
    CONSTRAINT work_item_worker_params_is_object CHECK (worker_params IS NULL OR jsonb_typeof(worker_params) = 'object'),
    CONSTRAINT work_item_affinity_valid
        CHECK ((affinity_key IS NULL) = (affinity_policy IS NULL) AND (affinity_policy IS NULL OR affinity_policy IN ('soft', 'hard'))),
    CONSTRAINT work_item_durations_bounded
        CHECK (backoff BETWEEN interval '0' AND interval '1 day' AND max_backoff BETWEEN backoff AND interval '7 days'
               AND backoff_factor BETWEEN 1 AND 100 AND (timeout IS NULL OR timeout BETWEEN interval '1 microsecond' AND interval '30 days')),
    CONSTRAINT work_item_queue_valid CHECK (queue ~ '^[A-Za-z][A-Za-z0-9_.-]{0,62}$'),
    CONSTRAINT work_item_deleted_pair CHECK ((deleted_at IS NULL) = (deleted_by IS NULL))
) WITH (fillfactor = 80);
CREATE INDEX work_item_status_priority_idx ON flowforge.work_item (organization_id, queue, priority, next_attempt_at)
    WHERE status = 'pending';
CREATE INDEX work_item_ready_by_name_idx ON flowforge.work_item (organization_id, queue, task_name, priority, next_attempt_at)
    WHERE status = 'pending';
CREATE INDEX work_item_lease_idx ON flowforge.work_item (lease_expires_at) WHERE status = 'dispatched';
CREATE INDEX work_item_run_idx ON flowforge.work_item (organization_id, run_id);
CREATE INDEX work_item_parent_idx ON flowforge.work_item (parent_work_item_id) WHERE parent_work_item_id IS NOT NULL;
CREATE INDEX work_item_task_idx ON flowforge.work_item (task_id);

CREATE TABLE flowforge.engine (
    id                uuid          NOT NULL DEFAULT flowforge.uuid7(),
    organization_id   uuid          NOT NULL,
    engine_id         varchar(200)  NOT NULL,
    status            varchar(20)   NOT NULL,
    generation        bigint        NOT NULL DEFAULT 0,
    lease_expires_at  timestamptz,
    heartbeat_at      timestamptz   NOT NULL,
    created_at        timestamptz   NOT NULL DEFAULT now(),
    updated_at        timestamptz,
    CONSTRAINT engine_pkey PRIMARY KEY (id),
    CONSTRAINT engine_organization_fkey FOREIGN KEY (organization_id)
        REFERENCES flowforge.organization (id) ON DELETE CASCADE,
    CONSTRAINT engine_tenant_engine_uq UNIQUE (organization_id, engine_id),
    CONSTRAINT engine_status_valid CHECK (status IN ('serving', 'standby')),
    CONSTRAINT engine_lease_iff_serving CHECK ((status = 'serving') = (lease_expires_at IS NOT NULL)),
    CONSTRAINT engine_generation_non_negative CHECK (generation >= 0),
    CONSTRAINT engine_id_valid CHECK (length(engine_id) BETWEEN 1 AND 200)
);
-- At most one daemon serves an organization's duties at a time; taking over
-- demotes the lapsed holder in the same transaction.
CREATE UNIQUE INDEX engine_one_serving_per_org ON flowforge.engine (organization_id) WHERE status = 'serving';
-- Live daemons (the fair share) and a daemon's own rows.
CREATE INDEX engine_engine_idx ON flowforge.engine (engine_id, heartbeat_at);

-- Private tables, RLS on and forced (as in 0006).
DO $$
DECLARE
    v_table text;
BEGIN
    FOREACH v_table IN ARRAY ARRAY['engine_run', 'graph_run', 'graph_step', 'graph_visit', 'graph_edge', 'agent',
                                   'affinity_binding', 'work_item', 'engine'] LOOP
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
