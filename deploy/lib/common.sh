# shellcheck shell=bash
# Shared helpers for deploy/servers.sh and the per-server files in deploy/lib/.
# Sourced, not run. Expects DEPLOY_DIR to be set by the caller.

SERVERS_HOME="${LODESTAR_SERVERS_HOME:-${HOME:?HOME is not set}/.cache/lodestar-servers}"
# Maven's local repository for the fetched artifacts: our own, so that `rm -rf` of SERVERS_HOME
# really removes everything and a developer's ~/.m2 is left alone.
SERVERS_M2="${LODESTAR_SERVERS_M2:-$SERVERS_HOME/m2}"
DIST_ROOT="$SERVERS_HOME/dist"     # unpacked/copied server jars, one folder per name-version
BUILD_ROOT="$SERVERS_HOME/build"   # copies of deploy/maven/*/pom.xml and Maven logs
# Per-server conf/, data/, logs/ and pid file. Another run dir (LODESTAR_SERVERS_RUN, with other
# ports) is a second, private set of servers on the same downloads: every command acts only on
# the servers of its own run dir.
DEFAULT_RUN_ROOT="$SERVERS_HOME/run"
RUN_ROOT="$(realpath -m -- "${LODESTAR_SERVERS_RUN:-$DEFAULT_RUN_ROOT}")"
BIND_HOST="127.0.0.1"

_ts() { date +%H:%M:%S; }
info() { printf '%s %s\n' "$(_ts)" "$*"; }
warn() { printf '%s WARNING: %s\n' "$(_ts)" "$*" >&2; }
die() { printf '%s ERROR: %s\n' "$(_ts)" "$*" >&2; exit 1; }

# --- Java ---------------------------------------------------------------------------------------

JAVA_BIN=""
JAVA_HOME_DIR=""
JAVA_MAJOR=""

# Finds java (JAVA_HOME first, then PATH), requires >= 17; sets JAVA_BIN, JAVA_HOME_DIR, JAVA_MAJOR.
require_java() {
  [[ -n "$JAVA_BIN" ]] && return 0
  local java
  if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]]; then
    java="$JAVA_HOME/bin/java"
  else
    java="$(command -v java || true)"
    [[ -n "$java" ]] || die "java not found: install a JDK 17 (e.g. apt-get install openjdk-17-jdk-headless) or set JAVA_HOME"
  fi
  java="$(readlink -f "$java")"
  local spec
  spec="$("$java" -XshowSettings:properties -version 2>&1 | awk -F'= ' '/java.specification.version/ {print $2; exit}')"
  [[ "$spec" =~ ^[0-9]+$ ]] || die "could not read the Java version of $java"
  ((spec >= 17)) || die "$java is Java $spec; Kafka 4 and Cassandra 5 here need Java 17 (set JAVA_HOME)"
  JAVA_BIN="$java"
  JAVA_HOME_DIR="$(dirname "$(dirname "$java")")"
  JAVA_MAJOR="$spec"
}

# --- Maven --------------------------------------------------------------------------------------

# mvn_run NAME GOALS... -- runs Maven on a copy of deploy/maven/NAME/pom.xml (copied so that no
# target/ or other output ever lands in the repository), with strict checksum checking.
# Extra -Dkey=value arguments are passed through. The output goes to $BUILD_ROOT/NAME/mvn.log.
mvn_run() {
  local name="$1"; shift
  command -v mvn >/dev/null || die "mvn not found: install Maven (apt-get install maven)"
  local build="$BUILD_ROOT/$name"
  mkdir -p "$build" "$SERVERS_M2"
  cp "$DEPLOY_DIR/maven/$name/pom.xml" "$build/pom.xml"
  local log="$build/mvn.log"
  # Maven itself needs a JDK; hand it the one we checked.
  if ! JAVA_HOME="$JAVA_HOME_DIR" mvn -B -C --no-transfer-progress \
      -Dmaven.repo.local="$SERVERS_M2" \
      -Ddependency.plugin.version="$MAVEN_DEPENDENCY_PLUGIN_VERSION" \
      -f "$build/pom.xml" "$@" >"$log" 2>&1; then
    echo "---- last lines of $log ----" >&2
    grep -E '^\[(ERROR|WARNING)\]' "$log" | head -n 20 >&2 || true
    tail -n 15 "$log" >&2
    die "Maven could not fetch $name (network to Maven Central? full log: $log)"
  fi
}

