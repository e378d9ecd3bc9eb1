

-- Runs of any engine: start, cancel, retry.
--
--   start_run(workflow, input, idempotency_key) -> run id
--   cancel_run(run_id, reason)
--   retry_run(run_id)
--
-- These check the caller, the arguments and the idempotency key; the engine
-- that owns the run does the rest (10_substrate/25_engine_hooks.sql).

-- Start a run of p_org's latest version of a workflow: the checks and the
-- idempotency key here, the rest in the engine. Shared by start_run (a
-- caller) and fire_trigger (a trigger, which records itself as the cause).
CREATE OR REPLACE FUNCTION flowforge._start_run(p_org uuid, p_workflow text, p_input jsonb, p_idempotency_key text,
                                                p_now timestamptz, p_triggered_by text DEFAULT NULL,
                                                p_trigger_firing_id uuid DEFAULT NULL, p_created_by text DEFAULT NULL)
RETURNS uuid
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_input constant jsonb := coalesce(p_input, '{}');
    v_creator constant text := coalesce(p_created_by, flowforge._principal());
    v_workflow record;
    v_workflow_id uuid;
    v_run_id uuid := gen_random_uuid();
    v_existing record;
    v_hash text;
BEGIN
    IF jsonb_typeof(v_input) <> 'object' THEN
        RAISE EXCEPTION 'run input must be a JSON object, got %', jsonb_typeof(v_input)
            USING ERRCODE = 'FF003', HINT = 'Wrap the value: {"value": ...}.';
    END IF;
    PERFORM flowforge._check_size(v_input, 'run input');
    IF p_idempotency_key IS NOT NULL AND length(p_idempotency_key) NOT BETWEEN 1 AND 200 THEN
        RAISE EXCEPTION 'idempotency key must be 1 to 200 characters'
            USING ERRCODE = 'FF003', HINT = 'Use a short stable key, such as a request id.';
    END IF;

    v_workflow_id := flowforge._live_workflow(p_org, p_workflow);  -- FF001 unknown, FF013 deleted
    SELECT w.id, w.name, w.kind, w.spec INTO v_workflow
    FROM flowforge.workflow w WHERE w.organization_id = p_org AND w.id = v_workflow_id;

    IF p_idempotency_key IS NOT NULL THEN
        -- Claim the key first: a concurrent start with the same key waits here
        -- for ours to commit, then finds our run instead of making a second.
        v_hash := md5(v_workflow.name || '/' || v_input::text);
        INSERT INTO flowforge.idempotency_key (organization_id, key, workflow_run_id, request_hash, created_at)
        VALUES (p_org, p_idempotency_key, v_run_id, v_hash, p_now)
        ON CONFLICT DO NOTHING;
        IF NOT FOUND THEN
            SELECT k.workflow_run_id, k.request_hash INTO v_existing
            FROM flowforge.idempotency_key k
            WHERE k.organization_id = p_org AND k.key = p_idempotency_key;
            IF v_existing.request_hash <> v_hash THEN
                RAISE EXCEPTION 'idempotency key % was already used for a different workflow or input (run %)',
                    quote_literal(p_idempotency_key), v_existing.workflow_run_id
                    USING ERRCODE = 'FF006', HINT = 'Use a new key for a different request.';
            END IF;
            RETURN v_existing.workflow_run_id;
        END IF;
    END IF;

    PERFORM flowforge._start_engine_run(v_workflow.kind, p_org, v_run_id, v_workflow.id, v_workflow.spec, v_input,
                                        p_idempotency_key, p_now, v_creator);
    IF p_triggered_by IS NOT NULL THEN
        -- The directory merges: the cause completes the row the engine wrote.
        PERFORM flowforge._record_run(p_org, v_run_id, v_workflow.kind, v_workflow.id, p_now, NULL, p_triggered_by,
                                      p_trigger_firing_id);
    END IF;
    -- Only a run that was started is audited: a repeated key writes nothing.
    PERFORM flowforge._audit(p_org, 'start', 'workflow_run', v_run_id::text,
                             CASE WHEN p_idempotency_key IS NULL THEN ARRAY['workflow', 'input']
                                  ELSE ARRAY['workflow', 'input', 'idempotency_key'] END
                             || CASE WHEN p_triggered_by IS NULL THEN '{}'::text[] ELSE ARRAY['trigger'] END);
    RETURN v_run_id;
