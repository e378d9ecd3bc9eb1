-- Dropping a partitioned index drops its partitions' indexes with it.
DROP INDEX IF EXISTS flowforge.trigger_firing_recorded;
DROP INDEX IF EXISTS flowforge.idx_event_retries;
