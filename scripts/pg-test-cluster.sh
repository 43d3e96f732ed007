#!/usr/bin/env bash
# A private PostgreSQL 15 cluster for the tests: a temp dir, 127.0.0.1 on a free port, a unix socket
# in the temp dir, run by an unprivileged user (backupctl-pg when we are root), a `backupctl` role
# with a generated password, TLS with a certificate of a test CA made for this cluster.
#
#   pg-test-cluster.sh run -- CMD…   start, run CMD with BACKUPCTL_TEST_POSTGRES (the URL) and
#                                    BACKUPCTL_TEST_POSTGRES_CA (the CA's PEM file) set, stop and remove
#                                    the cluster whatever CMD did, exit with CMD's status
#   pg-test-cluster.sh start         start one and print `export` lines for both and for
#                                    BACKUPCTL_TEST_PGDIR (use: eval "$(… start)")
#   pg-test-cluster.sh stop [DIR]    stop and remove it (DIR defaults to $BACKUPCTL_TEST_PGDIR)
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
bin=/usr/lib/postgresql/15/bin
pg_user=backupctl-pg
max_tries=20

is_root() { [ "$(id -u)" -eq 0 ]; }

# Runs a PostgreSQL program as the cluster's user, from / (it may not read our working directory).
as_pg() {
    if is_root; then (cd / && runuser -u "$pg_user" -- "$@"); else "$@"; fi
}

# Starts a cluster; sets $dir and $url.
start_cluster() {
    "$here/install-deps.sh" --postgres
    if is_root && ! id -u "$pg_user" >/dev/null 2>&1; then
        useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$pg_user"
    fi
    dir="$(mktemp -d "${TMPDIR:-/tmp}/backupctl-pg.XXXXXX")"
    if is_root; then chown "$pg_user" "$dir"; fi
    local password
    password="$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')"
    (umask 077 && printf '%s\n' "$password" >"$dir/pwfile")
    if is_root; then chown "$pg_user" "$dir/pwfile"; fi
    as_pg "$bin/initdb" --pgdata="$dir/data" --username=backupctl --pwfile="$dir/pwfile" \
        --auth-local=trust --auth-host=scram-sha-256 --encoding=UTF8 --locale=C --no-sync >"$dir/initdb.log"
    rm -f "$dir/pwfile"
    make_certificates
    # Throwaway data: durability off. The socket directory is private (0700) to the cluster's user.
    cat >>"$dir/data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
ssl = on
ssl_cert_file = '$dir/server.pem'
ssl_key_file = '$dir/server.key'
max_connections = 300
fsync = off
synchronous_commit = off
full_page_writes = off
EOF
    local try port
    for ((try = 1; try <= max_tries; try++)); do
        port=$((20000 + RANDOM % 40000))
        rm -f "$dir/server.log"
        if as_pg "$bin/pg_ctl" start --wait --timeout=60 --pgdata="$dir/data" --log="$dir/server.log" \
            --options="-p $port" >"$dir/pg_ctl.log" 2>&1; then
            url="postgres://backupctl:$password@127.0.0.1:$port/postgres"
            return 0
        fi
        # Another process took the port between our pick and the bind: pick again.
        grep -q "could not bind IPv4 address" "$dir/server.log" 2>/dev/null || break
    done
    echo "pg-test-cluster: PostgreSQL did not start ($((try - 1 < max_tries ? try : max_tries)) attempts):" >&2
    cat "$dir/pg_ctl.log" "$dir/server.log" >&2 2>/dev/null || true
    stop_cluster "$dir"
    return 1
}

# A test CA (ca.pem, exported as BACKUPCTL_TEST_POSTGRES_CA) and a server certificate for the name
# localhost only (not 127.0.0.1), so tests can use sslmode=require and verify-full, and see a host refused.
make_certificates() {
    local new_key=(-nodes -days 2 -newkey ec -pkeyopt ec_paramgen_curve:P-256)
    openssl req -x509 "${new_key[@]}" -subj /CN=backupctl-test-ca -keyout "$dir/ca.key" -out "$dir/ca.pem" 2>/dev/null
    openssl req "${new_key[@]}" -subj /CN=localhost -keyout "$dir/server.key" -out "$dir/server.csr" 2>/dev/null
    openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -set_serial 1 -days 2 \
        -extfile <(printf 'subjectAltName=DNS:localhost\n') -out "$dir/server.pem" 2>/dev/null
    rm -f "$dir/ca.key" "$dir/server.csr"
    chmod 600 "$dir/server.key"
    if is_root; then chown "$pg_user" "$dir/server.key" "$dir/server.pem"; fi
}

stop_cluster() {
    local d="$1"
    [ -d "$d" ] || return 0
    if [ -f "$d/data/postmaster.pid" ]; then
        as_pg "$bin/pg_ctl" stop --wait --mode=fast --pgdata="$d/data" >/dev/null ||
            echo "pg-test-cluster: pg_ctl stop failed for $d" >&2
    fi
    rm -rf "$d"
}

case "${1:-}" in
run)
    shift
    [ "${1:-}" = "--" ] && shift
    [ $# -gt 0 ] || { echo "usage: $0 run -- CMD…" >&2; exit 64; }
    dir=""
    child=""
    trap 'stop_cluster "$dir"' EXIT
    # A signal to this script stops the command too (TERM: a background job ignores INT), then the
    # EXIT trap removes the cluster.
    trap '[ -z "$child" ] || kill -TERM "$child" 2>/dev/null; exit 130' INT
    trap '[ -z "$child" ] || kill -TERM "$child" 2>/dev/null; exit 143' TERM
    start_cluster
    # In the background (stdin kept) so that a trap runs at once rather than after the command.
    BACKUPCTL_TEST_POSTGRES="$url" BACKUPCTL_TEST_POSTGRES_CA="$dir/ca.pem" "$@" <&0 &
    child=$!
    status=0
    wait "$child" || status=$?
    exit "$status"
    ;;
start)
    dir=""
    trap 'stop_cluster "$dir"' EXIT
    start_cluster
    trap - EXIT
    printf 'export BACKUPCTL_TEST_POSTGRES=%q\nexport BACKUPCTL_TEST_POSTGRES_CA=%q\nexport BACKUPCTL_TEST_PGDIR=%q\n' \
        "$url" "$dir/ca.pem" "$dir"
    ;;
stop)
    d="${2:-${BACKUPCTL_TEST_PGDIR:-}}"
    [ -n "$d" ] || { echo "usage: $0 stop DIR (or set BACKUPCTL_TEST_PGDIR)" >&2; exit 64; }
    case "$d" in */backupctl-pg.*) ;; *) echo "not a test cluster dir: $d" >&2; exit 64 ;; esac
    stop_cluster "$d"
    ;;
*)
    echo "usage: $0 run -- CMD… | start | stop [DIR]" >&2
    exit 64
    ;;
esac