# --- ports and processes ------------------------------------------------------------------------

# port_open PORT: true when something accepts TCP connections on BIND_HOST:PORT.
port_open() {
  timeout 3 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$BIND_HOST" "$1" 2>/dev/null
}

# port_owner PORT: a short description of who listens on PORT (best effort).
port_owner() {
  local line=""
  if command -v ss >/dev/null; then
    line="$(ss -Hltnp "sport = :$1" 2>/dev/null | head -n 1)"
  fi
  if [[ "$line" == *users:* ]]; then
    sed -E 's/.*users:\(\("([^"]+)",pid=([0-9]+).*/\1 (pid \2)/' <<<"$line"
  elif [[ -n "$line" ]]; then
    printf "another user's process (run as root or see: ss -ltnp)"
  else
    printf 'an unknown process (see: ss -ltnp)'
  fi
}

# check_ports_free SERVER PORT...: dies with a clear message when a port is taken.
check_ports_free() {
  local server="$1"; shift
  local p
  for p in "$@"; do
    if port_open "$p"; then
      die "$server cannot start: port $BIND_HOST:$p is already in use by: $(port_owner "$p")
       Stop that process, or pick other ports (see deploy/README.md: LODESTAR_*_PORT)."
    fi
  done
}

pid_file() { printf '%s/%s.pid' "$(run_dir "$1")" "$1"; }

# The markers a launched SERVER carries on its java command line: which server, which downloads,
# which run dir. Every process we launch also carries LODESTAR_DEV_SERVER=SERVER and
# LODESTAR_DEV_RUN=<its run dir> in its environment (also while bin/opensearch is still running
# its helper JVMs). A recycled pid, or a server of another run dir, is never mistaken for ours.
server_markers() {
  printf '%s\n' "-Dlodestar.server=$1" "-Dlodestar.home=$SERVERS_HOME" "-Dlodestar.run=$(run_dir "$1")"
}

# _of_this_run CMDLINE_FILE SERVER: true when the java command line in CMDLINE_FILE is SERVER's
# of our run dir. A server started before run dirs had a marker (no -Dlodestar.run) belongs to
# the default run dir of its LODESTAR_SERVERS_HOME.
_of_this_run() {
  grep -qzxF -- "-Dlodestar.server=$2" "$1" 2>/dev/null || return 1
  grep -qzxF -- "-Dlodestar.run=$(run_dir "$2")" "$1" 2>/dev/null && return 0
  [[ "$RUN_ROOT" == "$DEFAULT_RUN_ROOT" ]] &&
    grep -qzxF -- "-Dlodestar.home=$SERVERS_HOME" "$1" 2>/dev/null &&
    ! grep -qz -- "^-Dlodestar.run=" "$1" 2>/dev/null
}

# _is_server PID SERVER: true when PID is SERVER of our run dir.
_is_server() {
  [[ -r "/proc/$1/cmdline" ]] || return 1
  _of_this_run "/proc/$1/cmdline" "$2" && return 0
  grep -qzxF -- "LODESTAR_DEV_SERVER=$2" "/proc/$1/environ" 2>/dev/null &&
    grep -qzxF -- "LODESTAR_DEV_RUN=$(run_dir "$2")" "/proc/$1/environ" 2>/dev/null
}

# server_pid SERVER: prints the pid of our running SERVER (from its pid file) and returns 0, or 1.
server_pid() {
  local f pid
  f="$(pid_file "$1")"
  [[ -r "$f" ]] || return 1
  pid="$(tr -dc '0-9' <"$f")"
  [[ -n "$pid" ]] || return 1
  _is_server "$pid" "$1" || return 1
  printf '%s' "$pid"
}