END;
$$;
COMMENT ON FUNCTION flowforge._start_run(uuid, text, jsonb, text, timestamptz, text, uuid, text) IS
  'Internal: starts the latest version of workflow p_workflow of organization p_org (any kind) with input p_input; '
  'an idempotency key already used with the same workflow and input returns that run. With p_triggered_by, the '
  'directory row records the trigger and its firing as the cause. The run belongs to p_created_by (a trigger''s '
  'creator), by default the caller''s _principal(). A started run is audited. Errors: FF001 unknown workflow; FF013 '
  'the workflow was deleted; FF003 input not an object or a bad key; FF006 key reused for a different request; FF009 '
  'input over the size limit.';

CREATE OR REPLACE FUNCTION flowforge.start_run(workflow text, input jsonb DEFAULT '{}', idempotency_key text DEFAULT NULL)
RETURNS uuid
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_org constant uuid := flowforge._authorize('member');
BEGIN
    RETURN flowforge._start_run(v_org, start_run.workflow, start_run.input, start_run.idempotency_key,
                                flowforge.now());
END;
$$;
COMMENT ON FUNCTION flowforge.start_run(text, jsonb, text) IS
  'start_run(workflow text, input jsonb default ''{}'', idempotency_key text default null) -> uuid. Starts the latest '
  'version of the named workflow in the caller''s organization, of any kind: for a dag one workflow_run (state '
  'running) and one task_run per task, in one statement, tasks without dependencies ready at once (NOTIFY '
  'flowforge_ready); for a graph its start node entered; for a statemachine its initial state entered. Events: '
  'run_started, created per unit of work. The run belongs to the caller (created_by: its login, or its API key''s '
  'prefix through the gateway). The same idempotency_key with the same workflow and input returns the first run''s id '
  'and writes nothing. Errors: FF001 unknown workflow; FF003 input not an object or a bad key; FF006 key reused for a '
  'different request; FF009 input over the size limit; FF013 the workflow was deleted (delete_workflow); FF007/FF008 '
  'as for every API call.';
SELECT flowforge._rights('flowforge.start_run(text,jsonb,text)', 'flowforge_owner', '{flowforge_app,flowforge_gateway}');

