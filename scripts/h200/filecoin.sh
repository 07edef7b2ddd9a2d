#!/usr/bin/env bash
# Filecoin proof kinds on the GPU host: random 2 KiB parameters (cuzk setup), a sealed 2 KiB
# sector's vanilla proofs (cuzk gen-vanilla), synthesis plain and through the constraint-matrix
# cache (cuzk fil-synth-times), then PoRep C2, SnapDeals, WindowPoSt and WinningPoSt proved by
# `cuzk serve` on the CUDA and on the CPU backend, each proof checked by Filecoin's own
# verifier (cuzk fil-verify), and filecoin-proofs' own CPU prover timed on the same requests
# (cuzk fil-reference). Requests are sent as Curio's Go client sends them (cuzk gen-vanilla
# writes Curio's encodings; cuzk submit uses its request ids and priorities): rep 1 with
# Curio's request id over the unix socket, later reps under ids of their own over plain TCP
# (server.tcp_insecure, as Curio connects). The figures are in docs/perf.md, "Filecoin proof
# kinds".
#
#   REPS=1 OUT=/tmp/fil bash scripts/h200/filecoin.sh
#
# REPS (2) jobs of each kind per backend, BACKENDS ("cuda cpu"), KINDS ("porep-2k snap-2k
# wpost-2k winning-2k"), SETUP_IDS (all-2k). Needs gpu-bin/cuzk (or gpu-bin/fil/cuzk, which
# wins when present). Logs and summary.txt go to $OUT.
source "$(dirname "$0")/common.sh"
if [ -x "$BIN/fil/cuzk" ]; then CUZK=${CUZK:-$BIN/fil/cuzk}; else need cuzk; CUZK=${CUZK:-$BIN/cuzk}; fi
REPS=${REPS:-2}
BACKENDS=${BACKENDS:-"cuda cpu"}
KINDS=${KINDS:-"porep-2k snap-2k wpost-2k winning-2k"}
W=$(mktemp -d /tmp/cuzk-fil.XXXXXX)
export FIL_PROOFS_PARAMETER_CACHE=$W/params CUZK_DATA_DIR=$W/data
mkdir -p "$FIL_PROOFS_PARAMETER_CACHE" "$CUZK_DATA_DIR"
secs() { echo "$(( $(date +%s%N) - $1 ))" | awk '{ printf "%.2f", $1 / 1e9 }'; }

"$CUZK" --version >> "$S" 2>&1
step setup 900 "$CUZK" setup --filecoin "${SETUP_IDS:-all-2k}"
tee -a "$S" < "$OUT/setup.txt"
step gen-vanilla 600 "$CUZK" gen-vanilla --sector-size 2k --out "$W/req"
note "== synthesis per constraint, plain vs constraint-matrix cache (partition 0)"
for k in porep-2k snap-2k; do
  timeout 120 "$CUZK" fil-synth-times --request "$W/req/$k.json" --reps 3 2>&1 | tail -1 | tee -a "$S"
done

for backend in $BACKENDS; do
  start_daemon "$OUT/serve-$backend.log" --backend "$backend" --trust-params --http "" --tcp 127.0.0.1:9820 --tcp-insecure
  note "== backend $backend"
  for k in $KINDS; do
    for rep in $(seq 1 "$REPS"); do
      log=$OUT/$k-$backend-$rep.log
      t=$(date +%s%N)
      if [ "$rep" = 1 ]; then via=(); id=(); else via=(--addr http://127.0.0.1:9820); id=(--request-id "$k-$backend-$rep"); fi
      timeout 300 "$CUZK" "${via[@]}" submit --request "$W/req/$k.json" "${id[@]}" --wait --out "$OUT/$k-$backend.proof" > "$log" 2>&1
      rc=$?
      wall=$(secs "$t")
      if [ $rc -ne 0 ]; then note "$k $backend rep $rep: FAILED ($(tail -2 "$log" | tr '\n' ' '))"; continue; fi
      v=$("$CUZK" fil-verify --request "$W/req/$k.json" --proof "$OUT/$k-$backend.proof" 2>&1 | grep -o "VALID\|INVALID\|error.*" | head -1)
      note "$k $backend rep $rep (job $(sed -n 's/^job \(.*\) accepted.*/\1/p' "$log")${via[0]:+, plain TCP}): client wall $wall s; $(grep -o "timing:.*" "$log"); Filecoin verifier: $v"
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
