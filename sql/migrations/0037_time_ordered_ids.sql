-- FlowForge 0037: time-ordered ids (flowforge.uuid7(), RFC 9562 version 7) for
-- new task runs and history rows (task_run, task_run_event).
-- Seed 000 deferred UUIDv7 "until TaskRun insert throughput becomes the
-- measured bottleneck": with 1M finished task runs and their 3.2M events,
-- random version-4 keys put every new entry of task_run_event's primary key and
-- of idx_event_taskrun_created (led by the task run's id) on a random leaf page
-- of an index larger than shared_buffers; time-ordered keys land at the right
-- edge whatever the history holds (figures in docs/execution-model.md).
-- The ids now reveal their creation time to the millisecond — which the same
-- rows show in created_at to everyone who can read them; an id is never an
-- authorization (every function resolves the caller's organization and answers
-- FF001 for another's id).
-- Not run ids (workflow_run, made by start_run): people address runs by a short
-- prefix (resolve_run_id, the CLI), and a time-ordered id's first 8 hex digits
-- are the same for every run started within about a minute. Not audit_log:
-- inserted on behalf of roles that need not execute flowforge.uuid7().
-- Existing ids are unchanged.
-- depends: 0036_hot_fillfactor
ALTER TABLE flowforge.task_run ALTER COLUMN id SET DEFAULT flowforge.uuid7();
ALTER TABLE flowforge.task_run_event ALTER COLUMN id SET DEFAULT flowforge.uuid7();