-- Many runs of one workflow in one call: the same checks and idempotency
-- rules as start_run, applied to every input at once, and one set-based
-- start by the engine (_start_engine_runs). Bulk enqueue: one statement and
-- one transaction for up to 100,000 runs, nothing written if any input is refused.
CREATE OR REPLACE FUNCTION flowforge.start_runs(workflow text, inputs jsonb[], idempotency_keys text[] DEFAULT NULL)
RETURNS SETOF uuid
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_org constant uuid := flowforge._authorize('member');
    v_now constant timestamptz := flowforge.now();
    v_workflow record;
    v_workflow_id uuid;
    v_bad record;
    v_inputs jsonb[];
    v_keys text[];
    v_ids uuid[];        -- per input, in order: the run it names (started now, or the key's earlier run)
    v_new integer[];     -- positions of the inputs that start a run in this call
    v_actor text;
BEGIN
    IF start_runs.inputs IS NULL OR cardinality(start_runs.inputs) > 100000 OR array_ndims(start_runs.inputs) > 1 THEN
        RAISE EXCEPTION 'inputs must be an array of at most 100000 run inputs, got %',
            coalesce(cardinality(start_runs.inputs)::text, 'NULL')
            USING ERRCODE = 'FF003', HINT = 'Pass ARRAY[''{}''::jsonb, ...]; split larger loads into several calls.';
    END IF;
    IF start_runs.idempotency_keys IS NOT NULL
       AND (cardinality(start_runs.idempotency_keys) <> cardinality(start_runs.inputs)
            OR array_ndims(start_runs.idempotency_keys) > 1) THEN
        RAISE EXCEPTION 'idempotency_keys must be NULL or one key (or NULL) per input: % keys for % inputs',
            cardinality(start_runs.idempotency_keys), cardinality(start_runs.inputs)
            USING ERRCODE = 'FF003', HINT = 'Pass a parallel array; NULL where a run needs no key.';
    END IF;
    IF cardinality(start_runs.inputs) = 0 THEN
        RETURN;
    END IF;
    SELECT array_agg(coalesce(i.input, '{}') ORDER BY i.n),
           array_agg(start_runs.idempotency_keys[i.n] ORDER BY i.n)
    INTO v_inputs, v_keys
    FROM unnest(start_runs.inputs) WITH ORDINALITY AS i(input, n);

    -- The checks of start_run, for every input; the first refused one is named by its position.
    SELECT i.n, jsonb_typeof(i.input) AS kind INTO v_bad
    FROM unnest(v_inputs) WITH ORDINALITY AS i(input, n)
    WHERE jsonb_typeof(i.input) <> 'object' ORDER BY i.n LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'run input % must be a JSON object, got %', v_bad.n, v_bad.kind
            USING ERRCODE = 'FF003', HINT = 'Wrap the value: {"value": ...}.';
    END IF;
    -- _payload_problem's two limits, tested set-based with the settings read once; it
    -- is called (for its message) only for an input that breaks one. A document
    -- nested deeper than max_json_depth has at least that many bracket pairs more,
    -- so a shorter text needs no depth test.
    SELECT i.n, flowforge._payload_problem(i.input, 'run input') AS problem INTO v_bad
    FROM unnest(v_inputs) WITH ORDINALITY AS i(input, n)
    CROSS JOIN flowforge.setting s
    CROSS JOIN LATERAL (SELECT octet_length(i.input::text) AS size) l
    WHERE l.size > s.max_payload_bytes
       OR (l.size >= 2 * (s.max_json_depth + 1)
           AND jsonb_path_exists(i.input, format('strict $.**{%s}', s.max_json_depth + 1)::jsonpath))
    ORDER BY i.n LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'run input %: %', v_bad.n, v_bad.problem
            USING ERRCODE = 'FF009',
                  HINT = 'Store large or deeply nested data elsewhere and pass a reference; the limits are '
                         'flowforge.setting.max_payload_bytes and max_json_depth.';
    END IF;
    SELECT k.n INTO v_bad
    FROM unnest(v_keys) WITH ORDINALITY AS k(key, n)
    WHERE k.key IS NOT NULL AND length(k.key) NOT BETWEEN 1 AND 200 ORDER BY k.n LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'idempotency key % must be 1 to 200 characters', v_bad.n
            USING ERRCODE = 'FF003', HINT = 'Use a short stable key, such as a request id.';
    END IF;

    v_workflow_id := flowforge._live_workflow(v_org, start_runs.workflow);  -- FF001 unknown, FF013 deleted
    SELECT w.id, w.name, w.kind, w.spec INTO v_workflow
    FROM flowforge.workflow w WHERE w.organization_id = v_org AND w.id = v_workflow_id;

    SELECT array_agg(gen_random_uuid()) INTO v_ids FROM generate_series(1, cardinality(v_inputs));
    IF cardinality(array_remove(v_keys, NULL)) = 0 THEN
        v_new := ARRAY(SELECT generate_series(1, cardinality(v_inputs)));
    ELSE
        -- Claim the keys first, in key order (two calls sharing keys wait for each
        -- other in one order, never in a cycle); a key already taken — by an earlier
        -- call or earlier in this one — names its run when the request matches.
        INSERT INTO flowforge.idempotency_key (organization_id, key, workflow_run_id, request_hash, created_at)
        SELECT v_org, k.key, v_ids[k.n], md5(v_workflow.name || '/' || v_inputs[k.n]::text), v_now
        FROM unnest(v_keys) WITH ORDINALITY AS k(key, n)
        WHERE k.key IS NOT NULL
        ORDER BY k.key, k.n
        ON CONFLICT DO NOTHING;
        SELECT k.n, k.key, ik.workflow_run_id INTO v_bad
        FROM unnest(v_keys) WITH ORDINALITY AS k(key, n)
        JOIN flowforge.idempotency_key ik ON ik.organization_id = v_org AND ik.key = k.key
        WHERE ik.request_hash <> md5(v_workflow.name || '/' || v_inputs[k.n]::text)
        ORDER BY k.n LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'idempotency key % was already used for a different workflow or input (run %)',
                quote_literal(v_bad.key), v_bad.workflow_run_id
                USING ERRCODE = 'FF006', HINT = 'Use a new key for a different request.';
        END IF;
        SELECT array_agg(coalesce(ik.workflow_run_id, v_ids[k.n]) ORDER BY k.n),
               array_agg(k.n ORDER BY k.n) FILTER (WHERE ik.workflow_run_id IS NULL OR ik.workflow_run_id = v_ids[k.n])
        INTO v_ids, v_new
        FROM unnest(v_keys) WITH ORDINALITY AS k(key, n)
        LEFT JOIN flowforge.idempotency_key ik ON ik.organization_id = v_org AND ik.key = k.key;
    END IF;

    IF v_new IS NOT NULL THEN
        PERFORM flowforge._start_engine_runs(v_workflow.kind, v_org,
            ARRAY(SELECT v_ids[n] FROM unnest(v_new) AS n), v_workflow.id, v_workflow.spec,
            ARRAY(SELECT v_inputs[n] FROM unnest(v_new) AS n), ARRAY(SELECT v_keys[n] FROM unnest(v_new) AS n), v_now,
            flowforge._principal());
        -- Audited like start_run: one row per run started (a repeated key writes nothing).
        v_actor := flowforge._actor();
        INSERT INTO flowforge.audit_log (organization_id, actor, action, entity, entity_id, fields, created_at)
        SELECT v_org, v_actor, 'start', 'workflow_run', v_ids[n]::text,
               CASE WHEN v_keys[n] IS NULL THEN ARRAY['workflow', 'input']
                    ELSE ARRAY['workflow', 'input', 'idempotency_key'] END, v_now
        FROM unnest(v_new) AS n;
    END IF;
    RETURN QUERY SELECT u.id FROM unnest(v_ids) WITH ORDINALITY AS u(id, n) ORDER BY u.n;
END;
$$;
COMMENT ON FUNCTION flowforge.start_runs(text, jsonb[], text[]) IS
  'start_runs(workflow text, inputs jsonb[], idempotency_keys text[] default null) -> setof uuid. Starts one run of the '
  'latest version of the named workflow per input (a NULL input is {}), in one statement and one transaction: every '
  'run is what start_run makes (for a dag its workflow_run, its task runs, its directory row and events run_started '
  'and created, written set-based; for a graph or a statemachine each run is started by its engine in turn) and is '
  'audited. Returns one run id per input, in input order. idempotency_keys, when given, is parallel to inputs (NULL '
  'where a run needs no key): a key already used with the same workflow and input — by an earlier call or earlier in '
  'this one — names that run and starts nothing. At most 100,000 inputs per call; when any input is refused nothing '
  'is written. Errors: FF001 unknown workflow; FF013 a deleted workflow; FF003 inputs NULL or over 100,000, keys not parallel, an input not an '
  'object or a bad key (the message names its position); FF006 a key reused for a different request; FF009 an input '
  'over the size limit; FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.start_runs(text,jsonb[],text[])', 'flowforge_owner', '{flowforge_app,flowforge_gateway}');

