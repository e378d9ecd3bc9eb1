DROP TABLE flowforge.machine_timer;
DROP TABLE flowforge.machine_event_seen;
DROP TABLE flowforge.machine_event_queue;
DROP TABLE flowforge.machine_transition;
DROP TABLE flowforge.machine_run;
ALTER TABLE flowforge.task DROP CONSTRAINT task_spec_is_object, DROP COLUMN spec;
ALTER TABLE flowforge.work_item DROP CONSTRAINT work_item_engine_kind_valid,
    ADD CONSTRAINT work_item_engine_kind_valid CHECK (engine_kind IN ('dag', 'graph'));
ALTER TABLE flowforge.engine_run DROP CONSTRAINT engine_run_kind_valid,
    ADD CONSTRAINT engine_run_kind_valid CHECK (engine_kind IN ('dag', 'graph'));
ALTER TABLE flowforge.workflow DROP CONSTRAINT workflow_kind_valid,
    ADD CONSTRAINT workflow_kind_valid CHECK (kind IN ('dag', 'graph'));
