-- Back to random (version 4) ids for new task runs and history rows.
ALTER TABLE flowforge.task_run_event ALTER COLUMN id SET DEFAULT gen_random_uuid();
ALTER TABLE flowforge.task_run ALTER COLUMN id SET DEFAULT gen_random_uuid();
