-- Identity: who is calling, for which organization, with which rights.
--
-- A caller's organization comes from something it cannot forge:
--   1. a gateway login (member of flowforge_gateway) acts for the API key it
--      verified with flowforge.authenticate() in the current transaction — a
--      token in a transaction-local setting, bound to the backend and the
--      transaction's start and signed (HMAC) with a server secret only these
--      functions can read, so a copied or edited token is refused; every call
--      re-checks that the key is not revoked;
--   2. any other login acts for the organization its own role (session_user,
--      which SET ROLE does not change) is a member of;
--   3. superusers and members of flowforge_owner (single-tenant use, the
--      operator) act for the built-in default organization.
-- Never from a setting: every database user can SET any custom GUC.
-- These functions are owned by flowforge_system, whose RLS policy sees every
-- organization (they read membership before an organization is known).

-- A superuser session (rule 3), as a simple expression: pg_has_role is true for
-- every superuser whatever the role, and for anyone else only for members of
-- flowforge_system, which no login is ever granted (the schema's own functions
-- act as it, and a member would bypass every organization's RLS anyway:
-- docs/security.md; tests/sql/00_core/identity_rules.sql checks it has no
-- members). Live, as the query on pg_roles it replaces, without that query's
-- executor start on every API call.
CREATE OR REPLACE FUNCTION flowforge._session_is_superuser() RETURNS boolean
LANGUAGE sql STABLE
AS $$ SELECT pg_catalog.pg_has_role(session_user, 'flowforge_system', 'MEMBER') $$;
COMMENT ON FUNCTION flowforge._session_is_superuser() IS
  'Internal: true when the session''s login (session_user, which SET ROLE does not change) is a superuser.';

CREATE OR REPLACE FUNCTION flowforge._caller(OUT organization_id uuid, OUT role text)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    v_user constant name := session_user;
    v_count integer;
BEGIN
    -- Superusers first: pg_has_role() is true for them whatever the role.
    IF flowforge._session_is_superuser() THEN
        organization_id := '00000000-0000-0000-0000-000000000001';
        role := 'owner';
        RETURN;
    END IF;
    IF pg_has_role(v_user, 'flowforge_gateway', 'MEMBER') THEN
        SELECT g.organization_id, g.role INTO organization_id, role FROM flowforge._gateway_identity() g;
        RETURN;
    END IF;
    SELECT min(m.organization_id::text)::uuid, min(m.role), count(*) INTO organization_id, role, v_count
    FROM flowforge.membership m WHERE m.member = v_user;
    IF v_count = 1 THEN
        RETURN;
    END IF;
    IF pg_has_role(v_user, 'flowforge_owner', 'MEMBER') THEN
        organization_id := '00000000-0000-0000-0000-000000000001';
        role := 'owner';
        RETURN;
    END IF;
    RAISE EXCEPTION 'role % is not a member of any organization', v_user
        USING ERRCODE = 'FF007', HINT = 'An organization admin maps it with flowforge.add_member(organization, member, role).';
END;
$$;
COMMENT ON FUNCTION flowforge._caller() IS
  'Internal: the caller''s organization and membership role, from its gateway authentication, its login role''s '
  'membership, or (superuser / flowforge_owner) the default organization as owner. Errors: FF008 gateway not '
  'authenticated in this transaction; FF007 the login role belongs to no organization.';
SELECT flowforge._rights('flowforge._caller()', 'flowforge_system', '{flowforge_app,flowforge_worker,flowforge_daemon,flowforge_gateway,flowforge_readonly}');

-- Gateway tokens: what authenticate() hands a transaction, and how every call
-- checks it. v1.<key id>.<organization>.<role>.<backend pid>.<transaction start,
-- µs since the epoch>.<HMAC-SHA256 of the rest, hex>. No row is written, so a
-- gateway transaction that only reads consumes no transaction id, and nothing
-- can make revoke_api_key wait.
CREATE OR REPLACE FUNCTION flowforge._gateway_token(p_api_key_id uuid, p_organization_id uuid, p_role text) RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_payload constant text := concat_ws('.', 'v1', p_api_key_id, p_organization_id, p_role, pg_backend_pid(),
                                         (extract(epoch FROM pg_catalog.now()) * 1000000)::bigint);
BEGIN
    RETURN v_payload || '.' || encode(flowforge._hmac_sha256(
        (SELECT s.gateway_key FROM flowforge.server_secret s), convert_to(v_payload, 'UTF8')), 'hex');
