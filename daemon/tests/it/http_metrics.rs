//! `/metrics` is valid Prometheus text and agrees with `/status`.

use crate::common;

use common::*;
use cuzk_daemon::client::http_get;
use cuzk_daemon::proto::{self, Priority as P};
use cuzk_daemon::server::status::Snapshot;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_parse_and_match_status() {
    let d = daemon_with(&[4], |_| {}).await;
    let mut c = d.client().await;
    for i in 0..3 {
        let r = c.prove(proto::ProveRequest { submit: Some(job(4, i, 1, P::Normal)), timeout_ms: 60_000 }).await.unwrap().into_inner();
        check_completed(&r.result.unwrap(), 4, i, 1);
    }
    let (code, body) = http_get(d.http(), "/metrics", None).await.unwrap();
    assert_eq!(code, 200);
    let lines = body.lines().map(|l| Ok(l.to_string()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("valid Prometheus text");
    let get = |name: &str, label: Option<(&str, &str)>| -> f64 {
        let s = scrape
            .samples
            .iter()
            .find(|s| s.metric == name && label.is_none_or(|(k, v)| s.labels.get(k) == Some(v)))
            .unwrap_or_else(|| panic!("no sample {name} {label:?}"));
        match s.value {
            prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Gauge(v) | prometheus_parse::Value::Untyped(v) => v,
            _ => panic!("{name} is not a scalar"),
        }
    };
    let (code, json) = http_get(d.http(), "/status", None).await.unwrap();
    assert_eq!(code, 200);
    let s: Snapshot = serde_json::from_str(&json).expect("status JSON");
    assert_eq!(get("cuzk_jobs_ended_total", Some(("outcome", "completed"))), s.jobs.completed as f64);
    assert_eq!(s.jobs.completed, 3);
    assert_eq!(get("cuzk_jobs_submitted_total", None), 3.0);
    assert_eq!(get("cuzk_memory_capacity_bytes", Some(("location", "host"))), s.memory.host.capacity as f64);
    // The circuit's largest query is set aside for device loads; none is in flight now.
    assert_eq!((s.memory.host.loads_set_aside, s.memory.host.in_loads), (largest_query(4), 0));
    assert_eq!(get("cuzk_memory_loads_set_aside_bytes", None), largest_query(4) as f64);
    assert_eq!(get("cuzk_memory_loads_bytes", None), 0.0);
    assert!(get("cuzk_device_busy_seconds_total", Some(("device", "0"))) > 0.0);
    assert!(scrape.samples.iter().any(|x| x.metric == "cuzk_job_latency_seconds_count"));
    // The gRPC GetMetrics text parses too.
    let t = c.get_metrics(proto::GetMetricsRequest {}).await.unwrap().into_inner().prometheus_text;
    prometheus_parse::Scrape::parse(t.lines().map(|l| Ok(l.to_string()))).expect("valid Prometheus text");
    // The trace is JSON with stage events.
    let (code, trace) = http_get(d.http(), "/trace", None).await.unwrap();
    assert_eq!(code, 200);
    let v: serde_json::Value = serde_json::from_str(&trace).expect("trace JSON");
    let events = v["traceEvents"].as_array().expect("events");
    assert!(events.iter().any(|e| e["name"] == "msm"));
    stop(d).await;
}
