#!/usr/bin/env bash
# Session 8, call 10: after call 9 showed G2 slowed by the launch-bounded finish (now G1 only):
# the G2 sweep, G1 2^24 once more, a forced-rounds G2 check, and the 2^27 SHA-256 partition
# (first upload -> proof; its timing-only parameters take ~135 s to generate).
# Needs gpu-bin/{gpu,prove,cuzk-cuda-bench}. Logs go to $OUT.
cd "$(dirname "$0")/../.."
export CUZK_CUDA_CACHE=$PWD/gpu-bin/cache CUZK_VECTORS=$PWD/gpu-bin/vectors
B=$PWD/gpu-bin
S=$OUT/summary.txt
timeout 80 $B/cuzk-cuda-bench g2 16 24 g1 24 24 > $OUT/sweep.txt 2>&1; echo "sweep rc=$?" >> $S
grep -E "^msm" $OUT/sweep.txt >> $S
CUZK_MSM_AFFINE=1 CUZK_GPU_TEST_MAX_LOG_MSM=12 timeout 40 $B/gpu --test-threads=1 msm_g2 > $OUT/tests.txt 2>&1; echo "g2 forced rc=$?" >> $S
grep -hE "^test |test result|MISMATCH|panicked" $OUT/tests.txt >> $S
t0=$(date +%s); CUZK_BENCH_STAGE_WAIT=0 CUZK_BENCH_BACKENDS=cuda CUZK_BENCH_LOGS=27 CUZK_BENCH_CIRCUITS=sha256-chain CUZK_BENCH_TIMING_PARAMS_FROM=22 CUZK_BENCH_REPS=0 CUZK_BENCH_PIPELINE=0 CUZK_BENCH_PCE=0 timeout 250 $B/prove --bench > $OUT/prove27.txt 2>&1; echo "prove27 rc=$? $(( $(date +%s)-t0 ))s" >> $S
grep -E "\| sha|latency|first upload" $OUT/prove27.txt | cut -c1-300 | tail -6 >> $S
cat $S
