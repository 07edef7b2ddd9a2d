//! What an operator installs from `contrib/`: the systemd unit passes `systemd-analyze verify`,
//! the Prometheus alert rules pass `promtool check rules` (and fire on the series they are
//! meant for), the Grafana dashboard is importable JSON, and every metric the dashboard and
//! the rules name is in a live daemon's `/metrics`. The checks that need `systemd-analyze`
//! (Debian package systemd) or `promtool` (Debian package prometheus) print SKIPPED without
//! them; `.ci/run` installs both.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use cuzk_daemon::client::http_get;
use cuzk_daemon::proto::{self, Priority as P};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("reading {rel}: {e}"))
}

const UNIT: &str = "contrib/systemd/cuzk.service";
const RULES: &str = "contrib/prometheus/cuzk-alerts.yml";
const DASHBOARD: &str = "contrib/grafana/cuzk.json";

/// `name` on the PATH.
fn tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file())
}

// ---------------------------------------------------------------------------------------------
// PromQL: the metric names an expression reads.

/// Words of PromQL that are not metric names: aggregations, binary operators, modifiers and
/// literals (keywords are case-insensitive), and names that only appear as functions or labels
/// (a function is also recognised by the `(` after it).
const PROMQL_WORDS: &str = "sum min max avg group stddev stdvar count count_values bottomk topk quantile limitk limit_ratio
    and or unless atan2 by without on ignoring group_left group_right bool offset inf nan
    rate irate increase delta idelta histogram_quantile absent absent_over_time time clamp_min clamp_max le start end";

/// Modifiers followed by a parenthesised list of label names.
const LABEL_LISTS: &[&str] = &["by", "without", "on", "ignoring", "group_left", "group_right"];

/// The index just past the string literal opened at `i` (`"`, `'` or a backtick).
fn skip_string(b: &[u8], i: usize) -> usize {
    let q = b[i];
    let mut j = i + 1;
    while j < b.len() && b[j] != q {
        j += if b[j] == b'\\' && q != b'`' { 2 } else { 1 };
    }
    j + 1
}

/// The index just past the bracket closing the one opened at `i`, strings inside skipped.
fn skip_group(b: &[u8], i: usize) -> usize {
    let (open, close) = (
        b[i],
        match b[i] {
            b'{' => b'}',
            b'[' => b']',
            _ => b')',
        },
    );
    let (mut depth, mut j) = (0, i);
    while j < b.len() {
        match b[j] {
            b'"' | b'\'' | b'`' => {
                j = skip_string(b, j);
                continue;
            }
            c if c == open => depth += 1,
            c if c == close => {
                depth -= 1;
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
        j += 1;
    }
    j
}

fn ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c == b':'
}

fn ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b':'
}

/// The metric names a PromQL expression reads: identifiers outside label matchers (`{…}`),
/// ranges (`[…]`), strings and label lists (`by (…)`, `on (…)`, …) that are neither keywords
/// nor functions (followed by `(`). Grafana variables (`$instance`, `${x}`) are skipped.
pub fn metric_names(expr: &str) -> BTreeSet<String> {
    let b = expr.as_bytes();
    let mut names = BTreeSet::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'"' || c == b'\'' || c == b'`' {
            i = skip_string(b, i);
        } else if c == b'{' || c == b'[' {
            i = skip_group(b, i);
        } else if c == b'$' {
            i += 1;
            if i < b.len() && b[i] == b'{' {
                i = skip_group(b, i);
            } else {
                while i < b.len() && ident_char(b[i]) {
                    i += 1;
                }
            }
        } else if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            // Numbers and durations: 0.99, 1e3, 0x1f, 5m, 1h30m.
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.') {
                i += 1;
            }
        } else if ident_start(c) {
            let start = i;
            while i < b.len() && ident_char(b[i]) {
                i += 1;
            }
            let word = &expr[start..i];
            let mut next = i;
            while next < b.len() && b[next].is_ascii_whitespace() {
                next += 1;
            }
            let lower = word.to_ascii_lowercase();
            if LABEL_LISTS.contains(&lower.as_str()) && b.get(next) == Some(&b'(') {
                i = skip_group(b, next);
            } else if b.get(next) == Some(&b'(') || PROMQL_WORDS.split_whitespace().any(|w| w == lower) {
                // A function, an aggregation or a keyword.
            } else {
                names.insert(word.to_string());
            }
        } else {
            i += 1;
        }
    }
    names
}