END;
$$;
COMMENT ON FUNCTION flowforge._gateway_token(uuid, uuid, text) IS
  'Internal: the signed token authenticate() stores for the current transaction (readable only under '
  'flowforge_system''s policy on server_secret).';

CREATE OR REPLACE FUNCTION flowforge._gateway_identity(OUT api_key_id uuid, OUT organization_id uuid, OUT role text)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_token constant text := current_setting('flowforge.gateway', true);
    v_parts text[];
    v_live boolean;
BEGIN
    v_parts := string_to_array(v_token, '.');
    -- One answer for a missing, malformed, copied, edited or stale token.
    IF v_token IS NULL OR cardinality(v_parts) <> 7 OR v_parts[1] <> 'v1' OR v_parts[7] !~ '^[0-9a-f]{64}$'
       OR v_parts[5] <> pg_backend_pid()::text
       OR v_parts[6] <> ((extract(epoch FROM pg_catalog.now()) * 1000000)::bigint)::text
       OR NOT flowforge._bytes_equal(
                  flowforge._hmac_sha256((SELECT s.gateway_key FROM flowforge.server_secret s),
                                         convert_to(array_to_string(v_parts[1:6], '.'), 'UTF8')),
                  decode(v_parts[7], 'hex')) THEN
        RAISE EXCEPTION 'not authenticated: call flowforge.authenticate(api_key) first in this transaction'
            USING ERRCODE = 'FF008', HINT = 'A gateway connection authenticates every transaction with an API key.';
    END IF;
    api_key_id := v_parts[2]::uuid;
    organization_id := v_parts[3]::uuid;
    role := v_parts[4];
    -- Revocation takes effect at the holder's next call, even inside an open transaction.
    SELECT k.revoked_at IS NULL INTO v_live FROM flowforge.api_key k WHERE k.id = api_key_id;
    IF v_live IS NOT TRUE THEN
        RAISE EXCEPTION 'invalid API key' USING ERRCODE = 'FF008', HINT = 'Check the key; a revoked key is invalid.';
    END IF;
END;
$$;
COMMENT ON FUNCTION flowforge._gateway_identity() IS
  'Internal: the API key, organization and role of the current gateway transaction, from its signed token. '
  'Errors: FF008 no valid token for this backend and transaction, or the key was revoked since.';

-- Inside an API call the organization is resolved once, by _authorize, and
-- kept in flowforge.caller_org for the rest of that call: every SECURITY
-- DEFINER function pins flowforge.caller_org = '' in its SET clause, so the
-- value a caller may SET is discarded on entry and whatever _authorize stores
-- is discarded on exit. The cache is read only while FlowForge's own roles
-- are the current user (inside those definer functions, which no tenant can
-- SET ROLE to); any other caller gets its organization resolved afresh.
-- current_organization() is plain SQL with no SET clause and no sub-select:
-- the planner inlines it into each RLS policy's InitPlan, so a policy costs
-- one current_setting() per statement.
CREATE OR REPLACE FUNCTION flowforge._caller_organization() RETURNS uuid
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$ SELECT c.organization_id FROM flowforge._caller() c $$;
COMMENT ON FUNCTION flowforge._caller_organization() IS
  'Internal: the organization part of _caller(), resolved afresh.';
SELECT flowforge._rights('flowforge._caller_organization()', 'flowforge_system', '{flowforge_app,flowforge_worker,flowforge_daemon,flowforge_gateway,flowforge_readonly}');

CREATE OR REPLACE FUNCTION flowforge.current_organization() RETURNS uuid
LANGUAGE sql STABLE
AS $$
    SELECT CASE WHEN CURRENT_USER IN ('flowforge_owner', 'flowforge_system')
                THEN coalesce(NULLIF(pg_catalog.current_setting('flowforge.caller_org', true), '')::uuid,
                              flowforge._caller_organization())
                ELSE flowforge._caller_organization() END
$$;
COMMENT ON FUNCTION flowforge.current_organization() IS
  'current_organization() -> uuid. The organization the caller acts in (see _caller): every API function and every '
  'RLS policy of a tenant table scopes by it. Errors: FF007 no membership; FF008 gateway not authenticated.';
SELECT flowforge._rights('flowforge.current_organization()', 'flowforge_owner', '{flowforge_app,flowforge_worker,flowforge_daemon,flowforge_gateway,flowforge_readonly}');

