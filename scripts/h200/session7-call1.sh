#!/usr/bin/env bash
# Session 7, call 1: batch-affine bucket rounds. Checks (forced on every MSM, then the default
# rule), the proofs, memcheck on small forced MSMs, and G1 2^24 / G2 2^22 timings by round
# count. Needs gpu-bin/{gpu,proof,cuzk-cuda-bench}. Logs go to $OUT.
cd "$(dirname "$0")/../.."
export CUZK_CUDA_CACHE=$PWD/gpu-bin/cache CUZK_VECTORS=$PWD/gpu-bin/vectors
B=$PWD/gpu-bin
S=$OUT/summary.txt
CUZK_MSM_AFFINE=1 CUZK_GPU_TEST_MAX_LOG_MSM=16 timeout 150 $B/gpu --test-threads=1 msm eip streamed > $OUT/gpu_forced.txt 2>&1; echo "gpu forced rc=$?" >> $S
grep -hE "^test |test result|MISMATCH|panicked" $OUT/gpu_forced.txt >> $S
CUZK_MSM_PROFILE=1 timeout 100 $B/cuzk-cuda-bench g1 24 24 > $OUT/bench_r3.txt 2>&1; echo "bench r3 rc=$?" >> $S
grep -E "^msm" $OUT/bench_r3.txt >> $S
CUZK_MSM_AFFINE=0 CUZK_MSM_PROFILE=1 timeout 100 $B/cuzk-cuda-bench g1 24 24 > $OUT/bench_off.txt 2>&1; echo "bench off rc=$?" >> $S
grep -E "^msm" $OUT/bench_off.txt >> $S
CUZK_GPU_TEST_MAX_LOG_MSM=20 timeout 150 $B/gpu --test-threads=1 msm_g1 > $OUT/gpu_default.txt 2>&1; echo "gpu default rc=$?" >> $S
grep -hE "^test |test result|MISMATCH|panicked" $OUT/gpu_default.txt >> $S
for R in 2 4 5; do
  CUZK_MSM_AFFINE_ROUNDS=$R CUZK_MSM_PROFILE=1 timeout 60 $B/cuzk-cuda-bench g1 24 24 > $OUT/bench_r$R.txt 2>&1; echo "bench r$R rc=$?" >> $S
  grep -E "^msm" $OUT/bench_r$R.txt >> $S
done
for A in 0 1; do
  CUZK_MSM_AFFINE=$A CUZK_MSM_PROFILE=1 timeout 60 $B/cuzk-cuda-bench g2 22 22 > $OUT/bench_g2_a$A.txt 2>&1; echo "bench g2 affine=$A rc=$?" >> $S
  grep -E "^msm" $OUT/bench_g2_a$A.txt >> $S
done
timeout 60 $B/proof > $OUT/proof.txt 2>&1; echo "proof rc=$?" >> $S
grep -hE "^test |test result" $OUT/proof.txt >> $S
CUZK_MSM_AFFINE=1 CUZK_GPU_TEST_MAX_LOG_MSM=10 timeout 120 /usr/local/cuda/bin/compute-sanitizer --tool memcheck $B/gpu --test-threads=1 msm_g1 > $OUT/memcheck.txt 2>&1; echo "memcheck rc=$?" >> $S
grep -E "ERROR SUMMARY|test result" $OUT/memcheck.txt >> $S
cat $S
