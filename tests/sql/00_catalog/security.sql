-- Security catalog (migration 0006 + sql/functions/99_grants.sql): the
-- row-level security policies of every table, and catalog invariants that
-- must hold for every object of schema flowforge — present and future. Each
-- invariant is a query for offenders checked with is_empty(), so a failure
-- lists exactly which function, table or role broke it.
--
-- See docs/security.md for why each invariant matters.
BEGIN;
SET LOCAL client_min_messages = warning;
SELECT plan(328);

-- ---------------------------------------------------------------------------
-- Roles: the eight group roles exist (0022 added flowforge_webhook, the
-- HTTP receiver's), cannot log in and carry no attribute that would bypass
-- row-level security or hand out roles.
-- ---------------------------------------------------------------------------
SELECT set_eq(
    $$SELECT rolname::text FROM pg_roles WHERE rolname LIKE 'flowforge\_%'$$,
    ARRAY['flowforge_owner', 'flowforge_system', 'flowforge_app', 'flowforge_worker', 'flowforge_daemon',
          'flowforge_gateway', 'flowforge_readonly', 'flowforge_webhook'],
    'the eight flowforge group roles exist (and no others)');

SELECT is_empty(
    $$SELECT rolname::text FROM pg_roles
      WHERE rolname IN ('flowforge_owner', 'flowforge_system', 'flowforge_app', 'flowforge_worker', 'flowforge_daemon',
                        'flowforge_gateway', 'flowforge_readonly', 'flowforge_webhook')
        AND (rolcanlogin OR rolsuper OR rolbypassrls OR rolcreaterole OR rolcreatedb OR rolreplication)$$,
    'flowforge roles are NOLOGIN, not superuser, not BYPASSRLS, not CREATEROLE/CREATEDB/REPLICATION');

SELECT is_empty(
    $$SELECT r.rolname::text || ' is a member of ' || g.rolname
      FROM pg_roles r CROSS JOIN pg_roles g
      WHERE r.rolname IN ('flowforge_app', 'flowforge_worker', 'flowforge_daemon', 'flowforge_gateway', 'flowforge_readonly',
                          'flowforge_webhook')
        AND g.rolname IN ('flowforge_owner', 'flowforge_system')
        AND pg_has_role(r.oid, g.oid, 'MEMBER')$$,
    'no runtime role is (transitively) a member of flowforge_owner or flowforge_system');

-- The owner of the tables must not be able to bypass RLS by inheritance either.
SELECT is_empty(
    $$SELECT r.rolname::text FROM pg_roles r
      WHERE r.rolname IN ('flowforge_owner', 'flowforge_system')
        AND EXISTS (SELECT 1 FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid
                    WHERE m.member = r.oid AND g.rolname NOT LIKE 'flowforge\_%')$$,
    'flowforge_owner and flowforge_system belong to no role outside flowforge_*');

-- ---------------------------------------------------------------------------
-- Row-level security: every table has it enabled AND forced, and the policy
-- set of every table is exactly the intended one.
-- ---------------------------------------------------------------------------
SELECT is_empty(
    $$SELECT c.relname::text FROM pg_class c
      WHERE c.relnamespace = 'flowforge'::regnamespace AND c.relkind IN ('r', 'p')
        AND NOT (c.relrowsecurity AND c.relforcerowsecurity)$$,
    'every flowforge table has ROW LEVEL SECURITY enabled and FORCEd');

SELECT is_empty(
    $$SELECT c.relname::text FROM pg_class c
      WHERE c.relnamespace = 'flowforge'::regnamespace AND c.relkind IN ('r', 'p')
        AND pg_get_userbyid(c.relowner) <> 'flowforge_owner'$$,
    'every flowforge table is owned by flowforge_owner');

-- A table with an organization_id column is a tenant table and must carry the isolation policy.
SELECT is_empty(
    $$SELECT c.relname::text FROM pg_class c
      WHERE c.relnamespace = 'flowforge'::regnamespace AND c.relkind IN ('r', 'p')
        AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'organization_id'
                                                   AND NOT a.attisdropped)
        AND NOT EXISTS (SELECT 1 FROM pg_policies p WHERE p.schemaname = 'flowforge' AND p.tablename = c.relname
                                                      AND p.policyname = 'tenant_isolation')$$,
    'every table with organization_id has a tenant_isolation policy');

SELECT set_eq(
    $$SELECT c.relname::text FROM pg_class c
      WHERE c.relnamespace = 'flowforge'::regnamespace AND c.relkind IN ('r', 'p')$$,
    ARRAY['membership', 'api_key', 'audit_log', 'workflow', 'task', 'task_dependency', 'scheduled_trigger',
          'workflow_run', 'task_run', 'idempotency_key', 'outbox_message', 'task_run_event', 'queue',
          'api_key_usage', 'organization', 'server_secret', 'setting',
          'engine_run', 'work_item', 'agent', 'affinity_binding', 'engine', 'graph_run', 'graph_step', 'graph_visit',
          'graph_edge', 'machine_run', 'machine_transition', 'machine_event_queue', 'machine_event_seen', 'machine_timer',
          'checkpoint', 'checkpoint_page', 'trigger_firing', 'trigger_secret', 'trigger_delivery',
          'flow_lane', 'flow_slot', 'flow_bucket', 'flow_fair'],
    'the tables covered below are all the flowforge tables (a new table needs its policies tested here)');

