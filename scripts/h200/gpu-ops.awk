# The GPU time of each operation of a proof, from an Nsight Systems kernel trace
# (`nsys stats --report cuda_gpu_trace --format csv`, rows in start order):
#
#   awk -F, -f scripts/h200/gpu-ops.awk trace_cuda_gpu_trace.csv
#
# Consecutive kernels of one kind form an operation: `evaluate` (the constraint evaluation),
# `compute_h` (the transforms and the quotient), `msm` (from one msm_prepare to the next;
# its group from the first kernel named *_g1 or *_g2, its size from msm_prepare's threads),
# `check` (the constraint check of the self-test), `points` (point checks), `other`. Copies
# are summed per direction from an operation's first kernel to the next one's (those before
# the first operation count with it). Prints one line per operation:
# its kind, kernels, GPU time (the kernels' durations summed), its span (first start to last
# end) and copies, then the totals per kind.
function clean(s) { gsub(/^"|"$/, "", s); return s }
function kind(name) {
    if (name ~ /^msm_prepare/) return "msm-start"
    if (name ~ /^(msm_|scan_|read_u32s)/) return "msm"
    if (name ~ /^ntt_/) return "compute_h"
    if (name ~ /^check_constraints/) return "check"
    if (name ~ /eval/) return "evaluate"
    if (name ~ /^check_points/) return "points"
    return "other"
}
function flush() {
    if (op == "") return
    printf "%4d %-10s %-3s %12s %6d kernels %10.3f ms gpu %10.3f ms span  copies HtoD %8.1f MB DtoH %8.1f MB\n", \
        n_ops, op, group, size, kernels, gpu / 1e6, (last_end - first) / 1e6, htod, dtoh
    total[op] += gpu; count[op]++
    op = ""; htod = 0; dtoh = 0
}
NR == 1 {
    for (i = 1; i <= NF; i++) {
        h = clean($i)
        if (h ~ /^Start/) c_start = i
        else if (h ~ /^Duration/) c_dur = i
        else if (h ~ /^GrdX/) c_grid = i
        else if (h ~ /^BlkX/) c_block = i
        else if (h ~ /^Bytes/) c_bytes = i
        else if (h == "Name") c_name = i
    }
    if (!c_start || !c_dur || !c_name) { print "gpu-ops: no Start, Duration or Name column in the header" > "/dev/stderr"; exit 2 }
    next
}
{
    name = clean($c_name); start = clean($c_start) + 0; dur = clean($c_dur) + 0
    if (name ~ /memcpy|memset/) {
        mb = c_bytes ? clean($c_bytes) + 0 : 0
        if (name ~ /Host-to-Device|HtoD/) htod += mb
        else if (name ~ /Device-to-Host|DtoH/) dtoh += mb
        next
    }
    k = kind(name)
    if (k == "msm-start" || (k != op && !(k == "msm" && op == "msm"))) {
        flush()
        n_ops++
        op = (k == "msm-start") ? "msm" : k
        group = ""; size = ""; kernels = 0; gpu = 0; first = start
        if (k == "msm-start" && c_grid && c_block) size = clean($c_grid) * clean($c_block)
    }
    if (group == "" && match(name, /_g[12]$/)) group = substr(name, RSTART + 1)
    kernels++; gpu += dur; last_end = start + dur
}
END {
    flush()
    for (k in total) printf "total %-10s %4d ops %12.3f ms gpu\n", k, count[k], total[k] / 1e6
}
