#!/usr/bin/env bash
# Session 6, call 7: the windowed scatter only for dense digit sets (2·entries ≥ windows·scalars),
# checked (G1 MSM against the oracle, proofs), then the 2^27 SHA-256 partition again.
cd "$(dirname "$0")/../.."
export CUZK_CUDA_CACHE=$PWD/gpu-bin/cache CUZK_VECTORS=$PWD/gpu-bin/vectors
B=$PWD/gpu-bin
S=$OUT/summary.txt
timeout 100 $B/gpu --test-threads=1 msm_g1 eip > $OUT/gpu.txt 2>&1; echo "gpu rc=$?" >> $S
timeout 60 $B/proof > $OUT/proof.txt 2>&1; echo "proof rc=$?" >> $S
grep -hE "^test |test result" $OUT/gpu.txt $OUT/proof.txt >> $S
t0=$(date +%s); CUZK_BENCH_STAGE_WAIT=0 CUZK_BENCH_BACKENDS=cuda CUZK_BENCH_LOGS=27 CUZK_BENCH_CIRCUITS=sha256-chain CUZK_BENCH_TIMING_PARAMS_FROM=22 CUZK_BENCH_REPS=0 CUZK_BENCH_PIPELINE=0 CUZK_BENCH_PCE=0 timeout 400 $B/prove --bench > $OUT/prove27.txt 2>&1; echo "prove27 rc=$? $(( $(date +%s)-t0 ))s" >> $S
cat $S; grep -E "\| sha|latency|proof" $OUT/prove27.txt | cut -c1-300 | tail -6
