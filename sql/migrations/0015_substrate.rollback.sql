DROP TABLE flowforge.engine;
DROP TABLE flowforge.work_item;
DROP TABLE flowforge.affinity_binding;
DROP TABLE flowforge.agent;
DROP TABLE flowforge.graph_edge;
DROP TABLE flowforge.graph_visit;
DROP TABLE flowforge.graph_step;
DROP TABLE flowforge.graph_run;
DROP TABLE flowforge.engine_run;
ALTER TABLE flowforge.setting DROP CONSTRAINT setting_duty_lease_sane, DROP CONSTRAINT setting_agent_timeout_sane,
    DROP COLUMN duty_lease, DROP COLUMN agent_timeout;
DROP INDEX flowforge.idx_event_work_item;
ALTER TABLE flowforge.task_run_event DROP COLUMN work_item_id;
ALTER TABLE flowforge.task_run DROP CONSTRAINT taskrun_worker_params_is_object, DROP CONSTRAINT taskrun_affinity_valid,
    DROP COLUMN affinity_policy, DROP COLUMN affinity_key, DROP COLUMN worker_params;
ALTER TABLE flowforge.task DROP CONSTRAINT task_worker_params_is_object, DROP CONSTRAINT task_affinity_policy_valid,
    DROP CONSTRAINT task_max_visits_positive, DROP COLUMN worker_params, DROP COLUMN affinity_policy,
    DROP COLUMN affinity, DROP COLUMN is_final, DROP COLUMN max_visits;
ALTER TABLE flowforge.workflow DROP CONSTRAINT workflow_kind_valid,
    ADD CONSTRAINT workflow_kind_valid CHECK (kind IN ('dag'));
DROP FUNCTION flowforge.uuid7();