CREATE OR REPLACE FUNCTION flowforge.cancel_run(run_id uuid, reason text DEFAULT NULL) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    v_scope constant record := flowforge._authorize_scoped('member');
    v_org constant uuid := v_scope.organization_id;
    v_now constant timestamptz := flowforge.now();
BEGIN
    PERFORM flowforge._check_text_size(cancel_run.reason, 'cancel reason');
    PERFORM flowforge._cancel_engine_run(flowforge._visible_run(v_org, v_scope.creator, cancel_run.run_id), v_org,
                                         cancel_run.run_id, cancel_run.reason, v_now);
    PERFORM flowforge._stamp_run_update(v_org, cancel_run.run_id, v_now, false);
    PERFORM flowforge._audit(v_org, 'cancel', 'workflow_run', cancel_run.run_id::text,
                             CASE WHEN cancel_run.reason IS NULL THEN '{}'::text[] ELSE ARRAY['reason'] END);
END;
$$;
COMMENT ON FUNCTION flowforge.cancel_run(uuid, text) IS
  'cancel_run(run_id uuid, reason text default null). Cancels a pending or running run of the caller''s organization '
  '(a member: one it created): updated_at / updated_by record the caller; '
  'the run and every unfinished task run become cancelled; running tasks get a new fencing token, so their holders'' '
  'next heartbeat/complete/fail is refused with FF004. Events: cancelled per task, run_cancelled. '
  'Errors: FF001 no such run (for a member: none of its own); FF005 the run already finished; FF009 reason over the '
  'size limit; FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.cancel_run(uuid,text)', 'flowforge_owner', '{flowforge_app,flowforge_gateway}');

