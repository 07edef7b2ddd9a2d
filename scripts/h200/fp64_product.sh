#!/usr/bin/env bash
# The experimental FP64-unit field product (kernels/cuda/field/fp64_mont.cuh) on the GPU host:
# exactness against blstrs (gpu.rs fp64_products_match_blstrs), then its throughput next to the
# IMAD product (cuzk-cuda-bench field). Needs gpu-bin/{gpu,cuzk-cuda-bench}. Logs go to $OUT.
set -u
cd "$(dirname "$0")/../.."
BIN=${CUZK_BIN_DIR:-$PWD/gpu-bin}
OUT=${OUT:-/tmp/fp64-product}
mkdir -p "$OUT"
export CUZK_CUDA_CACHE=$BIN/cache
timeout 120 "$BIN/gpu" --test-threads=1 fp64 field_ops > "$OUT/tests.txt" 2>&1; echo "tests rc=$?" >> "$OUT/tests.txt"
timeout 120 "$BIN/cuzk-cuda-bench" field > "$OUT/field.txt" 2>&1; echo "bench rc=$?" >> "$OUT/field.txt"
grep -E "^test |test result|panicked|rc=" "$OUT/tests.txt"; cat "$OUT/field.txt"
