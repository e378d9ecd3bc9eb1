-- FlowForge 0020: fan-out — map and foreach nodes of DAGs and graphs (seed 002's checkpoint).
-- "Iterator progress for a node that fans out, so a resumed run does not repeat work."
--
--   checkpoint       one row per (run, fanning node): the cursor, the counts, the bound;
--                    the whole record of where a fan-out stands
--   checkpoint_page  the elements being iterated, evaluated once when the node fans out,
--                    in pages of 100, so a child reads one small page, never the whole array
--   work_item        a fan-out child names its checkpoint, the checkpoint's generation and
--                    its element's index
--   task_run         fans_out: a DAG task whose readiness means "fan out", never "claim me"
--   setting          max_fanout_items: the most elements one node may fan out over
-- Indexes follow in 0021, built CONCURRENTLY.
-- depends: 0019_validate_idempotency_key

CREATE TABLE flowforge.checkpoint (
    id                   uuid         NOT NULL DEFAULT flowforge.uuid7(),
    organization_id      uuid         NOT NULL,
    run_id               uuid         NOT NULL,
    node_name            varchar(63)  NOT NULL,
    definition_id        uuid         NOT NULL,
    task_id              uuid         NOT NULL,
    engine_kind          varchar(20)  NOT NULL,
    parent_task_run_id   uuid,
    parent_work_item_id  uuid,
    iterator_type        varchar(10)  NOT NULL,
    generation           integer      NOT NULL DEFAULT 1,
    cursor               bigint       NOT NULL DEFAULT 0,
    idx                  bigint       NOT NULL DEFAULT 0,
    total                bigint       NOT NULL,
    succeeded            bigint       NOT NULL DEFAULT 0,
    failed               bigint       NOT NULL DEFAULT 0,
    live                 integer      NOT NULL DEFAULT 0,
    max_concurrency      integer      NOT NULL,
    tolerated_failures   bigint,
    done                 boolean      NOT NULL DEFAULT false,
    outcome              varchar(20),
    child_input          jsonb,
    output_by_reference  boolean      NOT NULL DEFAULT false,
    error                text,
    created_at           timestamptz  NOT NULL DEFAULT now(),
    created_by           text         NOT NULL,
    updated_at           timestamptz,
    updated_by           text,
    deleted_at           timestamptz,
    deleted_by           text,
    CONSTRAINT checkpoint_pkey PRIMARY KEY (id),
    CONSTRAINT checkpoint_organization_fkey FOREIGN KEY (organization_id)
        REFERENCES flowforge.organization (id) ON DELETE RESTRICT,
    CONSTRAINT checkpoint_definition_fkey FOREIGN KEY (definition_id)
        REFERENCES flowforge.workflow (id) ON DELETE RESTRICT,
    CONSTRAINT checkpoint_task_fkey FOREIGN KEY (task_id) REFERENCES flowforge.task (id) ON DELETE RESTRICT,
    CONSTRAINT checkpoint_run_fkey FOREIGN KEY (organization_id, run_id)
        REFERENCES flowforge.engine_run (organization_id, run_id) ON DELETE CASCADE,
    CONSTRAINT checkpoint_run_node_uq UNIQUE (organization_id, run_id, node_name),
    CONSTRAINT checkpoint_engine_kind_valid CHECK (engine_kind IN ('dag', 'graph')),
    CONSTRAINT checkpoint_parent_of_its_engine CHECK (
        (engine_kind = 'dag') = (parent_task_run_id IS NOT NULL)
        AND (engine_kind = 'graph') = (parent_work_item_id IS NOT NULL)),
    CONSTRAINT checkpoint_iterator_type_valid CHECK (iterator_type IN ('map', 'foreach')),
    CONSTRAINT checkpoint_counts_valid CHECK (
        generation >= 1 AND total BETWEEN 0 AND 1000000 AND cursor BETWEEN 0 AND total
        AND succeeded >= 0 AND failed >= 0 AND idx = succeeded + failed AND idx <= total),
    -- The bound the issue asks to hold at every step: never more live children than allowed.
    CONSTRAINT checkpoint_within_concurrency CHECK (live BETWEEN 0 AND max_concurrency),
    CONSTRAINT checkpoint_concurrency_valid CHECK (max_concurrency BETWEEN 1 AND 10000),
    CONSTRAINT checkpoint_settled_plus_live_within_total CHECK (idx + live <= total),
    CONSTRAINT checkpoint_tolerated_valid CHECK (tolerated_failures IS NULL OR tolerated_failures >= 0),
    CONSTRAINT checkpoint_done_iff_outcome CHECK (done = (outcome IS NOT NULL)),
    CONSTRAINT checkpoint_outcome_valid CHECK (outcome IN ('succeeded', 'failed', 'cancelled')),
    CONSTRAINT checkpoint_done_has_nothing_live CHECK (NOT done OR live = 0),
    CONSTRAINT checkpoint_deleted_pair CHECK ((deleted_at IS NULL) = (deleted_by IS NULL))
);

CREATE TABLE flowforge.checkpoint_page (
    organization_id  uuid     NOT NULL,
    checkpoint_id    uuid     NOT NULL,
    page             integer  NOT NULL,
    elements         jsonb    NOT NULL,
    CONSTRAINT checkpoint_page_pkey PRIMARY KEY (checkpoint_id, page),
    CONSTRAINT checkpoint_page_checkpoint_fkey FOREIGN KEY (checkpoint_id)
        REFERENCES flowforge.checkpoint (id) ON DELETE CASCADE,
    CONSTRAINT checkpoint_page_is_array CHECK (jsonb_typeof(elements) = 'array'),
    CONSTRAINT checkpoint_page_non_negative CHECK (page >= 0)
);

-- A fan-out child: its checkpoint, the generation (a graph node entered again
-- fans out afresh) and its element. Added NOT VALID: 0021 validates.
ALTER TABLE flowforge.work_item
    ADD COLUMN checkpoint_id uuid,
    ADD COLUMN checkpoint_generation integer,
    ADD COLUMN item_index integer,
    ADD CONSTRAINT work_item_checkpoint_fkey FOREIGN KEY (checkpoint_id)
        REFERENCES flowforge.checkpoint (id) ON DELETE CASCADE NOT VALID,
    ADD CONSTRAINT work_item_child_complete CHECK (
        (checkpoint_id IS NULL) = (item_index IS NULL) AND (checkpoint_id IS NULL) = (checkpoint_generation IS NULL)
        AND (item_index IS NULL OR item_index >= 0)) NOT VALID;

ALTER TABLE flowforge.task_run ADD COLUMN fans_out boolean NOT NULL DEFAULT false;

ALTER TABLE flowforge.setting ADD COLUMN max_fanout_items integer NOT NULL DEFAULT 100000,
    ADD CONSTRAINT setting_max_fanout_items_sane CHECK (max_fanout_items BETWEEN 1 AND 1000000);

DO $$
DECLARE
    v_table text;
BEGIN
    FOREACH v_table IN ARRAY ARRAY['checkpoint', 'checkpoint_page'] LOOP
        EXECUTE format('ALTER TABLE flowforge.%I OWNER TO flowforge_owner', v_table);
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON flowforge.%I TO flowforge_system', v_table);
        EXECUTE format('GRANT SELECT ON flowforge.%I TO flowforge_readonly', v_table);
        EXECUTE format('ALTER TABLE flowforge.%I ENABLE ROW LEVEL SECURITY', v_table);
        EXECUTE format('ALTER TABLE flowforge.%I FORCE ROW LEVEL SECURITY', v_table);
        EXECUTE format('CREATE POLICY system_all ON flowforge.%I AS PERMISSIVE FOR ALL TO flowforge_system '
                       'USING (true) WITH CHECK (true)', v_table);
        EXECUTE format('CREATE POLICY readonly_select ON flowforge.%I AS PERMISSIVE FOR SELECT TO flowforge_readonly '
                       'USING (true)', v_table);
        EXECUTE format('CREATE POLICY tenant_isolation ON flowforge.%I AS PERMISSIVE FOR ALL TO flowforge_owner '
                       'USING (organization_id = (SELECT flowforge.current_organization())) '
                       'WITH CHECK (organization_id = (SELECT flowforge.current_organization()))', v_table);
    END LOOP;
END;
$$;
