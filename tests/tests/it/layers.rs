//! The crate and module layers stay as `docs/architecture.md` draws them:
//! - `cuzk-core` (sans-io) depends on no runtime, thread pool or transport; the worker layer
//!   (`cuzk-worker`, blocking) on no async runtime or transport; the daemon on the worker;
//! - on the daemon's server side, no module imports the client side (`daemon/src/client/`) or
//!   the command-line tools, and the driver knows nothing of gRPC.
//!
//! Dependencies come from `cargo tree` (offline: the build has already fetched everything).

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

/// Every crate `package` depends on at run time (normal edges, transitively), by name.
fn normal_deps(package: &str) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(root())
        .args(["tree", "--offline", "-q", "-p", package, "-e", "normal", "--prefix", "none", "--format", "{p}"])
        .output()
        .expect("cargo tree runs");
    assert!(out.status.success(), "cargo tree -p {package}: {}", String::from_utf8_lossy(&out.stderr));
    let mut names: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.split_whitespace().next()).map(String::from).collect();
    names.sort();
    names.dedup();
    names
}

const ASYNC_OR_TRANSPORT: [&str; 6] = ["tokio", "tonic", "hyper", "axum", "prost", "tower"];

#[test]
fn core_depends_on_no_runtime_pool_or_transport() {
    let deps = normal_deps("cuzk-core");
    for bad in ASYNC_OR_TRANSPORT.iter().chain(&["rayon"]) {
        assert!(!deps.iter().any(|d| d == bad), "cuzk-core depends on {bad}: {deps:?}");
    }
}

#[test]
fn worker_depends_on_no_async_runtime_or_transport() {
    let deps = normal_deps("cuzk-worker");
    assert!(deps.iter().any(|d| d == "cuzk-core"), "{deps:?}");
    for bad in ASYNC_OR_TRANSPORT {
        assert!(!deps.iter().any(|d| d == bad), "cuzk-worker depends on {bad}: {deps:?}");
    }
    assert!(!deps.iter().any(|d| d == "cuzk-daemon"), "the worker imports the daemon");
}

#[test]
fn daemon_runs_stages_through_the_worker() {
    let deps = normal_deps("cuzk-daemon");
    assert!(deps.iter().any(|d| d == "cuzk-worker"), "{deps:?}");
    assert!(deps.iter().any(|d| d == "tokio"), "the dependency listing is read wrong: {deps:?}");
    // The daemon's sources never chain prover stages themselves.
    for f in rust_files(&root().join("daemon/src")) {
        let text = std::fs::read_to_string(&f).unwrap();
        for call in ["prover::{", "prover::prove", "prover::upload", "prover::msms", "prover::compute_h", "prover::finalize"] {
            assert!(!text.contains(call), "{} uses cuzk_core::{call}: run stages through cuzk-worker", f.display());
        }
    }
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(rust_files(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out
}

/// Modules of the daemon's client side and its command-line tools, as `crate::` paths.
const CLIENT_AND_TOOLS: [&str; 3] = ["crate::client", "crate::filecoin", "crate::compare_bellperson"];

#[test]
fn the_server_side_imports_no_client_module() {
    let src = root().join("daemon/src");
    let server: Vec<PathBuf> = rust_files(&src)
        .into_iter()
        .filter(|p| {
            let rel = p.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
            // The command line (`cli.rs`, which `main.rs` calls) sits above both sides.
            !(rel.starts_with("client/") || ["main.rs", "cli.rs", "lib.rs", "filecoin.rs", "compare_bellperson.rs"].contains(&rel.as_str()))
        })
        .collect();
    assert!(server.iter().any(|p| p.ends_with("driver/mod.rs")) && server.iter().any(|p| p.ends_with("service.rs")), "server files found: {server:?}");
    for f in &server {
        let text = std::fs::read_to_string(f).unwrap();
        for m in CLIENT_AND_TOOLS {
            assert!(!text.contains(&format!("{m}::")) && !text.contains(&format!("{m};")), "{} imports {m}", f.display());
        }
    }
    for f in rust_files(&src.join("driver")) {
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(!text.contains("tonic"), "{} speaks gRPC: the driver answers DriverError", f.display());
    }
}
