#!/usr/bin/env bash
# A PostgreSQL HA pair for the failover tests: one etcd member and two
# Patroni nodes on 127.0.0.1, a primary and a synchronous standby
# (Patroni's synchronous_mode sets synchronous_standby_names;
# synchronous_commit = on). Debian's packages: patroni, etcd-server
# (installed here when missing), PostgreSQL's binaries from .ci/postgres.sh.
#
#   eval "$(bash .ci/patroni.sh)"      start (idempotent) and print
#
#   export MCPLEDGER_TEST_POSTGRES_HA='postgres://...@127.0.0.1:54331,127.0.0.1:54332/...&target_session_attrs=read-write'
#   export MCPLEDGER_TEST_HA_CTL='/path/to/this/script'
#
# The tests drive the pair with the other commands (all print to stderr,
# except leader, which prints the leader's node name on stdout):
#
#   leader           which node is the primary
#   mode sync|async  Patroni's synchronous_mode on or off, waited for
#   pause-standby    SIGSTOP the primary's WAL sender (the standby falls behind)
#   kill-leader      SIGKILL the primary's Patroni and postmaster
#   heal             start the nodes that are down (fresh from the primary)
#                    and wait for a streaming standby
#   stop             stop everything
#   reset            stop everything and remove the pair's data (then start
#                    makes a new pair)
#
# It must run as root; PostgreSQL and Patroni run as the postgres user.
# Environment: MCPLEDGER_HA_DIR (default /var/tmp/mcpledger-ha).
set -euo pipefail

base=${MCPLEDGER_HA_DIR:-/var/tmp/mcpledger-ha}
scope=mcpledger-ha
etcd_client=23790
etcd_peer=23800
pg_port=(54331 54332)
api_port=(18008 18009)
user=mcpledger
password=mcpledger
db=mcpledger_test
su_password=ha-superuser
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")

log() { echo "patroni.sh: $*" >&2; }
as_pg() { runuser -u postgres -- "$@"; }

if [ "$(id -u)" -ne 0 ]; then
	log "must run as root (installs packages; runs PostgreSQL as the postgres user)"
	exit 2
fi

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)

