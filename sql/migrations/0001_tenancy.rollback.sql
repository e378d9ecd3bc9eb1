-- Undo 0001: nothing of FlowForge survives a full rollback.
DROP SCHEMA flowforge CASCADE;
