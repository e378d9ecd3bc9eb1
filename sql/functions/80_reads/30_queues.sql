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
