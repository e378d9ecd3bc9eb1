-- A graph that cycles: issue 13's review loop (draft -> review, review ->
-- draft when not approved, review -> publish, publish -> done), driven by two
-- agents through claim_work / complete_work. The draft is sent back twice,
-- then approved. The walk, the visit counts, the data merge, each item's
-- payload, the events and the directory row are checked.
BEGIN;
SELECT plan(26);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset

SELECT flowforge_test.define_review_loop() AS wf \gset
SELECT isnt(flowforge.register_agent('writer'), NULL, 'setup: agent writer registered');
SELECT isnt(flowforge.register_agent('reviewer'), NULL, 'setup: agent reviewer registered');

-- Each unit of work, as the agent saw it.
CREATE TEMP TABLE seen (n serial, agent text, node text, visit int, state jsonb, attempt int, token bigint,
                        lease_expires_at timestamptz, at timestamptz DEFAULT flowforge.now());

-- One unit of work: the agent claims one item of the names it handles (the
-- node keys are task names), records what it was given, and completes it.
CREATE FUNCTION pg_temp.work(p_agent text, p_names text[], p_output jsonb) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    v_item record;
    v_count integer := 0;
BEGIN
    PERFORM flowforge_test.advance_clock('1 second');
    FOR v_item IN SELECT * FROM flowforge.claim_work(queues => ARRAY['default'], agent => p_agent,
                                                     task_names => p_names) LOOP
        v_count := v_count + 1;
        INSERT INTO seen (agent, node, visit, state, attempt, token, lease_expires_at)
        VALUES (p_agent, v_item.payload ->> 'node', (v_item.payload ->> 'visit')::int, v_item.payload -> 'state',
                v_item.attempt, v_item.fencing_token, v_item.lease_expires_at);
        IF v_item.task_name IS DISTINCT FROM v_item.payload ->> 'node' OR v_item.engine_kind <> 'graph' THEN
            RAISE EXCEPTION 'work: task_name % / engine % for payload %', v_item.task_name, v_item.engine_kind, v_item.payload;
        END IF;
        PERFORM flowforge.complete_work(v_item.work_item_id, v_item.fencing_token, p_output);
    END LOOP;
    RETURN format('%s claimed %s', p_agent, v_count);
END;
$$;

SELECT flowforge.start_run('review_loop', '{"topic": "pg"}') AS r \gset
SELECT results_eq(
    format($$SELECT status::text, task::text, steps, state FROM flowforge.graph_run WHERE run_id = %L$$, :'r'),
    $$VALUES ('running', 'draft', 1::bigint, '{"topic": "pg"}'::jsonb)$$,
    'start_run: the run is at draft, step 1, its data the input');

SELECT is(pg_temp.work('reviewer', ARRAY['review'], '{}'), 'reviewer claimed 0', 'the reviewer handles no draft: nothing for it');
SELECT is(pg_temp.work('writer', ARRAY['draft', 'publish'], '{"text": "v1"}'), 'writer claimed 1', 'draft 1 written');
SELECT is(pg_temp.work('writer', ARRAY['draft', 'publish'], '{}'), 'writer claimed 0', 'the writer handles no review: nothing for it');
SELECT is(pg_temp.work('reviewer', ARRAY['review'], '{"approved": false, "notes": "too short"}'), 'reviewer claimed 1',
          'review 1: sent back');
-- A non-object output lands under the node's key.
SELECT is(pg_temp.work('writer', ARRAY['draft', 'publish'], '"v2"'), 'writer claimed 1', 'draft 2 written (a bare string)');
SELECT is(pg_temp.work('reviewer', ARRAY['review'], '{"approved": false}'), 'reviewer claimed 1', 'review 2: sent back again');
SELECT is(pg_temp.work('writer', ARRAY['draft', 'publish'], '{"text": "v3"}'), 'writer claimed 1', 'draft 3 written');
SELECT is(pg_temp.work('reviewer', ARRAY['review'], '{"approved": true}'), 'reviewer claimed 1', 'review 3: approved');
SELECT is(pg_temp.work('writer', ARRAY['draft', 'publish'], NULL), 'writer claimed 1', 'published (no output)');
SELECT is(pg_temp.work('writer', ARRAY['draft', 'publish'], NULL), 'writer claimed 0', 'nothing is left to claim');

-- ------------------------------------------------------------- the walk
SELECT is(flowforge_test.path_of(:'r'), 'draft -> review -> draft -> review -> draft -> review -> publish -> done',
          'path: sent back twice, then approved, published, done');
SELECT results_eq(
    format($$SELECT step, node::text, visit, work_item_id IS NOT NULL, entered_at FROM flowforge.graph_step WHERE run_id = %L ORDER BY step$$, :'r'),
    $$VALUES (1::bigint, 'draft', 1, true, '2030-01-01 00:00:00+00'::timestamptz),
             (2, 'review', 1, true, '2030-01-01 00:00:02+00'), (3, 'draft', 2, true, '2030-01-01 00:00:04+00'),
             (4, 'review', 2, true, '2030-01-01 00:00:05+00'), (5, 'draft', 3, true, '2030-01-01 00:00:06+00'),
             (6, 'review', 3, true, '2030-01-01 00:00:07+00'), (7, 'publish', 1, true, '2030-01-01 00:00:08+00'),
             (8, 'done', 1, false, '2030-01-01 00:00:09+00')$$,
    'one graph_step row per step: the node, its visit, its work item (none for the final node), when it was entered');
