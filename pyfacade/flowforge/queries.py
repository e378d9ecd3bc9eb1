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

# Messages the broker refused (nack, unroutable, exchange error, timeout) wait
# 2^attempts seconds before take_outbox offers them again.
DEFER_OUTBOX = "SELECT flowforge.defer_outbox(%(ids)s::uuid[], %(error)s)"

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

# Batched completions (pull workers): one transaction for many results; a
# refusal is reported per task ('stale', 'not_running', 'not_found').
COMPLETE_MANY = """
SELECT task_run_id, outcome
  FROM flowforge.complete_many(%(ids)s::uuid[], %(tokens)s::bigint[], %(outputs)s::jsonb[])
"""

FAIL = "SELECT flowforge.fail(%(task_run_id)s, %(fencing_token)s, %(error)s, %(retryable)s)"

# --- the SQL API: reads (sql/functions/70_reads.sql) ---------------------------

WORKFLOW_LIST = "SELECT name, version, id, kind, tasks, created_at FROM flowforge.list_workflows()"

GET_WORKFLOW = "SELECT flowforge.get_workflow(%(name)s)"

RUN_LIST = """
SELECT id, workflow_name AS workflow, version, state, tasks_total,
       tasks_total - tasks_remaining AS tasks_done, tasks_failed, created_at, started_at, finished_at
  FROM flowforge.list_runs(%(workflow)s, %(state)s, %(limit)s)
"""

GET_RUN = "SELECT flowforge.get_run(%(run_id)s)"

# `workflow apply`: what define_workflow just did.  Run in the same
# transaction: define_workflow still holds the name's advisory lock, so the
# latest version is the one it returned, and its created_at equals this
# transaction's flowforge.now() exactly when this transaction created it.
WORKFLOW_DEFINED = """
SELECT w ->> 'name' AS name, (w ->> 'version')::int AS version,
       (w ->> 'created_at')::timestamptz = flowforge.now() AS created
  FROM flowforge.get_workflow(%(name)s) AS w
"""

# Resolve a run id typed as a prefix (at least 4 hex digits).
RESOLVE_RUN_ID = "SELECT flowforge.resolve_run_id(%(prefix)s) AS id"

# The push worker: where a push queue's tasks are published.
QUEUE_SETTINGS = """
SELECT name, exchange, routing_key
  FROM flowforge.queue_settings(%(names)s)
"""
