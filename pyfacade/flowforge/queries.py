"""Every SQL statement the Python facade sends, named, in one place.

The facade never builds SQL at run time: values travel as bind parameters,
and identifiers are fixed here.  Keeping the statements together makes the
facade's whole dependency on the SQL API reviewable at a glance and lets the
SQL side rename things with one grep.
"""

# --- server facts (doctor) -------------------------------------------------

SERVER_VERSION_NUM = "SELECT current_setting('server_version_num')::int, current_setting('server_version')"

EXTENSION_AVAILABLE = """
SELECT default_version, installed_version
  FROM pg_catalog.pg_available_extensions
 WHERE name = %(name)s
"""

# --- schema version (doctor, migrate) ---------------------------------------

# flowforge.schema_version() is defined in sql/functions/00_meta.sql; it may be
# absent (fresh database, or a database migrated before it existed), so ask
# the catalog first instead of catching an undefined_function error.
SCHEMA_VERSION_FUNCTION_EXISTS = "SELECT to_regprocedure('flowforge.schema_version()') IS NOT NULL"

SCHEMA_VERSION = "SELECT flowforge.schema_version()"

# yoyo keeps its bookkeeping in the connection's current schema.  Reading it
# directly keeps `doctor` read-only (yoyo's own API creates its tables).
YOYO_TABLE_EXISTS = "SELECT to_regclass('_yoyo_migration') IS NOT NULL"

APPLIED_MIGRATION_IDS = "SELECT migration_id FROM _yoyo_migration ORDER BY migration_id"

# --- embedded server bootstrap ---------------------------------------------

EMBEDDED_DATABASE_EXISTS = "SELECT 1 FROM pg_catalog.pg_database WHERE datname = 'flowforge'"

CREATE_EMBEDDED_DATABASE = "CREATE DATABASE flowforge"
