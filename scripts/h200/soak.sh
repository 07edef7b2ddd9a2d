#!/usr/bin/env bash
# Faults and load on the GPU host. Part `soak`: `cuzk serve` on CUDA with faults injected at
# random ([faults]: corrupted MSMs, device errors, out-of-memory, MSMs delayed past the
# watchdog) under `cuzk load --duration` (mixed built-in kinds and 2 KiB WindowPoSt and
# WinningPoSt), every returned proof re-verified by the load generator; the daemon's RSS and
# budgets come from its /metrics, device memory from nvidia-smi every 10 s. Part `selfcheck`:
# the cost of the self-check per kind, `cuzk load` against `cuzk serve` with
# engine.self_check = "off" and then "all", the finalize time per partition from /metrics
# (cuzk_stage_seconds_total / cuzk_stage_runs_total) in both runs, and its difference as a
# share of the summed stage time per partition. Part `fallback`: `engine.cpu_fallback` on
# CUDA, device 0 failing a share FB_P (0.3) of its MSMs, device_fault_limit FB_LIMIT (3):
# retries run on the CPU fallback, and once device 0 is out of service, everything; FB_JOBS
# (40) jobs, every proof re-verified. The
# figures go in docs/perf.md, "Faults and load".
#
#   OUT=/tmp/soak bash scripts/h200/soak.sh
#
# PARTS ("soak selfcheck"; "setup" alone only makes the parameters), WORK, BACKEND (cuda), DURATION (8m), CONCURRENCY (8), MIX, RULES (the fault rules),
# SC_JOBS (12 jobs per kind and setting), SC_KINDS ("wpost-2k winning-2k porep-2k snap-2k
# sha256-chain:20"). Needs gpu-bin/cuzk. Logs and summary.txt go to $OUT.
source "$(dirname "$0")/common.sh"
need cuzk
CUZK=$BIN/cuzk
PARTS=${PARTS:-"soak selfcheck"}
# WORK keeps the parameters between runs (a second run skips the setup); else a fresh directory.
W=${WORK:-$(mktemp -d /tmp/cuzk-soak.XXXXXX)}
mkdir -p "$W"
export FIL_PROOFS_PARAMETER_CACHE=$W/params CUZK_DATA_DIR=$W/data
mkdir -p "$FIL_PROOFS_PARAMETER_CACHE" "$CUZK_DATA_DIR"
HTTP=127.0.0.1:9190
SOCK=$W/cuzk.sock
RULES=${RULES:-'"msm:corrupt:p=0.002", "msm:error:p=0.002", "ntt:error:p=0.005", "upload:oom:p=0.003", "msm:delay=20000:p=0.0005"'}
"$CUZK" --version >> "$S" 2>&1

# config FILE SELF_CHECK FAULTS(0|1)
config() {
  cat > "$1" <<TOML
[server]
socket = "$SOCK"
http = "$HTTP"
[engine]
backend = "${BACKEND:-cuda}"
self_check = "$2"
stage_timeout_ms = 10000
device_fault_limit = 0
[params]
trusted = true
filecoin_dir = "$FIL_PROOFS_PARAMETER_CACHE"
[log]
filter = "warn"
TOML
  if [ "$3" = 1 ]; then printf '[faults]\nenabled = true\nseed = 23\nrules = [%s]\n' "$RULES" >> "$1"; fi
}
start() {
  "$CUZK" serve --config "$1" > "$2" 2>&1 &
  pid=$!
  for _ in $(seq 1 120); do [ -S "$SOCK" ] && break; sleep 0.5; done
}
stop() { kill -TERM "$pid"; wait "$pid"; note "serve exited $?"; }
stage() { curl -s "$HTTP/metrics" | awk -v n="$1" -v s="$2" 'index($0, n"{stage=\""s"\"}") == 1 { print $NF }'; }

step setup-builtin 600 bash -c "'$CUZK' setup --circuit sha256-chain --log-size 20 && '$CUZK' setup --circuit squaring-chain --log-size 20 && '$CUZK' setup --circuit squaring-chain --log-size 16"
step setup-filecoin 900 "$CUZK" setup --filecoin wpost-2k,winning-2k,porep-2k,snap-2k
step gen-vanilla 600 "$CUZK" gen-vanilla --sector-size 2k --out "$W/req"

