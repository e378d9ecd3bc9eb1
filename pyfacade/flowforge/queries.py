"""Every SQL statement the Python facade sends, named, in one place.

The facade never builds SQL at run time: values travel as bind parameters,
and identifiers are fixed here.  Keeping the statements together makes the
facade's whole dependency on the SQL API reviewable at a glance and lets the
SQL side rename things with one grep.

Every call of an API function uses named notation with an explicit cast per
argument (``flowforge.claim(queues => %(queues)s::text[], ...)``): a parameter
inserted in the middle of a signature cannot silently take a value meant for
another, argument types never depend on how psycopg adapts a Python value, and
``tests/py/test_queries.py`` checks every name and cast against ``pg_proc``.
Every column is selected by name, so rows are read by name.

Who sends what: ``flowforge.client.Client`` the API calls, ``flowforge.catalog.Catalog``
the catalog reads, ``flowforge.db.embedded`` the embedded server's bootstrap.
"""

# --- server and catalog facts (doctor, migrate, the daemon's schema check) -----

SERVER_VERSION = """
SELECT current_setting('server_version_num')::int AS version_num, current_setting('server_version') AS version
"""

EXTENSION_AVAILABLE = """
SELECT default_version, installed_version
  FROM pg_catalog.pg_available_extensions
 WHERE name = %(name)s::text
"""

SCHEMA_EXISTS = "SELECT to_regnamespace('flowforge') IS NOT NULL AS installed"

# flowforge.schema_version() is defined in sql/functions/00_meta.sql; it may be
# absent (fresh database, or a database migrated before it existed), so ask
# the catalog first instead of catching an undefined_function error.
SCHEMA_VERSION_FUNCTION_EXISTS = "SELECT to_regprocedure('flowforge.schema_version()') IS NOT NULL AS installed"

# yoyo keeps its bookkeeping in the connection's current schema.  Reading it
# directly keeps `doctor` read-only (yoyo's own API creates its tables).
YOYO_TABLE_EXISTS = "SELECT to_regclass('_yoyo_migration') IS NOT NULL AS installed"

APPLIED_MIGRATION_IDS = "SELECT migration_id FROM _yoyo_migration ORDER BY migration_id"

# Every function in schema flowforge: its oid and its signature, spelled as
# DROP FUNCTION takes it (schema-qualified whatever the search_path).
FLOWFORGE_FUNCTIONS = """
SELECT p.oid::int8 AS oid,
       'flowforge.' || quote_ident(p.proname) || '(' || pg_catalog.oidvectortypes(p.proargtypes) || ')' AS signature
  FROM pg_catalog.pg_proc p
 WHERE p.pronamespace = 'flowforge'::regnamespace
 ORDER BY 2
"""

# One type as PostgreSQL spells it ('int' -> 'integer'), or NULL when there is
# no such type.  On PostgreSQL 15 text that is not a type name at all ('run_id
# uuid') raises a syntax error instead, so callers ask inside a savepoint.
REGTYPE = "SELECT to_regtype(%(name)s::text)::text AS type"

# Signatures such as 'flowforge.claim(text[], text, interval, integer)' to the
# oid of the function they name (NULL for no such function).  The types in
# them are REGTYPE's spelling, so none can be a syntax error.
REGPROCEDURES = """
SELECT s.signature, to_regprocedure(s.signature)::oid::int8 AS oid
  FROM unnest(%(signatures)s::text[]) AS s(signature)
"""

# The named arguments of every flowforge function, for tests/py/test_queries.py.
FUNCTION_ARGUMENTS = """
SELECT p.proname::text AS function, a.name::text, a.mode::text, format_type(a.type, NULL) AS type
  FROM pg_catalog.pg_proc p
 CROSS JOIN LATERAL unnest(p.proargnames,
                           coalesce(p.proargmodes, array_fill('i'::"char", ARRAY[cardinality(p.proargnames)])),
                           coalesce(p.proallargtypes, p.proargtypes::oid[])) AS a(name, mode, type)
 WHERE p.pronamespace = 'flowforge'::regnamespace AND p.proargnames IS NOT NULL
"""

# --- sessions and logins (doctor) ----------------------------------------------

# Connection slots: what non-superusers may use (max_connections less the
# superuser reserve; PostgreSQL 15 has no reserved_connections for other roles)
# and how many client backends hold one now, in every database of the cluster.
CONNECTION_SLOTS = """
SELECT current_setting('max_connections')::int AS max_connections,
       current_setting('superuser_reserved_connections')::int AS superuser_reserved,
       (SELECT count(*) FROM pg_catalog.pg_stat_activity WHERE backend_type = 'client backend')::int AS in_use
"""

