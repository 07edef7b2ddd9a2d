#!/usr/bin/env bash
# Session 8, call 8: the histogram and the direct scatter use plain atomics unless neighbouring
# lanes share a key (keys_clash), against the previous commit (gpu-bin/cuzk-cuda-bench-head):
# G1 2^24 phases alternating, then G1 2^16..2^22 (direct scatter) for both. Checks first.
# Needs gpu-bin/{gpu,proof,cuzk-cuda-bench,cuzk-cuda-bench-head}. Logs go to $OUT.
cd "$(dirname "$0")/../.."
export CUZK_CUDA_CACHE=$PWD/gpu-bin/cache CUZK_VECTORS=$PWD/gpu-bin/vectors
B=$PWD/gpu-bin
S=$OUT/summary.txt
T=$OUT/tests.txt
CUZK_GPU_TEST_MAX_LOG_MSM=18 CUZK_GPU_TEST_MAX_LOG_MSM_G2=14 timeout 150 $B/gpu --test-threads=1 msm eip streamed concurrent > $T 2>&1; echo "gpu default rc=$?" >> $S
timeout 60 $B/proof >> $T 2>&1; echo "proof rc=$?" >> $S
grep -hE "^test |test result|MISMATCH|panicked" $T >> $S
P=$OUT/profile.txt
for i in 1 2; do
  for V in cuzk-cuda-bench-head cuzk-cuda-bench; do
    echo "== $V" >> $P
    CUZK_MSM_PROFILE=1 timeout 60 $B/$V g1 24 24 >> $P 2>&1; echo "profile $V rc=$?" >> $S
  done
done
for V in cuzk-cuda-bench-head cuzk-cuda-bench; do
  echo "== sweep $V" >> $P
  timeout 90 $B/$V g1 16 22 >> $P 2>&1; echo "sweep $V rc=$?" >> $S
done
cat $S; grep -E "^==|^msm g1" $P; grep -E "^msm-profile.*m=16777216" $P | sed -n '0~3p' | cut -c1-60,95-
