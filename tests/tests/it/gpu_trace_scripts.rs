//! The GPU host's timeline script (`scripts/h200/gpu-timeline.awk`) against a direct computation
//! over the same synthetic device timeline (`CUZK_GPU_TIMELINE` lines): a compute stream whose
//! operations follow each other with gaps of every length, a copy stream beside it, lines out of
//! start order, and a window that leaves some out.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::Command;

use rand::{Rng, SeedableRng};

/// One timeline line: stream, operation, start and end in ms since the epoch.
struct Op {
    stream: &'static str,
    label: &'static str,
    start: f64,
    end: f64,
}

const LABELS: [&str; 4] = ["eval n=134217728", "compute_h n=134217728", "msm_g1 n=134217727", "msm_g2 n=130169893 sel=33112281"];

fn timeline(seed: u64) -> Vec<Op> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut ops = Vec::new();
    let mut t = 1.764e12 + rng.gen_range(0.0..1e6);
    for _ in 0..300 {
        // No gap, some µs, ms or tens of ms.
        let gap = match rng.gen_range(0..4) {
            0 => 0.0,
            1 => rng.gen_range(0.001..0.1),
            2 => rng.gen_range(0.1..10.0),
            _ => rng.gen_range(10.0..30.0),
        };
        let start = t + gap;
        let end = start + rng.gen_range(0.01..500.0);
        ops.push(Op { stream: "compute", label: LABELS[rng.gen_range(0..LABELS.len())], start, end });
        if rng.gen_bool(0.3) {
            ops.push(Op { stream: "copy", label: "upload n=130169893", start: start + 1.0, end: start + 100.0 });
        }
        t = end;
    }
    ops
}

/// One stream's sums: operations, busy ms, idle ms, and the idle ms before each label.
type StreamSums = (usize, f64, f64, BTreeMap<&'static str, f64>);

/// Per stream, the sums over the ops starting in [from, to).
fn direct(ops: &[Op], from: f64, to: f64) -> BTreeMap<&'static str, StreamSums> {
    let mut sorted: Vec<&Op> = ops.iter().filter(|o| o.start >= from && o.start < to).collect();
    sorted.sort_by(|a, b| a.start.total_cmp(&b.start));
    let mut out = BTreeMap::new();
    let mut last_end: BTreeMap<&str, f64> = BTreeMap::new();
    for o in sorted {
        let e = out.entry(o.stream).or_insert((0, 0.0, 0.0, BTreeMap::new()));
        if let Some(&le) = last_end.get(o.stream) {
            if o.start > le {
                e.2 += o.start - le;
                *e.3.entry(o.label).or_insert(0.0) += o.start - le;
            }
        }
        e.0 += 1;
        e.1 += o.end - o.start;
        let le = last_end.entry(o.stream).or_insert(o.end);
        *le = le.max(o.end);
    }
    out
}

#[test]
fn gpu_timeline_sums_each_streams_operations_and_idle_time() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/h200/gpu-timeline.awk");
    for seed in 0..3 {
        let mut ops = timeline(seed);
        let (from, to) = (ops[20].start, ops[ops.len() - 30].start);
        let want = direct(&ops, from, to);
        // The file holds lines in completion order, not start order: shuffle them.
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed + 100);
        for i in (1..ops.len()).rev() {
            ops.swap(i, rng.gen_range(0..=i));
        }
        let path = std::env::temp_dir().join(format!("cuzk-gpu-timeline-{}-{seed}.csv", std::process::id()));
        let mut csv = std::fs::File::create(&path).unwrap();
        for o in &ops {
            writeln!(csv, "0,{},{},{:.3},{:.3}", o.stream, o.label, o.start, o.end).unwrap();
        }
        drop(csv);
        let cmd = format!("sort -t, -k4,4g {} | awk -F, -v from={from:.3} -v to={to:.3} -f {script}", path.display());
        let out = Command::new("sh").args(["-c", &cmd]).output().expect("sh runs");
        std::fs::remove_file(&path).unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(out.status.success(), "gpu-timeline.awk failed: {text}{}", String::from_utf8_lossy(&out.stderr));
        for (stream, (n, busy, idle, before)) in &want {
            let head = text
                .lines()
                .find(|l| l.starts_with(&format!("device 0, {stream} stream")))
                .unwrap_or_else(|| panic!("seed {seed}: no {stream} line in {text}"));
            let words: Vec<&str> = head.split_whitespace().collect();
            assert!(head.contains(&format!("{n} operations")), "seed {seed}: {head:?}, want {n} operations");
            let idle_s: f64 = words[words.len() - 2].parse().unwrap();
            assert!((idle_s - idle / 1e3).abs() < 0.002, "seed {seed}: {stream} idle {idle_s} s, want {} s", idle / 1e3);
            let busy_pct: f64 = words[words.len() - 4].trim_end_matches(['%', ',']).parse().unwrap();
            let span_s: f64 = words[words.len() - 7].parse().unwrap();
            assert!((busy_pct - 100.0 * busy / (span_s * 1e3)).abs() < 0.1, "seed {seed}: {head:?}, busy {busy} ms");
            // Each label's row: the idle time before it sums to the stream's idle time.
            let rows = text.lines().skip_while(|l| *l != head).skip(2).take_while(|l| l.starts_with("  "));
            let mut sum = 0.0;
            for row in rows {
                let cols: Vec<&str> = row.split_whitespace().collect();
                let label = row.trim_start().split("  ").next().unwrap().trim();
                let got: f64 = cols[cols.len() - 1].parse().unwrap();
                let want_before = before.get(label).copied().unwrap_or(0.0);
                assert!((got - want_before).abs() < 0.01, "seed {seed}: idle before {label}: {got} ms, want {want_before}");
                sum += got;
            }
            assert!((sum - idle).abs() < 0.01 * LABELS.len() as f64, "seed {seed}: {stream}: rows sum to {sum} ms, idle {idle} ms");
        }
    }
}
