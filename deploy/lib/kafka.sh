# shellcheck shell=bash
# Apache Kafka (KRaft, combined broker+controller nodes) from Maven Central.

KAFKA_PORT="${LODESTAR_KAFKA_PORT:-9092}"
KAFKA_CONTROLLER_PORT="${LODESTAR_KAFKA_CONTROLLER_PORT:-9093}"
KAFKA_HEAP="${LODESTAR_KAFKA_HEAP:-512m}"
KAFKA_START_TIMEOUT="${LODESTAR_KAFKA_START_TIMEOUT:-180}"
KAFKA_DIST="$DIST_ROOT/kafka-$KAFKA_VERSION"

kafka_ports() { echo "$KAFKA_PORT $KAFKA_CONTROLLER_PORT"; }
kafka_describe() { echo "127.0.0.1:$KAFKA_PORT (controller $KAFKA_CONTROLLER_PORT)"; }
kafka_version() { echo "$KAFKA_VERSION"; }

kafka_fetch() {
  [[ -f "$KAFKA_DIST/.complete" ]] && return 0
  info "kafka: fetching org.apache.kafka:kafka_2.13:$KAFKA_VERSION and its runtime dependencies from Maven Central"
  rm -rf "$KAFKA_DIST"
  mvn_run kafka dependency:copy-dependencies@libs \
    -Dkafka.version="$KAFKA_VERSION" -Dlog4j.version="$KAFKA_LOG4J_VERSION" \
    -Dlibs.dir="$KAFKA_DIST/libs"
  compgen -G "$KAFKA_DIST/libs/kafka_2.13-$KAFKA_VERSION.jar" >/dev/null ||
    die "kafka: Maven finished but $KAFKA_DIST/libs has no kafka_2.13-$KAFKA_VERSION.jar"
  touch "$KAFKA_DIST/.complete"
}

# _kafka_jvm_args RUN_DIR: fills KAFKA_JVM_ARGS (java flags + classpath, no main class).
_kafka_jvm_args() {
  local run="$1"
  KAFKA_JVM_ARGS=(
    "-Xms128m" "-Xmx$KAFKA_HEAP"
    -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35
    -XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15 -Djava.awt.headless=true
    "-XX:ErrorFile=$run/logs/hs_err_pid%p.log"
    "-Dkafka.logs.dir=$run/logs" "-Dlog4j2.configurationFile=$run/conf/log4j2.properties"
    -cp "$KAFKA_DIST/libs/*"
  )
}

kafka_launch() {
  local run; run="$(run_dir kafka)"
  kafka_launch_node kafka "$DEPLOY_DIR/conf/kafka/server.properties" "$run/cluster.id" \
    HOST="$BIND_HOST" PORT="$KAFKA_PORT" CONTROLLER_PORT="$KAFKA_CONTROLLER_PORT" NODE_ID=1 \
    VOTERS="1@$BIND_HOST:$KAFKA_CONTROLLER_PORT" REPLICAS=1 MIN_ISR=1 SESSION_TIMEOUT_MS=60000 REGISTRATION_TIMEOUT_MS=150000
}

# kafka_launch_node NODE TEMPLATE CLUSTER_ID_FILE KEY=VALUE...: renders TEMPLATE (with DATA_DIR and
# the KEY=VALUEs) into NODE's run dir, formats its storage on the first start with the cluster id
# in CLUSTER_ID_FILE (made when missing: the nodes of one cluster share it) and launches it.
kafka_launch_node() {
  local node="$1" template="$2" id_file="$3"; shift 3
  local run; run="$(run_dir "$node")"
  mkdir -p "$run/conf" "$run/data" "$run/logs"
  render "$template" "$run/conf/server.properties" DATA_DIR="$run/data" "$@"
  cp "$DEPLOY_DIR/conf/kafka/log4j2.properties" "$run/conf/log4j2.properties"
  local log="$run/logs/$node.log"
  rotate_log "$log"
  _kafka_jvm_args "$run"
  if [[ ! -f "$run/data/meta.properties" ]]; then
    # First start (or after reset): give the KRaft log its cluster id.
    if [[ ! -s "$id_file" ]]; then
      "$JAVA_BIN" "${KAFKA_JVM_ARGS[@]}" kafka.tools.StorageTool random-uuid 2>>"$log" | tail -n 1 >"$id_file"
      [[ -s "$id_file" ]] || { tail -n 20 "$log" >&2; die "$node: StorageTool random-uuid failed (log: $log)"; }
    fi
    if ! "$JAVA_BIN" "${KAFKA_JVM_ARGS[@]}" kafka.tools.StorageTool format -t "$(cat "$id_file")" \
        -c "$run/conf/server.properties" >>"$log" 2>&1; then
      tail -n 20 "$log" >&2
      die "$node: formatting the storage in $run/data failed (log: $log)"
    fi
  fi
  local -a markers; mapfile -t markers < <(server_markers "$node")
  launch "$node" "$log" "$JAVA_BIN" "${markers[@]}" "${KAFKA_JVM_ARGS[@]}" kafka.Kafka "$run/conf/server.properties"
}

# Healthy = the broker answers a Metadata (v4) request over PLAINTEXT with itself as a broker.
# Request: size=15, api_key=3, api_version=4, correlation_id=7, client_id=null, topics=null (all),
# allow_auto_topic_creation=false. Response: size, correlation_id, throttle_time_ms, brokers count.
kafka_healthy() { kafka_brokers_at_least "$BIND_HOST" "$KAFKA_PORT" 1; }

# kafka_brokers_at_least HOST PORT N: the broker at HOST:PORT answers and lists at least N brokers.
kafka_brokers_at_least() {
  local bytes
  bytes="$(timeout 5 bash -c '
      exec 3<>"/dev/tcp/$0/$1" || exit 1
      printf "\x00\x00\x00\x0f\x00\x03\x00\x04\x00\x00\x00\x07\xff\xff\xff\xff\xff\xff\x00" >&3
      head -c 16 <&3 | od -An -v -tu1
    ' "$1" "$2" 2>/dev/null)" || return 1
  local -a b
  read -r -a b <<<"${bytes//$'\n'/ }"
  ((${#b[@]} == 16)) || return 1
  # correlation id 7 echoed back, and at least N brokers registered.
  [[ "${b[4]} ${b[5]} ${b[6]} ${b[7]}" == "0 0 0 7" ]] || return 1
  (((b[12] << 24 | b[13] << 16 | b[14] << 8 | b[15]) >= $3))
}
