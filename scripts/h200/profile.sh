#!/usr/bin/env bash
# Profiles of the CUDA kernels on the GPU host: what bounds them (docs/perf-cuda.md).
#
#   OUT=/tmp/profile bash scripts/h200/profile.sh
#
# PARTS (default "phases ntt msm"), any of:
#   phases   CUZK_MSM_PROFILE=1 cuzk-cuda-kernels g1 24 24 g2 24 24: per-phase MSM times and, per
#            group of batch-affine rounds, each round's pairs / prefix / inversion / finish
#   ntt      Nsight Compute on the passes of one 2^24 forward NTT after the warm-up (speed of
#            light, pipes, stalls, occupancy), and the pipe utilisation metrics
#   msm      Nsight Compute on the G1 2^24 MSM's sort, round and window-sum kernels, and the
#            duration of every kernel of the warm-up MSM (kernels serialized; CSV)
#   partition  whole partitions, one after another (`prove --bench --backends cuda
#            --fil-shape-proofs $SHAPES`, default 32g,snap-32g), with the backend's device
#            timeline on (CUZK_GPU_TIMELINE): the evaluation, compute_h and each MSM with its
#            device time, and the time the stream had nothing to run (partition-timeline.txt,
#            by gpu-timeline.awk). Nsight Systems is not used: on the GPU hosts its nsys records
#            but cannot write a report.
# Needs gpu-bin/cuzk-cuda-kernels (and gpu-bin/prove for partition). Logs and summary.txt go to $OUT.
source "$(dirname "$0")/common.sh"
need cuzk-cuda-kernels
PARTS=${PARTS:-"phases ntt msm"}
B=$BIN/cuzk-cuda-kernels
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /usr/local/cuda*/nsight-compute*/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
SECTIONS="--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats
  --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section InstructionStats"
# Pipe utilisation and shared-memory bank conflicts, as far as this ncu knows them.
metrics() {
  "$NCU" --query-metrics 2>/dev/null | awk '{print $1}' \
    | grep -E "^sm__(pipe_(alu|fma|fmaheavy|fp64|shared)_cycles_active|inst_executed_pipe_(lsu|alu|fma|fp64|uniform|adu))$|^l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_(ld|st)$" \
    | sed 's/$/.avg.pct_of_peak_sustained_active/' | paste -sd, -
}

for part in $PARTS; do
  case $part in
    phases)
      CUZK_MSM_PROFILE=1 step phases 150 "$B" g1 24 24 g2 24 24
      pick "$OUT/phases.txt" '^msm'
      ;;
    ntt)
      [ -n "$NCU" ] || { note "ntt: no ncu"; continue; }
      "$NCU" --version > "$OUT/ncu-version.txt" 2>&1
      # shellcheck disable=SC2086
      step ncu-ntt 200 "$NCU" --clock-control none -k regex:'ntt_pass|ntt_bitrev' --launch-skip 4 --launch-count 4 $SECTIONS \
        --print-details all "$B" ntt 24 24
      step ncu-ntt-pipes 150 "$NCU" --clock-control none -k regex:'ntt_pass|ntt_bitrev' --launch-skip 4 --launch-count 4 \
        --metrics "$(metrics)" "$B" ntt 24 24
      ;;
    msm)
      [ -n "$NCU" ] || { note "msm: no ncu"; continue; }
      # shellcheck disable=SC2086
      step ncu-msm 300 "$NCU" --clock-control none \
        -k regex:'msm_histogram|msm_window_keys|msm_scatter|msm_pair_index|msm_affine|msm_inv|msm_window_segments' \
        --launch-count 24 $SECTIONS "$B" g1 24 24
      step ncu-msm-durations 300 "$NCU" --clock-control none --launch-count 420 --metrics gpu__time_duration.sum --csv \
        --print-units base "$B" g1 24 24
      ;;
    partition)
      need prove
      CUZK_GPU_TIMELINE=$OUT/part-timeline.csv step partition 540 "$BIN/prove" --bench --backends cuda \
        --fil-shape-proofs "${SHAPES:-32g,snap-32g}"
      pick "$OUT/partition.txt" 'partition|proof'
      sort -t, -k4,4g "$OUT/part-timeline.csv" | awk -F, -f "$(dirname "$0")/gpu-timeline.awk" > "$OUT/partition-timeline.txt" 2>&1
      cat "$OUT/partition-timeline.txt" >> "$OUT/summary.txt"
      gzip -f "$OUT/part-timeline.csv"
      ;;
    *) note "unknown part $part" ;;
  esac
done
