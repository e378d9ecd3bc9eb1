-- Triggers: what starts or moves runs without a caller — a cron schedule, a
-- webhook, a watched directory, a git branch.
--
--   create_trigger(name, trigger_type, action, target, options) -> uuid
--   set_trigger_enabled(name, enabled)
--   drop_trigger(name)              soft delete: firings and causes stay readable
--   list_triggers() -> setof (...)
--
-- A trigger is a scheduled_trigger row (seed 000's cron table, generalized:
-- docs/data-model.md). Every feeder calls one function, fire_trigger
-- (30_fire.sql), which appends exactly one trigger_firing row.

CREATE OR REPLACE FUNCTION flowforge._invalid_trigger(p_message text) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'invalid trigger: %', p_message
        USING ERRCODE = 'FF002', HINT = 'Fix the trigger''s options and create it again; nothing was written. See docs/triggers.md.';
END;
$$;
COMMENT ON FUNCTION flowforge._invalid_trigger(text) IS
  'Internal: raises FF002 "invalid trigger: ..." naming what is wrong. Never returns.';

-- Validate and normalize a trigger's options for its type and action; the
-- webhook secret is taken out (it is stored apart, never returned).
CREATE OR REPLACE FUNCTION flowforge._trigger_options(p_type text, p_action text, p_options jsonb) RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_options constant jsonb := coalesce(p_options, '{}');
    v_known text[] := ARRAY['input'];
    v_field text;
    v_out jsonb := '{}';
