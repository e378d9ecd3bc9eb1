-- Keyset pagination (issue 19): every listing is newest first (created_at
-- desc, id desc; seed 002's exceptions: agents by name, firings by fired_on
-- desc) and resumes after the cursor of the last row read. Paging while rows
-- are inserted neither repeats nor skips a row, and keeps the order; a bad
-- cursor is FF003. list_runs' filters (of_kind, creator, trigger_name,
-- workflow, with_state) combine with the cursor.
BEGIN;
SELECT plan(38);
SELECT flowforge_test.freeze_clock('2030-05-01 00:00:00+00');

SELECT isnt(flowforge_test.define_single('ks_dag'), NULL, 'fixture: ks_dag');
SELECT flowforge_test.advance_clock('1 second');
SELECT isnt(flowforge_test.define_graph_single('ks_graph'), NULL, 'fixture: ks_graph');
-- 24 runs at 8 instants, three per instant (ties broken by id), every third a graph.
DO $$
BEGIN
    FOR i IN 1..24 LOOP
        PERFORM flowforge.start_run(CASE WHEN i % 3 = 0 THEN 'ks_graph' ELSE 'ks_dag' END, jsonb_build_object('i', i));
        IF i % 3 = 0 THEN
            PERFORM flowforge_test.advance_clock('1 second');
        END IF;
    END LOOP;
END;
$$;
CREATE TEMP TABLE before AS SELECT e.run_id FROM flowforge.engine_run e;
SELECT is((SELECT count(*)::int FROM before), 24, 'fixture: 24 runs');

-- ------------------------------------------------------------------ paging while runs arrive
CREATE TEMP TABLE pages (page integer, pos integer, run_id uuid, cursor text);
CREATE TEMP TABLE arrived (run_id uuid, kind text);
DO $$
DECLARE
    v_after text;
    v_page integer := 0;
    v_n integer;
    v_row record;
BEGIN
    LOOP
        v_page := v_page + 1;
        v_n := 0;
        FOR v_row IN SELECT l.id, l.cursor FROM flowforge.list_runs(max_rows => 5, after => v_after) l LOOP
            v_n := v_n + 1;
            INSERT INTO pages VALUES (v_page, v_n, v_row.id, v_row.cursor);
            v_after := v_row.cursor;
        END LOOP;
        EXIT WHEN v_n < 5 OR v_page > 20;
        -- Between two pages: a new run (newer than anything read), and one back-dated behind everything (not read yet).
        PERFORM flowforge_test.set_clock('2030-05-01 01:00:00+00'::timestamptz + v_page * interval '1 second');
        INSERT INTO arrived VALUES (flowforge.start_run('ks_dag', '{"new": true}'), 'newer');
        PERFORM flowforge_test.set_clock('2030-04-30 00:00:00+00'::timestamptz - v_page * interval '1 second');
        INSERT INTO arrived VALUES (flowforge.start_run('ks_dag', '{"old": true}'), 'back-dated');
    END LOOP;
END;
$$;
SELECT ok((SELECT max(page) FROM pages) >= 6, 'fixture: six pages or more read, runs arriving between them');
SELECT is((SELECT count(*) - count(DISTINCT run_id) FROM pages)::int, 0, 'no run appears twice across the pages');
SELECT is_empty($$SELECT run_id FROM before EXCEPT SELECT run_id FROM pages$$,
                'every run that existed before paging began was read exactly once (none skipped)');
SELECT is_empty($$SELECT p.run_id FROM pages p JOIN arrived a ON a.run_id = p.run_id WHERE a.kind = 'newer'$$,
                'runs newer than the first page never appear on a later page (no shift)');
SELECT set_eq($$SELECT run_id FROM arrived WHERE kind = 'back-dated'$$,
              $$SELECT p.run_id FROM pages p JOIN arrived a ON a.run_id = p.run_id$$,
              'runs inserted behind the cursor are read once, where they belong');
SELECT is_empty(
    $$SELECT p.page, p.pos FROM (
          SELECT p.page, p.pos, e.created_at, e.id,
                 lag(e.created_at) OVER w AS prev_at, lag(e.id) OVER w AS prev_id
          FROM pages p JOIN flowforge.engine_run e ON e.run_id = p.run_id
          WINDOW w AS (ORDER BY p.page, p.pos)) p
      WHERE p.prev_at IS NOT NULL AND (p.created_at, p.id) >= (p.prev_at, p.prev_id)$$,
    'the pages together are strictly newest first by (created_at, id): ties at one instant broken by id');