# still_starting SERVER: the process this script launched for SERVER is alive though not yet
# recognisable as SERVER (the moment between launch's fork and its exec, when neither its command
# line nor its environment names it yet). On a loaded machine that moment can come late: the
# check once ran right after a launch whose storage format had taken 7 s, past a fixed 5 s grace
# counted from the start, and a starting broker was reported as exited. So no time limit decides
# but the process itself: bash reaps a child that exits, and its /proc entry goes.
still_starting() {
  local pid="${LAUNCHED[$1]:-}" state
  [[ -n "$pid" ]] || return 1
  state="$(sed -E 's/^.*\) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1)"
  [[ -n "$state" && "$state" != Z && "$state" != X ]]
}

# exit_reason SERVER: sets EXIT_REASON to how the process this script launched for SERVER ended,
# once it has: "exited with status N", "killed by SIGNAME"; "exited" when another script launched
# it. (Not for $(...): only this shell can wait for its child.)
exit_reason() {
  local pid="${LAUNCHED[$1]:-}" status
  EXIT_REASON="exited"
  [[ -n "$pid" ]] || return 0
  wait "$pid" 2>/dev/null && status=0 || status=$?
  if ((status > 128)); then
    EXIT_REASON="killed by SIG$(kill -l $((status - 128)))"
    ((status - 128 != 9)) || EXIT_REASON+=" (out of memory? see dmesg)"
  else
    EXIT_REASON="exited with status $status"
  fi
}

# log_reason LOG [N]: the last N (default 5) lines of a server's LOG that say what went wrong
# (errors, fatal errors, exceptions and their causes), each cut to 300 characters; not the
# configuration a server dumps at start (Kafka's tab-indented `key = value` lines, also those of
# its storage format run before it) nor stack frames.
log_reason() {
  [[ -s "$1" ]] || return 0
  grep -E '(^|[^[:alnum:]_])(ERROR|FATAL|SEVERE|PANIC)([^[:alnum:]_]|$)|Exception|Error:|^Caused by|[Aa]ddress already in use|[Nn]o space left' "$1" |
    grep -vE '^[[:space:]]+(at |[[:alnum:]._-]+ = )' | tail -n "${2:-5}" | cut -c1-300 || true
}

# explain_failure SERVER LOG WHAT: one line "ERROR: SERVER WHAT", then what LOG says went wrong
# (log_reason; else its last line that is not configuration), indented, and where LOG is, on stderr.
explain_failure() {
  local server="$1" log="$2" what="$3" reason
  printf '%s ERROR: %s %s\n' "$(_ts)" "$server" "$what" >&2
  reason="$(log_reason "$log")"
  if [[ -n "$reason" ]]; then
    printf '  its log says:\n' >&2
  elif [[ -s "$log" ]]; then
    printf '  its log names no error; its last line:\n' >&2
    reason="$(grep -vE '^[[:space:]]+[[:alnum:]._-]+ = ' "$log" | tail -n 1 | cut -c1-300)"
  fi
  [[ -z "$reason" ]] || sed 's/^/    /' <<<"$reason" >&2
  local crash
  crash="$(find "$(dirname "$log")" -maxdepth 1 -name "hs_err_pid${LAUNCHED[$server]:-none}.log" 2>/dev/null)"
  [[ -z "$crash" ]] || printf '  the JVM crashed: %s\n' "$crash" >&2
  printf '  full log: %s\n' "$log" >&2
}

# find_server_pid SERVER: like server_pid, but falls back to scanning /proc for the markers of
# our run dir (covers a pid file lost or not yet written).
find_server_pid() {
  server_pid "$1" && return 0
  local f pid
  while IFS= read -r f; do
    pid="${f#/proc/}"
    pid="${pid%/cmdline}"
    if _of_this_run "$f" "$1"; then
      printf '%s' "$pid"
      return 0
    fi
  done < <(grep -lzxF -- "-Dlodestar.server=$1" /proc/[0-9]*/cmdline 2>/dev/null || true)
  return 1
}

