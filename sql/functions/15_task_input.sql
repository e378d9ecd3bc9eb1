-- What a task is given when it starts: the run's input and the output of each
-- of its dependencies. Shared by claim (pull) and dispatch (push), so both
-- deliver the same shape.
--
-- PL/pgSQL so its two plans are cached per session, each a primary-key or
-- edge lookup. (A join against workflow_run in the caller let the planner
-- pick an organization-wide index scan under RLS.)
CREATE OR REPLACE FUNCTION flowforge._task_input(p_run_id uuid, p_task_id uuid) RETURNS jsonb
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    v_run_input jsonb;
    v_deps jsonb;
BEGIN
    SELECT r.input INTO v_run_input FROM flowforge.workflow_run r WHERE r.id = p_run_id;
    SELECT jsonb_object_agg(up.task_key, up.output) INTO v_deps
    FROM flowforge.task_dependency td
    JOIN flowforge.task_run up ON up.workflow_run_id = p_run_id AND up.task_id = td.depends_on_task_id
    WHERE td.task_id = p_task_id;
    RETURN jsonb_build_object('run', v_run_input, 'deps', coalesce(v_deps, '{}'::jsonb));
END;
$$;
COMMENT ON FUNCTION flowforge._task_input(uuid, uuid) IS
  'Internal: {"run": <run input>, "deps": {<dependency key>: <its output>}} for one task run.';