BEGIN
    IF jsonb_typeof(v_options) <> 'object' THEN
        PERFORM flowforge._invalid_trigger('options must be a JSON object');
    END IF;
    v_known := v_known || CASE p_type
        WHEN 'cron' THEN ARRAY['cron', 'timezone', 'catchup', 'max_catchup', 'on_gap', 'on_repeat']
        WHEN 'webhook' THEN ARRAY['secret']
        WHEN 'filesystem' THEN ARRAY['path', 'pattern']
        WHEN 'gitpoll' THEN ARRAY['repo', 'branch']
    END || CASE WHEN p_action = 'signal' THEN ARRAY['run_id_path', 'run_id', 'event_id_path'] ELSE '{}'::text[] END;
    FOR v_field IN SELECT jsonb_object_keys(v_options) LOOP
        IF NOT v_field = ANY (v_known) THEN
            PERFORM flowforge._invalid_trigger(format('unknown option "%s" for a %s trigger that %ss (known: %s)',
                                                      v_field, p_type, p_action, array_to_string(v_known, ', ')));
        END IF;
    END LOOP;

    IF v_options ? 'input' THEN
        IF jsonb_typeof(v_options -> 'input') <> 'object' THEN
            PERFORM flowforge._invalid_trigger('input must be a JSON object (merged into the run input)');
        END IF;
        v_out := v_out || jsonb_build_object('input', v_options -> 'input');
    END IF;
    FOREACH v_field IN ARRAY ARRAY['run_id_path', 'event_id_path'] LOOP
        IF v_options ? v_field THEN
            IF jsonb_typeof(v_options -> v_field) <> 'string' OR NOT flowforge._is_jsonpath(v_options ->> v_field)
               OR flowforge._is_jsonpath_predicate(v_options ->> v_field) THEN
                PERFORM flowforge._invalid_trigger(format('%s must be a jsonpath into the payload, such as '
                                                          '"$.run_id", got %s', v_field, v_options -> v_field));
            END IF;
            v_out := v_out || jsonb_build_object(v_field, ((v_options ->> v_field)::jsonpath)::text);
        END IF;
    END LOOP;
    IF p_action = 'signal' THEN
        IF v_options ? 'run_id' THEN
            IF jsonb_typeof(v_options -> 'run_id') <> 'string'
               OR (v_options ->> 'run_id') !~* '^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$' THEN
                PERFORM flowforge._invalid_trigger(format('run_id must be a run''s uuid, got %s', v_options -> 'run_id'));
            END IF;
            v_out := v_out || jsonb_build_object('run_id', (v_options ->> 'run_id')::uuid);
        END IF;
        IF (v_options ? 'run_id') = (v_options ? 'run_id_path') THEN
            PERFORM flowforge._invalid_trigger(
                'a signal names the run it moves: give run_id_path (a jsonpath into the payload) or run_id, not both');
        END IF;
    END IF;

    CASE p_type
        WHEN 'cron' THEN
            IF jsonb_typeof(v_options -> 'cron') IS DISTINCT FROM 'string' THEN
                PERFORM flowforge._invalid_trigger('a cron trigger needs options.cron, such as "*/5 * * * *" or "@daily"');
            END IF;
            PERFORM flowforge._cron_parse(v_options ->> 'cron');  -- FF002 naming the field and token
            -- Checked here, not by _spec_integer: a trigger's refusal names the trigger.
            IF v_options ? 'max_catchup' AND (jsonb_typeof(v_options -> 'max_catchup') <> 'number'
                                               OR (v_options ->> 'max_catchup')::numeric NOT BETWEEN 1 AND 1000
                                               OR (v_options ->> 'max_catchup')::numeric <> trunc((v_options ->> 'max_catchup')::numeric)) THEN
                PERFORM flowforge._invalid_trigger(format('max_catchup must be an integer from 1 to 1000, got %s',
                                                          v_options -> 'max_catchup'));
            END IF;
            v_out := v_out || jsonb_build_object(
                'cron', v_options ->> 'cron',
                'timezone', flowforge._check_timezone(coalesce(v_options ->> 'timezone', 'UTC')),
                'catchup', coalesce(v_options ->> 'catchup', 'latest'),
                'max_catchup', coalesce((v_options ->> 'max_catchup')::numeric::integer, 100),
                'on_gap', coalesce(v_options ->> 'on_gap', 'shift'),
                'on_repeat', coalesce(v_options ->> 'on_repeat', 'first'));
            IF v_out ->> 'catchup' NOT IN ('latest', 'all', 'none') THEN
                PERFORM flowforge._invalid_trigger(format('catchup must be latest, all or none, got %s', v_options -> 'catchup'));
            END IF;
            IF v_out ->> 'on_gap' NOT IN ('shift', 'skip') THEN
                PERFORM flowforge._invalid_trigger(format('on_gap must be shift or skip, got %s', v_options -> 'on_gap'));
            END IF;
            IF v_out ->> 'on_repeat' NOT IN ('first', 'last', 'both') THEN
                PERFORM flowforge._invalid_trigger(format('on_repeat must be first, last or both, got %s',
                                                          v_options -> 'on_repeat'));
            END IF;
        WHEN 'webhook' THEN
            -- The key is the secret's UTF-8 bytes, and trigger_secret_length bounds those.
            IF jsonb_typeof(v_options -> 'secret') IS DISTINCT FROM 'string' OR length(v_options ->> 'secret') < 16
               OR octet_length(convert_to(v_options ->> 'secret', 'UTF8')) > 1024 THEN
                PERFORM flowforge._invalid_trigger(
                    'a webhook trigger needs options.secret, 16 to 1024 characters (at most 1024 bytes as UTF-8): the key '
                    'its senders sign bodies with');
            END IF;
        WHEN 'filesystem' THEN
            IF jsonb_typeof(v_options -> 'path') IS DISTINCT FROM 'string' OR (v_options ->> 'path') !~ '^/' THEN
                PERFORM flowforge._invalid_trigger('a filesystem trigger needs options.path, the absolute path of the '
                                                   'directory it watches');
            END IF;
            IF v_options ? 'pattern' AND jsonb_typeof(v_options -> 'pattern') <> 'string' THEN
                PERFORM flowforge._invalid_trigger('pattern must be a glob such as "*.csv"');
            END IF;
            v_out := v_out || jsonb_build_object('path', v_options ->> 'path', 'pattern',
                                                 coalesce(v_options ->> 'pattern', '*'));
        WHEN 'gitpoll' THEN
            IF jsonb_typeof(v_options -> 'repo') IS DISTINCT FROM 'string' OR (v_options ->> 'repo') !~ '^/' THEN
                PERFORM flowforge._invalid_trigger('a gitpoll trigger needs options.repo, the absolute path of a local '
                                                   'git repository');
            END IF;
            IF v_options ? 'branch' AND (jsonb_typeof(v_options -> 'branch') <> 'string'
                                         OR (v_options ->> 'branch') !~ '^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$') THEN
                PERFORM flowforge._invalid_trigger(format('branch must be a branch name, got %s', v_options -> 'branch'));
            END IF;
            v_out := v_out || jsonb_build_object('repo', v_options ->> 'repo', 'branch',
                                                 coalesce(v_options ->> 'branch', 'main'));
    END CASE;
    RETURN v_out;
