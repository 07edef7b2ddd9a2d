#!/usr/bin/env bash
# Nsight Compute profiles of the NTT passes (2^24 forward: three passes and the bit reversal)
# and of the G1 MSM's phases at 2^24 (histogram, scatter, round 1, window sums), to find what
# bounds them. Needs gpu-bin/cuzk-cuda-bench. Logs go to $OUT.
set -u
cd "$(dirname "$0")/../.."
BIN=${CUZK_BIN_DIR:-$PWD/gpu-bin}
OUT=${OUT:-/tmp/ncu-profile}
mkdir -p "$OUT"
export CUZK_CUDA_CACHE=$BIN/cache
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
echo "ncu: $NCU" > "$OUT/ncu-version.txt"; "$NCU" --version >> "$OUT/ncu-version.txt" 2>&1
SECTIONS="--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section InstructionStats"
"$NCU" --query-metrics 2>/dev/null | grep -E "^(sm__pipe_|sm__inst_executed_pipe_|l1tex__data_bank_conflicts_pipe_lsu_mem_shared)" | awk '{print $1}' > "$OUT/pipe-metrics.txt"
METRICS=$(grep -E "^sm__(pipe_(alu|fma|fmaheavy|fp64|shared)_cycles_active|inst_executed_pipe_(lsu|alu|fma|fp64|uniform|adu))$|^l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_(ld|st)$" "$OUT/pipe-metrics.txt" | sed 's/$/.avg.pct_of_peak_sustained_active/' | paste -sd, -)
echo "metrics: $METRICS" >> "$OUT/ncu-version.txt"
for v in "" CUZK_NTT_FP64; do
  CUZK_CUDA_DEFINES=$v timeout 200 "$NCU" --clock-control none -k regex:'ntt_pass|ntt_bitrev' --launch-skip 4 --launch-count 4 $SECTIONS \
    --print-details all "$BIN/cuzk-cuda-bench" ntt 24 24 > "$OUT/ncu-ntt${v:+-fp64}.txt" 2>&1; echo "rc=$?" >> "$OUT/ncu-ntt${v:+-fp64}.txt"
done
timeout 120 "$NCU" --clock-control none -k regex:'ntt_pass|ntt_bitrev' --launch-skip 4 --launch-count 4 --metrics "$METRICS" \
  "$BIN/cuzk-cuda-bench" ntt 24 24 > "$OUT/ncu-ntt-pipes.txt" 2>&1; echo "rc=$?" >> "$OUT/ncu-ntt-pipes.txt"
timeout 240 "$NCU" --clock-control none -k regex:'msm_histogram|msm_scatter|msm_accumulate_seg_g1|msm_window_segments_g1|msm_accumulate_xyzz_g1' \
  --launch-count 5 $SECTIONS --print-details all "$BIN/cuzk-cuda-bench" g1 24 24 > "$OUT/ncu-msm.txt" 2>&1; echo "rc=$?" >> "$OUT/ncu-msm.txt"
timeout 120 "$NCU" --clock-control none -k regex:'msm_scatter|msm_accumulate_seg_g1' --launch-count 2 --metrics "$METRICS" \
  "$BIN/cuzk-cuda-bench" g1 24 24 > "$OUT/ncu-msm-pipes.txt" 2>&1; echo "rc=$?" >> "$OUT/ncu-msm-pipes.txt"
tail -3 "$OUT"/ncu-*.txt
