#!/usr/bin/env bash
# Session 9, call 3: NTT variants, each in its own process (kernel defines are per process):
# the session-6 default (FP64 twiddle products capped at 64 registers) with the old and the new
# (tiled) bit reversal, and radix-4 stage pairs (CUZK_NTT_R4) with 64 / 85 / no register cap.
# Each variant runs the NTT oracle test to 2^20 (all directions, compute_h) and the small-DFT
# test, then the bench; a second round repeats the benches in the same order.
# Needs gpu-bin/{gpu,cuzk-cuda-bench}. Logs go to $OUT.
cd "$(dirname "$0")/../.."
export CUZK_CUDA_CACHE=$PWD/gpu-bin/cache CUZK_VECTORS=$PWD/gpu-bin/vectors
B=$PWD/gpu-bin
S=$OUT/summary.txt
V="base:CUZK_NTT_FP64,CUZK_NTT_LB:naive tiled:CUZK_NTT_FP64,CUZK_NTT_LB:tiled r4lb:CUZK_NTT_FP64,CUZK_NTT_LB,CUZK_NTT_R4:tiled r4:CUZK_NTT_FP64,CUZK_NTT_R4:tiled r4lb3:CUZK_NTT_FP64,CUZK_NTT_R4,CUZK_NTT_LB3:tiled"
for v in $V; do
  IFS=: read name defs br <<< "$v"
  echo "== $name ($defs, bitrev $br)" >> $S
  CUZK_CUDA_DEFINES=$defs CUZK_NTT_BITREV=$br CUZK_GPU_TEST_MAX_LOG_NTT=20 timeout 90 $B/gpu --test-threads=1 ntt > $OUT/tests.txt 2>&1; echo "tests rc=$?" >> $S
  grep -hE "^test |test result|panicked|mismatch" $OUT/tests.txt >> $S
  CUZK_CUDA_DEFINES=$defs CUZK_NTT_BITREV=$br timeout 50 $B/cuzk-cuda-bench ntt 24 24 h 24 24 ntt 27 27 >> $OUT/bench-$name.txt 2>&1
  grep -E "regs ntt_pass|^ntt|^compute_h" $OUT/bench-$name.txt >> $S
done
echo "== round 2" >> $S
for v in $V; do
  IFS=: read name defs br <<< "$v"
  CUZK_CUDA_DEFINES=$defs CUZK_NTT_BITREV=$br timeout 50 $B/cuzk-cuda-bench ntt 24 24 h 24 24 > $OUT/r2.txt 2>&1
  echo "$name: $(grep -E "^ntt|^compute_h" $OUT/r2.txt | tr '\n' ' ')" >> $S
done
cat $S
