#!/usr/bin/env bash
# Several devices in one daemon. On the one-GPU host, two backends opened on the H200
# (engine.devices = [0, 0]: two sets of streams and pinned pools on one GPU, each with half its
# memory budget); on a two-GPU host, the two GPUs.
#
# Parts (PARTS, default "prove daemon"):
#   prove    `cuzk prove --partitions $P` of sha256-chain 2^$PROVE_K on device 0 and then on the
#            devices $TWO; the proofs must be byte-identical (the same seeds and r, s)
#   daemon   `cuzk serve` on engine.devices = $DEVICES with a backlog of $MIX (`cuzk load
#            --verify`, every proof verified); a CRITICAL job is submitted while the devices are
#            full; /status and /trace are saved for the spans (which device ran what; when the
#            CRITICAL partition left synthesis and started its upload)
#   scaling  the daemon part once per device set in SETS (default "[0]|$DEVICES"), then the
#            throughput of the last set against the first, as a ratio
# The figures go in docs/perf.md, "Several devices".
#
#   OUT=/tmp/devices bash scripts/h200/devices.sh                       # one GPU, two backends
#   K=26 PROVE_K=27 P=10 TWO=0,1 DEVICES='"all"' JOBS=24 CONCURRENCY=8 WARMUP=4 \
#     MIX=sha256-chain:26:normal,squaring-chain:26:normal PARTS="prove scaling" \
#     OUT=/tmp/scaling bash scripts/h200/devices.sh                     # the two-GPU host
#
# K (24), PROVE_K (K), P (8 partitions), TWO (0,0), MIX (sha256-chain:$K:normal), JOBS (32),
# CONCURRENCY (8), WARMUP (8), DEVICES ("[0, 0]"), BACKEND (cuda). Needs gpu-bin/cuzk. Logs,
# status and trace JSON and summary.txt go to $OUT.
source "$(dirname "$0")/common.sh"
need cuzk
CUZK=$BIN/cuzk
PARTS=${PARTS:-"prove daemon"}
K=${K:-24}
PROVE_K=${PROVE_K:-$K}
P=${P:-8}
TWO=${TWO:-0,0}
DEVICES=${DEVICES:-"[0, 0]"}
MIX=${MIX:-"sha256-chain:$K:normal"}
export CUZK_DATA_DIR=${CUZK_DATA_DIR:-/tmp/cuzk-data}
mkdir -p "$CUZK_DATA_DIR"
# Parameters of every circuit the parts prove, made once.
shapes=$(echo "$MIX" | tr ',' '\n' | cut -d: -f1,2)
[[ " $PARTS " == *" prove "* ]] && shapes="$shapes sha256-chain:$PROVE_K"
for sh in $(echo $shapes | tr ' ' '\n' | sort -u); do
  step "setup-${sh/:/-}" 600 "$CUZK" setup --circuit "${sh%%:*}" --log-size "${sh##*:}"
done

if [[ " $PARTS " == *" prove "* ]]; then
  note "== cuzk prove: $P partitions of sha256-chain 2^$PROVE_K on device 0, then on $TWO"
  step prove-one 600 "$CUZK" prove --backend "${BACKEND:-cuda}" --devices 0 --partitions "$P" --circuit sha256-chain --log-size "$PROVE_K" --trust-params
  step prove-two 600 "$CUZK" prove --backend "${BACKEND:-cuda}" --devices "$TWO" --partitions "$P" --circuit sha256-chain --log-size "$PROVE_K" --trust-params
  for f in prove-one prove-two; do pick "$OUT/$f.txt" '^(device [0-9]|wall|params)'; done
  grep '^proof ' "$OUT/prove-one.txt" > "$OUT/proofs-one.txt"
  grep '^proof ' "$OUT/prove-two.txt" > "$OUT/proofs-two.txt"
  if [ -s "$OUT/proofs-one.txt" ] && cmp -s "$OUT/proofs-one.txt" "$OUT/proofs-two.txt"; then
    note "proofs: $(wc -l < "$OUT/proofs-one.txt") byte-identical on device 0 and on $TWO"
  else
    note "proofs: DIFFER between device 0 and $TWO (or missing)"
  fi
fi

# daemon NAME DEVICES: one daemon on those devices, a warm-up, the verified backlog with a
# CRITICAL job submitted into it; its throughput is left in $OUT/NAME/bench.txt.
daemon() {
  local name=$1 devices=$2 dir=$OUT/$1 pid bench
  mkdir -p "$dir"
  note "== $name: cuzk serve on engine.devices = $devices: a backlog of $MIX, then a CRITICAL job"
  cat > "$dir/serve.toml" <<TOML
[server]
http = "127.0.0.1:9181"
[engine]
backend = "${BACKEND:-cuda}"
devices = $devices
[params]
trusted = true
TOML
  start_daemon "$dir/serve.log" --config "$dir/serve.toml"
  if [ "${WARMUP:-8}" -gt 0 ]; then
    step "$name/warmup" 600 "$CUZK" load --quiet --verify --jobs "${WARMUP:-8}" --concurrency "${CONCURRENCY:-8}" --mix "$MIX"
  fi
  "$CUZK" load --quiet --verify --jobs "${JOBS:-32}" --concurrency "${CONCURRENCY:-8}" --mix "$MIX" > "$dir/bench.txt" 2>&1 &
  bench=$!
  sleep "${CRITICAL_AFTER:-6}"
  local crit=${MIX%%,*}
  crit=${crit%:*}
  step "$name/critical" 300 "$CUZK" submit --circuit "${crit%%:*}" --log-size "${crit##*:}" --seed 9000 --priority critical --wait
  wait "$bench"; note "bench exited $?"
  tee -a "$S" < "$dir/bench.txt"
  pick "$dir/critical.txt" '.'
  curl -s 127.0.0.1:9181/status > "$dir/status.json"
  curl -s 127.0.0.1:9181/trace > "$dir/trace.json"
  grep -E 'device memory budget' "$dir/serve.log" | tee -a "$S"
  kill -TERM $pid; wait $pid; note "serve exited $?"
}

if [[ " $PARTS " == *" daemon "* ]]; then
  daemon daemon "$DEVICES"
fi

if [[ " $PARTS " == *" scaling "* ]]; then
  IFS='|' read -r -a sets <<< "${SETS:-[0]|$DEVICES}"
  for i in "${!sets[@]}"; do daemon "set$i" "${sets[$i]}"; done
  rate() { awk '/^throughput/ {print $4}' "$OUT/$1/bench.txt"; }
  first=$(rate set0) last=$(rate "set$(( ${#sets[@]} - 1 ))")
  note "scaling: ${sets[-1]} against ${sets[0]}: $last against $first partitions/s, $(awk -v a="$last" -v b="$first" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "n/a" }')"
fi
