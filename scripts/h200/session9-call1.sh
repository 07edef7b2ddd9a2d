#!/usr/bin/env bash
# Session 9, call 1: the G2 oracle test at full size (every size 2^0 … 2^24 against the CPU
# backend, then the density case at 2^24), on the tree of 85c1c8e (host-only review since the
# last GPU run), and the NTT / field baselines for this session's NTT work.
# Needs gpu-bin/{gpu,cuzk-cuda-bench}. Logs go to $OUT.
cd "$(dirname "$0")/../.."
export CUZK_CUDA_CACHE=$PWD/gpu-bin/cache CUZK_VECTORS=$PWD/gpu-bin/vectors
B=$PWD/gpu-bin
S=$OUT/summary.txt
timeout 60 $B/cuzk-cuda-bench ntt 20 27 field > $OUT/bench.txt 2>&1; echo "bench rc=$?" >> $S
grep -vE "^\s*$" $OUT/bench.txt | tail -20 >> $S
t0=$(date +%s); CUZK_GPU_TEST_MAX_LOG_MSM=24 CUZK_GPU_TEST_MAX_LOG_MSM_G2=24 timeout 450 $B/gpu --test-threads=1 --nocapture msm_g2 > $OUT/g2.txt 2>&1; echo "g2 oracle to 2^24 rc=$? $(( $(date +%s)-t0 ))s" >> $S
grep -hE "^test |test result|MISMATCH|panicked|^msm g2" $OUT/g2.txt >> $S
cat $S
