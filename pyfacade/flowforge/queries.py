"""Every SQL statement the Python facade sends, named, in one place.

The facade never builds SQL at run time: values travel as bind parameters,
and identifiers are fixed here.  Keeping the statements together makes the
facade's whole dependency on the SQL API reviewable at a glance and lets the
SQL side rename things with one grep.
"""

# --- server facts (doctor) -------------------------------------------------

SERVER_VERSION_NUM = "SELECT current_setting('server_version_num')::int, current_setting('server_version')"

EXTENSION_AVAILABLE = """
SELECT default_version, installed_version
  FROM pg_catalog.pg_available_extensions
 WHERE name = %(name)s
"""

# --- schema version (doctor, migrate) ---------------------------------------

# flowforge.schema_version() is defined in sql/functions/00_meta.sql; it may be
# absent (fresh database, or a database migrated before it existed), so ask
# the catalog first instead of catching an undefined_function error.
SCHEMA_VERSION_FUNCTION_EXISTS = "SELECT to_regprocedure('flowforge.schema_version()') IS NOT NULL"

SCHEMA_VERSION = "SELECT flowforge.schema_version()"

# yoyo keeps its bookkeeping in the connection's current schema.  Reading it
# directly keeps `doctor` read-only (yoyo's own API creates its tables).
YOYO_TABLE_EXISTS = "SELECT to_regclass('_yoyo_migration') IS NOT NULL"

APPLIED_MIGRATION_IDS = "SELECT migration_id FROM _yoyo_migration ORDER BY migration_id"

# --- embedded server bootstrap ---------------------------------------------

EMBEDDED_DATABASE_EXISTS = "SELECT 1 FROM pg_catalog.pg_database WHERE datname = 'flowforge'"

CREATE_EMBEDDED_DATABASE = "CREATE DATABASE flowforge"

# --- daemon: outbox drain and timer (sql/functions/60_push.sql, 50_maintenance.sql) ---

# The daemon's work session bounds everything it does, so a hung broker or a
# lock queue cannot hold outbox row locks or an open transaction for long.
# Values are set with set_config() so they travel as bind parameters.
DAEMON_SESSION_SETTINGS = """
SELECT set_config('statement_timeout', %(statement_timeout)s, false),
       set_config('lock_timeout', %(lock_timeout)s, false),
       set_config('idle_in_transaction_session_timeout', %(idle_in_transaction_timeout)s, false)
"""

# The channel flowforge._dispatch_rows notifies (once per transaction that wrote outbox rows).
LISTEN_OUTBOX = "LISTEN flowforge_outbox"

# Oldest unpublished rows, locked FOR UPDATE SKIP LOCKED until this transaction
# ends.  payload::text: the body is sent exactly as the database wrote it.
TAKE_OUTBOX = """
SELECT id, exchange, routing_key, message_id, payload::text
  FROM flowforge.take_outbox(%(batch)s)
"""

MARK_PUBLISHED = "SELECT flowforge.mark_published(%(ids)s::uuid[])"

TICK = "SELECT flowforge.tick()"

# --- the SQL API: definitions and runs (CLI, demo) ---------------------------
# Each is one call of a documented API function (see its COMMENT ON FUNCTION).
# jsonb values are passed as psycopg Jsonb, uuids as uuid.UUID, intervals as
# datetime.timedelta.

DEFINE_WORKFLOW = "SELECT flowforge.define_workflow(%(spec)s)"

START_RUN = "SELECT flowforge.start_run(%(workflow)s, %(input)s, %(idempotency_key)s)"

CANCEL_RUN = "SELECT flowforge.cancel_run(%(run_id)s, %(reason)s)"

RETRY_RUN = "SELECT flowforge.retry_run(%(run_id)s)"

RUN_EVENTS = """
SELECT seq, created_at, task_run_id, task_key, kind, from_state, to_state, attempt, fencing_token, detail
  FROM flowforge.run_events(%(run_id)s)
"""

CONFIGURE_QUEUE = """
SELECT flowforge.configure_queue(%(name)s, %(exchange)s, %(routing_key)s, %(dispatch_lease)s)
"""

# (TICK: see the daemon section above)

# --- the SQL API: the worker protocol (worker SDK) -----------------------------

# Delivered at commit by every transaction that makes a task ready.
LISTEN_READY = "LISTEN flowforge_ready"

CLAIM = """
SELECT task_run_id, workflow_run_id, task_key, attempt, fencing_token, input, lease_expires_at
  FROM flowforge.claim(%(queues)s, %(worker)s, %(lease)s, %(batch)s)
"""

HEARTBEAT = "SELECT flowforge.heartbeat(%(task_run_id)s, %(fencing_token)s, %(lease)s)"

COMPLETE = "SELECT flowforge.complete(%(task_run_id)s, %(fencing_token)s, %(output)s)"

