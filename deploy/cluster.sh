#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Runs Lodestar's backends as clusters on this machine, without Docker: a 3-broker KRaft Kafka,
# a 3-node Cassandra ring, a 3-node OpenSearch cluster (two data nodes and a cluster-manager-only
# node holding no data, so that losing any one still leaves a majority of voters) and a Spark
# standalone master with 2 workers, each node a JVM bound to its own loopback address (127.0.0.2-4 by default), on the
# downloads of deploy/servers.sh. See deploy/README.md "Clusters".
#
#   deploy/cluster.sh start  [NODE|ENGINE ...]   start (all when none named), wait until healthy
#   deploy/cluster.sh stop   [NODE|ENGINE ...]   stop (SIGTERM, SIGKILL after LODESTAR_STOP_TIMEOUT)
#   deploy/cluster.sh kill   NODE...             SIGKILL the nodes (a crash)
#   deploy/cluster.sh status [NODE|ENGINE ...]   state, address, pid, RSS (exit 3 if any is down)
#   deploy/cluster.sh logs   NODE [N]            last N lines of the node's log
#   deploy/cluster.sh reset  [NODE|ENGINE ...]   stop and wipe the data
#   deploy/cluster.sh nodes                      the nodes, one per line: NAME ENGINE HOST PORT
#   deploy/cluster.sh env                        the LODESTAR_* settings of a Lodestar on this cluster
#
# NODE: kafka1-3, cassandra1-3, opensearch1-3 (opensearch3 the manager-only one), spark-master, spark-worker1-2; ENGINE: kafka,
# cassandra, opensearch, spark. `deploy/servers.sh --cluster CMD ...` runs this script.
# Its run dir is LODESTAR_SERVERS_RUN (default $LODESTAR_SERVERS_HOME/cluster).
set -euo pipefail

DEPLOY_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
: "${LODESTAR_SERVERS_RUN:=${LODESTAR_SERVERS_HOME:-${HOME:?HOME is not set}/.cache/lodestar-servers}/cluster}"
source "$DEPLOY_DIR/lib/versions.sh"
source "$DEPLOY_DIR/lib/common.sh"
# Each engine's per-node heap (the whole set, Spark's executors aside, about 5 GiB resident).
LODESTAR_KAFKA_HEAP="${LODESTAR_CLUSTER_KAFKA_HEAP:-256m}"
LODESTAR_CASSANDRA_HEAP="${LODESTAR_CLUSTER_CASSANDRA_HEAP:-512M}"
LODESTAR_OPENSEARCH_HEAP="${LODESTAR_CLUSTER_OPENSEARCH_HEAP:-384m}"
OPENSEARCH_MANAGER_HEAP="${LODESTAR_CLUSTER_OPENSEARCH_MANAGER_HEAP:-256m}"  # opensearch3: no data
source "$DEPLOY_DIR/lib/kafka.sh"
source "$DEPLOY_DIR/lib/cassandra.sh"
source "$DEPLOY_DIR/lib/opensearch.sh"
source "$DEPLOY_DIR/lib/spark.sh"

