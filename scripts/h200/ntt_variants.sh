#!/usr/bin/env bash
# The NTT's multiplier variants on the GPU host: each variant's NTT tests against the oracle
# (up to 2^20), then NTT and compute_h at 2^24 for every variant in one run, twice.
#   "" (empty): the backend's default (on sm_90: CUZK_NTT_FP64,CUZK_NTT_LB);
#   CUZK_NTT_IMAD: the 32-bit IMAD products; CUZK_NTT_FP64: twiddle products on the FP64 units
#   without the register cap (72 registers); CUZK_NTT_LB: ntt_pass capped at 64 registers.
# Session 6 also measured a hybrid (odd warps on FP64, even warps on IMAD; 7.06 ms capped, 7.16
# uncapped, against 7.10 for IMAD and 6.85 for FP64 capped) and dropped it.
# Needs gpu-bin/{gpu,cuzk-cuda-bench}. Logs go to $OUT.
set -u
cd "$(dirname "$0")/../.."
BIN=${CUZK_BIN_DIR:-$PWD/gpu-bin}
OUT=${OUT:-/tmp/ntt-variants}
mkdir -p "$OUT"
export CUZK_CUDA_CACHE=$BIN/cache
VARIANTS=${VARIANTS:-"CUZK_NTT_IMAD CUZK_NTT_FP64 CUZK_NTT_IMAD,CUZK_NTT_LB"}
for v in $VARIANTS; do
  CUZK_CUDA_DEFINES=$v CUZK_GPU_TEST_MAX_LOG_NTT=20 timeout 150 "$BIN/gpu" --test-threads=1 ntt compute_h > "$OUT/tests-${v//,/+}.txt" 2>&1
  echo "rc=$?" >> "$OUT/tests-${v//,/+}.txt"
done
for rep in 1 2; do
  for v in "" $VARIANTS; do
    echo "== CUZK_CUDA_DEFINES=$v (round $rep)" >> "$OUT/ntt.txt"
    CUZK_CUDA_DEFINES=$v timeout 100 "$BIN/cuzk-cuda-bench" ntt 24 24 h 24 24 2>&1 | grep -v "^# regs msm" >> "$OUT/ntt.txt"
  done
done
grep -HE "^test |test result|panicked|rc=" "$OUT"/tests-*.txt; cat "$OUT/ntt.txt"