END;
$$;
COMMENT ON FUNCTION flowforge._trigger_options(text, text, jsonb) IS
  'Internal: validates a trigger''s options for its type and action and returns them normalized (defaults filled '
  'in, jsonpaths canonical; the webhook secret left out). Errors: FF002 naming the option — an invalid cron '
  'expression (naming the field) or time zone, a bad catchup / on_gap / on_repeat / path, unknown options.';

CREATE OR REPLACE FUNCTION flowforge.create_trigger(name text, trigger_type text, action text, target text,
                                                    options jsonb DEFAULT '{}')
RETURNS uuid
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    v_org constant uuid := flowforge._authorize('member');
    v_now constant timestamptz := flowforge.now();
    v_options jsonb;
    v_id uuid;
BEGIN
    IF create_trigger.name IS NULL OR create_trigger.name !~ '^[A-Za-z][A-Za-z0-9_.-]{0,62}$' THEN
        PERFORM flowforge._invalid_trigger(format(
            'name must be 1-63 letters, digits, "_", "." or "-" starting with a letter, got %s',
            coalesce(quote_literal(create_trigger.name), 'NULL')));
    END IF;
    IF create_trigger.trigger_type IS NULL OR create_trigger.trigger_type NOT IN ('cron', 'webhook', 'gitpoll', 'filesystem') THEN
        PERFORM flowforge._invalid_trigger(format('trigger_type must be cron, webhook, gitpoll or filesystem, got %s',
                                                  coalesce(quote_literal(create_trigger.trigger_type), 'NULL')));
    END IF;
    IF create_trigger.action IS NULL OR create_trigger.action NOT IN ('start', 'signal') THEN
        PERFORM flowforge._invalid_trigger(format('action must be start (a workflow) or signal (an event to a machine '
                                                  'run), got %s', coalesce(quote_literal(create_trigger.action), 'NULL')));
    END IF;
    IF create_trigger.action = 'start' THEN
        -- A defined workflow of any kind, not deleted (FF001, FF013).
        PERFORM flowforge._live_workflow(v_org, create_trigger.target);
    ELSIF create_trigger.target IS NULL OR create_trigger.target !~ '^[A-Za-z][A-Za-z0-9_.:-]{0,199}$' THEN
        PERFORM flowforge._invalid_trigger(format('a signal trigger''s target is the event it sends, such as '
                                                  '''paid'', got %s', coalesce(quote_literal(create_trigger.target), 'NULL')));
    END IF;
    v_options := flowforge._trigger_options(create_trigger.trigger_type, create_trigger.action, create_trigger.options);
    IF EXISTS (SELECT 1 FROM flowforge.scheduled_trigger t
               WHERE t.organization_id = v_org AND t.name = create_trigger.name AND t.deleted_at IS NULL) THEN
        RAISE EXCEPTION 'trigger % already exists', quote_literal(create_trigger.name)
            USING ERRCODE = 'FF003', HINT = 'Drop it first (drop_trigger), or choose another name.';
    END IF;

    INSERT INTO flowforge.scheduled_trigger (organization_id, name, trigger_type, action, target, cron, timezone, input,
                                             options, enabled, next_fire_at, created_at, created_by)
    VALUES (v_org, create_trigger.name, create_trigger.trigger_type, create_trigger.action, create_trigger.target,
            v_options ->> 'cron', coalesce(v_options ->> 'timezone', 'UTC'), coalesce(v_options -> 'input', '{}'),
            v_options - 'input', true,
            CASE WHEN create_trigger.trigger_type = 'cron'
                 THEN flowforge._cron_next(flowforge._cron_parse(v_options ->> 'cron'), v_now, v_options ->> 'timezone',
                                           v_options ->> 'on_gap', v_options ->> 'on_repeat') END,
            v_now, flowforge._principal())
    RETURNING id INTO v_id;
    IF create_trigger.trigger_type = 'webhook' THEN
        INSERT INTO flowforge.trigger_secret (trigger_id, organization_id, secret, created_at)
        VALUES (v_id, v_org, convert_to(create_trigger.options ->> 'secret', 'UTF8'), v_now);
    END IF;
    PERFORM flowforge._audit(v_org, 'create', 'trigger', v_id::text,
                             ARRAY['name', 'trigger_type', 'action', 'target', 'options']);
    RETURN v_id;
END;
$$;
COMMENT ON FUNCTION flowforge.create_trigger(text, text, text, text, jsonb) IS
  'create_trigger(name text, trigger_type text, action text, target text, options jsonb default ''{}'') -> uuid. A '
  'trigger of the caller''s organization: trigger_type cron | webhook | gitpoll | filesystem; action start (target = '
  'a workflow of any kind) or signal (target = the event sent to a machine run, named by options.run_id_path into '
  'the payload or options.run_id). Options: input (merged into the run input), event_id_path; cron: cron, timezone '
  '(IANA, default UTC), catchup latest | all | none, max_catchup (1..1000, default 100), on_gap shift | skip, '
  'on_repeat first | last | both; webhook: secret (16-1024 characters, at most 1024 bytes as UTF-8, stored apart, '
  'never returned); filesystem: '
  'path, pattern; gitpoll: repo, branch. A cron trigger''s first slot is the first after now. Errors: FF002 invalid '
  'name, type, action, target or options (a cron expression naming its field, an unknown zone); FF001 the workflow '
  'to start does not exist; FF013 it was deleted; FF003 a live trigger of that name exists; FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.create_trigger(text,text,text,text,jsonb)', 'flowforge_owner',
    '{flowforge_app,flowforge_gateway}');

-- A live trigger of the caller's organization, by name; FF001 otherwise.
CREATE OR REPLACE FUNCTION flowforge._trigger_by_name(p_org uuid, p_name text) RETURNS uuid
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    v_id uuid;
BEGIN
    SELECT t.id INTO v_id FROM flowforge.scheduled_trigger t
    WHERE t.organization_id = p_org AND t.name = p_name AND t.deleted_at IS NULL;
    IF v_id IS NULL THEN
        RAISE EXCEPTION 'trigger % not found', coalesce(quote_literal(p_name), 'NULL')
            USING ERRCODE = 'FF001', HINT = 'list_triggers() shows the organization''s triggers.';
    END IF;
    RETURN v_id;
END;
$$;
COMMENT ON FUNCTION flowforge._trigger_by_name(uuid, text) IS
  'Internal: the id of p_org''s live (not dropped) trigger named p_name. Errors: FF001 no such trigger.';

CREATE OR REPLACE FUNCTION flowforge.set_trigger_enabled(name text, enabled boolean) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    v_org constant uuid := flowforge._authorize('member');
    v_now constant timestamptz := flowforge.now();
    v_id constant uuid := flowforge._trigger_by_name(v_org, set_trigger_enabled.name);
    v_next timestamptz;
BEGIN
    IF set_trigger_enabled.enabled IS NULL THEN
        RAISE EXCEPTION 'enabled must be true or false' USING ERRCODE = 'FF003', HINT = 'Pass enabled => false to pause it.';
    END IF;
    -- Enabling a cron trigger starts it from now: slots missed while disabled are not caught up.
    -- The next slot is worked out first, under the row's lock: the UPDATE itself calls no
    -- non-immutable function on the row's columns (Citus refuses that in an UPDATE; docs/scale.md).
    SELECT CASE WHEN t.trigger_type <> 'cron' THEN NULL
                WHEN set_trigger_enabled.enabled AND NOT t.enabled
                THEN flowforge._cron_next(flowforge._cron_parse(t.cron), v_now, t.timezone,
                                          t.options ->> 'on_gap', t.options ->> 'on_repeat')
                ELSE t.next_fire_at END
    INTO v_next
    FROM flowforge.scheduled_trigger t WHERE t.id = v_id AND t.organization_id = v_org
    FOR NO KEY UPDATE;
    UPDATE flowforge.scheduled_trigger t
    SET enabled = set_trigger_enabled.enabled, next_fire_at = v_next,
        updated_at = v_now, updated_by = flowforge._principal()
    WHERE t.id = v_id AND t.organization_id = v_org;
    PERFORM flowforge._audit(v_org, CASE WHEN set_trigger_enabled.enabled THEN 'enable' ELSE 'disable' END, 'trigger',
                             v_id::text, ARRAY['enabled']);
END;
$$;
COMMENT ON FUNCTION flowforge.set_trigger_enabled(text, boolean) IS
  'set_trigger_enabled(name text, enabled boolean). Pauses or resumes a trigger of the caller''s organization. A '
  'disabled trigger''s firings are refused (and recorded); a cron trigger enabled again starts from its next slot '
  'after now (the slots it missed are not caught up). Errors: FF001 no such trigger; FF003 enabled NULL; FF002 a '
  'stored schedule that no longer parses (a newer FlowForge refusing an old expression); FF007/FF008 as for every '
  'API call.';
SELECT flowforge._rights('flowforge.set_trigger_enabled(text,boolean)', 'flowforge_owner',
    '{flowforge_app,flowforge_gateway}');

CREATE OR REPLACE FUNCTION flowforge.drop_trigger(name text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    v_org constant uuid := flowforge._authorize('member');
    v_now constant timestamptz := flowforge.now();
    v_id constant uuid := flowforge._trigger_by_name(v_org, drop_trigger.name);
BEGIN
    UPDATE flowforge.scheduled_trigger t
    SET deleted_at = v_now, deleted_by = flowforge._principal(), enabled = false, updated_at = v_now,
        updated_by = flowforge._principal()
    WHERE t.id = v_id;
    -- The key goes at once: a dropped webhook can never be verified again.
    DELETE FROM flowforge.trigger_secret s WHERE s.trigger_id = v_id;
    PERFORM flowforge._audit(v_org, 'drop', 'trigger', v_id::text);
END;
$$;
COMMENT ON FUNCTION flowforge.drop_trigger(text) IS
  'drop_trigger(name text). Soft-deletes a trigger of the caller''s organization: it never fires again, its name is '
  'free for a new trigger, its webhook secret is erased, and its firings and the runs they caused stay readable '
  '(list_firings, get_run''s triggered_by). Errors: FF001 no such trigger; FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.drop_trigger(text)', 'flowforge_owner', '{flowforge_app,flowforge_gateway}');

CREATE OR REPLACE FUNCTION flowforge.list_triggers(max_rows integer DEFAULT 1000, after text DEFAULT NULL,
                                                   include_deleted boolean DEFAULT false)
RETURNS TABLE (id uuid, name text, trigger_type text, action text, target text, enabled boolean, options jsonb,
               input jsonb, next_fire_at timestamptz, last_fired_at timestamptz, created_at timestamptz,
               created_by text, deleted_at timestamptz, cursor text)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
SET plan_cache_mode = force_custom_plan
AS $$
#variable_conflict use_column
DECLARE
    v_org constant uuid := flowforge._authorize('viewer');
    v_after constant record := flowforge._cursor_position('triggers', list_triggers.after);
BEGIN
    IF list_triggers.max_rows IS NULL OR list_triggers.max_rows NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'max_rows must be between 1 and 10000' USING ERRCODE = 'FF003', HINT = 'The default is 1000.';
    END IF;
    IF list_triggers.after IS NOT NULL AND (v_after.at IS NULL OR v_after.id IS NULL) THEN
        PERFORM flowforge._invalid_cursor('triggers');
    END IF;
    -- Newest first: one ordered range of scheduled_trigger_tenant_created.
    RETURN QUERY
    SELECT t.id, t.name::text, t.trigger_type::text, t.action::text, t.target::text, t.enabled,
           t.options || CASE WHEN t.trigger_type = 'webhook' THEN '{"secret": "(set, never shown)"}'::jsonb ELSE '{}' END,
           t.input, t.next_fire_at, t.last_fired_at, t.created_at, t.created_by, t.deleted_at,
           flowforge._cursor('triggers', t.created_at, t.id)
    FROM flowforge.scheduled_trigger t
    WHERE t.organization_id = v_org AND (list_triggers.include_deleted OR t.deleted_at IS NULL)
      AND (v_after.at IS NULL OR (t.created_at, t.id) < (v_after.at, v_after.id))
    ORDER BY t.created_at DESC, t.id DESC
    LIMIT list_triggers.max_rows;
END;
$$;
COMMENT ON FUNCTION flowforge.list_triggers(integer, text, boolean) IS
  'list_triggers(max_rows int default 1000, after text default null, include_deleted boolean default false) -> setof '
  '(id, name, trigger_type, action, target, enabled, options, input, next_fire_at, last_fired_at, created_at, '
  'created_by, deleted_at, cursor): the caller''s organization''s triggers, newest first (created_at desc, id desc), '
  'dropped ones only with include_deleted => true (a webhook''s secret is never shown). Keyset pages: pass the last '
  'row''s cursor as after. Viewer rights. Errors: FF003 max_rows outside 1..10000 or a cursor that is not one of '
  'this listing''s; FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.list_triggers(integer,text,boolean)', 'flowforge_owner', '{flowforge_app,flowforge_gateway}');