read -r -a HOSTS <<<"${LODESTAR_CLUSTER_HOSTS:-127.0.0.2 127.0.0.3 127.0.0.4}"
((${#HOSTS[@]} == 3)) || die "LODESTAR_CLUSTER_HOSTS must name 3 addresses, not: ${HOSTS[*]}"
SPARK_MASTER_UI_PORT="${LODESTAR_SPARK_MASTER_UI_PORT:-18080}"
SPARK_WORKER_UI_PORT="${LODESTAR_SPARK_WORKER_UI_PORT:-18081}"
STOP_TIMEOUT="${LODESTAR_STOP_TIMEOUT:-60}"
ENGINES=(kafka cassandra opensearch spark)
ALL_NODES=(kafka1 kafka2 kafka3 cassandra1 cassandra2 cassandra3 opensearch1 opensearch2 opensearch3
  spark-master spark-worker1 spark-worker2)

run_dir() {
  case "$1" in
    opensearch*) opensearch_run_dir "$1" ;;
    *) printf '%s/%s' "$RUN_ROOT" "$1" ;;
  esac
}
log_file() { printf '%s/logs/%s.log' "$(run_dir "$1")" "$1"; }

engine_of() {
  case "$1" in
    kafka[1-3]) echo kafka ;;
    cassandra[1-3]) echo cassandra ;;
    opensearch[1-3]) echo opensearch ;;
    spark-master | spark-worker[1-2]) echo spark ;;
    *) return 1 ;;
  esac
}
# host_of NODE: its loopback address (the n-th of HOSTS; the master on the first, workers after).
host_of() {
  case "$1" in
    spark-master) echo "${HOSTS[0]}" ;;
    spark-worker*) echo "${HOSTS[${1#spark-worker}]}" ;;
    *) echo "${HOSTS[$((${1//[!0-9]/} - 1))]}" ;;
  esac
}
ports_of() {
  case "$(engine_of "$1")" in
    kafka) echo "$KAFKA_PORT $KAFKA_CONTROLLER_PORT" ;;
    cassandra) echo "$CASSANDRA_PORT $CASSANDRA_STORAGE_PORT" ;;
    opensearch) echo "$OPENSEARCH_PORT $OPENSEARCH_TRANSPORT_PORT" ;;
    spark) if [[ "$1" == spark-master ]]; then echo "$SPARK_MASTER_PORT $SPARK_MASTER_UI_PORT"; else echo "$SPARK_WORKER_UI_PORT"; fi ;;
  esac
}
timeout_of() {
  case "$(engine_of "$1")" in
    kafka) echo "$KAFKA_START_TIMEOUT" ;; cassandra) echo "$CASSANDRA_START_TIMEOUT" ;;
    opensearch) echo "$OPENSEARCH_START_TIMEOUT" ;; spark) echo "$SPARK_START_TIMEOUT" ;;
  esac
}
joined() { local IFS="$1"; shift; echo "$*"; }

