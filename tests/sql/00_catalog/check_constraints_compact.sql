-- 0039: a CHECK that lists allowed values is one array constant
-- (state::text = ANY ('{pending,ready,...}'::text[])), never an IN list of
-- cast constants. PostgreSQL 15 re-reads, plans and compiles a table's CHECK
-- constraints from their stored node trees on every execution of every
-- statement that writes the table (ExecRelCheck), so the hot path pays for
-- every byte of them on each claim and complete (docs/data-model.md,
-- "CHECK constraints are compact"). A migration that declares a new list
-- with IN (...) fails here: write it as the array constant.
BEGIN;
SELECT plan(4);

SELECT is((SELECT string_agg(format('%s.%s', con.conrelid::regclass, con.conname), ', ' ORDER BY 1)
           FROM pg_constraint con JOIN pg_class t ON t.oid = con.conrelid
           WHERE con.contype = 'c' AND t.relnamespace IN ('flowforge'::regnamespace, 'flowforge_history'::regnamespace)
             AND pg_get_constraintdef(con.oid) ~ 'ARRAY\['),
          NULL, 'no CHECK constraint spells a list of values as ARRAY[...] (an IN list): each is one array constant');

SELECT is((SELECT count(*)::int FROM pg_constraint con JOIN pg_class t ON t.oid = con.conrelid
           WHERE con.contype = 'c' AND t.relnamespace IN ('flowforge'::regnamespace, 'flowforge_history'::regnamespace)
             AND NOT con.convalidated),
          0, 'every CHECK constraint is validated (0039 swapped them NOT VALID, then validated them)');

SELECT is(pg_get_constraintdef((SELECT oid FROM pg_constraint
                                 WHERE conrelid = 'flowforge.task_run'::regclass AND conname = 'taskrun_state_valid')),
          'CHECK (((state)::text = ANY (''{pending,ready,running,succeeded,failed,cancelled,skipped}''::text[])))',
          'taskrun_state_valid: the same seven states, as one constant');

-- The compact form refuses what the IN list refused, under the same name and SQLSTATE.
SELECT flowforge.define_workflow('{"name": "compact_checks", "tasks": [{"key": "a"}]}');
CREATE TEMP TABLE compact_run AS SELECT flowforge.start_run('compact_checks', '{}') AS id;
SELECT throws_ok($$UPDATE flowforge.workflow_run SET state = 'paused' WHERE id = (SELECT id FROM compact_run)$$,
                 '23514', 'new row for relation "workflow_run" violates check constraint "wfrun_state_valid"',
                 'a state outside the list is refused under the constraint''s name (23514)');

SELECT * FROM finish();
ROLLBACK;
