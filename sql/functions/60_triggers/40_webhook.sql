-- The webhook receiver's one function. `flowforge serve` hands it the raw
-- body and two headers and returns what it says; the receiver holds no API
-- key, its login may call nothing else (flowforge_webhook), and the secret
-- never leaves the database: the HMAC is computed and compared here.
--
--   receive_webhook(organization, trigger, body, signature, delivery_id)
--     -> {"status": 202 | 400 | 401 | 413, "firing": {...} | "error": "..."}

CREATE OR REPLACE FUNCTION flowforge.receive_webhook(organization text, trigger text, body bytea, signature text,
                                                     delivery_id text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    c_unauthorized constant jsonb := '{"status": 401, "error": "unknown trigger or bad signature"}';
    v_now constant timestamptz := flowforge.now();
    v_limit constant integer := (SELECT s.max_payload_bytes FROM flowforge.setting s);
    -- An empty header is no delivery id (the receiver passes none for it).
    v_delivery_id constant text := nullif(receive_webhook.delivery_id, '');
    v_org uuid;
    v_trigger record;
    v_mac bytea;
    v_payload jsonb;
    v_firing jsonb;
BEGIN
    IF receive_webhook.body IS NULL OR octet_length(receive_webhook.body) > v_limit THEN
        RETURN jsonb_build_object('status', 413, 'error', format('the body is over the limit of %s bytes', v_limit));
    END IF;
    -- Two ids sharing their first 200 characters must never be one delivery.
    IF length(v_delivery_id) > 200 THEN
        RETURN jsonb_build_object('status', 400, 'error', 'the delivery id (X-FlowForge-Delivery) is over 200 characters');
    END IF;
    SELECT o.id INTO v_org FROM flowforge.organization o WHERE o.slug = receive_webhook.organization;
    SELECT t.id, t.name, t.trigger_type, s.secret INTO v_trigger
    FROM flowforge.scheduled_trigger t
    JOIN flowforge.trigger_secret s ON s.trigger_id = t.id
    WHERE t.organization_id = v_org AND t.name = receive_webhook.trigger AND t.trigger_type = 'webhook'
      AND t.deleted_at IS NULL;
    IF v_trigger.id IS NULL THEN
        RETURN c_unauthorized;  -- the same answer as a bad signature: nothing to learn about names
    END IF;
    IF receive_webhook.signature ~ '^sha256=[0-9A-Fa-f]{64}$' THEN
        v_mac := decode(substr(receive_webhook.signature, 8), 'hex');
    END IF;
    BEGIN
        v_payload := convert_from(receive_webhook.body, 'UTF8')::jsonb;
    EXCEPTION WHEN OTHERS THEN
        v_payload := NULL;
    END;
    IF NOT flowforge._bytes_equal(v_mac, flowforge._hmac_sha256(v_trigger.secret, receive_webhook.body)) THEN
        -- What arrived is kept (unverified) with the refusal: that is what this log
        -- is for. Not its delivery id: an unsigned request must never take the
        -- id of a genuine delivery that comes later.
        PERFORM flowforge._record_firing(flowforge.uuid7(), v_org, v_trigger.id, v_trigger.name, 'webhook',
            coalesce(v_payload, jsonb_build_object('body_bytes', octet_length(receive_webhook.body))), NULL, NULL, NULL,
            NULL, 'refused',
            'the signature does not match the body (X-FlowForge-Signature)'
            || coalesce('; claimed delivery id ' || quote_literal(v_delivery_id), ''),
            v_now, NULL, v_now);
        RETURN c_unauthorized;
    END IF;
    IF v_payload IS NULL THEN
        -- A delivery already recorded is answered as every replay is, whatever
        -- its body: one firing per delivery (a second row would break
        -- trigger_firing_delivery_uq).
        v_firing := flowforge._delivered_firing(v_org, v_trigger.id, v_delivery_id);
        IF v_firing IS NOT NULL THEN
            RETURN jsonb_build_object('status', 202, 'firing', v_firing);
        END IF;
        PERFORM flowforge._record_firing(flowforge.uuid7(), v_org, v_trigger.id, v_trigger.name, 'webhook',
            jsonb_build_object('body_bytes', octet_length(receive_webhook.body)), NULL, NULL, NULL, NULL, 'refused',
            'the body is not JSON', v_now, v_delivery_id, v_now);
        RETURN jsonb_build_object('status', 400, 'error', 'the body is not JSON');
    END IF;
    PERFORM flowforge._check_size(v_payload, 'webhook body');
    v_firing := flowforge._fire_trigger(v_org, v_trigger.id, v_trigger.name, v_payload, v_now,
                                        v_delivery_id, v_now);
    RETURN jsonb_build_object('status', 202, 'firing', v_firing);
END;
$$;
COMMENT ON FUNCTION flowforge.receive_webhook(text, text, bytea, text, text) IS
  'receive_webhook(organization text, trigger text, body bytea, signature text, delivery_id text default null) -> '
  'jsonb {"status", "firing" | "error"}: the HTTP receiver''s one call. The trigger is organization''s (its slug) '
  'webhook trigger of that name; signature is the X-FlowForge-Signature header, sha256=<hex HMAC-SHA256 of the '
  'body under the trigger''s secret>, computed and compared in constant time here. 413 a body over max_payload_bytes '
  '(nothing recorded); 401 an unknown organization or trigger (nothing recorded) or a signature that does not match '
  '(a refused firing recorded) — the same answer for both; 400 a body that is not JSON (a refused firing); 202 '
  'fired, with fire_trigger''s answer under "firing" (its outcome may be refused or failed: the delivery was '
  'recorded). The same delivery_id (X-FlowForge-Delivery) returns the first firing (202, duplicate: true), whatever '
  'the body; an empty one is none; 400 one over 200 characters (nothing recorded). Executable only by '
  'flowforge_webhook. Errors: FF009 a JSON body over the limits once stored (size, nesting depth) — the receiver '
  'answers 413; FF008 a gateway login without a valid token (the firing records its actor).';
SELECT flowforge._rights('flowforge.receive_webhook(text,text,bytea,text,text)', 'flowforge_system', '{flowforge_webhook}');