-- Rank of a membership role, for "at least" checks.
CREATE OR REPLACE FUNCTION flowforge._role_rank(p_role text) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT array_position(ARRAY['viewer', 'member', 'admin', 'owner'], p_role) $$;
COMMENT ON FUNCTION flowforge._role_rank(text) IS 'Internal: viewer 1, member 2, admin 3, owner 4; NULL otherwise.';

-- The caller's organization, provided its role is at least p_min_role.
CREATE OR REPLACE FUNCTION flowforge._authorize(p_min_role text) RETURNS uuid
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    v_caller record;
    v_org uuid := '00000000-0000-0000-0000-000000000001';
    v_role text := 'owner';
    v_cached text;
BEGIN
    -- Every API call starts here, so every statement counts (benchmarks/RESULTS.md, stop 32): a
    -- superuser session takes _caller's first rule without the SECURITY DEFINER call (4 % of a
    -- fan-out task), any other caller calls it as a simple expression, not as a query.
    IF NOT flowforge._session_is_superuser() THEN
        v_caller := flowforge._caller();
        v_org := v_caller.organization_id;
        v_role := v_caller.role;
    END IF;
    IF flowforge._role_rank(v_role) < flowforge._role_rank(p_min_role) THEN
        RAISE EXCEPTION 'permission denied: this needs the % role, % has %', p_min_role, session_user, v_role
            USING ERRCODE = 'FF007', HINT = 'Ask an organization admin for a role with more rights.';
    END IF;
    -- Cache for the rest of this API call (see current_organization).
    v_cached := set_config('flowforge.caller_org', v_org::text, true);
    RETURN v_org;
END;
$$;
COMMENT ON FUNCTION flowforge._authorize(text) IS
  'Internal: the caller''s organization if its membership role is at least p_min_role (FF007 otherwise); stores it in '
  'flowforge.caller_org for the rest of the calling API function.';

-- Whoever may manage organizations themselves: superusers and the schema owner's members.
CREATE OR REPLACE FUNCTION flowforge._is_operator() RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT flowforge._session_is_superuser()
        OR pg_has_role(session_user, 'flowforge_owner', 'MEMBER')
$$;
COMMENT ON FUNCTION flowforge._is_operator() IS
  'Internal: true for superusers and members of flowforge_owner (who manage organizations).';

-- A gateway login: acts for the API key of each transaction, never for its own role.
CREATE OR REPLACE FUNCTION flowforge._is_gateway() RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT NOT flowforge._session_is_superuser()
       AND pg_has_role(session_user, 'flowforge_gateway', 'MEMBER')
$$;
COMMENT ON FUNCTION flowforge._is_gateway() IS
  'Internal: true for a login that is a member of flowforge_gateway (superusers excluded: pg_has_role is true for '
  'them whatever the role).';

-- Who may read any organization's runs (get_run, run_events, resolve_run_id):
-- the operator and the DBA read role. Never a tenant: add_member refuses to
-- map a login that belongs to flowforge_readonly or flowforge_owner.
CREATE OR REPLACE FUNCTION flowforge._is_read_operator() RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT flowforge._is_operator()
        OR (pg_has_role(session_user, 'flowforge_readonly', 'MEMBER') AND NOT flowforge._is_gateway())
$$;
COMMENT ON FUNCTION flowforge._is_read_operator() IS
  'Internal: true for superusers, members of flowforge_owner and members of flowforge_readonly (not a gateway).';

-- Who is acting, as recorded in audit rows and in created_by / updated_by:
-- the login role, plus the API key's prefix for a gateway call. Never an argument.
CREATE OR REPLACE FUNCTION flowforge._actor() RETURNS text
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
BEGIN
    IF flowforge._is_gateway() THEN
        RETURN session_user::text || coalesce(' via key ' || (SELECT k.prefix FROM flowforge.api_key k
                                                             WHERE k.id = (SELECT g.api_key_id
                                                                           FROM flowforge._gateway_identity() g)), '');
    END IF;
    RETURN session_user::text;
END;
$$;
COMMENT ON FUNCTION flowforge._actor() IS
  'Internal: the caller as recorded in audit rows and created_by/updated_by — the login role, "<login> via key '
  'ffk_<prefix>" for a gateway. Errors: FF008 a gateway without a valid token.';
SELECT flowforge._rights('flowforge._actor()', 'flowforge_system', '{}');

