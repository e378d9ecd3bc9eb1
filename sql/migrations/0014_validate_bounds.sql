-- FlowForge 0014: validate 0013's constraints in a transaction of their own,
-- so the table locks 0013 took were held only for the (instant) NOT VALID
-- add: VALIDATE takes a SHARE UPDATE EXCLUSIVE lock, which lets claims and
-- completions go on while it scans (seed 000's migration policy).
-- depends: 0013_payload_bounds

ALTER TABLE flowforge.task VALIDATE CONSTRAINT task_durations_bounded;
ALTER TABLE flowforge.task_run VALIDATE CONSTRAINT taskrun_timeout_bounded;