SELECT is((SELECT count(*)::int FROM pages WHERE page = 1), 5, 'a page holds max_rows rows');
SELECT is((SELECT array_agg(run_id ORDER BY page, pos) FROM pages),
          (SELECT array_agg(l.id) FROM flowforge.list_runs(max_rows => 10000) l
           WHERE l.id NOT IN (SELECT run_id FROM arrived WHERE kind = 'newer')),
          'read after the fact, one page of everything is the same sequence');

-- ------------------------------------------------------------------ filters with the cursor
SELECT is((SELECT count(*)::int FROM flowforge.list_runs(of_kind => 'graph', max_rows => 10000)), 8, 'of_kind => graph: the 8 graph runs');
SELECT is((SELECT count(*)::int FROM flowforge.list_runs(of_kind => 'dag', workflow => 'ks_dag', max_rows => 10000)),
          16 + (SELECT count(*)::int FROM arrived), 'of_kind and workflow combined');
SELECT (SELECT cursor FROM flowforge.list_runs(of_kind => 'graph', max_rows => 3) OFFSET 2 LIMIT 1) AS gcur \gset
SELECT is((SELECT count(*)::int FROM flowforge.list_runs(of_kind => 'graph', after => :'gcur')), 5,
          'the cursor of the third graph run: five graph runs follow it');
SELECT is((SELECT count(*)::int FROM flowforge.list_runs(with_state => 'running', of_kind => 'graph', after => :'gcur')), 5,
          'with_state filters the same range (they are all running)');
SELECT is((SELECT count(*)::int FROM flowforge.list_runs(creator => 'postgres', max_rows => 10000)),
          (SELECT count(*)::int FROM flowforge.engine_run), 'creator => postgres: every run here is the superuser''s');
SELECT is((SELECT count(*)::int FROM flowforge.list_runs(creator => 'nobody')), 0, 'creator => someone else: none');
SELECT isnt(flowforge.create_trigger('ks-hook', 'webhook', 'start', 'ks_dag', '{"secret": "0123456789abcdef"}'), NULL, 'fixture: ks-hook');
DO $$ BEGIN FOR i IN 1..4 LOOP PERFORM flowforge.fire_trigger('ks-hook', jsonb_build_object('i', i)); END LOOP; END; $$;
SELECT is((SELECT count(*)::int FROM flowforge.list_runs(trigger_name => 'ks-hook')), 4, 'trigger_name => the runs the trigger started');
SELECT is((SELECT count(*)::int FROM flowforge.list_runs(trigger_name => 'ks-hook', after =>
              (SELECT cursor FROM flowforge.list_runs(trigger_name => 'ks-hook', max_rows => 1)))), 3, 'and pages');
SELECT throws_ok($$SELECT * FROM flowforge.list_runs(of_kind => 'datapipe')$$, 'FF003',
                 'of_kind must be dag, graph or statemachine, got ''datapipe''', 'an unknown of_kind: FF003');

-- ------------------------------------------------------------------ bad cursors
SELECT (SELECT cursor FROM flowforge.list_runs(max_rows => 1)) AS rcur \gset
SELECT (SELECT cursor FROM flowforge.list_workflows(max_rows => 1)) AS wcur \gset
SELECT throws_ok($$SELECT * FROM flowforge.list_runs(after => 'not a cursor!')$$, 'FF003',
                 'invalid cursor for runs: pass the cursor of a row the same listing returned', 'garbage: FF003');
SELECT throws_ok($$SELECT * FROM flowforge.list_runs(after => 'Zm9v')$$, 'FF003', NULL, 'base64 of something else: FF003');
SELECT throws_ok(format('SELECT * FROM flowforge.list_runs(after => %L)', left(:'rcur', length(:'rcur') - 9)), 'FF003', NULL,
                 'a truncated cursor: FF003');
SELECT throws_ok(format('SELECT * FROM flowforge.list_runs(after => %L)', :'wcur'), 'FF003', NULL,
                 'another listing''s cursor (list_workflows'') given to list_runs: FF003');
