#!/usr/bin/env bash
# The journal's cost on the GPU host: `cuzk load` throughput against `cuzk serve` on CUDA with
# `[journal] enabled = false` and `true`, alternated (off, on, off, on, ...), one daemon per
# run; with SETTING=selfcheck, `engine.self_check = "off"` and `"all"` instead (journal on).
# Part `2k`: the 2 KiB Filecoin kinds (real parameters, every proof verified by the load
# generator), after 8 warm-up jobs JN_JOBS (128) jobs per run at concurrency 4. Part
# `backlog`: a PoRep backlog of SIZE (32g) in bench mode (synthetic requests, timing-only
# parameters), one warm-up job and then BACKLOG (6) jobs, 3 in flight, per run. The figures
# go in docs/perf.md, "Faults and load".
#
#   OUT=/tmp/journal bash scripts/h200/journal.sh
#   SETTING=selfcheck PARTS=2k OUT=/tmp/selfcheck bash scripts/h200/journal.sh
#
# PARTS ("2k backlog"), JN_KINDS ("wpost-2k winning-2k porep-2k snap-2k"), ROUNDS (3 for 2k,
# BL_ROUNDS 1 for the backlog). Needs gpu-bin/cuzk.
source "$(dirname "$0")/common.sh"
need cuzk
CUZK=$BIN/cuzk
PARTS=${PARTS:-"2k backlog"}
W=${WORK:-/tmp/cuzk-journal}
export FIL_PROOFS_PARAMETER_CACHE=$W/fil CUZK_DATA_DIR=$W/data
mkdir -p "$FIL_PROOFS_PARAMETER_CACHE" "$CUZK_DATA_DIR" "$W/req"
chmod 700 "$CUZK_DATA_DIR"
HTTP=127.0.0.1:9191
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$S"

SETTING=${SETTING:-journal}
up() { # up NAME ON(true|false) BENCH_MODE(0|1): a daemon with the setting measured off or on
  local name=$1 on=$2 bm=$3 jn=$2 sc=all
  if [ "$SETTING" = selfcheck ]; then jn=true; sc=$([ "$on" = true ] && echo all || echo off); fi
  printf '[server]\nhttp = "%s"\n[engine]\nbackend = "cuda"\nself_check = "%s"\n[params]\ntrusted = true\nfilecoin_dir = "%s"\n[journal]\nenabled = %s\ndir = "%s"\n' \
    "$HTTP" "$sc" "$FIL_PROOFS_PARAMETER_CACHE" "$jn" "$W/journal-$name" > "$W/$name.toml"
  local flags=(--config "$W/$name.toml")
  [ "$bm" = 1 ] && flags+=(--bench-mode)
  start_daemon "$OUT/serve-$name.log" "${flags[@]}"
}
measure() { # measure NAME BENCH_ARGS...: a bench whose throughput is noted
  local name=$1
  shift
  step "$name" 600 "$CUZK" load --quiet "$@"
  note "$name: $(grep -h '^throughput' "$OUT/$name.txt") $(grep -h 'wrong proofs' "$OUT/$name.txt" | cut -d';' -f2)"
}
down() {
  note "  $(curl -s "$HTTP/metrics" | grep -E '^cuzk_journal_(jobs|bytes)' | tr '\n' ' ')"
  kill -TERM "$pid"; wait "$pid"
}

if [[ " $PARTS " == *" 2k "* ]]; then
  step setup 900 "$CUZK" setup --filecoin wpost-2k,winning-2k,porep-2k,snap-2k
  step gen-vanilla 300 "$CUZK" gen-vanilla --sector-size 2k --out "$W/req"
  for kind in ${JN_KINDS:-wpost-2k winning-2k porep-2k snap-2k}; do
    for r in $(seq 1 "${ROUNDS:-3}"); do
      for jn in false true; do
        up "$kind-$jn-$r" "$jn" 0
        step "warm-$kind-$jn-$r" 300 "$CUZK" load --quiet --jobs 8 --concurrency 4 --mix "@$W/req/$kind.json"
        measure "$kind-$SETTING-$jn-$r" --verify --jobs "${JN_JOBS:-128}" --concurrency 4 --mix "@$W/req/$kind.json"
        down
      done
    done
  done
fi

if [[ " $PARTS " == *" backlog "* ]]; then
  SIZE=${SIZE:-32g}
  [ -f "$W/req/porep-$SIZE.json" ] || step gen-vanilla-$SIZE 300 "$CUZK" gen-vanilla --synthetic --sector-size "$SIZE" --out "$W/req"
  for r in $(seq 1 "${BL_ROUNDS:-1}"); do
    for jn in false true; do
      up "porep-$SIZE-$jn-$r" "$jn" 1
      step "warm-$SIZE-$jn-$r" 600 "$CUZK" load --quiet --jobs 1 --concurrency 1 --mix "@$W/req/porep-$SIZE.json"
      measure "backlog-$SIZE-$SETTING-$jn-$r" --jobs "${BACKLOG:-6}" --concurrency 3 --mix "@$W/req/porep-$SIZE.json"
      down
    done
  done
fi
