-- The firing log, read by tenants: what fired lately, everything one trigger
-- did. Payloads "inherit the sensitivity of their senders": only an admin of
-- the organization reads them; everyone else sees the row without it.

CREATE OR REPLACE FUNCTION flowforge.list_firings(trigger_name text DEFAULT NULL, outcome text DEFAULT NULL,
                                                  max_rows integer DEFAULT 50, after text DEFAULT NULL)
RETURNS TABLE (id uuid, name text, trigger_type text, action text, event text, definition text,
               run_id uuid, result text, error text, fired_on timestamptz, recorded_at timestamptz,
               delivery_id text, payload jsonb, created_by text, cursor text)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
SET plan_cache_mode = force_custom_plan
AS $$
#variable_conflict use_column
DECLARE
    v_org constant uuid := flowforge._authorize('viewer');
    v_admin constant boolean := flowforge._role_rank((SELECT c.role FROM flowforge._caller() c))
                                >= flowforge._role_rank('admin');
    v_after constant record := flowforge._cursor_position('firings', list_firings.after);
BEGIN
    IF list_firings.after IS NOT NULL AND (v_after.at IS NULL OR v_after.id IS NULL) THEN
        PERFORM flowforge._invalid_cursor('firings');
    END IF;
    IF list_firings.max_rows IS NULL OR list_firings.max_rows NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'max_rows must be between 1 and 10000' USING ERRCODE = 'FF003', HINT = 'The default is 50.';
    END IF;
    IF list_firings.outcome IS NOT NULL AND list_firings.outcome NOT IN ('started', 'signalled', 'refused', 'failed') THEN
        RAISE EXCEPTION 'outcome must be started, signalled, refused or failed' USING ERRCODE = 'FF003',
            HINT = 'Leave it NULL for every outcome.';
    END IF;
    -- Newest first: the organization's (trigger_firing_tenant_fired) or one
    -- trigger's (trigger_firing_tenant_trigger).
    RETURN QUERY
    SELECT f.id, f.trigger_name::text, f.trigger_type::text, f.action::text, f.event::text, w.name::text, f.run_id,
           f.outcome::text, f.error, f.fired_on, f.recorded_at, f.delivery_id::text,
           CASE WHEN v_admin THEN f.payload END, f.created_by, flowforge._cursor('firings', f.fired_on, f.id)
    FROM flowforge.trigger_firing f
    LEFT JOIN flowforge.workflow w ON w.id = f.definition_id
    WHERE f.organization_id = v_org
      AND (list_firings.trigger_name IS NULL OR f.trigger_name = list_firings.trigger_name)
      AND (list_firings.outcome IS NULL OR f.outcome = list_firings.outcome)
      AND (v_after.at IS NULL OR (f.fired_on, f.id) < (v_after.at, v_after.id))
    ORDER BY f.fired_on DESC, f.id DESC
    LIMIT list_firings.max_rows;
END;
$$;
COMMENT ON FUNCTION flowforge.list_firings(text, text, integer, text) IS
  'list_firings(trigger_name text default null, outcome text default null, max_rows int default 50, after text '
  'default null) -> setof (id, name (the trigger''s), trigger_type, action, event, definition, run_id, result (the '
  'firing''s outcome), error, fired_on, recorded_at, delivery_id, payload, created_by, cursor): the caller''s '
  'organization''s trigger firings, newest first by the source''s fired_on (seed 002''s exception: fired_on desc, id '
  'desc), keyset pages after the cursor of the last row read, '
  'optionally of one trigger (dropped ones included) and/or one outcome. payload is NULL unless the caller is an '
  'admin or owner of the organization. Viewer rights. Errors: FF003 max_rows outside 1..10000, an unknown outcome '
  'or a cursor that is not one of this listing''s; '
  'FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.list_firings(text,text,integer,text)', 'flowforge_owner', '{flowforge_app,flowforge_gateway}');