# FlowForge's logins (cluster-wide: login roles that are members of a runtime
# role), their CONNECTION LIMIT (-1: none) and how many sessions each has now.
FLOWFORGE_LOGINS = """
SELECT r.rolname::text AS login, r.rolconnlimit AS connection_limit,
       (SELECT count(*) FROM pg_catalog.pg_stat_activity a WHERE a.usesysid = r.oid)::int AS connections,
       array(SELECT g.rolname::text FROM pg_catalog.pg_roles g
              WHERE g.rolname IN ('flowforge_app', 'flowforge_worker', 'flowforge_daemon', 'flowforge_gateway',
                                  'flowforge_readonly')
                AND pg_catalog.pg_has_role(r.oid, g.oid, 'MEMBER')
              ORDER BY 1) AS runtime_roles
  FROM pg_catalog.pg_roles r
 WHERE r.rolcanlogin AND NOT r.rolsuper
   AND EXISTS (SELECT 1 FROM pg_catalog.pg_roles g
                WHERE g.rolname IN ('flowforge_app', 'flowforge_worker', 'flowforge_daemon', 'flowforge_gateway',
                                    'flowforge_readonly')
                  AND pg_catalog.pg_has_role(r.oid, g.oid, 'MEMBER'))
 ORDER BY 1
"""

# Logins mapped to an organization in this database, and which of the three
# runtime timeouts they lack (no ALTER ROLE ... SET for this or every database,
# or set to 0, which disables it). Group-role settings never reach a login.
LOGIN_TIMEOUTS_MISSING = """
SELECT m.member::text AS login, o.slug AS organization,
       array(SELECT s.name
               FROM unnest(ARRAY['statement_timeout', 'lock_timeout', 'idle_in_transaction_session_timeout']) AS s(name)
              WHERE NOT EXISTS (
                    SELECT 1 FROM pg_catalog.pg_db_role_setting d
                     CROSS JOIN LATERAL unnest(d.setconfig) AS c(setting)
                     WHERE d.setrole = r.oid
                       AND d.setdatabase IN (0, (SELECT oid FROM pg_catalog.pg_database
                                                  WHERE datname = current_database()))
                       AND split_part(c.setting, '=', 1) = s.name
                       AND split_part(c.setting, '=', 2) NOT IN ('0', '0ms', '0s', '0min', '0h', '0d'))) AS missing
  FROM flowforge.membership m
  JOIN flowforge.organization o ON o.id = m.organization_id
  JOIN pg_catalog.pg_roles r ON r.rolname = m.member
 ORDER BY 1
"""

# Sessions of this database whose transaction has been open longer than
# %(seconds)s: while one lives, VACUUM cannot remove the dead rows it might
# still see (task_run bloats). backend_xmin: it holds a snapshot now.
OLD_TRANSACTIONS = """
SELECT a.pid, a.usename::text AS usename, nullif(a.application_name, '') AS application_name, a.state,
       extract(epoch FROM now() - a.xact_start)::float8 AS xact_seconds,
       extract(epoch FROM now() - a.state_change)::float8 AS state_seconds,
       a.backend_xmin IS NOT NULL AS holds_snapshot
  FROM pg_catalog.pg_stat_activity a
 WHERE a.datname = current_database() AND a.pid <> pg_backend_pid() AND a.backend_type = 'client backend'
   AND a.xact_start < now() - make_interval(secs => %(seconds)s::float8)
 ORDER BY a.xact_start
"""

# --- inspection (doctor --deep): the DBA's views of migration 0026 ---------------
# One statement per view, each its one SELECT (docs/operations.md), ordered for
# a reader and cut to %(limit)s rows; `total` is how many rows the view has.
# Ages are computed here, in seconds, so the renderer prints them compactly.

INSPECTION_INSTALLED = "SELECT to_regclass('flowforge.why_not_ready') IS NOT NULL AS installed"

# The views join and aggregate enough for the planner to JIT-compile them on a
# large database, which costs seconds and saves nothing: off for doctor's session.
NO_JIT = "SELECT set_config('jit', 'off', false) AS jit"

WHY_NOT_READY_REASONS = """
SELECT reason, count(*)::bigint AS units FROM flowforge.why_not_ready GROUP BY reason ORDER BY 2 DESC, 1
"""

