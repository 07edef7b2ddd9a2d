//! The crate and module layers stay as `docs/architecture.md` draws them:
//! - `cuzk-core` (sans-io) depends on no runtime, thread pool or transport; the worker layer
//!   (`cuzk-worker`, blocking) on no async runtime or transport; the daemon on the worker;
//! - a backend crate (`backend-*`) depends on no other backend, on neither the worker nor
//!   anything above it, in no section of its manifest and in none of its sources, tests,
//!   examples and benches (programs that compare backends live in cuzk-tests);
//! - the daemon's driver and the core's job layer know nothing of gRPC (no `proto`, `tonic`,
//!   `prost`): they answer their own types, which `server/service.rs` maps;
//! - on the daemon's server side (`daemon/src/server/`), no module reaches the client side
//!   (`daemon/src/client/`), the command line and its tools (`cli`, `daemon/src/tools/`) or the
//!   crate root's `CliError`, directly or through a shared module;
//! - within a crate, the top-level modules import one another one way (no import circles), and
//!   so do the modules of the daemon's server side.
//!
//! Dependencies come from `cargo tree` (offline: the build has already fetched everything);
//! imports from the sources, read without their `//` comment lines (prose may name anything).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

/// Every crate `package` depends on at run time (normal edges, transitively), by name.
fn normal_deps(package: &str) -> Vec<String> {
    deps(package, "normal")
}

/// Every crate `package` depends on through the `edges` kinds (`cargo tree -e`), by name.
fn deps(package: &str, edges: &str) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(root())
        .args(["tree", "--offline", "-q", "-p", package, "-e", edges, "--prefix", "none", "--format", "{p}"])
        .output()
        .expect("cargo tree runs");
    assert!(out.status.success(), "cargo tree -p {package} -e {edges}: {}", String::from_utf8_lossy(&out.stderr));
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
    out.sort();
    out
}

fn rel(p: &Path) -> String {
    p.strip_prefix(root()).unwrap_or(p).display().to_string()
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// A source file without its `//` comment lines (blank in their place, so line numbers hold).
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines().map(|l| if l.trim_start().starts_with("//") { "" } else { l }).collect::<Vec<_>>().join("\n")
}

fn line_of(code: &str, at: usize) -> usize {
    code[..at].matches('\n').count() + 1
}

/// Offsets of `word` in `code` where it starts a path segment (no identifier character or `:`
/// just before it): `tonic` in `tonic::Status` and `tonic_build`, not in `monotonic`.
fn word_starts(code: &str, word: &str) -> Vec<usize> {
    code.match_indices(word).map(|(at, _)| at).filter(|&at| !code[..at].ends_with(|c| is_ident(c) || c == ':')).collect()
}

/// The first identifier of a path (`a::b` → `a`).
fn first_segment(path: &str) -> String {
    path.trim_start().chars().take_while(|&c| is_ident(c)).collect()
}

/// The first names of the paths that start with `anchor` (`crate::`, or `crate::m::` for the
/// modules of folder `m`) in `code` (`crate::a::b` → `a`, `crate::{a, b::{c, d}}` → `a` and
/// `b`; `$crate::` counts), each with its line.
fn crate_paths(code: &str, anchor: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for at in word_starts(code, anchor) {
        let line = line_of(code, at);
        let rest = &code[at + anchor.len()..];
        let Some(group) = rest.strip_prefix('{') else {
            out.push((line, first_segment(rest)));
            continue;
        };
        let (mut depth, mut item) = (0, String::new());
        for c in group.chars() {
            match c {
                '}' if depth == 0 => break,
                ',' if depth == 0 => {
                    out.push((line, first_segment(&item)));
                    item.clear();
                    continue;
                }
                '{' => depth += 1,
                '}' => depth -= 1,
                _ => {}
            }
            item.push(c);
        }
        out.push((line, first_segment(&item)));
    }
    out.retain(|(_, name)| !name.is_empty() && name != "self");
    out
}

/// The root module of a crate, as [`module_graph`] names it.
const ROOT: &str = "crate";

