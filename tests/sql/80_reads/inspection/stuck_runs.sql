-- stuck_runs (0026): the seed's stuck-run sweep for every engine — a DAG or
-- graph run running longer than the threshold (1 hour, or the session's
-- flowforge.stuck_after), a machine that has not moved for that long (resting,
-- or suspended on its action) — with what each waits on.
BEGIN;
SELECT plan(14);
SELECT flowforge_test.freeze_clock('2030-01-01 00:00:00+00') \gset

SELECT columns_are('flowforge', 'stuck_runs', ARRAY[
    'organization_id', 'organization', 'run_id', 'engine_kind', 'workflow', 'version', 'status', 'since', 'stuck_for',
    'threshold', 'waiting_on', 'detail'], 'stuck_runs has its columns');

-- At 00:00: a diamond whose a is claimed (30-second lease, never reaped here), a graph run whose item
-- nobody claims, a machine resting (its 2-day timer), a machine suspended on its action with an event
-- queued, a machine that will move at 00:50, and a run that finishes.
SELECT flowforge_test.define_diamond('sr_diamond', '{"queue": "sr"}') \gset
SELECT flowforge.start_run('sr_diamond') AS r_dag \gset
SELECT count(*) FROM flowforge.claim(ARRAY['sr'], 'sr-worker', '30 seconds', 1) \gset
SELECT flowforge_test.define_graph_single('sr_graph', '{"queue": "sr-graph"}') \gset
SELECT flowforge.start_run('sr_graph') AS r_graph \gset
SELECT flowforge_test.define_order('sr_order', '{"queue": "sr-order"}') \gset
SELECT flowforge.start_run('sr_order') AS r_rest \gset
SELECT flowforge.start_run('sr_order') AS r_susp \gset
SELECT flowforge.send_event(:'r_susp', 'paid', '{"amount": 100}') \gset
SELECT flowforge.send_event(:'r_susp', 'give_up') \gset
SELECT flowforge.start_run('sr_order') AS r_moved \gset
SELECT flowforge_test.define_single('sr_done', '{"queue": "sr-done"}') \gset
SELECT flowforge.start_run('sr_done') AS r_done \gset
SELECT task_run_id AS done_tr, fencing_token AS done_tok FROM flowforge.claim(ARRAY['sr-done'], 'sr-worker') \gset
SELECT flowforge.complete(:'done_tr', :'done_tok') \gset

SELECT flowforge_test.set_clock('2030-01-01 00:50:00+00') \gset
SELECT flowforge.send_event(:'r_moved', 'paid', '{"amount": 100}') \gset

SELECT flowforge_test.set_clock('2030-01-01 00:59:59+00') \gset
SELECT is((SELECT count(*)::int FROM flowforge.stuck_runs), 0, 'at 00:59:59 nothing has run for an hour');

SELECT flowforge_test.set_clock('2030-01-01 01:00:01+00') \gset
SELECT results_eq(
    $$SELECT organization, engine_kind, workflow, version, status, since, stuck_for, threshold FROM flowforge.stuck_runs
      ORDER BY engine_kind, workflow, since$$,
    $$VALUES ('default'::text, 'dag'::text, 'sr_diamond'::text, 1, 'running'::text, '2030-01-01 00:00:00+00'::timestamptz,
              '01:00:01'::interval, '01:00:00'::interval),
             ('default', 'graph', 'sr_graph', 1, 'running', '2030-01-01 00:00:00+00', '01:00:01', '01:00:00'),
             ('default', 'statemachine', 'sr_order', 1, 'running', '2030-01-01 00:00:00+00', '01:00:01', '01:00:00'),
             ('default', 'statemachine', 'sr_order', 1, 'running', '2030-01-01 00:00:00+00', '01:00:01', '01:00:00')$$,
    'at 01:00:01, past the 1-hour default: the DAG run, the graph run and the two machines that have not moved; not the '
    'machine that moved at 00:50, not the finished run');
SELECT is((SELECT waiting_on FROM flowforge.stuck_runs WHERE run_id = :'r_dag'),
          '1 running (held by sr-worker; the oldest since 2030-01-01 00:00:00+00, the nearest lease until '
          '2030-01-01 00:00:30+00), 3 pending on their upstream tasks',
          'a DAG run: what runs (held by whom, since and until when) and what waits');
SELECT is((SELECT detail - 'tasks_total' - 'tasks_remaining' - 'tasks_failed' FROM flowforge.stuck_runs WHERE run_id = :'r_dag'),
          '{"ready": 0, "running": 1, "pending": 3, "ready_tasks": null, "running_tasks": ["a"],
            "pending_tasks": ["b", "c", "d"], "fan_out_children_live": 0}'::jsonb,
          'a DAG run: the counts and the keys in detail');
SELECT is((SELECT waiting_on FROM flowforge.stuck_runs WHERE run_id = :'r_graph'),
          'node work (step 1, entered 2030-01-01 00:00:00+00): its item is pending since 2030-01-01 00:00:00+00, not claimed',
          'a graph run: its node, since when, its item''s state');
SELECT is((SELECT waiting_on FROM flowforge.stuck_runs WHERE run_id = :'r_rest'),
          'resting in state awaiting_payment, waiting for an event (cancel, paid) or its timer to expired at 2030-01-03 00:00:00+00',
          'a resting machine: its state, the events it accepts, its next timer');
SELECT is((SELECT waiting_on FROM flowforge.stuck_runs WHERE run_id = :'r_susp'),
          'suspended on action ship in state shipping: its item is pending; 1 event queued',
          'a suspended machine: its action, its item''s state, what is queued behind it');
SELECT is((SELECT detail ->> 'action' FROM flowforge.stuck_runs WHERE run_id = :'r_susp'), 'ship', 'the action in detail');

SELECT item_of AS graph_item FROM flowforge_test.item_of(:'r_graph') \gset
SELECT count(*) FROM flowforge_test.claim_item(:'graph_item', 'sr-agent', '10 minutes') \gset
SELECT is((SELECT waiting_on FROM flowforge.stuck_runs WHERE run_id = :'r_graph'),
          'node work (step 1, entered 2030-01-01 00:00:00+00): its item is dispatched to sr-agent, lease until 2030-01-01 01:10:01+00',
          'a graph run whose item is dispatched: to whom, until when');

SET LOCAL flowforge.stuck_after = '2 hours';
SELECT is((SELECT count(*)::int FROM flowforge.stuck_runs), 0, 'the session''s flowforge.stuck_after = 2 hours: none yet');
SET LOCAL flowforge.stuck_after = '5 minutes';
SELECT results_eq($$SELECT DISTINCT threshold FROM flowforge.stuck_runs$$, $$VALUES ('00:05:00'::interval)$$,
                  'flowforge.stuck_after = 5 minutes: the threshold shown is the session''s');
SELECT is((SELECT count(*)::int FROM flowforge.stuck_runs), 5, '5 minutes: the machine that moved at 00:50 too');
RESET flowforge.stuck_after;

SET LOCAL ROLE flowforge_readonly;
SELECT is((SELECT count(*)::int FROM flowforge.stuck_runs), 4, 'flowforge_readonly reads stuck_runs');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
