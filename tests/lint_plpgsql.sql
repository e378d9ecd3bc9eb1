-- plpgsql_check over every PL/pgSQL function in schema flowforge.
-- Prints every finding; fails (ON_ERROR_STOP) when any finding is an error.
-- Trigger functions are checked once per table that uses them (the checker
-- needs the relation to resolve NEW/OLD); one attached to no table is skipped.
CREATE EXTENSION IF NOT EXISTS plpgsql_check;

CREATE TEMP VIEW flowforge_lint AS
WITH targets AS (
    SELECT p.oid AS fn, 0::oid AS rel
      FROM pg_proc p
      JOIN pg_namespace n ON n.oid = p.pronamespace
      JOIN pg_language l ON l.oid = p.prolang
     WHERE n.nspname = 'flowforge' AND l.lanname = 'plpgsql'
       AND p.prorettype <> 'trigger'::regtype
    UNION
    SELECT p.oid, t.tgrelid
      FROM pg_proc p
      JOIN pg_namespace n ON n.oid = p.pronamespace
      JOIN pg_language l ON l.oid = p.prolang
      JOIN pg_trigger t ON t.tgfoid = p.oid AND NOT t.tgisinternal
     WHERE n.nspname = 'flowforge' AND l.lanname = 'plpgsql'
       AND p.prorettype = 'trigger'::regtype
)
SELECT t.fn::regprocedure AS function,
       NULLIF(t.rel, 0)::regclass AS on_table,
       c.lineno, c.level, c.sqlstate, c.message, c.detail, c.hint
  FROM targets t
 CROSS JOIN LATERAL plpgsql_check_function_tb(t.fn, t.rel) c;

\pset footer off
SELECT * FROM flowforge_lint ORDER BY level, function::text, lineno;

DO $$
DECLARE
    n int;
BEGIN
    SELECT count(*) INTO n FROM flowforge_lint WHERE level = 'error';
    IF n > 0 THEN
        RAISE EXCEPTION 'plpgsql_check: % error(s) in schema flowforge (listed above)', n;
    END IF;
    RAISE NOTICE 'plpgsql_check: no errors';
END $$;