CREATE OR REPLACE FUNCTION flowforge.retry_run(run_id uuid) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    v_scope constant record := flowforge._authorize_scoped('member');
    v_org constant uuid := v_scope.organization_id;
    v_now constant timestamptz := flowforge.now();
    v_kind constant text := flowforge._visible_run(v_org, v_scope.creator, retry_run.run_id);
BEGIN
    IF EXISTS (SELECT 1 FROM flowforge.engine_run e
               WHERE e.organization_id = v_org AND e.run_id = retry_run.run_id AND e.deleted_at IS NOT NULL) THEN
        RAISE EXCEPTION 'retry_run refused: run % was deleted', retry_run.run_id
            USING ERRCODE = 'FF013', HINT = 'A deleted run stays as it ended; start a new run instead.';
    END IF;
    PERFORM flowforge._retry_engine_run(v_kind, v_org, retry_run.run_id, v_now);
    PERFORM flowforge._stamp_run_update(v_org, retry_run.run_id, v_now, false);
    PERFORM flowforge._audit(v_org, 'retry', 'workflow_run', retry_run.run_id::text);
END;
$$;
COMMENT ON FUNCTION flowforge.retry_run(uuid) IS
  'retry_run(run_id uuid). A failed or cancelled run of the caller''s organization (a member: one it created) runs '
  'again (updated_at / updated_by record the caller): every failed, cancelled '
  'or skipped task run returns to ready (or pending, while an upstream task has not succeeded) with attempt + 1 and a '
  'fresh budget of the task''s max_attempts; succeeded tasks keep their output. Events: retried per task, run_retried; '
  'NOTIFY flowforge_ready. Errors: FF001 no such run (for a member: none of its own); FF005 the run is not failed or '
  'cancelled; FF013 the run was deleted; FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.retry_run(uuid)', 'flowforge_owner', '{flowforge_app,flowforge_gateway}');

-- Run lookups shared by the verbs and the reads.

-- Which organization owns a run, whatever the caller's: owned by
-- flowforge_system (whose policy sees every organization) and closed to every
-- runtime role; only the operator read path below calls it.
CREATE OR REPLACE FUNCTION flowforge._run_organization(p_run_id uuid) RETURNS uuid
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$ SELECT e.organization_id FROM flowforge.engine_run e WHERE e.run_id = p_run_id $$;
COMMENT ON FUNCTION flowforge._run_organization(uuid) IS
  'Internal: the organization of run p_run_id across organizations, NULL when there is none.';
SELECT flowforge._rights('flowforge._run_organization(uuid)', 'flowforge_system', '{}');

-- Runs whose id starts with a prefix, across organizations (the operator's
-- `flowforge run show 1a2b`). A range on the primary key, not a LIKE scan.
CREATE OR REPLACE FUNCTION flowforge._runs_by_prefix(p_prefix text, p_org uuid, p_creator text) RETURNS uuid[]
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    v_hex constant text := replace(lower(p_prefix), '-', '');
    v_ids uuid[];
BEGIN
    SELECT array_agg(r.run_id) INTO v_ids FROM (
        SELECT e.run_id FROM flowforge.engine_run e
        WHERE e.run_id BETWEEN rpad(v_hex, 32, '0')::uuid AND rpad(v_hex, 32, 'f')::uuid
          AND (p_org IS NULL OR e.organization_id = p_org)
          AND (p_creator IS NULL OR e.created_by = p_creator)
        LIMIT 2) r;
    RETURN v_ids;
