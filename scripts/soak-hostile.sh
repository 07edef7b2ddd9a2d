#!/usr/bin/env bash
# A CPU soak of `cuzk serve` with hostile clients mixed into honest load, and a `kill -9` of
# the daemon in the middle followed by a restart on the same journal:
#
#   DURATION=30m OUT=/tmp/soak-hostile bash scripts/soak-hostile.sh
#
# Honest load: `cuzk load --duration $DURATION --verify-all` (built-in kinds at four
# priorities, 2 KiB WindowPoSt and WinningPoSt requests from `cuzk gen-vanilla`), every
# returned proof re-verified by the load generator, calls cut by the kill sent again with the
# same request id (`--retry-s`, as Curio's client does). Hostile load: `--hostile` (junk bytes,
# 100 MiB messages in an unused field, 2 M empty vanilla_proofs, fields a kind does not read,
# silent and stalled connections); every hostile call must be refused. The daemon's RSS comes
# from its /metrics every 30 s (`samples.csv`) and from `ps` every 10 s (`rss.csv`, across the
# restart). The bench's summary and the daemons' logs go to $OUT. Needs `cuzk` on PATH or
# CUZK=path (a release build: `cargo build --release --bin cuzk`).
set -euo pipefail
DURATION=${DURATION:-30m}
OUT=${OUT:-/tmp/soak-hostile}
CUZK=${CUZK:-$(command -v cuzk || echo target/release/cuzk)}
CONCURRENCY=${CONCURRENCY:-4}
W=${WORK:-$OUT/work}
mkdir -p "$OUT" "$W/data" "$W/fil" "$W/req"
chmod 700 "$W" "$W/data"
export CUZK_DATA_DIR=$W/data FIL_PROOFS_PARAMETER_CACHE=$W/fil
SOCK=$W/cuzk.sock
HTTP=127.0.0.1:9841

"$CUZK" setup --circuit squaring-chain --log-size 12 >/dev/null
"$CUZK" setup --circuit squaring-chain --log-size 14 >/dev/null
"$CUZK" setup --circuit sha256-chain --log-size 15 >/dev/null
"$CUZK" setup --filecoin wpost-2k,winning-2k --filecoin-dir "$W/fil" >/dev/null
[ -f "$W/req/wpost-2k.json" ] || "$CUZK" gen-vanilla --sector-size 2k --out "$W/req" >/dev/null

cat > "$W/cuzk.toml" <<TOML
[server]
socket = "$SOCK"
http = "$HTTP"
idle_timeout_ms = 20000
handshake_timeout_ms = 5000
max_request_bytes = 134217728     # 128 MiB: the request budget below holds one 100 MiB message
request_budget_bytes = 536870912
[engine]
backend = "cpu"
synth_workers = 1
finalize_workers = 1
host_memory_bytes = 8589934592
device_memory_bytes = 4294967296
[params]
trusted = true
filecoin_dir = "$W/fil"
[log]
filter = "warn"
TOML

serve() { "$CUZK" --data-dir "$W/data" serve --config "$W/cuzk.toml" >> "$OUT/serve-$1.log" 2>&1 & echo $!; }
wait_up() { for _ in $(seq 300); do curl -sf "http://$HTTP/status" >/dev/null && return 0; sleep 0.2; done; echo "daemon not up" >&2; exit 1; }

PID=$(serve 1)
wait_up
echo "seconds,pid,rss_kib" > "$OUT/rss.csv"
START=$(date +%s)
( while sleep 10; do p=$(cat "$OUT/pid" 2>/dev/null || true); [ -n "$p" ] && echo "$(( $(date +%s) - START )),$p,$(ps -o rss= -p "$p" 2>/dev/null | tr -d ' ')" >> "$OUT/rss.csv"; done ) &
RSS_LOOP=$!
echo "$PID" > "$OUT/pid"

"$CUZK" --addr "unix:$SOCK" --data-dir "$W/data" load --duration "$DURATION" --verify-all --hostile --retry-s 600 \
  --concurrency "$CONCURRENCY" --quiet --sample-s 30 --samples-out "$OUT/samples.csv" \
  --mix "squaring-chain:12:normal*3,squaring-chain:14:high,sha256-chain:15:low,squaring-chain:12:critical,@$W/req/wpost-2k.json,@$W/req/winning-2k.json" \
  > "$OUT/bench.txt" 2>&1 &
BENCH=$!

# kill -9 half way, then a restart on the same journal.
secs=$(python3 -c "import re,sys; d='$DURATION'; m=re.fullmatch(r'(\d+)(s|m|h)',d); print(int(m[1])*{'s':1,'m':60,'h':3600}[m[2]])")
sleep $(( secs / 2 ))
echo "$(date +%T) kill -9 $PID (live jobs: $(curl -s "http://$HTTP/metrics" | grep '^cuzk_jobs_live ' | cut -d' ' -f2))" | tee -a "$OUT/events.txt"
kill -9 "$PID"
sleep 2
PID=$(serve 2)
echo "$PID" > "$OUT/pid"
wait_up
echo "$(date +%T) restarted as $PID; journal: $(curl -s "http://$HTTP/metrics" | grep '^cuzk_journal_jobs' | tr '\n' ' ')" | tee -a "$OUT/events.txt"

rc=0
wait "$BENCH" || rc=$?
curl -s "http://$HTTP/metrics" > "$OUT/metrics-end.txt"
kill -TERM "$PID"; wait "$PID" 2>/dev/null || true
kill "$RSS_LOOP" 2>/dev/null || true
echo "bench exit $rc" | tee -a "$OUT/events.txt"
cat "$OUT/bench.txt"
awk -F, 'NR>1 && $3>m {m=$3} END {printf "daemon peak RSS (ps, every 10 s): %.0f MiB\n", m/1024}' "$OUT/rss.csv" | tee -a "$OUT/events.txt"
exit $rc