#[test]
fn promql_parser_finds_metrics_only() {
    let e = r#"sum by (proof_kind, le) (rate(x_bucket{a="b(c}", le=~"1|2"}[5m] offset 1h))
        / on (instance) group_left (foo) max without (bar) (y) > bool 3 and z{q='}'} or absent(w{job="j"})
        unless time() - histogram_quantile(0.99, v[$__rate_interval]) * 1e3 + u[1h:5m] AND BY_NAME"#;
    let want: BTreeSet<String> = ["x_bucket", "y", "z", "w", "v", "u", "BY_NAME"].into_iter().map(String::from).collect();
    assert_eq!(metric_names(e), want);
    assert_eq!(metric_names(r#"cuzk_listener_up{instance=~"$instance"} == 0"#), BTreeSet::from(["cuzk_listener_up".to_string()]));
    assert_eq!(metric_names("sum(rate(a:b:c[${__range}]))"), BTreeSet::from(["a:b:c".to_string()]));
}

// ---------------------------------------------------------------------------------------------
// The alert rules, read line by line: the file is written in one style (keys one per line,
// multi-line values as block scalars), which `promtool` checks as YAML.

/// One alerting rule and the keys the tests look at.
#[derive(Debug, Default)]
struct Alert {
    name: String,
    fields: BTreeMap<String, String>,
}

fn indent(l: &str) -> usize {
    l.len() - l.trim_start().len()
}

/// The scalar at `lines[i]` after `key:`: plain or quoted on the line, or a block scalar (`|`,
/// `>` and their `-` forms) on the lines indented deeper below it. Returns it and the next line.
fn scalar(lines: &[&str], i: usize, rest: &str) -> (String, usize) {
    let rest = rest.trim();
    if matches!(rest, "|" | "|-" | ">" | ">-") {
        let base = indent(lines[i]);
        let mut j = i + 1;
        let mut body = Vec::new();
        while j < lines.len() && (lines[j].trim().is_empty() || indent(lines[j]) > base) {
            body.push(lines[j].trim());
            j += 1;
        }
        let sep = if rest.starts_with('|') { "\n" } else { " " };
        return (body.join(sep).trim().to_string(), j);
    }
    let v = if rest.len() >= 2 && (rest.starts_with('"') && rest.ends_with('"') || rest.starts_with('\'') && rest.ends_with('\'')) {
        rest[1..rest.len() - 1].to_string()
    } else {
        rest.to_string()
    };
    (v, i + 1)
}

fn alerts(text: &str) -> Vec<Alert> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<Alert> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let t = lines[i].trim_start();
        if t.starts_with('#') || t.is_empty() {
            i += 1;
            continue;
        }
        if let Some(name) = t.strip_prefix("- alert:") {
            out.push(Alert { name: name.trim().to_string(), ..Default::default() });
            i += 1;
            continue;
        }
        assert!(!t.starts_with("- record:"), "{RULES}: recording rules are not expected here");
        match (out.last_mut(), t.split_once(':')) {
            (Some(a), Some((key, rest))) if !key.contains(' ') => {
                let (v, next) = scalar(&lines, i, rest);
                a.fields.insert(key.trim_start_matches("- ").to_string(), v);
                i = next;
            }
            _ => i += 1,
        }
    }
    out
}

