#!/usr/bin/env bash
# Session 6, call 4: the sm_90 default (NTT twiddle products on the FP64 units) and the batched
# scatter, checked and timed. Needs gpu-bin/{gpu,proof,cuzk-cuda-bench}. Logs go to $OUT.
set -u
cd "$(dirname "$0")/../.."
BIN=${CUZK_BIN_DIR:-$PWD/gpu-bin}
OUT=${OUT:-/tmp/s6c4}
mkdir -p "$OUT"
export CUZK_CUDA_CACHE=$BIN/cache CUZK_VECTORS_DIR=$BIN/vectors
CUZK_GPU_TEST_MAX_LOG_NTT=24 CUZK_GPU_TEST_MAX_LOG_MSM=22 timeout 300 "$BIN/gpu" --test-threads=1 > "$OUT/gpu.txt" 2>&1; echo "rc=$?" >> "$OUT/gpu.txt"
timeout 120 "$BIN/proof" --test-threads=1 > "$OUT/proof.txt" 2>&1; echo "rc=$?" >> "$OUT/proof.txt"
timeout 150 compute-sanitizer --tool memcheck "$BIN/gpu" --test-threads=1 field_ops ntt_small msm_g1 > "$OUT/sanitizer.txt" 2>&1; echo "rc=$?" >> "$OUT/sanitizer.txt"
for v in "" CUZK_NTT_IMAD; do
  echo "== CUZK_CUDA_DEFINES=$v" >> "$OUT/bench.txt"
  CUZK_CUDA_DEFINES=$v CUZK_MSM_PROFILE=1 timeout 150 "$BIN/cuzk-cuda-bench" ntt 24 24 h 24 24 g1 24 24 >> "$OUT/bench.txt" 2>&1; echo "rc=$?" >> "$OUT/bench.txt"
done
grep -HE "^test |test result|panicked|rc=|ERROR SUMMARY" "$OUT"/gpu.txt "$OUT"/proof.txt "$OUT"/sanitizer.txt; grep -v "^# regs" "$OUT/bench.txt"
