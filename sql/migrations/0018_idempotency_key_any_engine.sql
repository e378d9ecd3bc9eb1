-- FlowForge 0018: an idempotency key names a run of any engine.
-- 0003 tied idempotency_key.workflow_run_id to workflow_run (deferred: start_run
-- claims the key before it writes the run). A graph run has no workflow_run
-- row, so every start_run of a graph with an idempotency key failed at COMMIT
-- (23503 idempotency_key_run_fkey). The key now references the run directory
-- — engine_run, one row per run of any engine, written in start_run's
-- transaction — within the organization, still deferred, still going with
-- the run's row. Added NOT VALID (an instant, brief lock); 0019 validates it
-- in a transaction of its own, as 0013/0014 do.
-- depends: 0017_machines

ALTER TABLE flowforge.idempotency_key DROP CONSTRAINT idempotency_key_run_fkey,
    ADD CONSTRAINT idempotency_key_run_fkey FOREIGN KEY (organization_id, workflow_run_id)
        REFERENCES flowforge.engine_run (organization_id, run_id) ON DELETE CASCADE
        DEFERRABLE INITIALLY DEFERRED NOT VALID;