END;
$$;
COMMENT ON FUNCTION flowforge._runs_by_prefix(text, uuid, text) IS
  'Internal: up to two ids of runs whose id starts with the hex prefix p_prefix, in organization p_org (every '
  'organization when NULL), created by p_creator (anyone''s when NULL).';
SELECT flowforge._rights('flowforge._runs_by_prefix(text,uuid,text)', 'flowforge_system', '{}');

-- The organization a read of one run acts in. A tenant reads its own
-- organization's runs (viewer rights); the operator and the DBA read role
-- read any organization's: the call then acts in the run's organization, so
-- row-level security shows that organization's rows and nothing else.
CREATE OR REPLACE FUNCTION flowforge._authorize_run_read(p_run_id uuid) RETURNS uuid
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    v_org uuid;
    v_scope record;
BEGIN
    IF NOT flowforge._is_read_operator() THEN
        -- A member reads the runs it created (FF001 for anyone else's, like another organization's).
        v_scope := flowforge._authorize_scoped('viewer');
        IF v_scope.creator IS NOT NULL THEN
            PERFORM flowforge._visible_run(v_scope.organization_id, v_scope.creator, p_run_id);
        END IF;
        RETURN v_scope.organization_id;
    END IF;
    v_org := flowforge._run_organization(p_run_id);
    IF v_org IS NULL THEN
        PERFORM flowforge._run_not_found(p_run_id::text);
    END IF;
    -- For the rest of the calling API function (its SET clause restores it).
    PERFORM set_config('flowforge.caller_org', v_org::text, true);
    RETURN v_org;
END;
$$;
COMMENT ON FUNCTION flowforge._authorize_run_read(uuid) IS
  'Internal: the organization a read of run p_run_id acts in — the caller''s (viewer rights) for tenants, the run''s '
  'for operators and flowforge_readonly; a member reads only the runs it created. Errors: FF001 no such run '
  '(operators), none of the member''s own; FF007/FF008 as _authorize.';

