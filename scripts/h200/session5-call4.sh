#!/bin/bash
# Session 5, call 4: the 2^27 SHA-256 partition without stage waits (copies overlap the transforms), then upload + compute_h at 2^27.
cd "$(dirname "$0")/../.."
export CUZK_CUDA_CACHE=$PWD/gpu-bin/cache CUZK_VECTORS=$PWD/gpu-bin/vectors
B=$PWD/gpu-bin
S=$OUT/summary.txt
nvidia-smi -L > $S
t0=$(date +%s); CUZK_BENCH_STAGE_WAIT=0 CUZK_BENCH_BACKENDS=cuda CUZK_BENCH_LOGS=27 CUZK_BENCH_CIRCUITS=sha256-chain CUZK_BENCH_TIMING_PARAMS_FROM=22 CUZK_BENCH_REPS=0 CUZK_BENCH_PIPELINE=0 CUZK_BENCH_PCE=0 timeout 380 $B/prove --bench > $OUT/prove27.txt 2>&1; echo "prove27 rc=$? $(( $(date +%s)-t0 ))s" >> $S
t0=$(date +%s); timeout 60 $B/cuzk-cuda-bench h 27 27 > $OUT/h27.txt 2>&1; echo "h27 rc=$? $(( $(date +%s)-t0 ))s" >> $S
cat $S; grep -E "\| sha|upload|param" $OUT/prove27.txt | cut -c1-300 | tail -14; cat $OUT/h27.txt
