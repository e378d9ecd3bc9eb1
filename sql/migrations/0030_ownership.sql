-- FlowForge 0030: ownership and soft delete (issue 19, seed 002's kisai.common
-- columns where they were missing, and what delete_workflow / delete_run need).
--
--   workflow      created_by (who defined the version: from the audit log's
--                 'define' row, 'migration 0030' when there is none),
--                 updated_* / deleted_* (delete_workflow is a soft delete of
--                 every version of a name), superseded_at (when a newer version
--                 of the name was defined; NULL on each name's latest version:
--                 what list_workflows lists, newest first — 0031's index)
--                 and workflow_latest_uq, one latest version per name
--   workflow_run  created_by, updated_* and deleted_* (the DAG engine's run row,
--                 like graph_run and machine_run). Nullable: a NOT NULL would
--                 scan the table under an exclusive lock; the directory's
--                 created_by (NOT NULL) is what reads are scoped by. 0031 fills
--                 it for older runs and validates the deleted pair
--   engine_run    definition_name: the definition's name, so list_runs(workflow
--                 => ...) is one ordered index range (0031) however many
--                 versions the workflow has; kept by a trigger (set on insert
--                 and when definition_id changes), so no writer can get it
--                 wrong and rows written while migrate runs get it too
--   queue         created_by / updated_by (configure_queue)
-- Gateway callers were recorded as '<login> via key ffk_<prefix>'; the caller
-- a row belongs to is now the key itself ('ffk_<prefix>', whatever gateway
-- login carried it): scheduled_trigger rows are rewritten here (a trigger's
-- creator owns the runs it starts), the directory in batches by 0031.
-- depends: 0029_flow_control_indexes

ALTER TABLE flowforge.workflow
    ADD COLUMN created_by     text,
    ADD COLUMN updated_at     timestamptz,
    ADD COLUMN updated_by     text,
    ADD COLUMN deleted_at     timestamptz,
    ADD COLUMN deleted_by     text,
    ADD COLUMN superseded_at  timestamptz,
    ADD CONSTRAINT workflow_deleted_pair CHECK ((deleted_at IS NULL) = (deleted_by IS NULL));

UPDATE flowforge.workflow w
SET created_by = coalesce(
        (SELECT CASE WHEN a.actor ~ ' via key ffk_[0-9a-f]{12}$' THEN substring(a.actor FROM '(ffk_[0-9a-f]{12})$')
                     ELSE a.actor END
         FROM flowforge.audit_log a
         WHERE a.organization_id = w.organization_id AND a.entity = 'workflow' AND a.entity_id = w.id::text
           AND a.action = 'define'
         ORDER BY a.created_at
         LIMIT 1),
        'migration 0030'),
    -- A version is superseded when the next one was defined (never before it was itself).
    superseded_at = (SELECT greatest(min(n.created_at), w.created_at) FROM flowforge.workflow n
                     WHERE n.organization_id = w.organization_id AND n.name = w.name AND n.version > w.version);
ALTER TABLE flowforge.workflow ALTER COLUMN created_by SET NOT NULL;
CREATE UNIQUE INDEX workflow_latest_uq ON flowforge.workflow (organization_id, name) WHERE superseded_at IS NULL;
COMMENT ON INDEX flowforge.workflow_latest_uq IS
  'one latest version per name (superseded_at IS NULL): the version start_run, create_trigger and get_workflow(name) '
  'read by name';

ALTER TABLE flowforge.workflow_run
    ADD COLUMN created_by  text,
    ADD COLUMN updated_at  timestamptz,
    ADD COLUMN updated_by  text,
    ADD COLUMN deleted_at  timestamptz,
    ADD COLUMN deleted_by  text,
    ADD CONSTRAINT wfrun_deleted_pair CHECK ((deleted_at IS NULL) = (deleted_by IS NULL)) NOT VALID;

ALTER TABLE flowforge.engine_run ADD COLUMN definition_name varchar(63);

CREATE FUNCTION flowforge.engine_run_definition_name() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NEW.definition_id IS NULL THEN
        NEW.definition_name := NULL;
    ELSIF TG_OP = 'INSERT' OR NEW.definition_id IS DISTINCT FROM OLD.definition_id
          OR NEW.definition_name IS DISTINCT FROM OLD.definition_name OR NEW.definition_name IS NULL THEN
        NEW.definition_name := (SELECT w.name FROM flowforge.workflow w
                                WHERE w.organization_id = NEW.organization_id AND w.id = NEW.definition_id);
    END IF;
    RETURN NEW;
END;
$$;
COMMENT ON FUNCTION flowforge.engine_run_definition_name() IS
  'Trigger (engine_run, BEFORE INSERT OR UPDATE OF definition_id, definition_name): definition_name is the name of '
  'the row''s definition, whatever the writer said. Errors: none of its own.';
CREATE TRIGGER engine_run_definition_name
    BEFORE INSERT OR UPDATE OF definition_id, definition_name ON flowforge.engine_run
    FOR EACH ROW EXECUTE FUNCTION flowforge.engine_run_definition_name();

ALTER TABLE flowforge.queue
    ADD COLUMN created_by  text,
    ADD COLUMN updated_by  text;
UPDATE flowforge.queue SET created_by = 'migration 0030';
ALTER TABLE flowforge.queue ALTER COLUMN created_by SET NOT NULL;

UPDATE flowforge.scheduled_trigger t
SET created_by = substring(t.created_by FROM '(ffk_[0-9a-f]{12})$')
WHERE t.created_by ~ ' via key ffk_[0-9a-f]{12}$';
UPDATE flowforge.scheduled_trigger t
SET updated_by = substring(t.updated_by FROM '(ffk_[0-9a-f]{12})$')
WHERE t.updated_by ~ ' via key ffk_[0-9a-f]{12}$';
UPDATE flowforge.scheduled_trigger t
SET deleted_by = substring(t.deleted_by FROM '(ffk_[0-9a-f]{12})$')
WHERE t.deleted_by ~ ' via key ffk_[0-9a-f]{12}$';