SELECT throws_ok(format('SELECT * FROM flowforge.list_agents(after => %L)', :'rcur'), 'FF003', NULL,
                 'a run cursor given to list_agents: FF003');
SELECT throws_ok(format('SELECT * FROM flowforge.list_runs(after => %L)', repeat('A', 3000)), 'FF003', NULL, 'an oversized cursor: FF003');

-- ------------------------------------------------------------------ the other listings page the same way
SELECT flowforge_test.set_clock('2030-06-01 00:00:00+00');
DO $$ BEGIN FOR i IN 1..7 LOOP
    PERFORM flowforge_test.define_single('ks_w' || i);
    PERFORM flowforge.create_trigger('ks-t' || i, 'webhook', 'start', 'ks_dag', '{"secret": "0123456789abcdef"}');
    PERFORM flowforge.register_agent('ks-agent-' || (8 - i));
    PERFORM flowforge_test.advance_clock('1 second');
    PERFORM flowforge.fire_trigger('ks-t' || i);
END LOOP; END; $$;
SELECT is((SELECT array_agg(name ORDER BY ord) FROM (SELECT name, row_number() OVER () AS ord FROM flowforge.list_workflows()) x),
          ARRAY['ks_w7', 'ks_w6', 'ks_w5', 'ks_w4', 'ks_w3', 'ks_w2', 'ks_w1', 'ks_graph', 'ks_dag'],
          'list_workflows: newest first');
SELECT is((SELECT array_agg(l.name) FROM flowforge.list_workflows(max_rows => 3, after =>
              (SELECT cursor FROM flowforge.list_workflows(max_rows => 3) OFFSET 2 LIMIT 1)) l),
          ARRAY['ks_w4', 'ks_w3', 'ks_w2'], 'list_workflows: the page after the third');
SELECT is((SELECT array_agg(l.name) FROM flowforge.list_triggers(max_rows => 3) l), ARRAY['ks-t7', 'ks-t6', 'ks-t5'],
          'list_triggers: newest first');
SELECT is((SELECT array_agg(l.name) FROM flowforge.list_triggers(max_rows => 3, after =>
              (SELECT cursor FROM flowforge.list_triggers(max_rows => 3) OFFSET 2 LIMIT 1)) l),
          ARRAY['ks-t4', 'ks-t3', 'ks-t2'], 'list_triggers: the page after the third');
SELECT is((SELECT array_agg(l.name) FROM flowforge.list_firings(max_rows => 3) l), ARRAY['ks-t7', 'ks-t6', 'ks-t5'],
          'list_firings: newest first by fired_on');
SELECT is((SELECT array_agg(l.name) FROM flowforge.list_firings(max_rows => 3, after =>
              (SELECT cursor FROM flowforge.list_firings(max_rows => 3) OFFSET 2 LIMIT 1)) l),
          ARRAY['ks-t4', 'ks-t3', 'ks-t2'], 'list_firings: the page after the third');
SELECT is((SELECT array_agg(l.name) FROM flowforge.list_agents(max_rows => 3) l), ARRAY['ks-agent-1', 'ks-agent-2', 'ks-agent-3'],
          'list_agents: by name (seed 002''s exception)');
SELECT is((SELECT array_agg(l.name) FROM flowforge.list_agents(max_rows => 3, after =>
              (SELECT cursor FROM flowforge.list_agents(max_rows => 3) OFFSET 2 LIMIT 1)) l),
          ARRAY['ks-agent-4', 'ks-agent-5', 'ks-agent-6'], 'list_agents: the page after the third name');
SELECT lives_ok($$SELECT flowforge.drop_trigger('ks-t7')$$, 'fixture: ks-t7 dropped');
SELECT is((SELECT array_agg(l.name) FROM flowforge.list_triggers(max_rows => 2) l), ARRAY['ks-t6', 'ks-t5'],
          'list_triggers hides a dropped trigger');
SELECT is((SELECT array_agg(l.name || ':' || (l.deleted_at IS NOT NULL)) FROM flowforge.list_triggers(max_rows => 2, include_deleted => true) l),
          ARRAY['ks-t7:true', 'ks-t6:false'], 'and shows it with include_deleted => true');

SELECT * FROM finish();
ROLLBACK;