-- Whom a row belongs to, as recorded in created_by / updated_by / deleted_by
-- and compared by the member role's creator scope (seed 002: reads scoped to
-- created_by = caller): a login's role name (session_user), or for a gateway
-- call the API key it authenticated with, by its public prefix (ffk_<12 hex>)
-- — the key is the caller, whichever gateway login carried it. add_member
-- refuses a login named like a key prefix, so the two never collide. Never
-- an argument, never a setting.
CREATE OR REPLACE FUNCTION flowforge._principal() RETURNS text
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
BEGIN
    IF flowforge._is_gateway() THEN
        RETURN (SELECT k.prefix::text FROM flowforge.api_key k
                WHERE k.id = (SELECT g.api_key_id FROM flowforge._gateway_identity() g));
    END IF;
    RETURN session_user::text;
END;
$$;
COMMENT ON FUNCTION flowforge._principal() IS
  'Internal: the caller as recorded in created_by / updated_by / deleted_by and compared by the member role''s creator '
  'scope — the login role, or the API key prefix (ffk_<12 hex>) of a gateway call. Errors: FF008 a gateway without a '
  'valid token.';
SELECT flowforge._rights('flowforge._principal()', 'flowforge_system', '{}');

-- The caller's organization (at least p_min_role) and whose runs it may see:
-- NULL for the whole organization (viewer, admin, owner), its principal for
-- the member role (seed 002's creator-scoped reads). The worker protocol
-- (claims, completions, send_event, a trigger's starts) never asks.
CREATE OR REPLACE FUNCTION flowforge._authorize_scoped(p_min_role text, OUT organization_id uuid, OUT creator text)
LANGUAGE plpgsql STABLE
AS $$
BEGIN
    organization_id := flowforge._authorize(p_min_role);
    IF (SELECT c.role FROM flowforge._caller() c) = 'member' THEN
        creator := flowforge._principal();
    END IF;
END;
$$;
COMMENT ON FUNCTION flowforge._authorize_scoped(text) IS
  'Internal: _authorize(p_min_role) and the creator scope of the caller — its principal for the member role, NULL '
  '(the whole organization) for viewer, admin and owner. Errors: FF007/FF008 as _authorize.';

-- Append to the audit log: field names and ids, never values (seed 002's rule).
CREATE OR REPLACE FUNCTION flowforge._audit(p_organization_id uuid, p_action text, p_entity text, p_entity_id text,
                                            p_fields text[] DEFAULT '{}')
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
BEGIN
    INSERT INTO flowforge.audit_log (organization_id, actor, action, entity, entity_id, fields, created_at)
    VALUES (p_organization_id, flowforge._actor(), p_action, p_entity, p_entity_id, p_fields, flowforge.now());
END;
$$;
COMMENT ON FUNCTION flowforge._audit(uuid, text, text, text, text[]) IS
  'Internal: appends an audit_log row (actor = login role, plus the API key prefix for gateway calls; field names, '
  'never values).';
SELECT flowforge._rights('flowforge._audit(uuid,text,text,text,text[])', 'flowforge_system', '{}');

CREATE OR REPLACE FUNCTION flowforge.create_organization(slug text, name text) RETURNS uuid
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    v_id uuid;
BEGIN
    IF NOT flowforge._is_operator() THEN
        RAISE EXCEPTION 'permission denied: only the operator (superuser or flowforge_owner member) creates organizations'
            USING ERRCODE = 'FF007', HINT = 'Ask the database operator.';
    END IF;
    IF create_organization.slug IS NULL OR create_organization.slug !~ '^[a-z][a-z0-9-]{0,62}$' THEN
        RAISE EXCEPTION 'organization slug must be 1-63 lowercase letters, digits or "-" starting with a letter'
            USING ERRCODE = 'FF003', HINT = 'For example: acme-corp.';
    END IF;
    IF create_organization.name IS NULL OR length(btrim(create_organization.name)) NOT BETWEEN 1 AND 200 THEN
        RAISE EXCEPTION 'organization name must be 1 to 200 characters' USING ERRCODE = 'FF003', HINT = 'A display name.';
    END IF;
    INSERT INTO flowforge.organization (slug, name, created_at)
    VALUES (create_organization.slug, create_organization.name, flowforge.now())
    ON CONFLICT ON CONSTRAINT uniq_organization_slug DO NOTHING
    RETURNING id INTO v_id;
    IF v_id IS NULL THEN
        RAISE EXCEPTION 'organization % already exists', quote_literal(create_organization.slug)
            USING ERRCODE = 'FF003', HINT = 'Pick another slug.';
    END IF;
    PERFORM flowforge._audit(v_id, 'create', 'organization', v_id::text, ARRAY['slug', 'name']);
    RETURN v_id;
END;
$$;
COMMENT ON FUNCTION flowforge.create_organization(text, text) IS
  'create_organization(slug text, name text) -> uuid. Operator only (superuser or member of flowforge_owner). Audited. '
  'Errors: FF007 not the operator; FF003 bad or taken slug, bad name; FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.create_organization(text,text)', 'flowforge_system', '{}');

-- The organization named by slug, if the caller may administer it.
CREATE OR REPLACE FUNCTION flowforge._administered_organization(p_slug text) RETURNS uuid
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_id uuid;
BEGIN
    -- Rights first, so a member learns nothing about which slugs exist; then
    -- "not found" and "not yours" are the same answer.
    IF flowforge._is_operator() THEN
        SELECT o.id INTO v_id FROM flowforge.organization o WHERE o.slug = p_slug;
    ELSE
        SELECT o.id INTO v_id FROM flowforge.organization o
        WHERE o.slug = p_slug AND o.id = flowforge._authorize('admin');
    END IF;
    IF v_id IS NULL THEN
        RAISE EXCEPTION 'organization % not found', coalesce(quote_literal(p_slug), 'NULL')
            USING ERRCODE = 'FF001', HINT = 'Check the slug; you can only manage your own organization.';
    END IF;
    RETURN v_id;
END;
$$;
COMMENT ON FUNCTION flowforge._administered_organization(text) IS
  'Internal: the id of the organization with this slug when the caller is the operator or an admin/owner of it. '
  'FF007 when the caller is not an admin (checked before any lookup), FF001 for an unknown slug or another '
  'organization''s (no existence oracle).';

-- Nobody hands out more rights than they hold: an admin cannot create an
-- owner key, map an owner, or change or remove a member who outranks it.
CREATE OR REPLACE FUNCTION flowforge._check_grantable(p_role text, p_current_role text) RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_mine text;
BEGIN
    IF flowforge._is_operator() THEN
        RETURN;
    END IF;
    SELECT c.role INTO v_mine FROM flowforge._caller() c;
    IF flowforge._role_rank(p_role) > flowforge._role_rank(v_mine)
       OR flowforge._role_rank(p_current_role) > flowforge._role_rank(v_mine) THEN
        RAISE EXCEPTION 'permission denied: a % cannot grant or change the % role', v_mine,
            CASE WHEN flowforge._role_rank(p_role) > flowforge._role_rank(v_mine) THEN p_role ELSE p_current_role END
            USING ERRCODE = 'FF007', HINT = 'Ask an organization owner.';
    END IF;
END;
$$;
COMMENT ON FUNCTION flowforge._check_grantable(text, text) IS
  'Internal: FF007 unless the caller is the operator or its membership role ranks at least as high as both the role '
  'it grants and the current role of the member or key it changes.';

CREATE OR REPLACE FUNCTION flowforge.add_member(organization text, member name, role text DEFAULT 'member')
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    v_org uuid := flowforge._administered_organization(add_member.organization);
BEGIN
    IF flowforge._role_rank(add_member.role) IS NULL THEN
        RAISE EXCEPTION 'role must be owner, admin, member or viewer, got %', coalesce(quote_literal(add_member.role), 'NULL')
            USING ERRCODE = 'FF003', HINT = 'viewer reads; member runs workflows; admin manages keys and members.';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = add_member.member AND NOT r.rolsuper)
       OR add_member.member::text LIKE 'flowforge\_%'
       -- A key prefix is a gateway caller's principal (_principal): no login may share one.
       OR add_member.member::text ~* '^ffk_'
       OR pg_has_role(add_member.member, 'flowforge_owner', 'MEMBER')
       OR pg_has_role(add_member.member, 'flowforge_system', 'MEMBER')
       OR pg_has_role(add_member.member, 'flowforge_gateway', 'MEMBER')
       OR pg_has_role(add_member.member, 'flowforge_daemon', 'MEMBER')
       OR pg_has_role(add_member.member, 'flowforge_readonly', 'MEMBER') THEN
        -- The operator's, the daemon's and the gateway's logins act for no tenant.
        RAISE EXCEPTION 'member must be an existing login role that is not a superuser, nor a member of a flowforge_* role, nor named like an API key (ffk_...), got %',
            quote_ident(add_member.member)
            USING ERRCODE = 'FF003', HINT = 'CREATE ROLE ... LOGIN first.';
    END IF;
    PERFORM flowforge._check_grantable(add_member.role,
        (SELECT m.role FROM flowforge.membership m WHERE m.organization_id = v_org AND m.member = add_member.member));
    IF EXISTS (SELECT 1 FROM flowforge.membership m
               WHERE m.member = add_member.member AND m.organization_id <> v_org) THEN
        RAISE EXCEPTION 'role % already belongs to another organization', quote_ident(add_member.member)
            USING ERRCODE = 'FF003', HINT = 'A login role acts for exactly one organization; create one role per organization.';
    END IF;
    INSERT INTO flowforge.membership AS m (organization_id, member, role, created_at)
    VALUES (v_org, add_member.member, add_member.role, flowforge.now())
    ON CONFLICT ON CONSTRAINT uniq_membership_org_member DO UPDATE SET role = EXCLUDED.role;
    EXECUTE format('GRANT flowforge_app, flowforge_worker TO %I', add_member.member);
    PERFORM flowforge._audit(v_org, 'add', 'membership', add_member.member::text, ARRAY['member', 'role']);
END;
$$;
COMMENT ON FUNCTION flowforge.add_member(text, name, text) IS
  'add_member(organization text, member name, role text default ''member''). Maps a database login role to the '
  'organization (slug) with a membership role (owner/admin/member/viewer) and grants it flowforge_app and '
  'flowforge_worker; the functions themselves check the membership role. A role belongs to one organization; a role named ffk_... (an API key''s '
  'form) is refused. Operator or organization admin only. Audited. Errors: FF001 no such organization (or not yours); FF003 bad role or '
  'member; FF007 not an admin; FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.add_member(text,name,text)', 'flowforge_system', '{flowforge_app,flowforge_gateway}');

