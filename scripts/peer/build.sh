#!/usr/bin/env bash
# Build Curio's own cuzk daemon (filecoin-project/curio, extern/cuzk) as a peer
# for benchmarking, for NVIDIA sm_90 (H100/H200) only, on a machine with no GPU.
#
# Usage:
#   scripts/peer/build.sh /path/to/curio.git            # bare or normal git dir of
#                                                       # github.com/filecoin-project/curio
#   CURIO_GIT=/path/to/curio.git scripts/peer/build.sh
#
# The git dir must contain commit $CURIO_COMMIT (below). Nothing from Curio is
# copied into this repository: sources and the cargo target dir live in
# $PEER_DIR (default /work/peer); the stripped, gzipped binaries land in
# <repo>/peer-bin/ (git-ignored).
#
# Environment knobs:
#   PEER_DIR            work dir for sources + target (default /work/peer)
#   PEER_JOBS           cargo -j (default 1: the build machine is shared)
#   PEER_RUST_TOOLCHAIN toolchain to use instead of curio's pinned 1.86.0
#                       (default: stable; rustup cannot download 1.86.0 here)
#   PEER_SKIP_APT=1     skip the apt step
set -euo pipefail

CURIO_COMMIT=e0294b0f948132d41e8f42f59fa949495d5fd3af   # curio main, 2026-08-20 "feat: programmable-acls (#1391)"
CURIO_GIT=${1:-${CURIO_GIT:-}}
PEER_DIR=${PEER_DIR:-/work/peer}
PEER_JOBS=${PEER_JOBS:-1}
REPO_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT_DIR="$REPO_ROOT/peer-bin"
SRC="$PEER_DIR/curio"
export CARGO_TARGET_DIR="$PEER_DIR/target"
export RUSTUP_TOOLCHAIN=${PEER_RUST_TOOLCHAIN:-stable}

if [[ -z "$CURIO_GIT" ]]; then
  echo "usage: $0 <curio git dir containing $CURIO_COMMIT>" >&2
  exit 2
fi

# ---------------------------------------------------------------- 1. packages
# nvidia-cuda-toolkit (Debian bookworm non-free, CUDA 11.8) depends on the
# driver's libcuda.so.1 / libnvidia-ml.so.1, whose packages need
# nvidia-support from `contrib` (not enabled here) and make no sense on a
# machine without a GPU. A tiny local placeholder package provides those two
# virtual names so apt accepts the toolkit. Linking uses the toolkit's stub
# libcuda.so (/usr/lib/x86_64-linux-gnu/stubs); at run time the GPU host's
# driver supplies the real libcuda.so.1.
if [[ "${PEER_SKIP_APT:-0}" != 1 ]]; then
  export DEBIAN_FRONTEND=noninteractive
  # The toolkit is in Debian's non-free component, which a stock bookworm image leaves out.
  if ! grep -rqsE '^(Components:.*|deb .*) non-free( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    cat > /etc/apt/sources.list.d/peer-non-free.sources <<'EOF'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: contrib non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  fi
  apt-get update
  if ! dpkg -s libcuda1 >/dev/null 2>&1 && ! dpkg -s peer-fake-nvidia-driver >/dev/null 2>&1; then
    d=$(mktemp -d)
    mkdir -p "$d/DEBIAN"
    cat > "$d/DEBIAN/control" <<'EOF'
Package: peer-fake-nvidia-driver
Version: 1.0
Architecture: amd64
Maintainer: peer-build <nobody@localhost>
Provides: libcuda.so.1 (= 535), libnvidia-ml.so.1 (= 535)
Description: build-only placeholder for the NVIDIA driver libraries
 Satisfies nvidia-cuda-toolkit's driver dependencies on a build machine
 without a GPU. Provides no files.
EOF
    dpkg-deb --build "$d" "$d.deb"
    dpkg -i "$d.deb"
    rm -rf "$d" "$d.deb"
  fi
  # gcc-11: nvcc 11.8 refuses host gcc > 11 (bookworm's default is 12).
  # protobuf-compiler: protoc for cuzk-proto's tonic-build.
  nice -n 19 apt-get install -y --no-install-recommends \
    nvidia-cuda-toolkit gcc-11 g++-11 protobuf-compiler git perl
fi

# --------------------------------------------------------------- 2. sources
# git archive of the pinned commit. Only the paths cuzk's workspace needs
# (its [patch.crates-io] points at ../bellperson, ../bellpepper-core,
# ../supraseal-c2); the submodules (extern/filecoin-ffi,
# extern/supraseal/deps/sppark) are not needed: sppark comes from crates.io.
if [[ ! -f "$SRC/.peer-commit" || "$(cat "$SRC/.peer-commit")" != "$CURIO_COMMIT" ]]; then
  rm -rf "$SRC"
  mkdir -p "$SRC"
  # (A partial mirror may lack the blob of
  # extern/supraseal/demos/c2-test/resources/test/commit-phase1-output; git
  # archive then prints "invalid object ..." but still exits 0 and writes the
  # requested paths, which do not include it.)
  git --git-dir="$CURIO_GIT" archive "$CURIO_COMMIT" -- \
      extern/cuzk extern/bellperson extern/bellpepper-core extern/supraseal-c2 \
    | tar -x -C "$SRC"
  echo "$CURIO_COMMIT" > "$SRC/.peer-commit"