-- 36 tenant tables x 7 tests (0015 added the substrate's and the graph engine's nine, 0017 the
-- state-machine engine's five, 0020 fan-out's checkpoint and checkpoint_page, 0022 trigger_firing,
-- 0028 flow control's flow_lane, flow_slot, flow_bucket and flow_fair, 0032 trigger_delivery;
-- trigger_secret, a tenant table without the read role's policy, follows below).
SELECT policies_are('flowforge', t, ARRAY['readonly_select', 'system_all', 'tenant_isolation'],
                    format('flowforge.%s has exactly the policies readonly_select, system_all, tenant_isolation', t))
FROM unnest(ARRAY['membership', 'api_key', 'audit_log', 'workflow', 'task', 'task_dependency', 'scheduled_trigger',
                  'workflow_run', 'task_run', 'idempotency_key', 'outbox_message', 'task_run_event', 'queue',
                  'api_key_usage', 'engine_run', 'work_item', 'agent', 'affinity_binding', 'engine', 'graph_run',
                  'graph_step', 'graph_visit', 'graph_edge', 'machine_run', 'machine_transition', 'machine_event_queue',
                  'machine_event_seen', 'machine_timer', 'checkpoint', 'checkpoint_page', 'trigger_firing',
                  'flow_lane', 'flow_slot', 'flow_bucket', 'flow_fair',
                  'trigger_delivery']) AS t;
SELECT policy_roles_are('flowforge', t, 'tenant_isolation', ARRAY['flowforge_owner'],
                        format('flowforge.%s tenant_isolation applies to flowforge_owner only', t))
FROM unnest(ARRAY['membership', 'api_key', 'audit_log', 'workflow', 'task', 'task_dependency', 'scheduled_trigger',
                  'workflow_run', 'task_run', 'idempotency_key', 'outbox_message', 'task_run_event', 'queue',
                  'api_key_usage', 'engine_run', 'work_item', 'agent', 'affinity_binding', 'engine', 'graph_run',
                  'graph_step', 'graph_visit', 'graph_edge', 'machine_run', 'machine_transition', 'machine_event_queue',
                  'machine_event_seen', 'machine_timer', 'checkpoint', 'checkpoint_page', 'trigger_firing',
                  'flow_lane', 'flow_slot', 'flow_bucket', 'flow_fair',
                  'trigger_delivery']) AS t;
SELECT policy_cmd_is('flowforge', t, 'tenant_isolation', 'ALL',
                     format('flowforge.%s tenant_isolation is FOR ALL', t))
FROM unnest(ARRAY['membership', 'api_key', 'audit_log', 'workflow', 'task', 'task_dependency', 'scheduled_trigger',
                  'workflow_run', 'task_run', 'idempotency_key', 'outbox_message', 'task_run_event', 'queue',
                  'api_key_usage', 'engine_run', 'work_item', 'agent', 'affinity_binding', 'engine', 'graph_run',
                  'graph_step', 'graph_visit', 'graph_edge', 'machine_run', 'machine_transition', 'machine_event_queue',
                  'machine_event_seen', 'machine_timer', 'checkpoint', 'checkpoint_page', 'trigger_firing',
                  'flow_lane', 'flow_slot', 'flow_bucket', 'flow_fair',
                  'trigger_delivery']) AS t;
SELECT policy_roles_are('flowforge', t, 'system_all', ARRAY['flowforge_system'],
                        format('flowforge.%s system_all applies to flowforge_system only', t))
FROM unnest(ARRAY['membership', 'api_key', 'audit_log', 'workflow', 'task', 'task_dependency', 'scheduled_trigger',
                  'workflow_run', 'task_run', 'idempotency_key', 'outbox_message', 'task_run_event', 'queue',
                  'api_key_usage', 'engine_run', 'work_item', 'agent', 'affinity_binding', 'engine', 'graph_run',
                  'graph_step', 'graph_visit', 'graph_edge', 'machine_run', 'machine_transition', 'machine_event_queue',
                  'machine_event_seen', 'machine_timer', 'checkpoint', 'checkpoint_page', 'trigger_firing',
                  'flow_lane', 'flow_slot', 'flow_bucket', 'flow_fair',
                  'trigger_delivery']) AS t;
SELECT policy_cmd_is('flowforge', t, 'system_all', 'ALL', format('flowforge.%s system_all is FOR ALL', t))
FROM unnest(ARRAY['membership', 'api_key', 'audit_log', 'workflow', 'task', 'task_dependency', 'scheduled_trigger',
                  'workflow_run', 'task_run', 'idempotency_key', 'outbox_message', 'task_run_event', 'queue',
                  'api_key_usage', 'engine_run', 'work_item', 'agent', 'affinity_binding', 'engine', 'graph_run',
                  'graph_step', 'graph_visit', 'graph_edge', 'machine_run', 'machine_transition', 'machine_event_queue',
                  'machine_event_seen', 'machine_timer', 'checkpoint', 'checkpoint_page', 'trigger_firing',
                  'flow_lane', 'flow_slot', 'flow_bucket', 'flow_fair',
                  'trigger_delivery']) AS t;
SELECT policy_roles_are('flowforge', t, 'readonly_select', ARRAY['flowforge_readonly'],
                        format('flowforge.%s readonly_select applies to flowforge_readonly only', t))
FROM unnest(ARRAY['membership', 'api_key', 'audit_log', 'workflow', 'task', 'task_dependency', 'scheduled_trigger',
                  'workflow_run', 'task_run', 'idempotency_key', 'outbox_message', 'task_run_event', 'queue',
                  'api_key_usage', 'engine_run', 'work_item', 'agent', 'affinity_binding', 'engine', 'graph_run',
                  'graph_step', 'graph_visit', 'graph_edge', 'machine_run', 'machine_transition', 'machine_event_queue',
                  'machine_event_seen', 'machine_timer', 'checkpoint', 'checkpoint_page', 'trigger_firing',
                  'flow_lane', 'flow_slot', 'flow_bucket', 'flow_fair',
                  'trigger_delivery']) AS t;
SELECT policy_cmd_is('flowforge', t, 'readonly_select', 'SELECT', format('flowforge.%s readonly_select is FOR SELECT', t))
FROM unnest(ARRAY['membership', 'api_key', 'audit_log', 'workflow', 'task', 'task_dependency', 'scheduled_trigger',
                  'workflow_run', 'task_run', 'idempotency_key', 'outbox_message', 'task_run_event', 'queue',
                  'api_key_usage', 'engine_run', 'work_item', 'agent', 'affinity_binding', 'engine', 'graph_run',
                  'graph_step', 'graph_visit', 'graph_edge', 'machine_run', 'machine_transition', 'machine_event_queue',
                  'machine_event_seen', 'machine_timer', 'checkpoint', 'checkpoint_page', 'trigger_firing',
                  'flow_lane', 'flow_slot', 'flow_bucket', 'flow_fair',
                  'trigger_delivery']) AS t;

-- organization: the tenant API may only read its own organization row.
SELECT policies_are('flowforge', 'organization', ARRAY['readonly_select', 'system_all', 'tenant_isolation'],
                    'flowforge.organization has exactly the policies readonly_select, system_all, tenant_isolation');
SELECT policy_roles_are('flowforge', 'organization', 'tenant_isolation', ARRAY['flowforge_owner'],
                        'flowforge.organization tenant_isolation applies to flowforge_owner only');
SELECT policy_cmd_is('flowforge', 'organization', 'tenant_isolation', 'SELECT',
                     'flowforge.organization tenant_isolation is FOR SELECT (the tenant API cannot write organizations)');
SELECT policy_roles_are('flowforge', 'organization', 'system_all', ARRAY['flowforge_system'],
                        'flowforge.organization system_all applies to flowforge_system only');
SELECT policy_cmd_is('flowforge', 'organization', 'system_all', 'ALL', 'flowforge.organization system_all is FOR ALL');
SELECT policy_roles_are('flowforge', 'organization', 'readonly_select', ARRAY['flowforge_readonly'],
                        'flowforge.organization readonly_select applies to flowforge_readonly only');
SELECT policy_cmd_is('flowforge', 'organization', 'readonly_select', 'SELECT',
                     'flowforge.organization readonly_select is FOR SELECT');

-- server_secret: only the identity functions (flowforge_system) see it — not even the DBA read role,
-- which could otherwise mint gateway tokens.
SELECT policies_are('flowforge', 'server_secret', ARRAY['system_all'],
                    'flowforge.server_secret has exactly one policy, system_all');
SELECT policy_roles_are('flowforge', 'server_secret', 'system_all', ARRAY['flowforge_system'],
                        'flowforge.server_secret system_all applies to flowforge_system only');
SELECT policy_cmd_is('flowforge', 'server_secret', 'system_all', 'ALL', 'flowforge.server_secret system_all is FOR ALL');
-- trigger_secret (0022): a webhook's key — the tenant API (the owner's definer functions) and the
-- receiver (flowforge_system) read it; unlike every other tenant table, not the DBA read role.
SELECT policies_are('flowforge', 'trigger_secret', ARRAY['system_all', 'tenant_isolation'],
                    'flowforge.trigger_secret has exactly the policies system_all and tenant_isolation (no readonly_select)');
SELECT policy_roles_are('flowforge', 'trigger_secret', 'tenant_isolation', ARRAY['flowforge_owner'],
                        'flowforge.trigger_secret tenant_isolation applies to flowforge_owner only');
SELECT policy_cmd_is('flowforge', 'trigger_secret', 'tenant_isolation', 'ALL', 'flowforge.trigger_secret tenant_isolation is FOR ALL');
SELECT policy_roles_are('flowforge', 'trigger_secret', 'system_all', ARRAY['flowforge_system'],
                        'flowforge.trigger_secret system_all applies to flowforge_system only');
SELECT policy_cmd_is('flowforge', 'trigger_secret', 'system_all', 'ALL', 'flowforge.trigger_secret system_all is FOR ALL');
-- setting: readable by the tenant API (limits), written by nobody but flowforge_system / the schema owner's migrations.
SELECT policies_are('flowforge', 'setting', ARRAY['readonly_select', 'setting_read', 'system_all'],
                    'flowforge.setting has exactly the policies readonly_select, setting_read, system_all');
SELECT policy_roles_are('flowforge', 'setting', 'setting_read', ARRAY['flowforge_owner'],
                        'flowforge.setting setting_read applies to flowforge_owner only');
SELECT policy_cmd_is('flowforge', 'setting', 'setting_read', 'SELECT', 'flowforge.setting setting_read is FOR SELECT');
SELECT policy_roles_are('flowforge', 'setting', 'system_all', ARRAY['flowforge_system'],
                        'flowforge.setting system_all applies to flowforge_system only');
SELECT policy_cmd_is('flowforge', 'setting', 'system_all', 'ALL', 'flowforge.setting system_all is FOR ALL');
SELECT policy_roles_are('flowforge', 'setting', 'readonly_select', ARRAY['flowforge_readonly'],
                        'flowforge.setting readonly_select applies to flowforge_readonly only');
