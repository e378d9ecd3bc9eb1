-- Keys of runs that are not DAG runs cannot reference workflow_run (0015's
-- rollback drops those runs anyway).
DELETE FROM flowforge.idempotency_key k
WHERE NOT EXISTS (SELECT 1 FROM flowforge.workflow_run r WHERE r.id = k.workflow_run_id);
ALTER TABLE flowforge.idempotency_key DROP CONSTRAINT idempotency_key_run_fkey,
    ADD CONSTRAINT idempotency_key_run_fkey FOREIGN KEY (workflow_run_id)
        REFERENCES flowforge.workflow_run (id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED;