rss_mb() {
  awk '/^VmRSS:/ { printf "%d", $2 / 1024 }' "/proc/$1/status" 2>/dev/null || printf '?'
}

# stop_pid SERVER PID TIMEOUT: SIGTERM (unless already sent), wait, then SIGKILL.
stop_pid() {
  local server="$1" pid="$2" timeout="$3" i
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < timeout * 2; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.5
  done
  warn "$server (pid $pid) did not stop within ${timeout}s; killing it"
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 20; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.5
  done
  die "$server (pid $pid) is still alive after SIGKILL"
}

# rotate_log FILE: keeps the previous run's log as FILE.1.
rotate_log() {
  [[ -s "$1" ]] && mv -f "$1" "$1.1"
  : >"$1"
}

# The pid of each server this script launched (still_starting, exit_reason).
declare -A LAUNCHED=()

# launch SERVER LOG CMD...: starts CMD detached (own session, stdin closed, output to LOG) and
# writes its pid to the pid file. CMD must exec the JVM in the end so that the pid is the JVM's.
launch() {
  local server="$1" log="$2"; shift 2
  # 9>&-: the server must not inherit (and keep holding) servers.sh's lock.
  LODESTAR_DEV_SERVER="$server" LODESTAR_DEV_RUN="$(run_dir "$server")" setsid "$@" </dev/null >>"$log" 2>&1 9>&- &
  local pid=$!
  LAUNCHED[$server]=$pid
  printf '%s\n' "$pid" >"$(pid_file "$server")"
}

# render TEMPLATE OUT KEY=VALUE...: copies TEMPLATE to OUT replacing each @KEY@ by VALUE.
render() {
  local template="$1" out="$2"; shift 2
  local args=() kv key val
  for kv in "$@"; do
    key="${kv%%=*}"
    val="${kv#*=}"
    val="$(printf '%s' "$val" | sed -e 's/[\\|&]/\\&/g')"
    args+=(-e "s|@${key}@|${val}|g")
  done
  sed "${args[@]}" "$template" >"$out"
  if grep -q '@[A-Z_][A-Z_]*@' "$out"; then
    die "unfilled placeholder in $out: $(grep -o '@[A-Z_][A-Z_]*@' "$out" | sort -u | tr '\n' ' ')"
  fi
}

# jvm_options_file FILE: prints the JVM flags of an options file (lines starting with '-').
jvm_options_file() {
  grep -E '^[[:space:]]*-' "$1" | sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//'
}

# fetch_locked SERVER: SERVER's fetch, one at a time per LODESTAR_SERVERS_HOME (the downloads are
# shared by every run dir).
fetch_locked() {
  if command -v flock >/dev/null; then
    mkdir -p "$SERVERS_HOME"
    exec 8>"$SERVERS_HOME/.fetch.lock"
    flock -w 900 8 || die "another servers.sh still fetches into $SERVERS_HOME after 900s"
  fi
  "${1}_fetch"
  exec 8>&-
}

# stop_servers TIMEOUT SERVER...: SIGTERM to each running SERVER first, then waits for each (up to
# TIMEOUT seconds, then SIGKILL): they shut down in parallel.
stop_servers() {
  local timeout="$1" s pid; shift
  declare -A pids=()
  for s in "$@"; do
    if pid="$(find_server_pid "$s")"; then
      info "$s: stopping (pid $pid)"
      kill -TERM "$pid" 2>/dev/null || true
      pids[$s]=$pid
    else
      info "$s: not running"
      rm -f "$(pid_file "$s")"
    fi
  done
  for s in "$@"; do
    [[ -n "${pids[$s]:-}" ]] || continue
    stop_pid "$s" "${pids[$s]}" "$timeout"
    rm -f "$(pid_file "$s")"
    info "$s: stopped"
  done
}
