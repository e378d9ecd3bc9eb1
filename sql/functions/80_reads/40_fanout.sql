-- Reads of fan-outs: a fanning node's progress (get_run shows it per node)
-- and its children's outputs page by page (what a map output passed by
-- reference points to).
--
--   fan_out_output(run_id, node, after_index, max_items) -> (index, status, output)

CREATE OR REPLACE FUNCTION flowforge._fanout_detail(p_org uuid, p_run_id uuid, p_node text) RETURNS jsonb
LANGUAGE plpgsql STABLE
AS $$
BEGIN
    RETURN (
        SELECT jsonb_build_object(
                   'mode', c.iterator_type, 'idx', c.idx, 'total', c.total, 'succeeded', c.succeeded,
                   'failed', c.failed, 'live', c.live, 'cursor', c.cursor, 'max_concurrency', c.max_concurrency,
                   'tolerated_failures', c.tolerated_failures, 'done', c.done, 'outcome', c.outcome,
                   'generation', c.generation, 'error', c.error, 'output_by_reference', c.output_by_reference,
                   -- The elements whose last attempt failed for good (the first 100).
                   'failed_indexes', (SELECT coalesce(jsonb_agg(f.item_index ORDER BY f.item_index), '[]')
                                      FROM (SELECT DISTINCT w.item_index FROM flowforge.work_item w
                                            WHERE w.checkpoint_id = c.id AND w.checkpoint_generation = c.generation
                                              AND w.status = 'failed'
                                              AND NOT EXISTS (SELECT 1 FROM flowforge.work_item ok
                                                              WHERE ok.checkpoint_id = c.id
                                                                AND ok.checkpoint_generation = c.generation
                                                                AND ok.item_index = w.item_index
                                                                AND ok.status IN ('completed', 'pending', 'dispatched'))
                                            ORDER BY w.item_index LIMIT 100) f))
        FROM flowforge.checkpoint c
        WHERE c.organization_id = p_org AND c.run_id = p_run_id AND c.node_name = p_node);
END;
$$;
COMMENT ON FUNCTION flowforge._fanout_detail(uuid, uuid, text) IS
  'Internal: the progress of node p_node''s fan-out in run p_run_id — mode, idx/total, succeeded, failed, live, '
  'cursor, bounds, done, outcome, error and the first 100 failed element indexes; NULL when it never fanned out.';

CREATE OR REPLACE FUNCTION flowforge.fan_out_output(run_id uuid, node text, after_index bigint DEFAULT -1,
                                                    max_items integer DEFAULT 1000)
RETURNS TABLE (index bigint, status text, output jsonb)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
#variable_conflict use_column
DECLARE
    v_org constant uuid := flowforge._authorize_run_read(fan_out_output.run_id);
    v_cp record;
BEGIN
    IF fan_out_output.max_items IS NULL OR fan_out_output.max_items NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'max_items must be between 1 and 10000' USING ERRCODE = 'FF003',
            HINT = 'Read a large output page by page: after_index => the last index you read.';
    END IF;
    IF fan_out_output.after_index IS NULL OR fan_out_output.after_index < -1 THEN
        RAISE EXCEPTION 'after_index must be -1 (from the start) or an element index' USING ERRCODE = 'FF003',
            HINT = 'Start with -1, then pass the last index of the previous page.';
    END IF;
    PERFORM flowforge._run_engine(fan_out_output.run_id, v_org);  -- FF001 for an unknown or foreign run
    SELECT c.id, c.generation, c.total INTO v_cp FROM flowforge.checkpoint c
    WHERE c.organization_id = v_org AND c.run_id = fan_out_output.run_id AND c.node_name = fan_out_output.node;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'node % of run % never fanned out', quote_literal(fan_out_output.node), fan_out_output.run_id
            USING ERRCODE = 'FF001', HINT = 'get_run shows which nodes fan out (their fan_out progress).';
    END IF;
    -- In element order, through work_item_checkpoint_done_uq; an element with no success yet says what it is:
    -- its live child (at most one, work_item_checkpoint_live_uq: a resumed element's new child, whatever the
    -- clocks of the transactions that made it and its predecessor), else its latest settled one.
    RETURN QUERY
    SELECT g.i, coalesce(ok.status, last.status, 'not_started')::text, ok.output
    FROM generate_series(fan_out_output.after_index + 1,
                         least(v_cp.total - 1, fan_out_output.after_index + fan_out_output.max_items)) AS g(i)
    LEFT JOIN flowforge.work_item ok
           ON ok.checkpoint_id = v_cp.id AND ok.checkpoint_generation = v_cp.generation AND ok.item_index = g.i
          AND ok.status = 'completed'
    LEFT JOIN LATERAL (SELECT w.status FROM flowforge.work_item w
                       WHERE ok.id IS NULL AND w.checkpoint_id = v_cp.id AND w.checkpoint_generation = v_cp.generation
                         AND w.item_index = g.i
                       ORDER BY w.status IN ('pending', 'dispatched') DESC, w.created_at DESC, w.id DESC
                       LIMIT 1) last ON true
    ORDER BY g.i;
END;
$$;
COMMENT ON FUNCTION flowforge.fan_out_output(uuid, text, bigint, integer) IS
  'fan_out_output(run_id uuid, node text, after_index bigint default -1, max_items int default 1000) -> setof '
  '(index, status, output): the children of node''s fan-out in run_id, in element order from after_index + 1, at '
  'most max_items — status completed with its output, or the last child''s status (failed, cancelled, pending, '
  'dispatched) or not_started. How a map output too large to inline (passed by reference) is read. Viewer rights (the member role: '
  'the runs it created); '
  'the operator and flowforge_readonly read any organization''s run. Errors: FF001 no such run, or the node never '
  'fanned out; FF003 max_items outside 1..10000 or after_index < -1; FF007/FF008 as for every API call.';
SELECT flowforge._rights('flowforge.fan_out_output(uuid,text,bigint,integer)', 'flowforge_owner',
    '{flowforge_app,flowforge_gateway,flowforge_readonly}');
