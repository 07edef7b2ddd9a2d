#!/usr/bin/env bash
# Session 8, call 2: where the G1 2^24 batch-affine rounds spend their time. Per-round times
# on each group's stream (CUZK_MSM_PROFILE prints pairs/prefix/inversion/finish per round),
# the same with other group sizes, window sizes and no stagger, then every kernel's duration
# under Nsight Compute (kernels serialized) for the warm-up MSM.
# Needs gpu-bin/cuzk-cuda-bench. Logs go to $OUT.
cd "$(dirname "$0")/../.."
export CUZK_CUDA_CACHE=$PWD/gpu-bin/cache
B=$PWD/gpu-bin
S=$OUT/summary.txt
P=$OUT/profile.txt
for V in "" "CUZK_MSM_AFFINE_GROUP=26" "CUZK_MSM_AFFINE_GROUP=28" "CUZK_MSM_AFFINE_STAGGER=0" "CUZK_MSM_C=19" "CUZK_MSM_C=21"; do
  echo "== $V" >> $P
  env $V CUZK_MSM_PROFILE=1 timeout 60 $B/cuzk-cuda-bench g1 24 24 >> $P 2>&1; echo "profile [$V] rc=$?" >> $S
done
timeout 240 /usr/local/cuda/bin/ncu --clock-control none --launch-count 420 --metrics gpu__time_duration.sum --csv --print-units base \
  $B/cuzk-cuda-bench g1 24 24 > $OUT/ncu.csv 2>&1; echo "ncu rc=$?" >> $S
cat $S; grep -E "^==|^msm-profile" $P
