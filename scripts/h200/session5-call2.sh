#!/bin/bash
# Session 5, call 2: wgpu on the H200 with the compact kernels (now the default), conformance + bench.
cd "$(dirname "$0")/../.."
S=$OUT/summary.txt
nvidia-smi -L > $S
t0=$(date +%s); for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig; export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p $OUT/wgpu; OUT=$OUT/wgpu T_CONF=240 T_BENCH=200 bash scripts/h200/wgpu.sh > $OUT/wgpu.txt 2>&1; echo "wgpu rc=$? $(( $(date +%s)-t0 ))s" >> $S
cat $S; tail -25 $OUT/wgpu/compile.txt; grep -E "^test |test result|passed|FAIL|panick|SKIP" $OUT/wgpu/conformance.txt | head -20; cat $OUT/wgpu/bench.md
