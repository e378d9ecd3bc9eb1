-- FlowForge 0008: read-only views for DBAs and monitoring (flowforge_readonly,
-- or a superuser in psql). security_invoker, so the reader's own rights and
-- row-level security apply. Views live in migrations, not in sql/functions/,
-- because tables depend on them in rollbacks: each is dropped before the
-- tables it reads.
-- depends: 0007_outbox_retry

-- The outbox backlog, with the messages the broker refused counted apart.
CREATE VIEW flowforge.outbox_backlog WITH (security_invoker = true) AS
SELECT m.organization_id, m.exchange, count(*) AS messages,
       count(*) FILTER (WHERE m.publish_attempts > 0) AS refused, min(m.created_at) AS oldest,
       now() - min(m.created_at) AS oldest_age
FROM flowforge.outbox_message m
WHERE m.published_at IS NULL
GROUP BY m.organization_id, m.exchange;
COMMENT ON VIEW flowforge.outbox_backlog IS
  'Unpublished outbox messages per organization and exchange: how many, how many the broker refused (deferred by '
  'defer_outbox), and the age of the oldest (served by idx_outbox_pending).';

-- Runs with their workflow name and progress, newest first.
CREATE VIEW flowforge.run_overview WITH (security_invoker = true) AS
SELECT r.organization_id, r.id, w.name AS workflow, w.version, r.state, r.tasks_total,
       r.tasks_total - r.tasks_remaining AS tasks_finished, r.tasks_failed,
       r.created_at, r.started_at, r.finished_at, coalesce(r.finished_at, now()) - r.started_at AS duration
FROM flowforge.workflow_run r
JOIN flowforge.workflow w ON w.id = r.workflow_id;
COMMENT ON VIEW flowforge.run_overview IS
  'Every run with its workflow name, version, state, progress and duration (for psql and monitoring).';

GRANT SELECT ON flowforge.outbox_backlog, flowforge.run_overview TO flowforge_readonly;
ALTER VIEW flowforge.outbox_backlog OWNER TO flowforge_owner;
ALTER VIEW flowforge.run_overview OWNER TO flowforge_owner;
