# Helpers the benchmark scripts share; sourced, not run. The caller sets
# `work` (a scratch directory it removes) before calling start_postgres, and
# calls stop_postgres from its cleanup.

# Builds the bare WebSocket echo server (bench/ws-ceiling) with the
# workspace's lock, so the crates it shares with Ludus match; sets ceiling
# to its path.
build_ceiling() {
  cp Cargo.lock bench/ws-ceiling/Cargo.lock
  (cd bench/ws-ceiling && CARGO_TARGET_DIR="$PWD/../../target/ws-ceiling" cargo build --release >/dev/null)
  rm -f bench/ws-ceiling/Cargo.lock
  ceiling=$PWD/target/ws-ceiling/release/ws-ceiling
}

as_pg() { if [ "$EUID" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

# A free port whose predecessor is free too: Nakama's and Ludus's gRPC port
# is socket.port - 1.
free_port() { free_pair; }
free_pair() {
  python3 - <<'PY'
import socket
for _ in range(100):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]
    try:
        t = socket.socket(); t.bind(("127.0.0.1", p - 1)); t.close(); s.close(); print(p); break
    except OSError:
        s.close()
PY
}

# A throwaway PostgreSQL in $work/pg on core 0 (beside the client: core 1
# measures the server alone) or on the CPUs given (a taskset list),
# installed first if missing (as root); sets pg_bin and pg_port.
pg_bin=
pg_started=0
start_postgres() { # [cpus]
  pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5,5 -n -r | head -n1)
  if [ -z "$pg_bin" ]; then
    [ "$EUID" -eq 0 ] || { echo "$(basename "$0"): PostgreSQL server binaries are missing (apt-get install postgresql)" >&2; exit 1; }
    mkdir -p /etc/postgresql-common/createcluster.d
    echo 'create_main_cluster = false' >/etc/postgresql-common/createcluster.d/ludus-tests.conf
    DEBIAN_FRONTEND=noninteractive apt-get update -qq </dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql </dev/null >/dev/null
    pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -t/ -k5,5 -n -r | head -n1)
  fi
  if [ "$EUID" -eq 0 ] && ! id postgres >/dev/null 2>&1; then
    useradd --system --user-group --no-create-home --shell /usr/sbin/nologin postgres
  fi
  mkdir -p "$work/pg/data" "$work/pg/sock"
  [ "$EUID" -eq 0 ] && chown -R postgres: "$work/pg"
  as_pg "$pg_bin/initdb" -D "$work/pg/data" -U postgres -A trust -E UTF8 --locale=C --no-sync >"$work/initdb.log" 2>&1 ||
    { cat "$work/initdb.log" >&2; exit 1; }
  pg_port=$(free_port)
  as_pg taskset -c "${1:-0}" "$pg_bin/pg_ctl" -D "$work/pg/data" -l "$work/pg/postgres.log" -w -t 60 \
    -o "-k $work/pg/sock -c listen_addresses=127.0.0.1 -p $pg_port -c fsync=off -c full_page_writes=off -c max_connections=300" \
    start >/dev/null
  pg_started=1
}

stop_postgres() {
  if [ "$pg_started" = 1 ]; then
    as_pg "$pg_bin/pg_ctl" -D "$work/pg/data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
}

# Waits for the server on $port to answer its health check; otherwise
# prints its log and exits.
wait_healthy() { # name log
  for _ in $(seq 300); do curl -sf "http://127.0.0.1:$port/healthcheck" >/dev/null && return; sleep 0.1; done
  echo "$(basename "$0"): $1 did not start:" >&2
  cat "$2" >&2
  exit 1
}

# Nakama alone on core 1 with bench/modules, on a fresh database of the
# throwaway PostgreSQL (start_postgres first); sets port and pid.
start_nakama() { # binary
  local db="postgres@127.0.0.1:$pg_port/nakama"
  "$1" migrate up --database.address "$db" >"$work/nakama-migrate.log" 2>&1 ||
    { cat "$work/nakama-migrate.log" >&2; exit 1; }
  port=$(free_pair)
  taskset -c 1 "$1" --name nakama1 --database.address "$db" \
    --runtime.path "$PWD/bench/modules" --socket.port "$port" --console.port "$(free_port)" \
    --logger.level WARN --data_dir "$work/nakama-data" >"$work/nakama.log" 2>&1 &
  pid=$!
  wait_healthy nakama "$work/nakama.log"
}