#[test]
fn alert_rules_say_what_and_what_to_do() {
    let all = alerts(&read(RULES));
    let names: Vec<&str> = all.iter().map(|a| a.name.as_str()).collect();
    for want in [
        "CuzkDown",
        "CuzkListenerDown",
        "CuzkDeviceOutOfService",
        "CuzkSelfCheckFailures",
        "CuzkJobsFailing",
        "CuzkWinningPoStSlow",
        "CuzkWinningPoStNearDeadline",
        "CuzkQueueBackingUp",
        "CuzkHostMemoryBudgetFull",
        "CuzkJournalWriteErrors",
    ] {
        assert!(names.contains(&want), "{RULES} has no alert {want}: {names:?}");
    }
    assert_eq!(names.iter().collect::<BTreeSet<_>>().len(), names.len(), "alert names repeat: {names:?}");
    for a in &all {
        let f = |k: &str| a.fields.get(k).map(String::as_str).unwrap_or_default();
        assert!(!f("expr").is_empty(), "{}: no expr", a.name);
        assert!(matches!(f("severity"), "critical" | "warning"), "{}: severity {:?}", a.name, f("severity"));
        assert!(f("summary").len() > 10, "{}: no summary", a.name);
        assert!(f("description").len() > 60, "{}: the description should say what it means and what to do", a.name);
        let anchor = format!("docs/operating.md#alert-{}", a.name.to_ascii_lowercase());
        assert_eq!(f("runbook_url"), anchor, "{}: runbook", a.name);
    }
}

// ---------------------------------------------------------------------------------------------
// The dashboard.

/// Every panel, rows' nested panels included.
fn panels(v: &serde_json::Value) -> Vec<&serde_json::Value> {
    let mut out = Vec::new();
    for p in v["panels"].as_array().map(Vec::as_slice).unwrap_or_default() {
        out.push(p);
        out.extend(panels(p));
    }
    out
}

/// The PromQL of the dashboard's targets.
fn dashboard_exprs(d: &serde_json::Value) -> Vec<String> {
    panels(d).into_iter().flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default()).filter_map(|t| t["expr"].as_str().map(String::from)).collect()
}

/// The metric of each `label_values(metric, label)` variable.
fn variable_metrics(d: &serde_json::Value) -> Vec<String> {
    let vars = d["templating"]["list"].as_array().cloned().unwrap_or_default();
    vars.iter()
        .filter_map(|v| v["definition"].as_str())
        .filter_map(|q| q.trim().strip_prefix("label_values(")?.split(',').next().map(|m| m.trim().to_string()))
        .collect()
}

fn dashboard() -> serde_json::Value {
    serde_json::from_str(&read(DASHBOARD)).expect("the dashboard is JSON")
}

