-- FlowForge 0025: the agent sweep reads live agents only. Every worker
-- process that registers leaves a row (host:pid names), so inactive agents
-- pile up; the sweep — every tick — must not read them all. The heartbeat
-- threshold differs per agent, so no index orders by it; this one keeps the
-- candidates to the agents that are not inactive yet.
-- transactional: false
-- depends: 0024_webhook_schema_usage

CREATE INDEX CONCURRENTLY IF NOT EXISTS agent_live_idx ON flowforge.agent (organization_id) WHERE status <> 'inactive';
COMMENT ON INDEX flowforge.agent_live_idx IS
  'the agent sweep (every tick): the agents not inactive yet, however many dead workers'' rows piled up';
