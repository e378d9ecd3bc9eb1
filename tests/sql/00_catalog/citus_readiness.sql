-- Citus readiness (issue 21): the schema can be distributed by organization.
--
-- Citus enforces a key or a foreign key inside one shard only, so it refuses
-- to distribute a table whose keys leave out the distribution column
-- (docs/scale.md cites the rules). Every table with an organization_id column
-- (a "tenant table") is distributed on it; the others are reference tables.
-- Each rule below reads the catalog, so a table, key, index, foreign key,
-- sequence, policy or trigger a later migration adds is checked too; a test
-- lists the offenders by name.
BEGIN;
SET LOCAL client_min_messages = warning;
SELECT plan(16);

CREATE TEMP VIEW tenant_table AS
SELECT c.oid AS relid, c.relname::text AS name, a.attnum AS org_attnum, a.atttypid AS org_type, a.attnotnull AS org_not_null
FROM pg_class c
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'organization_id' AND NOT a.attisdropped
WHERE c.relnamespace = 'flowforge'::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition;

CREATE TEMP VIEW reference_table AS
SELECT c.oid AS relid, c.relname::text AS name
FROM pg_class c
WHERE c.relnamespace = 'flowforge'::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition
  AND c.oid NOT IN (SELECT relid FROM tenant_table);

-- ---------------------------------------------------------------------------
-- Which table is which
-- ---------------------------------------------------------------------------
SELECT cmp_ok((SELECT count(*) FROM tenant_table), '>=', 30::bigint, 'the schema has its tenant tables (organization_id)');
SELECT set_eq($$SELECT name FROM reference_table$$, ARRAY['organization', 'setting', 'server_secret'],
    'the tables without organization_id are the three docs/scale.md plans as reference tables '
    '(a new one is either a tenant table or planned there)');
SELECT is_empty($$SELECT name FROM tenant_table WHERE org_type <> 'uuid'::regtype OR NOT org_not_null$$,
    'organization_id is uuid NOT NULL in every tenant table (co-located tables share one distribution column type)');

-- ---------------------------------------------------------------------------
-- Keys: within one shard, so within one organization
-- ---------------------------------------------------------------------------
SELECT is_empty($$SELECT t.name FROM tenant_table t
                  WHERE NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conrelid = t.relid AND k.contype = 'p')$$,
    'every tenant table has a primary key');
SELECT is_empty($$SELECT t.name || '.' || k.conname FROM tenant_table t JOIN pg_constraint k ON k.conrelid = t.relid
                  WHERE k.contype IN ('p', 'u') AND NOT t.org_attnum = ANY (k.conkey)$$,
    'every primary key and unique constraint of a tenant table includes organization_id');
SELECT is_empty($$SELECT t.name || '.' || x.relname
                  FROM tenant_table t JOIN pg_index i ON i.indrelid = t.relid JOIN pg_class x ON x.oid = i.indexrelid
                  WHERE i.indisunique AND NOT t.org_attnum = ANY ((i.indkey::int2[])[0:i.indnkeyatts - 1])$$,
    'every unique index of a tenant table (partial ones included) has organization_id among its key columns');
SELECT is_empty($$SELECT t.name || '.' || k.conname FROM tenant_table t JOIN pg_constraint k ON k.conrelid = t.relid
                  WHERE k.contype = 'x'
                    AND NOT EXISTS (SELECT 1 FROM unnest(k.conkey, k.conexclop) AS x(att, op)
                                    WHERE x.att = t.org_attnum AND x.op = 'pg_catalog.=(uuid,uuid)'::regoperator)$$,
    'every exclusion constraint of a tenant table compares organization_id with = (there are none today)');

-- ---------------------------------------------------------------------------
-- Foreign keys: co-located, or to a reference table
-- ---------------------------------------------------------------------------
SELECT is_empty($$SELECT s.name || '.' || k.conname || ' -> ' || r.name
                  FROM pg_constraint k JOIN tenant_table s ON s.relid = k.conrelid JOIN tenant_table r ON r.relid = k.confrelid
                  WHERE k.contype = 'f'
                    AND NOT EXISTS (SELECT 1 FROM unnest(k.conkey, k.confkey) AS x(src, dst)
                                    WHERE x.src = s.org_attnum AND x.dst = r.org_attnum)$$,
    'every foreign key between tenant tables pairs organization_id with organization_id (same place in both keys)');
SELECT is_empty($$SELECT s.name || '.' || k.conname || ' -> ' || k.confrelid::regclass::text
                  FROM pg_constraint k JOIN reference_table s ON s.relid = k.conrelid JOIN tenant_table r ON r.relid = k.confrelid
                  WHERE k.contype = 'f'$$,
    'no reference table references a tenant table');
SELECT is_empty($$SELECT s.name || '.' || k.conname FROM pg_constraint k JOIN tenant_table s ON s.relid = k.conrelid
                  WHERE k.contype = 'f' AND s.org_attnum = ANY (k.conkey)
                    AND (k.confdeltype IN ('n', 'd') OR k.confupdtype IN ('n', 'd', 'c'))$$,
    'no foreign key over organization_id sets NULL or DEFAULT, or cascades an update (Citus refuses those on the '
    'distribution column)');