#[test]
fn dashboard_is_importable() {
    let d = dashboard();
    assert!(d["schemaVersion"].as_u64().is_some_and(|v| v >= 36), "schemaVersion {}", d["schemaVersion"]);
    assert!(d["uid"].as_str().is_some_and(|u| !u.is_empty() && u.len() <= 40), "uid {}", d["uid"]);
    assert!(d["title"].as_str().is_some_and(|t| !t.is_empty()));
    let inputs = d["__inputs"].as_array().expect("__inputs");
    assert!(
        inputs.iter().any(|i| i["name"] == "DS_PROMETHEUS" && i["type"] == "datasource" && i["pluginId"] == "prometheus"),
        "a DS_PROMETHEUS datasource input: {inputs:?}"
    );
    let all = panels(&d);
    let mut ids = BTreeSet::new();
    let mut graphs = 0;
    for p in &all {
        let title = p["title"].as_str().unwrap_or_default();
        assert!(ids.insert(p["id"].as_u64().unwrap_or_else(|| panic!("panel {title}: no id"))), "panel id {} repeats", p["id"]);
        let g = &p["gridPos"];
        assert!(["h", "w", "x", "y"].iter().all(|k| g[k].is_u64()), "panel {title}: gridPos {g}");
        assert!(g["x"].as_u64().unwrap() + g["w"].as_u64().unwrap() <= 24, "panel {title} is wider than the grid");
        if p["type"] == "row" {
            continue;
        }
        graphs += 1;
        assert!(!title.is_empty(), "a panel without a title: {p}");
        assert_eq!(p["datasource"]["uid"], "${DS_PROMETHEUS}", "panel {title}: datasource");
        let targets = p["targets"].as_array().filter(|t| !t.is_empty()).unwrap_or_else(|| panic!("panel {title}: no targets"));
        for t in targets {
            assert_eq!(t["datasource"]["uid"], "${DS_PROMETHEUS}", "panel {title}: a target's datasource");
            let e = t["expr"].as_str().unwrap_or_else(|| panic!("panel {title}: a target without expr"));
            assert!(e.contains(r#"instance=~"$instance""#), "panel {title}: {e} ignores the instance variable");
        }
    }
    assert!(graphs >= 20, "{graphs} panels");
    assert_eq!(variable_metrics(&d).len(), 1, "the instance variable");
}

// ---------------------------------------------------------------------------------------------
// Against a live daemon.

/// What `/metrics` defines: each family's TYPE, and the names its samples carry.
struct Exposition {
    types: BTreeMap<String, String>,
    samples: BTreeSet<String>,
}

impl Exposition {
    fn parse(text: &str) -> Exposition {
        let mut types = BTreeMap::new();
        let mut samples = BTreeSet::new();
        for l in text.lines() {
            if let Some(rest) = l.strip_prefix("# TYPE ") {
                let mut w = rest.split_whitespace();
                if let (Some(n), Some(t)) = (w.next(), w.next()) {
                    types.insert(n.to_string(), t.to_string());
                }
            } else if !l.starts_with('#') && !l.trim().is_empty() {
                let end = l.find(['{', ' ']).unwrap_or(l.len());
                samples.insert(l[..end].to_string());
            }
        }
        Exposition { types, samples }
    }

    /// Whether `name` is a series of the exposition: a sample's name, a counter or gauge it
    /// declares (one with no samples yet: faults of a device that had none), or a histogram's
    /// `_bucket`, `_sum`, `_count` (a summary's `_sum`, `_count`).
    fn has(&self, name: &str) -> bool {
        if self.samples.contains(name) || self.types.get(name).is_some_and(|t| matches!(t.as_str(), "counter" | "gauge" | "untyped")) {
            return true;
        }
        ["_bucket", "_sum", "_count"].iter().any(|suffix| {
            name.strip_suffix(suffix).and_then(|base| self.types.get(base)).is_some_and(|t| t == "histogram" || (t == "summary" && *suffix != "_bucket"))
        })
    }
}

/// Series Prometheus makes itself for every target.
const SCRAPE_SERIES: &[&str] = &["up", "scrape_duration_seconds", "scrape_samples_scraped", "scrape_series_added"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_and_alerts_name_live_metrics() {
    let d = daemon_with(&[4], |_| {}).await;
    let mut c = d.client().await;
    for (i, p) in [P::Normal, P::Critical].into_iter().enumerate() {
        let r = c.prove(proto::ProveRequest { submit: Some(job(4, i as u64, 1, p)), timeout_ms: 60_000 }).await.unwrap().into_inner();
        check_completed(&r.result.unwrap(), 4, i as u64, 1);
    }
    let (code, body) = http_get(d.http(), "/metrics", None).await.unwrap();
    assert_eq!(code, 200);
    stop(d).await;
    let live = Exposition::parse(&body);

    // The per-kind latency histogram holds the two jobs, under the generic kind.
    let sample = |series: &str| -> f64 {
        let line = body.lines().find(|l| l.starts_with(series)).unwrap_or_else(|| panic!("no {series} in\n{body}"));
        line[series.len()..].trim().parse().expect("a number")
    };
    assert_eq!(sample(r#"cuzk_proof_latency_seconds_count{proof_kind="generic"}"#), 2.0);
    assert_eq!(sample(r#"cuzk_proof_latency_seconds_bucket{proof_kind="generic",le="+Inf"}"#), 2.0);
    assert_eq!(sample(r#"cuzk_proof_latency_seconds_count{proof_kind="winning_post"}"#), 0.0);
    assert_eq!(sample(r#"cuzk_proof_latency_seconds_bucket{proof_kind="winning_post",le="20"}"#), 0.0);
    assert_eq!(sample("cuzk_queue_limit"), 64.0);

    let dash = dashboard();
    let mut named: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for e in dashboard_exprs(&dash) {
        for n in metric_names(&e) {
            named.entry(n).or_default().insert(DASHBOARD.into());
        }
    }
    for n in variable_metrics(&dash) {
        named.entry(n).or_default().insert(format!("{DASHBOARD} (variable)"));
    }
    let dashboard_names = named.len();
    let rules = alerts(&read(RULES));
    for a in &rules {
        for n in metric_names(&a.fields["expr"]) {
            named.entry(n).or_default().insert(format!("{RULES} ({})", a.name));
        }
    }
    println!("{} metric names in the dashboard ({dashboard_names}) and the alert rules: {:?}", named.len(), named.keys().collect::<Vec<_>>());
    assert!(dashboard_names >= 25, "only {dashboard_names} metric names found in the dashboard: is the parser broken? {:?}", named.keys());
    assert!(named.len() >= 30, "only {} names found", named.len());
    let missing: Vec<String> = named
        .iter()
        .filter(|(n, _)| !SCRAPE_SERIES.contains(&n.as_str()) && !live.has(n))
        .map(|(n, at)| format!("{n} (in {})", at.iter().cloned().collect::<Vec<_>>().join(", ")))
        .collect();
    assert!(missing.is_empty(), "metrics named in contrib/ that /metrics does not export:\n  {}", missing.join("\n  "));
    // And the check itself rejects what it should.
    assert!(!live.has("cuzk_proof_duration_seconds_bucket"), "a summary has no buckets");
    assert!(!live.has("cuzk_no_such_metric"));
}

// ---------------------------------------------------------------------------------------------
// promtool.

/// The dashboard's expressions with Grafana's variables given values, for promtool.
fn grafana_to_promql(e: &str) -> String {
    let e = e.replace("$__rate_interval", "5m").replace("$__range", "1h").replace("$__interval", "1m").replace("$instance", ".*");
    assert!(!e.contains('$'), "an unknown Grafana variable in {e}");
    e
}

fn block(text: &str, pad: &str) -> String {
    text.lines().map(|l| format!("{pad}{l}\n")).collect()
}

/// Unit tests of the alerts' expressions on made-up series (`promtool test rules`).
fn rule_tests(rules: &[Alert]) -> String {
    let expr = |name: &str| -> String {
        let a = rules.iter().find(|a| a.name == name).unwrap_or_else(|| panic!("no alert {name}"));
        block(&a.fields["expr"], "          ")
    };
    let w = r#"instance="a",job="cuzk",proof_kind="winning_post""#;
    format!(
        r#"evaluation_interval: 1m
tests:
  # A WinningPoSt of 2 s at 2m, one of 12 s at 4m (the exposition writes le="10").
  - interval: 1m
    input_series:
      - series: 'cuzk_proof_latency_seconds_count{{{w}}}'
        values: '0 0 1 1 2 2'
      - series: 'cuzk_proof_latency_seconds_bucket{{{w},le="10"}}'
        values: '0 0 1 1 1 1'
      - series: 'cuzk_proof_latency_seconds_bucket{{{w},le="20"}}'
        values: '0 0 1 1 2 2'
      - series: 'cuzk_queue_jobs{{instance="a",job="cuzk",priority="normal",state="pending"}}'
        values: '60x20'
      - series: 'cuzk_queue_jobs{{instance="a",job="cuzk",priority="critical",state="pending"}}'
        values: '10x20'
      - series: 'cuzk_queue_limit{{instance="a",job="cuzk"}}'
        values: '64x20'
      - series: 'cuzk_proofs_failed{{instance="a",job="cuzk",proof_kind="porep_c2"}}'
        values: '0+1x20'
      - series: 'cuzk_proofs_completed{{instance="a",job="cuzk",proof_kind="porep_c2"}}'
        values: '0+2x20'
      - series: 'cuzk_proofs_failed{{instance="a",job="cuzk",proof_kind="window_post"}}'
        values: '0x20'
      - series: 'cuzk_proofs_completed{{instance="a",job="cuzk",proof_kind="window_post"}}'
        values: '0+5x20'
      - series: 'up{{instance="a",job="cuzk"}}'
        values: '1x20'
    promql_expr_test:
      - expr: |
{slow}        eval_time: 3m
        exp_samples: []
      - expr: |
{slow}        eval_time: 5m
        exp_samples:
          - labels: '{{instance="a"}}'
            value: 1
      - expr: |
{near}        eval_time: 5m
        exp_samples: []
      - expr: |
{queue}        eval_time: 10m
        exp_samples:
          - labels: '{{instance="a",priority="normal"}}'
            value: 0.9375
      - expr: |
{failing}        eval_time: 20m
        exp_samples:
          - labels: '{{instance="a",proof_kind="porep_c2"}}'
            value: 0.3333333333333333
      - expr: |
{down}        eval_time: 5m
        exp_samples: []
  # No cuzk target at all.
  - interval: 1m
    input_series:
      - series: 'up{{instance="b",job="other"}}'
        values: '1x5'
    promql_expr_test:
      - expr: |
{down}        eval_time: 5m
        exp_samples:
          - labels: '{{job="cuzk"}}'
            value: 1
"#,
        slow = expr("CuzkWinningPoStSlow"),
        near = expr("CuzkWinningPoStNearDeadline"),
        queue = expr("CuzkQueueBackingUp"),
        failing = expr("CuzkJobsFailing"),
        down = expr("CuzkDown"),
    )
}

fn run(cmd: &mut Command) -> (bool, String) {
    let out = cmd.output().unwrap_or_else(|e| panic!("running {cmd:?}: {e}"));
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    println!("$ {cmd:?}\n{text}");
    (out.status.success(), text)
}

#[test]
fn promtool_checks_the_rules_and_the_dashboard_queries() {
    let Some(promtool) = tool("promtool") else {
        println!("SKIPPED: promtool not installed (Debian package prometheus)");
        return;
    };
    let (ok, out) = run(Command::new(&promtool).arg("check").arg("rules").arg(repo().join(RULES)));
    assert!(ok && out.contains("SUCCESS"), "promtool check rules {RULES}:\n{out}");

    // The dashboard's queries as recording rules: promtool parses each.
    let tmp = tempfile::tempdir().unwrap();
    let mut y = String::from("groups:\n  - name: dashboard\n    rules:\n");
    for (i, e) in dashboard_exprs(&dashboard()).iter().enumerate() {
        y += &format!("      - record: cuzk_dashboard_query_{i}\n        expr: |\n{}", block(&grafana_to_promql(e), "          "));
    }
    let queries = tmp.path().join("dashboard-queries.yml");
    std::fs::write(&queries, y).unwrap();
    let (ok, out) = run(Command::new(&promtool).arg("check").arg("rules").arg(&queries));
    assert!(ok, "the dashboard's queries do not parse:\n{out}");

    // The alerts' expressions on made-up series.
    let tests = tmp.path().join("cuzk-alerts.test.yml");
    std::fs::write(&tests, rule_tests(&alerts(&read(RULES)))).unwrap();
    let (ok, out) = run(Command::new(&promtool).arg("test").arg("rules").arg(&tests));
    assert!(ok && out.contains("SUCCESS"), "promtool test rules:\n{out}");
}

// ---------------------------------------------------------------------------------------------
// The systemd unit.

/// `Key=value` settings of the unit (the last of a key wins, as in systemd, except for the
/// keys that accumulate, which the tests do not read).
fn unit_settings(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#') && !l.starts_with('['))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

#[test]
fn service_unit_settings() {
    let text = read(UNIT);
    let s = unit_settings(&text);
    let get = |k: &str| s.get(k).map(String::as_str).unwrap_or_else(|| panic!("{UNIT}: no {k}="));
    assert_eq!(get("User"), "cuzk");
    assert_eq!(get("Group"), "cuzk");
    assert_eq!(get("ExecStart"), "/usr/local/bin/cuzk serve --config /etc/cuzk/cuzk.toml");
    assert_eq!(get("LimitMEMLOCK"), "infinity");
    assert!(get("LimitNOFILE").parse::<u64>().is_ok_and(|n| n >= 65536), "LimitNOFILE");
    assert_eq!(get("Restart"), "on-failure");
    assert_eq!(get("KillSignal"), "SIGTERM");
    // SIGTERM drains for [shutdown] timeout_s, then results linger linger_ms: systemd must not
    // SIGKILL before that.
    let sd = cuzk_daemon::config::Config::default().shutdown;
    let stop: u64 = get("TimeoutStopSec").parse().expect("TimeoutStopSec in seconds");
    assert!(stop >= sd.timeout_s + sd.linger_ms.div_ceil(1000) + 30, "TimeoutStopSec={stop} is short of the drain timeout {} s", sd.timeout_s);
    // The data directory must not be writable by others (the daemon refuses it).
    assert!(get("StateDirectoryMode").ends_with('0') || get("StateDirectoryMode").ends_with('5'), "StateDirectoryMode");
    // Nothing that hides /dev/nvidia*.
    for k in ["PrivateDevices", "DevicePolicy", "DeviceAllow", "ProtectClock", "PrivateTmp", "MemoryDenyWriteExecute", "DynamicUser"] {
        assert!(!s.contains_key(k), "{UNIT} sets {k}=, which would take the GPU (or the parameter cache) away");
    }
}

#[test]
fn systemd_analyze_verifies_the_unit() {
    let Some(analyze) = tool("systemd-analyze") else {
        println!("SKIPPED: systemd-analyze not installed (Debian package systemd)");
        return;
    };
    // verify wants every command the unit runs to exist (those prefixed "-" excepted) and
    // parses every setting; the user need not exist. So: the unit as shipped, its ExecStart
    // pointed at the binary under test.
    let text = read(UNIT);
    let exec = "ExecStart=/usr/local/bin/cuzk ";
    assert!(text.contains(exec), "{UNIT}: {exec}");
    let tmp = tempfile::tempdir().unwrap();
    let unit = tmp.path().join("cuzk.service");
    std::fs::write(&unit, text.replace(exec, &format!("ExecStart={BIN} "))).unwrap();
    let (ok, out) = run(Command::new(&analyze).arg("verify").arg(&unit).env("SYSTEMD_LOG_COLOR", "0"));
    // verify exits 0 on settings it ignores ("Unknown key", "Failed to parse"): any line about
    // the unit is a failure.
    let about: Vec<&str> = out.lines().filter(|l| l.contains("cuzk.service")).collect();
    assert!(ok && about.is_empty(), "systemd-analyze verify {UNIT}:\n{out}");

    // And it does fail a broken unit, so the check above means something.
    let broken = tmp.path().join("broken").join("cuzk.service");
    std::fs::create_dir_all(broken.parent().unwrap()).unwrap();
    std::fs::write(&broken, text.replace(exec, &format!("ExecStart={BIN} ")).replace("LimitNOFILE=", "LimitNOFIL=")).unwrap();
    let (_, out) = run(Command::new(&analyze).arg("verify").arg(&broken));
    assert!(out.contains("LimitNOFIL"), "systemd-analyze verify let a misspelt key pass:\n{out}");
}
