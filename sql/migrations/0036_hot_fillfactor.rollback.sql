-- Back to the default fillfactor (100) on the run tables.
ALTER TABLE flowforge.workflow_run RESET (fillfactor);
ALTER TABLE flowforge.engine_run RESET (fillfactor);
