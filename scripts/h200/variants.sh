#!/usr/bin/env bash
# A/B of kernel builds and tuning variables in one run on the GPU host: the figures behind the
# "Decisions" of docs/perf-cuda.md. Each variant is a set of environment assignments, variants
# are separated by ';', and `default` is the backend's own choice. Every variant first runs the
# oracle tests in TESTS (small sizes), then ROUNDS rounds run `cuzk-cuda-bench $BENCH` for
# every variant in turn, so that the host's drift falls on all of them alike.
#
#   # the NTT's products: FP64 with the register cap (the sm_90 default), IMAD, FP64 uncapped
#   OUT=/tmp/ntt-ab bash scripts/h200/variants.sh
#   # batch-affine rounds off, the unbounded G1 finish pass, other group and inversion sizes
#   VARIANTS="default; CUZK_MSM_AFFINE=0; CUZK_MSM_FINISH=plain; CUZK_MSM_AFFINE_GROUP=28; CUZK_MSM_INV_EACH_MAX=1024" \
#     BENCH="g1 24 24" TESTS="msm eip" OUT=/tmp/msm-ab bash scripts/h200/variants.sh
#
# Variables the backend reads (backend-cuda/src/msm.rs, device.rs, lib.rs): CUZK_CUDA_DEFINES
# (kernel #defines: CUZK_NTT_IMAD, CUZK_NTT_FP64, CUZK_NTT_LB, CUZK_REDC_LAG=n), CUZK_MSM_C,
# CUZK_MSM_SEG=0, CUZK_MSM_LB=1, CUZK_MSM_AFFINE=0|1, CUZK_MSM_AFFINE_ROUNDS,
# CUZK_MSM_AFFINE_FULL=0, CUZK_MSM_AFFINE_GROUP, CUZK_MSM_AFFINE_STAGGER=0,
# CUZK_MSM_INV_EACH_MAX, CUZK_MSM_FINISH=plain, CUZK_MSM_PROFILE=1, CUZK_CUDA_STREAM_ABOVE,
# CUZK_CUDA_STREAM_CHUNK. Needs gpu-bin/{gpu,cuzk-cuda-bench}. Logs and summary.txt go to $OUT.
source "$(dirname "$0")/common.sh"
need gpu cuzk-cuda-bench
VARIANTS=${VARIANTS:-"default; CUZK_CUDA_DEFINES=CUZK_NTT_IMAD; CUZK_CUDA_DEFINES=CUZK_NTT_FP64"}
BENCH=${BENCH:-"ntt 24 24 h 24 24 ntt 27 27"}
TESTS=${TESTS:-"ntt"}
ROUNDS=${ROUNDS:-2}
IFS=';' read -ra VS <<< "$VARIANTS"

assignments() { local v; v=$(echo $1); [ "$v" = default ] && v=""; echo "$v"; }

i=0
for v in "${VS[@]}"; do
  a=$(assignments "$v")
  note "== variant $i: ${a:-default}"
  if [ -n "$TESTS" ]; then
    # shellcheck disable=SC2086
    step tests-$i 200 env $a CUZK_GPU_TEST_MAX_LOG_NTT=20 CUZK_GPU_TEST_MAX_LOG_MSM=16 CUZK_GPU_TEST_MAX_LOG_MSM_G2=12 \
      "$BIN/gpu" --test-threads=1 $TESTS
    pick "$OUT/tests-$i.txt" 'test result|panicked|MISMATCH|mismatch|SKIPPED'
  fi
  i=$((i + 1))
done
for round in $(seq 1 "$ROUNDS"); do
  i=0
  for v in "${VS[@]}"; do
    a=$(assignments "$v")
    # shellcheck disable=SC2086
    step bench-$i-r$round 300 env $a "$BIN/cuzk-cuda-bench" $BENCH
    note "variant $i (${a:-default}), round $round: $(grep -E '^(# kernel defines|# regs ntt_pass|ntt|compute_h|msm|upload)' "$OUT/bench-$i-r$round.txt" | tr '\n' ' ')"
    i=$((i + 1))
  done
done
