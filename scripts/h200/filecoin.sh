#!/usr/bin/env bash
# Filecoin proof kinds on the GPU host: random 2 KiB parameters (cuzk setup), a sealed 2 KiB
# sector's vanilla proofs (cuzk gen-vanilla), then PoRep C2, SnapDeals, WindowPoSt and
# WinningPoSt proved by `cuzk serve` on the CUDA and on the CPU backend, each proof checked by
# Filecoin's own verifier (cuzk fil-verify), and filecoin-proofs' own CPU prover timed on the
# same requests (cuzk fil-reference). Logs and a summary go to $OUT.
# Run from the repository root:  OUT=/tmp/fil-h200 bash scripts/h200/filecoin.sh
set -u
cd "$(dirname "$0")/../.."
BIN=${CUZK_BIN_DIR:-$PWD/gpu-bin}
if [ -x "$BIN/fil/cuzk" ]; then CUZK=${CUZK:-$BIN/fil/cuzk}; else CUZK=${CUZK:-$BIN/cuzk}; fi
OUT=${OUT:-/tmp/fil-h200}
REPS=${REPS:-2}
BACKENDS=${BACKENDS:-"cuda cpu"}
KINDS=${KINDS:-"porep-2k snap-2k wpost-2k winning-2k"}
mkdir -p "$OUT"
W=$(mktemp -d /tmp/cuzk-fil.XXXXXX)
export FIL_PROOFS_PARAMETER_CACHE=$W/params CUZK_DATA_DIR=$W/data CUZK_CUDA_CACHE=$BIN/cache
mkdir -p "$FIL_PROOFS_PARAMETER_CACHE" "$CUZK_DATA_DIR"
S=$OUT/summary.txt
: > "$S"
note() { echo "$*" | tee -a "$S"; }
secs() { local t0=$1; echo "$(( $(date +%s%N) - t0 ))" | awk '{ printf "%.2f", $1 / 1e9 }'; }

note "== $(date -u) on $(hostname); $(nproc) cores; $(nvidia-smi -L 2>/dev/null | head -1)"
"$CUZK" --version >> "$S" 2>&1

t=$(date +%s%N)
"$CUZK" setup --filecoin ${SETUP_IDS:-all-2k} > "$OUT/setup.log" 2>&1 || { note "setup FAILED"; tail -5 "$OUT/setup.log"; }
note "setup (all four 2 KiB circuits, cuzk-setup): $(secs $t) s"; cat "$OUT/setup.log" | tee -a "$S"

t=$(date +%s%N)
"$CUZK" gen-vanilla --sector-size 2k --out "$W/req" > "$OUT/gen-vanilla.log" 2>&1 || { note "gen-vanilla FAILED"; tail -5 "$OUT/gen-vanilla.log"; }
note "gen-vanilla (seal 2 KiB + vanilla proofs): $(secs $t) s"
note "== synthesis per constraint, plain vs constraint-matrix cache (partition 0)"
for k in porep-2k snap-2k; do timeout 120 "$CUZK" fil-synth-bench --request "$W/req/$k.json" --reps 3 2>&1 | tail -1 | tee -a "$S"; done


for backend in $BACKENDS; do
  sock=$CUZK_DATA_DIR/cuzk.sock
  "$CUZK" serve --backend $backend --trust-params --http "" > "$OUT/serve-$backend.log" 2>&1 &
  pid=$!
  for i in $(seq 1 120); do [ -S "$sock" ] && break; sleep 0.5; done
  note "== backend $backend"
  for k in $KINDS; do
    for rep in $(seq 1 $REPS); do
      t=$(date +%s%N)
      timeout 300 "$CUZK" submit --request "$W/req/$k.json" --wait --out "$OUT/$k-$backend.proof" > "$OUT/$k-$backend-$rep.log" 2>&1
      rc=$?
      wall=$(secs $t)
      timing=$(grep -o "timing:.*" "$OUT/$k-$backend-$rep.log")
      if [ $rc -ne 0 ]; then note "$k $backend rep $rep: FAILED ($(tail -2 "$OUT/$k-$backend-$rep.log" | tr '\n' ' '))"; continue; fi
      v=$("$CUZK" fil-verify --request "$W/req/$k.json" --proof "$OUT/$k-$backend.proof" 2>&1 | grep -o "VALID\|INVALID\|error.*" | head -1)
      note "$k $backend rep $rep: client wall $wall s; $timing; Filecoin verifier: $v"
    done
  done
  kill -TERM $pid; wait $pid; note "serve ($backend) exited $?"
  grep -i "constraint matrices recorded\|error\|panic" "$OUT/serve-$backend.log" | head -20 >> "$S"
done

note "== filecoin-proofs' own prover (bellperson, CPU, $(nproc) cores) on the same requests"
for k in $KINDS; do
  timeout 600 "$CUZK" fil-reference --request "$W/req/$k.json" > "$OUT/reference-$k.log" 2>&1
  note "$k: $(tail -1 "$OUT/reference-$k.log")"
done
note "== done $(date -u)"
rm -rf "$W"
