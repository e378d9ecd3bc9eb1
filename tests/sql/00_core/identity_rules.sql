-- Identity: the superuser rule that _authorize takes without calling _caller
-- (05_identity.sql, _session_is_superuser), against the catalog's answer, and
-- the rules after it still reached for every other login. Roles are
-- cluster-wide: named per backend, and gone with the ROLLBACK.
BEGIN;
SELECT plan(12);
SELECT flowforge_test.define_single('ident', '{"queue": "qid"}') AS ident_wf \gset
SELECT flowforge.start_run('ident') AS ident_run \gset

SELECT 'ident_tenant_' || pg_backend_pid() AS tenant_login,
       'ident_operator_' || pg_backend_pid() AS operator_login,
       'ident_viewer_' || pg_backend_pid() AS viewer_login \gset
CREATE ROLE :"tenant_login" LOGIN;
CREATE ROLE :"operator_login" LOGIN IN ROLE flowforge_owner;
CREATE ROLE :"viewer_login" LOGIN;
SELECT flowforge.create_organization('ident-org', 'Identity org') AS org \gset
SELECT flowforge.add_member('ident-org', :'tenant_login', 'member') \gset
SELECT flowforge.add_member('ident-org', :'viewer_login', 'viewer') \gset

-- ------------------------------------------------------------ the superuser rule
SELECT is(flowforge._session_is_superuser(),
          (SELECT r.rolsuper FROM pg_roles r WHERE r.rolname = session_user),
          'a superuser session: _session_is_superuser agrees with pg_roles.rolsuper');
SELECT is(flowforge._authorize('owner'), '00000000-0000-0000-0000-000000000001'::uuid,
          'a superuser acts for the default organization as owner');
SET LOCAL ROLE flowforge_worker;
SELECT is((SELECT c.role FROM flowforge._caller() c), 'owner',
          'SET ROLE to a runtime role does not change it: identity is keyed on session_user');
RESET ROLE;
SELECT is_empty($$SELECT m.member::regrole::text FROM pg_auth_members m WHERE m.roleid = 'flowforge_system'::regrole$$,
    'flowforge_system has no members (a member would be taken for a superuser)');

-- ------------------------------------------------- every other login: _caller
SET LOCAL SESSION AUTHORIZATION :"tenant_login";
SELECT is((SELECT c.organization_id FROM flowforge._caller() c), :'org'::uuid,
          'a tenant login is not taken for a superuser: _caller gives its organization');
SELECT is((SELECT c.role FROM flowforge._caller() c), 'member', 'and its membership role');
SELECT lives_ok($$SELECT flowforge.define_workflow('{"name": "ident_t", "tasks": [{"key": "only", "queue": "qid"}]}')$$,
    'a member defines a workflow in its organization');
SELECT is((SELECT count(*)::int FROM flowforge.list_runs() r), 0, 'and sees none of the default organization''s runs');
RESET SESSION AUTHORIZATION;
SELECT is((SELECT w.organization_id FROM flowforge.workflow w WHERE w.name = 'ident_t'), :'org'::uuid,
          'the member''s workflow was written in its organization');

SET LOCAL SESSION AUTHORIZATION :"viewer_login";
SELECT throws_ok($$SELECT flowforge.start_run('ident_t')$$, 'FF007', NULL,
    'a viewer calling a member''s API: FF007 (the rank check after _caller)');
RESET SESSION AUTHORIZATION;

SET LOCAL SESSION AUTHORIZATION :"operator_login";
SELECT is((SELECT c.organization_id FROM flowforge._caller() c), '00000000-0000-0000-0000-000000000001'::uuid,
          'a member of flowforge_owner with no membership row: the default organization (rule 4)');
SELECT is((SELECT count(*)::int FROM flowforge.list_workflows() w WHERE w.name = 'ident'), 1,
          'and sees the default organization''s workflows');
RESET SESSION AUTHORIZATION;

SELECT * FROM finish();
ROLLBACK;