running() { # pidfile
	[ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

api() { # node-index path [curl args...]
	local i=$1 path=$2
	shift 2
	curl -fsS --max-time 2 "$@" "http://127.0.0.1:${api_port[$i]}$path"
}

leader_index() {
	local i
	for i in 0 1; do
		if api "$i" /primary >/dev/null 2>&1; then
			echo "$i"
			return 0
		fi
	done
	return 1
}

psql_node() { # node-index sql
	PGPASSWORD=$su_password psql -X -q -tA -h 127.0.0.1 -p "${pg_port[$1]}" -U postgres -d postgres -c "$2"
}

wait_for() { # what seconds command...
	local what=$1 secs=$2
	shift 2
	for _ in $(seq 1 $((secs * 4))); do
		if "$@" >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.25
	done
	log "gave up after ${secs}s waiting for $what"
	return 1
}

start_etcd() {
	mkdir -p "$base/etcd"
	chown postgres: "$base" "$base/etcd"
	if running "$base/etcd/pid"; then
		return
	fi
	rm -f "$base/etcd/pid"
	# The pid file holds etcd's own pid (runuser stays its parent).
	as_pg sh -c "echo \$\$ >'$base/etcd/pid'; exec etcd --name ha --data-dir '$base/etcd/data' \
		--listen-client-urls http://127.0.0.1:$etcd_client --advertise-client-urls http://127.0.0.1:$etcd_client \
		--listen-peer-urls http://127.0.0.1:$etcd_peer --initial-advertise-peer-urls http://127.0.0.1:$etcd_peer \
		--initial-cluster ha=http://127.0.0.1:$etcd_peer --initial-cluster-state new" \
		>>"$base/etcd/log" 2>&1 &
	wait_for "etcd's pid" 10 test -s "$base/etcd/pid"
	wait_for "etcd" 30 curl -fsS --max-time 1 "http://127.0.0.1:$etcd_client/health"
}

write_config() { # node-index
	local i=$1 n=node$((i + 1)) dir=$base/node$((i + 1))
	mkdir -p "$dir"
	chown postgres: "$dir"
	chmod 700 "$dir"
	cat >"$dir/patroni.yml" <<YAML
scope: $scope
name: $n
restapi:
  listen: 127.0.0.1:${api_port[$i]}
  connect_address: 127.0.0.1:${api_port[$i]}
etcd3:
  hosts: 127.0.0.1:$etcd_client
bootstrap:
  dcs:
    # A lost primary's leader key expires after ttl: the failover takes
    # about that long.
    ttl: 8
    loop_wait: 1
    retry_timeout: 3
    # The async test lets the standby fall behind on purpose and still
    # promotes it: that is the loss it shows.
    maximum_lag_on_failover: 1073741824
    synchronous_mode: true
    postgresql:
      use_pg_rewind: true
      parameters:
        synchronous_commit: "on"
        max_connections: 200
        wal_log_hints: "on"
        max_wal_senders: 10
        max_replication_slots: 10
  initdb:
    - encoding: UTF8
  pg_hba:
    - local all all trust
    - host replication replicator 127.0.0.1/32 md5
    - host all all 127.0.0.1/32 md5
postgresql:
  listen: 127.0.0.1:${pg_port[$i]}
  connect_address: 127.0.0.1:${pg_port[$i]}
  data_dir: $dir/data
  bin_dir: $bindir
  pgpass: $dir/pgpass
  authentication:
    superuser:
      username: postgres
      password: $su_password
    replication:
      username: replicator
      password: ha-replicator
    rewind:
      username: postgres
      password: $su_password
  parameters:
    unix_socket_directories: '$dir'
YAML
	chown postgres: "$dir/patroni.yml"
}

start_node() { # node-index
	local i=$1 dir=$base/node$(($1 + 1))
	if running "$dir/patroni.pid"; then
		return
	fi
	write_config "$i"
	rm -f "$dir/patroni.pid"
	as_pg sh -c "echo \$\$ >'$dir/patroni.pid'; exec patroni '$dir/patroni.yml'" >>"$dir/log" 2>&1 &
	wait_for "node$((i + 1))'s Patroni" 10 test -s "$dir/patroni.pid"
}

standby_streaming() {
	local l
	l=$(leader_index) || return 1
	[ "$(psql_node "$l" "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")" -ge 1 ]
}

sync_standby() {
	local l
	l=$(leader_index) || return 1
	[ "$(psql_node "$l" "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'")" -ge 1 ]
}

async_standby() {
	local l
	l=$(leader_index) || return 1
	[ "$(psql_node "$l" "SHOW synchronous_standby_names")" = "" ] &&
		[ "$(psql_node "$l" "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'async' AND state = 'streaming'")" -ge 1 ]
}

create_db() {
	local l
	l=$(leader_index)
	PGPASSWORD=$su_password psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "${pg_port[$l]}" -U postgres -d postgres >&2 <<SQL
SELECT format('CREATE ROLE %I LOGIN PASSWORD %L', '$user', '$password') WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$user') \gexec
SELECT format('CREATE DATABASE %I OWNER %I', '$db', '$user') WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = '$db') \gexec
-- verify reads pg_stat_replication's columns, which need pg_monitor.
GRANT pg_monitor TO $user;
SQL
}

heal() {
	local i
	for i in 0 1; do
		local dir=$base/node$((i + 1))
		if ! running "$dir/patroni.pid"; then
			# A killed primary may have diverged (asynchronous mode): it
			# comes back as a fresh copy of the new primary.
			if pid=$(head -n 1 "$dir/data/postmaster.pid" 2>/dev/null) && kill -0 "$pid" 2>/dev/null; then
				kill -9 "$pid" || true
			fi
			rm -rf "$dir/data"
			start_node "$i"
		fi
	done
	wait_for "a leader" 60 leader_index
	wait_for "a streaming standby" 90 standby_streaming
}

case "${1:-start}" in
start)
	if ! command -v patroni >/dev/null || ! command -v etcd >/dev/null; then
		log "installing patroni and etcd-server"
		export DEBIAN_FRONTEND=noninteractive
		apt-get install -y -qq --no-install-recommends patroni etcd-server python3-etcd curl >&2
	fi
	if [ -z "$bindir" ]; then
		log "no PostgreSQL binaries under /usr/lib/postgresql (run .ci/postgres.sh first)"
		exit 1
	fi
	mkdir -p "$base"
	start_etcd
	start_node 0
	wait_for "a leader" 90 leader_index
	# The settings above apply when the cluster is first made; these
	# again (and synchronous mode, which a test may have turned off) on a
	# cluster made earlier.
	api "$(leader_index)" /config -XPATCH -d '{"ttl": 8, "loop_wait": 1, "retry_timeout": 3, "maximum_lag_on_failover": 1073741824, "synchronous_mode": true}' >/dev/null
	start_node 1
	wait_for "a streaming standby" 90 standby_streaming
	wait_for "a synchronous standby" 30 sync_standby
	create_db
	log "ready: primary node$(($(leader_index) + 1)), synchronous standby, etcd on 127.0.0.1:$etcd_client"
	echo "export MCPLEDGER_TEST_POSTGRES_HA='postgres://$user:$password@127.0.0.1:${pg_port[0]},127.0.0.1:${pg_port[1]}/$db?sslmode=disable&target_session_attrs=read-write'"
	echo "export MCPLEDGER_TEST_HA_CTL='$self'"
	;;
leader)
	echo "node$(($(leader_index) + 1))"
	;;
