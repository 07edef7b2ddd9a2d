//! Prometheus text exposition of a [`Snapshot`].

use std::fmt::Write as _;

use cuzk_circuits_filecoin::FilShape;

use crate::names::{kind_name, proto_kind};
use crate::server::status::{CopyState, KindStatus, Snapshot, LATENCY_BUCKETS};

fn head(o: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(o, "# HELP {name} {help}");
    let _ = writeln!(o, "# TYPE {name} {kind}");
}

fn esc(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// Renders the metrics (text format 0.0.4).
pub fn render(s: &Snapshot) -> String {
    let mut o = String::new();
    head(&mut o, "cuzk_uptime_seconds", "gauge", "Seconds since the daemon started.");
    let _ = writeln!(o, "cuzk_uptime_seconds {}", s.uptime_s);
    head(&mut o, "cuzk_build_info", "gauge", "Always 1: the daemon's version and backend as labels.");
    let _ = writeln!(o, "cuzk_build_info{{version=\"{}\",backend=\"{}\"}} 1", esc(&s.version), esc(&s.backend));
    head(&mut o, "cuzk_draining", "gauge", "1 once a shutdown began: no new jobs are accepted, accepted ones drain.");
    let _ = writeln!(o, "cuzk_draining {}", u8::from(s.draining));
    head(&mut o, "cuzk_listener_up", "gauge", "1 while a listener accepts connections, 0 while it backs off or has stopped.");
    for l in &s.listeners {
        let up = u8::from(l.state == crate::server::listen::ListenerState::Serving);
        let _ = writeln!(o, "cuzk_listener_up{{listener=\"{}\"}} {up}", l.name);
    }
    head(&mut o, "cuzk_listener_connections", "gauge", "Connections open per listener.");
    for l in &s.listeners {
        let _ = writeln!(o, "cuzk_listener_connections{{listener=\"{}\"}} {}", l.name, l.open);
    }
    head(
        &mut o,
        "cuzk_listener_closed_total",
        "counter",
        "Connections a listener closed: full (refused), silent too long (timed_out); and accepts that failed (accept_error).",
    );
    for l in &s.listeners {
        for (why, n) in [("refused", l.refused), ("timed_out", l.timed_out), ("accept_error", l.accept_errors)] {
            let _ = writeln!(o, "cuzk_listener_closed_total{{listener=\"{}\",reason=\"{why}\"}} {n}", l.name);
        }
    }
    head(&mut o, "cuzk_request_budget_bytes", "gauge", "The budget for request bytes in flight ([server] request_budget_bytes).");
    let _ = writeln!(o, "cuzk_request_budget_bytes {}", s.requests.budget_bytes);
    head(&mut o, "cuzk_request_bytes_in_flight", "gauge", "Bytes charged to requests being received or decoded, until their job is accepted.");
    let _ = writeln!(o, "cuzk_request_bytes_in_flight {}", s.requests.in_flight_bytes);
    head(&mut o, "cuzk_requests_over_budget_total", "counter", "Requests refused with RESOURCE_EXHAUSTED because the request budget was spent.");
    let _ = writeln!(o, "cuzk_requests_over_budget_total {}", s.requests.refused);
    if let Some(j) = &s.journal {
        head(&mut o, "cuzk_journal_jobs", "gauge", "Jobs in the journal: accepted and not ended (open), ended with their results kept (ended).");
        let _ = writeln!(o, "cuzk_journal_jobs{{state=\"open\"}} {}", j.open);
        let _ = writeln!(o, "cuzk_journal_jobs{{state=\"ended\"}} {}", j.ended);
        head(&mut o, "cuzk_journal_bytes", "gauge", "Bytes the journal's records take on disk.");
        let _ = writeln!(o, "cuzk_journal_bytes {}", j.bytes);
        head(&mut o, "cuzk_journal_write_errors_total", "counter", "Journal writes that failed (a job refused, or a result not kept).");
        let _ = writeln!(o, "cuzk_journal_write_errors_total {}", j.write_errors);
        head(&mut o, "cuzk_journal_damaged_total", "counter", "Damaged journal files found and removed at the start.");
        let _ = writeln!(o, "cuzk_journal_damaged_total {}", j.damaged);
    }
    head(&mut o, "cuzk_jobs_submitted_total", "counter", "Jobs accepted.");
    let _ = writeln!(o, "cuzk_jobs_submitted_total {}", s.jobs.submitted);
    head(&mut o, "cuzk_jobs_ended_total", "counter", "Jobs ended, by outcome.");
    for (k, v) in [("completed", s.jobs.completed), ("failed", s.jobs.failed), ("cancelled", s.jobs.cancelled)] {
        let _ = writeln!(o, "cuzk_jobs_ended_total{{outcome=\"{k}\"}} {v}");
    }
    head(&mut o, "cuzk_jobs_live", "gauge", "Jobs accepted and not ended.");
    let _ = writeln!(o, "cuzk_jobs_live {}", s.jobs.live);
    head(&mut o, "cuzk_queue_jobs", "gauge", "Live jobs per priority and state.");
    for q in &s.queues {
        let _ = writeln!(o, "cuzk_queue_jobs{{priority=\"{}\",state=\"pending\"}} {}", q.priority, q.pending);
        let _ = writeln!(o, "cuzk_queue_jobs{{priority=\"{}\",state=\"running\"}} {}", q.priority, q.running);
    }
    head(&mut o, "cuzk_queue_limit", "gauge", "Jobs of one priority accepted and not started beyond which submissions are refused (engine.queue_limit).");
    let _ = writeln!(o, "cuzk_queue_limit {}", s.recovery.queue_limit);
    head(&mut o, "cuzk_memory_used_bytes", "gauge", "Bytes reserved in each memory budget.");
    let _ = writeln!(o, "cuzk_memory_used_bytes{{location=\"host\"}} {}", s.memory.host.used);
    for (d, b) in s.memory.devices.iter().enumerate() {
        let _ = writeln!(o, "cuzk_memory_used_bytes{{location=\"device{d}\"}} {}", b.used);
    }
    head(&mut o, "cuzk_memory_capacity_bytes", "gauge", "Size of each memory budget.");
    let _ = writeln!(o, "cuzk_memory_capacity_bytes{{location=\"host\"}} {}", s.memory.host.capacity);
    for (d, b) in s.memory.devices.iter().enumerate() {
        let _ = writeln!(o, "cuzk_memory_capacity_bytes{{location=\"device{d}\"}} {}", b.capacity);
    }
    head(&mut o, "cuzk_memory_loads_set_aside_bytes", "gauge", "Host bytes set aside for the query a device load holds in flight.");
    let _ = writeln!(o, "cuzk_memory_loads_set_aside_bytes {}", s.memory.host.loads_set_aside);
    head(&mut o, "cuzk_memory_loads_bytes", "gauge", "Host bytes device loads in flight hold now.");
    let _ = writeln!(o, "cuzk_memory_loads_bytes {}", s.memory.host.in_loads);
    head(&mut o, "cuzk_device_busy_seconds_total", "counter", "Seconds with at least one GPU stage running.");
    for d in &s.devices {
        let _ = writeln!(o, "cuzk_device_busy_seconds_total{{device=\"{}\",ordinal=\"{}\",name=\"{}\"}} {}", d.id, d.ordinal, esc(&d.name), d.busy_s);
    }
    head(&mut o, "cuzk_device_active_partitions", "gauge", "Partitions on each device now.");
    for d in &s.devices {
        let _ = writeln!(o, "cuzk_device_active_partitions{{device=\"{}\"}} {}", d.id, d.active);
    }
    head(&mut o, "cuzk_params_resident", "gauge", "1 where a circuit's parameters are resident.");
    for p in &s.params {
        let _ = writeln!(o, "cuzk_params_resident{{circuit=\"{}\",location=\"host\"}} {}", esc(&p.circuit), u8::from(p.host == CopyState::Resident));
        for (d, st) in p.devices.iter().enumerate() {
            let _ = writeln!(o, "cuzk_params_resident{{circuit=\"{}\",location=\"device{d}\"}} {}", esc(&p.circuit), u8::from(*st == CopyState::Resident));
        }
    }
    head(&mut o, "cuzk_stage_seconds_total", "counter", "Seconds spent in each stage, over all partitions.");
    for st in &s.stages {
        let _ = writeln!(o, "cuzk_stage_seconds_total{{stage=\"{}\"}} {}", st.stage, st.seconds);
    }
    head(&mut o, "cuzk_stage_runs_total", "counter", "Stages finished successfully.");
    for st in &s.stages {
        let _ = writeln!(o, "cuzk_stage_runs_total{{stage=\"{}\"}} {}", st.stage, st.count);
    }
    fault_metrics(&mut o, s);
    curio_metrics(&mut o, s);
    head(&mut o, "cuzk_job_latency_seconds", "histogram", "Submission to completion of completed jobs, per circuit.");
    for h in &s.latency {
        let c = esc(&h.circuit);
        for (le, n) in &h.buckets {
            let _ = writeln!(o, "cuzk_job_latency_seconds_bucket{{circuit=\"{c}\",le=\"{le}\"}} {n}");
        }
        let _ = writeln!(o, "cuzk_job_latency_seconds_bucket{{circuit=\"{c}\",le=\"+Inf\"}} {}", h.count);
        let _ = writeln!(o, "cuzk_job_latency_seconds_sum{{circuit=\"{c}\"}} {}", h.sum);
        let _ = writeln!(o, "cuzk_job_latency_seconds_count{{circuit=\"{c}\"}} {}", h.count);
    }
    kind_latency(&mut o, s);
    o
}

/// The latency histograms per circuit summed per proof kind, under Curio's kind labels
/// (`porep_c2`, `snap_update`, `window_post`, `winning_post`, `generic`): one series per kind
/// whatever the sector sizes, for alerts on WinningPoSt's time.
fn kind_latency(o: &mut String, s: &Snapshot) {
    head(o, "cuzk_proof_latency_seconds", "histogram", "Submission to completion of completed proofs, per proof kind.");
    for k in &s.kinds {
        let mut buckets: Vec<(f64, u64)> = LATENCY_BUCKETS.iter().map(|b| (*b, 0)).collect();
        let (mut sum, mut count) = (0.0, 0);
        for h in s.latency.iter().filter(|h| circuit_kind(&h.circuit) == k.kind) {
            for (le, n) in &h.buckets {
                match buckets.iter_mut().find(|(b, _)| b == le) {
                    Some((_, total)) => *total += n,
                    None => buckets.push((*le, *n)),
                }
            }
            sum += h.sum;
            count += h.count;
        }
        buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        let l = k.kind.replace('-', "_");
        for (le, n) in &buckets {
            let _ = writeln!(o, "cuzk_proof_latency_seconds_bucket{{proof_kind=\"{l}\",le=\"{le}\"}} {n}");
        }
        let _ = writeln!(o, "cuzk_proof_latency_seconds_bucket{{proof_kind=\"{l}\",le=\"+Inf\"}} {count}");
        let _ = writeln!(o, "cuzk_proof_latency_seconds_sum{{proof_kind=\"{l}\"}} {sum}");
        let _ = writeln!(o, "cuzk_proof_latency_seconds_count{{proof_kind=\"{l}\"}} {count}");
    }
}

/// The proof kind of a circuit id, as [`KindStatus::kind`] names it: Filecoin ids
/// (`winning-32g`) by their kind, every other circuit `generic`.
fn circuit_kind(circuit: &str) -> &'static str {
    FilShape::parse(circuit).map_or("generic", |f| kind_name(proto_kind(f.kind)))
}

