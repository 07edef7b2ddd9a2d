//! The status page renders in headless Chromium: the timeline element is there and the numbers
//! agree with `/status`. Skips (printing SKIPPED) when no Chromium is installed. Without a
//! browser: the page as served already shows sizes in human units (the byte figure in the
//! cell's title) and each listener's state, and its script formats sizes as the server does
//! (run in Node; skipped without it).

use crate::common;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use cuzk_daemon::client::http_get;
use cuzk_daemon::config::DeviceSelection;
use cuzk_daemon::proto::{self, Priority as P};
use cuzk_daemon::server::http::STATUS_PAGE;
use cuzk_daemon::server::status::{human_bytes, Snapshot};

fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CUZK_CHROMIUM") {
        return Some(p.into());
    }
    let path = std::env::var_os("PATH")?;
    for name in ["chromium", "chromium-browser", "google-chrome", "chrome"] {
        for dir in std::env::split_paths(&path) {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Loads `url` in headless Chromium and returns the DOM after scripts ran (bounded to 60 s).
fn dump_dom(browser: &PathBuf, url: &str) -> String {
    let profile = tempfile::tempdir().expect("profile dir");
    let out = tempfile::NamedTempFile::new().expect("out file");
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--disable-dev-shm-usage",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(["--virtual-time-budget=5000", "--dump-dom", url])
        .stdout(out.reopen().expect("reopen"))
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    let end = Instant::now() + Duration::from_secs(60);
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish in 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::fs::read_to_string(out.path()).expect("dom")
}

fn attr_of(dom: &str, anchor: &str, attr: &str) -> Option<String> {
    let at = dom.find(anchor)?;
    let tag_start = dom[..at].rfind('<')?;
    let tag_end = at + dom[at..].find('>')?;
    let tag = &dom[tag_start..tag_end];
    let key = format!("{attr}=\"");
    let v = tag.split(&key).nth(1)?;
    Some(v.split('"').next()?.to_string())
}

fn text_of(dom: &str, id: &str) -> Option<String> {
    let anchor = format!("id=\"{id}\"");
    let at = dom.find(&anchor)?;
    let rest = &dom[at..];
    let open = rest.find('>')?;
    let close = rest[open..].find('<')?;
    Some(rest[open + 1..open + close].to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_page_renders_in_headless_chromium() {
    let Some(browser) = chromium() else {
        // Written to the real stderr, past the test harness's capture, so it is always seen.
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: status_page_renders_in_headless_chromium: no chromium found (apt-get install chromium, or set CUZK_CHROMIUM)"
        );
        return;
    };
    // Two CPU backends (engine.devices = [0, 1]): the timeline has one lane per device.
    let d = daemon_with(&[4], |c| {
        c.engine.gpu_workers = 2;
        c.engine.backend = "cpu".into();
        c.engine.devices = DeviceSelection::List(vec![0, 1]);
    })
    .await;
    let mut c = d.client().await;
    for i in 0..2 {
        let r = c.prove(proto::ProveRequest { submit: Some(job(4, i, 2, P::High)), timeout_ms: 60_000 }).await.unwrap().into_inner();
        check_completed(&r.result.unwrap(), 4, i, 2);
    }
    // A backlog, so that both devices get work.
    for i in 10..16 {
        c.submit_proof(job(4, i, 2, P::Normal)).await.expect("submit");
    }
    let h = d.server.handle();
    assert!(wait_until(Duration::from_secs(60), || async { h.snapshot().await.unwrap().jobs.live == 0 }).await, "backlog done");
    let http = d.http();
    let url = format!("http://{http}/");
    let dom = tokio::task::spawn_blocking(move || dump_dom(&browser, &url)).await.unwrap();
    let (code, json) = http_get(http, "/status", None).await.unwrap();
    assert_eq!(code, 200);
    let s: Snapshot = serde_json::from_str(&json).unwrap();

    assert!(dom.contains("data-ready=\"1\""), "the page script did not render:\n{dom}");
    assert!(dom.contains("id=\"timeline\""), "no timeline element");
    assert_eq!(attr_of(&dom, "id=\"timeline\"", "data-devices").as_deref(), Some("2"));
    let mut spans = 0;
    for dev in 0..2 {
        let n: usize = attr_of(&dom, &format!("data-track=\"device-{dev}\""), "data-spans").expect("device track").parse().unwrap();
        assert_eq!(n, s.devices[dev].spans.len(), "device {dev}");
        assert!(n >= 3, "device {dev} ran no partition (upload, ntt, msm): {n} spans");
        spans += n;
    }
    assert!(spans >= 8 * 2 * 3, "upload, ntt and msm of 16 partitions, got {spans}");
    assert!(dom.matches("<rect").count() >= spans, "every span is drawn");
    let host: usize = attr_of(&dom, "data-track=\"host\"", "data-spans").expect("host track").parse().unwrap();
    assert_eq!(host, s.host.spans.len());
    for (id, want) in [("jobs-submitted", s.jobs.submitted), ("jobs-completed", s.jobs.completed), ("jobs-live", s.jobs.live), ("jobs-failed", s.jobs.failed)] {
        assert_eq!(text_of(&dom, id).as_deref(), Some(want.to_string().as_str()), "{id}");
    }
    assert_eq!(s.jobs.completed, 8);
    // Memory budgets and parameter residency are shown with the same numbers, in human units
    // with the byte figure on hover.
    assert!(dom.contains(&sized(s.memory.devices[0].used)), "device memory use");
    assert!(dom.contains(&sized(s.memory.host.capacity)), "host capacity");
    assert!(dom.contains("<td>squaring-chain-2^4</td><td>hot</td>"), "parameter residency");
    assert!(dom.contains(&sized(s.params[0].bytes)), "parameter file size");
    assert!(dom.contains("<td data-state=\"serving\">serving</td>"), "listener state");
    for q in &s.queues {
        assert!(dom.contains(&format!("<td>{}</td><td>{}</td><td>{}</td>", q.priority, q.pending, q.running)), "queue {}", q.priority);
    }
    stop(d).await;
}

/// A size's table cell as the page shows it.
fn sized(bytes: u64) -> String {
    format!("<td title=\"{bytes} bytes\">{}</td>", human_bytes(bytes))
}

/// The page as served, before any script runs: the memory budgets and the parameter file in
/// human units with the byte figures in the cells' titles, and each listener with its state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_served_page_shows_sizes_in_human_units_and_listener_states() {
    let d = daemon_with(&[4], |_| {}).await;
    let mut c = d.client().await;
    let r = c.prove(proto::ProveRequest { submit: Some(job(4, 1, 1, P::Normal)), timeout_ms: 60_000 }).await.unwrap().into_inner();
    check_completed(&r.result.unwrap(), 4, 1, 1);
    let (code, page) = http_get(d.http(), "/", None).await.unwrap();
    assert_eq!(code, 200);
    let (_, json) = http_get(d.http(), "/status", None).await.unwrap();
    let s: Snapshot = serde_json::from_str(&json).unwrap();

    let capacity = s.memory.host.capacity;
    let human = human_bytes(capacity);
    // The test configuration's 512 MiB.
    assert_eq!(human, "512.0 MiB");
    assert!(page.contains(&format!("<td title=\"{capacity} bytes\">{human}</td>")), "host capacity {human} ({capacity} bytes) not on the page:\n{page}");
    let p = s.params.iter().find(|p| p.circuit == "squaring-chain-2^4").expect("the circuit's parameters");
    assert!(page.contains(&format!("<td>squaring-chain-2^4</td><td>{}</td>", serde_json::to_value(p.tier).unwrap().as_str().unwrap())), "{page}");
    assert!(page.contains(&sized(p.bytes)), "parameter file size {} not on the page", sized(p.bytes));
    assert!(!page.contains(&format!("<td>{}</td>", p.bytes)), "a raw byte figure as a cell's text");

    // The unix socket and the HTTP listener, each with its state.
    let names: Vec<&str> = s.listeners.iter().map(|l| l.name.as_str()).collect();
    assert!(names.contains(&"grpc-unix") && names.contains(&"http"), "{names:?}");
    for l in &s.listeners {
        let row = format!("<td>{}</td><td>{}</td><td data-state=\"serving\">serving</td>", l.name, l.address);
        let at = page.find(&row).unwrap_or_else(|| panic!("listener {} not shown serving ({row}):\n{page}", l.name));
        let rest = &page[at + row.len()..];
        let open_max = &rest[..rest.find("</td>").unwrap()];
        assert!(open_max.starts_with("<td>") && open_max.ends_with(&format!(" / {}", l.max_connections)), "open / max of {}: {open_max}", l.name);
    }
    for placeholder in ["<!--memory-->", "<!--params-->", "<!--listeners-->"] {
        assert!(!page.contains(placeholder), "{placeholder} left in the page");
    }
    stop(d).await;
}

/// The page's script (`human` in status.html) formats sizes exactly as `human_bytes`: run in
/// Node over sizes around every unit boundary, exact halves and random sizes. Skips (printing
/// SKIPPED) without Node.
#[test]
fn the_page_script_formats_sizes_as_the_server_does() {
    let Ok(node) = Command::new("node").arg("--version").output() else {
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), "SKIPPED: the_page_script_formats_sizes_as_the_server_does: no node found");
        return;
    };
    assert!(node.status.success());
    let start = STATUS_PAGE.find("const UNITS").expect("UNITS in the page's script");
    let end = STATUS_PAGE.find("// A cell of a size").expect("the end of human()");
    let script = &STATUS_PAGE[start..end];
    let mut sizes: Vec<u64> = vec![0, 1, 1023, 1024, 1025, 1280, 1536, 10_239, 50_680_000_000, 139 << 30];
    for k in 1..4u32 {
        let unit = 1u64 << (10 * k);
        sizes.extend([unit - 1, unit, unit + 1, unit * 1023 + unit / 2, unit * 1024 - unit / 20, unit * 1024 - unit / 20 - 1, unit + unit / 20]);
    }
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..2000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Below 2^49: the sizes a JSON number holds exactly, times ten.
        sizes.push(x >> (15 + x % 40));
    }
    let list = sizes.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
    let program = format!("{script}\nfor (const n of [{list}]) console.log(human(n));");
    let out = Command::new("node").arg("-e").arg(&program).output().expect("node runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<String> = String::from_utf8(out.stdout).unwrap().lines().map(str::to_string).collect();
    assert_eq!(lines.len(), sizes.len());
    for (n, js) in sizes.iter().zip(&lines) {
        assert_eq!(js, &human_bytes(*n), "{n} bytes");
    }
}
