//! `cuzk load`: a load generator against a running daemon with mixed circuits and
//! priorities; prints throughput, p50/p99 latency per kind and the device busy fraction.
//! With `--duration` it keeps the load up for that long (a soak), samples the daemon's
//! memory through its metrics and, with `--verify-all`, counts every returned proof that does
//! not verify.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cuzk_core::params::{Validation, VerifyingKey};
use indicatif::{ProgressBar, ProgressStyle};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use cuzk_circuits_filecoin::FilRequest;

use crate::circuits::{CircuitShape, GenericShape};
use crate::client::commands::{Conn, PriorityArg};
use crate::client::{verify_result, Client, ClientError};
use crate::proto::{self, await_proof_response::Status as AwaitStatus};
use crate::server::driver::WITHHELD_NOTE;
use crate::setup::params_path;
use crate::CliError;

/// `cuzk load`.
#[derive(Debug, Clone, clap::Args)]
pub struct LoadArgs {
    /// Jobs to run in all.
    #[arg(long, default_value_t = 32)]
    pub jobs: usize,
    /// Jobs in flight at once.
    #[arg(long, default_value_t = 8)]
    pub concurrency: usize,
    /// Job kinds as `circuit:log_size:priority[*weight]` or, for a Filecoin request file from
    /// `cuzk gen-vanilla`, `@path.json[:priority][*weight]`; comma separated.
    #[arg(long, value_delimiter = ',', default_value = "squaring-chain:10:normal*3,squaring-chain:8:critical")]
    pub mix: Vec<String>,
    /// Partitions per job.
    #[arg(long, default_value_t = 1)]
    pub partitions: u32,
    /// Verify every proof with the parameter files in the data directory.
    #[arg(long)]
    pub verify: bool,
    /// Run for this long instead of `--jobs` jobs (`90s`, `30m`, `1h`).
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Verify every returned proof (as `--verify`) and fail if any does not verify; failed
    /// jobs (faults past their retries) are counted, not fatal.
    #[arg(long)]
    pub verify_all: bool,
    /// Seconds between samples of the daemon's memory (resident set, budgets).
    #[arg(long, default_value_t = 10)]
    pub sample_s: u64,
    /// Write every memory sample here (CSV: seconds since the start, RSS, host and device 0
    /// budget reserved, bytes).
    #[arg(long)]
    pub samples_out: Option<std::path::PathBuf>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Mix hostile clients into the load (`client::hostile`): junk bytes, messages too large
    /// for the request budget, messages of millions of fields, fields a kind does not read,
    /// silent and stalled connections. Every hostile call must be refused; one accepted fails
    /// the run.
    #[arg(long)]
    pub hostile: bool,
    /// A job whose call fails at the transport (the daemon stopped or restarting) is sent again
    /// with the same request id for up to this many seconds, as Curio's client does; 0: never.
    #[arg(long, default_value_t = 0)]
    pub retry_s: u64,
    /// A failed job whose error message contains this text is timed as if it completed (and
    /// counted apart): for timing another daemon on timing-only parameters, which proves and
    /// then refuses its own proof (Curio's cuzk: "self-check failed"). Never for real work.
    #[arg(long)]
    pub timed_failure: Option<String>,
}

/// One kind of job in the mix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MixEntry {
    /// Circuit.
    pub circuit: CircuitShape,
    /// The Filecoin request, for Filecoin entries.
    pub filecoin: Option<Arc<FilRequest>>,
    /// Priority.
    pub priority: PriorityArg,
    /// Relative share.
    pub weight: u32,
}

