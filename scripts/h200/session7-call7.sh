#!/usr/bin/env bash
# Session 7, call 7: staggered groups, plain atomics in the windowed scatter when no bucket is
# heavy. Checks (forced full plan, default rule, proofs), G1 2^24 phases (default, no stagger,
# no batch-affine rounds), the 2^27 SHA-256 partition, then the G1/G2 sweeps.
# Needs gpu-bin/{gpu,proof,prove,cuzk-cuda-bench}. Logs go to $OUT (8 files at most come back).
cd "$(dirname "$0")/../.."
export CUZK_CUDA_CACHE=$PWD/gpu-bin/cache CUZK_VECTORS=$PWD/gpu-bin/vectors
B=$PWD/gpu-bin
S=$OUT/summary.txt
T=$OUT/tests.txt
CUZK_MSM_AFFINE=1 CUZK_GPU_TEST_MAX_LOG_MSM=16 timeout 150 $B/gpu --test-threads=1 msm eip > $T 2>&1; echo "gpu forced full rc=$?" >> $S
CUZK_GPU_TEST_MAX_LOG_MSM=20 CUZK_GPU_TEST_MAX_LOG_MSM_G2=18 timeout 150 $B/gpu --test-threads=1 msm_g eip streamed >> $T 2>&1; echo "gpu default rc=$?" >> $S
timeout 60 $B/proof >> $T 2>&1; echo "proof rc=$?" >> $S
grep -hE "^test |test result|MISMATCH|panicked" $T >> $S
P=$OUT/profile.txt
for V in "" "CUZK_MSM_AFFINE_STAGGER=0" "CUZK_MSM_AFFINE=0"; do
  echo "== $V" >> $P
  env $V CUZK_MSM_PROFILE=1 timeout 60 $B/cuzk-cuda-bench g1 24 24 >> $P 2>&1; echo "profile [$V] rc=$?" >> $S
done
grep -E "^==|^msm" $P | grep -vE "msm-profile.*(total 1[2-9][0-9]\.)" >> $S
t0=$(date +%s); CUZK_BENCH_STAGE_WAIT=0 CUZK_BENCH_BACKENDS=cuda CUZK_BENCH_LOGS=27 CUZK_BENCH_CIRCUITS=sha256-chain CUZK_BENCH_TIMING_PARAMS_FROM=22 CUZK_BENCH_REPS=0 CUZK_BENCH_PIPELINE=0 CUZK_BENCH_PCE=0 timeout 330 $B/prove --bench > $OUT/prove27.txt 2>&1; echo "prove27 rc=$? $(( $(date +%s)-t0 ))s" >> $S
grep -E "\| sha|latency|first upload" $OUT/prove27.txt | cut -c1-300 | tail -6 >> $S
timeout 140 $B/cuzk-cuda-bench g1 16 26 g2 16 24 > $OUT/sweep.txt 2>&1; echo "sweep rc=$?" >> $S
grep -E "^msm" $OUT/sweep.txt >> $S
cat $S