/// Which top-level module of the crate at `src` names which: for each module (a file `m.rs` or
/// a folder `m/`), the modules its code names through `crate::` paths, with the first place it
/// does (`file:line: path`). A name the root re-exports (`pub use m::Name`) counts as its
/// module, any other root item as [`ROOT`]. The root (`lib.rs`) is [`ROOT`]: its own items
/// name modules by their names (`client::ClientError`); its `mod` and `use` lines are not
/// edges. `main.rs` and `bin/` are crates of their own.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeMap<String, String>> {
    module_graph_at(src, "lib.rs", "crate::")
}

/// [`module_graph`] of the modules in folder `src` below the crate root, whose `root` file
/// (`mod.rs`) is [`ROOT`] and whose modules the code names as `anchor` (`crate::server::`).
fn module_graph_at(src: &Path, root: &str, anchor: &str) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut modules = BTreeSet::new();
    for e in std::fs::read_dir(src).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        let file = p.file_name().unwrap().to_string_lossy().into_owned();
        if (p.is_dir() && name != "bin") || (p.extension().is_some_and(|x| x == "rs") && file != root && name != "main") {
            modules.insert(name);
        }
    }
    // The root's own items (its `mod` and `use` statements blanked) and what it re-exports.
    let lib = src.join(root);
    let (mut items, mut exported) = (Vec::new(), BTreeMap::new());
    let mut statement: Option<String> = None;
    let root_code = code(&lib);
    for l in root_code.lines() {
        let t = l.trim_start();
        let t = t.strip_prefix("pub ").or_else(|| t.strip_prefix("pub(crate) ")).unwrap_or(t);
        if statement.is_none() && t.starts_with("use ") {
            statement = Some(String::new());
        }
        let Some(s) = statement.as_mut() else {
            items.push(if t.starts_with("mod ") { "" } else { l });
            continue;
        };
        items.push("");
        s.push_str(l);
        if !l.contains(';') {
            continue;
        }
        let path = s.split_once("use ").unwrap().1.split(';').next().unwrap().trim().to_string();
        statement = None;
        let module = first_segment(&path);
        if let Some(names) = path.strip_prefix(&format!("{module}::")) {
            for n in names.trim_start_matches('{').trim_end_matches('}').split(',') {
                let n = n.rsplit(" as ").next().unwrap().rsplit("::").next().unwrap().trim();
                if !n.is_empty() && n != "*" {
                    exported.insert(n.to_string(), module.clone());
                }
            }
        }
    }
    let items = items.join("\n");
    let mut graph: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (line, name) in crate_paths(&items, anchor).into_iter().filter(|(_, name)| modules.contains(name)) {
        graph.entry(ROOT.into()).or_default().entry(name.clone()).or_insert_with(|| format!("{}:{line}: `{anchor}{name}`", rel(&lib)));
    }
    for m in &modules {
        if let Some(&at) = word_starts(&items, &format!("{m}::")).first() {
            graph.entry(ROOT.into()).or_default().entry(m.clone()).or_insert_with(|| format!("{}:{}: `{m}::`", rel(&lib), line_of(&items, at)));
        }
        let dir = src.join(m);
        let mut files = if dir.is_dir() { rust_files(&dir) } else { Vec::new() };
        files.extend([src.join(format!("{m}.rs"))].into_iter().filter(|f| f.exists()));
        for f in files {
            for (line, name) in crate_paths(&code(&f), anchor) {
                let to = if modules.contains(&name) { name.clone() } else { exported.get(&name).cloned().unwrap_or_else(|| ROOT.into()) };
                if &to != m {
                    graph.entry(m.clone()).or_default().entry(to).or_insert_with(|| format!("{}:{line}: `{anchor}{name}`", rel(&f)));
                }
            }
        }
    }
    graph
}

/// The words of gRPC: the daemon's generated types and the crates of the transport.
const GRPC: [&str; 4] = ["crate::proto", "proto::", "tonic", "prost"];

#[test]
fn the_driver_and_the_job_layer_know_no_grpc() {
    let mut files = rust_files(&root().join("daemon/src/server/driver"));
    let jobs = root().join("core/src/jobs");
    if jobs.is_dir() {
        files.extend(rust_files(&jobs));
    }
    files.extend([root().join("core/src/jobs.rs")].into_iter().filter(|p| p.exists()));
    assert!(files.iter().any(|p| p.ends_with("driver/mod.rs")), "driver files found: {files:?}");
    let mut found = Vec::new();
    for f in &files {
        let code = code(f);
        let mut lines: BTreeMap<usize, &str> = BTreeMap::new();
        for word in GRPC {
            for at in word_starts(&code, word) {
                lines.entry(line_of(&code, at)).or_insert(word);
            }
        }
        found.extend(lines.into_iter().map(|(line, word)| format!("  {}:{line}: `{word}`", rel(f))));
    }
    assert!(
        found.is_empty(),
        "the driver and the job layer speak gRPC; they answer their own types, which `daemon/src/server/service.rs` maps to the API's:\n{}",
        found.join("\n")
    );
}

