#!/usr/bin/env bash
# The daemon on the GPU host: `cuzk serve` (engine.backend = auto, so the first CUDA device)
# with `cuzk load` against it, every proof verified, then SIGTERM (drain and stop). The
# figures are in docs/perf-daemon.md, "CUDA backend on the H200".
#
#   OUT=/tmp/daemon bash scripts/h200/daemon.sh
#
# JOBS (32), CONCURRENCY (12) and MIX set the load; WARMUP (0) jobs of the same mix run first,
# unmeasured (the first job of each circuit records its constraint matrices), so the measured
# run is the steady state. Needs gpu-bin/cuzk. Logs and summary.txt go to $OUT.
source "$(dirname "$0")/common.sh"
need cuzk
CUZK=$BIN/cuzk
export CUZK_DATA_DIR=${CUZK_DATA_DIR:-/tmp/cuzk-data}
mkdir -p "$CUZK_DATA_DIR"
MIX=${MIX:-"sha256-chain:20:normal*3,squaring-chain:20:high,sha256-chain:20:critical"}
step setup-sha256 300 "$CUZK" setup --circuit sha256-chain --log-size 20
step setup-squaring 300 "$CUZK" setup --circuit squaring-chain --log-size 20
step prove 300 "$CUZK" prove --backend cuda --circuit sha256-chain --log-size 20 --trust-params
tail -14 "$OUT/prove.txt" | tee -a "$S"
start_daemon "$OUT/serve.log" --trust-params --http 127.0.0.1:9180
if [ "${WARMUP:-0}" -gt 0 ]; then
  step warmup 300 "$CUZK" load --quiet --verify --jobs "$WARMUP" --concurrency "${CONCURRENCY:-12}" --mix "$MIX"
fi
step bench 400 "$CUZK" load --quiet --verify --jobs "${JOBS:-32}" --concurrency "${CONCURRENCY:-12}" --mix "$MIX"
tee -a "$S" < "$OUT/bench.txt"
curl -s 127.0.0.1:9180/status > "$OUT/status.json"
kill -TERM $pid; wait $pid; note "serve exited $?"
tail -3 "$OUT/serve.log" | tee -a "$S"
