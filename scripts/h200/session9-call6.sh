#!/usr/bin/env bash
# Session 9, call 6: the new default NTT block (2^10 elements, 128 threads of 8, capped at 64
# registers) against 64 threads of 16 (CUZK_NTT_LB64), alternating, two rounds; then, on the
# default: the NTT oracle test at full size (all four directions 2^1 … 2^26, compute_h to
# 2^24), compute-sanitizer memcheck and racecheck on the small transforms (the tiled bit
# reversal from 2^8), and the NTT / compute_h sweep for docs/perf.md.
# Needs gpu-bin/{gpu,cuzk-cuda-bench}. Logs go to $OUT.
cd "$(dirname "$0")/../.."
export CUZK_CUDA_CACHE=$PWD/gpu-bin/cache CUZK_VECTORS=$PWD/gpu-bin/vectors
B=$PWD/gpu-bin
S=$OUT/summary.txt
CUZK_CUDA_DEFINES=CUZK_NTT_FP64,CUZK_NTT_LB64 CUZK_NTT_ELEMS_PER_THREAD=16 timeout 90 $B/gpu --test-threads=1 ntt > $OUT/tests-t64.txt 2>&1; echo "t64 tests rc=$?" >> $S
grep -hE "test result|panicked|mismatch" $OUT/tests-t64.txt >> $S
for round in 1 2; do
  for v in t128:CUZK_NTT_FP64,CUZK_NTT_LB:8 t64:CUZK_NTT_FP64,CUZK_NTT_LB64:16; do
    IFS=: read name defs per <<< "$v"
    CUZK_CUDA_DEFINES=$defs CUZK_NTT_ELEMS_PER_THREAD=$per timeout 60 $B/cuzk-cuda-bench ntt 24 24 h 24 24 ntt 27 27 > $OUT/bench-$name.txt 2>&1
    echo "$name r$round: $(grep -E "regs ntt_pass|^ntt|^compute_h" $OUT/bench-$name.txt | tr '\n' ' ')" >> $S
  done
done
t0=$(date +%s); CUZK_GPU_TEST_MAX_LOG_NTT=26 timeout 240 $B/gpu --test-threads=1 --nocapture ntt > $OUT/tests.txt 2>&1; echo "ntt oracle to 2^26 rc=$? $(( $(date +%s)-t0 ))s" >> $S
grep -hE "^test |test result|panicked|mismatch|^ntt 2\^2[0-9]" $OUT/tests.txt >> $S
CUZK_GPU_TEST_MAX_LOG_NTT=12 timeout 120 /usr/local/cuda/bin/compute-sanitizer --tool memcheck $B/gpu --test-threads=1 ntt > $OUT/sanitizer.txt 2>&1; echo "memcheck rc=$?" >> $S
CUZK_GPU_TEST_MAX_LOG_NTT=10 timeout 120 /usr/local/cuda/bin/compute-sanitizer --tool racecheck $B/gpu --test-threads=1 ntt_matches >> $OUT/sanitizer.txt 2>&1; echo "racecheck rc=$?" >> $S
grep -E "ERROR SUMMARY|RACECHECK SUMMARY|test result" $OUT/sanitizer.txt >> $S
timeout 90 $B/cuzk-cuda-bench ntt 20 27 h 20 26 > $OUT/sweep.txt 2>&1; echo "sweep rc=$?" >> $S
grep -E "^ntt|^compute_h|^upload" $OUT/sweep.txt >> $S
cat $S
