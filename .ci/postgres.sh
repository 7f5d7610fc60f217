#!/usr/bin/env bash
# Installs PostgreSQL from Debian's packages (when missing), starts a cluster on
# 127.0.0.1, creates the test role and database, and prints the line
#
#   export MCPLEDGER_TEST_POSTGRES=postgres://...
#
# on stdout (everything else goes to stderr), so a caller can
#
#   eval "$(.ci/postgres.sh)"
#
# It is idempotent: running it twice, with the package already installed or the
# cluster already running, gives the same result. It must run as root.
#
# Environment (all optional):
#   MCPLEDGER_PG_USER      role name      (default mcpledger)
#   MCPLEDGER_PG_PASSWORD  role password  (default mcpledger)
#   MCPLEDGER_PG_DB        database name  (default mcpledger_test)
#   MCPLEDGER_PG_ENV_FILE  also write the export line to this file
set -euo pipefail

user=${MCPLEDGER_PG_USER:-mcpledger}
password=${MCPLEDGER_PG_PASSWORD:-mcpledger}
db=${MCPLEDGER_PG_DB:-mcpledger_test}
cluster=main
# Parallel test packages, 8-process races and server replicas each hold a
# pool; the Debian default of 100 connections is too tight for all at once.
max_connections=300

log() { echo "postgres.sh: $*" >&2; }

if [ "$(id -u)" -ne 0 ]; then
	log "must run as root (installs packages and manages the cluster)"
	exit 2
fi

if ! command -v pg_ctlcluster >/dev/null 2>&1 || ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
	log "installing postgresql"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	apt-get install -y -qq --no-install-recommends postgresql >&2
fi

version=$(ls /usr/lib/postgresql | sort -V | tail -n 1)
if [ -z "$version" ]; then
	log "no PostgreSQL server found under /usr/lib/postgresql"
	exit 1
fi

if ! pg_lsclusters -h | awk -v v="$version" -v c="$cluster" '$1 == v && $2 == c { found = 1 } END { exit !found }'; then
	log "creating cluster $version/$cluster"
	pg_createcluster "$version" "$cluster" >&2
fi

conf=/etc/postgresql/$version/$cluster/postgresql.conf
changed=0
set_conf() { # name value
	if ! grep -Eq "^$1 = $2\$" "$conf"; then
		sed -i -E "/^#?$1 = /d" "$conf"
		echo "$1 = $2" >>"$conf"
		changed=1
	fi
}
set_conf listen_addresses "'127.0.0.1'"
set_conf max_connections "$max_connections"

status=$(pg_lsclusters -h | awk -v v="$version" -v c="$cluster" '$1 == v && $2 == c { print $4 }')
if [ "$status" != "online" ]; then
	log "starting cluster $version/$cluster"
	pg_ctlcluster "$version" "$cluster" start >&2
elif [ "$changed" -eq 1 ]; then
	log "restarting cluster $version/$cluster for new settings"
	pg_ctlcluster "$version" "$cluster" restart >&2
fi
port=$(pg_lsclusters -h | awk -v v="$version" -v c="$cluster" '$1 == v && $2 == c { print $3 }')

psql_admin() {
	# runuser keeps this working where sudo is not installed.
	runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 -p "$port" "$@"
}

# The server may need a moment after start before it accepts connections.
for _ in $(seq 1 60); do
	if psql_admin -d postgres -tAc 'SELECT 1' >/dev/null 2>&1; then
		break
	fi
	sleep 0.5
done

psql_admin -d postgres -v user="$user" -v password="$password" >&2 <<'SQL'
SELECT format('CREATE ROLE %I LOGIN', :'user')
WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'user') \gexec
ALTER ROLE :"user" WITH LOGIN PASSWORD :'password';
SQL
psql_admin -d postgres -v user="$user" -v db="$db" >&2 <<'SQL'
SELECT format('CREATE DATABASE %I OWNER %I', :'db', :'user')
WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = :'db') \gexec
ALTER DATABASE :"db" OWNER TO :"user";
SQL

url="postgres://$user:$password@127.0.0.1:$port/$db?sslmode=disable"
if ! PGPASSWORD=$password psql -X -q -h 127.0.0.1 -p "$port" -U "$user" -d "$db" -tAc 'SELECT 1' >/dev/null; then
	log "cannot connect as $user to $db on 127.0.0.1:$port"
	exit 1
fi
log "ready: PostgreSQL $version on 127.0.0.1:$port, database $db"

line="export MCPLEDGER_TEST_POSTGRES='$url'"
if [ -n "${MCPLEDGER_PG_ENV_FILE:-}" ]; then
	echo "$line" >"$MCPLEDGER_PG_ENV_FILE"
fi
echo "$line"
