#!/usr/bin/env bash
# Whole proofs on the GPU host: GPU proofs byte-identical to the CPU backend's
# (tests/tests/cuda_proof.rs), then the whole-partition bench (tests/benches/prove.rs) on
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
#   matrices     sha256-chain 2^20 and 2^24, one proof without stage waits and pipelined: with
#                recorded matrices (a parallel witness, a, b, c evaluated on the GPU or as host
#                products) and without (full synthesis); the host's synthesis split per part
#   matrices27   the 2^27 SHA-256 partition with recorded matrices and GPU evaluation, as
#                partition27 (about 6 minutes: recording, timing-only parameters)
#   filecoin     2 KiB PoRep and SnapDeals partitions through the witness path (a, b, c
#                evaluated and checked on the GPU) and the host path (host products and check),
#                on CUDA and CPU: witness and product CPU time, bytes copied and held, GPU
#                evaluation and check (random parameters made with cuzk-setup: about 5 minutes
#                on the first run, kept in $FIL_DIR, default /tmp/cuzk-prove-fil)
#   partition27  the 2^27 SHA-256 partition, first upload -> proof, no stage waits (its
#                timing-only parameters take 135-175 s to generate and are made resident
#                from memory: their parameter file would be 77 GB)
# The bench runs every stage through the worker; latency and pipelined write each circuit's
# parameters (up to about 10 GB at 2^24) to a file in $TMPDIR (default /tmp) for it to load.
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
      step latency 450 "$P" --bench --backends cuda --logs 20,24 --timing-params-from 20 --reps 1 --pipeline 0
      pick "$OUT/latency.txt" '^\|' | cut -c1-300
      ;;
    pipelined)
      need prove
      step pipelined 560 "$P" --bench --backends cuda --logs 20,22,24 --timing-params-from 22 --reps 2 \
        --pipeline 8 --synth-workers 8
      pick "$OUT/pipelined.txt" '^\||synth|param' | cut -c1-300
      ;;
    matrices)
      need prove
      step matrices-on 400 "$P" --bench --stage-wait off --backends cuda --logs 20,24 --circuits sha256-chain \
        --timing-params-from 20 --reps 3 --pipeline 6 --synth-workers 2 --matrices on --eval gpu,host
      pick "$OUT/matrices-on.txt" '^\||^synthesis |^bytes ' | cut -c1-400
      step matrices-off 300 "$P" --bench --stage-wait off --backends cuda --logs 20,24 --circuits sha256-chain \
        --timing-params-from 20 --reps 3 --pipeline 6 --matrices off
      pick "$OUT/matrices-off.txt" '^\|' | cut -c1-300
      ;;
    matrices27)
      need prove
      step matrices27 560 "$P" --bench --stage-wait off --backends cuda --logs 27 --circuits sha256-chain \
        --timing-params-from 22 --timing-params-in-memory --reps 0 --pipeline 0 --matrices on --eval gpu
      pick "$OUT/matrices27.txt" '^\||^synthesis |^bytes |first upload|param|recorded' | cut -c1-400
      ;;
    filecoin)
      need prove
      step filecoin 900 "$P" --bench --backends cuda,cpu --filecoin porep-2k,snap-2k --reps 3 --pipeline 0 \
        --fil-dir "${FIL_DIR:-/tmp/cuzk-prove-fil}"
      pick "$OUT/filecoin.txt" '^\||constraints|proofs of both' | cut -c1-400
      ;;
    partition27)
      need prove
      step partition27 560 "$P" --bench --stage-wait off --backends cuda --logs 27 --circuits sha256-chain \
        --timing-params-from 22 --timing-params-in-memory --reps 0 --pipeline 0 --matrices off
      pick "$OUT/partition27.txt" '\| sha|latency|first upload|param' | cut -c1-300
      ;;
    *) note "unknown part $part" ;;
  esac
done
