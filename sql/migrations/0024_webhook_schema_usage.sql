-- FlowForge 0024: the webhook receiver's role may look into schema flowforge.
-- 0022 created flowforge_webhook and granted it EXECUTE on receive_webhook,
-- but not USAGE on the schema, without which no call of flowforge.<anything>
-- resolves: a receiver login got "permission denied for schema flowforge" on
-- its one call. USAGE gives no table: the tables stay private (no grant), so
-- the role still reaches nothing but the one function it may execute.
-- depends: 0023_trigger_keys

GRANT USAGE ON SCHEMA flowforge TO flowforge_webhook;
