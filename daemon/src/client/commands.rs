//! The client commands: `cuzk submit`, `await`, `status`, `cancel`, `trace`.

use std::net::SocketAddr;
use std::path::PathBuf;

use crate::client::{connect, http_get, Client};
use crate::proto::{self, await_proof_response::Status as AwaitStatus};
use crate::CliError;

/// How to reach the daemon.
#[derive(Debug, Clone)]
pub struct Conn {
    /// `unix:/path`, `/path` or `http://host:port`.
    pub addr: String,
    /// Bearer token for TCP.
    pub token: Option<String>,
}

impl Conn {
    /// Connects.
    pub async fn client(&self) -> Result<Client, CliError> {
        Ok(connect(&self.addr, self.token.clone()).await?)
    }
}

/// Priority on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PriorityArg {
    /// The kind's default.
    Default,
    /// LOW.
    Low,
    /// NORMAL.
    Normal,
    /// HIGH.
    High,
    /// CRITICAL.
    Critical,
}

impl PriorityArg {
    /// The API value.
    pub fn proto(self) -> proto::Priority {
        match self {
            PriorityArg::Default => proto::Priority::Unspecified,
            PriorityArg::Low => proto::Priority::Low,
            PriorityArg::Normal => proto::Priority::Normal,
            PriorityArg::High => proto::Priority::High,
            PriorityArg::Critical => proto::Priority::Critical,
        }
    }

    /// Parses a name.
    pub fn from_name(s: &str) -> Option<PriorityArg> {
        <PriorityArg as clap::ValueEnum>::from_str(s, true).ok()
    }
}

/// `cuzk submit`.
#[derive(Debug, Clone, clap::Args)]
pub struct SubmitArgs {
    /// Built-in circuit: sha256-chain or squaring-chain.
    #[arg(long, required_unless_present = "request")]
    pub circuit: Option<String>,
    /// log2 of the domain size.
    #[arg(long, required_unless_present = "request")]
    pub log_size: Option<u32>,
    /// A Filecoin request file (JSON from `cuzk gen-vanilla`) instead of a built-in circuit; sent
    /// as Curio's client sends it (its request id, priority and fields).
    #[arg(long, conflicts_with = "circuit")]
    pub request: Option<PathBuf>,
    /// Witness seed (partition i uses seed + i).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Number of partitions.
    #[arg(long, default_value_t = 1)]
    pub partitions: u32,
    /// Priority.
    #[arg(long, value_enum, default_value_t = PriorityArg::Default)]
    pub priority: PriorityArg,
    /// Idempotency key (default for a Filecoin request: the id Curio would send).
    #[arg(long, default_value = "")]
    pub request_id: String,
    /// Fail the job if not done this many ms after acceptance (0: none).
    #[arg(long, default_value_t = 0)]
    pub deadline_ms: u64,
    /// Wait for the result and print it.
    #[arg(long)]
    pub wait: bool,
    /// With --wait: write the proof bytes here.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

impl SubmitArgs {
    /// The request.
    pub fn request(&self) -> Result<proto::SubmitProofRequest, CliError> {
        let mut r = match &self.request {
            Some(path) => crate::client::curio::submission(&crate::client::curio::read_request(path)?),
            None => proto::SubmitProofRequest {
                proof_kind: proto::ProofKind::Generic as i32,
                generic: Some(proto::GenericJob {
                    circuit: self.circuit.clone().unwrap_or_default(),
                    log_size: self.log_size.unwrap_or_default(),
                    seed: self.seed,
                    partitions: self.partitions,
                }),
                ..Default::default()
            },
        };
        if !self.request_id.is_empty() {
            r.request_id = self.request_id.clone();
        }
        if self.priority != PriorityArg::Default {
            r.priority = self.priority.proto() as i32;
        }
        r.deadline_ms = self.deadline_ms;
        Ok(r)
    }
}

/// `cuzk submit`.
pub async fn submit(conn: &Conn, args: &SubmitArgs) -> Result<(), CliError> {
    let mut c = conn.client().await?;
    let r = c.submit_proof(args.request()?).await.map_err(crate::client::ClientError::from)?.into_inner();
    println!("job {} accepted ({} ahead of it)", r.job_id, r.queue_position);
    if args.wait {
        return await_job(conn, &r.job_id, 0, args.out.as_ref()).await;
    }
    Ok(())
}

fn status_name(s: i32) -> &'static str {
    AwaitStatus::try_from(s).map_or("UNKNOWN", |s| s.as_str_name())
}

