#!/usr/bin/env bash
# Session 7, call 8: compute-sanitizer on the default G1/G2 MSM tests (2^19 takes the windowed
# scatter with plain atomics and the batch-affine rule's sizes below it), then whole proofs
# (synthesis included) at 2^20 and 2^24 for the issue's point 3, one warmed proof each.
# Needs gpu-bin/{gpu,prove}. Logs go to $OUT.
cd "$(dirname "$0")/../.."
export CUZK_CUDA_CACHE=$PWD/gpu-bin/cache CUZK_VECTORS=$PWD/gpu-bin/vectors
B=$PWD/gpu-bin
S=$OUT/summary.txt
CUZK_GPU_TEST_MAX_LOG_MSM=12 timeout 110 /usr/local/cuda/bin/compute-sanitizer --tool memcheck $B/gpu --test-threads=1 msm_g > $OUT/memcheck.txt 2>&1; echo "memcheck rc=$?" >> $S
grep -E "ERROR SUMMARY|test result|^test " $OUT/memcheck.txt >> $S
t0=$(date +%s); CUZK_BENCH_BACKENDS=cuda CUZK_BENCH_LOGS=20,24 CUZK_BENCH_TIMING_PARAMS_FROM=20 CUZK_BENCH_REPS=1 CUZK_BENCH_PIPELINE=0 timeout 250 $B/prove --bench > $OUT/prove.txt 2>&1; echo "prove rc=$? $(( $(date +%s)-t0 ))s" >> $S
grep -E "^\|" $OUT/prove.txt | cut -c1-300 >> $S
cat $S
