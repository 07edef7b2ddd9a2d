//! `cuzk-core` is runtime-free and clock-free: no source file reads the clock, spawns or
//! sleeps a thread, or names an async runtime; neither its manifest nor its resolved
//! (non-dev) dependency graph contains one.

use std::collections::{BTreeSet, VecDeque};
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

#[test]
fn resolved_dependencies_contain_no_runtime() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--offline", "--manifest-path"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
        .output()
        .expect("run cargo metadata");
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata JSON");
    let name_of = |id: &str| -> String {
        meta["packages"].as_array().and_then(|ps| ps.iter().find(|p| p["id"] == id)).and_then(|p| p["name"].as_str()).unwrap_or("?").to_string()
    };
    let nodes = meta["resolve"]["nodes"].as_array().expect("resolve graph");
    let root = nodes.iter().map(|n| n["id"].as_str().unwrap_or("")).find(|id| name_of(id) == "cuzk-core").expect("cuzk-core in the graph").to_string();
    // Walk normal and build edges only (dev-dependencies are for tests).
    let mut seen = BTreeSet::new();
    let mut queue = VecDeque::from([root]);
    while let Some(id) = queue.pop_front() {
        if !seen.insert(id.clone()) {
            continue;
        }
        let Some(node) = nodes.iter().find(|n| n["id"] == id.as_str()) else { continue };
        for dep in node["deps"].as_array().into_iter().flatten() {
            let kinds = dep["dep_kinds"].as_array().cloned().unwrap_or_default();
            let runtime = kinds.iter().any(|k| k["kind"].is_null() || k["kind"] == "build");
            if runtime {
                if let Some(pkg) = dep["pkg"].as_str() {
                    queue.push_back(pkg.to_string());
                }
            }
        }
    }
    let names: BTreeSet<String> = seen.iter().map(|id| name_of(id)).collect();
    let bad: Vec<_> = names.iter().filter(|n| FORBIDDEN_CRATES.contains(&n.as_str())).collect();
    assert!(bad.is_empty(), "cuzk-core pulls in {bad:?}");
    assert!(names.contains("blstrs"), "the walk reaches real dependencies: {names:?}");
}