-- The operator's onboarding path: map a login (add_member) and give it safe
-- timeouts, so a stuck client cannot hold locks, a snapshot or a connection
-- slot for long. SECURITY INVOKER on purpose: ALTER ROLE ... SET needs
-- CREATEROLE, which FlowForge's own roles must never hold, so this runs with
-- the operator's rights (superuser or CREATEROLE). Group-role settings do not
-- reach member logins, which is why they are set on the login itself.
CREATE OR REPLACE FUNCTION flowforge.onboard_login(organization text, member name, role text DEFAULT 'member',
                                                   statement_timeout text DEFAULT '30s',
                                                   lock_timeout text DEFAULT '5s',
                                                   idle_in_transaction_timeout text DEFAULT '60s')
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_setting record;
    v_old text;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = current_user AND (r.rolsuper OR r.rolcreaterole)) THEN
        RAISE EXCEPTION 'onboard_login sets role defaults and needs a superuser or CREATEROLE operator, not %', current_user
            USING ERRCODE = 'FF007', HINT = 'An organization admin can map the login with add_member; the operator sets its timeouts.';
    END IF;
    PERFORM flowforge.add_member(onboard_login.organization, onboard_login.member, onboard_login.role);
    FOR v_setting IN
        SELECT * FROM (VALUES ('statement_timeout', onboard_login.statement_timeout),
                              ('lock_timeout', onboard_login.lock_timeout),
                              ('idle_in_transaction_session_timeout', onboard_login.idle_in_transaction_timeout))
                      AS t(name, value)
    LOOP
        -- A duration PostgreSQL accepts for the setting, or FF003 before anything
        -- changes (tried on this transaction, then put back).
        BEGIN
            v_old := current_setting(v_setting.name);
            PERFORM set_config(v_setting.name, v_setting.value, true);
            PERFORM set_config(v_setting.name, v_old, true);
        EXCEPTION WHEN invalid_parameter_value THEN
            RAISE EXCEPTION '% must be a duration such as ''30s'', got %', v_setting.name, quote_literal(v_setting.value)
                USING ERRCODE = 'FF003', HINT = 'Use PostgreSQL''s units: ms, s, min, h.';
        END;
        EXECUTE format('ALTER ROLE %I SET %I = %L', onboard_login.member, v_setting.name, v_setting.value);
    END LOOP;
