#!/usr/bin/env bash
# CUDA kernels on the GPU host: the kernels against the CPU oracle (tests/tests/cuda_kernels.rs),
# compute-sanitizer, then the kernel timings of docs/perf-cuda.md (cuzk-cuda-kernels).
#
#   OUT=/tmp/kernels bash scripts/h200/kernels.sh                 # tests, sanitizer, bench
#   PARTS=full OUT=/tmp/kernels-full bash scripts/h200/kernels.sh # oracle tests at full size
#
# PARTS (default "tests sanitizer bench"), any of:
#   tests      cuda_kernels.rs at NTT 2^20, G1 MSM 2^20 (and 2^19's windowed scatter), G2 2^16, EIP-2537
#              vectors, streamed bases, concurrent uploads, bases loaded during MSMs; then the
#              *_batch_affine_* tests (every MSM through the batch-affine rounds, full and partial
#              plan) to G1 2^16, G2 2^12
#   full       cuda_kernels.rs at full size: NTT 2^1 … 2^26 (all four directions, compute_h to 2^24), G1
#              and G2 MSM 2^0 … 2^24 (about 7 minutes)
#   conformance  the shared suite on CUDA (tests/tests/cuda_conformance.rs), if built
#   eval       constraint evaluation (a, b, c = A·w, B·w, C·w) on random matrices of 2^20 and
#              2^24 rows of 1-7 entries and 2^18 rows of 16-48, every lane setting, checked
#              against the CPU oracle (cuda_conformance's ignored timing test)
#   sanitizer  memcheck on the small field, curve, NTT, MSM and pool tests (default sizes, and
#              the batch-affine tests to 2^10), racecheck on the NTT to 2^10
#   bench      cuzk-cuda-kernels h2d field ntt 20 27 h 20 26 g1 16 26 g2 16 24, and G1 and G2
#              2^24 with 90% bits among the scalars (bits 90 g1 24 24 g2 24 24); the G1 2^24 and
#              G2 2^24 phases (CUZK_MSM_PROFILE=1); overlap 24 4, h 27 27 (upload overlapping
#              compute_h), g1 22 24 g1s 22 24 (resident against streamed bases)
#   windows    the window-size sweep: cuzk-cuda-kernels cs 16,18,20 g1c 24 26 g2c 22 24
# Needs gpu-bin/{gpu,cuzk-cuda-kernels} and gpu-bin/vectors/. Logs and summary.txt go to $OUT.
source "$(dirname "$0")/common.sh"
need gpu cuzk-cuda-kernels
PARTS=${PARTS:-"tests sanitizer bench"}
G=$BIN/gpu
B=$BIN/cuzk-cuda-kernels
R='^test |test result|panicked|MISMATCH|mismatch'

for part in $PARTS; do
  case $part in
    tests)
      CUZK_GPU_TEST_MAX_LOG_NTT=20 CUZK_GPU_TEST_MAX_LOG_MSM=20 CUZK_GPU_TEST_MAX_LOG_MSM_G2=16 \
        step tests 300 "$G" --test-threads=1 --skip batch_affine
      pick "$OUT/tests.txt" "$R"
      CUZK_GPU_TEST_MAX_LOG_MSM_AFFINE=16 step tests-affine 200 "$G" --test-threads=1 batch_affine
      pick "$OUT/tests-affine.txt" "$R"
      ;;
    full)
      CUZK_GPU_TEST_MAX_LOG_NTT=26 step oracle-ntt 240 "$G" --test-threads=1 --nocapture ntt
      pick "$OUT/oracle-ntt.txt" "$R"
      CUZK_GPU_TEST_MAX_LOG_MSM=24 step oracle-g1 240 "$G" --test-threads=1 --nocapture --skip batch_affine msm_g1
      pick "$OUT/oracle-g1.txt" "$R|^msm g1 2\^2"
      CUZK_GPU_TEST_MAX_LOG_MSM=24 CUZK_GPU_TEST_MAX_LOG_MSM_G2=24 step oracle-g2 300 "$G" --test-threads=1 --nocapture --skip batch_affine msm_g2
      pick "$OUT/oracle-g2.txt" "$R|^msm g2 2\^2"
      ;;
    conformance)
      if [ -x "$BIN/cuda_conformance" ]; then
        CUZK_CONFORMANCE_MAX_LOG_NTT=22 CUZK_CONFORMANCE_MAX_LOG_MSM=20 CUZK_CONFORMANCE_MAX_LOG_MSM_G2=16 \
          step conformance 300 "$BIN/cuda_conformance" --test-threads=1 --nocapture
        pick "$OUT/conformance.txt" "$R|EIP-2537"
      else
        note "conformance: $BIN/cuda_conformance not built, skipped"
      fi
      ;;
    eval)
      need cuda_conformance
      step eval 200 "$BIN/cuda_conformance" --test-threads=1 --ignored --nocapture cuda_constraint_evaluation_timing
      pick "$OUT/eval.txt" 'eval timing|test result'
      ;;
    sanitizer)
      step memcheck 200 "$SANITIZER" --tool memcheck "$G" --test-threads=1 --skip batch_affine field_ops curve_ops ntt_small msm pinned
      CUZK_GPU_TEST_MAX_LOG_MSM_AFFINE=10 step memcheck-affine 150 "$SANITIZER" --tool memcheck "$G" --test-threads=1 \
        msm_g1_batch_affine msm_g2_batch_affine
      CUZK_GPU_TEST_MAX_LOG_NTT=10 step racecheck 150 "$SANITIZER" --tool racecheck "$G" --test-threads=1 ntt_matches
      pick "$OUT/memcheck.txt" 'ERROR SUMMARY|test result'
      pick "$OUT/memcheck-affine.txt" 'ERROR SUMMARY|test result'
      pick "$OUT/racecheck.txt" 'RACECHECK SUMMARY|test result'
      ;;
    bench)
      step bench 400 "$B" h2d field ntt 20 27 h 20 26 g1 16 26 g2 16 24 bits 90 g1 24 24 g2 24 24
      pick "$OUT/bench.txt" '^(# device|# kernel|h2d|ntt|compute_h|upload|Fr|Fp|msm)'
      CUZK_MSM_PROFILE=1 step msm-profile 120 "$B" g1 24 24 g2 24 24
      pick "$OUT/msm-profile.txt" '^msm'
      step overlap 300 "$B" overlap 24 4 h 27 27 g1 22 24 g1s 22 24
      pick "$OUT/overlap.txt" '^(overlap|upload|compute_h|msm)'
      ;;
    windows)
      step windows 400 "$B" cs 16,18,20 g1c 24 26 g2c 22 24
      pick "$OUT/windows.txt" '^msm'
      ;;
    *) note "unknown part $part" ;;
  esac
done