fi

# Toolchain fix. Curio pins Rust 1.86.0 (extern/cuzk/rust-toolchain.toml);
# since Rust 1.89 std::fs::File has an inherent try_lock_shared() returning
# TryLockError, which shadows fs2::FileExt::try_lock_shared() in the vendored
# bellperson and breaks `err.raw_os_error()` (E0599). Call fs2's method
# explicitly (same flock(LOCK_SH|LOCK_NB) semantics; also valid on 1.86).
LOCKS="$SRC/extern/bellperson/src/gpu/locks.rs"
if ! grep -q 'FileExt::try_lock_shared' "$LOCKS"; then
  perl -0pi -e 's/if let Err\(err\) = File::create\(tmp_path\(PRIORITY_LOCK_NAME, None\)\)\s*\.unwrap\(\)\s*\.try_lock_shared\(\)/if let Err(err) = FileExt::try_lock_shared(\&File::create(tmp_path(PRIORITY_LOCK_NAME, None)).unwrap())/' "$LOCKS"
  grep -q 'FileExt::try_lock_shared' "$LOCKS" || { echo "bellperson locks.rs patch failed" >&2; exit 1; }
fi

# ------------------------------------------------------------ 3. toolchain
# sm_90 only. Two places pick GPU architectures at build time:
#  a) sppark::build::ccmd() (used by supraseal-c2/build.rs) hard-codes
#     `-arch=sm_80 -gencode arch=compute_70,code=sm_70 -t0`; the cc crate
#     runs $NVCC, so a wrapper rewrites those to sm_90 and drops -t0
#     (one nvcc thread).
#  b) ec-gpu-gen (bellperson's and neptune's CUDA kernels) runs `nvcc` with
#     sm_86/80/75 unless EC_GPU_CUDA_NVCC_ARGS replaces its arguments.
TOOLS="$PEER_DIR/tools"
mkdir -p "$TOOLS"
cat > "$TOOLS/nvcc-sm90" <<'EOF'
#!/usr/bin/env bash
# nvcc wrapper: drop every architecture/thread flag and compile for sm_90 only.
args=()
skip=0
for a in "$@"; do
  if (( skip )); then skip=0; continue; fi
  case "$a" in
    -gencode|--generate-code|-arch|--gpu-architecture|-code|--gpu-code|-t|--threads) skip=1 ;;
    -gencode=*|--generate-code=*|-arch=*|--gpu-architecture=*|-code=*|--gpu-code=*|-t[0-9]*|--threads=*) ;;
    *) args+=("$a") ;;
  esac
done
exec /usr/bin/nvcc -gencode arch=compute_90,code=sm_90 "${args[@]}"
EOF
chmod +x "$TOOLS/nvcc-sm90"

export NVCC="$TOOLS/nvcc-sm90"
export EC_GPU_CUDA_NVCC_ARGS="--optimize=6 --threads=1 --fatbin --generate-code=arch=compute_90,code=sm_90"
# nvcc 11.8 supports gcc <= 11; the cc crate passes -ccbin=$CXX to nvcc.
export CXX=g++-11 CC=gcc-11
# cuda-driver-sys (via rust-gpu-tools, also in bellperson's build script)
# links -lcuda. Its cuda-config helper only searches <root>/lib64, so give it
# a root whose lib64 is Debian's stub dir (libcuda.so, SONAME libcuda.so.1).
mkdir -p "$TOOLS/cuda"
ln -sfn /usr/lib/x86_64-linux-gnu/stubs "$TOOLS/cuda/lib64"
export CUDA_LIBRARY_PATH="$TOOLS/cuda"
export CARGO_BUILD_JOBS="$PEER_JOBS"
export MAKEFLAGS=-j1

# ----------------------------------------------------------------- 4. build
cd "$SRC/extern/cuzk"
start=$(date +%s)
nice -n 19 cargo build --release --locked -j "$PEER_JOBS" -p cuzk-daemon -p cuzk-bench
echo "cargo build took $(( $(date +%s) - start )) s"

# ------------------------------------------------- 5. strip + gzip to peer-bin
mkdir -p "$OUT_DIR"
for b in cuzk-daemon cuzk-bench; do
  strip -o "$OUT_DIR/$b" "$CARGO_TARGET_DIR/release/$b"
  gzip -9 -f -k "$OUT_DIR/$b"
done
echo "$CURIO_COMMIT" > "$OUT_DIR/CURIO_COMMIT"
ls -l "$OUT_DIR"
ldd "$OUT_DIR/cuzk-daemon" || true