SELECT is((flowforge.get_run(:'r') -> 'run_counts'), '{"draft": 3, "review": 3, "publish": 1, "done": 1}'::jsonb,
          'run_counts: visits per node');
SELECT results_eq(
    format($$SELECT status::text, reason, error, task::text, steps, finished_at FROM flowforge.graph_run WHERE run_id = %L$$, :'r'),
    $$VALUES ('succeeded', 'reached final node "done"', NULL::text, 'done', 8::bigint, '2030-01-01 00:00:09+00'::timestamptz)$$,
    'the run succeeded at the final node, the reason names it, 8 steps');
SELECT is((SELECT state FROM flowforge.graph_run WHERE run_id = :'r'),
          '{"topic": "pg", "text": "v3", "approved": true, "notes": "too short", "draft": "v2"}'::jsonb,
          'the data: object outputs replaced top-level keys, the bare string sits under "draft", no output changed nothing');

-- ---------------------------------------------------- what each item carried
SELECT results_eq(
    'SELECT agent, node, visit, state, attempt, token FROM seen ORDER BY n',
    $$VALUES ('writer', 'draft', 1, '{"topic": "pg"}'::jsonb, 1, 1::bigint),
             ('reviewer', 'review', 1, '{"topic": "pg", "text": "v1"}', 1, 1),
             ('writer', 'draft', 2, '{"topic": "pg", "text": "v1", "approved": false, "notes": "too short"}', 1, 1),
             ('reviewer', 'review', 2, '{"topic": "pg", "text": "v1", "approved": false, "notes": "too short", "draft": "v2"}', 1, 1),
             ('writer', 'draft', 3, '{"topic": "pg", "text": "v1", "approved": false, "notes": "too short", "draft": "v2"}', 1, 1),
             ('reviewer', 'review', 3, '{"topic": "pg", "text": "v3", "approved": false, "notes": "too short", "draft": "v2"}', 1, 1),
             ('writer', 'publish', 1, '{"topic": "pg", "text": "v3", "approved": true, "notes": "too short", "draft": "v2"}', 1, 1)$$,
    'each item''s payload is {"state": the data when the node was entered, "node", "visit"}; attempt 1, token 1');
SELECT results_eq(
    format($$SELECT task_name::text, status::text, output, agent_id::text, affinity_key FROM flowforge.work_item
             WHERE run_id = %L ORDER BY created_at, id$$, :'r'),
    format($$VALUES ('draft', 'completed', '{"text": "v1"}'::jsonb, 'writer', NULL::text),
                    ('review', 'completed', '{"approved": false, "notes": "too short"}', 'reviewer', NULL),
                    ('draft', 'completed', '"v2"', 'writer', NULL), ('review', 'completed', '{"approved": false}', 'reviewer', NULL),
                    ('draft', 'completed', '{"text": "v3"}', 'writer', NULL), ('review', 'completed', '{"approved": true}', 'reviewer', NULL),
                    ('publish', 'completed', NULL, 'writer', 'run:%s')$$, :'r'),
    'seven work items, each completed by its agent with its output; publish carried the run''s affinity key');
SELECT results_eq(
    format($$SELECT agent_id::text, generation FROM flowforge.affinity_binding WHERE affinity_key = 'run:%s'$$, :'r'),
    $$VALUES ('writer', 1::bigint)$$, 'claiming publish pinned the run to the writer');
SELECT is((SELECT count(*)::int FROM seen WHERE lease_expires_at = at + interval '30 seconds'), 7,
          'every claim leased its item for the default 30 seconds (within draft''s 5 minute timeout)');

-- ------------------------------------------------------------- the history
SELECT is(
    (SELECT string_agg(e.kind || coalesce(' ' || e.task_key, '') || coalesce(' ' || e.from_state, '') || '->' || e.to_state,
                       ', ' ORDER BY e.created_at, e.seq)
     FROM flowforge.run_events(:'r') e),
    'run_started->running, created draft->pending, claimed draft pending->dispatched, completed draft dispatched->completed, '
    'created review->pending, claimed review pending->dispatched, completed review dispatched->completed, '
    'created draft->pending, claimed draft pending->dispatched, completed draft dispatched->completed, '
    'created review->pending, claimed review pending->dispatched, completed review dispatched->completed, '
    'created draft->pending, claimed draft pending->dispatched, completed draft dispatched->completed, '
    'created review->pending, claimed review pending->dispatched, completed review dispatched->completed, '
    'created publish->pending, claimed publish pending->dispatched, completed publish dispatched->completed, '
    'run_succeeded running->succeeded',
    'run_events: run_started, then created / claimed / completed per item, then run_succeeded — one event per transition');
SELECT is((SELECT count(*)::int FROM flowforge.run_events(:'r') e WHERE e.work_item_id IS NOT NULL), 21,
          'every item event names its work item');
SELECT is((SELECT e.detail ->> 'reason' FROM flowforge.run_events(:'r') e WHERE e.kind = 'run_succeeded'),
          'reached final node "done"', 'run_succeeded carries the reason');

-- ------------------------------------------------------------- the directory
SELECT results_eq(
    format($$SELECT engine_kind::text, definition_id, ended_at FROM flowforge.engine_run WHERE run_id = %L$$, :'r'),
    format($$VALUES ('graph', %L::uuid, '2030-01-01 00:00:09+00'::timestamptz)$$, :'wf'),
    'the directory row: a graph run of the review loop, ended when it reached done');

SELECT * FROM finish();
ROLLBACK;