WHY_NOT_READY = """
SELECT organization, unit_kind, unit_id, run_id, engine_kind, name, queue, status, reason, explanation, since, until,
       extract(epoch FROM now() - since)::float8 AS waiting_seconds, detail, count(*) OVER () AS total
  FROM flowforge.why_not_ready
 ORDER BY since NULLS LAST, organization, run_id, name
 LIMIT %(limit)s::int
"""

QUEUE_DEPTH = """
SELECT organization, unit_kind, queue, delivery, ready, running, scheduled, oldest_ready_at,
       extract(epoch FROM oldest_ready_age)::float8 AS oldest_ready_seconds, next_scheduled_at, claims_last_minute,
       count(*) OVER () AS total
  FROM flowforge.queue_depth
 ORDER BY ready DESC, running DESC, organization, unit_kind, queue
 LIMIT %(limit)s::int
"""

STUCK_RUNS = """
SELECT organization, run_id, engine_kind, workflow, version, status, since,
       extract(epoch FROM stuck_for)::float8 AS stuck_seconds, extract(epoch FROM threshold)::float8 AS threshold_seconds,
       waiting_on, detail, count(*) OVER () AS total
  FROM flowforge.stuck_runs
 ORDER BY since, run_id
 LIMIT %(limit)s::int
"""

WORKER_LOAD = """
SELECT organization, worker, kind, status, declared_status, task_runs, work_items, by_queue, oldest_held_since,
       -- A fan-out's held units never expire ('infinity', which Python's datetime cannot hold).
       CASE WHEN isfinite(nearest_lease_expiry) THEN nearest_lease_expiry END AS nearest_lease_expiry,
       CASE WHEN isfinite(nearest_lease_expiry) THEN extract(epoch FROM nearest_lease_expiry - now())::float8
            WHEN nearest_lease_expiry IS NOT NULL THEN 'Infinity'::float8 END AS lease_left_seconds,
       last_heartbeat_at, extract(epoch FROM heartbeat_age)::float8 AS heartbeat_age_seconds, last_claim_at, pins,
       count(*) OVER () AS total
  FROM flowforge.worker_load
 ORDER BY task_runs + work_items DESC, organization, worker
 LIMIT %(limit)s::int
"""

TENANT_USAGE = """
SELECT organization, runs, live_runs, runs_by_engine, succeeded_last_hour, failed_last_hour, succeeded_last_day,
       failed_last_day, history_rows, history_bytes, history, history_exact, count(*) OVER () AS total
  FROM flowforge.tenant_usage
 ORDER BY history_bytes DESC, runs DESC, organization
 LIMIT %(limit)s::int
"""

# Unused first (the candidates to drop), then the least scanned, the largest first.
INDEX_USAGE = """
SELECT table_name, index_name, idx_scan, size_bytes, size, is_unique, unused, serves, counted_since,
       count(*) OVER () AS total, count(*) FILTER (WHERE unused) OVER () AS unused_total,
       sum(size_bytes) OVER ()::bigint AS total_bytes
  FROM flowforge.index_usage
 ORDER BY unused DESC, idx_scan, size_bytes DESC, table_name, index_name
 LIMIT %(limit)s::int
"""

# --- migrations that wait for a lock (flowforge.lock_waits) --------------------

# Who blocks a waiting backend of `flowforge migrate` (by its application_name)
# in this database: each blocking session, what it holds of the relation the
# migration waits for (for CREATE INDEX CONCURRENTLY's wait on old snapshots,
# which names no relation: what it holds of flowforge's tables), the session
# holding the contested lock first, then the oldest transaction.
LOCK_BLOCKERS = """
SELECT pid, usename, application_name, state, state_seconds, xact_seconds, held, wanted
  FROM (SELECT b.pid, b.usename::text AS usename, nullif(b.application_name, '') AS application_name, b.state,
               extract(epoch FROM now() - b.state_change)::float8 AS state_seconds,
               extract(epoch FROM now() - b.xact_start)::float8 AS xact_seconds,
               (SELECT string_agg(DISTINCT h.mode || ' on ' || h.relation::regclass::text, ', ')
                  FROM pg_catalog.pg_locks h
                 WHERE h.pid = b.pid AND h.granted AND h.locktype = 'relation'
                   AND (h.relation = w.relation
                        OR (w.relation IS NULL AND h.relation IN (
                                SELECT c.oid FROM pg_catalog.pg_class c
                                  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                                 WHERE n.nspname = 'flowforge' AND c.relkind IN ('r', 'p'))))) AS held,
               w.mode || coalesce(' on ' || w.relation::regclass::text, ' (' || w.locktype || ')') AS wanted,
               b.xact_start
          FROM pg_catalog.pg_stat_activity a
          JOIN pg_catalog.pg_locks w ON w.pid = a.pid AND NOT w.granted
         CROSS JOIN LATERAL unnest(pg_catalog.pg_blocking_pids(a.pid)) AS bp(pid)
          JOIN pg_catalog.pg_stat_activity b ON b.pid = bp.pid
         WHERE a.datname = current_database() AND a.application_name = %(application_name)s::text) AS blockers
 ORDER BY held IS NULL, xact_start NULLS LAST, pid
"""

