#!/usr/bin/env bash
# Installs the Debian packages backupctl builds against, only those missing.
# Used by every Makefile target so a fresh Debian 12 machine needs nothing done by hand.
# `--postgres` installs PostgreSQL 15 (server and client) and openssl for its test certificates,
# which only the tests need (pg-test-cluster.sh); `--wrk` installs wrk (`make bench`'s throughput suite).
set -euo pipefail

# less: the default pager (the pty tests drive a real one). openssl, sqlite3, curl: the server's
# TLS tests and the running-the-server runbook make a certificate, back up the store and probe it.
packages=(libsqlite3-dev libssl-dev libsecp256k1-dev libreadline-dev pkg-config less openssl sqlite3 curl)
if [ "${1:-}" = "--postgres" ]; then
    packages=(postgresql-15 postgresql-client-15 openssl)
elif [ "${1:-}" = "--wrk" ]; then
    packages=(wrk)
fi
missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "installing: ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "need root or sudo to install ${missing[*]}" >&2; exit 1; }
    sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq "${missing[@]}" >/dev/null
