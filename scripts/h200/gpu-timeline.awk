# What each device stream ran, from the backend's own timeline (`CUZK_GPU_TIMELINE=<file>`, lines
# `device,stream,operation,start_ms,end_ms`, ms since the Unix epoch; backend-cuda/src/timeline.rs),
# in start order:
#
#   sort -t, -k4,4g timeline.csv | awk -F, -f scripts/h200/gpu-timeline.awk [-v from=MS -v to=MS]
#
# Per device and stream, over the span from the first operation's start to the last one's end
# (only operations starting in [from, to) when given): the time an operation ran and the time
# the stream had none, then per operation (label) the count, total, mean and longest time and
# the idle time just before it (on the compute stream: host work, locks, waits for uploads).
{
    key = $1 "," $2; label = $3; s = $4 + 0; e = $5 + 0
    if ((from != "" && s < from + 0) || (to != "" && s >= to + 0)) next
    if (!(key in first)) { first[key] = s; last_end[key] = e; keys[++nk] = key }
    else if (s > last_end[key]) { g = s - last_end[key]; idle[key] += g; idle_before[key SUBSEP label] += g }
    if (e > last_end[key]) last_end[key] = e
    d = e - s; busy[key] += d; ops[key]++
    lk = key SUBSEP label
    if (!(lk in count)) labels[key, ++nl[key]] = label
    count[lk]++; total[lk] += d; if (d > longest[lk]) longest[lk] = d
}
END {
    if (nk == 0) { print "gpu-timeline: no operations"; exit 1 }
    for (k = 1; k <= nk; k++) {
        key = keys[k]; span = last_end[key] - first[key]
        split(key, dk, ",")
        printf "device %s, %s stream: %d operations over %.3f s: busy %.1f%%, idle %.3f s\n", dk[1], dk[2], ops[key], span / 1e3, (span > 0 ? 100 * busy[key] / span : 100), idle[key] / 1e3
        printf "  %-44s %7s %12s %10s %10s %14s\n", "operation", "count", "total ms", "mean ms", "max ms", "idle before ms"
        for (i = 1; i <= nl[key]; i++) {
            lk = key SUBSEP labels[key, i]
            printf "  %-44s %7d %12.3f %10.3f %10.3f %14.3f\n", labels[key, i], count[lk], total[lk], total[lk] / count[lk], longest[lk], idle_before[lk]
        }
    }
}
