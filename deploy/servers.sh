#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Runs the real backends of Lodestar (Apache Kafka, Apache Cassandra, OpenSearch) on this machine
# without Docker: fetched from Maven Central with Maven, cached outside the repository, bound to
# 127.0.0.1 with small heaps. See deploy/README.md.
#
#   deploy/servers.sh start   [kafka|cassandra|opensearch ...]   fetch if needed, start, wait healthy
#   deploy/servers.sh stop    [...]                               stop (ok when already stopped)
#   deploy/servers.sh restart [...]
#   deploy/servers.sh status  [...]                               state, port, pid, RSS (exit 3 if any is down)
#   deploy/servers.sh fetch   [...]                               only download / assemble
#   deploy/servers.sh reset   [...]                               stop and wipe data (downloads kept)
#   deploy/servers.sh logs    SERVER [N]                          last N lines of the server's log
#   deploy/servers.sh --cluster CMD [NODE ...]                    the clusters: deploy/cluster.sh CMD ...
#
# With no server named, the command applies to all three; `postgres` (a database for the
# integration tests, from the machine's Debian package) only when named. LODESTAR_SERVERS_RUN (default
# $LODESTAR_SERVERS_HOME/run) names the run dir: each command acts only on the servers of its own,
# so a second set (other ports) can be started, stopped and wiped beside the default one.
set -euo pipefail

DEPLOY_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$DEPLOY_DIR/lib/versions.sh"
source "$DEPLOY_DIR/lib/common.sh"
source "$DEPLOY_DIR/lib/kafka.sh"
source "$DEPLOY_DIR/lib/cassandra.sh"
source "$DEPLOY_DIR/lib/opensearch.sh"
source "$DEPLOY_DIR/lib/postgres.sh"

ALL_SERVERS=(kafka cassandra opensearch)
# Known but started only when named: a database for the integration tests (deploy/lib/postgres.sh).
EXTRA_SERVERS=(postgres)
STOP_TIMEOUT="${LODESTAR_STOP_TIMEOUT:-60}"

run_dir() {
  case "$1" in
    opensearch) opensearch_run_dir ;;
    postgres) postgres_run_dir ;;
    *) printf '%s/%s' "$RUN_ROOT" "$1" ;;
  esac
}
log_file() { printf '%s/logs/%s.log' "$(run_dir "$1")" "$1"; }
start_timeout() {
  case "$1" in
    kafka) echo "$KAFKA_START_TIMEOUT" ;;
    cassandra) echo "$CASSANDRA_START_TIMEOUT" ;;
    opensearch) echo "$OPENSEARCH_START_TIMEOUT" ;;
    postgres) echo "$POSTGRES_START_TIMEOUT" ;;
  esac
}

usage() {
  # The comment block at the top of this file, without the shellcheck directive.
  sed -n '3,/^set -euo pipefail/p' "${BASH_SOURCE[0]}" | sed -n 's/^# \{0,1\}//p'
  exit "${1:-2}"
}

