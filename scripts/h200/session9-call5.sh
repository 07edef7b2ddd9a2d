#!/usr/bin/env bash
# Session 9, call 5: NTT block shapes. 2^10 elements per block as before, with 256 threads (4
# elements each, the default), 512 (2 each, capped at 64 registers for 2 blocks per SM) or 128
# (8 each, 8 blocks). CUZK_NTT_ELEMS_PER_THREAD sets the launch, the CUZK_NTT_LB* define the
# matching register cap. Oracle tests to 2^16 per shape, then two rounds of benches.
# Needs gpu-bin/{gpu,cuzk-cuda-bench}. Logs go to $OUT.
cd "$(dirname "$0")/../.."
export CUZK_CUDA_CACHE=$PWD/gpu-bin/cache CUZK_VECTORS=$PWD/gpu-bin/vectors
B=$PWD/gpu-bin
S=$OUT/summary.txt
V="t256:CUZK_NTT_FP64,CUZK_NTT_LB:4 t512:CUZK_NTT_FP64,CUZK_NTT_LB512:2 t128:CUZK_NTT_FP64,CUZK_NTT_LB128:8"
for v in $V; do
  IFS=: read name defs per <<< "$v"
  CUZK_CUDA_DEFINES=$defs CUZK_NTT_ELEMS_PER_THREAD=$per timeout 90 $B/gpu --test-threads=1 ntt > $OUT/tests-$name.txt 2>&1; echo "$name tests rc=$?" >> $S
  grep -hE "test result|panicked|mismatch" $OUT/tests-$name.txt >> $S
done
for round in 1 2; do
  for v in $V; do
    IFS=: read name defs per <<< "$v"
    CUZK_CUDA_DEFINES=$defs CUZK_NTT_ELEMS_PER_THREAD=$per timeout 60 $B/cuzk-cuda-bench ntt 24 24 h 24 24 ntt 27 27 > $OUT/bench-$name.txt 2>&1
    echo "$name r$round: $(grep -E "regs ntt_pass|^ntt|^compute_h" $OUT/bench-$name.txt | tr '\n' ' ')" >> $S
  done
done
cat $S
