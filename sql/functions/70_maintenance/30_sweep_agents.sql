-- Duty: agents whose heartbeat stopped become inactive, and their affinity
-- bindings are released, so work pinned to a crashed agent is not stranded.

CREATE OR REPLACE FUNCTION flowforge._sweep_agents(p_orgs uuid[], p_now timestamptz) RETURNS integer
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_agent record;
    v_swept integer := 0;
BEGIN
    FOR v_agent IN
        UPDATE flowforge.agent a SET status = 'inactive', updated_at = p_now, updated_by = 'tick'
        WHERE a.status <> 'inactive' AND (p_orgs IS NULL OR a.organization_id = ANY (p_orgs))
          AND flowforge._agent_status(a.status, a.last_heartbeat_at, a.heartbeat_interval,
                                      (SELECT s.agent_timeout FROM flowforge.setting s), p_now) = 'inactive'
        RETURNING a.organization_id, a.name
    LOOP
        PERFORM flowforge._release_bindings(v_agent.organization_id, v_agent.name);
        v_swept := v_swept + 1;
    END LOOP;
    RETURN v_swept;
END;
$$;
COMMENT ON FUNCTION flowforge._sweep_agents(uuid[], timestamptz) IS
  'Internal (duty): marks inactive every agent (of the given organizations, all when NULL) whose heartbeat is too '
  'old and releases its affinity bindings; returns how many agents went inactive.';