# Indexes in schema flowforge that a failed CREATE INDEX CONCURRENTLY (or an
# interrupted migrate) left INVALID, as the statements that drop them: an
# `IF NOT EXISTS` build would otherwise keep the broken index for good.
# Sent without parameters, so its % signs reach format() as they are.
DROP_INVALID_INDEXES = """
SELECT format('DROP INDEX CONCURRENTLY IF EXISTS %I.%I', n.nspname, c.relname) AS statement
  FROM pg_catalog.pg_index i
  JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = 'flowforge' AND NOT i.indisvalid
"""

# What a push worker compares a message's "database" with: the database its
# session is in (behind a pooler, not necessarily the name in the DSN).
CURRENT_DATABASE = "SELECT current_database() AS name"

# A daemon with no broker says how much push work waits for one.  Read from
# the inspection view (flowforge_readonly and superusers may; a login that may
# not is told so once and the daemon goes on without the count).
OUTBOX_WAITING = "SELECT coalesce(sum(messages), 0)::bigint AS unpublished FROM flowforge.outbox_backlog"

# --- embedded server bootstrap ---------------------------------------------

EMBEDDED_DATABASE_EXISTS = """
SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_database WHERE datname = 'flowforge') AS exists
"""

CREATE_EMBEDDED_DATABASE = "CREATE DATABASE flowforge"

# --- sessions: channels and bounds ---------------------------------------------

# Delivered at commit by every transaction that makes a task ready (pull workers).
LISTEN_READY = "LISTEN flowforge_ready"

# The channel flowforge._dispatch_rows notifies (once per transaction that wrote outbox rows).
LISTEN_OUTBOX = "LISTEN flowforge_outbox"

# Does LISTEN deliver?  A process LISTENs here too and notifies itself a fresh
# token from another connection (db.listen); behind a transaction pooler it
# never arrives.
LISTEN_PROBE = "LISTEN flowforge_probe"

NOTIFY_PROBE = "SELECT pg_notify('flowforge_probe', %(token)s::text)"

# The daemon's work session bounds everything it does, so a hung broker or a
# lock queue cannot hold outbox row locks or an open transaction for long.
# Values are set with set_config() so they travel as bind parameters.
BOUND_SESSION = """
SELECT set_config('statement_timeout', %(statement_timeout)s::text, false) AS statement_timeout,
       set_config('lock_timeout', %(lock_timeout)s::text, false) AS lock_timeout,
       set_config('idle_in_transaction_session_timeout', %(idle_in_transaction_timeout)s::text, false)
           AS idle_in_transaction_timeout
"""

# --- the SQL API: identity (sql/functions/05_identity.sql) ------------------------

SCHEMA_VERSION = "SELECT flowforge.schema_version() AS version"

AUTHENTICATE = "SELECT flowforge.authenticate(api_key => %(api_key)s::text) AS organization_id"

CREATE_ORGANIZATION = "SELECT flowforge.create_organization(slug => %(slug)s::text, name => %(name)s::text) AS id"

ADD_MEMBER = """
SELECT flowforge.add_member(organization => %(organization)s::text, member => %(member)s::name, role => %(role)s::text)
"""

REMOVE_MEMBER = "SELECT flowforge.remove_member(organization => %(organization)s::text, member => %(member)s::name)"

CREATE_API_KEY = """
SELECT flowforge.create_api_key(organization => %(organization)s::text, name => %(name)s::text, role => %(role)s::text)
       AS api_key
"""

REVOKE_API_KEY = "SELECT flowforge.revoke_api_key(prefix => %(prefix)s::text)"

# The operator's onboarding path (`flowforge org onboard`): add_member plus the
# login's statement, lock and idle-in-transaction timeouts.
ONBOARD_LOGIN = """
SELECT flowforge.onboard_login(organization => %(organization)s::text, member => %(member)s::name,
                               role => %(role)s::text, statement_timeout => %(statement_timeout)s::text,
                               lock_timeout => %(lock_timeout)s::text,
                               idle_in_transaction_timeout => %(idle_in_transaction_timeout)s::text)
"""

