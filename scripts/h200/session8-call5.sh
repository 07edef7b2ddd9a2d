#!/usr/bin/env bash
# Session 8, call 5: window sums in levels (no per-thread multiplication by the segment's offset).
# Checks every window-sum path (default MSM tests: XYZZ buckets below the batch-affine rule;
# forced rounds: affine buckets; G2; EIP vectors; streamed bases; whole proof; memcheck), then
# G1 2^24 with level-0 segments of 16/32/64 buckets, with and without launch bounds on the
# affine level-0 kernel (CUZK_MSM_WLB=1). Needs gpu-bin/{gpu,proof,cuzk-cuda-bench}. Logs in $OUT.
cd "$(dirname "$0")/../.."
export CUZK_CUDA_CACHE=$PWD/gpu-bin/cache CUZK_VECTORS=$PWD/gpu-bin/vectors
B=$PWD/gpu-bin
S=$OUT/summary.txt
T=$OUT/tests.txt
CUZK_GPU_TEST_MAX_LOG_MSM=18 CUZK_GPU_TEST_MAX_LOG_MSM_G2=14 timeout 150 $B/gpu --test-threads=1 msm eip streamed > $T 2>&1; echo "gpu default rc=$?" >> $S
CUZK_MSM_AFFINE=1 CUZK_GPU_TEST_MAX_LOG_MSM=14 timeout 100 $B/gpu --test-threads=1 msm_g eip >> $T 2>&1; echo "gpu forced rc=$?" >> $S
CUZK_MSM_AFFINE=1 CUZK_MSM_WLB=1 CUZK_GPU_TEST_MAX_LOG_MSM=12 timeout 100 $B/gpu --test-threads=1 msm_g1 >> $T 2>&1; echo "gpu forced wlb rc=$?" >> $S
timeout 60 $B/proof >> $T 2>&1; echo "proof rc=$?" >> $S
CUZK_GPU_TEST_MAX_LOG_MSM=10 timeout 100 /usr/local/cuda/bin/compute-sanitizer --tool memcheck $B/gpu --test-threads=1 msm_g > $OUT/memcheck.txt 2>&1; echo "memcheck rc=$?" >> $S
grep -hE "^test |test result|MISMATCH|panicked|ERROR SUMMARY" $T $OUT/memcheck.txt >> $S
P=$OUT/profile.txt
for V in "CUZK_MSM_WSEG=64" "CUZK_MSM_WSEG=32" "CUZK_MSM_WSEG=16" "CUZK_MSM_WSEG=64 CUZK_MSM_WLB=1" "CUZK_MSM_WSEG=32 CUZK_MSM_WLB=1" "CUZK_MSM_WSEG=16 CUZK_MSM_WLB=1"; do
  echo "== $V" >> $P
  env $V CUZK_MSM_PROFILE=1 timeout 60 $B/cuzk-cuda-bench g1 24 24 >> $P 2>&1; echo "profile [$V] rc=$?" >> $S
done
cat $S; grep -E "^==|^msm g1" $P; grep -E "^msm-profile" $P | sed -n '0~3p' | cut -c1-60,95-
