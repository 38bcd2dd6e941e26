# shellcheck shell=bash
# Apache Cassandra 5.0 (a node, or the nodes of a ring), run as CassandraDaemon from cassandra-all + runtime deps.

CASSANDRA_PORT="${LODESTAR_CASSANDRA_PORT:-9042}"
CASSANDRA_STORAGE_PORT="${LODESTAR_CASSANDRA_STORAGE_PORT:-7000}"
CASSANDRA_HEAP="${LODESTAR_CASSANDRA_HEAP:-1G}"
CASSANDRA_START_TIMEOUT="${LODESTAR_CASSANDRA_START_TIMEOUT:-240}"
CASSANDRA_DIST="$DIST_ROOT/cassandra-$CASSANDRA_VERSION"
CASSANDRA_EXTRA_FLAGS=()  # more JVM flags for the nodes launched next (a cluster's)

cassandra_ports() { echo "$CASSANDRA_PORT $CASSANDRA_STORAGE_PORT"; }
cassandra_describe() { echo "127.0.0.1:$CASSANDRA_PORT (CQL; storage $CASSANDRA_STORAGE_PORT)"; }
cassandra_version() { echo "$CASSANDRA_VERSION"; }

cassandra_fetch() {
  [[ -f "$CASSANDRA_DIST/.complete" ]] && return 0
  info "cassandra: fetching org.apache.cassandra:cassandra-all:$CASSANDRA_VERSION and its runtime dependencies from Maven Central"
  rm -rf "$CASSANDRA_DIST"
  mvn_run cassandra dependency:copy-dependencies@libs \
    -Dcassandra.version="$CASSANDRA_VERSION" -Dlibs.dir="$CASSANDRA_DIST/lib"
  compgen -G "$CASSANDRA_DIST/lib/cassandra-all-$CASSANDRA_VERSION.jar" >/dev/null ||
    die "cassandra: Maven finished but $CASSANDRA_DIST/lib has no cassandra-all-$CASSANDRA_VERSION.jar"
  compgen -G "$CASSANDRA_DIST/lib/jamm-*.jar" >/dev/null ||
    die "cassandra: no jamm jar in $CASSANDRA_DIST/lib (needed as -javaagent)"
  touch "$CASSANDRA_DIST/.complete"
}

cassandra_launch() {
  cassandra_launch_node cassandra "$DEPLOY_DIR/conf/cassandra/cassandra.yaml" \
    HOST="$BIND_HOST" NATIVE_PORT="$CASSANDRA_PORT" STORAGE_PORT="$CASSANDRA_STORAGE_PORT" \
    SEEDS="$BIND_HOST:$CASSANDRA_STORAGE_PORT"
}

# cassandra_launch_node NODE TEMPLATE KEY=VALUE...: renders TEMPLATE (with DATA_DIR and the
# KEY=VALUEs) into NODE's run dir and launches NODE.
cassandra_launch_node() {
  local node="$1" template="$2"; shift 2
  local run; run="$(run_dir "$node")"
  mkdir -p "$run/conf/triggers" "$run/data" "$run/logs"
  render "$template" "$run/conf/cassandra.yaml" DATA_DIR="$run/data" "$@"
  cp "$DEPLOY_DIR/conf/cassandra/logback.xml" "$run/conf/logback.xml"
  local log="$run/logs/$node.log"
  rotate_log "$log"

  if ((JAVA_MAJOR > 17)); then
    warn "cassandra: Cassandra 5.0 supports Java 11 and 17; $JAVA_BIN is Java $JAVA_MAJOR (set JAVA_HOME to a JDK 17)"
  fi
  local -a opts=() words
  local line jamm
  while IFS= read -r line; do
    read -r -a words <<<"$line"
    opts+=("${words[@]}")
  done < <(jvm_options_file "$DEPLOY_DIR/conf/cassandra/jvm.options")
  jamm="$(compgen -G "$CASSANDRA_DIST/lib/jamm-*.jar" | head -n 1)"

  # CassandraDaemon always calls mlockall(MCL_CURRENT); as root (CAP_IPC_LOCK) that succeeds and
  # pins the whole 1G heap in RAM. A dev node does not need that: drop the capability.
  local -a nolock=()
  if ((EUID == 0)) && command -v setpriv >/dev/null &&
    setpriv --inh-caps=-ipc_lock --bounding-set=-ipc_lock true 2>/dev/null; then
    nolock=(setpriv --inh-caps=-ipc_lock --bounding-set=-ipc_lock)
  fi

  local -a markers; mapfile -t markers < <(server_markers "$node")
  launch "$node" "$log" "${nolock[@]}" "$JAVA_BIN" "${markers[@]}" \
    "-Xms$CASSANDRA_HEAP" "-Xmx$CASSANDRA_HEAP" \
    "${opts[@]}" \
    "-javaagent:$jamm" \
    "-XX:HeapDumpPath=$run/logs" "-XX:ErrorFile=$run/logs/hs_err_pid%p.log" \
    "-Dcassandra.config=file://$run/conf/cassandra.yaml" \
    "-Dcassandra.storagedir=$run/data" "-Dcassandra.logdir=$run/logs" \
    "-Dlogback.configurationFile=$run/conf/logback.xml" \
    -Dcassandra-foreground=yes "-Dcassandra.triggers_dir=$run/conf/triggers" \
    -Dcassandra.skip_wait_for_gossip_to_settle=0 -Dcassandra.ring_delay_ms=0 \
    -Dcassandra.load_ring_state=false "${CASSANDRA_EXTRA_FLAGS[@]}" \
    -Dcassandra.superuser_setup_delay_ms=0 \
    -cp "$CASSANDRA_DIST/lib/*" org.apache.cassandra.service.CassandraDaemon
}

# Healthy = the CQL native port completes a protocol v4 handshake and answers a query:
# STARTUP {CQL_VERSION: 3.0.0} -> READY, then QUERY "SELECT release_version FROM system.local"
# at ONE -> RESULT (opcode 0x08). Frame header: version, flags, stream (2 bytes), opcode, length (4).
cassandra_healthy() { cassandra_answers "$BIND_HOST" "$CASSANDRA_PORT"; }

# cassandra_answers HOST PORT: the node at HOST:PORT completes the handshake and answers the query.
cassandra_answers() {
  local out
  out="$(timeout 8 bash -c '
      exec 3<>"/dev/tcp/$0/$1" || exit 1
      printf "\x04\x00\x00\x01\x01\x00\x00\x00\x16\x00\x01\x00\x0bCQL_VERSION\x00\x053.0.0" >&3
      head -c 9 <&3 | od -An -v -tu1
      printf "\x04\x00\x00\x02\x07\x00\x00\x00\x2f\x00\x00\x00\x28SELECT release_version FROM system.local\x00\x01\x00" >&3
      head -c 9 <&3 | od -An -v -tu1
    ' "$1" "$2" 2>/dev/null)" || return 1
  local -a b
  read -r -a b <<<"${out//$'\n'/ }"
  ((${#b[@]} == 18)) || return 1
  # READY (2) for stream 1, RESULT (8) for stream 2.
  [[ "${b[4]}" == 2 && "${b[12]}" == 2 && "${b[13]}" == 8 ]]
}