END;
$$;
COMMENT ON FUNCTION flowforge.onboard_login(text, name, text, text, text, text) IS
  'onboard_login(organization text, member name, role text default ''member'', statement_timeout text default ''30s'', '
  'lock_timeout text default ''5s'', idle_in_transaction_timeout text default ''60s''). The operator''s way to '
  'onboard a tenant login: add_member, then ALTER ROLE member SET the three timeouts (new sessions of that login get '
  'them). Runs with the caller''s rights (superuser or CREATEROLE). Errors: FF007 caller may not alter roles; FF003 a '
  'bad duration, role or member; FF007/FF008 as for every API call; and what add_member raises (an unknown organization).';
SELECT flowforge._rights('flowforge.onboard_login(text,name,text,text,text,text)', 'flowforge_owner', '{}');

CREATE OR REPLACE FUNCTION flowforge.remove_member(organization text, member name) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    v_org uuid := flowforge._administered_organization(remove_member.organization);
BEGIN
    PERFORM flowforge._check_grantable(NULL,
        (SELECT m.role FROM flowforge.membership m WHERE m.organization_id = v_org AND m.member = remove_member.member));
    DELETE FROM flowforge.membership m WHERE m.organization_id = v_org AND m.member = remove_member.member;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'member % not found', quote_ident(remove_member.member)
            USING ERRCODE = 'FF001', HINT = 'flowforge.add_member maps a role to an organization.';
    END IF;
    EXECUTE format('REVOKE flowforge_app, flowforge_worker FROM %I', remove_member.member);
    PERFORM flowforge._audit(v_org, 'remove', 'membership', remove_member.member::text, ARRAY['member']);
