#!/usr/bin/env bash
# Session 6, call 6: the 2^27 SHA-256 partition, first upload to proof (no stage waits), with
# this session's kernels (FP64 twiddle products, windowed scatter). Needs gpu-bin/prove.
cd "$(dirname "$0")/../.."
export CUZK_CUDA_CACHE=$PWD/gpu-bin/cache CUZK_VECTORS=$PWD/gpu-bin/vectors
B=$PWD/gpu-bin
S=$OUT/summary.txt
nvidia-smi -L > $S
t0=$(date +%s); CUZK_BENCH_STAGE_WAIT=0 CUZK_BENCH_BACKENDS=cuda CUZK_BENCH_LOGS=27 CUZK_BENCH_CIRCUITS=sha256-chain CUZK_BENCH_TIMING_PARAMS_FROM=22 CUZK_BENCH_REPS=0 CUZK_BENCH_PIPELINE=0 CUZK_BENCH_PCE=0 timeout 420 $B/prove --bench > $OUT/prove27.txt 2>&1; echo "prove27 rc=$? $(( $(date +%s)-t0 ))s" >> $S
cat $S; grep -E "\| sha|upload|param|latency|proof" $OUT/prove27.txt | cut -c1-300 | tail -14
