-- What a task is given when it starts: the run's input and the output of each
-- of its dependencies. Shared by claim (pull) and dispatch (push), so both
-- deliver the same shape.
--
-- Plain SQL with every name schema-qualified and no SET clause, so the
-- planner inlines it into the calling statement.
CREATE OR REPLACE FUNCTION flowforge._task_input(p_run_input jsonb, p_run_id uuid, p_task_id uuid) RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT pg_catalog.jsonb_build_object('run', p_run_input, 'deps', coalesce(
        (SELECT pg_catalog.jsonb_object_agg(up.task_key, up.output)
         FROM flowforge.task_dependency td
         JOIN flowforge.task_run up ON up.workflow_run_id = p_run_id AND up.task_id = td.depends_on_task_id
         WHERE td.task_id = p_task_id),
        '{}'::jsonb))
$$;
COMMENT ON FUNCTION flowforge._task_input(jsonb, uuid, uuid) IS
  'Internal: {"run": <run input>, "deps": {<dependency key>: <its output>}} for one task run.';
