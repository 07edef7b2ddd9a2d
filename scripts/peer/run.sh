#!/usr/bin/env bash
# Our daemon and Curio's cuzk (extern/cuzk, built by scripts/peer/build.sh) side by side on one
# GPU host, one after the other, on the same synthetic requests and the same parameter file.
# The figures are in docs/perf.md, "Against Curio's cuzk".
#
#   OUT=/tmp/peer bash scripts/peer/run.sh            # SIZE=32g, PARTS="prep ours theirs"
#
# Needs gpu-bin/cuzk (ours) and peer-bin/cuzk-daemon (theirs), gzipped or not.
#   prep    timing-only parameters of the real layout for PoRep and WinningPoSt in $FIL
#           (`cuzk setup --filecoin … --timing-only`: Filecoin's names, .vk, .meta), written
#           once, and synthetic requests in Curio's encodings (`cuzk gen-vanilla --synthetic`)
#   ours    `cuzk serve` with scripts/peer/ours.toml: the defaults but bench mode taking its
#           parameters from $FIL; with TRUSTED=1 (default) read without the subgroup checks,
#           as Curio's daemon reads them
#   theirs  Curio's cuzk-daemon with scripts/peer/curio-cuzk.toml (PEER_PCE, below);
#           PEER_TOTAL_BUDGET and PEER_SLOT_SIZE replace the config's memory.total_budget
#           (96GiB: the advised "auto" is OOM-killed on a 128 GiB host) and pipeline.slot_size.
#           On such a host its first 32 GiB PoRep job takes about 8 minutes (docs/perf.md,
#           "Against Curio's cuzk"), two partitions every ~87 s through bellperson's synthesis.
#           KEEP=1 leaves it running (detached; pid in $WORK/theirs.pid) for a later
#           `PARTS=theirs` on the same host, which then runs only LOADS on the kept daemon and
#           stops it unless KEEP=1 again; FIRST_SECS (600) bounds the wait for the first job.
#           The kept daemon's loads start once its log shows the first job's proof assembled
#           (at most 300 s of waiting), so a first job cut short by its call still finishes alone.
# DEADLINE (seconds from the script's start) caps every load's timeout so that the script ends
# inside a call of bounded length (e.g. DEADLINE=570 for a 600 s call); a load cut short is
# still timed from the peer's log (its "proof assembled" lines, copied to the summary).
# Each daemon gets the same load from `cuzk load` (the same client, Curio's encodings): one
# PoRep job alone (the first: parameters loaded, circuit built), then of LOADS ("alone
# backlog"; a 10-minute call may take one of them per daemon start) ONE_MORE (1) more alone,
# then BACKLOG (6) PoRep jobs with CONCURRENCY (3) in flight (MAIN=winning: WinningPoSt jobs
# instead of PoRep in all three, for a host that cannot hold the peer's PoRep) and,
# WINNING_AFTER (30) s in, WINNING (3) WinningPoSt jobs one after another. Curio's daemon
# proves with the timing-only file and then refuses its own PoRep proof (its self-check):
# those failures are timed as completions (`cuzk load --timed-failure`). Device busy: the mean
# of nvidia-smi's utilization.gpu sampled every 200 ms during each load (outside either
# daemon); peak RSS: VmHWM from /proc at the stop. Our daemon's timeline after its loads:
# ours-trace.json.gz (`cuzk trace`), and its device's, per load: ours-timeline.txt.
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
set -u
OUT=${OUT:-/tmp/peer}
SIZE=${SIZE:-32g}
PARTS=${PARTS:-"prep ours theirs"}
LOADS=${LOADS-"alone backlog"} # after the first job, which every daemon start runs; empty: none
MAIN=${MAIN:-porep} # the kind of the first job, the one alone and the backlog (porep or winning)
WORK=${WORK:-/tmp/peer-work}
FIL=${FIL:-$WORK/filecoin-params}
REQ=$WORK/req-$SIZE
mkdir -p "$OUT" "$WORK" "$FIL" "$REQ"
S=$OUT/summary.txt
note() { echo "$*" | tee -a "$S"; }
for b in "$ROOT/gpu-bin/cuzk" "$ROOT/peer-bin/cuzk-daemon"; do
  [ -x "$b" ] || { [ -f "$b.gz" ] && gunzip -kf "$b.gz" && chmod +x "$b"; }
