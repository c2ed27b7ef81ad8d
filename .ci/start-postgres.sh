#!/usr/bin/env bash
# Starts a local PostgreSQL for the store contract tests and exports SPLITDANCE_PG_URL.
# CI sources it (`source .ci/start-postgres.sh`) before the tests; running it works too.
# Idempotent, as root on Debian 12: installs the server if missing, creates or starts the
# cluster, sets the `postgres` password, creates the test database, waits until it answers.
# The server listens on loopback only.
set -euo pipefail

SPLITDANCE_PG_DB="${SPLITDANCE_PG_DB:-splitdance_test}"
SPLITDANCE_PG_PASSWORD="${SPLITDANCE_PG_PASSWORD:-postgres}"

if ! command -v pg_ctlcluster >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi

# The first cluster listed (version, name, port, status); create one if the package made none.
if [ -z "$(pg_lsclusters -h 2>/dev/null | head -n 1)" ]; then
  pg_createcluster "$(ls /usr/lib/postgresql | sort -V | tail -n 1)" main >/dev/null
fi
read -r _sd_pg_version _sd_pg_cluster _sd_pg_port _sd_pg_status _ < <(pg_lsclusters -h | head -n 1)

if [ "$_sd_pg_status" != "online" ]; then
  pg_ctlcluster "$_sd_pg_version" "$_sd_pg_cluster" start -- -o "-c listen_addresses=127.0.0.1"
fi

_sd_pg_ready=0
for _ in $(seq 1 60); do
  if pg_isready -q -h 127.0.0.1 -p "$_sd_pg_port"; then _sd_pg_ready=1; break; fi
  sleep 0.5
done
if [ "$_sd_pg_ready" != 1 ]; then
  echo "PostgreSQL $_sd_pg_version/$_sd_pg_cluster did not become ready on 127.0.0.1:$_sd_pg_port" >&2
  false
fi

# As the server's superuser, from / (so psql does not complain about root's home).
_sd_psql() { (cd / && runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 -p "$_sd_pg_port" "$@"); }

_sd_psql -c "ALTER USER postgres PASSWORD '$SPLITDANCE_PG_PASSWORD'"
if [ -z "$(_sd_psql -tA -c "SELECT 1 FROM pg_database WHERE datname = '$SPLITDANCE_PG_DB'")" ]; then
  (cd / && runuser -u postgres -- createdb -p "$_sd_pg_port" "$SPLITDANCE_PG_DB")
fi

export SPLITDANCE_PG_URL="${SPLITDANCE_PG_URL:-postgres://postgres:$SPLITDANCE_PG_PASSWORD@127.0.0.1:$_sd_pg_port/$SPLITDANCE_PG_DB}"
echo "PostgreSQL $_sd_pg_version/$_sd_pg_cluster ready on 127.0.0.1:$_sd_pg_port, database $SPLITDANCE_PG_DB"
unset -f _sd_psql
unset _sd_pg_version _sd_pg_cluster _sd_pg_port _sd_pg_status _sd_pg_ready
