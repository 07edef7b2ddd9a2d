#!/usr/bin/env bash
# Session 9, call 2: issue 4's point 3 again on the session-8 MSM: whole proofs (synthesis
# included) at 2^20 and 2^24, SHA-256 and squaring chains, one warmed proof each, timing-only
# parameters. Needs gpu-bin/prove. Logs go to $OUT.
cd "$(dirname "$0")/../.."
export CUZK_CUDA_CACHE=$PWD/gpu-bin/cache CUZK_VECTORS=$PWD/gpu-bin/vectors
B=$PWD/gpu-bin
S=$OUT/summary.txt
t0=$(date +%s); CUZK_BENCH_BACKENDS=cuda CUZK_BENCH_LOGS=20,24 CUZK_BENCH_TIMING_PARAMS_FROM=20 CUZK_BENCH_REPS=1 CUZK_BENCH_PIPELINE=0 timeout 400 $B/prove --bench > $OUT/prove.txt 2>&1; echo "prove rc=$? $(( $(date +%s)-t0 ))s" >> $S
grep -E "^\|" $OUT/prove.txt | cut -c1-300 >> $S
cat $S
