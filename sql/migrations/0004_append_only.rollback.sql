DROP TRIGGER task_run_event_no_truncate ON flowforge.task_run_event;
DROP TRIGGER task_run_event_append_only ON flowforge.task_run_event;
DROP TRIGGER audit_log_no_truncate ON flowforge.audit_log;
DROP TRIGGER audit_log_append_only ON flowforge.audit_log;
DROP FUNCTION flowforge.refuse_history_change();