SELECT cmp_ok((SELECT count(*) FROM pg_constraint k JOIN tenant_table s ON s.relid = k.conrelid
               JOIN tenant_table r ON r.relid = k.confrelid WHERE k.contype = 'f'), '>=', 20::bigint,
    'the foreign keys between tenant tables are there to check (a vacuous pass proves nothing)');

-- ---------------------------------------------------------------------------
-- Sequences: Citus gives every node its own range of a bigint sequence
-- ---------------------------------------------------------------------------
-- A column fed by a sequence: an identity column, a serial (the sequence is
-- owned by the column) or a DEFAULT nextval(...).
CREATE TEMP VIEW sequence_column AS
SELECT c.relid, c.name AS tab, a.attname::text AS col, a.atttypid, s.seqtypid
FROM tenant_table c
JOIN pg_attribute a ON a.attrelid = c.relid AND a.attnum > 0 AND NOT a.attisdropped
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
JOIN pg_depend dep ON dep.refobjid = a.attrelid AND dep.refobjsubid = a.attnum AND dep.classid = 'pg_class'::regclass
                  AND dep.refclassid = 'pg_class'::regclass AND dep.deptype IN ('a', 'i')
JOIN pg_sequence s ON s.seqrelid = dep.objid
UNION
SELECT c.relid, c.name, a.attname::text, a.atttypid, s.seqtypid
FROM tenant_table c
JOIN pg_attribute a ON a.attrelid = c.relid AND a.attnum > 0 AND NOT a.attisdropped
JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
JOIN pg_depend dep ON dep.classid = 'pg_attrdef'::regclass AND dep.objid = d.oid AND dep.refclassid = 'pg_class'::regclass
JOIN pg_sequence s ON s.seqrelid = dep.refobjid;

SELECT is_empty($$SELECT tab || '.' || col FROM sequence_column WHERE seqtypid <> 'bigint'::regtype OR atttypid <> 'bigint'::regtype$$,
    'every sequence a tenant table uses is bigint, in a bigint column (Citus splits a bigint sequence per node; a smaller '
    'one overlaps across nodes)');
SELECT is_empty($$SELECT v.tab || '.' || v.col FROM sequence_column v JOIN tenant_table t ON t.relid = v.relid
                  JOIN pg_attribute a ON a.attrelid = v.relid AND a.attname = v.col
                  WHERE a.attnum = t.org_attnum$$,
    'no sequence feeds organization_id');
-- Which ones, and why each is safe: task_run_event.seq only orders the events
-- of one transaction (they share created_at; run_events orders by created_at,
-- seq), and one transaction's writes for one organization run on one node.
SELECT set_eq($$SELECT tab || '.' || col FROM sequence_column$$, ARRAY['task_run_event.seq'],
    'the sequence-fed columns of tenant tables are the ones docs/scale.md says are safe: task_run_event.seq');

-- ---------------------------------------------------------------------------
-- What the operator's migration to Citus rewrites (docs/scale.md)
-- ---------------------------------------------------------------------------
-- Citus refuses a policy with a subquery on a distributed table; each tenant
-- policy has one of these shapes, which the migration's script rewrites
-- (organization_id = flowforge.current_organization(), no sub-select).
SELECT is_empty($$SELECT p.tablename || '.' || p.policyname FROM pg_policies p JOIN tenant_table t ON t.name = p.tablename
                  WHERE p.schemaname = 'flowforge'
                    AND NOT (coalesce(p.qual, 'true') IN ('true', '(organization_id = ( SELECT flowforge.current_organization() AS current_organization))')
                             AND coalesce(p.with_check, 'true') IN ('true', '(organization_id = ( SELECT flowforge.current_organization() AS current_organization))'))$$,
    'every policy of a tenant table is true or organization_id = (SELECT flowforge.current_organization()): the shape '
    'the migration script rewrites without a sub-select');
-- Citus runs a trigger of a distributed table on its shards only under
-- citus.enable_unsafe_triggers, and such a trigger is safe only when it touches
-- no row of another organization (its shard group). FlowForge's triggers are
-- the append-only guards, which touch no other table, and the ones reviewed in
-- docs/scale.md §5 whose functions read or write only rows of the same
-- organization_id: flow control's slot release (0028: flow_slot, flow_lane,
-- flow_bucket of OLD.organization_id) and the directory's definition name
-- (0030: the workflow of NEW.organization_id). A new trigger fails here until
-- it is reviewed the same way.
SELECT is_empty($$SELECT t.name || '.' || g.tgname FROM pg_trigger g JOIN tenant_table t ON t.relid = g.tgrelid
                  WHERE NOT g.tgisinternal
                    AND g.tgfoid NOT IN ('flowforge.refuse_history_change()'::regprocedure,
                                         'flowforge._flow_release()'::regprocedure,
                                         'flowforge.engine_run_definition_name()'::regprocedure)$$,
    'the triggers on tenant tables are the append-only guards and the two reviewed co-located ones (flow release, '
    'definition name)');

SELECT * FROM finish();
ROLLBACK;
