#!/usr/bin/env bash
# Session 8, call 1: batch-affine rounds where a bucket leaves once it is down to one point.
# Checks (forced rounds, full and partial plans, memcheck on small forced MSMs), then G1 2^24
# phases against the session-7 binary (gpu-bin/cuzk-cuda-bench-s7) in one call, then an
# Nsight Systems kernel trace of the new G1 2^24 MSM when nsys is there.
# Needs gpu-bin/{gpu,cuzk-cuda-bench,cuzk-cuda-bench-s7}. Logs go to $OUT.
cd "$(dirname "$0")/../.."
export CUZK_CUDA_CACHE=$PWD/gpu-bin/cache CUZK_VECTORS=$PWD/gpu-bin/vectors
B=$PWD/gpu-bin
S=$OUT/summary.txt
T=$OUT/tests.txt
NSYS=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
echo "nsys: $NSYS" >> $S
CUZK_MSM_AFFINE=1 CUZK_GPU_TEST_MAX_LOG_MSM=16 timeout 150 $B/gpu --test-threads=1 msm eip > $T 2>&1; echo "gpu forced full rc=$?" >> $S
CUZK_MSM_AFFINE=1 CUZK_MSM_AFFINE_FULL=0 CUZK_GPU_TEST_MAX_LOG_MSM=14 timeout 100 $B/gpu --test-threads=1 msm_g streamed >> $T 2>&1; echo "gpu forced partial rc=$?" >> $S
CUZK_MSM_AFFINE=1 CUZK_GPU_TEST_MAX_LOG_MSM=10 timeout 100 /usr/local/cuda/bin/compute-sanitizer --tool memcheck $B/gpu --test-threads=1 msm_g > $OUT/memcheck.txt 2>&1; echo "memcheck rc=$?" >> $S
grep -hE "^test |test result|MISMATCH|panicked|ERROR SUMMARY" $T $OUT/memcheck.txt >> $S
P=$OUT/profile.txt
for i in 1 2; do
  for V in cuzk-cuda-bench-s7 cuzk-cuda-bench; do
    echo "== $V" >> $P
    CUZK_MSM_PROFILE=1 timeout 60 $B/$V g1 24 24 >> $P 2>&1; echo "profile $V rc=$?" >> $S
  done
done
grep -E "^==|^msm" $P >> $S
if [ -n "$NSYS" ]; then
  timeout 120 $NSYS profile -t cuda -o /tmp/g1 --force-overwrite true $B/cuzk-cuda-bench g1 24 24 > $OUT/nsys.txt 2>&1; echo "nsys rc=$?" >> $S
  timeout 120 $NSYS stats -q --report cuda_gpu_trace --format csv --output /tmp/g1 /tmp/g1.nsys-rep >> $OUT/nsys.txt 2>&1
  ls /tmp/g1* >> $S
  gzip -c /tmp/g1_cuda_gpu_trace.csv > $OUT/trace.csv.gz 2>/dev/null
fi
cat $S