END;
$$;
COMMENT ON FUNCTION flowforge.remove_member(text, name) IS
  'remove_member(organization text, member name). Removes the mapping and revokes flowforge_app and flowforge_worker '
  'from the role. Operator or organization admin only. Audited. Errors: FF001 no such organization or member; FF007; FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.remove_member(text,name)', 'flowforge_system', '{flowforge_app,flowforge_gateway}');

CREATE OR REPLACE FUNCTION flowforge.create_api_key(organization text, name text, role text DEFAULT 'member')
RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    v_org uuid := flowforge._administered_organization(create_api_key.organization);
    v_prefix text := 'ffk_' || left(replace(gen_random_uuid()::text, '-', ''), 12);
    -- Two version-4 UUIDs: 244 bits from the server's strong random source.
    v_secret text := replace(gen_random_uuid()::text, '-', '') || replace(gen_random_uuid()::text, '-', '');
    v_token text;
BEGIN
    IF flowforge._role_rank(create_api_key.role) IS NULL THEN
        RAISE EXCEPTION 'role must be owner, admin, member or viewer' USING ERRCODE = 'FF003', HINT = 'member runs workflows.';
    END IF;
    IF create_api_key.name IS NULL OR length(create_api_key.name) NOT BETWEEN 1 AND 100 THEN
        RAISE EXCEPTION 'key name must be 1 to 100 characters' USING ERRCODE = 'FF003', HINT = 'Name what uses the key.';
    END IF;
    PERFORM flowforge._check_grantable(create_api_key.role, NULL);
    v_token := v_prefix || '_' || v_secret;
    -- sha256 of a high-entropy token: a slow password hash would only hand attackers a CPU lever.
    WITH created AS (
        INSERT INTO flowforge.api_key (organization_id, name, prefix, hashed_key, role, created_at)
        VALUES (v_org, create_api_key.name, v_prefix, sha256(convert_to(v_token, 'UTF8')), create_api_key.role,
                flowforge.now())
        RETURNING id
    )
    INSERT INTO flowforge.api_key_usage (api_key_id, organization_id) SELECT c.id, v_org FROM created c;
    PERFORM flowforge._audit(v_org, 'create', 'api_key', v_prefix, ARRAY['name', 'role', 'prefix']);
    RETURN v_token;
END;
$$;
COMMENT ON FUNCTION flowforge.create_api_key(text, text, text) IS
  'create_api_key(organization text, name text, role text default ''member'') -> text. Returns the new key once '
  '(ffk_<12 hex prefix>_<64 hex secret>); only its sha256 and prefix are stored. Operator or organization admin only. '
  'Audited (no secret). Errors: FF001 no such organization (or not yours); FF003 bad role or name; FF007 not an admin; FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.create_api_key(text,text,text)', 'flowforge_system', '{flowforge_app,flowforge_gateway}');