mode)
	case "${2:-}" in
	sync)
		api "$(leader_index)" /config -XPATCH -d '{"synchronous_mode": true}' >/dev/null
		wait_for "a synchronous standby" 60 sync_standby
		;;
	async)
		api "$(leader_index)" /config -XPATCH -d '{"synchronous_mode": false}' >/dev/null
		wait_for "an asynchronous standby" 60 async_standby
		;;
	*)
		log "mode: want sync or async"
		exit 2
		;;
	esac
	;;
pause-standby)
	# The primary's WAL sender stops: commits go on (asynchronous mode)
	# and the standby falls behind. A paused receiver would not do: the
	# socket buffers hold what was sent, and it reads them on resuming.
	# The standby may be reconnecting (Patroni restarts its replication
	# after a change of mode): wait for its WAL sender.
	l=$(leader_index)
	sender() { [ -n "$(psql_node "$l" "SELECT pid FROM pg_stat_replication WHERE state = 'streaming' LIMIT 1")" ]; }
	wait_for "a WAL sender on node$((l + 1))" 60 sender
	pid=$(psql_node "$l" "SELECT pid FROM pg_stat_replication WHERE state = 'streaming' LIMIT 1")
	kill -STOP "$pid"
	log "paused the WAL sender (pid $pid) of the primary node$((l + 1)): its standby falls behind"
	;;
kill-leader)
	l=$(leader_index)
	dir=$base/node$((l + 1))
	pg=$(head -n 1 "$dir/data/postmaster.pid")
	kill -9 "$(cat "$dir/patroni.pid")" "$pg"
	# Its backends (and a paused WAL sender) would end on their own once
	# they notice; a machine that dies takes them at once.
	for p in $(pgrep -P "$pg" 2>/dev/null || true); do kill -9 "$p" 2>/dev/null || true; done
	log "killed (SIGKILL) node$((l + 1)): Patroni, postmaster $pg and its backends"
	;;
heal)
	heal
	;;
stop)
	for i in 0 1; do
		dir=$base/node$((i + 1))
		if running "$dir/patroni.pid"; then kill "$(cat "$dir/patroni.pid")"; fi
	done
	for i in 0 1; do
		dir=$base/node$((i + 1))
		wait_for "node$((i + 1)) to stop" 30 sh -c "! kill -0 \$(cat '$dir/patroni.pid' 2>/dev/null) 2>/dev/null" || true
	done
	if running "$base/etcd/pid"; then kill "$(cat "$base/etcd/pid")"; fi
	;;
reset)
	bash "$self" stop
	rm -rf "$base"
	;;
*)
	log "unknown command $1 (start, leader, mode, pause-standby, kill-leader, heal, stop, reset)"
	exit 2
	;;
esac