# --- the SQL API: definitions and runs (CLI, demo) ---------------------------
# Each is one call of a documented API function (see its COMMENT ON FUNCTION).
# jsonb values are passed as psycopg Jsonb, uuids as uuid.UUID, intervals as
# datetime.timedelta (or interval text).

DEFINE_WORKFLOW = "SELECT flowforge.define_workflow(spec => %(spec)s::jsonb) AS id"

# `workflow apply`: what define_workflow just did.  Run in the same
# transaction: define_workflow still holds the name's advisory lock, so the
# latest version is the one it returned, and its created_at equals this
# transaction's flowforge.now() exactly when this transaction created it.
WORKFLOW_DEFINED = """
SELECT w ->> 'name' AS name, (w ->> 'version')::int AS version,
       (w ->> 'created_at')::timestamptz = flowforge.now() AS created
  FROM flowforge.get_workflow(name => %(name)s::text) AS w
"""

START_RUN = """
SELECT flowforge.start_run(workflow => %(workflow)s::text, input => %(input)s::jsonb,
                           idempotency_key => %(idempotency_key)s::text) AS id
"""

# Bulk enqueue: one run per input, one id per input in input order (keys: NULL or parallel to inputs).
START_RUNS = """
SELECT id FROM flowforge.start_runs(workflow => %(workflow)s::text, inputs => %(inputs)s::jsonb[],
                                    idempotency_keys => %(idempotency_keys)s::text[]) AS id
"""

CANCEL_RUN = "SELECT flowforge.cancel_run(run_id => %(run_id)s::uuid, reason => %(reason)s::text)"

RETRY_RUN = "SELECT flowforge.retry_run(run_id => %(run_id)s::uuid)"

# Soft deletes (issue 19): a finished run; every version of a workflow (how many were live).
DELETE_RUN = "SELECT flowforge.delete_run(run_id => %(run_id)s::uuid)"

DELETE_WORKFLOW = "SELECT flowforge.delete_workflow(name => %(name)s::text) AS versions"

RUN_EVENTS = """
SELECT seq, created_at, task_run_id, task_key, kind, from_state, to_state, attempt, fencing_token, detail
  FROM flowforge.run_events(run_id => %(run_id)s::uuid)
"""

# --- the SQL API: queues (sql/functions/60_push.sql, 70_reads.sql) -------------

CONFIGURE_QUEUE = """
SELECT flowforge.configure_queue(name => %(name)s::text, exchange => %(exchange)s::text,
                                 routing_key => %(routing_key)s::text, dispatch_lease => %(dispatch_lease)s::interval,
                                 max_running => %(max_running)s::integer, rate => %(rate)s::jsonb)
"""

# Flow control (sql/functions/10_substrate/22_flow_control.sql): a paused queue gives claims nothing.
PAUSE_QUEUE = "SELECT flowforge.pause_queue(name => %(name)s::text)"
RESUME_QUEUE = "SELECT flowforge.resume_queue(name => %(name)s::text)"

# The push worker: where a push queue's tasks are published, and the AMQP queue to bind for them.
QUEUE_SETTINGS = """
SELECT name, exchange, routing_key, dispatch_lease, amqp_queue
  FROM flowforge.queue_settings(names => %(names)s::text[])
"""

# --- the SQL API: the worker protocol (worker SDK) -----------------------------

# task_names: only tasks the caller has handlers for (NULL: any task of the queues).
CLAIM = """
SELECT task_run_id, workflow_run_id, task_key, attempt, fencing_token, input, lease_expires_at
  FROM flowforge.claim(queues => %(queues)s::text[], worker => %(worker)s::text, lease => %(lease)s::interval,
                       batch => %(batch)s::int, task_names => %(task_names)s::text[])
"""

HEARTBEAT = """
SELECT flowforge.heartbeat(task_run_id => %(task_run_id)s::uuid, fencing_token => %(fencing_token)s::bigint,
                           lease => %(lease)s::interval) AS lease_expires_at
"""

COMPLETE = """
SELECT flowforge.complete(task_run_id => %(task_run_id)s::uuid, fencing_token => %(fencing_token)s::bigint,
                          output => %(output)s::jsonb)
"""

# Batched completions (pull workers): one transaction for many results; a
# refusal is reported per task ('stale', 'not_running', 'not_found').
COMPLETE_MANY = """
SELECT task_run_id, outcome
  FROM flowforge.complete_many(task_run_ids => %(task_run_ids)s::uuid[],
                               fencing_tokens => %(fencing_tokens)s::bigint[], outputs => %(outputs)s::jsonb[])
"""