FAIL = "SELECT flowforge.fail(%(task_run_id)s, %(fencing_token)s, %(error)s, %(retryable)s)"

# ============================================================================
# TABLE READS — no SQL API function serves these yet.
# The CLI's list/show commands and the push worker read the tables directly,
# scoped to flowforge.current_organization().  When inspection views (or API
# read functions) land, switch these statements and nothing else.
# ============================================================================

# `workflow apply`: what define_workflow just returned.  created_at is the
# transaction's flowforge.now() exactly when this transaction inserted the row,
# so run it in the same transaction as DEFINE_WORKFLOW.
WORKFLOW_VERSION = """
SELECT w.name, w.version, w.created_at = flowforge.now() AS created
  FROM flowforge.workflow w
 WHERE w.id = %(id)s AND w.organization_id = flowforge.current_organization()
"""

# `workflow list`: the latest version of every workflow, with its run count.
WORKFLOW_LIST = """
SELECT w.name, w.version, jsonb_array_length(w.spec -> 'tasks') AS tasks,
       (SELECT count(*) FROM flowforge.workflow_run r
          JOIN flowforge.workflow v ON v.id = r.workflow_id
         WHERE v.organization_id = w.organization_id AND v.name = w.name) AS runs,
       w.created_at
  FROM flowforge.workflow w
 WHERE w.organization_id = flowforge.current_organization()
   AND w.version = (SELECT max(l.version) FROM flowforge.workflow l
                     WHERE l.organization_id = w.organization_id AND l.name = w.name)
 ORDER BY w.name
"""

# `workflow show NAME`: the latest version's normalized spec.
WORKFLOW_LATEST = """
SELECT w.id, w.name, w.version, w.spec, w.created_at
  FROM flowforge.workflow w
 WHERE w.organization_id = flowforge.current_organization() AND w.name = %(name)s
 ORDER BY w.version DESC
 LIMIT 1
"""

# `run list`: newest runs first (idx_wfrun_org_recent), optionally filtered.
RUN_LIST = """
SELECT r.id, w.name AS workflow, w.version, r.state, r.tasks_total,
       r.tasks_total - r.tasks_remaining AS tasks_done, r.tasks_failed,
       r.created_at, r.finished_at
  FROM flowforge.workflow_run r
  JOIN flowforge.workflow w ON w.id = r.workflow_id
 WHERE r.organization_id = flowforge.current_organization()
   AND (%(workflow)s::text IS NULL OR w.name = %(workflow)s::text)
   AND (%(state)s::text IS NULL OR r.state = %(state)s::text)
 ORDER BY r.created_at DESC
 LIMIT %(limit)s
"""

# Resolve a run id typed as a prefix (at least a few hex digits) — at most two
# matches are read so an ambiguous prefix can be reported.
RUN_IDS_BY_PREFIX = """
SELECT r.id
  FROM flowforge.workflow_run r
 WHERE r.organization_id = flowforge.current_organization()
   AND r.id::text LIKE %(prefix)s
 LIMIT 2
"""

# `run show`, `run watch`, the demo: one run and its task runs.
RUN_GET = """
SELECT r.id, w.name AS workflow, w.version, r.state, r.input, r.idempotency_key, r.reason,
       r.tasks_total, r.tasks_total - r.tasks_remaining AS tasks_done, r.tasks_failed,
       r.created_at, r.started_at, r.finished_at, w.spec
  FROM flowforge.workflow_run r
  JOIN flowforge.workflow w ON w.id = r.workflow_id
 WHERE r.id = %(run_id)s AND r.organization_id = flowforge.current_organization()
"""

RUN_TASKS = """
SELECT tr.id, tr.task_key, tr.queue, tr.state, tr.attempt, tr.max_attempts, tr.lease_owner,
       tr.error, tr.output, tr.ready_at, tr.started_at, tr.finished_at
  FROM flowforge.task_run tr
 WHERE tr.workflow_run_id = %(run_id)s AND tr.organization_id = flowforge.current_organization()
"""

# The demo's live progress: task states of several runs at once.
RUNS_PROGRESS = """
SELECT r.id, r.state, r.tasks_total, r.tasks_total - r.tasks_remaining AS tasks_done,
       count(tr.id) FILTER (WHERE tr.state = 'running') AS tasks_running,
       coalesce(sum(tr.attempt - 1), 0) AS retries
  FROM flowforge.workflow_run r
  JOIN flowforge.task_run tr ON tr.workflow_run_id = r.id
 WHERE r.id = ANY (%(run_ids)s) AND r.organization_id = flowforge.current_organization()
 GROUP BY r.id
"""

# The push worker: where a push queue's tasks are published.
QUEUE_SETTINGS = """
SELECT q.name, q.exchange, coalesce(q.routing_key, q.name) AS routing_key
  FROM flowforge.queue q
 WHERE q.organization_id = flowforge.current_organization() AND q.name = ANY (%(names)s)
"""
