-- 0039: a CHECK that lists allowed values is one array constant
-- (state::text = ANY ('{pending,ready,...}'::text[])), never an IN list of
-- cast constants. PostgreSQL 15 re-reads, plans and compiles a table's CHECK
-- constraints from their stored node trees on every execution of every
-- statement that writes the table (ExecRelCheck), so the hot path pays for
-- every byte of them on each claim and complete (docs/data-model.md,
-- "CHECK constraints are compact"). A migration that declares a new list
-- with IN (...) fails here: write it as the array constant.
BEGIN;
SELECT plan(6);

SELECT is((SELECT string_agg(format('%s.%s', coalesce(con.conrelid::regclass::text, con.contypid::regtype::text),
                                     con.conname), ', ' ORDER BY 1)
           FROM pg_constraint con
           WHERE con.contype = 'c' AND con.connamespace IN ('flowforge'::regnamespace, 'flowforge_history'::regnamespace)
             AND pg_get_constraintdef(con.oid) ~ 'ARRAY\['),
          NULL, 'no CHECK constraint, of a table or of a domain (0040), spells a list of values as ARRAY[...] (an IN list): each is one array constant');

SELECT is((SELECT count(*)::int FROM pg_constraint con
           WHERE con.contype = 'c' AND con.connamespace IN ('flowforge'::regnamespace, 'flowforge_history'::regnamespace)
             AND NOT con.convalidated),
          0, 'every CHECK constraint, of a table or a domain, is validated (0039 swapped them NOT VALID, then validated them)');

SELECT is(pg_get_constraintdef((SELECT oid FROM pg_constraint
                                 WHERE contypid = 'flowforge.task_run_state'::regtype AND conname = 'taskrun_state_valid')),
          'CHECK (((VALUE)::text = ANY (''{pending,ready,running,succeeded,failed,cancelled,skipped}''::text[])))',
          'taskrun_state_valid: the same seven states, as one constant (on the domain task_run_state since 0040)');

-- 0040: the three tables every DAG task updates carry no CHECK that reads one column alone
-- (each such check is on the column's domain, compiled once, run only when the column is
-- written), and the flow-control release triggers' WHEN is the one short test.
SELECT is((SELECT string_agg(format('%s.%s', con.conrelid::regclass, con.conname), ', ' ORDER BY 1)
           FROM pg_constraint con
           WHERE con.contype = 'c' AND cardinality(con.conkey) = 1
             AND con.conrelid IN ('flowforge.task_run'::regclass, 'flowforge.workflow_run'::regclass,
                                  'flowforge.engine_run'::regclass)),
          NULL, 'task_run, workflow_run and engine_run have no one-column CHECK: those live on the columns'' domains (0040)');
SELECT is((SELECT string_agg(DISTINCT substring(pg_get_triggerdef(t.oid) FROM 'WHEN \((.*)\) EXECUTE'), ' | ')
           FROM pg_trigger t
           WHERE t.tgname IN ('task_run_flow_release', 'task_run_flow_release_deleted', 'work_item_flow_release',
                              'work_item_flow_release_deleted')),
          '(old.flow_token IS NOT NULL)',
          'the four flow-control release triggers test only that the unit ever held slots (_flow_release decides the rest)');

-- The compact form refuses what the IN list refused, under the same name and SQLSTATE.
SELECT flowforge.define_workflow('{"name": "compact_checks", "tasks": [{"key": "a"}]}');
CREATE TEMP TABLE compact_run AS SELECT flowforge.start_run('compact_checks', '{}') AS id;
SELECT throws_ok($$UPDATE flowforge.workflow_run SET state = 'paused' WHERE id = (SELECT id FROM compact_run)$$,
                 '23514', 'value for domain flowforge.workflow_run_state violates check constraint "wfrun_state_valid"',
                 'a state outside the list is refused under the constraint''s name (23514), by the column''s domain (0040)');

SELECT * FROM finish();
ROLLBACK;
