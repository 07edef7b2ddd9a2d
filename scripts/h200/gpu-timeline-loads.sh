#!/usr/bin/env bash
# A daemon's device timeline (CUZK_GPU_TIMELINE) summed per load, by gpu-timeline.awk:
#
#   bash scripts/h200/gpu-timeline-loads.sh TIMELINE.csv NAME.window...
#
# Each NAME.window holds a load's start and end in ms since the epoch (`date +%s%3N`, as the
# timeline's); prints "== NAME" and the summary of the operations that started within it.
# Nothing when the timeline is empty or missing (the CPU backend writes none).
set -u
csv=$1
shift
[ -s "$csv" ] || exit 0
sorted=$(mktemp)
trap 'rm -f "$sorted"' EXIT
sort -t, -k4,4g "$csv" > "$sorted"
for w in "$@"; do
  read -r from to < "$w"
  echo "== $(basename "$w" .window)"
  awk -F, -v from="$from" -v to="$to" -f "$(dirname "$0")/gpu-timeline.awk" "$sorted" 2>&1
done
