ALTER TABLE flowforge.task_run DROP CONSTRAINT taskrun_timeout_bounded;
ALTER TABLE flowforge.task DROP CONSTRAINT task_durations_bounded;
ALTER TABLE flowforge.setting DROP CONSTRAINT setting_max_json_depth_sane, DROP COLUMN max_json_depth;
