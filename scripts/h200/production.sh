#!/usr/bin/env bash
# Production sector sizes through the daemon on the GPU host: synthetic requests of the four
# Filecoin kinds (`cuzk gen-vanilla --synthetic`) proved by `cuzk serve --bench-mode`
# (timing-only parameters generated in memory, proofs withheld) with `cuzk load` against it.
# The figures are in docs/perf.md, "Production sector sizes through the daemon".
#
#   SIZE=32g OUT=/tmp/prod bash scripts/h200/production.sh
#
# Parts (PARTS, default all; single and backlog run in the order given, then restart, then
# streamed):
#   single    per kind (KINDS, default winning wpost snap porep; or single:KIND,KIND): a first
#             job (records the circuit's matrices, generates its parameters), then WARM (2;
#             0: none) jobs one at a time
#   backlog   BACKLOG (6) PoRep jobs (backlog:snap: SnapDeals jobs), CONCURRENCY (3) in
#             flight; 30 s in, WINNING (3) WinningPoSt jobs one after another into it
# These parts share one daemon with engine.host_memory_bytes = MAIN_HOST_BUDGET (48 GiB), which
# sets aside the largest query a device load holds in flight (12.9 GB at 32 GiB; the host
# budget at each stop); the matrices (a map of their file, pages the system may drop: RssFile
# at each stop) are outside it. MAIN_DEVICE_BUDGET, if set, is its engine.device_memory_bytes
# (default: sized from the device).
#   restart   time to the first PoRep proof of a fresh daemon: without persisted matrices
#             (recorded; skipped when an earlier part left them), after a restart on the same
#             data directory (loaded from the file), and (unless CORRUPT=0) after one byte of
#             the file is corrupted (detected, recorded again)
#   streamed  a daemon with engine.device_memory_bytes = STREAM_BUDGET (24 GiB) below the PoRep
#             parameters: STREAMED (3) PoRep jobs, 2 in flight
# Device memory is sampled by nvidia-smi every 0.5 s (device-memory.csv), the daemon's RSS by
# `cuzk load` and as VmHWM at each stop; each daemon's device timeline (CUZK_GPU_TIMELINE) is
# summed per load into timeline-NAME.txt at its stop (what each operation took, and the time the
# compute stream had nothing queued). Needs gpu-bin/cuzk. Everything but the traces and the
# request files is also packed into $OUT.tgz (a few MB), also when a part is cut short: pass
# that file back, not the folder (the requests alone are ~200 MB).
source "$(dirname "$0")/common.sh"
need cuzk
CUZK=$BIN/cuzk
SIZE=${SIZE:-32g}
PARTS=${PARTS:-"single backlog restart streamed"}
export CUZK_DATA_DIR=${CUZK_DATA_DIR:-/tmp/cuzk-prod}
REQ=$OUT/req-$SIZE
HTTP=127.0.0.1:9181
mkdir -p "$CUZK_DATA_DIR" "$REQ"
nvidia-smi --query-gpu=timestamp,memory.used --format=csv,noheader,nounits -lms 500 > "$OUT/device-memory.csv" 2>/dev/null &
smi=$!
free -g | tee -a "$S"; df -h /tmp | tail -1 | tee -a "$S"

step gen-vanilla 300 "$CUZK" gen-vanilla --synthetic --sector-size "$SIZE" --out "$REQ"
ls -l "$REQ" | tee -a "$S"

