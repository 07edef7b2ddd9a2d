#!/usr/bin/env bash
# A/B of MSM plans in one run on the GPU host: the figures behind the "Decisions" of
# docs/perf-cuda.md that can still be reproduced. Each variant is a list of cuzk-cuda-kernels
# arguments put in front of $BENCH (variants separated by ';'; `affine RULE` sets the
# batch-affine rule of the MSMs after it: auto, the prover's, never, always or partial, and
# `cs C,C,...` the window sizes of g1c / g2c). ROUNDS rounds run `cuzk-cuda-kernels VARIANT $BENCH`
# for every variant in turn, so that the host's drift falls on all of them alike. The forced
# plans' correctness is checked by cuda_kernels.rs's *_batch_affine_* tests (kernels.sh, part tests).
#
#   # batch-affine rounds (the default) against XYZZ rounds only
#   OUT=/tmp/msm-ab bash scripts/h200/variants.sh
#   # full against partial rounds at G1 2^24
#   VARIANTS="affine auto; affine partial" BENCH="g1 24 24" OUT=/tmp/msm-ab bash scripts/h200/variants.sh
#
# Needs gpu-bin/cuzk-cuda-kernels. Logs and summary.txt go to $OUT.
source "$(dirname "$0")/common.sh"
need cuzk-cuda-kernels
VARIANTS=${VARIANTS:-"affine auto; affine never"}
BENCH=${BENCH:-"g1 20 24 g2 20 24"}
ROUNDS=${ROUNDS:-2}
IFS=';' read -ra VS <<< "$VARIANTS"

for round in $(seq 1 "$ROUNDS"); do
  i=0
  for v in "${VS[@]}"; do
    a=$(echo $v)
    # shellcheck disable=SC2086
    step bench-$i-r$round 300 "$BIN/cuzk-cuda-kernels" $a $BENCH
    note "variant $i ($a), round $round: $(grep -E '^(# batch-affine|ntt|compute_h|msm|upload)' "$OUT/bench-$i-r$round.txt" | tr '\n' ' ')"
    i=$((i + 1))
  done
done
