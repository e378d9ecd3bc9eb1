DROP TABLE flowforge.task_run_event;
DROP TABLE flowforge.outbox_message;
DROP TABLE flowforge.idempotency_key;
DROP TABLE flowforge.task_run;
DROP TABLE flowforge.workflow_run;
