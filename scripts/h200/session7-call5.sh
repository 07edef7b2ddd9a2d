#!/usr/bin/env bash
# Session 7, call 5: batch-affine rounds run to one point per bucket (window sums over affine
# buckets), group offsets read in one copy. Checks: forced full plan, forced partial plan
# (CUZK_MSM_AFFINE_FULL=0), default rule, proofs, memcheck; G1 2^24 phases by plan; sweeps.
# Needs gpu-bin/{gpu,proof,cuzk-cuda-bench}. Logs go to $OUT (8 files at most come back).
cd "$(dirname "$0")/../.."
export CUZK_CUDA_CACHE=$PWD/gpu-bin/cache CUZK_VECTORS=$PWD/gpu-bin/vectors
B=$PWD/gpu-bin
S=$OUT/summary.txt
T=$OUT/tests.txt
CUZK_MSM_AFFINE=1 CUZK_GPU_TEST_MAX_LOG_MSM=16 timeout 150 $B/gpu --test-threads=1 msm eip streamed > $T 2>&1; echo "gpu forced full rc=$?" >> $S
CUZK_MSM_AFFINE=1 CUZK_MSM_AFFINE_FULL=0 CUZK_GPU_TEST_MAX_LOG_MSM=14 timeout 150 $B/gpu --test-threads=1 msm eip >> $T 2>&1; echo "gpu forced partial rc=$?" >> $S
CUZK_GPU_TEST_MAX_LOG_MSM=20 CUZK_GPU_TEST_MAX_LOG_MSM_G2=18 timeout 150 $B/gpu --test-threads=1 msm_g >> $T 2>&1; echo "gpu default rc=$?" >> $S
timeout 60 $B/proof >> $T 2>&1; echo "proof rc=$?" >> $S
CUZK_MSM_AFFINE=1 CUZK_GPU_TEST_MAX_LOG_MSM=10 timeout 120 /usr/local/cuda/bin/compute-sanitizer --tool memcheck $B/gpu --test-threads=1 msm_g >> $T 2>&1; echo "memcheck rc=$?" >> $S
grep -hE "^test |test result|MISMATCH|panicked|ERROR SUMMARY" $T >> $S
P=$OUT/profile.txt
for V in "" "CUZK_MSM_AFFINE_FULL=0" "CUZK_MSM_AFFINE_ROUNDS=5" "CUZK_MSM_AFFINE_GROUP=27"; do
  echo "== $V" >> $P
  env $V CUZK_MSM_PROFILE=1 timeout 60 $B/cuzk-cuda-bench g1 24 24 >> $P 2>&1; echo "profile [$V] rc=$?" >> $S
done
grep -E "^==|^msm" $P | grep -vE "msm-profile.*(total 1[3-9][0-9]\.)" >> $S
timeout 200 $B/cuzk-cuda-bench g1 16 24 g2 16 22 > $OUT/sweep.txt 2>&1; echo "sweep rc=$?" >> $S
grep -E "^msm" $OUT/sweep.txt >> $S
cat $S