# parse_nodes ARGS...: fills NODES (every node when none given; an engine names its nodes).
parse_nodes() {
  NODES=()
  local a n
  for a in "$@"; do
    if [[ " ${ENGINES[*]} " == *" $a "* ]]; then
      for n in "${ALL_NODES[@]}"; do [[ "$(engine_of "$n")" == "$a" ]] && NODES+=("$n"); done
    elif engine_of "$a" >/dev/null; then
      NODES+=("$a")
    else
      die "unknown node '$a' (nodes: ${ALL_NODES[*]}; engines: ${ENGINES[*]})"
    fi
  done
  ((${#NODES[@]})) || NODES=("${ALL_NODES[@]}")
}

launch_node() {
  local node="$1" host; host="$(host_of "$node")"
  local -a kafka_voters=() seeds=()
  local i
  case "$(engine_of "$node")" in
    kafka)
      for i in 1 2 3; do kafka_voters+=("$i@${HOSTS[i - 1]}:$KAFKA_CONTROLLER_PORT"); done
      kafka_launch_node "$node" "$DEPLOY_DIR/conf/kafka/server.properties" "$RUN_ROOT/kafka-cluster.id" \
        HOST="$host" PORT="$KAFKA_PORT" CONTROLLER_PORT="$KAFKA_CONTROLLER_PORT" NODE_ID="${node#kafka}" \
        VOTERS="$(joined , "${kafka_voters[@]}")" REPLICAS=3 MIN_ISR=2 SESSION_TIMEOUT_MS=20000 \
        REGISTRATION_TIMEOUT_MS=110000 ;;
    cassandra)
      for i in 0 1 2; do seeds+=("${HOSTS[i]}:$CASSANDRA_STORAGE_PORT"); done
      cassandra_launch_node "$node" "$DEPLOY_DIR/conf/cassandra/cassandra.yaml" \
        HOST="$host" NATIVE_PORT="$CASSANDRA_PORT" STORAGE_PORT="$CASSANDRA_STORAGE_PORT" \
        SEEDS="$(joined , "${seeds[@]}")" ;;
    opensearch)
      for i in 0 1 2; do seeds+=("${HOSTS[i]}:$OPENSEARCH_TRANSPORT_PORT"); done
      local roles="cluster_manager, data, ingest" heap="$OPENSEARCH_HEAP"
      if [[ "$node" == opensearch3 ]]; then roles="cluster_manager" heap="$OPENSEARCH_MANAGER_HEAP"; fi
      OPENSEARCH_HEAP="$heap" opensearch_launch_node "$node" "$DEPLOY_DIR/conf/opensearch/cluster.yml" \
        HOST="$host" PORT="$OPENSEARCH_PORT" TRANSPORT_PORT="$OPENSEARCH_TRANSPORT_PORT" NODE_NAME="$node" \
        SEEDS="$(joined , "${seeds[@]}")" MANAGERS="opensearch1,opensearch2,opensearch3" ROLES="$roles" ;;
    spark)
      if [[ "$node" == spark-master ]]; then
        spark_launch_node "$node" org.apache.spark.deploy.master.Master "$host" \
          --port "$SPARK_MASTER_PORT" --webui-port "$SPARK_MASTER_UI_PORT"
      else
        spark_launch_node "$node" org.apache.spark.deploy.worker.Worker "$host" \
          --webui-port "$SPARK_WORKER_UI_PORT" --cores "$SPARK_WORKER_CORES" --memory "$SPARK_WORKER_MEMORY" \
          --work-dir "$(run_dir "$node")/work" "spark://${HOSTS[0]}:$SPARK_MASTER_PORT"
      fi ;;
  esac
}

# node_healthy NODE: it serves its clients (a Kafka broker its metadata, a Cassandra node CQL, an
# OpenSearch node a cluster health with an elected manager, a Spark daemon its web UI's JSON).
node_healthy() {
  local host; host="$(host_of "$1")"
  case "$(engine_of "$1")" in
    kafka) kafka_brokers_at_least "$host" "$KAFKA_PORT" 1 ;;
    cassandra) cassandra_answers "$host" "$CASSANDRA_PORT" ;;
    opensearch) opensearch_nodes_at_least "$host" "$OPENSEARCH_PORT" 1 ;;
    spark)
      if [[ "$1" == spark-master ]]; then
        _http_get "$host" "$SPARK_MASTER_UI_PORT" /json/ | grep -q '"url"'
      else
        _http_get "$host" "$SPARK_WORKER_UI_PORT" /json/ | grep -q '"masterurl"'
      fi ;;
  esac
}

# wait_node NODE STARTED_AT: 0 once healthy; else what its log says went wrong (explain_failure),
# the node stopped, 1.
wait_node() {
  local node="$1" t0="$2" timeout pid
  timeout="$(timeout_of "$node")"
  while :; do
    if pid="$(server_pid "$node")" && node_healthy "$node"; then
      info "$node: up on $(host_of "$node") (pid $pid, $((SECONDS - t0))s)"
      return 0
    fi
    if [[ -z "$pid" ]] && ! still_starting "$node"; then
      exit_reason "$node"
      explain_failure "$node" "$(log_file "$node")" "exited during start-up (after $((SECONDS - t0))s): $EXIT_REASON"
      return 1
    fi
    if ((SECONDS - t0 >= timeout)); then
      pid="${pid:-${LAUNCHED[$node]:-}}"
      explain_failure "$node" "$(log_file "$node")" "(pid $pid) not healthy after ${timeout}s; stopping it"
      stop_pid "$node" "$pid" "$STOP_TIMEOUT"
      rm -f "$(pid_file "$node")"
      return 1
    fi
    if [[ -n "$pid" ]]; then sleep 1; else sleep 0.2; fi
  done
}

