-- Affinity (seed 002's affinity_binding): a key pinned to one agent, so work
-- that must land in one place does. The unique constraint is the mechanism:
-- two agents racing to pin one key means one insert wins and the other reads
-- the winner, instead of both going on with different agents.
--
-- A node or a DAG task declares "affinity": "run" | "definition" | <jsonpath
-- into its input>, and "affinity_policy": soft (default) | hard. When the
-- pinned agent is draining or inactive, soft rebinds the key to the next
-- claimer (compare-and-set on the binding's generation); hard leaves the work
-- waiting, visibly, for that agent to come back.

-- The key a unit of work is pinned by, from its node's declaration.
CREATE OR REPLACE FUNCTION flowforge._affinity_key(p_affinity text, p_run_id uuid, p_definition text, p_input jsonb)
RETURNS text
LANGUAGE plpgsql IMMUTABLE
AS $$
DECLARE
    v_value jsonb;
BEGIN
    IF p_affinity IS NULL THEN
        RETURN NULL;
    ELSIF p_affinity = 'run' THEN
        RETURN 'run:' || p_run_id;
    ELSIF p_affinity = 'definition' THEN
        RETURN 'definition:' || p_definition;
    END IF;
    -- A path that finds nothing pins nothing (the work can go anywhere) —
    -- silently, also in strict mode: an error here would fail the start of
    -- the run, or the completion of the node before this one.
    v_value := jsonb_path_query_first(coalesce(p_input, '{}'), p_affinity::jsonpath, silent => true);
    IF v_value IS NULL OR v_value = 'null' THEN
        RETURN NULL;
    END IF;
    RETURN 'key:' || left(CASE WHEN jsonb_typeof(v_value) = 'string' THEN v_value #>> '{}' ELSE v_value::text END, 900);
END;
$$;
COMMENT ON FUNCTION flowforge._affinity_key(text, uuid, text, jsonb) IS
  'Internal: the affinity key of a unit of work — run:<run id>, definition:<name>, or key:<the value the jsonpath '
  'finds in the input>; NULL when there is no affinity or the path finds nothing.';

-- May agent p_agent take work pinned by p_key? Pins an unpinned key to it.
-- Called only for a registered, active agent, with the unit of work locked.
CREATE OR REPLACE FUNCTION flowforge._affinity_take(p_org uuid, p_key text, p_policy text, p_agent text,
                                                    p_now timestamptz)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_binding record;
BEGIN
    INSERT INTO flowforge.affinity_binding (organization_id, affinity_key, agent_id, created_at, created_by)
    VALUES (p_org, p_key, p_agent, p_now, flowforge._principal())
    ON CONFLICT ON CONSTRAINT affinity_binding_key_uq DO NOTHING;
    IF FOUND THEN
        RETURN true;  -- our insert won
    END IF;
    -- Someone else's insert won (a racing claim waited here for it to commit): read the winner.
    SELECT b.agent_id, b.generation,
           flowforge._agent_status(a.status, a.last_heartbeat_at, a.heartbeat_interval,
                                   (SELECT s.agent_timeout FROM flowforge.setting s), p_now) AS agent_status
    INTO v_binding
    FROM flowforge.affinity_binding b
    LEFT JOIN flowforge.agent a ON a.organization_id = b.organization_id AND a.name = b.agent_id
    WHERE b.organization_id = p_org AND b.affinity_key = p_key;
    IF NOT FOUND THEN
        RETURN false;  -- released between our insert and our read: the next claim pins it
    END IF;
    IF v_binding.agent_id = p_agent THEN
        RETURN true;
    END IF;
    IF p_policy = 'soft' AND v_binding.agent_status IS DISTINCT FROM 'active' THEN
        -- Compare-and-set on the generation: of two claimers rebinding at once, one wins.
        UPDATE flowforge.affinity_binding b
        SET agent_id = p_agent, generation = b.generation + 1, updated_at = p_now, updated_by = flowforge._principal()
        WHERE b.organization_id = p_org AND b.affinity_key = p_key AND b.generation = v_binding.generation;
        RETURN FOUND;
    END IF;
    RETURN false;
END;
$$;
COMMENT ON FUNCTION flowforge._affinity_take(uuid, text, text, text, timestamptz) IS
  'Internal: true when agent p_agent may take work pinned by p_key — it pinned the key now (one insert wins), it '
  'already holds the pin, or (soft) the pinned agent is draining or inactive and the key moved to p_agent '
  '(compare-and-set on the generation). False otherwise: skip the work.';

-- Work a claimer must not even consider: pinned to another agent that may
-- still take it (active, or hard-pinned). Used as a filter in the claims'
-- picks, so parked work never fills a batch it cannot be given to.
CREATE OR REPLACE FUNCTION flowforge._pinned_elsewhere(p_org uuid, p_key text, p_policy text, p_agent text,
                                                       p_now timestamptz)
RETURNS boolean
LANGUAGE sql STABLE
AS $$
    SELECT EXISTS (
        SELECT 1 FROM flowforge.affinity_binding b
        LEFT JOIN flowforge.agent a ON a.organization_id = b.organization_id AND a.name = b.agent_id
        WHERE b.organization_id = p_org AND b.affinity_key = p_key AND b.agent_id <> p_agent
          AND (p_policy = 'hard'
               OR flowforge._agent_status(a.status, a.last_heartbeat_at, a.heartbeat_interval,
                                          (SELECT s.agent_timeout FROM flowforge.setting s), p_now) = 'active'))
$$;
COMMENT ON FUNCTION flowforge._pinned_elsewhere(uuid, text, text, text, timestamptz) IS
  'Internal: true when p_key is pinned to another agent that keeps it (active, or the policy is hard).';

-- An agent that went inactive gives up its pins (soft and hard): its work
-- goes to whoever claims it next.
CREATE OR REPLACE FUNCTION flowforge._release_bindings(p_org uuid, p_agent text) RETURNS integer
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_released integer;
BEGIN
    DELETE FROM flowforge.affinity_binding b WHERE b.organization_id = p_org AND b.agent_id = p_agent;
    GET DIAGNOSTICS v_released = ROW_COUNT;
    IF v_released > 0 THEN
        PERFORM flowforge._notify_ready();
    END IF;
    RETURN v_released;
END;
$$;
COMMENT ON FUNCTION flowforge._release_bindings(uuid, text) IS
  'Internal: deletes every affinity binding of agent p_agent (it went inactive) and wakes claimers; returns how many.';
