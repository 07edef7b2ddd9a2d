#!/bin/bash
# Session 5, call 1: wgpu on the H200 (issue 7), product throughput, compute_h with overlapped copies, checks.
cd "$(dirname "$0")/../.."
export CUZK_CUDA_CACHE=$PWD/gpu-bin/cache CUZK_VECTORS=$PWD/gpu-bin/vectors
B=$PWD/gpu-bin
S=$OUT/summary.txt
s() { echo "$1 rc=$2 $(( $(date +%s)-$3 ))s" >> $S; }
nvidia-smi -L > $S
t0=$(date +%s); timeout 120 $B/cuzk-cuda-bench field h 24 24 ntt 24 24 > $OUT/bench.txt 2>&1; s bench $? $t0
t0=$(date +%s); CUZK_GPU_TEST_MAX_LOG_NTT=20 timeout 90 $B/gpu --test-threads=1 ntt field concurrent > $OUT/tests.txt 2>&1; s gpu_ntt $? $t0
t0=$(date +%s); timeout 60 $B/proof --test-threads=1 >> $OUT/tests.txt 2>&1; s proof $? $t0
t0=$(date +%s); for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig; export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p $OUT/wgpu; OUT=$OUT/wgpu T_CONF=200 T_BENCH=200 bash scripts/h200/wgpu.sh > $OUT/wgpu.txt 2>&1; s wgpu $? $t0
cat $S; cat $OUT/bench.txt; grep -E "^test |test result|panicked" $OUT/tests.txt | tail -30; grep -E "test result|passed|FAIL|panick|SKIP" $OUT/wgpu/conformance.txt | head; cat $OUT/wgpu/bench.md
