#!/usr/bin/env bash
# Several devices in one daemon, on the one-GPU host: two backends opened on the H200
# (engine.devices = [0, 0]: two sets of streams and pinned pools on one GPU, each with half
# its memory budget). Part `prove`: `cuzk prove --partitions $P` on one backend and then on
# two; the proofs must be byte-identical (the same seeds and r, s). Part `daemon`: `cuzk serve`
# on both backends with a backlog of 2^$K partitions (`cuzk bench`, every proof verified); a
# CRITICAL job is submitted while both are full; /status and /trace are saved for the spans
# (which device ran what; when the CRITICAL partition left synthesis and started its upload).
# The figures go in docs/perf.md, "Several devices".
#
#   OUT=/tmp/devices bash scripts/h200/devices.sh
#
# PARTS ("prove daemon"), K (24), P (8 partitions), JOBS (32), CONCURRENCY (8), WARMUP (8),
# DEVICES ("[0, 0]"), BACKEND (cuda). Needs gpu-bin/cuzk. Logs, status.json, trace.json and summary.txt go to
# $OUT.
source "$(dirname "$0")/common.sh"
need cuzk
CUZK=$BIN/cuzk
PARTS=${PARTS:-"prove daemon"}
K=${K:-24}
P=${P:-8}
export CUZK_DATA_DIR=${CUZK_DATA_DIR:-/tmp/cuzk-data}
mkdir -p "$CUZK_DATA_DIR"
step setup 600 "$CUZK" setup --circuit sha256-chain --log-size "$K"

if [[ " $PARTS " == *" prove "* ]]; then
  note "== cuzk prove: $P partitions of sha256-chain 2^$K on one backend, then on two"
  step prove-one 600 "$CUZK" prove --backend "${BACKEND:-cuda}" --devices 0 --partitions "$P" --circuit sha256-chain --log-size "$K" --trust-params
  step prove-two 600 "$CUZK" prove --backend "${BACKEND:-cuda}" --devices 0,0 --partitions "$P" --circuit sha256-chain --log-size "$K" --trust-params
  for f in prove-one prove-two; do pick "$OUT/$f.txt" '^(device [0-9]|wall|params)'; done
  grep '^proof ' "$OUT/prove-one.txt" > "$OUT/proofs-one.txt"
  grep '^proof ' "$OUT/prove-two.txt" > "$OUT/proofs-two.txt"
  if [ -s "$OUT/proofs-one.txt" ] && cmp -s "$OUT/proofs-one.txt" "$OUT/proofs-two.txt"; then
    note "proofs: $(wc -l < "$OUT/proofs-one.txt") byte-identical on one and two backends"
  else
    note "proofs: DIFFER between one and two backends (or missing)"
  fi
fi

if [[ " $PARTS " == *" daemon "* ]]; then
  note "== cuzk serve on engine.devices = ${DEVICES:-[0, 0]}: a backlog of sha256-chain 2^$K, then a CRITICAL job"
  cat > "$OUT/serve.toml" <<TOML
[server]
http = "127.0.0.1:9181"
[engine]
backend = "${BACKEND:-cuda}"
devices = ${DEVICES:-[0, 0]}
[params]
trusted = true
TOML
  "$CUZK" serve --config "$OUT/serve.toml" > "$OUT/serve.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 120); do [ -S "$CUZK_DATA_DIR/cuzk.sock" ] && break; sleep 0.5; done
  MIX="sha256-chain:$K:normal"
  if [ "${WARMUP:-8}" -gt 0 ]; then
    step warmup 300 "$CUZK" bench --quiet --verify --jobs "${WARMUP:-8}" --concurrency "${CONCURRENCY:-8}" --mix "$MIX"
  fi
  "$CUZK" bench --quiet --verify --jobs "${JOBS:-32}" --concurrency "${CONCURRENCY:-8}" --mix "$MIX" > "$OUT/bench.txt" 2>&1 &
  bench=$!
  sleep 6
  step critical 300 "$CUZK" submit --circuit sha256-chain --log-size "$K" --seed 9000 --priority critical --wait
  wait "$bench"; note "bench exited $?"
  tee -a "$S" < "$OUT/bench.txt"
  pick "$OUT/critical.txt" '.'
  curl -s 127.0.0.1:9181/status > "$OUT/status.json"
  curl -s 127.0.0.1:9181/trace > "$OUT/trace.json"
  grep -E 'device memory budget' "$OUT/serve.log" | tee -a "$S"
  kill -TERM $pid; wait $pid; note "serve exited $?"
fi
