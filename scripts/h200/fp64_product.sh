#!/usr/bin/env bash
# The experimental FP64-unit field product (kernels/cuda/field/fp64_mont.cuh) on the GPU host:
# exactness against blstrs (gpu.rs fp64_products_match_blstrs), then its throughput next to the
# IMAD product (cuzk-cuda-bench field), and the NTT built with CUZK_NTT_FP64 (uncapped) against
# the oracle and timed next to the IMAD build and the backend's default (on sm_90: FP64, capped). Needs gpu-bin/{gpu,cuzk-cuda-bench}. Logs go to $OUT.
set -u
cd "$(dirname "$0")/../.."
BIN=${CUZK_BIN_DIR:-$PWD/gpu-bin}
OUT=${OUT:-/tmp/fp64-product}
mkdir -p "$OUT"
export CUZK_CUDA_CACHE=$BIN/cache
timeout 120 "$BIN/gpu" --test-threads=1 fp64 field_ops > "$OUT/tests.txt" 2>&1; echo "tests rc=$?" >> "$OUT/tests.txt"
timeout 120 "$BIN/cuzk-cuda-bench" field > "$OUT/field.txt" 2>&1; echo "bench rc=$?" >> "$OUT/field.txt"
# The NTT with its twiddle products on the FP64 units (CUZK_NTT_FP64), against the oracle, then
# timed next to the IMAD build and the default (NTT and compute_h at 2^24).
CUZK_CUDA_DEFINES=CUZK_NTT_FP64 CUZK_GPU_TEST_MAX_LOG_NTT=${NTT:-20} timeout 180 "$BIN/gpu" --test-threads=1 ntt \
  > "$OUT/ntt-fp64-tests.txt" 2>&1; echo "rc=$?" >> "$OUT/ntt-fp64-tests.txt"
for v in CUZK_NTT_IMAD CUZK_NTT_FP64 ""; do
  echo "== CUZK_CUDA_DEFINES=$v" >> "$OUT/ntt.txt"
  CUZK_CUDA_DEFINES=$v timeout 150 "$BIN/cuzk-cuda-bench" ntt 24 24 h 24 24 >> "$OUT/ntt.txt" 2>&1; echo "rc=$?" >> "$OUT/ntt.txt"
done
grep -E "^test |test result|panicked|rc=" "$OUT/tests.txt" "$OUT/ntt-fp64-tests.txt"; cat "$OUT/field.txt" "$OUT/ntt.txt"