done
CUZK=$ROOT/gpu-bin/cuzk
PEER=${PEER:-$ROOT/peer-bin/cuzk-daemon}
export CUZK_CUDA_CACHE=${CUZK_CUDA_CACHE:-$ROOT/gpu-bin/cache}
note "== peer run $(date -u '+%F %T') UTC: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(nvidia-smi -L | head -1); curio $(cat "$ROOT/peer-bin/CURIO_COMMIT" 2>/dev/null); ours $(cat "$ROOT/gpu-bin/COMMIT" 2>/dev/null)"
df -h "$WORK" | tail -1 | tee -a "$S"

within() { # within SECS: SECS, or fewer where DEADLINE comes first (at least 1)
  local secs=$1
  if [ -n "${DEADLINE:-}" ] && [ $((DEADLINE - SECONDS)) -lt "$secs" ]; then secs=$((DEADLINE - SECONDS)); fi
  [ "$secs" -ge 1 ] && echo "$secs" || echo 1
}
step() { # step NAME SECS CMD...: output to $OUT/NAME.txt, status and time to the summary
  local name=$1 secs t0 rc
  secs=$(within "$2")
  shift 2
  t0=$(date +%s.%N)
  timeout "$secs" "$@" > "$OUT/$name.txt" 2>&1
  rc=$?
  note "$name: rc=$rc, $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s"
  return $rc
}
has() { [[ " $PARTS " == *" $1 "* ]]; }
# Each daemon's first job reads the parameter file from the disk, not from the page cache the
# other daemon or the prep left (needs root; noted in the summary).
cold() { sync; if echo 3 > /proc/sys/vm/drop_caches 2>/dev/null; then note "$1: page cache dropped"; else note "$1: page cache kept (no root)"; fi; }

