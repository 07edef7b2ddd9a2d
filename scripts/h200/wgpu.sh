#!/usr/bin/env bash
# The wgpu backend on the GPU host: Vulkan availability, kernel compile times (empty pipeline
# cache, then warm), the conformance suite at large sizes (NTT 2^22, h 2^20, G1 MSM 2^20, G2
# MSM 2^16, whole proofs 2^16), and the wgpu-vs-CUDA benchmark. The figures are in
# docs/perf.md, "wgpu backend".
#
#   OUT=/tmp/wgpu bash scripts/h200/wgpu.sh
#
# Sizes: NTT, H, MSM, MSM2, PROOF (conformance), BNTT, BMSM, BPROOF (benchmark); time limits
# T_PROBE (150 s), T_CONF (240 s), T_BENCH (230 s). Needs gpu-bin/wgpu/{compile_probe,
# cuzk-wgpu-kernels,wgpu_conformance} and gpu-bin/vectors/; when the host has no Vulkan loader,
# gpu-bin/wgpu/lib/libvulkan.so.1, and when it lacks libglvnd, its Debian packages in
# gpu-bin/wgpu/gl/*.deb (README.md). Logs and summary.txt go to $OUT.
source "$(dirname "$0")/common.sh"
need wgpu/compile_probe wgpu/cuzk-wgpu-kernels wgpu/wgpu_conformance
D=$BIN/wgpu

{
  echo "== nvidia-smi"; nvidia-smi -L 2>&1
  echo "== ICD directories"; ls -la /usr/share/vulkan/icd.d /etc/vulkan/icd.d 2>&1; cat /usr/share/vulkan/icd.d/*nvidia* /etc/vulkan/icd.d/*nvidia* 2>/dev/null
  echo "== loader and driver libraries"; ldconfig -p | grep -i -E "vulkan|GLX_nvidia|nvidia-glcore|nvidia-glvkspirv|nvidia-gpucomp"
  echo "== env"; env | grep -i -E "^(NVIDIA|VK_|LD_LIBRARY)"
} > "$OUT/vulkan.txt" 2>&1

# libglvnd for the NVIDIA ICD (libGLX_nvidia.so.0 needs it): Debian's packages, unpacked.
if ls "$D"/gl/*.deb > /dev/null 2>&1 && ! ldconfig -p | grep -q "libGLX.so.0 "; then
  for f in "$D"/gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
  echo "unpacked $(ls "$D"/gl/*.deb | wc -l) libglvnd packages" >> "$OUT/vulkan.txt"
fi
# The Vulkan loader: the system's, else the Debian copy shipped here.
if ! ldconfig -p | grep -q "libvulkan.so.1 "; then
  export LD_LIBRARY_PATH=$D/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  echo "using the bundled libvulkan.so.1" >> "$OUT/vulkan.txt"
fi
# The NVIDIA ICD: the installed one, else the driver container's, else a manifest pointing at
# libGLX_nvidia.so.0.
if ! ls /usr/share/vulkan/icd.d/*nvidia* /etc/vulkan/icd.d/*nvidia* > /dev/null 2>&1; then
  ICD=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  if [ ! -f "$ICD" ]; then
    ICD=$OUT/nvidia_icd.json
    cat > "$ICD" <<'JSON'
{
    "file_format_version": "1.0.1",
    "ICD": { "library_path": "libGLX_nvidia.so.0", "api_version": "1.3.289" }
}
JSON
  fi
  export VK_DRIVER_FILES=$ICD VK_ICD_FILENAMES=$ICD
  echo "using the NVIDIA ICD manifest $ICD" >> "$OUT/vulkan.txt"
fi
cat "$OUT/vulkan.txt"

export CUZK_WGPU_DEVICE_TYPE=${CUZK_WGPU_DEVICE_TYPE:-discrete}
# The pipeline cache lives in $OUT, so the first probe starts cold and the second shows what
# the cache saves (the later suites then start warm too).
export CUZK_WGPU_CACHE=${CUZK_WGPU_CACHE:-$OUT/pipeline-cache}
step compile-cold "${T_PROBE:-150}" "$D/compile_probe"
step compile-warm "${T_PROBE:-150}" "$D/compile_probe"
for f in compile-cold compile-warm; do echo "== $f"; tail -n 25 "$OUT/$f.txt"; done

CUZK_WGPU_TEST_MAX_LOG_NTT=${NTT:-22} CUZK_WGPU_TEST_MAX_LOG_H=${H:-20} CUZK_WGPU_TEST_MAX_LOG_MSM=${MSM:-20} \
CUZK_WGPU_TEST_MAX_LOG_MSM_G2=${MSM2:-16} CUZK_WGPU_TEST_PROOF_LOG=${PROOF:-16} \
  step conformance "${T_CONF:-240}" "$D/wgpu_conformance" --test-threads=1 --nocapture
pick "$OUT/conformance.txt" '^test |test result|passed|FAIL|panick|SKIP'

step bench "${T_BENCH:-230}" "$D/cuzk-wgpu-kernels" --ntt "${BNTT:-16,17,18,19,20,21,22}" \
  --msm "${BMSM:-16,17,18,19,20,21,22}" --proof "${BPROOF:-20}"
grep -E '^\|' "$OUT/bench.txt" | tee -a "$S"
