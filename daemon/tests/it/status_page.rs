//! The status page renders in headless Chromium: the timeline element is there and the numbers
//! agree with `/status`. Skips (printing SKIPPED) when no Chromium is installed.

use crate::common;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use cuzk_daemon::client::http_get;
use cuzk_daemon::config::DeviceSelection;
use cuzk_daemon::proto::{self, Priority as P};
use cuzk_daemon::server::status::Snapshot;

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
    // Memory budgets and parameter residency are shown with the same numbers.
    assert!(dom.contains(&format!("<td>{}</td>", s.memory.devices[0].used)), "device memory use");
    assert!(dom.contains(&format!("<td>{}</td>", s.memory.host.capacity)), "host capacity");
    assert!(dom.contains("<td>squaring-chain-2^4</td><td>hot</td>"), "parameter residency");
    for q in &s.queues {
        assert!(dom.contains(&format!("<td>{}</td><td>{}</td><td>{}</td>", q.priority, q.pending, q.running)), "queue {}", q.priority);
    }
    stop(d).await;
}
