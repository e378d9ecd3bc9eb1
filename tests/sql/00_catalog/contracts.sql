-- The error contract, checked from the catalog: every FF code an API function
-- can raise — its own RAISEs and those of the internal helpers it reaches
-- (transitively, through underscore functions, so a code raised behind an
-- engine hook counts) — appears in its COMMENT ON FUNCTION, on an "Errors:"
-- line. FF007 and FF008 (permission, authentication) come with every call
-- that resolves its caller, and the comment says so once: "FF007/FF008 as
-- for every API call".
--
-- And the history's column list lives in one function (_append_events) plus
-- the measured fast paths named below; a new INSERT into task_run_event
-- anywhere else fails here. History is deleted by _purge alone.
--
-- And no function's signature names a table's row type: the function would
-- depend on the table, and a migration rollback (DROP TABLE) would fail on it.
BEGIN;
SELECT plan(6);

CREATE TEMP TABLE fn AS
SELECT p.oid, p.proname::text AS name, p.oid::regprocedure::text AS signature, p.prosrc,
       obj_description(p.oid, 'pg_proc') AS comment, p.prorettype = 'trigger'::regtype AS is_trigger
FROM pg_proc p WHERE p.pronamespace = 'flowforge'::regnamespace;

-- Which flowforge functions each function's body calls (by name: every overload).
-- A body that catches every error of some calls and turns it into a result
-- (fire_trigger records a refused firing; tick reports a failed duty) says so
-- with a line "-- contains the errors of: flowforge._a, flowforge._b": those
-- calls' codes do not escape it.
CREATE TEMP TABLE calls AS
SELECT DISTINCT f.oid AS caller, g.oid AS callee
FROM fn f
CROSS JOIN LATERAL regexp_matches(f.prosrc, 'flowforge\.(_[a-z0-9_]+)\s*\(', 'g') AS m(name)
JOIN fn g ON g.name = m.name[1]
WHERE NOT m.name[1] = ANY (coalesce(
    (SELECT array_agg(c[1]) FROM regexp_matches(
        substring(f.prosrc FROM '-- contains the errors of: ([^\n]*)'), 'flowforge\.(_[a-z0-9_]+)', 'g') AS c),
    '{}'));

-- Codes each function raises itself.
CREATE TEMP TABLE raises AS
SELECT DISTINCT f.oid, m.code[1] AS code
FROM fn f CROSS JOIN LATERAL regexp_matches(f.prosrc, 'ERRCODE\s*=\s*''(FF[0-9]{3})''', 'g') AS m(code);

-- Codes reachable from each API function through internal helpers. (Trigger
-- functions are not called; their code is in docs/errors.md.)
CREATE TEMP TABLE reachable AS
WITH RECURSIVE reach(root, oid) AS (
    SELECT f.oid, f.oid FROM fn f WHERE f.name !~ '^_' AND NOT f.is_trigger
    UNION
    SELECT r.root, c.callee FROM reach r JOIN calls c ON c.caller = r.oid
)
SELECT DISTINCT r.root AS oid, x.code FROM reach r JOIN raises x ON x.oid = r.oid;

SELECT is_empty(
    $$SELECT f.signature || ' can raise ' || r.code || ' but its COMMENT does not say so'
      FROM reachable r JOIN fn f ON f.oid = r.oid
      WHERE coalesce(f.comment, '') !~ r.code
        AND NOT (r.code IN ('FF007', 'FF008') AND f.comment ~ 'FF007/FF008 as for every API call')
      ORDER BY 1$$,
    'every FF code an API function can raise is named in its COMMENT');

SELECT is_empty(
    $$SELECT f.signature FROM fn f
      WHERE f.oid IN (SELECT r.oid FROM reachable r) AND coalesce(f.comment, '') !~ 'Errors:'
      ORDER BY 1$$,
    'every API function that can raise an FF code has an "Errors:" line');