FAIL = """
SELECT flowforge.fail(task_run_id => %(task_run_id)s::uuid, fencing_token => %(fencing_token)s::bigint,
                      error => %(error)s::text, retryable => %(retryable)s::boolean)
"""

# --- the SQL API: the work-item queue (sql/functions/10_substrate/50_work_items.sql) ---
# Every unit of work that is not a DAG task's own attempt: a graph node's
# visit, a machine's action, a fan-out child.  The same fencing discipline and
# codes as the task protocol above.  engine_kinds NULL: any engine's items.

CLAIM_WORK = """
SELECT work_item_id, run_id, engine_kind, task_name, attempt, fencing_token, payload, lease_expires_at
  FROM flowforge.claim_work(queues => %(queues)s::text[], agent => %(agent)s::text, lease => %(lease)s::interval,
                            batch => %(batch)s::int, engine_kinds => %(engine_kinds)s::text[],
                            task_names => %(task_names)s::text[])
"""

HEARTBEAT_WORK = """
SELECT flowforge.heartbeat_work(work_item_id => %(work_item_id)s::uuid, fencing_token => %(fencing_token)s::bigint,
                                lease => %(lease)s::interval) AS lease_expires_at
"""

COMPLETE_WORK = """
SELECT flowforge.complete_work(work_item_id => %(work_item_id)s::uuid, fencing_token => %(fencing_token)s::bigint,
                               output => %(output)s::jsonb)
"""

FAIL_WORK = """
SELECT flowforge.fail_work(work_item_id => %(work_item_id)s::uuid, fencing_token => %(fencing_token)s::bigint,
                           error => %(error)s::text, retryable => %(retryable)s::boolean)
"""

# --- the SQL API: agents (sql/functions/10_substrate/55_agents.sql) -------------

REGISTER_AGENT = "SELECT flowforge.register_agent(name => %(name)s::text, info => %(info)s::jsonb) AS id"

# Returns the agent's status: active, draining (finish what you hold) or inactive (register again).
AGENT_HEARTBEAT = """
SELECT flowforge.agent_heartbeat(name => %(name)s::text, metrics => %(metrics)s::jsonb) AS status
"""

SET_AGENT_STATUS = "SELECT flowforge.set_agent_status(name => %(name)s::text, status => %(status)s::text)"

# One keyset page (by name); the client reads page after page (after => the last row's cursor).
LIST_AGENTS = """
SELECT name, status, declared_status, agent_type, version, labels, metrics, heartbeat_interval, last_heartbeat_at,
       last_claim_at, holding, bindings, http_address, grpc_address, infra_address, created_at, cursor
  FROM flowforge.list_agents(max_rows => %(max_rows)s::int, after => %(after)s::text)
"""

# --- the SQL API: state machines (sql/functions/40_machine/30_send_event.sql) -------

SEND_EVENT = """
SELECT flowforge.send_event(run_id => %(run_id)s::uuid, event => %(event)s::text, payload => %(payload)s::jsonb,
                            event_id => %(event_id)s::text) AS outcome
"""

# --- the SQL API: maintenance and the outbox (daemon; sql/functions/70_maintenance/, 10_substrate/40_push.sql) ---

# engine_id: the daemon's instance id, so the organizations' duties are shared among
# live daemons by per-organization leases; NULL: every organization's (a lone scheduler).
# --- triggers (sql/functions/60_triggers, 80_reads/50_firings.sql) ----------------------

CREATE_TRIGGER = """
SELECT flowforge.create_trigger(name => %(name)s::text, trigger_type => %(trigger_type)s::text,
                                action => %(action)s::text, target => %(target)s::text,
                                options => %(options)s::jsonb) AS id
"""

SET_TRIGGER_ENABLED = "SELECT flowforge.set_trigger_enabled(name => %(name)s::text, enabled => %(enabled)s::boolean)"

DROP_TRIGGER = "SELECT flowforge.drop_trigger(name => %(name)s::text)"

FIRE_TRIGGER = """
SELECT flowforge.fire_trigger(name => %(name)s::text, payload => %(payload)s::jsonb,
                              fired_on => %(fired_on)s::timestamptz, delivery_id => %(delivery_id)s::text) AS firing
"""

LIST_TRIGGERS = """
SELECT id, name, trigger_type, action, target, enabled, options, input, next_fire_at, last_fired_at, created_at,
       created_by, cursor
  FROM flowforge.list_triggers(max_rows => %(max_rows)s::int, after => %(after)s::text)
"""

