//! `cuzk-core` is runtime-free and clock-free: no source file reads the clock, spawns or
//! sleeps a thread, or names an async runtime; neither its manifest nor its resolved
//! (non-dev) dependency graph contains one.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Code (not comments) that would read the clock, own threads or use a runtime.
const FORBIDDEN_CODE: &[&str] = &[
    "Instant::now",
    "SystemTime",
    "UNIX_EPOCH",
    "thread::spawn",
    "thread::Builder",
    "thread::scope",
    "thread::sleep",
    "tokio",
    "async_std",
    "smol::",
    "chrono::",
];

/// Crates that are (or embed) async runtimes or executors.
const FORBIDDEN_CRATES: &[&str] = &["tokio", "async-std", "smol", "async-executor", "async-global-executor", "futures-executor", "glommio", "actix-rt"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The line without a trailing `//` comment (good enough: none of the patterns appear in
/// string literals in this crate, and a false positive would only make this test stricter).
fn code_part(line: &str) -> &str {
    line.find("//").map_or(line, |i| &line[..i])
}

#[test]
fn no_clock_threads_or_runtime_in_sources() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.iter().any(|f| f.ends_with("engine/mod.rs")), "the scan sees the engine");
    let mut hits = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("read source");
        for (n, line) in text.lines().enumerate() {
            let code = code_part(line);
            for pat in FORBIDDEN_CODE {
                if code.contains(pat) {
                    hits.push(format!("{}:{}: {pat}: {}", f.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(hits.is_empty(), "forbidden calls in cuzk-core:\n{}", hits.join("\n"));
}

#[test]
fn manifest_names_no_runtime() {
    let manifest = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).expect("read");
    let mut section = String::new();
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            section = line.to_string();
            continue;
        }
        if section.contains("dev-dependencies") || !section.contains("dependencies") {
            continue;
        }
        let name = line.split(['=', '.', ' ']).next().unwrap_or("").trim();
        assert!(!FORBIDDEN_CRATES.contains(&name), "cuzk-core depends on {name} in {section}");
    }
}

/// The packages `manifest`'s crate links into a build for the host: its normal and build
/// dependencies, transitively, as `cargo tree` resolves them. Works offline once a plain
/// `cargo build` has fetched what the host needs (unlike `cargo metadata`, which wants the
/// manifest of every package in the lock file, for every platform).
fn host_dependencies(manifest: &Path) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(["tree", "--offline", "--edges", "normal,build", "--prefix", "none", "--format", "{p}", "--manifest-path"])
        .arg(manifest)
        .output()
        .expect("run cargo tree");
    assert!(out.status.success(), "cargo tree --offline for {}: {}", manifest.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.split_whitespace().next()).map(str::to_string).collect()
}

fn runtimes_in(names: &BTreeSet<String>) -> Vec<&String> {
    names.iter().filter(|n| FORBIDDEN_CRATES.contains(&n.as_str())).collect()
}

#[test]
fn resolved_dependencies_contain_no_runtime() {
    let names = host_dependencies(&Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"));
    assert!(names.contains("blstrs"), "the walk reaches real dependencies: {names:?}");
    assert!(!names.contains("criterion"), "dev-dependencies are not walked: {names:?}");
    let bad = runtimes_in(&names);
    assert!(bad.is_empty(), "cuzk-core pulls in {bad:?}");
}

/// The check above can fail: a crate with tokio planted among its normal dependencies (resolved
/// offline against the workspace's lock file) is caught.
#[test]
fn the_dependency_check_catches_a_planted_runtime() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf();
    let dir = std::env::temp_dir().join(format!("cuzk-planted-runtime-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("src")).expect("temp crate");
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"planted\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n[dependencies]\nblstrs = \"0.7\"\ntokio = \"1\"\n\n[workspace]\n",
    )
    .expect("write manifest");
    std::fs::write(dir.join("src/lib.rs"), "").expect("write lib");
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).expect("copy the lock file");
    let names = host_dependencies(&dir.join("Cargo.toml"));
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(runtimes_in(&names), vec!["tokio"], "the planted runtime is reported: {names:?}");
}