-- The converse: an "Errors:" line naming a code the function cannot raise
-- misleads the caller. (Prose before it may mention codes others raise, such
-- as the FF004 a cancelled task's holder gets.)
SELECT is_empty(
    $$SELECT f.signature || ' names ' || m.code[1] || ' but cannot raise it'
      FROM fn f CROSS JOIN LATERAL regexp_matches(substring(coalesce(f.comment, '') FROM 'Errors:.*$'), '(FF[0-9]{3})', 'g') AS m(code)
      WHERE f.name !~ '^_' AND NOT f.is_trigger
        AND m.code[1] NOT IN ('FF007', 'FF008', 'FF010', 'FF011')
        AND NOT EXISTS (SELECT 1 FROM reachable r WHERE r.oid = f.oid AND r.code = m.code[1])
      ORDER BY 1$$,
    'no API COMMENT names an FF code the function cannot raise');

SELECT set_eq(
    $$SELECT f.signature FROM fn f WHERE f.prosrc ~* 'INSERT\s+INTO\s+flowforge\.task_run_event'$$,
    ARRAY['flowforge._append_events(uuid,uuid,text,uuid[],text[],text[],bigint[],integer[],jsonb[],timestamp with time zone,uuid[])',
          'flowforge.claim(text[],text,interval,integer,text[])',
          'flowforge.complete(uuid,bigint,jsonb)',
          'flowforge.complete_many(uuid[],bigint[],jsonb[])',
          'flowforge.claim_work(text[],text,interval,integer,text[],text[])',
          'flowforge.complete_work(uuid,bigint,jsonb)',
          'flowforge._graph_finish(uuid,uuid,text,text,text,timestamp with time zone,jsonb,boolean)',
          'flowforge._dispatch_rows(uuid,uuid[],timestamp with time zone,uuid[],uuid[])',
          'flowforge._settle_run(uuid,uuid,integer,integer,timestamp with time zone)',
          'flowforge._dag_start_runs(uuid,uuid[],uuid,jsonb,jsonb[],text[],timestamp with time zone,text)'],
    'history rows are built by _append_events and the measured fast paths only');

-- And history rows leave through purge only (0032): the append-only triggers
-- let a DELETE through for flowforge_system with flowforge.history_purge on,
-- so no other function of flowforge_system's may delete from the history.
SELECT set_eq(
    $$SELECT f.signature FROM fn f
      WHERE f.prosrc ~* '(DELETE\s+FROM|TRUNCATE)\s+flowforge\.(task_run_event|audit_log|trigger_firing|machine_transition)\M'$$,
    ARRAY['flowforge._purge(uuid[],timestamp with time zone,timestamp with time zone,timestamp with time zone,integer,boolean,boolean)'],
    'history rows are deleted by _purge only');

-- Functions are re-applied after every migrate, but a rollback runs before
-- they are dropped: a signature of type flowforge.task (or task[]) makes
-- "DROP TABLE flowforge.task" fail with "other objects depend on it" (the
-- bug _enqueue_work had). Variables of %ROWTYPE inside a body record no
-- dependency and stay allowed.
SELECT is_empty(
    $$SELECT p.oid::regprocedure::text || ' names the row type of ' || c.oid::regclass::text
             || CASE WHEN ty.oid = p.prorettype OR ty.typarray = p.prorettype THEN ' (returns it)' ELSE ' (takes it)' END
      FROM pg_proc p
      JOIN pg_class c ON c.relnamespace = 'flowforge'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
      JOIN pg_type ty ON ty.oid = c.reltype
      WHERE p.pronamespace = 'flowforge'::regnamespace
        AND (p.prorettype IN (ty.oid, ty.typarray)
             OR ty.oid = ANY (p.proargtypes::oid[]) OR ty.typarray = ANY (p.proargtypes::oid[])
             OR ty.oid = ANY (coalesce(p.proallargtypes, '{}')) OR ty.typarray = ANY (coalesce(p.proallargtypes, '{}')))
      ORDER BY 1$$,
    'no flowforge function takes or returns a flowforge table''s row type (a rollback could not drop the table)');

SELECT * FROM finish();
ROLLBACK;
