# shellcheck shell=bash
# OpenSearch 2.x (a node, or the nodes of a cluster) from the integ-test-zip distribution on Maven Central, plus the modules
# lang-painless, analysis-common, mapper-extras and reindex.
#
# OpenSearch refuses to run as root. When this script runs as root it starts OpenSearch as the
# unprivileged system user $OPENSEARCH_USER (created with useradd if missing). That user must be able
# to reach the distribution and the run dir: if some parent of LODESTAR_SERVERS_HOME is closed to
# other users (root's home is 0700), both live under $OPENSEARCH_ROOT_BASE instead.

OPENSEARCH_PORT="${LODESTAR_OPENSEARCH_PORT:-9200}"
OPENSEARCH_TRANSPORT_PORT="${LODESTAR_OPENSEARCH_TRANSPORT_PORT:-9300}"
OPENSEARCH_HEAP="${LODESTAR_OPENSEARCH_HEAP:-512m}"
OPENSEARCH_START_TIMEOUT="${LODESTAR_OPENSEARCH_START_TIMEOUT:-180}"
OPENSEARCH_USER="${LODESTAR_OPENSEARCH_USER:-lodestar-os}"
OPENSEARCH_ROOT_BASE="${LODESTAR_OPENSEARCH_ROOT_BASE:-/var/lib/$OPENSEARCH_USER}"
OPENSEARCH_DIST="$DIST_ROOT/opensearch-$OPENSEARCH_VERSION"

opensearch_ports() { echo "$OPENSEARCH_PORT $OPENSEARCH_TRANSPORT_PORT"; }
opensearch_describe() { echo "http://127.0.0.1:$OPENSEARCH_PORT (transport $OPENSEARCH_TRANSPORT_PORT)"; }
opensearch_version() { echo "$OPENSEARCH_VERSION"; }

# True when every directory from / down to $1 lets other users through (o+x).
_world_traversable() {
  local d="$1"
  while [[ -n "$d" && "$d" != "/" ]]; do
    if [[ -e "$d" ]]; then
      [[ "$(stat -c %A "$d")" == ?????????[xt] ]] || return 1
    fi
    d="$(dirname "$d")"
  done
  return 0
}

# Where OpenSearch's conf/, data/, logs/ live, and which distribution folder it runs from.
_opensearch_separate_base() { ((EUID == 0)) && ! _world_traversable "$SERVERS_HOME"; }
# (Another run dir than the default one gets its own folder there, named by its path's checksum.)
# opensearch_run_dir [NODE]: NODE (default opensearch; a cluster's nodes have other names).
opensearch_run_dir() {
  local node="${1:-opensearch}" suffix=""
  [[ "$node" == opensearch ]] || suffix="-$node"
  if ! _opensearch_separate_base; then
    echo "$RUN_ROOT/$node"
  elif [[ "$RUN_ROOT" == "$DEFAULT_RUN_ROOT" ]]; then
    echo "$OPENSEARCH_ROOT_BASE/run$suffix"
  else
    echo "$OPENSEARCH_ROOT_BASE/run-$(cksum <<<"$RUN_ROOT" | cut -d' ' -f1)$suffix"
  fi
}
_opensearch_home() {
  if _opensearch_separate_base; then echo "$OPENSEARCH_ROOT_BASE/opensearch-$OPENSEARCH_VERSION"; else echo "$OPENSEARCH_DIST"; fi
}