/// Faults, retries, refusals and memory pressure.
fn fault_metrics(o: &mut String, s: &Snapshot) {
    head(o, "cuzk_partition_retries_total", "counter", "Further attempts of partitions, by cause.");
    for cause in ["device-error", "out-of-memory", "watchdog", "self-check", "out-of-service"] {
        let n = s.recovery.retried.iter().find(|(k, _)| k == cause).map_or(0, |(_, v)| *v);
        let _ = writeln!(o, "cuzk_partition_retries_total{{cause=\"{cause}\"}} {n}");
    }
    head(o, "cuzk_self_check_failures_total", "counter", "Proofs that failed their check with the verifying key (never returned).");
    let _ = writeln!(o, "cuzk_self_check_failures_total {}", s.recovery.self_check_failures);
    head(o, "cuzk_device_faults_total", "counter", "Faults counted against each device, by cause.");
    for d in &s.devices {
        for (cause, n) in &d.faults {
            let _ = writeln!(o, "cuzk_device_faults_total{{device=\"{}\",cause=\"{}\"}} {n}", d.id, esc(cause));
        }
    }
    head(o, "cuzk_device_in_service", "gauge", "1 while work is placed on the device, 0 once it was taken out of service.");
    for d in &s.devices {
        let _ = writeln!(o, "cuzk_device_in_service{{device=\"{}\"}} {}", d.id, u8::from(d.in_service));
    }
    head(o, "cuzk_submissions_refused_total", "counter", "Submissions refused because their priority's queue was full.");
    let _ = writeln!(o, "cuzk_submissions_refused_total{{reason=\"queue-full\"}} {}", s.recovery.queue_refusals);
    head(o, "cuzk_synthesis_paused", "gauge", "1 while new synthesis waits for host memory (MemAvailable below the margin).");
    let _ = writeln!(o, "cuzk_synthesis_paused {}", u8::from(s.admission.paused));
    if let Some(a) = s.admission.mem_available_bytes {
        head(o, "cuzk_host_memory_available_bytes", "gauge", "MemAvailable of /proc/meminfo.");
        let _ = writeln!(o, "cuzk_host_memory_available_bytes {a}");
    }
    if let Some(r) = s.rss_bytes {
        head(o, "cuzk_process_resident_bytes", "gauge", "Resident set size of the daemon.");
        let _ = writeln!(o, "cuzk_process_resident_bytes {r}");
    }
}

