#!/usr/bin/env bash
# Session 7, call 4: pair index written by whole warps (heavy buckets), checks, Nsight Compute
# on one group-round of the batch-affine rounds at G1 2^24, and the G1/G2 sweeps.
# Needs gpu-bin/{gpu,proof,cuzk-cuda-bench}. Logs go to $OUT (few files: only 8 come back).
cd "$(dirname "$0")/../.."
export CUZK_CUDA_CACHE=$PWD/gpu-bin/cache CUZK_VECTORS=$PWD/gpu-bin/vectors
B=$PWD/gpu-bin
S=$OUT/summary.txt
T=$OUT/tests.txt
CUZK_MSM_AFFINE=1 CUZK_GPU_TEST_MAX_LOG_MSM=16 timeout 150 $B/gpu --test-threads=1 msm eip streamed > $T 2>&1; echo "gpu forced rc=$?" >> $S
CUZK_GPU_TEST_MAX_LOG_MSM=20 CUZK_GPU_TEST_MAX_LOG_MSM_G2=18 timeout 150 $B/gpu --test-threads=1 msm_g >> $T 2>&1; echo "gpu default rc=$?" >> $S
timeout 60 $B/proof >> $T 2>&1; echo "proof rc=$?" >> $S
grep -hE "^test |test result|MISMATCH|panicked" $T >> $S
timeout 200 $B/cuzk-cuda-bench g1 16 24 g2 16 22 > $OUT/sweep.txt 2>&1; echo "sweep rc=$?" >> $S
grep -E "^msm" $OUT/sweep.txt >> $S
CUZK_MSM_PROFILE=1 timeout 60 $B/cuzk-cuda-bench g1 21 21 g1 24 24 > $OUT/profile.txt 2>&1; echo "profile rc=$?" >> $S
grep -E "^msm" $OUT/profile.txt >> $S
timeout 200 /usr/local/cuda/bin/ncu --clock-control none -k regex:'msm_pair_index|msm_affine|msm_inv' --launch-count 12 \
  --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
  $B/cuzk-cuda-bench g1 24 24 > $OUT/ncu.txt 2>&1; echo "ncu rc=$?" >> $S
grep -E "^  [a-z_0-9]+\(|Duration|Compute \(SM\) Throughput|Memory Throughput|Achieved Occupancy|Registers Per" $OUT/ncu.txt >> $S
cat $S
