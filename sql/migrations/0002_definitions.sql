-- FlowForge 0002: definitions — the template half of the model.
-- A definition row is immutable once written: a changed spec is a new version,
-- so "which definition did run X execute?" stays answerable forever.
-- depends: 0001_tenancy

CREATE TABLE flowforge.workflow (
    id               uuid        NOT NULL DEFAULT gen_random_uuid(),
    organization_id  uuid        NOT NULL,
    name             varchar(63) NOT NULL,
    version          integer     NOT NULL,
    kind             varchar(20) NOT NULL DEFAULT 'dag',
    spec             jsonb       NOT NULL,
    content_hash     text        NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT workflow_pkey PRIMARY KEY (id),
    CONSTRAINT workflow_organization_fkey FOREIGN KEY (organization_id)
        REFERENCES flowforge.organization (id) ON DELETE RESTRICT,
    CONSTRAINT uniq_workflow_name_version UNIQUE (organization_id, name, version),
    CONSTRAINT workflow_version_positive CHECK (version >= 1),
    CONSTRAINT workflow_kind_valid CHECK (kind IN ('dag')),
    CONSTRAINT workflow_name_valid CHECK (name ~ '^[A-Za-z][A-Za-z0-9_-]{0,62}$')
);

CREATE TABLE flowforge.task (
    id                uuid        NOT NULL DEFAULT gen_random_uuid(),
    organization_id   uuid        NOT NULL,
    workflow_id       uuid        NOT NULL,
    key               varchar(63) NOT NULL,
    queue             varchar(63) NOT NULL DEFAULT 'default',
    priority          integer     NOT NULL DEFAULT 0,
    max_attempts      integer     NOT NULL DEFAULT 3,
    backoff           interval    NOT NULL DEFAULT '1 second',
    backoff_factor    numeric     NOT NULL DEFAULT 2,
    max_backoff       interval    NOT NULL DEFAULT '10 minutes',
    timeout           interval,
    dependency_count  integer     NOT NULL DEFAULT 0,
    created_at        timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT task_pkey PRIMARY KEY (id),
    CONSTRAINT task_workflow_fkey FOREIGN KEY (workflow_id)
        REFERENCES flowforge.workflow (id) ON DELETE CASCADE,
    CONSTRAINT task_organization_fkey FOREIGN KEY (organization_id)
        REFERENCES flowforge.organization (id) ON DELETE RESTRICT,
    CONSTRAINT uniq_task_workflow_key UNIQUE (workflow_id, key),
    CONSTRAINT task_key_valid CHECK (key ~ '^[A-Za-z][A-Za-z0-9_-]{0,62}$'),
    CONSTRAINT task_queue_valid CHECK (queue ~ '^[A-Za-z][A-Za-z0-9_.-]{0,62}$'),
    CONSTRAINT task_max_attempts_positive CHECK (max_attempts >= 1),
    CONSTRAINT task_backoff_non_negative CHECK (backoff >= interval '0'),
    CONSTRAINT task_backoff_factor_sane CHECK (backoff_factor >= 1 AND backoff_factor <= 100),
    CONSTRAINT task_max_backoff_covers_backoff CHECK (max_backoff >= backoff),
    CONSTRAINT task_timeout_positive CHECK (timeout IS NULL OR timeout > interval '0'),
    CONSTRAINT task_dependency_count_non_negative CHECK (dependency_count >= 0)
);

-- The DAG edges: task_id runs after depends_on_task_id succeeded.
CREATE TABLE flowforge.task_dependency (
    organization_id     uuid NOT NULL,
    workflow_id         uuid NOT NULL,
    task_id             uuid NOT NULL,
    depends_on_task_id  uuid NOT NULL,
    CONSTRAINT task_dependency_pkey PRIMARY KEY (task_id, depends_on_task_id),
    CONSTRAINT task_dependency_organization_fkey FOREIGN KEY (organization_id)
        REFERENCES flowforge.organization (id) ON DELETE RESTRICT,
    CONSTRAINT task_dependency_workflow_fkey FOREIGN KEY (workflow_id)
        REFERENCES flowforge.workflow (id) ON DELETE CASCADE,
    CONSTRAINT task_dependency_task_fkey FOREIGN KEY (task_id)
        REFERENCES flowforge.task (id) ON DELETE CASCADE,
    CONSTRAINT task_dependency_depends_on_fkey FOREIGN KEY (depends_on_task_id)
        REFERENCES flowforge.task (id) ON DELETE CASCADE,
    CONSTRAINT task_dependency_not_self CHECK (task_id <> depends_on_task_id)
);
-- Completing a task releases its dependents: "which tasks wait on this one?"
CREATE INDEX idx_taskdep_depends_on ON flowforge.task_dependency (depends_on_task_id);
-- Serves the cascade when a workflow version is deleted.
CREATE INDEX idx_taskdep_workflow ON flowforge.task_dependency (workflow_id);

CREATE TABLE flowforge.scheduled_trigger (
    id               uuid        NOT NULL DEFAULT gen_random_uuid(),
    organization_id  uuid        NOT NULL,
    workflow_name    varchar(63) NOT NULL,
    name             varchar(63) NOT NULL,
    cron             text        NOT NULL,
    input            jsonb       NOT NULL DEFAULT '{}',
    enabled          boolean     NOT NULL DEFAULT true,
    next_fire_at     timestamptz,
    last_fired_at    timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT scheduled_trigger_pkey PRIMARY KEY (id),
    CONSTRAINT scheduled_trigger_organization_fkey FOREIGN KEY (organization_id)
        REFERENCES flowforge.organization (id) ON DELETE CASCADE,
    CONSTRAINT uniq_scheduled_trigger_org_name UNIQUE (organization_id, name),
    CONSTRAINT scheduled_trigger_enabled_has_next CHECK (NOT enabled OR next_fire_at IS NOT NULL)
);
-- tick(): "which enabled triggers are due?" — proportional to enabled triggers only.
CREATE INDEX idx_trigger_due ON flowforge.scheduled_trigger (next_fire_at) WHERE enabled;
