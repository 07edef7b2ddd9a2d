#!/usr/bin/env bash
# Session 6, call 8: window sums reading the last round's partial sums in place (no gather
# kernel), checked (G1/G2 MSMs against the oracle, EIP vectors, streamed bases, proofs) and
# timed (G1 2^24 phases). Needs gpu-bin/{gpu,proof,cuzk-cuda-bench}. Logs go to $OUT.
cd "$(dirname "$0")/../.."
export CUZK_CUDA_CACHE=$PWD/gpu-bin/cache CUZK_VECTORS=$PWD/gpu-bin/vectors
B=$PWD/gpu-bin
S=$OUT/summary.txt
CUZK_GPU_TEST_MAX_LOG_MSM=20 timeout 150 $B/gpu --test-threads=1 msm eip streamed > $OUT/gpu.txt 2>&1; echo "gpu rc=$?" >> $S
timeout 60 $B/proof > $OUT/proof.txt 2>&1; echo "proof rc=$?" >> $S
grep -hE "^test |test result" $OUT/gpu.txt $OUT/proof.txt >> $S
CUZK_MSM_PROFILE=1 timeout 90 $B/cuzk-cuda-bench g1 24 24 g2 22 22 > $OUT/bench.txt 2>&1; echo "bench rc=$?" >> $S
cat $S; grep -E "^msm" $OUT/bench.txt
