#!/usr/bin/env bash
# wgpu backend on the GPU host: Vulkan availability, the conformance suite at large sizes
# (NTT 2^22, MSM 2^20, whole proofs), and the wgpu-vs-CUDA benchmark. Logs go to $OUT.
# Run from the repository root:  bash scripts/h200/wgpu.sh
set -u
cd "$(dirname "$0")/../.."
BIN=${CUZK_BIN_DIR:-$PWD/gpu-bin}
D=$BIN/wgpu
OUT=${OUT:-/tmp/wgpu-h200}
mkdir -p "$OUT"
T_CONF=${T_CONF:-240}
T_BENCH=${T_BENCH:-230}

{
  echo "== date"; date -u
  echo "== nvidia-smi"; nvidia-smi -L 2>&1
  echo "== ICD directories"; ls -la /usr/share/vulkan/icd.d /etc/vulkan/icd.d 2>&1; cat /usr/share/vulkan/icd.d/*nvidia* /etc/vulkan/icd.d/*nvidia* 2>/dev/null
  echo "== loader and driver libraries"; ldconfig -p | grep -i -E "vulkan|GLX_nvidia|nvidia-glcore|nvidia-glvkspirv|nvidia-gpucomp"
  echo "== env"; env | grep -i -E "^(NVIDIA|VK_|LD_LIBRARY)" 
} > "$OUT/vulkan.txt" 2>&1

# The Vulkan loader: the system's, else the Debian copy shipped here.
if ! ldconfig -p | grep -q "libvulkan.so.1 "; then
  export LD_LIBRARY_PATH=$D/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  echo "using the bundled libvulkan.so.1" >> "$OUT/vulkan.txt"
fi
# The NVIDIA ICD: the installed one, else a manifest pointing at libGLX_nvidia.so.0.
if ! ls /usr/share/vulkan/icd.d/*nvidia* /etc/vulkan/icd.d/*nvidia* >/dev/null 2>&1; then
  cat > "$OUT/nvidia_icd.json" <<'JSON'
{
    "file_format_version": "1.0.1",
    "ICD": { "library_path": "libGLX_nvidia.so.0", "api_version": "1.3.289" }
}
JSON
  export VK_DRIVER_FILES=$OUT/nvidia_icd.json VK_ICD_FILENAMES=$OUT/nvidia_icd.json
  echo "using a generated NVIDIA ICD manifest (libGLX_nvidia.so.0)" >> "$OUT/vulkan.txt"
fi
cat "$OUT/vulkan.txt"

export CUZK_VECTORS=$BIN/vectors
export CUZK_WGPU_DEVICE_TYPE=${CUZK_WGPU_DEVICE_TYPE:-discrete}

# The pipeline cache lives in $OUT, so the first probe starts cold and the second shows what
# the cache saves (the later suites then start warm too).
export CUZK_WGPU_CACHE=${CUZK_WGPU_CACHE:-$OUT/pipeline-cache}
echo "== kernel compile times (empty pipeline cache)" > "$OUT/compile.txt"
timeout ${T_PROBE:-150} "$D/compile_probe" >> "$OUT/compile.txt" 2>&1; echo "rc=$?" >> "$OUT/compile.txt"
ls -la "$CUZK_WGPU_CACHE" >> "$OUT/compile.txt" 2>&1
echo "== kernel compile times (pipeline cache from the first probe)" >> "$OUT/compile.txt"
timeout ${T_PROBE:-150} "$D/compile_probe" >> "$OUT/compile.txt" 2>&1; echo "rc=$?" >> "$OUT/compile.txt"
cat "$OUT/compile.txt"

echo "== conformance (NTT 2^22, h 2^20, G1 MSM 2^20, G2 MSM 2^16, proofs 2^16)"
CUZK_WGPU_TEST_MAX_LOG_NTT=${NTT:-22} CUZK_WGPU_TEST_MAX_LOG_H=${H:-20} CUZK_WGPU_TEST_MAX_LOG_MSM=${MSM:-20} \
CUZK_WGPU_TEST_MAX_LOG_MSM_G2=${MSM2:-16} CUZK_WGPU_TEST_PROOF_LOG=${PROOF:-16} \
  timeout "$T_CONF" "$D/wgpu_conformance" --test-threads=1 --nocapture > "$OUT/conformance.txt" 2>&1
echo "rc=$?" >> "$OUT/conformance.txt"
grep -v XDG_RUNTIME "$OUT/conformance.txt" | tail -40

echo "== benchmark wgpu vs cuda"
CUZK_WGPU_BENCH_NTT=${BNTT:-16,17,18,19,20,21,22} CUZK_WGPU_BENCH_MSM=${BMSM:-16,17,18,19,20,21,22} CUZK_WGPU_BENCH_PROOF=${BPROOF:-20} \
  timeout "$T_BENCH" "$D/cuzk-wgpu-bench" > "$OUT/bench.md" 2> "$OUT/bench.err"
echo "rc=$?" >> "$OUT/bench.err"
cat "$OUT/bench.md"; grep -v XDG_RUNTIME "$OUT/bench.err" | tail -20
