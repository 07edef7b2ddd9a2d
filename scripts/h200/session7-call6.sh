#!/usr/bin/env bash
# Session 7, call 6: the final batch-affine settings (full plan up to 10 rounds, group size from
# free memory, last-level inversions of at most 32 elements). Checks (forced full and partial
# plans, default rule with concurrent uploads, proofs, memcheck), G1 2^24 phases against two
# alternatives, and the G1 2^16..2^26 / G2 2^16..2^24 sweeps with the rounds on and off.
# Needs gpu-bin/{gpu,proof,cuzk-cuda-bench}. Logs go to $OUT (8 files at most come back).
cd "$(dirname "$0")/../.."
export CUZK_CUDA_CACHE=$PWD/gpu-bin/cache CUZK_VECTORS=$PWD/gpu-bin/vectors
B=$PWD/gpu-bin
S=$OUT/summary.txt
T=$OUT/tests.txt
CUZK_MSM_AFFINE=1 CUZK_GPU_TEST_MAX_LOG_MSM=16 timeout 150 $B/gpu --test-threads=1 msm eip streamed > $T 2>&1; echo "gpu forced full rc=$?" >> $S
CUZK_MSM_AFFINE=1 CUZK_MSM_AFFINE_FULL=0 CUZK_GPU_TEST_MAX_LOG_MSM=14 timeout 150 $B/gpu --test-threads=1 msm eip >> $T 2>&1; echo "gpu forced partial rc=$?" >> $S
CUZK_GPU_TEST_MAX_LOG_MSM=22 CUZK_GPU_TEST_MAX_LOG_MSM_G2=18 timeout 200 $B/gpu --test-threads=1 msm eip streamed concurrent >> $T 2>&1; echo "gpu default rc=$?" >> $S
timeout 60 $B/proof >> $T 2>&1; echo "proof rc=$?" >> $S
CUZK_MSM_AFFINE=1 CUZK_GPU_TEST_MAX_LOG_MSM=10 timeout 120 /usr/local/cuda/bin/compute-sanitizer --tool memcheck $B/gpu --test-threads=1 msm_g >> $T 2>&1; echo "memcheck rc=$?" >> $S
grep -hE "^test |test result|MISMATCH|panicked|ERROR SUMMARY" $T >> $S
P=$OUT/profile.txt
for V in "" "CUZK_MSM_INV_EACH_MAX=4096" "CUZK_MSM_AFFINE_GROUP=26"; do
  echo "== $V" >> $P
  env $V CUZK_MSM_PROFILE=1 timeout 60 $B/cuzk-cuda-bench g1 24 24 >> $P 2>&1; echo "profile [$V] rc=$?" >> $S
done
grep -E "^==|^msm" $P | grep -vE "msm-profile.*(total 1[2-9][0-9]\.)" >> $S
for A in on 0; do
  E=""; [ $A = 0 ] && E="CUZK_MSM_AFFINE=0"
  echo "== affine $A" >> $OUT/sweep.txt
  env $E timeout 220 $B/cuzk-cuda-bench g1 16 26 g2 16 24 >> $OUT/sweep.txt 2>&1; echo "sweep affine=$A rc=$?" >> $S
done
grep -E "^==|^msm" $OUT/sweep.txt >> $S
cat $S
