//! The GPU host's trace scripts (`scripts/h200/gpu-gaps.awk`) against a direct computation over
//! the same synthetic Nsight Systems kernel trace: kernels on two streams that overlap, copies
//! between them, gaps of every length class.

use std::io::Write;
use std::process::Command;

use rand::{Rng, SeedableRng};

/// One row of `nsys stats --report cuda_gpu_trace --format csv`: start and duration in ns.
struct Row {
    start: u64,
    dur: u64,
    name: &'static str,
}

fn trace(seed: u64) -> Vec<Row> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut rows = Vec::new();
    let mut t = 1_000_000u64;
    for _ in 0..400 {
        // A gap of 0 (overlap with the previous kernel), some µs, ms or tens of ms.
        let gap = match rng.gen_range(0..5) {
            0 => 0,
            1 => rng.gen_range(1..10_000),
            2 => rng.gen_range(10_000..1_000_000),
            3 => rng.gen_range(1_000_000..10_000_000),
            _ => rng.gen_range(10_000_000..30_000_000),
        };
        if gap > 0 && rng.gen_bool(0.3) {
            rows.push(Row { start: t + gap / 3, dur: gap / 3, name: "[CUDA memcpy Host-to-Device]" });
        }
        let start = t + gap;
        let dur = rng.gen_range(1_000..5_000_000);
        rows.push(Row { start, dur, name: if rng.gen_bool(0.5) { "msm_scatter_g1" } else { "ntt_pass" } });
        // Sometimes a second stream's kernel inside this one.
        if rng.gen_bool(0.2) {
            rows.push(Row { start: start + dur / 4, dur: dur / 2, name: "msm_histogram" });
        }
        t = start + dur;
    }
    rows.sort_by_key(|r| r.start);
    rows
}

/// The kernels' union over their span: (span, time with no kernel, gaps of ≥ 0.1 ms).
fn direct(rows: &[Row]) -> (u64, u64, usize) {
    let kernels: Vec<&Row> = rows.iter().filter(|r| !r.name.contains("memcpy")).collect();
    let (first, mut end) = (kernels[0].start, kernels[0].start + kernels[0].dur);
    let (mut idle, mut long) = (0, 0);
    for k in &kernels[1..] {
        if k.start > end {
            idle += k.start - end;
            long += usize::from(k.start - end >= 100_000);
        }
        end = end.max(k.start + k.dur);
    }
    (end - first, idle, long)
}

#[test]
fn gpu_gaps_reports_the_time_without_a_kernel() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/h200/gpu-gaps.awk");
    for seed in 0..3 {
        let rows = trace(seed);
        let path = std::env::temp_dir().join(format!("cuzk-gpu-gaps-{}-{seed}.csv", std::process::id()));
        let mut csv = std::fs::File::create(&path).unwrap();
        writeln!(csv, "\"Start (ns)\",\"Duration (ns)\",\"CorrId\",\"Bytes (MB)\",\"Strm\",\"Name\"").unwrap();
        for (i, r) in rows.iter().enumerate() {
            writeln!(csv, "{},{},{i},,7,\"{}\"", r.start, r.dur, r.name).unwrap();
        }
        drop(csv);
        let out = Command::new("awk").args(["-F,", "-f", script]).arg(&path).output().expect("awk runs");
        std::fs::remove_file(&path).unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(out.status.success(), "gpu-gaps.awk failed: {text}{}", String::from_utf8_lossy(&out.stderr));
        let (span, idle, long) = direct(&rows);
        let first = text.lines().next().unwrap();
        let expect = format!(
            "over {:.3} s: a kernel running {:.1}% of it, no kernel {:.3} s",
            span as f64 / 1e9,
            100.0 * (span - idle) as f64 / span as f64,
            idle as f64 / 1e9
        );
        assert!(first.contains(&expect), "seed {seed}: {first:?} lacks {expect:?}");
        // The gap classes add up to the idle time and count every gap.
        let classes: Vec<(usize, f64)> = text
            .lines()
            .filter(|l| l.trim_start().starts_with("gaps "))
            .map(|l| {
                let nums: Vec<&str> = l.split(|c: char| c == ',' || c.is_whitespace()).filter(|w| w.parse::<f64>().is_ok()).collect();
                (nums[nums.len() - 2].parse().unwrap(), nums[nums.len() - 1].parse().unwrap())
            })
            .collect();
        let ms: f64 = classes.iter().map(|c| c.1).sum();
        assert!((ms - idle as f64 / 1e6).abs() < 0.01 * classes.len() as f64, "seed {seed}: classes sum to {ms} ms, idle {} ms", idle as f64 / 1e6);
        // The longest gaps listed: at most 15, each of 0.1 ms or more, longest first.
        let listed: Vec<f64> = text.lines().filter(|l| l.contains(" ms after ")).map(|l| l.split_whitespace().next().unwrap().parse().unwrap()).collect();
        assert_eq!(listed.len(), long.min(15), "seed {seed}");
        assert!(listed.windows(2).all(|w| w[0] >= w[1]) && listed.iter().all(|&g| g >= 0.1), "seed {seed}: {listed:?}");
    }
}