# await CONDITION... within SECONDS (first argument): the engine-wide checks after a start.
await() {
  local limit="$1"; shift
  local t0=$SECONDS
  until "$@"; do
    ((SECONDS - t0 < limit)) || return 1
    sleep 1
  done
}

cmd_start() {
  require_java
  local node pid e
  local -a todo=()
  for node in "${NODES[@]}"; do
    if pid="$(find_server_pid "$node")"; then
      printf '%s\n' "$pid" >"$(pid_file "$node")"
      info "$node: already running (pid $pid)"
      continue
    fi
    BIND_HOST="$(host_of "$node")"
    # shellcheck disable=SC2046
    check_ports_free "$node" $(ports_of "$node")
    todo+=("$node")
  done
  for e in kafka cassandra opensearch; do
    [[ " ${todo[*]} " == *" $e"* ]] && fetch_locked "$e"
  done
  declare -A started=()
  local failed=0
  # Kafka's and OpenSearch's nodes start together (their quorum forms of all of them); Cassandra's
  # one after the other (a node joins the ring once the one before serves); Spark's master first.
  for node in "${todo[@]}"; do
    case "$node" in cassandra* | spark-worker*) continue ;; esac
    info "$node: starting on $(host_of "$node") (log: $(log_file "$node"))"
    started[$node]=$SECONDS
    launch_node "$node"
  done
  for node in "${todo[@]}"; do
    case "$node" in
      cassandra* | spark-worker*)
        if [[ "$node" == spark-worker* && -n "${started[spark-master]:-}" ]]; then
          wait_node spark-master "${started[spark-master]}" || failed=1
          unset 'started[spark-master]'
        fi
        info "$node: starting on $(host_of "$node") (log: $(log_file "$node"))"
        started[$node]=$SECONDS
        launch_node "$node"
        if [[ "$node" == cassandra* ]]; then
          wait_node "$node" "${started[$node]}" || failed=1
          unset 'started[$node]'
        fi ;;
    esac
  done
  for node in "${!started[@]}"; do
    wait_node "$node" "${started[$node]}" || failed=1
  done
  ((failed == 0)) || die "not all nodes came up (see above)"
  if ((${#todo[@]} == ${#ALL_NODES[@]})); then
    await 120 kafka_brokers_at_least "${HOSTS[0]}" "$KAFKA_PORT" 3 || die "kafka: fewer than 3 brokers registered"
    await 120 opensearch_nodes_at_least "${HOSTS[0]}" "$OPENSEARCH_PORT" 3 || die "opensearch: fewer than 3 nodes joined"
    await 120 spark_workers_at_least "${HOSTS[0]}" 2 || die "spark: fewer than 2 workers registered"
    info "cluster up: $(cmd_env | tr '\n' ' ')"
  fi
}

cmd_stop() { stop_servers "$STOP_TIMEOUT" "${NODES[@]}"; }

cmd_kill() {
  (($# >= 1)) || die "usage: cluster.sh kill NODE..."
  parse_nodes "$@"
  local node pid
  for node in "${NODES[@]}"; do
    if pid="$(find_server_pid "$node")"; then
      kill -KILL "$pid"
      while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
      rm -f "$(pid_file "$node")"
      info "$node: killed (pid $pid)"
    else
      info "$node: not running"
    fi
  done
}

cmd_status() {
  local node pid rc=0 state
  for node in "${NODES[@]}"; do
    if pid="$(find_server_pid "$node")"; then
      state="running"
      node_healthy "$node" || { state="unhealthy"; rc=3; }
      printf '%-14s %-10s %-22s %s\n' "$node" "$state" "$(host_of "$node"):$(ports_of "$node" | cut -d' ' -f1)" \
        "pid $pid, rss $(rss_mb "$pid") MB, data $(run_dir "$node")"
    else
      rc=3
      printf '%-14s %-10s %-22s\n' "$node" "stopped" "$(host_of "$node"):$(ports_of "$node" | cut -d' ' -f1)"
    fi
  done
  return "$rc"
}

cmd_reset() {
  cmd_stop
  local node
  for node in "${NODES[@]}"; do
    rm -rf "$(run_dir "$node")"
    info "$node: data wiped"
  done
  ((${#NODES[@]} != ${#ALL_NODES[@]})) || rm -f "$RUN_ROOT/kafka-cluster.id"
}

cmd_nodes() {
  local node
  for node in "${ALL_NODES[@]}"; do
    echo "$node $(engine_of "$node") $(host_of "$node") $(ports_of "$node" | cut -d' ' -f1)"
  done
}

# The settings of a Lodestar (gms, mcl-processor, serve) on this cluster.
cmd_env() {
  local h
  local -a kafka=() cassandra=()
  for h in "${HOSTS[@]}"; do kafka+=("$h:$KAFKA_PORT"); cassandra+=("$h:$CASSANDRA_PORT"); done
  cat <<EOF
LODESTAR_EVENT_LOG=kafka
LODESTAR_ASPECT_STORE=cassandra
LODESTAR_READ_MODELS=distributed
LODESTAR_KAFKA_BOOTSTRAP=$(joined , "${kafka[@]}")
LODESTAR_CASSANDRA_HOSTS=$(joined , "${cassandra[@]}")
LODESTAR_OPENSEARCH_URL=http://${HOSTS[0]}:$OPENSEARCH_PORT,http://${HOSTS[1]}:$OPENSEARCH_PORT,http://${HOSTS[2]}:$OPENSEARCH_PORT
LODESTAR_KAFKA_REPLICATION_FACTOR=3
LODESTAR_KAFKA_MIN_INSYNC_REPLICAS=2
LODESTAR_CASSANDRA_REPLICATION_FACTOR=3
LODESTAR_OPENSEARCH_REPLICAS=1
LODESTAR_SPARK_MASTER=spark://${HOSTS[0]}:$SPARK_MASTER_PORT
EOF
}

cmd_logs() {
  (($# >= 1)) || die "usage: cluster.sh logs NODE [LINES]"
  engine_of "$1" >/dev/null || die "unknown node '$1' (nodes: ${ALL_NODES[*]})"
  local log; log="$(log_file "$1")"
  [[ -f "$log" ]] || die "no log yet: $log"
  echo "==> $log <=="
  tail -n "${2:-50}" "$log"
}

take_lock() {
  command -v flock >/dev/null || return 0
  mkdir -p "$RUN_ROOT"
  exec 9>"$RUN_ROOT/.lock"
  if ! flock -n 9; then
    info "waiting for another cluster.sh using $RUN_ROOT"
    flock -w 900 9 || die "another cluster.sh still holds $RUN_ROOT/.lock after 900s"
  fi
}

usage() {
  sed -n '3,/^set -euo pipefail/p' "${BASH_SOURCE[0]}" | sed -n 's/^# \{0,1\}//p'
  exit "${1:-2}"
}

main() {
  (($# >= 1)) || usage
  local cmd="$1"; shift
  case "$cmd" in
    start | stop | reset | kill) take_lock ;;
  esac
  case "$cmd" in
    start) parse_nodes "$@"; cmd_start ;;
    stop) parse_nodes "$@"; cmd_stop ;;
    kill) cmd_kill "$@" ;;
    status) parse_nodes "$@"; cmd_status ;;
    reset) parse_nodes "$@"; cmd_reset ;;
    logs) cmd_logs "$@" ;;
    nodes) cmd_nodes ;;
    env) cmd_env ;;
    -h | --help | help) usage 0 ;;
    *) echo "unknown command '$cmd'" >&2; usage ;;
  esac
}

main "$@"