impl MixEntry {
    /// Parses `circuit:log_size:priority[*weight]`.
    pub fn parse(s: &str) -> Result<MixEntry, CliError> {
        let bad = || CliError::Usage(format!("bad --mix entry {s:?}: expected circuit:log_size:priority[*weight]"));
        let (body, weight) = match s.split_once('*') {
            Some((b, w)) => (b, w.parse::<u32>().map_err(|_| bad())?),
            None => (s, 1),
        };
        if let Some(path) = body.strip_prefix('@') {
            let (path, priority) = match path.rsplit_once(':') {
                Some((p, pr)) if PriorityArg::from_name(pr).is_some() => (p, PriorityArg::from_name(pr).unwrap_or(PriorityArg::Default)),
                _ => (path, PriorityArg::Default),
            };
            let req = crate::client::curio::read_request(Path::new(path))?;
            let circuit = cuzk_circuits_filecoin::circuit_of(req.kind, req.registered_proof).map_err(|e| CliError::Usage(format!("{path}: {e}")))?;
            return Ok(MixEntry { circuit: CircuitShape::Filecoin(circuit), filecoin: Some(Arc::new(req)), priority, weight: weight.max(1) });
        }
        let mut it = body.split(':');
        let (Some(c), Some(k), p) = (it.next(), it.next(), it.next()) else { return Err(bad()) };
        let circuit = GenericShape::new(c, k.parse().map_err(|_| bad())?)?;
        let priority = match p {
            Some(p) => PriorityArg::from_name(p).ok_or_else(bad)?,
            None => PriorityArg::Default,
        };
        Ok(MixEntry { circuit: circuit.into(), filecoin: None, priority, weight: weight.max(1) })
    }

    /// `squaring-chain-2^10/normal`.
    pub fn label(&self) -> String {
        format!("{}/{}", self.circuit.id(), format!("{:?}", self.priority).to_lowercase())
    }
}

/// Parses `90s`, `30m`, `1h` or a number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let bad = || format!("bad duration {s:?}: use e.g. 90s, 30m or 1h");
    let (num, mult) = match s.chars().last() {
        Some('s') => (&s[..s.len() - 1], 1),
        Some('m') => (&s[..s.len() - 1], 60),
        Some('h') => (&s[..s.len() - 1], 3600),
        _ => (s, 1),
    };
    let n: u64 = num.parse().map_err(|_| bad())?;
    n.checked_mul(mult).map(Duration::from_secs).ok_or_else(bad)
}

/// The value of the first sample of `name` (with `label` in its labels, when given).
pub fn metric(text: &str, name: &str, label: Option<&str>) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find(|l| l.split([' ', '{']).next() == Some(name) && label.is_none_or(|w| l.contains(w)))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// One memory sample of the daemon.
#[derive(Debug, Clone, Copy, Default)]
struct Sample {
    at_s: f64,
    rss: f64,
    host: f64,
    device: f64,
}

impl Sample {
    fn csv_line(&self) -> String {
        format!("{:.1},{},{},{}\n", self.at_s, self.rss, self.host, self.device)
    }
}

/// Appends a line to the samples file; a failed write loses that sample only (logged).
fn append(path: &std::path::Path, line: &str) {
    use std::io::Write as _;
    let r = std::fs::OpenOptions::new().append(true).open(path).and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = r {
        eprintln!("warning: {}: {e}", path.display());
    }
}

fn sample(text: &str, start: Instant) -> Sample {
    Sample {
        at_s: start.elapsed().as_secs_f64(),
        rss: metric(text, "cuzk_process_resident_bytes", None).unwrap_or(0.0),
        host: metric(text, "cuzk_memory_used_bytes", Some("location=\"host\"")).unwrap_or(0.0),
        device: metric(text, "cuzk_memory_used_bytes", Some("location=\"device0\"")).unwrap_or(0.0),
    }
}

/// The shape of a series, in MiB: its first value, the values a tenth and half way through
/// (after the warm-up; a leak keeps growing past them), its maximum and its last value.
fn series(v: &[f64]) -> String {
    let mib = |x: f64| x / (1u64 << 20) as f64;
    match (v.first(), v.last()) {
        (Some(f), Some(l)) => format!(
            "first {:.0} MiB, at 10% {:.0} MiB, at 50% {:.0} MiB, max {:.0} MiB, last {:.0} MiB",
            mib(*f),
            mib(v[v.len() / 10]),
            mib(v[v.len() / 2]),
            mib(v.iter().copied().fold(0.0, f64::max)),
            mib(*l)
        ),
        _ => "no samples".into(),
    }
}

