#!/usr/bin/env bash
# Whole proofs on the GPU host: GPU proofs byte-identical to the CPU backend's
# (backend-cuda/tests/proof.rs), then the whole-partition bench (tests/benches/prove.rs) on
# the CUDA backend, as in docs/perf.md "Whole proofs on the H200".
#
#   OUT=/tmp/proofs bash scripts/h200/proofs.sh                        # proof + latency
#   PARTS=partition27 OUT=/tmp/p27 bash scripts/h200/proofs.sh         # about 5 minutes
#
# PARTS (default "proof latency"), any of:
#   proof        whole proofs on CudaBackend equal CpuBackend's, byte for byte, and verify
#   latency      one warmed proof per circuit at 2^20 and 2^24, synthesis included, timing-only
#                parameters (the comparison with bellperson's GPU provers)
#   pipelined    per-stage medians and 8 proofs with 8 synthesis workers feeding the GPU, at
#                2^20, 2^22, 2^24 (real parameters at 2^20, timing-only from 2^22)
#   partition27  the 2^27 SHA-256 partition, first upload -> proof, no stage waits (its
#                timing-only parameters take 135-175 s to generate)
# Needs gpu-bin/{proof,prove}. Logs and summary.txt go to $OUT.
source "$(dirname "$0")/common.sh"
PARTS=${PARTS:-"proof latency"}
P=$BIN/prove

for part in $PARTS; do
  case $part in
    proof)
      need proof
      step proof 150 "$BIN/proof" --test-threads=1
      pick "$OUT/proof.txt" '^test |test result|panicked'
      ;;
    latency)
      need prove
      CUZK_BENCH_BACKENDS=cuda CUZK_BENCH_LOGS=20,24 CUZK_BENCH_TIMING_PARAMS_FROM=20 CUZK_BENCH_REPS=1 \
        CUZK_BENCH_PIPELINE=0 step latency 450 "$P" --bench
      pick "$OUT/latency.txt" '^\|' | cut -c1-300
      ;;
    pipelined)
      need prove
      CUZK_BENCH_BACKENDS=cuda CUZK_BENCH_LOGS=20,22,24 CUZK_BENCH_TIMING_PARAMS_FROM=22 CUZK_BENCH_REPS=2 \
        CUZK_BENCH_PIPELINE=8 CUZK_BENCH_SYNTH_WORKERS=8 step pipelined 560 "$P" --bench
      pick "$OUT/pipelined.txt" '^\||synth|param' | cut -c1-300
      ;;
    partition27)
      need prove
      CUZK_BENCH_STAGE_WAIT=0 CUZK_BENCH_BACKENDS=cuda CUZK_BENCH_LOGS=27 CUZK_BENCH_CIRCUITS=sha256-chain \
        CUZK_BENCH_TIMING_PARAMS_FROM=22 CUZK_BENCH_REPS=0 CUZK_BENCH_PIPELINE=0 CUZK_BENCH_PCE=0 \
        step partition27 560 "$P" --bench
      pick "$OUT/partition27.txt" '\| sha|latency|first upload|param' | cut -c1-300
      ;;
    *) note "unknown part $part" ;;
  esac
done