-- A run of p_org the caller may act on or read: anyone's when p_creator is
-- NULL, else only the runs p_creator created (a member's scope). Another
-- member's run is FF001, exactly like another organization's.
CREATE OR REPLACE FUNCTION flowforge._visible_run(p_org uuid, p_creator text, p_run_id uuid) RETURNS text
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    v_engine text;
BEGIN
    SELECT e.engine_kind INTO v_engine FROM flowforge.engine_run e
    WHERE e.organization_id = p_org AND e.run_id = p_run_id AND (p_creator IS NULL OR e.created_by = p_creator);
    IF v_engine IS NULL THEN
        PERFORM flowforge._run_not_found(p_run_id::text);
    END IF;
    RETURN v_engine;
END;
$$;
COMMENT ON FUNCTION flowforge._visible_run(uuid, text, uuid) IS
  'Internal: the engine kind of run p_run_id of p_org, provided p_creator (when not NULL) created it. Errors: FF001 '
  'no such run, or not p_creator''s.';

-- A principal changed a run (cancel, retry, delete): the directory row and
-- the engine's run row record who and when (updated_*; deleted_* too).
CREATE OR REPLACE FUNCTION flowforge._stamp_run_update(p_org uuid, p_run_id uuid, p_now timestamptz, p_delete boolean)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_by constant text := flowforge._principal();
BEGIN
    UPDATE flowforge.engine_run e
    SET updated_at = p_now, updated_by = v_by,
        deleted_at = CASE WHEN p_delete THEN p_now ELSE e.deleted_at END,
        deleted_by = CASE WHEN p_delete THEN v_by ELSE e.deleted_by END
    WHERE e.organization_id = p_org AND e.run_id = p_run_id;
    UPDATE flowforge.workflow_run r
    SET updated_at = p_now, updated_by = v_by,
        deleted_at = CASE WHEN p_delete THEN p_now ELSE r.deleted_at END,
        deleted_by = CASE WHEN p_delete THEN v_by ELSE r.deleted_by END
    WHERE r.id = p_run_id AND r.organization_id = p_org;
    UPDATE flowforge.graph_run g
    SET updated_at = p_now, updated_by = v_by,
        deleted_at = CASE WHEN p_delete THEN p_now ELSE g.deleted_at END,
        deleted_by = CASE WHEN p_delete THEN v_by ELSE g.deleted_by END
    WHERE g.organization_id = p_org AND g.run_id = p_run_id;
    UPDATE flowforge.machine_run m
    SET updated_at = p_now, updated_by = v_by,
        deleted_at = CASE WHEN p_delete THEN p_now ELSE m.deleted_at END,
        deleted_by = CASE WHEN p_delete THEN v_by ELSE m.deleted_by END
    WHERE m.organization_id = p_org AND m.run_id = p_run_id;
END;
$$;
COMMENT ON FUNCTION flowforge._stamp_run_update(uuid, uuid, timestamptz, boolean) IS
  'Internal: stamps updated_at / updated_by (and with p_delete deleted_at / deleted_by) with the caller''s principal '
  'on run p_run_id''s directory row and its engine''s run row.';

-- Soft delete of a finished run: hidden from listings (include_deleted =>
-- true shows it), nothing removed — get_run, run_events, its firings and its
-- audit trail read it as before; it can no longer be retried.
CREATE OR REPLACE FUNCTION flowforge.delete_run(run_id uuid) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    v_scope constant record := flowforge._authorize_scoped('member');
    v_org constant uuid := v_scope.organization_id;
    v_now constant timestamptz := flowforge.now();
    v_kind text;
    v_state text;
    v_deleted timestamptz;
BEGIN
    PERFORM flowforge._visible_run(v_org, v_scope.creator, delete_run.run_id);  -- FF001 unknown, foreign, not the member's
    -- The run's lock first (the order every writer of a run follows), then its state.
    v_kind := flowforge._lock_run(v_org, delete_run.run_id);
    SELECT e.deleted_at INTO v_deleted FROM flowforge.engine_run e
    WHERE e.organization_id = v_org AND e.run_id = delete_run.run_id;
    IF v_deleted IS NOT NULL THEN
        RAISE EXCEPTION 'run % was already deleted (at %)', delete_run.run_id, v_deleted
            USING ERRCODE = 'FF013', HINT = 'list_runs(include_deleted => true) shows deleted runs.';
    END IF;
    v_state := CASE v_kind
        WHEN 'dag' THEN (SELECT r.state FROM flowforge.workflow_run r
                         WHERE r.id = delete_run.run_id AND r.organization_id = v_org)
        WHEN 'graph' THEN (SELECT g.status FROM flowforge.graph_run g
                           WHERE g.organization_id = v_org AND g.run_id = delete_run.run_id)
        WHEN 'statemachine' THEN (SELECT m.status FROM flowforge.machine_run m
                                  WHERE m.organization_id = v_org AND m.run_id = delete_run.run_id) END;
    IF v_state IS NULL OR v_state NOT IN ('succeeded', 'failed', 'cancelled') THEN
        RAISE EXCEPTION 'delete_run refused: run % is %', delete_run.run_id, coalesce(v_state, 'not started')
            USING ERRCODE = 'FF005', HINT = 'Only a finished run (succeeded, failed, cancelled) can be deleted; cancel it first.';
    END IF;
    PERFORM flowforge._stamp_run_update(v_org, delete_run.run_id, v_now, true);
    PERFORM flowforge._audit(v_org, 'delete', 'workflow_run', delete_run.run_id::text);
END;
$$;
COMMENT ON FUNCTION flowforge.delete_run(run_id uuid) IS
  'delete_run(run_id uuid). Soft-deletes a finished (succeeded, failed or cancelled) run of any engine of the caller''s '
  'organization (a member: one it created): deleted_at / deleted_by (the caller) on its directory row and its '
  'engine''s run row. list_runs hides it unless include_deleted => true; nothing is removed — get_run (which shows '
  'deleted_at), run_events, fan_out_output, its firings and audit rows read it as before; retry_run refuses it. '
  'Member rights. Audited. Errors: FF001 no such run (for a member: none of its own); FF005 the run is not finished; '
  'FF013 already deleted; FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.delete_run(uuid)', 'flowforge_owner', '{flowforge_app,flowforge_gateway}');