opensearch_fetch() {
  [[ -f "$OPENSEARCH_DIST/.complete" ]] && return 0
  info "opensearch: fetching org.opensearch.distribution.integ-test-zip:opensearch:$OPENSEARCH_VERSION and modules from Maven Central"
  local stage="$DIST_ROOT/.opensearch-$OPENSEARCH_VERSION.tmp"
  rm -rf "$OPENSEARCH_DIST" "$stage"
  mkdir -p "$stage"
  mvn_run opensearch dependency:unpack@dist dependency:copy@modules \
    -Dopensearch.version="$OPENSEARCH_VERSION" \
    -Ddist.dir="$stage" -Dmodules.dir="$stage/opensearch-$OPENSEARCH_VERSION/modules"
  local home="$stage/opensearch-$OPENSEARCH_VERSION"
  [[ -f "$home/lib/opensearch-$OPENSEARCH_VERSION.jar" ]] ||
    die "opensearch: the unpacked distribution has no lib/opensearch-$OPENSEARCH_VERSION.jar ($home)"
  chmod 0755 "$home"/bin/*
  mkdir -p "$home/plugins" "$home/logs"

  local name class extended description
  while IFS='|' read -r name class extended description; do
    [[ -z "$name" || "$name" == \#* ]] && continue
    [[ -d "$home/modules/$name" ]] || die "opensearch: module $name was not fetched"
    # The descriptor names the plugin class; make sure one of the module's jars really has it.
    if ! grep -qa "${class//.//}.class" "$home/modules/$name"/*.jar; then
      die "opensearch: module $name: class $class not found in its jars (OpenSearch version change?)"
    fi
    cat >"$home/modules/$name/plugin-descriptor.properties" <<EOF
# Written by deploy/lib/opensearch.sh (the published module jars carry no descriptor).
description=$description
version=$OPENSEARCH_VERSION
name=$name
classname=$class
java.version=11
opensearch.version=$OPENSEARCH_VERSION
custom.foldername=
extended.plugins=$extended
has.native.controller=false
EOF
    if [[ -f "$DEPLOY_DIR/conf/opensearch/modules/$name/plugin-security.policy" ]]; then
      cp "$DEPLOY_DIR/conf/opensearch/modules/$name/plugin-security.policy" "$home/modules/$name/"
    fi
  done <"$DEPLOY_DIR/conf/opensearch/modules/modules.txt"

  # Readable by the unprivileged user OpenSearch runs as when this script runs as root.
  chmod -R a+rX "$home"
  mv "$home" "$OPENSEARCH_DIST"
  rm -rf "$stage"
  touch "$OPENSEARCH_DIST/.complete"
}

# Creates the unprivileged user (root only).
_opensearch_ensure_user() {
  id -u "$OPENSEARCH_USER" >/dev/null 2>&1 && return 0
  command -v useradd >/dev/null || die "opensearch: cannot create user $OPENSEARCH_USER: useradd not found"
  info "opensearch: creating system user $OPENSEARCH_USER (OpenSearch refuses to run as root)"
  local nologin; nologin="$(command -v nologin || echo /usr/sbin/nologin)"
  useradd --system --user-group --home-dir "$OPENSEARCH_ROOT_BASE" --no-create-home \
    --shell "$nologin" --comment "Lodestar dev OpenSearch" "$OPENSEARCH_USER" ||
    die "opensearch: useradd $OPENSEARCH_USER failed"
}

opensearch_launch() {
  opensearch_launch_node opensearch "$DEPLOY_DIR/conf/opensearch/opensearch.yml" \
    HOST="$BIND_HOST" PORT="$OPENSEARCH_PORT" TRANSPORT_PORT="$OPENSEARCH_TRANSPORT_PORT"
}

# opensearch_launch_node NODE TEMPLATE KEY=VALUE...: renders TEMPLATE (with DATA_DIR, LOGS_DIR and
# the KEY=VALUEs) into NODE's run dir and launches NODE.
opensearch_launch_node() {
  local node="$1" template="$2"; shift 2
  local run home; run="$(run_dir "$node")"; home="$(_opensearch_home)"
  local -a as_user=()
  if ((EUID == 0)); then
    _opensearch_ensure_user
    if _opensearch_separate_base; then
      mkdir -p "$OPENSEARCH_ROOT_BASE"
      chmod 0755 "$OPENSEARCH_ROOT_BASE"
      if [[ ! -f "$home/.complete" ]]; then
        info "opensearch: copying the distribution to $home (readable by $OPENSEARCH_USER)"
        rm -rf "$home"
        cp -a "$OPENSEARCH_DIST" "$home.tmp"
        mv "$home.tmp" "$home"
      fi
    fi
    as_user=(setpriv "--reuid=$OPENSEARCH_USER" "--regid=$OPENSEARCH_USER" --init-groups)
  fi
  mkdir -p "$run/conf" "$run/data" "$run/logs"
  render "$template" "$run/conf/opensearch.yml" DATA_DIR="$run/data" LOGS_DIR="$run/logs" "$@"
  render "$DEPLOY_DIR/conf/opensearch/jvm.options" "$run/conf/jvm.options" \
    HEAP="$OPENSEARCH_HEAP" LOGS_DIR="$run/logs"
  cp "$DEPLOY_DIR/conf/opensearch/log4j2.properties" "$run/conf/log4j2.properties"
  local log="$run/logs/$node.log"
  rotate_log "$log"
  if ((EUID == 0)); then
    chown -R "$OPENSEARCH_USER:$OPENSEARCH_USER" "$run"
  fi

  # bin/opensearch runs a few helper JVMs, then execs the node: the pid stays the node's.
  launch "$node" "$log" "${as_user[@]}" env -i \
    PATH="/usr/local/bin:/usr/bin:/bin" HOME="$run" LANG=C.UTF-8 LODESTAR_DEV_SERVER="$node" \
    LODESTAR_DEV_RUN="$run" OPENSEARCH_JAVA_HOME="$JAVA_HOME_DIR" OPENSEARCH_PATH_CONF="$run/conf" \
    OPENSEARCH_JAVA_OPTS="$(server_markers "$node" | tr '\n' ' ')" \
    "$home/bin/opensearch"
}

# _http_get HOST PORT PATH: body of a plain HTTP/1.0 GET (no curl needed).
_http_get() {
  timeout 5 bash -c '
    exec 3<>"/dev/tcp/$0/$1" || exit 1
    printf "GET %s HTTP/1.0\r\nHost: %s\r\nAccept: application/json\r\n\r\n" "$2" "$0" >&3
    cat <&3
  ' "$1" "$2" "$3" 2>/dev/null
}

# Healthy = GET /_cluster/health answers with status yellow or green.
opensearch_healthy() {
  local body
  body="$(_http_get "$BIND_HOST" "$OPENSEARCH_PORT" /_cluster/health)" || return 1
  [[ "$body" =~ \"status\"\ *:\ *\"(green|yellow)\" ]]
}

# opensearch_nodes_at_least HOST PORT N: the node at HOST:PORT is in a cluster of at least N nodes
# that has elected a manager (its health is green or yellow).
opensearch_nodes_at_least() {
  local body
  body="$(_http_get "$1" "$2" /_cluster/health)" || return 1
  [[ "$body" =~ \"status\"\ *:\ *\"(green|yellow)\" ]] || return 1
  [[ "$body" =~ \"number_of_nodes\"\ *:\ *([0-9]+) ]] && ((BASH_REMATCH[1] >= $3))
}
