-- FlowForge 0012: gateway identity without a write per transaction.
-- authenticate() used to write a gateway_session row per transaction: every
-- gateway transaction consumed a transaction id (an idle poller burned one
-- per poll) and revoke_api_key waited on the holder's row lock. Now
-- authenticate() hands the transaction a token — the key, organization, role,
-- backend and transaction start, with an HMAC under a server secret only the
-- identity functions can read — kept in a transaction-local setting; every
-- call verifies it and checks that the key is not revoked.
-- depends: 0011_outbox_drain_index

CREATE TABLE flowforge.server_secret (
    singleton    boolean     NOT NULL DEFAULT true,
    gateway_key  bytea       NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT server_secret_pkey PRIMARY KEY (singleton),
    CONSTRAINT server_secret_singleton CHECK (singleton),
    CONSTRAINT server_secret_key_is_256_bits CHECK (octet_length(gateway_key) = 32)
);
-- 244 random bits (two version-4 UUIDs from the server's strong source), hashed to 32 bytes.
INSERT INTO flowforge.server_secret (gateway_key)
VALUES (sha256(convert_to(gen_random_uuid()::text || gen_random_uuid()::text, 'UTF8')));

-- When each key was last used, apart from the key itself: recording it never
-- locks the api_key row that revoke_api_key updates.
CREATE TABLE flowforge.api_key_usage (
    api_key_id       uuid        NOT NULL,
    organization_id  uuid        NOT NULL,
    last_used_at     timestamptz,
    CONSTRAINT api_key_usage_pkey PRIMARY KEY (api_key_id),
    CONSTRAINT api_key_usage_key_fkey FOREIGN KEY (api_key_id)
        REFERENCES flowforge.api_key (id) ON DELETE CASCADE,
    CONSTRAINT api_key_usage_organization_fkey FOREIGN KEY (organization_id)
        REFERENCES flowforge.organization (id) ON DELETE CASCADE
);
INSERT INTO flowforge.api_key_usage (api_key_id, organization_id, last_used_at)
SELECT k.id, k.organization_id, k.last_used_at FROM flowforge.api_key k;
ALTER TABLE flowforge.api_key DROP COLUMN last_used_at;

DROP TABLE flowforge.gateway_session;

-- Tables are private, RLS on and forced (as in 0006). The secret has no
-- readonly policy: a DBA's read role must not be able to mint tokens.
ALTER TABLE flowforge.server_secret OWNER TO flowforge_owner;
ALTER TABLE flowforge.api_key_usage OWNER TO flowforge_owner;
GRANT SELECT, INSERT, UPDATE, DELETE ON flowforge.server_secret, flowforge.api_key_usage TO flowforge_system;
GRANT SELECT ON flowforge.api_key_usage TO flowforge_readonly;
ALTER TABLE flowforge.server_secret ENABLE ROW LEVEL SECURITY;
ALTER TABLE flowforge.server_secret FORCE ROW LEVEL SECURITY;
ALTER TABLE flowforge.api_key_usage ENABLE ROW LEVEL SECURITY;
ALTER TABLE flowforge.api_key_usage FORCE ROW LEVEL SECURITY;
CREATE POLICY system_all ON flowforge.server_secret AS PERMISSIVE FOR ALL TO flowforge_system USING (true) WITH CHECK (true);
CREATE POLICY system_all ON flowforge.api_key_usage AS PERMISSIVE FOR ALL TO flowforge_system USING (true) WITH CHECK (true);
CREATE POLICY readonly_select ON flowforge.api_key_usage AS PERMISSIVE FOR SELECT TO flowforge_readonly USING (true);
CREATE POLICY tenant_isolation ON flowforge.api_key_usage AS PERMISSIVE FOR ALL TO flowforge_owner
    USING (organization_id = (SELECT flowforge.current_organization()))
    WITH CHECK (organization_id = (SELECT flowforge.current_organization()));