LIST_FIRINGS = """
SELECT id, name, trigger_type, action, event, definition, run_id, result, error, fired_on, recorded_at, delivery_id,
       payload, created_by
  FROM flowforge.list_firings(trigger_name => %(trigger_name)s::text, outcome => %(outcome)s::text,
                              max_rows => %(max_rows)s::int)
"""

CRON_NEXT = """
SELECT flowforge.cron_next(expr => %(expr)s::text, after => %(after)s::timestamptz,
                           timezone => %(timezone)s::text) AS next
"""

# The daemon's feeders (50_feeders.sql): which triggers to poll, what was fired already, fire one, save progress.
FEEDER_TRIGGERS = """
SELECT trigger_id, organization, name, trigger_type, options, state
  FROM flowforge.feeder_triggers(engine_id => %(engine_id)s::text)
"""

FEEDER_UNFIRED = """
SELECT flowforge.feeder_unfired(trigger_id => %(trigger_id)s::uuid, delivery_ids => %(delivery_ids)s::text[]) AS ids
"""

FEEDER_FIRE = """
SELECT flowforge.feeder_fire(trigger_id => %(trigger_id)s::uuid, delivery_id => %(delivery_id)s::text,
                             payload => %(payload)s::jsonb, fired_on => %(fired_on)s::timestamptz) AS firing
"""

FEEDER_SAVE_STATE = "SELECT flowforge.feeder_save_state(trigger_id => %(trigger_id)s::uuid, state => %(state)s::jsonb)"

# The webhook receiver's one call (flowforge serve): raw body and two headers in,
# {"status", "firing" | "error"} out; its own transaction on an autocommit connection.
RECEIVE_WEBHOOK = """
SELECT flowforge.receive_webhook(organization => %(organization)s::text, trigger => %(trigger)s::text,
                                 body => %(body)s::bytea, signature => %(signature)s::text,
                                 delivery_id => %(delivery_id)s::text) AS answer
"""

TICK = "SELECT flowforge.tick(engine_id => %(engine_id)s::text) AS counts"

LIST_ENGINES = "SELECT engine_id, live, organizations, heartbeat_at FROM flowforge.list_engines()"

LEAVE_DUTIES = "SELECT flowforge.leave_duties(engine_id => %(engine_id)s::text) AS given_back"

REAP_EXPIRED_LEASES = "SELECT flowforge.reap_expired_leases(max_rows => %(max_rows)s::int) AS reaped"

PURGE = """
SELECT flowforge.purge(older_than => %(older_than)s::interval, dry_run => %(dry_run)s::boolean,
                       batch_size => %(batch_size)s::int) AS report
"""

# Available unpublished rows, each taken under a lease (its next_attempt_at moved
# past it) that the caller commits at once: no lock is held across broker I/O.
# payload::text: the body is sent exactly as the database wrote it.
TAKE_OUTBOX = """
SELECT id, exchange, routing_key, message_id, payload::text AS body
  FROM flowforge.take_outbox(batch => %(batch)s::int, lease => %(lease)s::interval)
"""

MARK_PUBLISHED = "SELECT flowforge.mark_published(ids => %(ids)s::uuid[]) AS marked"

# Messages the broker refused (nack, unroutable, exchange error, timeout) wait
# 2^attempts seconds before take_outbox offers them again.
DEFER_OUTBOX = "SELECT flowforge.defer_outbox(ids => %(ids)s::uuid[], error => %(error)s::text) AS deferred"

# --- the SQL API: reads (sql/functions/70_reads.sql) ---------------------------

# One keyset page, newest first; the client reads page after page (after => the last row's cursor).
WORKFLOW_LIST = """
SELECT name, version, id, kind, tasks, created_at, cursor
  FROM flowforge.list_workflows(max_rows => %(max_rows)s::int, after => %(after)s::text)
"""

GET_WORKFLOW = "SELECT flowforge.get_workflow(name => %(name)s::text, version => %(version)s::int) AS workflow"

# kind: dag, graph or statemachine; the task counters are a DAG's (NULL for the other kinds).
RUN_LIST = """
SELECT id, workflow_name AS workflow, version, kind, state, tasks_total,
       tasks_total - tasks_remaining AS tasks_done, tasks_failed, created_at, started_at, finished_at
  FROM flowforge.list_runs(workflow => %(workflow)s::text, with_state => %(state)s::text, max_rows => %(limit)s::int)
"""

GET_RUN = "SELECT flowforge.get_run(run_id => %(run_id)s::uuid) AS run"