/// Prints a result; an error unless it completed.
pub fn print_result(r: &proto::AwaitProofResponse, out: Option<&PathBuf>) -> Result<(), CliError> {
    println!("job {}: {}", r.job_id, status_name(r.status));
    if !r.error_message.is_empty() {
        println!("  {}", r.error_message);
    }
    if r.status == AwaitStatus::Completed as i32 {
        println!(
            "  timing: queue {} ms, parameter load {} ms, synthesis {} ms, gpu {} ms, total {} ms",
            r.queue_wait_ms, r.srs_load_ms, r.synthesis_ms, r.gpu_compute_ms, r.total_ms
        );
        println!("  proof ({} bytes, {} partitions): {}", r.proof.len(), r.proof.len() / 192, hex(&r.proof));
        if let Some(p) = out {
            std::fs::write(p, &r.proof).map_err(|source| CliError::Io { path: p.clone(), source })?;
            println!("  written to {}", p.display());
        }
        return Ok(());
    }
    Err(CliError::Usage(format!("job {} ended {}", r.job_id, status_name(r.status))))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// `cuzk await`.
pub async fn await_job(conn: &Conn, job: &str, timeout_ms: u64, out: Option<&PathBuf>) -> Result<(), CliError> {
    let mut c = conn.client().await?;
    let r = c.await_proof(proto::AwaitProofRequest { job_id: job.into(), timeout_ms }).await.map_err(crate::client::ClientError::from)?.into_inner();
    print_result(&r, out)
}

/// `cuzk cancel`.
pub async fn cancel(conn: &Conn, job: &str) -> Result<(), CliError> {
    let mut c = conn.client().await?;
    let r = c.cancel_proof(proto::CancelProofRequest { job_id: job.into() }).await.map_err(crate::client::ClientError::from)?.into_inner();
    println!("job {job} cancelled{}", if r.was_running { " (it was running)" } else { "" });
    Ok(())
}

/// `cuzk status`.
pub async fn status(conn: &Conn) -> Result<(), CliError> {
    let mut c = conn.client().await?;
    let s = c.get_status(proto::GetStatusRequest {}).await.map_err(crate::client::ClientError::from)?.into_inner();
    println!(
        "uptime {} s; proofs completed {}, failed {}, cancelled {}",
        s.uptime_seconds, s.total_proofs_completed, s.total_proofs_failed, s.total_proofs_cancelled
    );
    println!("host memory {} / {} bytes", s.pinned_memory_bytes, s.pinned_memory_limit_bytes);
    for g in &s.gpus {
        let cur = if g.current_job_id.is_empty() { "idle".to_string() } else { format!("running job {}", g.current_job_id) };
        println!("device {} ({}): {} / {} bytes free, {cur}", g.ordinal, g.name, g.vram_free_bytes, g.vram_total_bytes);
    }
    for q in &s.queues {
        println!("queue {:<18} pending {:>4}  in progress {:>4}", q.proof_kind, q.pending, q.in_progress);
    }
    for p in &s.loaded_srs {
        let tier = proto::srs_status::Tier::try_from(p.tier).map_or("?", |t| t.as_str_name());
        println!("params {:<24} {tier:<4} {} bytes, {} live jobs", p.circuit_id, p.size_bytes, p.ref_count);
    }
    Ok(())
}

/// `cuzk trace`: fetches the Chrome trace from the HTTP listener.
pub async fn trace(http: SocketAddr, token: Option<&str>, out: &PathBuf) -> Result<(), CliError> {
    let (code, body) = http_get(http, "/trace", token).await?;
    if code != 200 {
        return Err(CliError::Usage(format!("GET /trace answered {code}: {}", body.trim())));
    }
    std::fs::write(out, body.as_bytes()).map_err(|source| CliError::Io { path: out.clone(), source })?;
    println!("Chrome trace written to {} (open in chrome://tracing or ui.perfetto.dev)", out.display());
    Ok(())
}
