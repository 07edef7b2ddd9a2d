#!/usr/bin/env bash
# Session 8, call 9 (final): G1/G2 sweeps, the 2^27 SHA-256 partition (first upload -> proof),
# the G1 oracle test up to 2^24 (the batch-affine rounds' default rule at full size), G2 to 2^18
# with the EIP vectors, and the whole proof. Needs gpu-bin/{gpu,proof,prove,cuzk-cuda-bench}.
cd "$(dirname "$0")/../.."
export CUZK_CUDA_CACHE=$PWD/gpu-bin/cache CUZK_VECTORS=$PWD/gpu-bin/vectors
B=$PWD/gpu-bin
S=$OUT/summary.txt
T=$OUT/tests.txt
timeout 150 $B/cuzk-cuda-bench g1 16 26 g2 16 24 > $OUT/sweep.txt 2>&1; echo "sweep rc=$?" >> $S
grep -E "^msm|^#" $OUT/sweep.txt >> $S
t0=$(date +%s); CUZK_BENCH_STAGE_WAIT=0 CUZK_BENCH_BACKENDS=cuda CUZK_BENCH_LOGS=27 CUZK_BENCH_CIRCUITS=sha256-chain CUZK_BENCH_TIMING_PARAMS_FROM=22 CUZK_BENCH_REPS=0 CUZK_BENCH_PIPELINE=0 CUZK_BENCH_PCE=0 timeout 150 $B/prove --bench > $OUT/prove27.txt 2>&1; echo "prove27 rc=$? $(( $(date +%s)-t0 ))s" >> $S
grep -E "\| sha|latency|first upload" $OUT/prove27.txt | cut -c1-300 | tail -6 >> $S
t0=$(date +%s); CUZK_GPU_TEST_MAX_LOG_MSM=24 timeout 180 $B/gpu --test-threads=1 --nocapture msm_g1 > $T 2>&1; echo "g1 oracle to 2^24 rc=$? $(( $(date +%s)-t0 ))s" >> $S
CUZK_GPU_TEST_MAX_LOG_MSM=18 CUZK_GPU_TEST_MAX_LOG_MSM_G2=18 timeout 100 $B/gpu --test-threads=1 msm_g2 eip >> $T 2>&1; echo "g2 to 2^18 + eip rc=$?" >> $S
timeout 60 $B/proof >> $T 2>&1; echo "proof rc=$?" >> $S
grep -hE "^test |test result|MISMATCH|panicked|^msm g1 2\^2" $T >> $S
cat $S