/// The metrics Curio's own cuzk daemon exports, under its names and labels, so an operator's
/// dashboards keep working when the daemons are swapped.
fn curio_metrics(o: &mut String, s: &Snapshot) {
    head(o, "cuzk_proofs_completed_total", "counter", "Proofs completed.");
    let _ = writeln!(o, "cuzk_proofs_completed_total {}", s.jobs.completed);
    head(o, "cuzk_proofs_failed_total", "counter", "Proofs failed.");
    let _ = writeln!(o, "cuzk_proofs_failed_total {}", s.jobs.failed);
    head(o, "cuzk_queue_depth", "gauge", "Jobs accepted and not yet started.");
    let _ = writeln!(o, "cuzk_queue_depth {}", s.kinds.iter().map(|k| u64::from(k.pending)).sum::<u64>());
    // Curio's label values are its kind names with underscores: `porep_c2`, …, `generic`.
    let labels: Vec<(String, &KindStatus)> = s.kinds.iter().map(|k| (k.kind.replace('-', "_"), k)).collect();
    head(o, "cuzk_proofs_completed", "counter", "Proofs completed, per proof kind.");
    for (l, k) in &labels {
        let _ = writeln!(o, "cuzk_proofs_completed{{proof_kind=\"{l}\"}} {}", k.completed);
    }
    head(o, "cuzk_proofs_failed", "counter", "Proofs failed, per proof kind.");
    for (l, k) in &labels {
        let _ = writeln!(o, "cuzk_proofs_failed{{proof_kind=\"{l}\"}} {}", k.failed);
    }
    head(o, "cuzk_proof_duration_seconds", "summary", "Submission to completion of completed proofs, per proof kind.");
    for (l, k) in &labels {
        let _ = writeln!(o, "cuzk_proof_duration_seconds_count{{proof_kind=\"{l}\"}} {}", k.completed);
        let _ = writeln!(o, "cuzk_proof_duration_seconds_sum{{proof_kind=\"{l}\"}} {:.3}", k.completed_seconds);
    }
    head(o, "cuzk_running_jobs", "gauge", "Jobs with a stage running.");
    let _ = writeln!(o, "cuzk_running_jobs {}", s.kinds.iter().map(|k| u64::from(k.running)).sum::<u64>());
    head(o, "cuzk_gpu_workers", "gauge", "Devices the engine schedules on.");
    let _ = writeln!(o, "cuzk_gpu_workers {}", s.devices.len());
}
