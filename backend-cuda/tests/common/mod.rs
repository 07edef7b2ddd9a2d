//! Kernel code built for the host: a C++ harness that includes files of `kernels/cuda`
//! (`field/host_emulation.h` first), compiled once per test binary and run on files of raw
//! operands.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Compiles `source` into `CARGO_TARGET_TMPDIR/<name>/harness` with `flags` (besides `-O2
/// -std=c++17 -w -I kernels/cuda`). Without a C++ compiler (`CXX`, else `c++`): a visible
/// `SKIPPED` line naming `what`, and `None`; a compile error fails the test.
pub fn build_harness(name: &str, source: &str, flags: &[&str], what: &str) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let src = dir.join("harness.cpp");
    std::fs::write(&src, source).expect("write harness");
    let bin = dir.join("harness");
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let kernels = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/cuda");
    let out = Command::new(&cxx).args(["-O2", "-std=c++17", "-w"]).args(flags).arg("-I").arg(kernels).arg(&src).arg("-o").arg(&bin).output();
    match out {
        Err(e) => {
            // Past libtest's capture, so the skip shows in a plain `cargo test`.
            let _ = writeln!(std::io::stderr(), "SKIPPED: no C++ compiler ({cxx}: {e}); set CXX to run the {what}");
            None
        }
        Ok(o) if !o.status.success() => panic!("the {what} do not compile as host C++:\n{}", String::from_utf8_lossy(&o.stderr)),
        Ok(_) => Some(bin),
    }
}

/// Runs the harness `bin` as `bin <mode> <n> <in> <out>` on `input` (files named after
/// `name` beside it) and returns what it wrote.
pub fn run_harness(bin: &Path, name: &str, mode: u32, n: usize, input: &[u8]) -> Vec<u8> {
    let dir = bin.parent().expect("the harness is in a directory");
    let (inp, out) = (dir.join(format!("{name}.in")), dir.join(format!("{name}.out")));
    std::fs::write(&inp, input).unwrap();
    let st = Command::new(bin).arg(mode.to_string()).arg(n.to_string()).arg(&inp).arg(&out).status().expect("run harness");
    assert!(st.success(), "harness failed: {st}");
    std::fs::read(&out).unwrap()
}