if [[ " $PARTS " == *" soak "* ]]; then
  note "== soak: ${DURATION:-8m} on CUDA with faults [$RULES]"
  config "$W/soak.toml" all 1
  start "$W/soak.toml" "$OUT/serve-soak.log"
  nvidia-smi --query-gpu=timestamp,memory.used --format=csv,noheader,nounits -l 10 > "$OUT/nvidia-smi.csv" 2>&1 &
  smi=$!
  MIX=${MIX:-"sha256-chain:20:normal*3,squaring-chain:20:high,squaring-chain:16:critical,@$W/req/wpost-2k.json,@$W/req/winning-2k.json"}
  secs=$(( $(echo "${DURATION:-8m}" | sed 's/m$/*60/; s/s$//; s/h$/*3600/') ))
  step soak $(( secs + 300 )) "$CUZK" --addr "unix:$SOCK" load --quiet --duration "${DURATION:-8m}" --verify-all --sample-s 10 --samples-out "$OUT/samples.csv" --concurrency "${CONCURRENCY:-8}" --mix "$MIX"
  tee -a "$S" < "$OUT/soak.txt"
  kill "$smi" 2>/dev/null
  awk -F', ' 'NR == 1 { f = $2 } { if ($2 > m) m = $2; l = $2 } END { printf "device memory used (nvidia-smi, %d samples): first %d MiB, max %d MiB, last %d MiB\n", NR, f, m, l }' "$OUT/nvidia-smi.csv" | tee -a "$S"
  curl -s "$HTTP/status" > "$OUT/status-soak.json"
  grep -c "fault injected" "$OUT/serve-soak.log" | sed 's/^/faults injected: /' | tee -a "$S"
  stop
fi

if [[ " $PARTS " == *" fallback "* ]]; then
  note "== CPU fallback: CUDA device 0 fails ${FB_P:-0.3} of its MSMs, engine.cpu_fallback on, device_fault_limit ${FB_LIMIT:-3}"
  config "$W/fallback.toml" filecoin 0
  sed -i "s/^device_fault_limit = 0/device_fault_limit = ${FB_LIMIT:-3}\ncpu_fallback = true/" "$W/fallback.toml"
  printf '[faults]\nenabled = true\nseed = 29\nrules = ["msm:error:p=%s"]\ndevices = [0]\n' "${FB_P:-0.3}" >> "$W/fallback.toml"
  start "$W/fallback.toml" "$OUT/serve-fallback.log"
  step fallback 500 "$CUZK" --addr "unix:$SOCK" load --quiet --verify-all --jobs "${FB_JOBS:-40}" --concurrency 4 \
    --mix "squaring-chain:16:normal,@$W/req/wpost-2k.json,@$W/req/porep-2k.json"
  tee -a "$S" < "$OUT/fallback.txt"
  curl -s "$HTTP/status" > "$OUT/status-fallback.json"
  curl -s "$HTTP/metrics" | grep -E '^cuzk_(device_busy_seconds_total|device_in_service|partition_retries_total|stage_runs_total)' | tee -a "$S"
  stop
fi

if [[ " $PARTS " == *" selfcheck "* ]]; then
  note "== self-check cost: finalize per partition with engine.self_check off and all"
  note "| kind | finalize off (ms) | finalize all (ms) | check (ms/partition) | stage time per partition (ms) | share |"
  note "|---|---|---|---|---|---|"
  SC_KINDS=${SC_KINDS:-"wpost-2k winning-2k porep-2k snap-2k sha256-chain:20"}
  for kind in $SC_KINDS; do
    case $kind in *-2k) m="@$W/req/$kind.json" ;; *) m="$kind:normal" ;; esac
    declare -A fin tot
    for sc in off all; do
      config "$W/sc-$sc.toml" "$sc" 0
      start "$W/sc-$sc.toml" "$OUT/serve-sc-$kind-$sc.log"
      step "sc-$kind-$sc" 600 "$CUZK" --addr "unix:$SOCK" load --quiet --verify --jobs "${SC_JOBS:-12}" --concurrency 4 --mix "$m"
      n=$(stage cuzk_stage_runs_total finalize)
      fin[$sc]=$(awk -v s="$(stage cuzk_stage_seconds_total finalize)" -v n="$n" 'BEGIN { printf "%.3f", 1000 * s / n }')
      all=0; for st in synthesize upload ntt msm finalize; do all=$(awk -v a="$all" -v b="$(stage cuzk_stage_seconds_total $st)" 'BEGIN { print a + b }'); done
      tot[$sc]=$(awk -v s="$all" -v n="$n" 'BEGIN { printf "%.3f", 1000 * s / n }')
      stop
    done
    awk -v k="$kind" -v a="${fin[off]}" -v b="${fin[all]}" -v t="${tot[all]}" 'BEGIN { d = b - a; printf "| %s | %.2f | %.2f | %.2f | %.1f | %.2f%% |\n", k, a, b, d, t, 100 * d / t }' | tee -a "$S"
  done
fi
[ -n "${WORK:-}" ] || rm -rf "$W"
