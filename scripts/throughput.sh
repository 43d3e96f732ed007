#!/bin/bash
# The server's throughput with wrk (installed from Debian when missing), each figure beside its
# reference in the same run: `serve` (release build) on SQLite with 5,000 seeded backups;
# GET /healthz and audited POST /v1/ops/lookup at 16 and 64 connections; /healthz from one
# connection on the probe listener (--probe-listen) and on the API listener, idle and while 64
# connections run lookups. SECS=N sets the seconds per point (default 8).
set -e
cd "$(dirname "$0")/.."
command -v wrk >/dev/null || ./scripts/install-deps.sh --wrk >/dev/null
swift build -c release --product backupctl >/dev/null
B=$PWD/.build/release/backupctl
D=$(mktemp -d /tmp/wrk27.XXXX)
cd $D
$B --db ./c.db init --admin root --format json > init.json 2>/dev/null
TOKEN=$(python3 -c "import json;print(json.load(open('init.json'))['token'])")
BACKUPCTL_TOKEN=$TOKEN $B --db ./c.db --tenant sandbox seed --backups 5000 --seed 3 >/dev/null 2>&1
KEY=$(python3 -c "
import sqlite3;db=sqlite3.connect('c.db')
print(db.execute(\"SELECT substr(pk, 9) FROM factor_lookup f WHERE pk LIKE 'MAIN#PK|%' LIMIT 1\").fetchone()[0])")
$B serve --db ./c.db --listen 127.0.0.1:18801 --probe-listen 127.0.0.1:18802 --operator-rate 0 > serve.out 2> serve.err &
SP=$!
trap "kill $SP 2>/dev/null; rm -rf $D" EXIT
for i in $(seq 1 50); do grep -q listening serve.out && break; sleep 0.1; done
cat > lookup.lua <<LUA
wrk.method = "POST"
wrk.body = '{"query":{"kind":"passkey","credentialId":"$KEY"}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $TOKEN"
wrk.headers["Backupctl-Tenant"] = "sandbox"
LUA
curl -s -X POST -H "Authorization: Bearer $TOKEN" -H "Backupctl-Tenant: sandbox" -H "Content-Type: application/json" -d "{\"query\":{\"kind\":\"passkey\",\"credentialId\":\"$KEY\"}}" http://127.0.0.1:18801/v1/ops/lookup | head -c 200; echo
for c in 16 64; do
  echo "== healthz c=$c"; wrk -t2 -c$c -d${SECS:-8}s --latency http://127.0.0.1:18801/healthz | grep -E "Requests/sec|99%|50%"
  echo "== lookup c=$c"; wrk -t2 -c$c -d${SECS:-8}s --latency -s lookup.lua http://127.0.0.1:18801/v1/ops/lookup | grep -E "Requests/sec|99%|50%|Non-2xx"
done
echo "== probe healthz c=1 idle"; wrk -t1 -c1 -d4s --latency http://127.0.0.1:18802/healthz | grep -E "Requests/sec|99%|50%"
echo "== probe healthz c=1 while 64 lookups"
wrk -t1 -c64 -d${SECS:-8}s -s lookup.lua http://127.0.0.1:18801/v1/ops/lookup > load.txt &
LP=$!
sleep 1
wrk -t1 -c1 -d5s --latency http://127.0.0.1:18802/healthz | grep -E "Requests/sec|99%|50%"
echo "== api healthz c=1 while 64 lookups"
wrk -t1 -c1 -d2s --latency http://127.0.0.1:18801/healthz | grep -E "Requests/sec|99%|50%"
wait $LP; grep -E "Requests/sec" load.txt
