#!/usr/bin/env bash
# Session 9, call 7 (final): on the final tree, whole proofs byte-identical to the CPU backend's
# (`proof`), then the 2^27 SHA-256 partition, first upload -> proof (its timing-only parameters
# take ~135 s to generate). Needs gpu-bin/{proof,prove}. Logs go to $OUT.
cd "$(dirname "$0")/../.."
export CUZK_CUDA_CACHE=$PWD/gpu-bin/cache CUZK_VECTORS=$PWD/gpu-bin/vectors
B=$PWD/gpu-bin
S=$OUT/summary.txt
timeout 70 $B/proof > $OUT/proof.txt 2>&1; echo "proof rc=$?" >> $S
grep -hE "^test |test result|panicked" $OUT/proof.txt >> $S
t0=$(date +%s); CUZK_BENCH_STAGE_WAIT=0 CUZK_BENCH_BACKENDS=cuda CUZK_BENCH_LOGS=27 CUZK_BENCH_CIRCUITS=sha256-chain CUZK_BENCH_TIMING_PARAMS_FROM=22 CUZK_BENCH_REPS=0 CUZK_BENCH_PIPELINE=0 CUZK_BENCH_PCE=0 timeout 260 $B/prove --bench > $OUT/prove27.txt 2>&1; echo "prove27 rc=$? $(( $(date +%s)-t0 ))s" >> $S
grep -E "\| sha|latency|first upload" $OUT/prove27.txt | cut -c1-300 | tail -6 >> $S
cat $S
