-- FlowForge 0005: per-queue delivery settings.
-- A queue with no row, or a row with exchange NULL, is pull: workers claim.
-- A queue with an exchange is push: tasks are dispatched through the outbox.
-- depends: 0004_append_only

CREATE TABLE flowforge.queue (
    organization_id  uuid         NOT NULL,
    name             varchar(63)  NOT NULL,
    exchange         varchar(255),
    routing_key      varchar(255),
    dispatch_lease   interval     NOT NULL DEFAULT '5 minutes',
    created_at       timestamptz  NOT NULL DEFAULT now(),
    updated_at       timestamptz  NOT NULL DEFAULT now(),
    CONSTRAINT queue_pkey PRIMARY KEY (organization_id, name),
    CONSTRAINT queue_organization_fkey FOREIGN KEY (organization_id)
        REFERENCES flowforge.organization (id) ON DELETE CASCADE,
    CONSTRAINT queue_name_valid CHECK (name ~ '^[A-Za-z][A-Za-z0-9_.-]{0,62}$'),
    CONSTRAINT queue_exchange_valid CHECK (exchange IS NULL OR exchange ~ '^[A-Za-z0-9_.:-]{1,255}$'),
    CONSTRAINT queue_routing_key_needs_exchange CHECK (routing_key IS NULL OR exchange IS NOT NULL),
    CONSTRAINT queue_dispatch_lease_sane CHECK (dispatch_lease BETWEEN interval '1 second' AND interval '1 day')
);
-- tick(): "which queues are push?" — a handful of rows, read on every dispatch sweep.
CREATE INDEX idx_queue_push ON flowforge.queue (organization_id, name) WHERE exchange IS NOT NULL;
