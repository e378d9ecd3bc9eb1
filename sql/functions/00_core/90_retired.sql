-- Retired signatures: every function signature FlowForge ever shipped and
-- then replaced or removed, dropped on every migrate. CREATE OR REPLACE with
-- a new argument list adds an overload instead of replacing the old one, so
-- without this an upgraded database would keep the old function (and the
-- grant sweep would keep it owned and granted). `flowforge doctor` reports
-- any function no shipped file defines; add its DROP here.
--
-- Each line: the signature, and what replaced it.

-- _task_input(p_run_input, p_run_id, p_task_id) -> _task_input(p_run_id, p_task_id) (d96262e).
DROP FUNCTION IF EXISTS flowforge._task_input(jsonb, uuid, uuid);
-- The DAG's after-failure step, replaced by the engine hooks _on_task_failed_for_good / _on_task_requeued.
DROP FUNCTION IF EXISTS flowforge._after_task_stopped(uuid, uuid, varchar, timestamptz);
-- The run-level "run ended" event, folded into _settle_run (through _append_events).
DROP FUNCTION IF EXISTS flowforge._record_run_finished(uuid, uuid, varchar, integer, timestamptz);
