ALTER TABLE flowforge.setting DROP CONSTRAINT setting_max_fanout_items_sane, DROP COLUMN max_fanout_items;
ALTER TABLE flowforge.task_run DROP COLUMN fans_out;
ALTER TABLE flowforge.work_item DROP CONSTRAINT work_item_child_complete, DROP CONSTRAINT work_item_checkpoint_fkey,
    DROP COLUMN item_index, DROP COLUMN checkpoint_generation, DROP COLUMN checkpoint_id;
DROP TABLE flowforge.checkpoint_page;
DROP TABLE flowforge.checkpoint;
