# shellcheck shell=bash
# PostgreSQL (one server) from the machine's Debian package (apt-get install postgresql): a
# database for the integration tests to ingest, not a backend of Lodestar. Started only when
# named (`deploy/servers.sh start postgres`).
#
# PostgreSQL refuses to run as root: as root, initdb and the server run as $POSTGRES_USER (the
# package's `postgres` user), with the data under $POSTGRES_ROOT_BASE when some parent of
# LODESTAR_SERVERS_HOME is closed to other users (root's home is 0700). The server listens on
# 127.0.0.1:$POSTGRES_PORT (TCP only, password auth) with the superuser $POSTGRES_SUPERUSER.

POSTGRES_PORT="${LODESTAR_POSTGRES_PORT:-5433}"
POSTGRES_START_TIMEOUT="${LODESTAR_POSTGRES_START_TIMEOUT:-60}"
POSTGRES_USER="${LODESTAR_POSTGRES_USER:-postgres}"
POSTGRES_SUPERUSER="${LODESTAR_POSTGRES_SUPERUSER:-lodestar}"
POSTGRES_PASSWORD="${LODESTAR_POSTGRES_PASSWORD:-lodestar}"
POSTGRES_ROOT_BASE="${LODESTAR_POSTGRES_ROOT_BASE:-/var/lib/lodestar-postgres}"

postgres_ports() { echo "$POSTGRES_PORT"; }
postgres_describe() { echo "postgresql://$POSTGRES_SUPERUSER@127.0.0.1:$POSTGRES_PORT/postgres"; }

# The newest installed server's bin/ folder (Debian: /usr/lib/postgresql/<major>/bin).
_postgres_bin() {
  local dir
  dir="$(find /usr/lib/postgresql -mindepth 2 -maxdepth 2 -name bin 2>/dev/null | sort -V | tail -n 1)"
  [[ -n "$dir" && -x "$dir/postgres" && -x "$dir/initdb" ]] || return 1
  printf '%s' "$dir"
}

postgres_version() { "$(_postgres_bin)/postgres" --version 2>/dev/null | awk '{print $3}' || echo "not installed"; }

_postgres_as_other_user() { ((EUID == 0)); }

# True when every directory from / down to $1 lets other users through (o+x).
_postgres_traversable() {
  local d="$1"
  while [[ -n "$d" && "$d" != "/" ]]; do
    [[ ! -e "$d" || "$(stat -c %A "$d")" == ?????????[xt] ]] || return 1
    d="$(dirname "$d")"
  done
}

postgres_run_dir() {
  if ! _postgres_as_other_user || _postgres_traversable "$RUN_ROOT"; then
    echo "$RUN_ROOT/postgres"
  elif [[ "$RUN_ROOT" == "$DEFAULT_RUN_ROOT" ]]; then
    echo "$POSTGRES_ROOT_BASE/run"
  else
    echo "$POSTGRES_ROOT_BASE/run-$(cksum <<<"$RUN_ROOT" | cut -d' ' -f1)"
  fi
}

# Nothing to download: the server comes from the machine's package.
postgres_fetch() {
  _postgres_bin >/dev/null ||
    die "postgres: no PostgreSQL server under /usr/lib/postgresql/*/bin (install it: apt-get install -y postgresql)"
  if _postgres_as_other_user; then
    id -u "$POSTGRES_USER" >/dev/null 2>&1 ||
      die "postgres: user '$POSTGRES_USER' does not exist (the postgresql package creates it; or set LODESTAR_POSTGRES_USER)"
  fi
}

# _postgres_as_user: the command prefix that runs a program as the server's user (none when not root).
_postgres_as_user() {
  _postgres_as_other_user && printf '%s\n' setpriv --reuid="$POSTGRES_USER" --regid="$POSTGRES_USER" --init-groups
  return 0
}

postgres_launch() {
  local run bin; run="$(postgres_run_dir)"; bin="$(_postgres_bin)"
  local -a as_user; mapfile -t as_user < <(_postgres_as_user)
  mkdir -p "$run/logs" "$run/socket"
  _postgres_as_other_user && chown -R "$POSTGRES_USER:" "$run"
  local log="$run/logs/postgres.log"
  rotate_log "$log"
  _postgres_as_other_user && chown "$POSTGRES_USER:" "$log"
  if [[ ! -f "$run/data/PG_VERSION" ]]; then
    # First start (or after reset): a cluster whose superuser logs in with a password over TCP.
    local pwfile="$run/.pwfile"
    printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
    _postgres_as_other_user && chown "$POSTGRES_USER:" "$pwfile"
    chmod 0600 "$pwfile"
    if ! "${as_user[@]}" "$bin/initdb" -D "$run/data" -U "$POSTGRES_SUPERUSER" --pwfile="$pwfile" \
        --auth-host=scram-sha-256 --auth-local=peer --encoding=UTF8 --locale=C.UTF-8 >>"$log" 2>&1; then
      rm -f "$pwfile"
      tail -n 20 "$log" >&2
      die "postgres: initdb of $run/data failed (log: $log)"
    fi
    rm -f "$pwfile"
  fi
  launch postgres "$log" "${as_user[@]}" "$bin/postgres" -D "$run/data" -p "$POSTGRES_PORT" \
    -c listen_addresses="$BIND_HOST" -c unix_socket_directories="$run/socket" -c max_connections=50 -c shared_buffers=64MB
}

# Healthy = the server accepts connections (pg_isready over TCP).
postgres_healthy() {
  "$(_postgres_bin)/pg_isready" -q -h "$BIND_HOST" -p "$POSTGRES_PORT" -t 3 2>/dev/null
}
