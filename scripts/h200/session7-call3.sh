#!/usr/bin/env bash
# Session 7, call 3: batch-affine rounds with the step-wise binary Euclid (all factors of 2 at
# once) and the round count chosen from the bucket load. Checks (forced on every MSM, then the
# default rule), proofs, memcheck, the inversion's latency, G1 2^24 by round count, and the
# G1/G2 sweeps with the rounds on and off. Needs gpu-bin/{gpu,proof,cuzk-cuda-bench}.
cd "$(dirname "$0")/../.."
export CUZK_CUDA_CACHE=$PWD/gpu-bin/cache CUZK_VECTORS=$PWD/gpu-bin/vectors
B=$PWD/gpu-bin
S=$OUT/summary.txt
CUZK_MSM_AFFINE=1 CUZK_GPU_TEST_MAX_LOG_MSM=16 timeout 150 $B/gpu --test-threads=1 msm eip streamed > $OUT/gpu_forced.txt 2>&1; echo "gpu forced rc=$?" >> $S
grep -hE "^test |test result|MISMATCH|panicked" $OUT/gpu_forced.txt >> $S
CUZK_GPU_TEST_MAX_LOG_MSM=20 CUZK_GPU_TEST_MAX_LOG_MSM_G2=18 timeout 150 $B/gpu --test-threads=1 msm_g > $OUT/gpu_default.txt 2>&1; echo "gpu default rc=$?" >> $S
grep -hE "^test |test result|MISMATCH|panicked" $OUT/gpu_default.txt >> $S
timeout 60 $B/proof > $OUT/proof.txt 2>&1; echo "proof rc=$?" >> $S
grep -hE "^test |test result" $OUT/proof.txt >> $S
CUZK_MSM_AFFINE=1 CUZK_GPU_TEST_MAX_LOG_MSM=10 timeout 120 /usr/local/cuda/bin/compute-sanitizer --tool memcheck $B/gpu --test-threads=1 msm_g > $OUT/memcheck.txt 2>&1; echo "memcheck rc=$?" >> $S
grep -E "ERROR SUMMARY|test result" $OUT/memcheck.txt >> $S
timeout 60 $B/cuzk-cuda-bench field > $OUT/field.txt 2>&1; echo "field rc=$?" >> $S
grep -E "throughput|inversion" $OUT/field.txt >> $S
for R in 3 4 5; do
  CUZK_MSM_AFFINE_ROUNDS=$R CUZK_MSM_PROFILE=1 timeout 60 $B/cuzk-cuda-bench g1 24 24 > $OUT/bench_r$R.txt 2>&1; echo "bench R=$R rc=$?" >> $S
  grep -E "^msm" $OUT/bench_r$R.txt | tail -2 >> $S
done
CUZK_MSM_PROFILE=1 timeout 60 $B/cuzk-cuda-bench g1 21 22 > $OUT/bench_21.txt 2>&1; echo "bench 21-22 rc=$?" >> $S
grep -E "^msm" $OUT/bench_21.txt >> $S
for A in on 0; do
  E=""; [ $A = 0 ] && E="CUZK_MSM_AFFINE=0"
  env $E timeout 150 $B/cuzk-cuda-bench g1 16 24 g2 16 22 > $OUT/sweep_$A.txt 2>&1; echo "sweep affine=$A rc=$?" >> $S
  grep -E "^msm" $OUT/sweep_$A.txt >> $S
done
cat $S
