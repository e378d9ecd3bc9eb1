CREATE UNLOGGED TABLE flowforge.gateway_session (
    backend_pid      integer     NOT NULL,
    xact_id          xid8        NOT NULL,
    organization_id  uuid        NOT NULL,
    role             varchar(20) NOT NULL,
    api_key_id       uuid        NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT gateway_session_pkey PRIMARY KEY (backend_pid),
    CONSTRAINT gateway_session_role_valid CHECK (role IN ('owner', 'admin', 'member', 'viewer'))
);
ALTER TABLE flowforge.gateway_session OWNER TO flowforge_owner;
GRANT SELECT, INSERT, UPDATE, DELETE ON flowforge.gateway_session TO flowforge_system;
ALTER TABLE flowforge.gateway_session ENABLE ROW LEVEL SECURITY;
ALTER TABLE flowforge.gateway_session FORCE ROW LEVEL SECURITY;
CREATE POLICY system_all ON flowforge.gateway_session AS PERMISSIVE FOR ALL TO flowforge_system USING (true) WITH CHECK (true);
ALTER TABLE flowforge.api_key ADD COLUMN last_used_at timestamptz;
UPDATE flowforge.api_key k SET last_used_at = u.last_used_at FROM flowforge.api_key_usage u WHERE u.api_key_id = k.id;
DROP TABLE flowforge.api_key_usage;
DROP TABLE flowforge.server_secret;