CREATE OR REPLACE FUNCTION flowforge.revoke_api_key(prefix text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    v_operator constant boolean := flowforge._is_operator();
    v_mine uuid;
    v_key record;
BEGIN
    IF NOT v_operator THEN
        v_mine := flowforge._authorize('admin');
    END IF;
    SELECT k.id, k.organization_id, k.role INTO v_key
    FROM flowforge.api_key k
    WHERE k.prefix = revoke_api_key.prefix AND (v_operator OR k.organization_id = v_mine);
    IF NOT FOUND THEN
        RAISE EXCEPTION 'API key % not found', coalesce(quote_literal(revoke_api_key.prefix), 'NULL')
            USING ERRCODE = 'FF001', HINT = 'Pass the key''s prefix (ffk_...), not the secret; only your organization''s keys.';
    END IF;
    PERFORM flowforge._check_grantable(NULL, v_key.role);
    -- No other write ever locks this row (usage is recorded in api_key_usage), so
    -- revocation never waits for the key's holder; its next call is refused.
    UPDATE flowforge.api_key k SET revoked_at = coalesce(k.revoked_at, flowforge.now()) WHERE k.id = v_key.id;
    PERFORM flowforge._audit(v_key.organization_id, 'revoke', 'api_key', revoke_api_key.prefix, ARRAY['revoked_at']);
END;
$$;
COMMENT ON FUNCTION flowforge.revoke_api_key(text) IS
  'revoke_api_key(prefix text). The key stops working at once: its holder''s next call is refused with FF008, '
  'even inside a transaction that authenticated before; revocation never waits for the holder. Operator or organization admin '
  'only. Audited. Errors: FF001 no such key (or not yours); FF007 not an admin; FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.revoke_api_key(text)', 'flowforge_system', '{flowforge_app,flowforge_gateway}');

CREATE OR REPLACE FUNCTION flowforge.authenticate(api_key text) RETURNS uuid
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    v_key record;
BEGIN
    -- Anyone else acts for its own role: succeeding here would mislead it into
    -- thinking the calls after this one act for the key's organization.
    IF NOT flowforge._is_gateway() THEN
        RAISE EXCEPTION 'authenticate is for gateway logins (members of flowforge_gateway); % acts for its own role',
            session_user
            USING ERRCODE = 'FF007',
                  HINT = 'Operators read any organization''s runs with get_run / run_events directly (docs/security.md).';
    END IF;
    SELECT k.id, k.organization_id, k.role INTO v_key
    FROM flowforge.api_key k
    WHERE k.prefix = split_part(authenticate.api_key, '_', 1) || '_' || split_part(authenticate.api_key, '_', 2)
      AND k.revoked_at IS NULL
      AND k.hashed_key = sha256(convert_to(authenticate.api_key, 'UTF8'));
    IF NOT FOUND THEN
        -- One answer for unknown, wrong and revoked keys; the key never appears in the message.
        RAISE EXCEPTION 'invalid API key' USING ERRCODE = 'FF008', HINT = 'Check the key; a revoked key is invalid.';
    END IF;
    -- Transaction-local: the identity ends with this transaction.
    PERFORM set_config('flowforge.gateway', flowforge._gateway_token(v_key.id, v_key.organization_id, v_key.role), true);
    -- At most once a minute and never waiting: concurrent gateway transactions
    -- with one key must not queue behind this row lock (and a read-only
    -- transaction writes nothing the other 59 seconds).
    UPDATE flowforge.api_key_usage u SET last_used_at = flowforge.now()
    WHERE u.api_key_id = (SELECT x.api_key_id FROM flowforge.api_key_usage x
                          WHERE x.api_key_id = v_key.id
                            AND (x.last_used_at IS NULL OR x.last_used_at < flowforge.now() - interval '1 minute')
                          FOR NO KEY UPDATE SKIP LOCKED);
    RETURN v_key.organization_id;
END;
$$;
COMMENT ON FUNCTION flowforge.authenticate(api_key text) IS
  'authenticate(api_key text) -> uuid. For gateway connections (flowforge_gateway): verifies the key (prefix lookup, '
  'sha256 compare, not revoked) and confines the rest of the current transaction to its organization and role with '
  'a signed, transaction-bound token (no row is written); returns the organization id. Records last_used_at in '
  'api_key_usage (to the minute). Errors: FF008 invalid, unknown or revoked key (one answer); FF007 the caller is not '
  'a gateway login (any other session acts for its own role).';
SELECT flowforge._rights('flowforge.authenticate(text)', 'flowforge_system', '{flowforge_gateway}');
