-- FlowForge 0001: the schema and its tenants.
-- Every tenant row in later migrations carries organization_id NOT NULL
-- (referencing organization(id), except the append-only event history — see
-- 0003): this is a new system, so there is no backfill window and no NULL
-- organization.

CREATE SCHEMA flowforge;
COMMENT ON SCHEMA flowforge IS
  'FlowForge workflow orchestrator. Tables are private: applications call the API functions; DBAs read tables and views.';

CREATE TABLE flowforge.organization (
    id          uuid        NOT NULL DEFAULT gen_random_uuid(),
    slug        varchar(63) NOT NULL,
    name        text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT organization_pkey PRIMARY KEY (id),
    CONSTRAINT uniq_organization_slug UNIQUE (slug),
    CONSTRAINT organization_slug_valid CHECK (slug ~ '^[a-z][a-z0-9-]{0,62}$'),
    CONSTRAINT organization_name_not_blank CHECK (length(btrim(name)) BETWEEN 1 AND 200)
);

-- The built-in organization single-tenant users live in without knowing it.
-- Its id is fixed so flowforge.current_organization() can name it without a lookup.
INSERT INTO flowforge.organization (id, slug, name)
VALUES ('00000000-0000-0000-0000-000000000001', 'default', 'Default organization');

CREATE TABLE flowforge.membership (
    id               uuid        NOT NULL DEFAULT gen_random_uuid(),
    organization_id  uuid        NOT NULL,
    member           name        NOT NULL,
    role             varchar(20) NOT NULL DEFAULT 'member',
    created_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT membership_pkey PRIMARY KEY (id),
    CONSTRAINT membership_organization_fkey FOREIGN KEY (organization_id)
        REFERENCES flowforge.organization (id) ON DELETE CASCADE,
    CONSTRAINT uniq_membership_org_member UNIQUE (organization_id, member),
    CONSTRAINT membership_role_valid CHECK (role IN ('owner', 'admin', 'member', 'viewer'))
);
-- A login role resolves its organization by its own name.
CREATE INDEX idx_membership_member ON flowforge.membership (member);

CREATE TABLE flowforge.api_key (
    id               uuid        NOT NULL DEFAULT gen_random_uuid(),
    organization_id  uuid        NOT NULL,
    name             varchar(100) NOT NULL,
    prefix           varchar(32) NOT NULL,
    hashed_key       bytea       NOT NULL,
    role             varchar(20) NOT NULL DEFAULT 'member',
    created_at       timestamptz NOT NULL DEFAULT now(),
    last_used_at     timestamptz,
    revoked_at       timestamptz,
    CONSTRAINT api_key_pkey PRIMARY KEY (id),
    CONSTRAINT api_key_organization_fkey FOREIGN KEY (organization_id)
        REFERENCES flowforge.organization (id) ON DELETE CASCADE,
    CONSTRAINT uniq_api_key_prefix UNIQUE (prefix),
    CONSTRAINT api_key_role_valid CHECK (role IN ('owner', 'admin', 'member', 'viewer')),
    CONSTRAINT api_key_hash_is_sha256 CHECK (octet_length(hashed_key) = 32)
);

CREATE TABLE flowforge.audit_log (
    id               uuid        NOT NULL DEFAULT gen_random_uuid(),
    organization_id  uuid        NOT NULL,
    actor            text        NOT NULL,
    action           varchar(50) NOT NULL,
    entity           varchar(50) NOT NULL,
    entity_id        text,
    fields           text[]      NOT NULL DEFAULT '{}',
    created_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT audit_log_pkey PRIMARY KEY (id),
    CONSTRAINT audit_log_organization_fkey FOREIGN KEY (organization_id)
        REFERENCES flowforge.organization (id) ON DELETE RESTRICT
);
-- "What happened in this organization lately", newest first.
CREATE INDEX idx_audit_org_created ON flowforge.audit_log (organization_id, created_at DESC);
