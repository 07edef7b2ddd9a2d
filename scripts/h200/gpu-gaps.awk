# Where the device ran no kernel, from an Nsight Systems trace
# (`nsys stats --report cuda_gpu_trace --format csv`, rows in start order):
#
#   awk -F, -f scripts/h200/gpu-gaps.awk trace_cuda_gpu_trace.csv
#
# Over the span from the first kernel's start to the last one's end: the time some kernel ran
# (kernels on several streams overlap: their union), the gaps between, counted and summed by
# length, and the longest gaps with the kernels on either side (copies and memsets are not
# kernels: a gap that holds one is named by it).
function clean(s) { gsub(/^"|"$/, "", s); return s }
function bucket(g) { return g < 1e4 ? "< 10 us" : g < 1e5 ? "10-100 us" : g < 1e6 ? "0.1-1 ms" : g < 1e7 ? "1-10 ms" : ">= 10 ms" }
NR == 1 {
    for (i = 1; i <= NF; i++) {
        h = clean($i)
        if (h ~ /^Start/) c_start = i
        else if (h ~ /^Duration/) c_dur = i
        else if (h == "Name") c_name = i
    }
    if (!c_start || !c_dur || !c_name) { print "gpu-gaps: no Start, Duration or Name column in the header" > "/dev/stderr"; exit 2 }
    next
}
{
    name = clean($c_name); start = clean($c_start) + 0; end = start + clean($c_dur) + 0
    if (name ~ /memcpy|memset|CUDA mem/) { if (n) held = held (held ? " " : "") name; next }
    if (n == 0) { first = start; busy_end = end; last = name; n = 1; next }
    n++
    if (start > busy_end) {
        g = start - busy_end; b = bucket(g)
        gaps[b]++; gap_sum[b] += g; total_gap += g
        if (g >= 1e5) { top[++nt] = sprintf("%12.3f ms after %s, before %s%s", g / 1e6, last, name, held ? " (copies: " held ")" : ""); top_len[nt] = g }
    }
    if (end > busy_end) busy_end = end
    last = name; held = ""
}
END {
    if (n == 0) { print "gpu-gaps: no kernels"; exit 1 }
    span = busy_end - first
    printf "kernels %d over %.3f s: a kernel running %.1f%% of it, no kernel %.3f s\n", n, span / 1e9, 100 * (span - total_gap) / span, total_gap / 1e9
    split("< 10 us,10-100 us,0.1-1 ms,1-10 ms,>= 10 ms", order, ",")
    for (i = 1; i <= 5; i++) if (gaps[order[i]]) printf "  gaps %-9s %8d, %10.3f ms in all\n", order[i], gaps[order[i]], gap_sum[order[i]] / 1e6
    # the 15 longest gaps of 0.1 ms or more
    for (k = 1; k <= 15 && k <= nt; k++) {
        m = 0
        for (i = 1; i <= nt; i++) if (top_len[i] > 0 && (m == 0 || top_len[i] > top_len[m])) m = i
        print "  " top[m]; top_len[m] = -1
    }
}
