DROP TABLE flowforge.scheduled_trigger;
DROP TABLE flowforge.task_dependency;
DROP TABLE flowforge.task;
DROP TABLE flowforge.workflow;
