-- FlowForge 0019: validate 0018's foreign key in a transaction of its own, so
-- the locks 0018 took were held only for the (instant) NOT VALID add: VALIDATE
-- takes SHARE UPDATE EXCLUSIVE on idempotency_key and ROW SHARE on engine_run,
-- which lets runs start meanwhile (seed 000's migration policy). Every key
-- names a DAG run, and every DAG run has its directory row since 0015.
-- depends: 0018_idempotency_key_any_engine

ALTER TABLE flowforge.idempotency_key VALIDATE CONSTRAINT idempotency_key_run_fkey;
