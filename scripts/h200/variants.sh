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
#   # two builds of the kernels (a change's before and after), same arguments
#   VARIANTS=" " BINS="gpu-bin/old/cuzk-cuda-kernels-dfc354a gpu-bin/cuzk-cuda-kernels" BENCH="g2 16 24" \
#     OUT=/tmp/msm-ab bash scripts/h200/variants.sh
#
# BINS lists the cuzk-cuda-kernels binaries to alternate (default gpu-bin/cuzk-cuda-kernels;
# paths from the current directory or absolute; one whose .gz alone is there is unpacked).
# Logs and summary.txt go to $OUT.
source "$(dirname "$0")/common.sh"
VARIANTS=${VARIANTS:-"affine auto; affine never"}
BENCH=${BENCH:-"g1 20 24 g2 20 24"}
ROUNDS=${ROUNDS:-2}
BINS=${BINS:-$BIN/cuzk-cuda-kernels}
IFS=';' read -ra VS <<< "$VARIANTS"
read -ra BS <<< "$BINS"
for k in "${!BS[@]}"; do case ${BS[$k]} in /*) ;; *) BS[$k]=$PWD/${BS[$k]} ;; esac; done
need "${BS[@]}"

for round in $(seq 1 "$ROUNDS"); do
  for k in "${!BS[@]}"; do
    i=0
    for v in "${VS[@]}"; do
      a=$(echo $v)
      name=bench-b$k-$i-r$round
      # shellcheck disable=SC2086
      step $name 300 "${BS[$k]}" $a $BENCH
      note "binary $k ($(basename "${BS[$k]}")), variant $i ($a), round $round: $(grep -E '^(# batch-affine|# last-level|ntt|compute_h|msm|upload)' "$OUT/$name.txt" | tr '\n' ' ')"
      i=$((i + 1))
    done
  done
done