# parse_servers ARGS...: fills SERVERS (all when none given), rejects unknown names.
parse_servers() {
  SERVERS=()
  local s k known
  for s in "$@"; do
    known=0
    for k in "${ALL_SERVERS[@]}" "${EXTRA_SERVERS[@]}"; do [[ "$s" == "$k" ]] && known=1; done
    ((known)) || die "unknown server '$s' (expected: ${ALL_SERVERS[*]} ${EXTRA_SERVERS[*]})"
    SERVERS+=("$s")
  done
  ((${#SERVERS[@]})) || SERVERS=("${ALL_SERVERS[@]}")
}

# wait_healthy SERVER STARTED_AT: 0 when healthy; otherwise explains (explain_failure), stops it
# and returns 1.
wait_healthy() {
  local s="$1" t0="$2" timeout pid
  timeout="$(start_timeout "$s")"
  while :; do
    if pid="$(server_pid "$s")" && "${s}_healthy"; then
      info "$s: up on $("${s}_describe") (pid $pid, $((SECONDS - t0))s)"
      return 0
    fi
    if [[ -z "$pid" ]] && ! still_starting "$s"; then
      exit_reason "$s"
      explain_failure "$s" "$(log_file "$s")" "exited during start-up (after $((SECONDS - t0))s): $EXIT_REASON"
      return 1
    fi
    if ((SECONDS - t0 >= timeout)); then
      pid="${pid:-${LAUNCHED[$s]:-}}"
      explain_failure "$s" "$(log_file "$s")" "(pid $pid) not healthy after ${timeout}s; stopping it
  (raise LODESTAR_${s^^}_START_TIMEOUT on a slow machine)"
      stop_pid "$s" "$pid" "$STOP_TIMEOUT"
      rm -f "$(pid_file "$s")"
      return 1
    fi
    if [[ -n "$pid" ]]; then sleep 1; else sleep 0.2; fi
  done
}

cmd_fetch() {
  require_java
  local s
  for s in "${SERVERS[@]}"; do
    fetch_locked "$s"
    info "$s: $("${s}_version") ready in $DIST_ROOT"
  done
}

cmd_start() {
  require_java
  local s pid
  local -a running=()
  declare -A started_at=()
  # Check everything first so that a taken port fails fast, before any download.
  for s in "${SERVERS[@]}"; do
    if pid="$(find_server_pid "$s")"; then
      printf '%s\n' "$pid" >"$(pid_file "$s")"
      running+=("$s")
      continue
    fi
    # shellcheck disable=SC2046
    check_ports_free "$s" $("${s}_ports")
  done
  for s in "${SERVERS[@]}"; do
    [[ " ${running[*]} " == *" $s "* ]] && continue
    fetch_locked "$s"
  done
  for s in "${SERVERS[@]}"; do
    if [[ " ${running[*]} " == *" $s "* ]]; then
      info "$s: already running (pid $(server_pid "$s"))"
      started_at[$s]=$SECONDS
      continue
    fi
    mkdir -p "$(run_dir "$s")"
    info "$s: starting $("${s}_version") (log: $(log_file "$s"))"
    started_at[$s]=$SECONDS
    "${s}_launch"
  done
  local failed=0
  for s in "${SERVERS[@]}"; do
    wait_healthy "$s" "${started_at[$s]}" || failed=1
  done
  ((failed == 0)) || die "not all servers came up (see above)"
}

cmd_stop() { stop_servers "$STOP_TIMEOUT" "${SERVERS[@]}"; }

cmd_status() {
  local s pid rc=0 p busy
  for s in "${SERVERS[@]}"; do
    if pid="$(find_server_pid "$s")"; then
      local state="running"
      "${s}_healthy" || { state="unhealthy"; rc=3; }
      printf '%-11s %-10s %-42s %s\n' "$s" "$state" "$("${s}_describe")" \
        "pid $pid, rss $(rss_mb "$pid") MB, $("${s}_version"), data $(run_dir "$s")"
    else
      rc=3
      busy=""
      for p in $("${s}_ports"); do
        port_open "$p" && busy+="${busy:+; }port $p in use by $(port_owner "$p")"
      done
      printf '%-11s %-10s %-42s %s\n' "$s" "stopped" "$("${s}_describe")" "$busy"
    fi
  done
  return "$rc"
}

cmd_reset() {
  cmd_stop
  local s dir
  for s in "${SERVERS[@]}"; do
    dir="$(run_dir "$s")"
    rm -rf "$dir"
    info "$s: data wiped ($dir)"
  done
}

cmd_logs() {
  (($# >= 1)) || die "usage: servers.sh logs SERVER [LINES]"
  parse_servers "$1"
  local log; log="$(log_file "$1")"
  [[ -f "$log" ]] || die "no log yet: $log"
  echo "==> $log <=="
  tail -n "${2:-50}" "$log"
}

# One servers.sh at a time per run dir (e.g. parallel test jobs calling start); the default run
# dir's lock is LODESTAR_SERVERS_HOME/.lock.
take_lock() {
  command -v flock >/dev/null || return 0
  local lock="$SERVERS_HOME/.lock"
  [[ "$RUN_ROOT" == "$DEFAULT_RUN_ROOT" ]] || lock="$RUN_ROOT/.lock"
  mkdir -p "$(dirname "$lock")"
  exec 9>"$lock"
  if ! flock -n 9; then
    info "waiting for another servers.sh using $lock"
    flock -w 900 9 || die "another servers.sh still holds $lock after 900s"
  fi
}

main() {
  local arg
  local -a rest=()
  for arg in "$@"; do [[ "$arg" == --cluster ]] || rest+=("$arg"); done
  if ((${#rest[@]} != $#)); then  # the clusters of deploy/cluster.sh
    exec "$DEPLOY_DIR/cluster.sh" "${rest[@]}"
  fi
  (($# >= 1)) || usage
  local cmd="$1"; shift
  case "$cmd" in
    start | stop | restart | fetch | reset) take_lock ;;
  esac
  case "$cmd" in
    start) parse_servers "$@"; cmd_start ;;
    stop) parse_servers "$@"; cmd_stop ;;
    restart) parse_servers "$@"; cmd_stop; cmd_start ;;
    status) parse_servers "$@"; cmd_status ;;
    fetch) parse_servers "$@"; cmd_fetch ;;
    reset) parse_servers "$@"; cmd_reset ;;
    logs) cmd_logs "$@" ;;
    -h | --help | help) usage 0 ;;
    *) echo "unknown command '$cmd'" >&2; usage ;;
  esac
}

main "$@"
