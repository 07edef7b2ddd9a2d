#!/usr/bin/env bash
# Session 9, call 4: root tables held as the FP64 product's limbs (CUZK_NTT_PRE: the twiddle
# operand is not converted per product; the pass twiddles multiply by the two table halves in
# turn) against the default build, alternating, two rounds; the NTT oracle test to 2^20 and the
# small-DFT test on the new build. Needs gpu-bin/{gpu,cuzk-cuda-bench}. Logs go to $OUT.
cd "$(dirname "$0")/../.."
export CUZK_CUDA_CACHE=$PWD/gpu-bin/cache CUZK_VECTORS=$PWD/gpu-bin/vectors
B=$PWD/gpu-bin
S=$OUT/summary.txt
CUZK_CUDA_DEFINES=CUZK_NTT_FP64,CUZK_NTT_LB,CUZK_NTT_PRE CUZK_GPU_TEST_MAX_LOG_NTT=20 timeout 120 $B/gpu --test-threads=1 ntt > $OUT/tests.txt 2>&1; echo "pre tests rc=$?" >> $S
grep -hE "^test |test result|panicked|mismatch" $OUT/tests.txt >> $S
for round in 1 2; do
  for v in base:CUZK_NTT_FP64,CUZK_NTT_LB pre:CUZK_NTT_FP64,CUZK_NTT_LB,CUZK_NTT_PRE; do
    IFS=: read name defs <<< "$v"
    CUZK_CUDA_DEFINES=$defs timeout 60 $B/cuzk-cuda-bench ntt 24 24 h 24 24 ntt 27 27 > $OUT/bench-$name-$round.txt 2>&1
    echo "$name r$round: $(grep -E "regs ntt_pass|^ntt|^compute_h" $OUT/bench-$name-$round.txt | tr '\n' ' ')" >> $S
  done
done
cat $S
