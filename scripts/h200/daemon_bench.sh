#!/usr/bin/env bash
# cuzk serve on the CUDA backend + cuzk bench against it (run on the GPU host, from anywhere).
# Needs the stripped `cuzk` binary in $CUZK_BIN_DIR (default gpu-bin/ at the repository root).
set -u
cd "$(dirname "$0")/../.."
BIN=${CUZK_BIN_DIR:-$PWD/gpu-bin}
OUT=${OUT:-/tmp/cuzk-daemon-bench}
mkdir -p "$OUT"
cd "$BIN"
export CUZK_CUDA_CACHE=$PWD/cache CUZK_DATA_DIR=/tmp/cuzk-data
mkdir -p $CUZK_DATA_DIR
./cuzk setup --circuit sha256-chain --log-size 20 2>&1 | tail -1
./cuzk setup --circuit squaring-chain --log-size 20 2>&1 | tail -1
./cuzk prove --backend cuda --circuit sha256-chain --log-size 20 --trust-params 2>&1 | tail -14
./cuzk serve --trust-params --http 127.0.0.1:9180 > $OUT/serve.log 2>&1 &
pid=$!
for i in $(seq 1 60); do [ -S $CUZK_DATA_DIR/cuzk.sock ] && break; sleep 0.5; done
./cuzk bench --quiet --verify --jobs 32 --concurrency 12 --mix 'sha256-chain:20:normal*3,squaring-chain:20:high,sha256-chain:20:critical' 2>&1
curl -s 127.0.0.1:9180/status | head -c 1500; echo
kill -TERM $pid; wait $pid; echo "serve exited $?"
tail -3 $OUT/serve.log
