-- Reads of queue settings (viewer rights): where a push queue's tasks are published.

CREATE OR REPLACE FUNCTION flowforge.queue_settings(names text[])
RETURNS TABLE (name text, exchange text, routing_key text, dispatch_lease interval, amqp_queue text)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
#variable_conflict use_column
DECLARE
    v_org constant uuid := flowforge._authorize('viewer');
BEGIN
    RETURN QUERY
    SELECT q.name::text, q.exchange::text, coalesce(q.routing_key, flowforge._push_route(v_org, q.name))::text,
           q.dispatch_lease, 'flowforge.' || flowforge._push_route(v_org, q.name)
    FROM flowforge.queue q
    WHERE q.organization_id = v_org AND q.name = ANY (queue_settings.names);
END;
$$;
COMMENT ON FUNCTION flowforge.queue_settings(text[]) IS
  'queue_settings(names text[]) -> setof (name, exchange, routing_key, dispatch_lease, amqp_queue): the configured '
  'queues among names (a queue with no row is pull); exchange NULL means pull. routing_key is what dispatch publishes '
  'with (default <database>.<organization slug>.<queue>) and amqp_queue the durable queue a push consumer declares '
  'and binds with it (flowforge.<database>.<organization slug>.<queue>), unique per database and organization. '
  'Viewer rights. Errors: FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.queue_settings(text[])', 'flowforge_owner', '{flowforge_app,flowforge_worker,flowforge_gateway}');

CREATE OR REPLACE FUNCTION flowforge.list_queues()
RETURNS TABLE (name text, delivery text, exchange text, routing_key text, amqp_queue text, dispatch_lease interval,
               ready bigint, running bigint, oldest_ready_at timestamptz)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
#variable_conflict use_column
DECLARE
    v_org constant uuid := flowforge._authorize('viewer');
BEGIN
    -- Every queue the organization configured or has live tasks on. The
    -- counts read only ready and running rows (partial indexes), never history.
    RETURN QUERY
    WITH live AS (
        SELECT tr.queue, count(*) FILTER (WHERE tr.state = 'ready') AS ready,
               count(*) FILTER (WHERE tr.state = 'running') AS running,
               min(tr.ready_at) FILTER (WHERE tr.state = 'ready') AS oldest_ready_at
        FROM flowforge.task_run tr
        WHERE tr.organization_id = v_org AND tr.state IN ('ready', 'running')
        GROUP BY tr.queue
    ), names AS (
        SELECT q.name::text AS name FROM flowforge.queue q WHERE q.organization_id = v_org
        UNION
        SELECT l.queue::text FROM live l
    )
    SELECT n.name, CASE WHEN q.exchange IS NULL THEN 'pull' ELSE 'push' END, q.exchange::text,
           CASE WHEN q.exchange IS NULL THEN NULL ELSE coalesce(q.routing_key::text, flowforge._push_route(v_org, n.name)) END,
           CASE WHEN q.exchange IS NULL THEN NULL ELSE 'flowforge.' || flowforge._push_route(v_org, n.name) END,
           coalesce(q.dispatch_lease, interval '5 minutes'),
           coalesce(l.ready, 0), coalesce(l.running, 0), l.oldest_ready_at
    FROM names n
    LEFT JOIN flowforge.queue q ON q.organization_id = v_org AND q.name = n.name
    LEFT JOIN live l ON l.queue = n.name
    ORDER BY n.name;
END;
$$;
COMMENT ON FUNCTION flowforge.list_queues() IS
  'list_queues() -> setof (name, delivery, exchange, routing_key, amqp_queue, dispatch_lease, ready, running, '
  'oldest_ready_at): every queue of the caller''s organization that is configured or has ready or running tasks, by '
  'name — pull or push, where a push queue publishes, and how much is waiting and running. Viewer rights. '
  'Errors: FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.list_queues()', 'flowforge_owner', '{flowforge_app,flowforge_gateway}');
