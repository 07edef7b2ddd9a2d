#!/usr/bin/env bash
# Session 8, call 3: the batch-affine finish pass, three ways (CUZK_MSM_FINISH): plain (168
# registers, 12 warps per SM), lb (launch bounds to 128 registers, 16 warps) and staged (the
# next pair's loads copied to shared memory with cp.async during the current pair). Checks of
# the staged kernel (forced rounds, oracle and EIP vectors, memcheck), then G1 2^24 with
# per-round times for each. Needs gpu-bin/{gpu,cuzk-cuda-bench}. Logs go to $OUT.
cd "$(dirname "$0")/../.."
export CUZK_CUDA_CACHE=$PWD/gpu-bin/cache CUZK_VECTORS=$PWD/gpu-bin/vectors
B=$PWD/gpu-bin
S=$OUT/summary.txt
T=$OUT/tests.txt
CUZK_MSM_FINISH=staged CUZK_MSM_AFFINE=1 CUZK_GPU_TEST_MAX_LOG_MSM=15 timeout 100 $B/gpu --test-threads=1 msm_g1 eip > $T 2>&1; echo "staged forced rc=$?" >> $S
CUZK_MSM_FINISH=lb CUZK_MSM_AFFINE=1 CUZK_GPU_TEST_MAX_LOG_MSM=12 timeout 100 $B/gpu --test-threads=1 msm_g eip >> $T 2>&1; echo "lb forced rc=$?" >> $S
CUZK_MSM_FINISH=staged CUZK_MSM_AFFINE=1 CUZK_GPU_TEST_MAX_LOG_MSM=10 timeout 100 /usr/local/cuda/bin/compute-sanitizer --tool memcheck $B/gpu --test-threads=1 msm_g1 > $OUT/memcheck.txt 2>&1; echo "memcheck rc=$?" >> $S
grep -hE "^test |test result|MISMATCH|panicked|ERROR SUMMARY" $T $OUT/memcheck.txt >> $S
P=$OUT/profile.txt
for V in plain lb staged plain staged; do
  echo "== $V" >> $P
  CUZK_MSM_FINISH=$V CUZK_MSM_PROFILE=1 timeout 60 $B/cuzk-cuda-bench g1 24 24 >> $P 2>&1; echo "profile $V rc=$?" >> $S
done
cat $S; grep -E "^==|^msm-profile|^msm g1" $P
