#!/usr/bin/env bash
# Session 6, call 5: the windowed scatter (msm_window_keys + msm_scatter_range) checked against
# the oracle (G1 to 2^22, G2, EIP vectors, streamed bases, proofs), under compute-sanitizer with
# the default sizes (2^19 takes the windowed path), then the NTT / compute_h / MSM sweeps for docs/perf.md.
# Needs gpu-bin/{gpu,proof,cuzk-cuda-bench}. Logs go to $OUT.
set -u
cd "$(dirname "$0")/../.."
BIN=${CUZK_BIN_DIR:-$PWD/gpu-bin}
OUT=${OUT:-/tmp/s6c5}
mkdir -p "$OUT"
export CUZK_CUDA_CACHE=$BIN/cache CUZK_VECTORS=$BIN/vectors
CUZK_GPU_TEST_MAX_LOG_MSM=22 CUZK_GPU_TEST_MAX_LOG_MSM_G2=18 timeout 240 "$BIN/gpu" --test-threads=1 msm eip streamed concurrent > "$OUT/gpu.txt" 2>&1; echo "rc=$?" >> "$OUT/gpu.txt"
timeout 100 "$BIN/proof" --test-threads=1 > "$OUT/proof.txt" 2>&1; echo "rc=$?" >> "$OUT/proof.txt"
timeout 200 compute-sanitizer --tool memcheck "$BIN/gpu" --test-threads=1 msm_g1 > "$OUT/sanitizer.txt" 2>&1; echo "rc=$?" >> "$OUT/sanitizer.txt"
grep -HE "^test |test result|panicked|rc=|ERROR SUMMARY" "$OUT"/gpu.txt "$OUT"/proof.txt "$OUT"/sanitizer.txt
CUZK_MSM_PROFILE=1 timeout 100 "$BIN/cuzk-cuda-bench" g1 24 24 > "$OUT/profile.txt" 2>&1; echo "rc=$?" >> "$OUT/profile.txt"
grep -E "msm|rc=" "$OUT/profile.txt"
timeout 330 "$BIN/cuzk-cuda-bench" ntt 20 27 h 20 26 g1 16 26 g2 16 24 > "$OUT/sweep.txt" 2>&1; echo "rc=$?" >> "$OUT/sweep.txt"
grep -v "^# regs" "$OUT/sweep.txt"
