#!/usr/bin/env bash
# Session 8, call 4: G1 2^24 with the batch-affine groups on an urgent (highest-priority) stream
# and a normal one (CUZK_MSM_AFFINE_URGENT=1), the finish pass with launch bounds
# (CUZK_MSM_FINISH=lb), one group (CUZK_MSM_AFFINE_GROUP=28), and window-sum segments of
# 16/32/128 buckets (CUZK_MSM_WSEG). Checks the urgent + lb path first.
# Needs gpu-bin/{gpu,cuzk-cuda-bench}. Logs go to $OUT.
cd "$(dirname "$0")/../.."
export CUZK_CUDA_CACHE=$PWD/gpu-bin/cache CUZK_VECTORS=$PWD/gpu-bin/vectors
B=$PWD/gpu-bin
S=$OUT/summary.txt
T=$OUT/tests.txt
CUZK_MSM_AFFINE_URGENT=1 CUZK_MSM_FINISH=lb CUZK_MSM_AFFINE=1 CUZK_GPU_TEST_MAX_LOG_MSM=14 timeout 100 $B/gpu --test-threads=1 msm_g eip > $T 2>&1; echo "urgent lb forced rc=$?" >> $S
grep -hE "^test |test result|MISMATCH|panicked" $T >> $S
P=$OUT/profile.txt
for V in "CUZK_MSM_FINISH=plain" "CUZK_MSM_FINISH=lb" "CUZK_MSM_AFFINE_URGENT=1" "CUZK_MSM_AFFINE_URGENT=1 CUZK_MSM_FINISH=lb" \
         "CUZK_MSM_AFFINE_GROUP=28 CUZK_MSM_FINISH=lb" "CUZK_MSM_AFFINE_URGENT=1 CUZK_MSM_FINISH=lb CUZK_MSM_AFFINE_STAGGER=0" \
         "CUZK_MSM_WSEG=16" "CUZK_MSM_WSEG=32" "CUZK_MSM_WSEG=128"; do
  echo "== $V" >> $P
  env $V CUZK_MSM_PROFILE=1 timeout 60 $B/cuzk-cuda-bench g1 24 24 >> $P 2>&1; echo "profile [$V] rc=$?" >> $S
done
cat $S; grep -E "^==|^msm g1" $P; grep -E "^msm-profile" $P | sed -n '0~3p' | cut -c1-60,95-