/// How one job went.
enum JobOutcome {
    /// Completed (and verified, when asked).
    Verified(Stages),
    /// Completed with the proof withheld (timing-only parameters, unchecked witness): timed, not verified.
    Withheld(Stages),
    /// Failed with the `--timed-failure` text in its message: timed, not verified.
    TimedFailure(Stages),
    Failed(String),
    Wrong(String),
}

/// The daemon's account of a completed job (`AwaitProofResponse`), seconds.
#[derive(Debug, Clone, Copy, Default)]
struct Stages {
    queue_wait: f64,
    srs_load: f64,
    synthesis: f64,
    gpu: f64,
    total: f64,
}

impl Stages {
    fn of(r: &proto::AwaitProofResponse) -> Stages {
        let s = |ms: u64| ms as f64 / 1e3;
        Stages { queue_wait: s(r.queue_wait_ms), srs_load: s(r.srs_load_ms), synthesis: s(r.synthesis_ms), gpu: s(r.gpu_compute_ms), total: s(r.total_ms) }
    }

    fn add(&mut self, o: &Stages) {
        self.queue_wait += o.queue_wait;
        self.srs_load += o.srs_load;
        self.synthesis += o.synthesis;
        self.gpu += o.gpu;
        self.total += o.total;
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Per-device busy seconds from the metrics text.
pub fn busy_seconds(metrics: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for line in metrics.lines().filter(|l| l.starts_with("cuzk_device_busy_seconds_total{")) {
        let dev = line.split("device=\"").nth(1).and_then(|r| r.split('"').next()).unwrap_or("?").to_string();
        if let Some(v) = line.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()) {
            out.insert(dev, v);
        }
    }
    out
}

async fn metrics(c: &mut Client) -> Result<String, CliError> {
    Ok(c.get_metrics(proto::GetMetricsRequest {}).await.map_err(ClientError::from)?.into_inner().prometheus_text)
}

/// Runs the load and prints the summary; returns it too.
pub async fn run(conn: &Conn, data_dir: &Path, args: &LoadArgs) -> Result<String, CliError> {
    let mix = args.mix.iter().map(|m| MixEntry::parse(m)).collect::<Result<Vec<_>, _>>()?;
    if mix.is_empty() {
        return Err(CliError::Usage("--mix is empty".into()));
    }
    let schedule: Vec<usize> = mix.iter().enumerate().flat_map(|(i, m)| (0..m.weight).map(move |_| i)).collect();
    let verify = args.verify || args.verify_all;
    let mut vks: HashMap<usize, Arc<VerifyingKey>> = HashMap::new();
    if verify {
        for (i, m) in mix.iter().enumerate() {
            if let CircuitShape::Generic(c) = m.circuit {
                let p = params_path(data_dir, c);
                vks.insert(i, Arc::new(cuzk_worker::read_params(&p, Validation::Trusted)?.vk));
            }
        }
    }
    let mut client = conn.client().await?;
    let status = client.get_status(proto::GetStatusRequest {}).await.map_err(ClientError::from)?.into_inner();
    // GetStatus lists the devices in the engine's order, the `device` label of the metrics.
    let names: BTreeMap<String, String> = status.gpus.iter().enumerate().map(|(i, g)| (i.to_string(), g.name.clone())).collect();
    let before = busy_seconds(&metrics(&mut client).await?);
    let pb = match (args.quiet, args.duration) {
        (true, _) => ProgressBar::hidden(),
        (false, Some(_)) => ProgressBar::new_spinner(),
        (false, None) => ProgressBar::new(args.jobs as u64),
    };
    pb.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} jobs  {per_sec}  eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let start = Instant::now();
    let first = sample(&metrics(&mut client).await?, start);
    // Samples go to the file as they are taken, so a run cut short still leaves its series.
    let csv = args.samples_out.clone();
    if let Some(path) = &csv {
        std::fs::write(path, format!("seconds,rss_bytes,host_reserved_bytes,device0_reserved_bytes\n{}", first.csv_line()))
            .map_err(|source| CliError::Io { path: path.clone(), source })?;
    }
    let samples = Arc::new(std::sync::Mutex::new(vec![first]));
    let sampler = {
        let (mut c, samples, every, csv) = (client.clone(), samples.clone(), Duration::from_secs(args.sample_s.max(1)), csv.clone());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                if let Ok(text) = metrics(&mut c).await {
                    let s = sample(&text, start);
                    samples.lock().unwrap_or_else(|e| e.into_inner()).push(s);
                    if let Some(path) = &csv {
                        append(path, &s.csv_line());
                    }
                }
            }
        })
    };
    // Names this run's request ids apart from an earlier run's against the same daemon.
    let run = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64) ^ u64::from(std::process::id());
    let (stop_hostile, hostile) = {
        let (tx, rx) = tokio::sync::watch::channel(false);
        (tx, args.hostile.then(|| tokio::spawn(crate::client::hostile::run(conn.addr.clone(), rx))))
    };
    let retried = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let sem = Arc::new(Semaphore::new(args.concurrency.max(1)));
    let mut set = JoinSet::new();
    let mut submitted = 0usize;
    for i in 0.. {
        let permit = sem.clone().acquire_owned().await.map_err(|e| CliError::Usage(e.to_string()))?;
        let more = match args.duration {
            Some(d) => start.elapsed() < d,
            None => i < args.jobs,
        };
        if !more {
            break;
        }
        submitted += 1;
        let k = schedule[i % schedule.len()];
        let m = &mix[k];
        let mut submit = match (&m.filecoin, m.circuit) {
            (Some(f), _) => {
                // As Curio sends it, under a request id of its own (Curio's id is per sector:
                // repeating it, in this run or a later one, would join the first job instead
                // of proving again).
                let mut s = crate::client::curio::submission(f);
                s.request_id = format!("{}-load-{run:x}-{i}", s.request_id);
                s
            }
            (None, CircuitShape::Generic(c)) => proto::SubmitProofRequest {
                // A request id of its own, so a retry joins the job instead of proving again.
                request_id: format!("load-{run:x}-{i}"),
                proof_kind: proto::ProofKind::Generic as i32,
                generic: Some(proto::GenericJob { circuit: c.name(), log_size: c.log_size, seed: i as u64 * 1000, partitions: args.partitions }),
                ..Default::default()
            },
            (None, CircuitShape::Filecoin(_)) => return Err(CliError::Usage("a Filecoin mix entry needs its request file".into())),
        };
        if m.priority != PriorityArg::Default {
            submit.priority = m.priority.proto() as i32;
        }
        let req = proto::ProveRequest { submit: Some(submit), timeout_ms: 0 };
        let mut c = client.clone();
        let vk = vks.get(&k).cloned();
        let fil_check = m.filecoin.clone().filter(|_| verify);
        let pb = pb.clone();
        let (retry_for, retried) = (Duration::from_secs(args.retry_s), retried.clone());
        let timed_failure = args.timed_failure.clone();
        set.spawn(async move {
            let t = Instant::now();
            let r = loop {
                let r = c.prove(req.clone()).await;
                let transport = matches!(&r, Err(s) if matches!(s.code(), tonic::Code::Unavailable | tonic::Code::Unknown | tonic::Code::Cancelled | tonic::Code::Internal));
                if !transport || t.elapsed() >= retry_for {
                    break r;
                }
                retried.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                tokio::time::sleep(Duration::from_secs(1)).await;
            };
            let took = t.elapsed();
            drop(permit);
            pb.inc(1);
            let outcome = match r {
                Ok(r) => match r.into_inner().result {
                    Some(res) if res.status == AwaitStatus::Completed as i32 && res.proof.is_empty() && res.error_message.starts_with(WITHHELD_NOTE) => {
                        JobOutcome::Withheld(Stages::of(&res))
                    }
                    Some(res) if res.status == AwaitStatus::Completed as i32 => match (vk, fil_check) {
                        (Some(vk), _) => match verify_result(&vk, &res) {
                            Ok(_) => JobOutcome::Verified(Stages::of(&res)),
                            Err(e) => JobOutcome::Wrong(e),
                        },
                        (None, Some(req)) => {
                            let stages = Stages::of(&res);
                            match tokio::task::spawn_blocking(move || cuzk_circuits_filecoin::verify::verify(&req, &res.proof)).await {
                                Ok(Ok(true)) => JobOutcome::Verified(stages),
                                Ok(Ok(false)) => JobOutcome::Wrong("Filecoin's verifier rejects the proof".into()),
                                Ok(Err(e)) => JobOutcome::Wrong(format!("Filecoin's verifier: {e}")),
                                Err(e) => JobOutcome::Failed(format!("verifier task: {e}")),
                            }
                        }
                        (None, None) => JobOutcome::Verified(Stages::of(&res)),
                    },
                    Some(res) if timed_failure.as_deref().is_some_and(|t| res.error_message.contains(t)) => JobOutcome::TimedFailure(Stages::of(&res)),
                    Some(res) => {
                        JobOutcome::Failed(format!("{}: {}", AwaitStatus::try_from(res.status).map_or("UNKNOWN", |s| s.as_str_name()), res.error_message))
                    }
                    None => JobOutcome::Failed("empty response".into()),
                },
                Err(s) => JobOutcome::Failed(format!("{:?}: {}", s.code(), s.message())),
            };
            (k, took, outcome)
        });
    }
    let mut lat: Vec<Vec<Duration>> = vec![Vec::new(); mix.len()];
    let mut stages = vec![Stages::default(); mix.len()];
    let mut failed = vec![0usize; mix.len()];
    let mut wrong = 0usize;
    let mut withheld = 0usize;
    let mut timed_failures = 0usize;
    let mut errors: BTreeMap<String, usize> = BTreeMap::new();
    while let Some(r) = set.join_next().await {
        let (k, took, outcome) = r.map_err(|e| CliError::Usage(format!("load task: {e}")))?;
        match outcome {
            JobOutcome::Verified(s) => {
                lat[k].push(took);
                stages[k].add(&s);
            }
            JobOutcome::Withheld(s) => {
                lat[k].push(took);
                stages[k].add(&s);
                withheld += 1;
            }
            JobOutcome::TimedFailure(s) => {
                lat[k].push(took);
                stages[k].add(&s);
                timed_failures += 1;
            }
            JobOutcome::Failed(e) => {
                failed[k] += 1;
                *errors.entry(e).or_default() += 1;
            }
            JobOutcome::Wrong(e) => {
                failed[k] += 1;
                wrong += 1;
                *errors.entry(format!("WRONG PROOF: {e}")).or_default() += 1;
            }
        }
    }
    let wall = start.elapsed();
    let _ = stop_hostile.send(true);
    let hostile = match hostile {
        Some(h) => Some(h.await.map_err(|e| CliError::Usage(format!("hostile clients: {e}")))?),
        None => None,
    };
    pb.finish_and_clear();
    sampler.abort();
    let end_text = metrics(&mut client).await?;
    let after = busy_seconds(&end_text);
    let samples = {
        let mut v = samples.lock().unwrap_or_else(|e| e.into_inner()).clone();
        v.push(sample(&end_text, start));
        v
    };
    if let (Some(path), Some(last)) = (&csv, samples.last()) {
        append(path, &last.csv_line());
    }

    let ok: usize = lat.iter().map(Vec::len).sum();
    let mut o = String::new();
    let _ = writeln!(o, "cuzk load: {submitted} jobs ({} partitions each) against {}, concurrency {}", args.partitions.max(1), conn.addr, args.concurrency);
    let _ = writeln!(
        o,
        "wall {:.2} s; completed {ok}, failed {}{}",
        wall.as_secs_f64(),
        submitted - ok,
        if verify { format!(", wrong proofs returned {wrong}") } else { String::new() }
    );
    let _ = writeln!(
        o,
        "throughput {:.2} jobs/s, {:.2} partitions/s{}",
        ok as f64 / wall.as_secs_f64(),
        (ok as u64 * u64::from(args.partitions.max(1))) as f64 / wall.as_secs_f64(),
        if verify { "; every returned proof re-verified here" } else { "" }
    );
    if withheld > 0 {
        let _ = writeln!(
            o,
            "withheld: {withheld} completed jobs were proved with timing-only parameters and their proofs withheld by the daemon: timed, not verified"
        );
    }
    if timed_failures > 0 {
        let _ = writeln!(
            o,
            "timed failures: {timed_failures} jobs failed with {:?} in their message and are timed as completed (--timed-failure): timed, not verified",
            args.timed_failure.as_deref().unwrap_or_default()
        );
    }
    let _ = writeln!(o);
    let _ =
        writeln!(o, "| kind | jobs | failed | p50 (ms) | p99 (ms) | mean (ms) | daemon: queue wait | params wait | synthesis Σ | GPU Σ | total (mean ms) |");
    let _ = writeln!(o, "|---|---|---|---|---|---|---|---|---|---|---|");
    for (k, m) in mix.iter().enumerate() {
        let mut v = lat[k].clone();
        v.sort();
        let n = v.len().max(1) as f64;
        let mean = v.iter().map(Duration::as_secs_f64).sum::<f64>() / n * 1e3;
        let st = &stages[k];
        let _ = writeln!(
            o,
            "| {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
            m.label(),
            v.len() + failed[k],
            failed[k],
            percentile(&v, 0.5).as_secs_f64() * 1e3,
            percentile(&v, 0.99).as_secs_f64() * 1e3,
            mean,
            st.queue_wait / n * 1e3,
            st.srs_load / n * 1e3,
            st.synthesis / n * 1e3,
            st.gpu / n * 1e3,
            st.total / n * 1e3
        );
    }
    let _ = writeln!(
        o,
        "(daemon columns: means per completed job from AwaitProof; synthesis and GPU (upload, NTT, MSM) are summed over the job's partitions, which overlap)"
    );
    let _ = writeln!(o);
    for (dev, b) in &after {
        let busy = b - before.get(dev).copied().unwrap_or(0.0);
        let name = names.get(dev).map(String::as_str).unwrap_or("?");
        let _ = writeln!(o, "device {dev} ({name}): busy {:.1}% of the wall time ({busy:.2} s of GPU stages)", 100.0 * busy / wall.as_secs_f64());
    }
    let rss: Vec<f64> = samples.iter().map(|s| s.rss).collect();
    let host: Vec<f64> = samples.iter().map(|s| s.host).collect();
    let device: Vec<f64> = samples.iter().map(|s| s.device).collect();
    let _ = writeln!(o, "daemon RSS ({} samples): {}", samples.len(), series(&rss));
    let _ = writeln!(o, "host budget reserved: {}; device 0 budget reserved: {}", series(&host), series(&device));
    let retries: Vec<String> = ["device-error", "out-of-memory", "watchdog", "self-check", "out-of-service"]
        .iter()
        .map(|c| format!("{c} {}", metric(&end_text, "cuzk_partition_retries_total", Some(&format!("cause=\"{c}\""))).unwrap_or(0.0)))
        .collect();
    let _ =
        writeln!(o, "daemon: retries {}; self-check failures {}", retries.join(", "), metric(&end_text, "cuzk_self_check_failures_total", None).unwrap_or(0.0));
    let retried = retried.load(std::sync::atomic::Ordering::Relaxed);
    if retried > 0 {
        let _ = writeln!(o, "calls sent again after a transport error (the daemon restarting): {retried}");
    }
    for line in hostile.iter().flat_map(|h| h.lines()) {
        let _ = writeln!(o, "{line}");
    }
    for (e, n) in &errors {
        let _ = writeln!(o, "error ×{n}: {e}");
    }
    print!("{o}");
    if wrong > 0 {
        return Err(CliError::Usage(format!("{wrong} returned proofs do not verify")));
    }
    if let Some(h) = hostile.filter(|h| h.accepted > 0) {
        return Err(CliError::Usage(format!("{} hostile calls were accepted", h.accepted)));
    }
    if args.duration.is_none() && ok < submitted {
        return Err(CliError::Usage(format!("{} of {submitted} jobs did not complete", submitted - ok)));
    }
    if ok == 0 {
        return Err(CliError::Usage("no job completed".into()));
    }
    Ok(o)
}