SELECT policy_cmd_is('flowforge', 'setting', 'readonly_select', 'SELECT', 'flowforge.setting readonly_select is FOR SELECT');

-- The tenant policies scope by flowforge.current_organization(), never by a setting.
SELECT is_empty(
    $$SELECT tablename::text || '.' || policyname FROM pg_policies
      WHERE schemaname = 'flowforge'
        AND (coalesce(qual, '') ~* 'current_setting|set_config|current_user|session_user'
             OR coalesce(with_check, '') ~* 'current_setting|set_config|current_user|session_user')$$,
    'no policy reads a GUC (current_setting) or a role name directly');
SELECT is_empty(
    $$SELECT tablename::text FROM pg_policies
      WHERE schemaname = 'flowforge' AND policyname = 'tenant_isolation'
        AND (qual IS NULL OR qual !~ 'flowforge\.current_organization\(\)'
             OR (cmd = 'ALL' AND (with_check IS NULL OR with_check !~ 'flowforge\.current_organization\(\)')))$$,
    'every tenant_isolation policy scopes USING and WITH CHECK by flowforge.current_organization()');
SELECT is_empty(
    $$SELECT tablename::text || '.' || policyname FROM pg_policies
      WHERE schemaname = 'flowforge' AND permissive <> 'PERMISSIVE'$$,
    'policies are plain permissive policies (no restrictive policy silently narrows them)');
SELECT is_empty(
    $$SELECT tablename::text || '.' || policyname || ' -> ' || array_to_string(roles, ',') FROM pg_policies
      WHERE schemaname = 'flowforge'
        AND (roles && ARRAY['public', 'flowforge_app', 'flowforge_worker', 'flowforge_daemon', 'flowforge_gateway',
                            'flowforge_webhook']::name[])$$,
    'no policy applies to PUBLIC or to a runtime role (they have no table access at all)');

-- ---------------------------------------------------------------------------
-- Functions.
-- ---------------------------------------------------------------------------
SELECT is_empty(
    $$SELECT p.oid::regprocedure::text FROM pg_proc p
      WHERE p.pronamespace = 'flowforge'::regnamespace AND p.prosecdef
        AND NOT EXISTS (SELECT 1 FROM unnest(p.proconfig) c WHERE c LIKE 'search\_path=%')$$,
    'every SECURITY DEFINER function in flowforge pins search_path (proconfig)');

-- pg_temp must be named explicitly, and last: left out, it is searched FIRST for tables.
SELECT is_empty(
    $$SELECT p.oid::regprocedure::text || ': ' || c FROM pg_proc p CROSS JOIN LATERAL unnest(p.proconfig) c
      WHERE p.pronamespace = 'flowforge'::regnamespace AND p.prosecdef AND c LIKE 'search\_path=%'
        AND c <> 'search_path=pg_catalog, pg_temp'$$,
    'every SECURITY DEFINER search_path is exactly "pg_catalog, pg_temp" (no writable schema, pg_temp last)');

