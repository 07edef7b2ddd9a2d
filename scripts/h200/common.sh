# Shared preamble of the GPU-host scripts (sourced, not run; see README.md).
#
#   ROOT  the repository root            BIN  the binaries ($CUZK_BIN_DIR, default $ROOT/gpu-bin)
#   OUT   where logs go ($OUT, default /tmp/cuzk-<script>); $OUT/summary.txt collects the results
#
# Exports the CUDA kernel cache and the test-vector directory the binaries read. Helpers:
#   note TEXT...            print TEXT and append it to the summary
#   need NAME...            stop unless $BIN/NAME (or NAME, when it is an absolute path) exists
#                           (a binary or a directory; NAME.gz is unpacked first)
#   step NAME SECS CMD...   run CMD under a time limit, all output to $OUT/NAME.txt, and note its
#                           exit status and duration; variables set before `step` reach CMD
#   pick FILE REGEX         append FILE's lines matching REGEX to the summary
#   start_daemon LOG ARGS...  `$BIN/cuzk serve ARGS...` in the background (output to LOG, its pid
#                           in $pid), once its socket in $CUZK_DATA_DIR is there (up to 60 s)
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN=${CUZK_BIN_DIR:-$ROOT/gpu-bin}
OUT=${OUT:-/tmp/cuzk-$(basename "$0" .sh)}
mkdir -p "$OUT"
S=$OUT/summary.txt
export CUZK_CUDA_CACHE=${CUZK_CUDA_CACHE:-$BIN/cache}
export CUZK_VECTORS=${CUZK_VECTORS:-$BIN/vectors}
SANITIZER=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)

note() { echo "$*" | tee -a "$S"; }
need() {
  local b
  for b in "$@"; do
    case $b in /*) ;; *) b=$BIN/$b ;; esac
    [ -e "$b" ] || { [ -f "$b.gz" ] && gunzip -kf "$b.gz" && chmod +x "$b"; }
    [ -e "$b" ] || { echo "missing $b (build it as scripts/h200/README.md says)" >&2; exit 2; }
  done
}
step() {
  local name=$1 secs=$2 t0 rc
  shift 2
  t0=$(date +%s)
  timeout "$secs" "$@" > "$OUT/$name.txt" 2>&1
  rc=$?
  note "$name: rc=$rc, $(( $(date +%s) - t0 )) s"
  return $rc
}
pick() { grep -E "$2" "$1" | tee -a "$S"; }
start_daemon() {
  local log=$1
  shift
  rm -f "$CUZK_DATA_DIR/cuzk.sock" # a stopped daemon's socket would pass the wait below
  "$BIN/cuzk" serve "$@" > "$log" 2>&1 &
  pid=$!
  for _ in $(seq 1 120); do [ -S "$CUZK_DATA_DIR/cuzk.sock" ] && break; sleep 0.5; done
}

note "== $(basename "$0") $(date -u '+%F %T') UTC on $(hostname): $(nproc) cores, $(nvidia-smi -L 2>/dev/null | head -1)"