pid=
smi=
memory() { grep -E 'VmHWM|VmRSS' /proc/$pid/status 2>/dev/null | tr -s ' \t' ' ' | paste -sd, -; } # the daemon's peak and resident set
cleanup() {
  if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
    note "the daemon (pid $pid) is gone"
  elif [ -n "$pid" ] && [ "${KEEP:-0}" = 1 ] && [ "$pid" = "$(cat "$WORK/theirs.pid" 2>/dev/null)" ]; then
    note "cut short, the daemon kept running: $(memory)"
  elif [ -n "$pid" ]; then
    note "stopped early: $(memory)"
    kill "$pid" 2>/dev/null
  fi
  [ -n "$smi" ] && kill "$smi" 2>/dev/null
  tar czf "$OUT.tgz" -C "$(dirname "$OUT")" "$(basename "$OUT")" 2>/dev/null
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# load NAME SECS ADDR LOAD-ARGS...: `cuzk load` against ADDR with the device sampled meanwhile.
load() {
  local name=$1 secs=$2 addr=$3
  shift 3
  nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader,nounits -lms 200 > "$OUT/$name.smi.csv" 2>/dev/null &
  smi=$!
  local from
  from=$(date +%s%3N)
  step "$name" "$secs" "$CUZK" --addr "$addr" load --quiet "$@"
  echo "$from $(date +%s%3N)" > "$OUT/$name.window" # for the device timeline (ms since the epoch)
  kill $smi 2>/dev/null
  wait $smi 2>/dev/null
  smi=
  grep -E "^(wall|throughput|timed failures|withheld|\| [a-z]+-[0-9]|error)" "$OUT/$name.txt" | tee -a "$S"
  note "$name: device busy $(awk -F', *' '{u+=$1; if ($2>m) m=$2; n++} END {if (n) printf "%.1f%% (nvidia-smi utilization.gpu, %d samples), device memory max %d MiB", u/n, n, m}' "$OUT/$name.smi.csv")"
}

# the loads both daemons get
loads() { # loads WHO ADDR [extra load args]: the first job, then the others
  load "$1-first" "${FIRST_SECS:-600}" "$2" --jobs 1 --concurrency 1 --mix "@$REQ/$MAIN-$SIZE.json" "${@:3}"
  loads_after_first "$@"
}
loads_after_first() { # loads_after_first WHO ADDR [extra load args]: LOADS
  local who=$1 addr=$2
  shift 2
  [[ " $LOADS " == *" alone "* ]] && load "$who-alone" 300 "$addr" --jobs "${ONE_MORE:-1}" --concurrency 1 --mix "@$REQ/$MAIN-$SIZE.json" "$@"
  [[ " $LOADS " == *" backlog "* ]] || return 0
  ( sleep "${WINNING_AFTER:-30}"; timeout "$(within 900)" "$CUZK" --addr "$addr" load --quiet --jobs "${WINNING:-3}" --concurrency 1 --mix "@$REQ/winning-$SIZE.json" "$@" > "$OUT/$who-winning.txt" 2>&1 ) &
  local side=$!
  load "$who-backlog" 900 "$addr" --jobs "${BACKLOG:-6}" --concurrency "${CONCURRENCY:-3}" --mix "@$REQ/$MAIN-$SIZE.json" "$@"
  wait $side
  grep -E "^(wall|\| [a-z]+-[0-9])" "$OUT/$who-winning.txt" | sed "s/^/$who-winning: /" | tee -a "$S"
}

stop_daemon() { # stop_daemon WHO
  note "$1: $(memory)"
  kill -TERM "$pid"
  for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  pid=
}

wait_socket() { # wait_socket PATH SECS
  for _ in $(seq 1 $(( $2 * 2 ))); do [ -S "$1" ] && return 0; kill -0 "$pid" 2>/dev/null || return 1; sleep 0.5; done
  return 1
}

if has prep; then
  step setup 900 "$CUZK" setup --filecoin "porep-$SIZE,winning-$SIZE" --timing-only --filecoin-dir "$FIL"
  tail -4 "$OUT/setup.txt" | tee -a "$S"
  step gen-vanilla 600 "$CUZK" gen-vanilla --synthetic --sector-size "$SIZE" --out "$REQ"
  rm -f "$REQ"/wpost-*.json "$REQ"/snap-*.json
  ls -l "$FIL" "$REQ" | tee -a "$S"
  df -h "$WORK" | tail -1 | tee -a "$S"
fi

if has ours; then
  export CUZK_DATA_DIR=$WORK/ours-data
  mkdir -p "$CUZK_DATA_DIR"
  sed "s|@FIL@|$FIL|" "$ROOT/scripts/peer/ours.toml" > "$OUT/ours.toml"
  # TRUSTED=1 (the default): the file is read as Curio's daemon reads it, without the subgroup
  # checks of a full validation, so both first jobs do the same work; TRUSTED=0 validates it.
  [ "${TRUSTED:-1}" = 1 ] && sed -i 's|^filecoin_dir = .*|&\ntrusted = true|' "$OUT/ours.toml"
  rm -f "$CUZK_DATA_DIR/cuzk.sock"
  cold ours
  # The device timeline of our daemon (CUZK_GPU_TIMELINE, backend-cuda/src/timeline.rs): what
  # the compute stream ran during each load and the time it had nothing to run, per operation
  # (ours-timeline.txt, by scripts/h200/gpu-timeline.awk).
  export CUZK_GPU_TIMELINE=$OUT/ours-timeline.csv
  rm -f "$CUZK_GPU_TIMELINE"
  "$CUZK" serve --config "$OUT/ours.toml" --http 127.0.0.1:9181 > "$OUT/ours-serve.log" 2>&1 &
  pid=$!
  unset CUZK_GPU_TIMELINE
  if wait_socket "$CUZK_DATA_DIR/cuzk.sock" 60; then
    loads ours "unix:$CUZK_DATA_DIR/cuzk.sock"
    "$CUZK" trace --http 127.0.0.1:9181 --out "$OUT/ours-trace.json" > /dev/null 2>&1 && gzip -f "$OUT/ours-trace.json"
    grep -E "constraint matrices (loaded|recorded)|parameters loaded|validation record" "$OUT/ours-serve.log" | head -12 | tee -a "$S"
    stop_daemon ours
    if [ -s "$OUT/ours-timeline.csv" ]; then # none on the CPU backend
      bash "$ROOT/scripts/h200/gpu-timeline-loads.sh" "$OUT/ours-timeline.csv" "$OUT"/ours-*.window > "$OUT/ours-timeline.txt"
      grep -A40 "== ours-backlog" "$OUT/ours-timeline.txt" | grep -E "^==|compute stream|msm|eval|compute_h" | tee -a "$S"
      gzip -f "$OUT/ours-timeline.csv"
    fi
  else
    note "ours: the daemon did not start"; tail -20 "$OUT/ours-serve.log" | tee -a "$S"
  fi
fi

release_theirs() { # after its loads: Curio's daemon kept running (KEEP=1) or stopped
  if [ "${KEEP:-0}" = 1 ]; then note "theirs: kept running: $(memory)"; pid=
  else stop_daemon theirs; rm -f "$WORK/theirs.pid"; rmdir "$FIL"/pce-*.tmp 2>/dev/null; fi
}

if has theirs; then
  sock=$WORK/curio-cuzk.sock
  # KEEP=1 leaves Curio's daemon running after the loads (its pid in $WORK/theirs.pid, detached
  # from this shell's process group) so that a later `PARTS=theirs` in a new shell on the same host
  # carries on with its warm loads (LOADS) without another first job: its PCE lives only in the
  # daemon's memory, and the first 32 GiB PoRep job alone takes most of a 10-minute window.
  kept=$(cat "$WORK/theirs.pid" 2>/dev/null)
  if [ -n "$kept" ] && kill -0 "$kept" 2>/dev/null && [ -S "$sock" ]; then
    pid=$kept
    note "theirs: the kept daemon (pid $pid, up $(ps -o etimes= -p "$pid" | tr -d ' ') s): $(memory)"
    for _ in $(seq 1 300); do grep -qE "self-check (FAILED|PASSED)" "$WORK/theirs-serve.log" && break; sleep 1; done
    note "theirs: self-checks in its log: $(grep -cE "self-check (FAILED|PASSED)" "$WORK/theirs-serve.log") (waited until $SECONDS s after the start)"
    loads_after_first theirs "unix:$sock" --timed-failure "self-check failed"
    release_theirs
  else
    rm -f "$sock"
    rm -rf "$WORK/ours-data" # our daemon's recorded matrices: the disk space back
    sed -e "s|@FIL@|$FIL|" -e "s|@SOCK@|$sock|" "$ROOT/scripts/peer/curio-cuzk.toml" > "$OUT/curio-cuzk.toml"
    [ -n "${PEER_TOTAL_BUDGET:-}" ] && sed -i "s|^total_budget = .*|total_budget = \"$PEER_TOTAL_BUDGET\"|" "$OUT/curio-cuzk.toml"
    [ -n "${PEER_SLOT_SIZE:-}" ] && sed -i "s|^slot_size = .*|slot_size = $PEER_SLOT_SIZE|" "$OUT/curio-cuzk.toml"
    note "theirs: $(grep -E '^(total_budget|slot_size)' "$OUT/curio-cuzk.toml" | sed 's/ *#.*//' | paste -sd, -)"
    # The daemon extracts its pre-compiled circuit (PCE) on its first job of a kind whether or not
    # CUZK_DISABLE_PCE is set (the variable only picks the synthesis path), holds it in memory and
    # saves it beside the parameters; the 25.7 GiB PoRep file cannot fit this disk beside them. A
    # directory at the save's temporary path makes that save fail at once (non-fatal in the
    # daemon) instead of filling the disk. PEER_PCE=1 (default): synthesis from the PCE once
    # extracted, since its memory is spent anyway; 0: CUZK_DISABLE_PCE=1.
    for c in porep-32g winning-post snap-deals-32g window-post; do mkdir -p "$FIL/pce-$c.tmp"; done
    cold theirs
    pce_env=()
    [ "${PEER_PCE:-1}" = 1 ] || pce_env=(CUZK_DISABLE_PCE=1)
    note "theirs: PCE synthesis $([ "${PEER_PCE:-1}" = 1 ] && echo on || echo off)"
    # In a process group and terminal of its own (setsid), so that it can outlive this shell with
    # KEEP=1; the pid is the one the daemon runs as (setsid may fork).
    rm -f "$WORK/theirs.pid"
    env ${pce_env[@]+"${pce_env[@]}"} FIL_PROOFS_PARAMETER_CACHE=$FIL RUST_LOG=${PEER_LOG:-info} \
      setsid sh -c 'echo $$ > "$0"; exec "$@"' "$WORK/theirs.pid" "$PEER" --config "$OUT/curio-cuzk.toml" > "$WORK/theirs-serve.log" 2>&1 < /dev/null &
    for _ in $(seq 1 50); do [ -s "$WORK/theirs.pid" ] && break; sleep 0.1; done
    pid=$(cat "$WORK/theirs.pid" 2>/dev/null)
    if wait_socket "$sock" 120; then
      loads theirs "unix:$sock" --timed-failure "self-check failed"
      release_theirs
    else
      note "theirs: the daemon did not start"; tail -30 "$WORK/theirs-serve.log" | tee -a "$S"
    fi
  fi
  # From the peer's log so far (without colours): its parameter load, circuit and PCE; each
  # proof assembled (total, synthesis and GPU milliseconds) and self-checked; and per job, from
  # its TIMELINE lines (milliseconds since the daemon started), the partitions through the GPU.
  sed 's/\x1b\[[0-9;]*m//g' "$WORK/theirs-serve.log" > "$WORK/theirs-plain.log" 2>/dev/null
  grep -E "SRS loaded|extracted pre-compiled circuit|PCE (extraction complete|cached)|failed to save PCE" "$WORK/theirs-plain.log" | cut -c1-240 | sed 's/^/theirs: /' | tee -a "$S"
  grep -E "proof assembled|self-check (FAILED|PASSED)" "$WORK/theirs-plain.log" | sed -E 's/^([0-9T:.-]+)Z +[A-Z]+ +[^ ]+ (.{0,60}).*/\1 \2/' | sed 's/^/theirs proof: /' | tee -a "$S"
  grep "proof assembled" "$WORK/theirs-plain.log" | grep -oE "total_ms=[0-9]+ synth_ms=[0-9]+ gpu_ms=[0-9]+" | sed 's/^/theirs proof: /' | tee -a "$S"
  awk -F, '/^TIMELINE/ { if (!($4 in first)) { first[$4] = $2; order[++n] = $4 } if ($3 == "GPU_END") { done[$4]++; last[$4] = $2 } }
    END { for (i = 1; i <= n; i++) { j = order[i]; printf "theirs job %s: from %.1f s, %d partitions through the GPU", j, first[j] / 1000, done[j]
      if (done[j]) printf ", the last at %.1f s (%.1f s a partition)", last[j] / 1000, (last[j] - first[j]) / 1000 / done[j]; print "" } }' \
    "$WORK/theirs-plain.log" | tee -a "$S"
  # the peer's log so far (a kept daemon goes on writing to it)
  cp "$WORK/theirs-serve.log" "$OUT/theirs-serve.log" 2>/dev/null
fi
note "== done $(date -u '+%F %T') UTC"
