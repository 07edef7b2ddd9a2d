#!/usr/bin/env bash
# Session 8, call 7: the windowed scatter writes the keys of all windows in one pass over the scalars, against
# the previous commit (gpu-bin/cuzk-cuda-bench-head), G1 2^24, alternating, in one call, then the
# last-level inversion size (CUZK_MSM_INV_EACH_MAX 256, 1024). Checks first.
# Needs gpu-bin/{gpu,proof,cuzk-cuda-bench,cuzk-cuda-bench-head}. Logs go to $OUT.
cd "$(dirname "$0")/../.."
export CUZK_CUDA_CACHE=$PWD/gpu-bin/cache CUZK_VECTORS=$PWD/gpu-bin/vectors
B=$PWD/gpu-bin
S=$OUT/summary.txt
T=$OUT/tests.txt
CUZK_GPU_TEST_MAX_LOG_MSM=18 CUZK_GPU_TEST_MAX_LOG_MSM_G2=14 timeout 150 $B/gpu --test-threads=1 msm eip streamed > $T 2>&1; echo "gpu default rc=$?" >> $S
CUZK_MSM_AFFINE=1 CUZK_GPU_TEST_MAX_LOG_MSM=14 timeout 100 $B/gpu --test-threads=1 msm_g eip >> $T 2>&1; echo "gpu forced rc=$?" >> $S
timeout 60 $B/proof >> $T 2>&1; echo "proof rc=$?" >> $S
CUZK_MSM_AFFINE=1 CUZK_GPU_TEST_MAX_LOG_MSM=10 timeout 100 /usr/local/cuda/bin/compute-sanitizer --tool memcheck $B/gpu --test-threads=1 msm_g > $OUT/memcheck.txt 2>&1; echo "memcheck rc=$?" >> $S
grep -hE "^test |test result|MISMATCH|panicked|ERROR SUMMARY" $T $OUT/memcheck.txt >> $S
P=$OUT/profile.txt
for i in 1 2; do
  for V in cuzk-cuda-bench-head cuzk-cuda-bench; do
    echo "== $V" >> $P
    CUZK_MSM_PROFILE=1 timeout 60 $B/$V g1 24 24 >> $P 2>&1; echo "profile $V rc=$?" >> $S
  done
done
for V in 256 1024; do
  echo "== CUZK_MSM_INV_EACH_MAX=$V" >> $P
  CUZK_MSM_INV_EACH_MAX=$V CUZK_MSM_PROFILE=1 timeout 60 $B/cuzk-cuda-bench g1 24 24 >> $P 2>&1; echo "inv $V rc=$?" >> $S
done
cat $S; grep -E "^==|^msm g1" $P; grep -E "^msm-profile" $P | sed -n '0~3p' | cut -c1-60,95-
