#!/usr/bin/env bash
# cluster.sh up|down: a local stakegraph deployment of several processes on
# this machine, for trying out and measuring what runs past one machine:
#
#   - a PostgreSQL primary and one streaming replica (pg_basebackup -R),
#   - redis-server, holding the API keys' rate limits,
#   - two `stakegraph serve` instances that read from the replica, share
#     their limits in Redis and, with RPC_URL set, both run --index (one of
#     them indexes at a time, elected by an advisory lock on the primary).
#
# Without RPC_URL the primary holds the demo data (which has no sync cursor
# and so cannot be indexed further); with RPC_URL (and NETWORK, default
# mainnet) it starts empty and is filled from that node.
#
# Everything lives in $CLUSTER_DIR (default .cluster) and listens on
# 127.0.0.1 only. `up` prints the URLs and an API key; `down` stops it all
# and keeps the data for the next `up`.
set -euo pipefail

cd "$(dirname "$0")/.."
BIN=${BIN:-bin/stakegraph}
DIR=${CLUSTER_DIR:-.cluster}
PRIMARY_PORT=${PRIMARY_PORT:-54361}
REPLICA_PORT=${REPLICA_PORT:-54362}
REDIS_PORT=${REDIS_PORT:-6391}
API_PORTS=(${API_PORTS:-8081 8082})
ADMIN_PORTS=(${ADMIN_PORTS:-9181 9182})
NETWORK=${NETWORK:-mainnet}

primary_url="postgres://postgres@127.0.0.1:$PRIMARY_PORT/stakegraph?sslmode=disable"
replica_url="postgres://postgres@127.0.0.1:$REPLICA_PORT/stakegraph?sslmode=disable"
redis_url="redis://127.0.0.1:$REDIS_PORT/0"

# pg runs bin/stakegraph's local PostgreSQL commands on one cluster.
pg() {
	local name=$1 port=$2
	shift 2
	STAKEGRAPH_HOME="$DIR/$name" STAKEGRAPH_PG_PORT=$port DATABASE_URL= "$BIN" "$@"
}

# wait_for waits up to 60 s for GET http://127.0.0.1:$1$2 to answer 200
# (with bash's /dev/tcp: no HTTP client needed).
wait_for() {
	local status
	for _ in $(seq 600); do
		if exec 3<>"/dev/tcp/127.0.0.1/$1" 2>/dev/null; then
			printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$2" >&3
			read -r _ status _ <&3 || true
			exec 3>&-
			if [ "$status" = 200 ]; then
				return 0
			fi
		fi
		sleep 0.1
	done
	echo "cluster: http://127.0.0.1:$1$2 did not answer within 60 s" >&2
	return 1
}

up() {
	mkdir -p "$DIR"
	chmod 755 "$DIR" # the postgres OS user reaches the clusters in it
	if ! command -v redis-server >/dev/null; then
		echo "cluster: redis-server is missing: run make redis" >&2
		exit 1
	fi

	echo "Primary PostgreSQL on port $PRIMARY_PORT"
	pg primary "$PRIMARY_PORT" localpg start >/dev/null
	if [ -z "${RPC_URL:-}" ]; then
		# Creates, migrates and fills the stakegraph database (once).
		pg primary "$PRIMARY_PORT" --network "$NETWORK" seed demo --if-empty >/dev/null
	else
		pg primary "$PRIMARY_PORT" --network "$NETWORK" migrate >/dev/null
	fi

	echo "Streaming replica on port $REPLICA_PORT"
	pg replica "$REPLICA_PORT" localpg start \
		--replica-of "postgres://postgres@127.0.0.1:$PRIMARY_PORT/postgres?sslmode=disable" >/dev/null

	echo "Redis on port $REDIS_PORT"
	mkdir -p "$DIR/redis"
	redis_dir=$(cd "$DIR/redis" && pwd)
	if ! redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1; then
		redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --daemonize yes --dir "$redis_dir" \
			--pidfile "$redis_dir/redis.pid" --logfile "$redis_dir/redis.log" \
			--save "" --appendonly no >/dev/null
	fi

	key=$(DATABASE_URL=$primary_url "$BIN" --network "$NETWORK" keys create --name "cluster-$(date +%Y%m%d-%H%M%S)" | tail -n 1)
	index=()
	if [ -n "${RPC_URL:-}" ]; then
		index=(--index --rpc-url "$RPC_URL")
	fi
	for i in 0 1; do
		n=$((i + 1))
		if [ -f "$DIR/serve$n.pid" ] && kill -0 "$(cat "$DIR/serve$n.pid")" 2>/dev/null; then
			continue
		fi
		echo "stakegraph serve #$n on port ${API_PORTS[$i]}"
		DATABASE_URL=$primary_url STAKEGRAPH_LOG_FORMAT=json nohup "$BIN" --network "$NETWORK" serve \
			--addr "127.0.0.1:${API_PORTS[$i]}" --admin-addr "127.0.0.1:${ADMIN_PORTS[$i]}" \
			--replica-url "$replica_url" --redis-url "$redis_url" "${index[@]}" \
			>"$DIR/serve$n.log" 2>&1 &
		echo $! >"$DIR/serve$n.pid"
	done
	for i in 0 1; do
		wait_for "${API_PORTS[$i]}" /readyz
	done

	cat <<MSG

  The cluster runs (logs and data in $DIR; stop it with make cluster-stop):

    API         http://127.0.0.1:${API_PORTS[0]}  http://127.0.0.1:${API_PORTS[1]}
    /metrics    http://127.0.0.1:${ADMIN_PORTS[0]}/metrics  http://127.0.0.1:${ADMIN_PORTS[1]}/metrics
    primary     $primary_url
    replica     $replica_url
    redis       $redis_url

  API key (X-API-Token), one rate limit across both instances:

    $key

  Try: curl -H 'X-API-Token: $key' 'http://127.0.0.1:${API_PORTS[1]}/avs?take=2'

MSG
}

down() {
	for n in 1 2; do
		if [ -f "$DIR/serve$n.pid" ]; then
			pid=$(cat "$DIR/serve$n.pid")
			if kill "$pid" 2>/dev/null; then
				for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
				echo "Stopped stakegraph serve #$n"
			fi
			rm -f "$DIR/serve$n.pid"
		fi
	done
	if [ -f "$DIR/redis/redis.pid" ] && kill "$(cat "$DIR/redis/redis.pid")" 2>/dev/null; then
		echo "Stopped Redis"
	fi
	pg replica "$REPLICA_PORT" localpg stop || true
	pg primary "$PRIMARY_PORT" localpg stop || true
}

case "${1:-}" in
up) up ;;
down) down ;;
*)
	echo "usage: $0 up|down" >&2
	exit 2
	;;
esac
