#!/usr/bin/env bash
# Run the SQL test suite against a fresh, throwaway database:
#   create flowforge_pgtap_<pid> -> flowforge migrate -> CREATE EXTENSION pgtap
#   -> tests/fixtures/*.sql
#   -> pg_prove tests/sql/*.sql -> plpgsql_check lint of schema flowforge
# and drop the database afterwards, whether or not anything failed.
#
# Connection: libpq environment (PGHOST/PGPORT/PGUSER), defaulting to the
# local server as postgres over TCP, the same server the pytest suite uses.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
flowforge="${FLOWFORGE_BIN:-$repo/.venv/bin/flowforge}"

export PGHOST="${PGHOST:-127.0.0.1}" PGPORT="${PGPORT:-5432}" PGUSER="${PGUSER:-postgres}"
db="flowforge_pgtap_$$"
dsn="host=$PGHOST port=$PGPORT user=$PGUSER dbname=$db"

cleanup() {
    psql -X -q -d postgres -v ON_ERROR_STOP=1 -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null || true
}
trap cleanup EXIT

psql -X -q -d postgres -v ON_ERROR_STOP=1 -c "CREATE DATABASE $db"
"$flowforge" --dsn "$dsn" migrate
psql -X -q -d "$db" -v ON_ERROR_STOP=1 -c "CREATE EXTENSION IF NOT EXISTS pgtap"
# Test-only helpers (e.g. the steerable clock), never installed by migrate.
for fixture in "$repo"/tests/fixtures/*.sql; do
    [[ -e "$fixture" ]] || continue
    psql -X -q -d "$db" -v ON_ERROR_STOP=1 -f "$fixture"
done

# Both steps always run, so one failure does not hide the other.
status=0
shopt -s nullglob
# tests/sql mirrors sql/functions: one folder per family, one file per behaviour.
pg_prove -d "$db" --recurse --ext .sql "$repo/tests/sql" || status=1

echo "run_pgtap: plpgsql_check lint of schema flowforge"
psql -X -q -d "$db" -v ON_ERROR_STOP=1 -f "$here/lint_plpgsql.sql" || status=1
exit "$status"