/// Modules of the daemon above its server side: the client side, the command line and its
/// tools, and the crate root (whose `CliError` wraps the client's errors).
const CLIENT_AND_TOOLS: [&str; 4] = ["client", "cli", "tools", ROOT];

#[test]
fn the_server_side_reaches_no_client_module() {
    let graph = module_graph(&root().join("daemon/src"));
    let above = |m: &str| CLIENT_AND_TOOLS.contains(&m);
    let server: Vec<&str> = graph.keys().map(String::as_str).filter(|m| !above(m)).collect();
    assert!(["server", "circuits", "names"].iter().all(|m| server.contains(m)), "server and shared modules found: {server:?}");
    // Every module each server module reaches, directly or through others.
    let reach = |start: &str| {
        let (mut seen, mut todo) = (BTreeSet::new(), vec![start]);
        while let Some(m) = todo.pop() {
            for to in graph.get(m).into_iter().flat_map(|to| to.keys()) {
                if seen.insert(to.as_str()) {
                    todo.push(to);
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&str, BTreeSet<&str>> = server.iter().map(|&m| (m, reach(m))).collect();
    // Each import that crosses from the server side upwards, with the server modules behind it.
    let mut found = Vec::new();
    for (&from, tos) in server.iter().map(|m| (m, &graph[*m])) {
        for (to, at) in tos.iter().filter(|(to, _)| above(to)) {
            let behind: Vec<&str> = server.iter().copied().filter(|&m| m != from && reached[m].contains(from)).collect();
            let behind = if behind.is_empty() { String::new() } else { format!("; imported through it by {}", behind.join(", ")) };
            found.push(format!("  {from} → {to} ({at}){behind}"));
        }
    }
    assert!(
        found.is_empty(),
        "the daemon's server side imports the client side, the command line or the crate root's `CliError` (move what they share to a neutral module):\n{}",
        found.join("\n")
    );
}

/// The backend crates (`backend-*`): folder and package name.
fn backends() -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(root()).unwrap() {
        let dir = e.unwrap().path();
        if dir.file_name().unwrap().to_string_lossy().starts_with("backend-") && dir.join("Cargo.toml").exists() {
            let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
            let name = manifest.lines().find_map(|l| l.strip_prefix("name = ")).expect("package name").trim_matches('"').to_string();
            out.push((dir, name));
        }
    }
    out.sort();
    out
}

/// Every dependency a manifest names, with its section (`[dev-dependencies]`, ...): the
/// entries of the dependency tables and the tables of one dependency
/// (`[dependencies.name]`), by package name (`package = "..."` where renamed).
fn manifest_deps(manifest: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut section = String::new();
    for l in manifest.lines().map(str::trim) {
        if l.starts_with('[') {
            section = l.to_string();
            let table = l.trim_matches(|c| c == '[' || c == ']');
            if let Some((kind, name)) = table.rsplit_once('.').filter(|(k, _)| k.ends_with("dependencies")) {
                out.push((format!("[{kind}]"), name.trim_matches('"').to_string()));
            }
            continue;
        }
        if !section.trim_end_matches(']').ends_with("dependencies") || l.starts_with('#') || l.is_empty() {
            continue;
        }
        let key = l.split(['=', '.']).next().unwrap().trim().trim_matches('"');
        let package = l.split_once("package = \"").and_then(|(_, r)| r.split('"').next());
        out.push((section.clone(), package.unwrap_or(key).to_string()));
    }
    out
}

#[test]
fn backends_depend_on_no_other_backend_and_not_on_the_worker() {
    let backends = backends();
    assert!(backends.len() >= 3, "backends found: {backends:?}");
    let names: Vec<&str> = backends.iter().map(|(_, n)| n.as_str()).collect();
    let mut found = Vec::new();
    for (dir, name) in &backends {
        let forbidden: Vec<&str> = ["cuzk-worker", "cuzk-daemon", "cuzk-tests"].into_iter().chain(names.iter().copied().filter(|n| n != name)).collect();
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        let listed = manifest_deps(&manifest);
        assert!(listed.iter().any(|(_, d)| d == "cuzk-core"), "{name}: the manifest is read wrong: {listed:?}");
        for (section, dep) in &listed {
            if forbidden.contains(&dep.as_str()) {
                found.push(format!("  {}/Cargo.toml {section}: {dep}", rel(dir)));
            }
        }
        // Through other crates too (the dev-dependencies of the backend itself included).
        for dep in deps(name, "normal,build,dev") {
            if forbidden.contains(&dep.as_str()) && !listed.iter().any(|(_, d)| *d == dep) {
                found.push(format!("  {name} depends on {dep} through another crate (`cargo tree -p {name} -e normal,build,dev -i {dep}`)"));
            }
        }
        for f in rust_files(dir) {
            let code = code(&f);
            let mut uses: Vec<(usize, String)> = forbidden
                .iter()
                .map(|krate| krate.replace('-', "_"))
                .filter_map(|id| {
                    word_starts(&code, &id).into_iter().find(|&at| !code[at + id.len()..].starts_with(is_ident)).map(|at| (line_of(&code, at), id))
                })
                .collect();
            uses.sort();
            found.extend(uses.into_iter().map(|(line, id)| format!("  {}:{line}: `{id}`", rel(&f))));
        }
    }
    assert!(
        found.is_empty(),
        "a backend crate depends on another backend or on the worker (or above); what compares backends or drives the worker belongs in cuzk-tests:\n{}",
        found.join("\n")
    );
}

/// Crates whose top-level modules import one another one way only.
const NO_CIRCLES: [&str; 10] =
    ["core", "circuits-filecoin", "worker", "circuits", "gadget-witness", "backend-cpu", "backend-cuda", "setup", "faults", "daemon"];

/// The import circles of `graph` ([`ROOT`] left out): one per edge back to a module still
/// being walked, as the modules around it with the place of each import
/// (`a → b (where a imports b) → a (where b imports a)`).
fn circles(graph: &BTreeMap<String, BTreeMap<String, String>>) -> Vec<String> {
    fn walk<'a>(
        m: &'a str,
        graph: &'a BTreeMap<String, BTreeMap<String, String>>,
        stack: &mut Vec<(&'a str, &'a str)>,
        done: &mut BTreeSet<&'a str>,
        out: &mut Vec<String>,
    ) {
        for (to, at) in graph.get(m).into_iter().flatten().filter(|(to, _)| to.as_str() != ROOT) {
            if let Some(i) = stack.iter().position(|(s, _)| s == to) {
                let steps = stack[i + 1..].iter().copied().chain([(to.as_str(), at.as_str())]);
                out.push(format!("{to} {}", steps.map(|(s, at)| format!("→ {s} ({at})")).collect::<Vec<_>>().join(" ")));
            } else if !done.contains(to.as_str()) {
                stack.push((to, at));
                walk(to, graph, stack, done, out);
                stack.pop();
            }
        }
        done.insert(m);
    }
    let (mut done, mut out) = (BTreeSet::new(), Vec::new());
    for m in graph.keys().filter(|m| m.as_str() != ROOT) {
        if !done.contains(m.as_str()) {
            walk(m, graph, &mut vec![(m.as_str(), "")], &mut done, &mut out);
        }
    }
    out
}

#[test]
fn modules_import_one_way() {
    let core = module_graph(&root().join("core/src"));
    assert!(core.get("matrices").is_some_and(|to| to.contains_key("synth")), "the imports are read wrong: {core:?}");
    let mut found = Vec::new();
    for krate in NO_CIRCLES {
        for circle in circles(&module_graph(&root().join(krate).join("src"))) {
            found.push(format!("  {krate}: {circle}"));
        }
    }
    let server = module_graph_at(&root().join("daemon/src/server"), "mod.rs", "crate::server::");
    assert!(server.get("service").is_some_and(|to| to.contains_key("driver")), "the server's imports are read wrong: {server:?}");
    for circle in circles(&server) {
        found.push(format!("  daemon/src/server: {circle}"));
    }
    assert!(found.is_empty(), "import circles between modules (move what both use to the lower module):\n{}", found.join("\n"));
}