SELECT is_empty(
    $$SELECT p.oid::regprocedure::text FROM pg_proc p
      WHERE p.pronamespace = 'flowforge'::regnamespace
        AND EXISTS (SELECT 1 FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
                    WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE')$$,
    'no function in flowforge is executable by PUBLIC (aclexplode, NULL proacl counts as the default grant)');

SELECT is_empty(
    $$SELECT p.oid::regprocedure::text || ' owned by ' || pg_get_userbyid(p.proowner) FROM pg_proc p
      WHERE p.pronamespace = 'flowforge'::regnamespace
        AND pg_get_userbyid(p.proowner) NOT IN ('flowforge_owner', 'flowforge_system')$$,
    'every function in flowforge is owned by flowforge_owner or flowforge_system (never a superuser)');

SELECT is_empty(
    $$SELECT p.oid::regprocedure::text FROM pg_proc p
      WHERE p.pronamespace = 'flowforge'::regnamespace AND p.proname !~ '^_'
        AND obj_description(p.oid, 'pg_proc') IS NULL$$,
    'every non-underscore function in flowforge has a COMMENT');

-- Internals are closed, with two documented exceptions: _caller() and
-- _caller_organization() (SECURITY DEFINER) are what current_organization(),
-- which runs with the caller's rights, resolves through. They only ever tell a
-- caller its own identity.
SELECT is_empty(
    $$SELECT r.rolname::text || ' -> ' || p.oid::regprocedure::text FROM pg_proc p CROSS JOIN pg_roles r
      WHERE p.pronamespace = 'flowforge'::regnamespace AND p.proname ~ '^_'
        AND p.oid::regprocedure::text NOT IN ('flowforge._caller()', 'flowforge._caller_organization()')
        AND r.rolname IN ('flowforge_app', 'flowforge_worker', 'flowforge_daemon', 'flowforge_gateway', 'flowforge_readonly',
                          'flowforge_webhook')
        AND has_function_privilege(r.oid, p.oid, 'EXECUTE')$$,
    'no internal (underscore) function but _caller/_caller_organization is executable by a runtime role');

-- Cross-tenant functions (owned by flowforge_system) reach tenants only where
-- they check the caller themselves: identity, members, keys. A new
-- system-owned function is closed to tenants until it is added here.
-- list_engines() (every daemon's liveness) and metrics_all() (flowforge serve's
-- operator scrape, every organization's figures) are open to flowforge_readonly
-- only, which reads every table but server_secret and trigger_secret directly anyway;
-- receive_webhook to flowforge_webhook only, which checks the signature itself.
SELECT is_empty(
    $$SELECT r.rolname::text || ' -> ' || p.oid::regprocedure::text FROM pg_proc p CROSS JOIN pg_roles r
      WHERE p.pronamespace = 'flowforge'::regnamespace AND pg_get_userbyid(p.proowner) = 'flowforge_system'
        AND p.oid::regprocedure::text NOT IN (
            'flowforge._caller()', 'flowforge._caller_organization()', 'flowforge.schema_version()',
            'flowforge.add_member(text,name,text)', 'flowforge.remove_member(text,name)',
            'flowforge.create_api_key(text,text,text)', 'flowforge.revoke_api_key(text)', 'flowforge.authenticate(text)',
            -- purge: the operator for every organization, an owner its own (it checks which).
            'flowforge.purge(interval,boolean,integer)')
        AND NOT (r.rolname = 'flowforge_readonly'
                 AND p.oid::regprocedure::text IN ('flowforge.list_engines()', 'flowforge.metrics_all(timestamp with time zone)'))
        AND NOT (r.rolname = 'flowforge_webhook'
                 AND p.oid::regprocedure::text = 'flowforge.receive_webhook(text,text,bytea,text,text)')
        AND r.rolname IN ('flowforge_app', 'flowforge_worker', 'flowforge_gateway', 'flowforge_readonly', 'flowforge_webhook')
        AND has_function_privilege(r.oid, p.oid, 'EXECUTE')$$,
    'tenant-facing roles execute no cross-tenant function (tick, reaper, outbox drain, create_organization, _audit)');

SELECT set_eq(
    $$SELECT r.rolname::text FROM pg_roles r
      WHERE r.rolname LIKE 'flowforge\_%' AND r.rolname NOT IN ('flowforge_owner', 'flowforge_system')
        AND has_function_privilege(r.oid, 'flowforge.authenticate(text)', 'EXECUTE')$$,
    ARRAY['flowforge_gateway'],
    'of the runtime roles only flowforge_gateway may call authenticate');

SELECT is_empty(
    $$SELECT p.oid::regprocedure::text FROM pg_proc p
      WHERE p.pronamespace = 'flowforge'::regnamespace AND pg_get_userbyid(p.proowner) = 'flowforge_owner'
        AND p.oid::regprocedure::text NOT IN ('flowforge.now()', 'flowforge.current_organization()', 'flowforge.uuid7()')
        AND has_function_privilege('flowforge_daemon', p.oid, 'EXECUTE')$$,
    'flowforge_daemon executes no tenant API function (now, current_organization and uuid7 read no tenant data)');

SELECT is_empty(
    $$SELECT p.oid::regprocedure::text FROM pg_proc p
      WHERE p.pronamespace = 'flowforge'::regnamespace
        AND (has_function_privilege('flowforge_app', p.oid, 'EXECUTE')
             OR has_function_privilege('flowforge_worker', p.oid, 'EXECUTE'))
        AND NOT has_function_privilege('flowforge_gateway', p.oid, 'EXECUTE')$$,
    'flowforge_gateway may call everything flowforge_app and flowforge_worker may call');

SELECT set_eq(
    $$SELECT p.oid::regprocedure::text FROM pg_proc p
      WHERE p.pronamespace = 'flowforge'::regnamespace AND has_function_privilege('flowforge_readonly', p.oid, 'EXECUTE')$$,
    ARRAY['flowforge.now()', 'flowforge.current_organization()', 'flowforge.schema_version()', 'flowforge._caller()',
          'flowforge._caller_organization()', 'flowforge.uuid7()', 'flowforge.get_run(uuid)',
          'flowforge.run_events(uuid)', 'flowforge.resolve_run_id(text)', 'flowforge.resolve_run(uuid)',
          'flowforge.list_engines()', 'flowforge.fan_out_output(uuid,text,bigint,integer)',
          'flowforge.metrics_all(timestamp with time zone)'],
    'flowforge_readonly executes only now, current_organization (and its two helpers), schema_version, uuid7, and '
    'the operator read path (get_run, run_events, resolve_run_id, resolve_run, list_engines, fan_out_output, '
    'metrics_all)');

-- flowforge serve's reads (issue 20): run_causes, queue_stats, agent_holdings and metrics for
-- apps and the gateway (viewer rights, the caller's organization, SECURITY
-- DEFINER); metrics_all for flowforge_readonly alone, owned by flowforge_system
-- (it reads every organization and checks the caller itself); the helpers
-- internal, for no runtime role.
SELECT results_eq(
    $$SELECT p.oid::regprocedure::text COLLATE "default", pg_get_userbyid(p.proowner)::text COLLATE "default",
             array_to_string(ARRAY(SELECT r.rolname::text FROM pg_roles r
                                   WHERE r.rolname IN ('flowforge_app', 'flowforge_worker', 'flowforge_daemon',
                                                       'flowforge_gateway', 'flowforge_readonly', 'flowforge_webhook')
                                     AND has_function_privilege(r.oid, p.oid, 'EXECUTE')
                                   ORDER BY r.rolname), ',') COLLATE "default",
             p.prosecdef
      FROM pg_proc p
      WHERE p.pronamespace = 'flowforge'::regnamespace
        AND p.proname IN ('run_causes', 'queue_stats', 'agent_holdings', 'metrics', 'metrics_all', '_metrics', '_metrics_window',
                          '_queue_live', '_event_window')
      ORDER BY 1$$,
    $$VALUES ('flowforge._event_window(uuid[],timestamp with time zone,timestamp with time zone)', 'flowforge_owner', '', false),
             ('flowforge._metrics(uuid[],timestamp with time zone,timestamp with time zone,timestamp with time zone)', 'flowforge_owner', '', false),
             ('flowforge._metrics_window(timestamp with time zone,timestamp with time zone)', 'flowforge_owner', '', false),
             ('flowforge._queue_live(uuid[],timestamp with time zone)', 'flowforge_owner', '', false),
             ('flowforge.agent_holdings(integer)', 'flowforge_owner', 'flowforge_app,flowforge_gateway', true),
             ('flowforge.metrics(timestamp with time zone)', 'flowforge_owner', 'flowforge_app,flowforge_gateway', true),
             ('flowforge.metrics_all(timestamp with time zone)', 'flowforge_system', 'flowforge_readonly', true),
             ('flowforge.queue_stats()', 'flowforge_owner', 'flowforge_app,flowforge_gateway', true),
             ('flowforge.run_causes(uuid[])', 'flowforge_owner', 'flowforge_app,flowforge_gateway', true)$$,
    'flowforge serve''s reads: owner and callers (tenant reads for apps and the gateway, metrics_all for '
    'flowforge_readonly only, the helpers for nobody)');

-- The substrate's API (0015), function by function: who may call it.
SELECT results_eq(
    $$SELECT p.oid::regprocedure::text COLLATE "default", pg_get_userbyid(p.proowner)::text COLLATE "default",
             array_to_string(ARRAY(SELECT r.rolname::text FROM pg_roles r
                                   WHERE r.rolname IN ('flowforge_app', 'flowforge_worker', 'flowforge_daemon',
                                                       'flowforge_gateway', 'flowforge_readonly')
                                     AND has_function_privilege(r.oid, p.oid, 'EXECUTE')
                                   ORDER BY r.rolname), ',') COLLATE "default"
      FROM pg_proc p
      WHERE p.pronamespace = 'flowforge'::regnamespace
        AND p.proname IN ('claim_work', 'heartbeat_work', 'complete_work', 'fail_work', 'register_agent',
                          'agent_heartbeat', 'set_agent_status', 'list_agents', 'resolve_run', 'list_engines', 'tick',
                          'uuid7')
      ORDER BY 1$$,
    $$VALUES ('flowforge.agent_heartbeat(text,jsonb)', 'flowforge_owner', 'flowforge_gateway,flowforge_worker'),
             ('flowforge.claim_work(text[],text,interval,integer,text[],text[])', 'flowforge_owner', 'flowforge_gateway,flowforge_worker'),
             ('flowforge.complete_work(uuid,bigint,jsonb)', 'flowforge_owner', 'flowforge_gateway,flowforge_worker'),
             ('flowforge.fail_work(uuid,bigint,text,boolean)', 'flowforge_owner', 'flowforge_gateway,flowforge_worker'),
             ('flowforge.heartbeat_work(uuid,bigint,interval)', 'flowforge_owner', 'flowforge_gateway,flowforge_worker'),
             ('flowforge.list_agents(integer,text)', 'flowforge_owner', 'flowforge_app,flowforge_gateway,flowforge_worker'),
             ('flowforge.list_engines()', 'flowforge_system', 'flowforge_daemon,flowforge_readonly'),
             ('flowforge.register_agent(text,jsonb)', 'flowforge_owner', 'flowforge_gateway,flowforge_worker'),
             ('flowforge.resolve_run(uuid)', 'flowforge_owner', 'flowforge_app,flowforge_gateway,flowforge_readonly'),
             ('flowforge.set_agent_status(text,text)', 'flowforge_owner', 'flowforge_app,flowforge_gateway'),
             ('flowforge.tick(text)', 'flowforge_system', 'flowforge_daemon'),
             ('flowforge.uuid7()', 'flowforge_owner',
              'flowforge_app,flowforge_daemon,flowforge_gateway,flowforge_readonly,flowforge_worker')$$,
    'the substrate''s functions: owner and callers (workers claim and report, apps drain agents, the daemon ticks)');

-- Retention and the history's partitions (0032): purge is the API — owned
-- by flowforge_system (it reaches every organization for the operator) and
-- callable by apps and the gateway, whose owners purge their own organization
-- (it checks); the partition maker and dropper are the tables' owner's
-- definer functions (DDL on flowforge_owner's tables), callable by nobody;
-- the rest internal. Only _purge turns purge's path through the append-only
-- triggers on (its SET clause); purge and tick pin it off on entry.
SELECT results_eq(
    $$SELECT p.oid::regprocedure::text COLLATE "default", pg_get_userbyid(p.proowner)::text COLLATE "default",
             array_to_string(ARRAY(SELECT r.rolname::text FROM pg_roles r
                                   WHERE r.rolname IN ('flowforge_app', 'flowforge_worker', 'flowforge_daemon',
                                                       'flowforge_gateway', 'flowforge_readonly', 'flowforge_webhook')
                                     AND has_function_privilege(r.oid, p.oid, 'EXECUTE')
                                   ORDER BY r.rolname), ',') COLLATE "default",
             p.prosecdef
      FROM pg_proc p
      WHERE p.pronamespace = 'flowforge'::regnamespace AND p.proname ~ '^(_?purge|_history_)'
      ORDER BY 1$$,
    $$VALUES ('flowforge._history_partition_create(text,timestamp with time zone)', 'flowforge_owner', '', true),
             ('flowforge._history_partition_drop(regclass)', 'flowforge_owner', '', true),
             ('flowforge._history_partitions(text)', 'flowforge_owner', '', false),
             ('flowforge._history_partitions_ahead(timestamp with time zone,integer)', 'flowforge_owner', '', false),
             ('flowforge._history_partitions_drop_emptied(timestamp with time zone)', 'flowforge_owner', '', false),
             ('flowforge._purge(uuid[],timestamp with time zone,timestamp with time zone,timestamp with time zone,integer,boolean,boolean)', 'flowforge_owner', '', false),
             ('flowforge._purge_add(jsonb,text,bigint)', 'flowforge_owner', '', false),
             ('flowforge._purge_audit(uuid,jsonb)', 'flowforge_owner', '', false),
             ('flowforge._purge_due(timestamp with time zone,integer)', 'flowforge_owner', '', false),
             ('flowforge._purge_partition(text,regclass,timestamp with time zone,timestamp with time zone,boolean)', 'flowforge_owner', '', false),
             ('flowforge.purge(interval,boolean,integer)', 'flowforge_system', 'flowforge_app,flowforge_gateway', true)$$,
    'retention''s functions: owner and callers (purge for apps and the gateway, everything else for nobody)');
SELECT results_eq(
    $$SELECT p.oid::regprocedure::text COLLATE "default", c COLLATE "default"
      FROM pg_proc p CROSS JOIN LATERAL unnest(p.proconfig) c
      WHERE p.pronamespace = 'flowforge'::regnamespace AND c LIKE 'flowforge.history_purge=%'
      ORDER BY 1$$,
    $$VALUES ('flowforge._purge(uuid[],timestamp with time zone,timestamp with time zone,timestamp with time zone,integer,boolean,boolean)', 'flowforge.history_purge=on'),
             ('flowforge.purge(interval,boolean,integer)', 'flowforge.history_purge='),
             ('flowforge.tick(text)', 'flowforge.history_purge=')$$,
    'only _purge turns flowforge.history_purge on; purge() and tick() discard a value the caller set');

-- Starting runs (issue 17 added start_runs, bulk enqueue): apps and the
-- gateway start runs one at a time or many in one call; the set-based DAG
-- path and its hook are reached only through start_runs.
SELECT results_eq(
    $$SELECT p.oid::regprocedure::text COLLATE "default", pg_get_userbyid(p.proowner)::text COLLATE "default",
             array_to_string(ARRAY(SELECT r.rolname::text FROM pg_roles r
                                   WHERE r.rolname IN ('flowforge_app', 'flowforge_worker', 'flowforge_daemon',
                                                       'flowforge_gateway', 'flowforge_readonly', 'flowforge_webhook')
                                     AND has_function_privilege(r.oid, p.oid, 'EXECUTE')
                                   ORDER BY r.rolname), ',') COLLATE "default",
             p.prosecdef
      FROM pg_proc p
      WHERE p.pronamespace = 'flowforge'::regnamespace
        AND p.proname IN ('start_run', 'start_runs', '_start_engine_runs', '_dag_start_runs')
      ORDER BY 1$$,
    $$VALUES ('flowforge._dag_start_runs(uuid,uuid[],uuid,jsonb,jsonb[],text[],timestamp with time zone,text)', 'flowforge_owner', '', false),
             ('flowforge._start_engine_runs(text,uuid,uuid[],uuid,jsonb,jsonb[],text[],timestamp with time zone,text)', 'flowforge_owner', '', false),
             ('flowforge.start_run(text,jsonb,text)', 'flowforge_owner', 'flowforge_app,flowforge_gateway', true),
             ('flowforge.start_runs(text,jsonb[],text[])', 'flowforge_owner', 'flowforge_app,flowforge_gateway', true)$$,
    'start_run and start_runs: apps and the gateway start runs; the bulk path''s internals are callable by nobody');

-- The state-machine engine's functions (0017): send_event is the API (apps
-- and the gateway send events; a worker only reports its action through
-- complete_work / fail_work); everything else is reached through the hooks,
-- send_event or the timer duty, and is callable by no runtime role.
SELECT results_eq(
    $$SELECT p.oid::regprocedure::text COLLATE "default", pg_get_userbyid(p.proowner)::text COLLATE "default",
             array_to_string(ARRAY(SELECT r.rolname::text FROM pg_roles r
                                   WHERE r.rolname IN ('flowforge_app', 'flowforge_worker', 'flowforge_daemon',
                                                       'flowforge_gateway', 'flowforge_readonly')
                                     AND has_function_privilege(r.oid, p.oid, 'EXECUTE')
                                   ORDER BY r.rolname), ',') COLLATE "default"
      FROM pg_proc p
      WHERE p.pronamespace = 'flowforge'::regnamespace
        AND (p.proname IN ('send_event', '_event_refused', '_fire_machine_timer', '_fire_machine_timers')
             OR p.proname ~ '^_(machine|normalize_machine)_')
      ORDER BY 1$$,
    $$VALUES ('flowforge._event_refused(uuid,text,text,text)', 'flowforge_owner', ''),
             ('flowforge._fire_machine_timer(uuid,uuid,timestamp with time zone)', 'flowforge_owner', ''),
             ('flowforge._fire_machine_timers(uuid[],integer,timestamp with time zone)', 'flowforge_owner', ''),
             ('flowforge._machine_accept(text,jsonb,text,jsonb,jsonb)', 'flowforge_owner', ''),
             ('flowforge._machine_apply(uuid,uuid,text,jsonb,text,jsonb,timestamp with time zone)', 'flowforge_owner', ''),
             ('flowforge._machine_cancel_run(uuid,uuid,text,timestamp with time zone)', 'flowforge_owner', ''),
             ('flowforge._machine_define(uuid,uuid,jsonb,timestamp with time zone)', 'flowforge_owner', ''),
             ('flowforge._machine_enter(uuid,uuid,text,jsonb,text,text,text,jsonb,jsonb,timestamp with time zone)', 'flowforge_owner', ''),
             ('flowforge._machine_finish(uuid,uuid,text,text,text,text,timestamp with time zone)', 'flowforge_owner', ''),
             ('flowforge._machine_item_failed(uuid,uuid,uuid,timestamp with time zone)', 'flowforge_owner', ''),
             ('flowforge._machine_item_succeeded(uuid,uuid,uuid,timestamp with time zone)', 'flowforge_owner', ''),
             ('flowforge._machine_record(uuid,uuid,text,text,text,text,jsonb,text,text,jsonb,timestamp with time zone,bigint)', 'flowforge_owner', ''),
             ('flowforge._machine_refuse_queued(uuid,uuid,text,text,timestamp with time zone)', 'flowforge_owner', ''),
             ('flowforge._machine_resume(uuid,uuid,timestamp with time zone)', 'flowforge_owner', ''),
             ('flowforge._machine_retry_run(uuid,uuid,timestamp with time zone)', 'flowforge_owner', ''),
             ('flowforge._machine_run_detail(uuid,uuid)', 'flowforge_owner', ''),
             ('flowforge._machine_start_run(uuid,uuid,uuid,jsonb,jsonb,text,timestamp with time zone,text)', 'flowforge_owner', ''),
             ('flowforge._normalize_machine_spec(jsonb)', 'flowforge_owner', ''),
             ('flowforge._normalize_machine_state(text,jsonb,jsonb)', 'flowforge_owner', ''),
             ('flowforge._normalize_machine_transition(jsonb,text,text,jsonb)', 'flowforge_owner', ''),
             ('flowforge.send_event(uuid,text,jsonb,text)', 'flowforge_owner', 'flowforge_app,flowforge_gateway')$$,
    'the state-machine engine''s functions: owner and callers (send_event for apps and the gateway, internals for nobody)');

-- Fan-out (0020): fan_out_output is the read (apps, the gateway, the operator's
-- read role: a map output passed by reference is read through it); everything
-- else is reached through the engines' hooks and the worker protocol, and is
-- callable by no runtime role.
SELECT results_eq(
    $$SELECT p.oid::regprocedure::text COLLATE "default", pg_get_userbyid(p.proowner)::text COLLATE "default",
             array_to_string(ARRAY(SELECT r.rolname::text FROM pg_roles r
                                   WHERE r.rolname IN ('flowforge_app', 'flowforge_worker', 'flowforge_daemon',
                                                       'flowforge_gateway', 'flowforge_readonly')
                                     AND has_function_privilege(r.oid, p.oid, 'EXECUTE')
                                   ORDER BY r.rolname), ',') COLLATE "default",
             p.prosecdef
      FROM pg_proc p
      WHERE p.pronamespace = 'flowforge'::regnamespace
        AND (p.proname ~ '^_fanout_'
             OR p.proname IN ('fan_out_output', '_dag_fan_out', '_dag_task_refused', '_graph_fan_out', '_unit_kind',
                              '_try_lock_run', '_lock_run', '_spec_map', '_is_jsonpath_predicate', '_enqueue_work'))
      ORDER BY 1$$,
    $$VALUES ('flowforge._dag_fan_out(uuid,uuid,timestamp with time zone)', 'flowforge_owner', '', false),
             ('flowforge._dag_task_refused(uuid,uuid,text,timestamp with time zone)', 'flowforge_owner', '', false),
             ('flowforge._enqueue_work(uuid,text,uuid,uuid,text,jsonb,text,timestamp with time zone,uuid,uuid,integer,integer)', 'flowforge_owner', '', false),
             ('flowforge._fanout_begin(uuid,text,uuid,uuid,uuid,uuid,integer,jsonb,timestamp with time zone)', 'flowforge_owner', '', false),
             ('flowforge._fanout_cancel_children(uuid,uuid,timestamp with time zone)', 'flowforge_owner', '', false),
             ('flowforge._fanout_child_input(jsonb,text)', 'flowforge_owner', '', false),
             ('flowforge._fanout_child_settled(uuid,uuid,boolean,timestamp with time zone)', 'flowforge_owner', '', false),
             ('flowforge._fanout_detail(uuid,uuid,text)', 'flowforge_owner', '', false),
             ('flowforge._fanout_fail(uuid,uuid,text,timestamp with time zone)', 'flowforge_owner', '', false),
             ('flowforge._fanout_finish(uuid,uuid,timestamp with time zone)', 'flowforge_owner', '', false),
             ('flowforge._fanout_hold_task_run(uuid,uuid,timestamp with time zone)', 'flowforge_owner', '', false),
             ('flowforge._fanout_hold_work_item(uuid,uuid,timestamp with time zone)', 'flowforge_owner', '', false),
             ('flowforge._fanout_holder()', 'flowforge_owner', '', false),
             ('flowforge._fanout_page_size()', 'flowforge_owner', '', false),
             ('flowforge._fanout_parent_done(uuid,uuid,jsonb,text,timestamp with time zone)', 'flowforge_owner', '', false),
             ('flowforge._fanout_progress(uuid,uuid,timestamp with time zone)', 'flowforge_owner', '', false),
             ('flowforge._fanout_run_cancelled(uuid,uuid,timestamp with time zone)', 'flowforge_owner', '', false),
             ('flowforge._graph_fan_out(uuid,uuid,uuid,uuid,integer,jsonb,timestamp with time zone)', 'flowforge_owner', '', false),
             ('flowforge._is_jsonpath_predicate(text)', 'flowforge_owner', '', false),
             ('flowforge._lock_run(uuid,uuid)', 'flowforge_owner', '', false),
             ('flowforge._spec_map(jsonb,text)', 'flowforge_owner', '', false),
             ('flowforge._try_lock_run(uuid,uuid)', 'flowforge_owner', '', false),
             ('flowforge._unit_kind(text,uuid)', 'flowforge_owner', '', false),
             ('flowforge.fan_out_output(uuid,text,bigint,integer)', 'flowforge_owner',
              'flowforge_app,flowforge_gateway,flowforge_readonly', true)$$,
    'fan-out''s functions: owner and callers (fan_out_output, SECURITY DEFINER, for apps, the gateway and the '
    'read role; the engine''s internals, run with their callers'' rights, for nobody)');
SELECT is_empty(
    $$SELECT p.oid::regprocedure::text FROM pg_proc p
      WHERE p.oid = 'flowforge.fan_out_output(uuid,text,bigint,integer)'::regprocedure
        AND NOT (p.proconfig @> ARRAY['search_path=pg_catalog, pg_temp', 'flowforge.caller_org=']::text[])$$,
    'fan_out_output pins search_path and resets flowforge.caller_org like every definer function');

-- Triggers (0022): the tenant API (create, pause, drop, list, fire; the firing
-- log; cron_next) for apps and the gateway, SECURITY DEFINER; the receiver's
-- one call for flowforge_webhook, and the feeders' four for the daemon, owned
-- by flowforge_system (they reach every organization); everything else —
-- the options, the firing itself, the cron evaluator, the cron duty, the
-- HMAC — internal, for no runtime role.
SELECT results_eq(
    $$SELECT p.oid::regprocedure::text COLLATE "default", pg_get_userbyid(p.proowner)::text COLLATE "default",
             array_to_string(ARRAY(SELECT r.rolname::text FROM pg_roles r
                                   WHERE r.rolname IN ('flowforge_app', 'flowforge_worker', 'flowforge_daemon',
                                                       'flowforge_gateway', 'flowforge_readonly', 'flowforge_webhook')
                                     AND has_function_privilege(r.oid, p.oid, 'EXECUTE')
                                   ORDER BY r.rolname), ',') COLLATE "default",
             p.prosecdef
      FROM pg_proc p
      WHERE p.pronamespace = 'flowforge'::regnamespace
        AND (p.proname ~ '^(_cron_|feeder_)'
             OR p.proname IN ('create_trigger', 'set_trigger_enabled', 'drop_trigger', 'list_triggers', 'fire_trigger',
                              'list_firings', 'cron_next', 'receive_webhook', '_invalid_trigger', '_trigger_options',
                              '_trigger_by_name', '_is_refusal', '_trigger_signal_run', '_record_firing', '_delivered_firing',
                              '_fire_trigger', '_check_delivery_id', '_check_timezone', '_fire_cron_trigger',
                              '_fire_cron_triggers', '_hmac_sha256', '_bytes_equal'))
      ORDER BY 1$$,
    $$VALUES ('flowforge._bytes_equal(bytea,bytea)', 'flowforge_owner', '', false),
             ('flowforge._check_delivery_id(text)', 'flowforge_owner', '', false),
             ('flowforge._check_timezone(text)', 'flowforge_owner', '', false),
             ('flowforge._cron_field(text,text,integer,integer,text[],integer)', 'flowforge_owner', '', false),
             ('flowforge._cron_fires_ever(integer[],integer[],boolean)', 'flowforge_owner', '', false),
             ('flowforge._cron_invalid(text)', 'flowforge_owner', '', false),
             ('flowforge._cron_latest(jsonb,timestamp with time zone,timestamp with time zone,text,text,text)', 'flowforge_owner', '', false),
             ('flowforge._cron_local_next(integer[],integer[],integer[],integer[],integer[],boolean,timestamp without time zone,timestamp without time zone)', 'flowforge_owner', '', false),
             ('flowforge._cron_next(jsonb,timestamp with time zone,text,text,text)', 'flowforge_owner', '', false),
             ('flowforge._cron_parse(text)', 'flowforge_owner', '', false),
             ('flowforge._cron_slots(jsonb,timestamp with time zone,timestamp with time zone,text,text,text,integer)', 'flowforge_owner', '', false),
             ('flowforge._cron_step(integer[],integer[],integer[],integer[],integer[],boolean,boolean,boolean,boolean,timestamp with time zone)', 'flowforge_owner', '', false),
             ('flowforge._cron_transition(timestamp with time zone,timestamp with time zone)', 'flowforge_owner', '', false),
             ('flowforge._delivered_firing(uuid,uuid,text)', 'flowforge_owner', '', false),
             ('flowforge._fire_cron_trigger(uuid,uuid,timestamp with time zone)', 'flowforge_owner', '', false),
             ('flowforge._fire_cron_triggers(uuid[],integer,timestamp with time zone)', 'flowforge_owner', '', false),
             ('flowforge._fire_trigger(uuid,uuid,text,jsonb,timestamp with time zone,text,timestamp with time zone)', 'flowforge_owner', '', false),
             ('flowforge._hmac_sha256(bytea,bytea)', 'flowforge_owner', '', false),
             ('flowforge._invalid_trigger(text)', 'flowforge_owner', '', false),
             ('flowforge._is_refusal(text)', 'flowforge_owner', '', false),
             ('flowforge._record_firing(uuid,uuid,uuid,text,text,jsonb,text,uuid,text,uuid,text,text,timestamp with time zone,text,timestamp with time zone)', 'flowforge_owner', '', false),
             ('flowforge._trigger_by_name(uuid,text)', 'flowforge_owner', '', false),
             ('flowforge._trigger_options(text,text,jsonb)', 'flowforge_owner', '', false),
             ('flowforge._trigger_signal_run(jsonb,jsonb)', 'flowforge_owner', '', false),
             ('flowforge.create_trigger(text,text,text,text,jsonb)', 'flowforge_owner', 'flowforge_app,flowforge_gateway', true),
             ('flowforge.cron_next(text,timestamp with time zone,text)', 'flowforge_owner', 'flowforge_app,flowforge_gateway', false),
             ('flowforge.drop_trigger(text)', 'flowforge_owner', 'flowforge_app,flowforge_gateway', true),
             ('flowforge.feeder_fire(uuid,text,jsonb,timestamp with time zone)', 'flowforge_system', 'flowforge_daemon', true),
             ('flowforge.feeder_save_state(uuid,jsonb)', 'flowforge_system', 'flowforge_daemon', true),
             ('flowforge.feeder_triggers(text)', 'flowforge_system', 'flowforge_daemon', true),
             ('flowforge.feeder_unfired(uuid,text[])', 'flowforge_system', 'flowforge_daemon', true),
             ('flowforge.fire_trigger(text,jsonb,timestamp with time zone,text)', 'flowforge_owner', 'flowforge_app,flowforge_gateway', true),
             ('flowforge.list_firings(text,text,integer,text)', 'flowforge_owner', 'flowforge_app,flowforge_gateway', true),
             ('flowforge.list_triggers(integer,text,boolean)', 'flowforge_owner', 'flowforge_app,flowforge_gateway', true),
             ('flowforge.receive_webhook(text,text,bytea,text,text)', 'flowforge_system', 'flowforge_webhook', true),
             ('flowforge.set_trigger_enabled(text,boolean)', 'flowforge_owner', 'flowforge_app,flowforge_gateway', true)$$,
    'the triggers'' functions: owner and callers (the tenant API for apps and the gateway, receive_webhook for '
    'flowforge_webhook only, the feeders for the daemon only, every internal for nobody)');
SELECT set_eq(
    $$SELECT p.oid::regprocedure::text FROM pg_proc p
      WHERE p.pronamespace = 'flowforge'::regnamespace AND has_function_privilege('flowforge_webhook', p.oid, 'EXECUTE')$$,
    ARRAY['flowforge.receive_webhook(text,text,bytea,text,text)'],
    'flowforge_webhook executes receive_webhook and nothing else (not even now() or current_organization())');
SELECT ok(has_schema_privilege('flowforge_webhook', 'flowforge', 'USAGE'),
          'flowforge_webhook may use schema flowforge (0024: without it the one call it may make does not resolve)');

-- Ownership and deletion (0030, issue 19): the two soft deletes and the
-- listings are the tenant API (apps and the gateway; deleting is no worker's
-- business); _principal (who a row belongs to: the login, or the API key of a
-- gateway call) reads api_key, so flowforge_system owns it and no runtime
-- role may call it; the scope, cursor and stamping helpers are internal; the
-- directory's definition_name trigger is callable by nobody.
SELECT results_eq(
    $$SELECT p.oid::regprocedure::text COLLATE "default", pg_get_userbyid(p.proowner)::text COLLATE "default",
             array_to_string(ARRAY(SELECT r.rolname::text FROM pg_roles r
                                   WHERE r.rolname IN ('flowforge_app', 'flowforge_worker', 'flowforge_daemon',
                                                       'flowforge_gateway', 'flowforge_readonly', 'flowforge_webhook')
                                     AND has_function_privilege(r.oid, p.oid, 'EXECUTE')
                                   ORDER BY r.rolname), ',') COLLATE "default",
             p.prosecdef
      FROM pg_proc p
      WHERE p.pronamespace = 'flowforge'::regnamespace
        AND p.proname IN ('delete_run', 'delete_workflow', 'list_runs', 'list_workflows', '_principal',
                          '_authorize_scoped', '_visible_run', '_stamp_run_update', '_live_workflow', '_cursor',
                          '_cursor_position', '_invalid_cursor', '_runs_by_prefix', 'engine_run_definition_name')
      ORDER BY 1$$,
    $$VALUES ('flowforge._authorize_scoped(text)', 'flowforge_owner', '', false),
             ('flowforge._cursor(text,timestamp with time zone,uuid,text)', 'flowforge_owner', '', false),
             ('flowforge._cursor_position(text,text)', 'flowforge_owner', '', false),
             ('flowforge._invalid_cursor(text)', 'flowforge_owner', '', false),
             ('flowforge._live_workflow(uuid,text)', 'flowforge_owner', '', false),
             ('flowforge._principal()', 'flowforge_system', '', true),
             ('flowforge._runs_by_prefix(text,uuid,text)', 'flowforge_system', '', true),
             ('flowforge._stamp_run_update(uuid,uuid,timestamp with time zone,boolean)', 'flowforge_owner', '', false),
             ('flowforge._visible_run(uuid,text,uuid)', 'flowforge_owner', '', false),
             ('flowforge.delete_run(uuid)', 'flowforge_owner', 'flowforge_app,flowforge_gateway', true),
             ('flowforge.delete_workflow(text)', 'flowforge_owner', 'flowforge_app,flowforge_gateway', true),
             ('flowforge.engine_run_definition_name()', 'flowforge_owner', '', false),
             ('flowforge.list_runs(text,text,integer,text,boolean,text,text,text)', 'flowforge_owner',
              'flowforge_app,flowforge_gateway', true),
             ('flowforge.list_workflows(integer,text,boolean)', 'flowforge_owner', 'flowforge_app,flowforge_gateway', true)$$,
    'the ownership functions (0030): owner and callers (deletes and listings for apps and the gateway, _principal '
    'owned by flowforge_system for nobody, every helper internal)');

-- Inside an API call the organization is cached in the setting
-- flowforge.caller_org, which the tenant policies trust. That is sound only
-- because every definer function resets it on entry (and restores it on
-- exit): one without the reset would honour a value the caller SET.
SELECT is_empty(
    $$SELECT p.oid::regprocedure::text FROM pg_proc p
      WHERE p.pronamespace = 'flowforge'::regnamespace AND p.prosecdef
        AND NOT (coalesce(p.proconfig, '{}') @> ARRAY['flowforge.caller_org=']::text[])$$,
    'every SECURITY DEFINER function pins flowforge.caller_org = '''' (a value the caller SET is discarded on entry)');

-- A view that is not security_invoker runs as its owner (flowforge_owner), whose
-- tenant policy would then read a setting the caller controls.
SELECT is_empty(
    $$SELECT c.relname::text FROM pg_class c
      WHERE c.relnamespace = 'flowforge'::regnamespace AND c.relkind IN ('v', 'm')
        AND NOT coalesce(c.reloptions @> ARRAY['security_invoker=true'], false)$$,
    'every flowforge view is security_invoker');
SELECT is_empty(
    $$SELECT c.relname::text FROM pg_class c
      WHERE c.relnamespace = 'flowforge'::regnamespace AND c.relkind IN ('v', 'm')
        AND pg_get_userbyid(c.relowner) <> 'flowforge_owner'$$,
    'every flowforge view is owned by flowforge_owner');
-- The views are the DBA's (and monitoring's) reads: flowforge_readonly reads every one.
SELECT is_empty(
    $$SELECT c.relname::text FROM pg_class c
      WHERE c.relnamespace = 'flowforge'::regnamespace AND c.relkind IN ('v', 'm')
        AND NOT has_table_privilege('flowforge_readonly', c.oid, 'SELECT')$$,
    'flowforge_readonly can SELECT every flowforge view');
SELECT is_empty(
    $$SELECT c.relname::text FROM pg_class c
      WHERE c.relnamespace = 'flowforge'::regnamespace AND c.relkind IN ('v', 'm')
        AND coalesce(length(btrim(obj_description(c.oid, 'pg_class'))), 0) < 10$$,
    'every flowforge view has a comment saying the question it answers');

-- Default privileges: a function the owners create later is closed until granted.
SELECT is_empty(
    $$SELECT r.rolname::text FROM pg_roles r
      WHERE r.rolname IN ('flowforge_owner', 'flowforge_system')
        AND NOT EXISTS (SELECT 1 FROM pg_default_acl d
                        WHERE d.defaclrole = r.oid AND d.defaclnamespace = 0 AND d.defaclobjtype = 'f'
                          AND NOT EXISTS (SELECT 1 FROM aclexplode(d.defaclacl) a WHERE a.grantee = 0))$$,
    'default privileges of flowforge_owner and flowforge_system revoke EXECUTE on new functions from PUBLIC');

-- ---------------------------------------------------------------------------
-- Tables, sequences and the schema: no runtime role and not PUBLIC may write.
-- ---------------------------------------------------------------------------
SELECT is_empty(
    $$SELECT r.rolname::text || ' ' || priv || ' on ' || c.relname FROM pg_class c
      CROSS JOIN pg_roles r
      CROSS JOIN unnest(ARRAY['INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'TRIGGER', 'REFERENCES']) AS priv
      WHERE c.relnamespace = 'flowforge'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
        AND r.rolname IN ('flowforge_app', 'flowforge_worker', 'flowforge_daemon', 'flowforge_gateway', 'flowforge_readonly',
                          'flowforge_webhook')
        AND has_table_privilege(r.oid, c.oid, priv)$$,
    'no runtime role has INSERT/UPDATE/DELETE/TRUNCATE/TRIGGER/REFERENCES on any flowforge table');

SELECT is_empty(
    $$SELECT r.rolname::text || ' ' || priv || ' on columns of ' || c.relname FROM pg_class c
      CROSS JOIN pg_roles r
      CROSS JOIN unnest(ARRAY['INSERT', 'UPDATE', 'REFERENCES']) AS priv
      WHERE c.relnamespace = 'flowforge'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
        AND r.rolname IN ('flowforge_app', 'flowforge_worker', 'flowforge_daemon', 'flowforge_gateway', 'flowforge_readonly',
                          'flowforge_webhook')
        AND has_any_column_privilege(r.oid, c.oid, priv)$$,
    'no runtime role has a column-level write privilege on any flowforge table');

SELECT is_empty(
    $$SELECT r.rolname::text || ' SELECT on ' || c.relname FROM pg_class c CROSS JOIN pg_roles r
      WHERE c.relnamespace = 'flowforge'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
        AND r.rolname IN ('flowforge_app', 'flowforge_worker', 'flowforge_daemon', 'flowforge_gateway', 'flowforge_webhook')
        AND has_any_column_privilege(r.oid, c.oid, 'SELECT')$$,
    'no tenant-facing runtime role (nor the webhook receiver) can read any flowforge table directly');

SELECT is_empty(
    $$SELECT c.relname::text || ' ' || a.privilege_type FROM pg_class c
      CROSS JOIN LATERAL aclexplode(coalesce(c.relacl, acldefault(CASE WHEN c.relkind = 'S' THEN 's' ELSE 'r' END::"char",
                                                                    c.relowner))) a
      WHERE c.relnamespace = 'flowforge'::regnamespace AND a.grantee = 0$$,
    'PUBLIC has no privilege on any flowforge table or sequence');

SELECT is_empty(
    $$SELECT r.rolname::text || ' ' || priv || ' on ' || c.relname FROM pg_class c
      CROSS JOIN pg_roles r CROSS JOIN unnest(ARRAY['USAGE', 'UPDATE', 'SELECT']) AS priv
      WHERE c.relnamespace = 'flowforge'::regnamespace AND c.relkind = 'S'
        AND r.rolname IN ('flowforge_app', 'flowforge_worker', 'flowforge_daemon', 'flowforge_gateway', 'flowforge_readonly',
                          'flowforge_webhook')
        AND has_sequence_privilege(r.oid, c.oid, priv)$$,
    'no runtime role may use, read or setval a flowforge sequence');

SELECT is_empty(
    $$SELECT r.rolname::text FROM pg_roles r
      WHERE r.rolname IN ('flowforge_app', 'flowforge_worker', 'flowforge_daemon', 'flowforge_gateway', 'flowforge_readonly',
                          'flowforge_system', 'flowforge_webhook')
        AND has_schema_privilege(r.oid, 'flowforge', 'CREATE')$$,
    'no role but the owner may create objects in schema flowforge');
SELECT is_empty(
    $$SELECT a.privilege_type::text FROM pg_namespace n
      CROSS JOIN LATERAL aclexplode(coalesce(n.nspacl, acldefault('n', n.nspowner))) a
      WHERE n.nspname = 'flowforge' AND a.grantee = 0$$,
    'PUBLIC has no privilege on schema flowforge');
SELECT is(pg_get_userbyid((SELECT nspowner FROM pg_namespace WHERE nspname = 'flowforge'))::text, 'flowforge_owner',
          'schema flowforge is owned by flowforge_owner');

-- readonly reads every table but the two that hold keys: server_secret (the key gateway tokens are
-- signed with) and trigger_secret (webhooks' keys: a reader could forge any delivery).
SELECT is_empty(
    $$SELECT c.relname::text FROM pg_class c
      WHERE c.relnamespace = 'flowforge'::regnamespace AND c.relkind IN ('r', 'p')
        AND has_table_privilege('flowforge_readonly', c.oid, 'SELECT') = (c.relname IN ('server_secret', 'trigger_secret'))$$,
    'flowforge_readonly can SELECT every flowforge table except server_secret and trigger_secret');
SELECT is_empty(
    $$SELECT c.relname::text FROM pg_class c
      WHERE c.relnamespace = 'flowforge'::regnamespace AND c.relkind IN ('r', 'p')
        AND c.relname IN ('server_secret', 'trigger_secret')
        AND (has_any_column_privilege('flowforge_readonly', c.oid, 'SELECT')
             OR EXISTS (SELECT 1 FROM pg_policies p WHERE p.schemaname = 'flowforge' AND p.tablename = c.relname
                                                      AND 'flowforge_readonly' = ANY (p.roles)))$$,
    'nor any column of them, and no policy of theirs names flowforge_readonly');

-- Limits live in a table only the owners write, not in a GUC anyone can SET.
SELECT is((SELECT count(*)::integer FROM flowforge.setting), 1, 'flowforge.setting holds exactly one row');
SELECT is_empty(
    $$SELECT r.rolname::text FROM pg_roles r
      WHERE r.rolname LIKE 'flowforge\_%'
        AND r.rolname NOT IN ('flowforge_owner', 'flowforge_system')
        AND (has_table_privilege(r.oid, 'flowforge.setting', 'UPDATE')
             OR has_table_privilege(r.oid, 'flowforge.setting', 'INSERT'))$$,
    'only flowforge_owner and flowforge_system may change flowforge.setting');

-- Runtime defaults on the group roles (operators copy them to each login role; see docs/security.md).
SELECT is_empty(
    $$SELECT r.rolname::text FROM pg_roles r
      WHERE r.rolname IN ('flowforge_app', 'flowforge_worker', 'flowforge_daemon', 'flowforge_gateway', 'flowforge_webhook')
        AND NOT (r.rolconfig @> ARRAY['statement_timeout=30s', 'lock_timeout=5s']
                 AND EXISTS (SELECT 1 FROM unnest(r.rolconfig) c WHERE c LIKE 'idle\_in\_transaction\_session\_timeout=%'))$$,
    'runtime roles carry statement_timeout, lock_timeout and idle_in_transaction_session_timeout defaults');

SELECT * FROM finish();
ROLLBACK;
