-- The daemon's feeders: a watched directory (filesystem) and a local git
-- branch (gitpoll). The daemon only lists files and commits; what fired is
-- in SQL — each file or commit fires once with its path or sha as the
-- delivery id (trigger_firing_delivery_uq), and a gitpoll trigger's last
-- commit is its feeder_state — so a restarted daemon re-fires nothing.
--
--   feeder_triggers(engine_id) -> the live feeder triggers to poll
--   feeder_unfired(trigger_id, delivery_ids) -> those not yet fired
--   feeder_fire(trigger_id, delivery_id, payload, fired_on) -> fire_trigger's answer
--   feeder_save_state(trigger_id, state)

CREATE OR REPLACE FUNCTION flowforge.feeder_triggers(engine_id text DEFAULT NULL)
RETURNS TABLE (trigger_id uuid, organization text, name text, trigger_type text, options jsonb, state jsonb)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT t.id, o.slug::text, t.name::text, t.trigger_type::text, t.options, t.feeder_state
    FROM flowforge.scheduled_trigger t
    JOIN flowforge.organization o ON o.id = t.organization_id
    WHERE t.trigger_type IN ('filesystem', 'gitpoll') AND t.enabled AND t.deleted_at IS NULL
      AND (feeder_triggers.engine_id IS NULL
           OR EXISTS (SELECT 1 FROM flowforge.engine e
                      WHERE e.organization_id = t.organization_id AND e.engine_id = feeder_triggers.engine_id
                        AND e.status = 'serving' AND e.lease_expires_at > flowforge.now()))
    ORDER BY o.slug, t.name;
END;
$$;
COMMENT ON FUNCTION flowforge.feeder_triggers(text) IS
  'feeder_triggers(engine_id text default null) -> setof (trigger_id, organization, name, trigger_type, options, '
  'state): the live, enabled filesystem and gitpoll triggers of every organization — with engine_id, of the '
  'organizations that daemon serves (tick''s duty leases). Daemon rights. Errors: none.';
SELECT flowforge._rights('flowforge.feeder_triggers(text)', 'flowforge_system', '{flowforge_daemon}');

CREATE OR REPLACE FUNCTION flowforge.feeder_unfired(trigger_id uuid, delivery_ids text[]) RETURNS text[]
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    -- The trigger's organization: its delivery keys are per organization (unknown trigger: none fired).
    v_org constant uuid := (SELECT t.organization_id FROM flowforge.scheduled_trigger t WHERE t.id = feeder_unfired.trigger_id);
BEGIN
    IF cardinality(feeder_unfired.delivery_ids) > 10000 THEN
        RAISE EXCEPTION 'at most 10000 delivery ids per call' USING ERRCODE = 'FF003', HINT = 'Ask in pages.';
    END IF;
    RETURN coalesce((SELECT array_agg(d.id ORDER BY d.n)
                     FROM unnest(feeder_unfired.delivery_ids) WITH ORDINALITY AS d(id, n)
                     WHERE NOT EXISTS (SELECT 1 FROM flowforge.trigger_delivery k
                                       WHERE k.organization_id = v_org AND k.trigger_id = feeder_unfired.trigger_id
                                         AND k.delivery_id = d.id)),
                    '{}');
END;
$$;
COMMENT ON FUNCTION flowforge.feeder_unfired(uuid, text[]) IS
  'feeder_unfired(trigger_id uuid, delivery_ids text[]) -> text[]: those of the delivery ids (at most 10,000, in '
  'their order) trigger_id has no firing for yet — one lookup each on trigger_firing_delivery_uq. Daemon rights. '
  'Errors: FF003 too many ids.';
SELECT flowforge._rights('flowforge.feeder_unfired(uuid,text[])', 'flowforge_system', '{flowforge_daemon}');

CREATE OR REPLACE FUNCTION flowforge.feeder_fire(trigger_id uuid, delivery_id text, payload jsonb,
                                                 fired_on timestamptz DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    v_trigger record;
BEGIN
    SELECT t.organization_id, t.name INTO v_trigger FROM flowforge.scheduled_trigger t
    WHERE t.id = feeder_fire.trigger_id AND t.trigger_type IN ('filesystem', 'gitpoll');
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no feeder trigger %', feeder_fire.trigger_id
            USING ERRCODE = 'FF001', HINT = 'feeder_triggers() lists them.';
    END IF;
    IF feeder_fire.delivery_id IS NULL THEN
        RAISE EXCEPTION 'a feeder names what it fires for (the file path, the commit sha)'
            USING ERRCODE = 'FF003', HINT = 'Pass delivery_id.';
    END IF;
    PERFORM flowforge._check_delivery_id(feeder_fire.delivery_id);
    PERFORM flowforge._check_size(feeder_fire.payload, 'feeder payload');
    RETURN flowforge._fire_trigger(v_trigger.organization_id, feeder_fire.trigger_id, v_trigger.name,
                                   feeder_fire.payload, feeder_fire.fired_on, feeder_fire.delivery_id,
                                   flowforge.now());
END;
$$;
COMMENT ON FUNCTION flowforge.feeder_fire(uuid, text, jsonb, timestamptz) IS
  'feeder_fire(trigger_id uuid, delivery_id text, payload jsonb, fired_on timestamptz default null) -> jsonb: '
  'fire_trigger for a feeder trigger, whatever its organization (a file''s path, a commit''s sha as the delivery id: '
  'a second call for it returns the first firing). Daemon rights. Errors: FF001 no such feeder trigger; FF003 no '
  'delivery id or one over 200 characters; FF009 payload over the limits; FF008 a gateway login without a valid '
  'token (the firing records its actor).';
SELECT flowforge._rights('flowforge.feeder_fire(uuid,text,jsonb,timestamptz)', 'flowforge_system', '{flowforge_daemon}');

CREATE OR REPLACE FUNCTION flowforge.feeder_save_state(trigger_id uuid, state jsonb) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
BEGIN
    IF jsonb_typeof(feeder_save_state.state) IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION 'state must be a JSON object' USING ERRCODE = 'FF003', HINT = 'Such as {"sha": "..."}.';
    END IF;
    PERFORM flowforge._check_size(feeder_save_state.state, 'feeder state');
    UPDATE flowforge.scheduled_trigger t SET feeder_state = feeder_save_state.state, updated_at = flowforge.now()
    WHERE t.id = feeder_save_state.trigger_id AND t.trigger_type IN ('filesystem', 'gitpoll');
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no feeder trigger %', feeder_save_state.trigger_id
            USING ERRCODE = 'FF001', HINT = 'feeder_triggers() lists them.';
    END IF;
END;
$$;
COMMENT ON FUNCTION flowforge.feeder_save_state(uuid, jsonb) IS
  'feeder_save_state(trigger_id uuid, state jsonb): a feeder''s progress (gitpoll: {"sha": the last commit seen}), '
  'kept in SQL so a restart resumes from it. Daemon rights. Errors: FF001 no such feeder trigger; FF003 state not an '
  'object; FF009 over the limits.';
SELECT flowforge._rights('flowforge.feeder_save_state(uuid,jsonb)', 'flowforge_system', '{flowforge_daemon}');
