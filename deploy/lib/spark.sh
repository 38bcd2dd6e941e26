# shellcheck shell=bash
# A Spark standalone master and workers, run from the jars of the pyspark package (the PyPI
# distribution Lodestar already depends on: its bin/ has spark-class but its sbin/ lacks
# start-master.sh and start-worker.sh), as spark-class would run them:
# java -cp "<pyspark>/jars/*" org.apache.spark.deploy.master.Master | ...worker.Worker.

SPARK_DAEMON_HEAP="${LODESTAR_SPARK_DAEMON_HEAP:-256m}"
SPARK_WORKER_MEMORY="${LODESTAR_SPARK_WORKER_MEMORY:-1g}"   # what a worker offers its executors
SPARK_WORKER_CORES="${LODESTAR_SPARK_WORKER_CORES:-1}"
SPARK_MASTER_PORT="${LODESTAR_SPARK_MASTER_PORT:-7077}"
SPARK_START_TIMEOUT="${LODESTAR_SPARK_START_TIMEOUT:-120}"

# spark_home: the pyspark package's folder (LODESTAR_SPARK_HOME, else found with the repository's
# virtualenv Python, else python3).
spark_home() {
  if [[ -n "${LODESTAR_SPARK_HOME:-}" ]]; then
    printf '%s' "$LODESTAR_SPARK_HOME"
    return 0
  fi
  local python="$DEPLOY_DIR/../.venv/bin/python"
  [[ -x "$python" ]] || python="python3"
  "$python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))' 2>/dev/null ||
    die "spark: pyspark is not importable by $python (pip install pyspark, or set LODESTAR_SPARK_HOME)"
}

# spark_launch_node NODE CLASS HOST ARGS...: runs the Spark daemon CLASS bound to HOST.
spark_launch_node() {
  local node="$1" class="$2" host="$3"; shift 3
  local run home; run="$(run_dir "$node")"; home="$(spark_home)"
  [[ -d "$home/jars" ]] || die "spark: $home has no jars/ (not a pyspark installation)"
  mkdir -p "$run/logs" "$run/work"
  local log="$run/logs/$node.log"
  rotate_log "$log"
  # The launcher a worker builds executors' commands with reads the Scala version from the
  # environment (load-spark-env.sh sets it in a distribution): that of the spark-core jar.
  local core scala
  core="$(compgen -G "$home/jars/spark-core_*.jar" | head -n 1)"
  scala="${core##*/spark-core_}"; scala="${scala%%-*}"
  [[ -n "$core" && -n "$scala" ]] || die "spark: no spark-core_<scala>-<version>.jar in $home/jars"
  local -a markers; mapfile -t markers < <(server_markers "$node")
  SPARK_HOME="$home" SPARK_SCALA_VERSION="$scala" SPARK_LOCAL_IP="$host" SPARK_WORKER_DIR="$run/work" \
    launch "$node" "$log" "$JAVA_BIN" "${markers[@]}" "-Xmx$SPARK_DAEMON_HEAP" \
    -cp "$home/jars/*" "$class" --host "$host" "$@"
}

# spark_workers_at_least HOST N: the master's web UI on HOST lists at least N ALIVE workers.
spark_workers_at_least() {
  local body
  body="$(_http_get "$1" "$SPARK_MASTER_UI_PORT" /json/)" || return 1
  [[ "$body" =~ \"aliveworkers\"\ *:\ *([0-9]+) ]] && ((BASH_REMATCH[1] >= $2))
}