pack() { # on exit: no daemon or sampler left behind, the results packed
  [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null
  kill "$smi" 2>/dev/null
  tar czf "$OUT.tgz" --exclude='trace-*' --exclude='req-*' -C "$(dirname "$OUT")" "$(basename "$OUT")"
}
trap pack EXIT
trap 'exit 143' TERM INT
pid=
windows= # the loads of the daemon now up, for its device timeline
serve() { # serve NAME [extra serve flags...]
  local name=$1
  shift
  windows=
  CUZK_GPU_TIMELINE=$OUT/timeline-$name.csv start_daemon "$OUT/serve-$name.log" --bench-mode --http $HTTP "$@"
  note "serve $name: pid $pid $*"
}
timeline() { # timeline NAME: the daemon's device timeline per load (timeline-NAME.txt)
  local csv=$OUT/timeline-$1.csv w files=()
  [ -s "$csv" ] || return 0
  for w in $windows; do files+=("$OUT/$w.window"); done
  bash "$(dirname "$0")/gpu-timeline-loads.sh" "$csv" ${files[@]+"${files[@]}"} > "$OUT/timeline-$1.txt"
  grep -E "^==|compute stream" "$OUT/timeline-$1.txt" | tee -a "$S"
  gzip -f "$csv"
}
stop() { # stop NAME
  local hwm
  hwm=$(grep -E "VmHWM|RssAnon|RssFile" /proc/$pid/status 2>/dev/null | tr -s ' \t' ' ' | paste -sd, -)
  curl -s $HTTP/status > "$OUT/status-$1.json"
  note "serve $1 host budget $(grep -o '"host":{[^}]*}' "$OUT/status-$1.json" | head -1)"
  "$CUZK" trace --http $HTTP --out "$OUT/trace-$1.json" > /dev/null 2>&1
  kill -TERM $pid; wait $pid
  note "serve $1 stopped ($?); $hwm; device memory max so far $(cut -d, -f2 "$OUT/device-memory.csv" | sort -n | tail -1) MiB"
  timeline "$1"
}
bench() { # bench NAME SECS ARGS...
  local name=$1 secs=$2 from
  shift 2
  from=$(date +%s%3N)
  step "$name" "$secs" "$CUZK" load --quiet "$@"
  echo "$from $(date +%s%3N)" > "$OUT/$name.window" # ms since the epoch, as the timeline's
  windows="$windows $name"
  grep -E "^(wall|throughput|\| [a-z]+-[0-9]|device|daemon RSS|bench mode|error)" "$OUT/$name.txt" | tee -a "$S"
}
has() { [[ " $PARTS " == *" $1 "* ]]; }

printf '[engine]\nhost_memory_bytes = %s\n' "${MAIN_HOST_BUDGET:-51539607552}" > "$OUT/main.toml"
[ -n "${MAIN_DEVICE_BUDGET:-}" ] && printf 'device_memory_bytes = %s\n' "$MAIN_DEVICE_BUDGET" >> "$OUT/main.toml"
up=
main_up() { [ -n "$up" ] || { serve main --config "$OUT/main.toml"; up=1; }; }
main_down() { [ -z "$up" ] || { stop main; up=; }; }
for part in $PARTS; do
  case $part in
    single | single:*)
      main_up
      kinds=${KINDS:-winning wpost snap porep}
      [ "$part" = single ] || kinds=${part#single:}
      for k in ${kinds//,/ }; do
        bench "$k-first" 400 --jobs 1 --concurrency 1 --mix "@$REQ/$k-$SIZE.json"
        [ "${WARM:-2}" = 0 ] || bench "$k-warm" 300 --jobs "${WARM:-2}" --concurrency 1 --mix "@$REQ/$k-$SIZE.json"
      done
      ;;
    backlog | backlog:*)
      main_up
      kind=porep name=backlog
      [ "$part" = backlog ] || { kind=${part#backlog:}; name=backlog-$kind; }
      ( sleep 30; bench "$name-winning" 300 --jobs "${WINNING:-3}" --concurrency 1 --mix "@$REQ/winning-$SIZE.json" ) &
      side=$!
      bench "$name" 500 --jobs "${BACKLOG:-6}" --concurrency "${CONCURRENCY:-3}" --mix "@$REQ/$kind-$SIZE.json"
      wait $side
      ;;
  esac
done
main_down
if has restart; then
  if [ ! -e "$CUZK_DATA_DIR/matrices/porep-$SIZE.matrices" ]; then
    serve cold --config "$OUT/main.toml"
    bench cold-porep 400 --jobs 1 --concurrency 1 --mix "@$REQ/porep-$SIZE.json"
    grep -E "matrices (loaded|recorded)|not used" "$OUT/serve-cold.log" | tee -a "$S"
    stop cold
  fi
  ls -l "$CUZK_DATA_DIR/matrices" | tee -a "$S"
  serve restart --config "$OUT/main.toml"
  bench restart-porep 400 --jobs 1 --concurrency 1 --mix "@$REQ/porep-$SIZE.json"
  grep -E "matrices (loaded|recorded)|not used" "$OUT/serve-restart.log" | tee -a "$S"
  stop restart
fi
if has restart && [ "${CORRUPT:-1}" = 1 ]; then
  f=$CUZK_DATA_DIR/matrices/porep-$SIZE.matrices
  printf '\xff' | dd of="$f" bs=1 seek=4096 conv=notrunc status=none
  note "corrupted one byte of $f"
  serve corrupt --config "$OUT/main.toml"
  bench corrupt-porep 400 --jobs 1 --concurrency 1 --mix "@$REQ/porep-$SIZE.json"
  grep -E "matrices (loaded|recorded)|not used" "$OUT/serve-corrupt.log" | tee -a "$S"
  stop corrupt
fi
if has streamed; then
  printf '[engine]\ndevice_memory_bytes = %s\n' "${STREAM_BUDGET:-25769803776}" > "$OUT/streamed.toml"
  serve streamed --config "$OUT/streamed.toml"
  bench streamed 500 --jobs "${STREAMED:-3}" --concurrency 2 --mix "@$REQ/porep-$SIZE.json"
  grep -E "stream" "$OUT/serve-streamed.log" | head -5 | tee -a "$S"
  stop streamed
fi
kill $smi 2>/dev/null
rm -rf "$REQ"
note "device memory: max $(cut -d, -f2 "$OUT/device-memory.csv" | sort -n | tail -1) MiB over the run"