# `run show` / `run watch`: each task's timeout in the run's workflow version,
# so TOOK of a timed-out task stops at started_at + timeout, not at the reap.
TASK_TIMEOUTS = """
SELECT t ->> 'key' AS key, (t ->> 'timeout')::interval AS timeout
  FROM jsonb_array_elements(
           flowforge.get_workflow(name => %(name)s::text, version => %(version)s::int) -> 'spec' -> 'tasks') AS t
"""

# A fanning node's children's outputs, page by page, in element order (what a
# map output passed by reference points to).
FAN_OUT_OUTPUT = """
SELECT index, status, output
  FROM flowforge.fan_out_output(run_id => %(run_id)s::uuid, node => %(node)s::text,
                                after_index => %(after_index)s::bigint, max_items => %(max_items)s::int)
"""

LIST_QUEUES = """
SELECT name, delivery, exchange, routing_key, amqp_queue, dispatch_lease, ready, running, oldest_ready_at
  FROM flowforge.list_queues()
"""

# Resolve a run id typed as a prefix (at least 4 hex digits).
RESOLVE_RUN_ID = "SELECT flowforge.resolve_run_id(id_prefix => %(prefix)s::text) AS id"

# --- shown, not sent ------------------------------------------------------------

# `flowforge demo` prints this for the reader to paste into psql.
DEMO_INSPECT_RUN = ("SELECT created_at, task_key, kind, attempt, detail->>'error' AS error "
                    "FROM flowforge.run_events('{run_id}');")

# --- flowforge serve: the web UI, the JSON API and /metrics (issue 20) --------------
# Every request of the serve process runs in its own transaction on the gateway
# login: AUTHENTICATE first, then the reads below, which see what the key may.

AUTHENTICATE = "SELECT flowforge.authenticate(api_key => %(api_key)s::text) AS organization_id"

SERVE_LIST_RUNS = """
SELECT id, workflow_name AS workflow, version, kind, state, tasks_total, tasks_remaining, tasks_failed,
       created_at, started_at, finished_at
  FROM flowforge.list_runs(workflow => %(workflow)s::text, with_state => %(state)s::text, max_rows => %(limit)s::int)
"""

RUN_CAUSES = """
SELECT run_id, kind, parent_run_id, triggered_by, trigger_firing_id, created_by
  FROM flowforge.run_causes(run_ids => %(run_ids)s::uuid[])
"""

SERVE_RUN_EVENTS = """
SELECT seq, created_at, task_run_id, task_key, kind, from_state, to_state, attempt, fencing_token, detail, work_item_id
  FROM flowforge.run_events(run_id => %(run_id)s::uuid)
"""

QUEUE_STATS = """
SELECT queue, unit_kind, delivery, ready, scheduled, running, oldest_ready_at,
       extract(epoch FROM oldest_ready_age)::float8 AS oldest_ready_age_seconds,
       claims_last_minute, completions_last_minute, failures_last_minute
  FROM flowforge.queue_stats()
"""

SERVE_LIST_FIRINGS = """
SELECT id, name, trigger_type, action, event, definition, run_id, result, error, fired_on, recorded_at, delivery_id,
       payload, created_by
  FROM flowforge.list_firings(trigger_name => %(trigger)s::text, outcome => %(outcome)s::text,
                              max_rows => %(limit)s::int)
"""

# /metrics: the caller's organization (gateway) or every one (the operator's
# flowforge_readonly login); the window after `since` is counted.
METRICS = "SELECT organization, metric, labels, value, window_end FROM flowforge.metrics(since => %(since)s::timestamptz)"

METRICS_ALL = """
SELECT organization, metric, labels, value, window_end FROM flowforge.metrics_all(since => %(since)s::timestamptz)
"""

# The embedded default (`flowforge serve` with no DSN): a gateway login of its
# own and a viewer key of the default organization, made once by the folder's
# superuser so the serve process itself never connects as one.
SERVE_LOGIN_EXISTS = "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = %(login)s::text) AS present"

CREATE_SERVE_LOGIN = "CREATE ROLE flowforge_serve LOGIN IN ROLE flowforge_gateway"

CREATE_SERVE_HOOKS_LOGIN = "CREATE ROLE flowforge_serve_hooks LOGIN IN ROLE flowforge_webhook"

CREATE_SERVE_KEY = """
SELECT flowforge.create_api_key(organization => %(organization)s::text, name => %(name)s::text,
                                role => %(role)s::text) AS api_key
"""

AGENT_HOLDINGS = """
SELECT agent, what, unit_id, run_id, name, queue, since, lease_expires_at
  FROM flowforge.agent_holdings(max_rows => %(limit)s::int)
"""
