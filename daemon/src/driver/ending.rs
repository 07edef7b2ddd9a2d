//! How a job ends: each attempt's end is turned into another attempt (after a device fault
//! or a failed self-check, within the bounds of [`super::Recovery`]) or into the job's one
//! final result; the watchdog of the device stages; device faults and retirement.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cuzk_core::engine::{DeviceId, JobFailure, JobId, JobKind, JobSpec, Location, Outcome, PartitionId};
use cuzk_worker::{WorkError, Worker};

use super::recovery::{classify, Fault};
use super::{api_id, scalar_bytes, Driver, FinalStatus, JobResult};
use crate::config::ShutdownMode;
use crate::names::kind_name;
use crate::status::Histogram;

/// The `error_message` of a completed job in bench mode, whose proof is withheld; clients
/// (`cuzk bench`) recognize it by this prefix.
pub const BENCH_MODE_NOTE: &str = "bench mode: proved with timing-only parameters; the proof is withheld (not valid)";

impl<W: Worker> Driver<W> {
    /// An attempt (engine job) ended: another attempt, or the job's final result.
    pub(super) fn job_ended(&mut self, attempt: JobId, outcome: Outcome) {
        self.parts.retain(|p, _| p.job != attempt);
        let Some(api) = self.attempts.remove(&attempt) else {
            return;
        };
        let Some(j) = self.jobs.get_mut(&api).filter(|j| j.attempt == attempt) else {
            return;
        };
        let fault = j.fault.take();
        let user_cancelled = j.cancelled;
        let (retries, rechecks) = (j.retries, j.rechecks);
        let first_unproven = j.proofs.iter().position(Option::is_none).unwrap_or(0);
        let retryable = match (&outcome, fault) {
            (Outcome::Failed(JobFailure::Stage { .. }), Some(f)) => Some(f),
            (Outcome::Cancelled, Some(f)) if !user_cancelled => Some(f),
            // A partition stranded on a device taken out of service: prove it elsewhere.
            (Outcome::Failed(JobFailure::DeviceRetired { device, .. }), _) => Some((Fault::OutOfService, Some(device.0))),
            _ => None,
        };
        let Some((fault, device)) = retryable else {
            return self.finish(api, outcome, None);
        };
        let (used, limit) = if fault == Fault::SelfCheck { (rechecks, self.cfg.recovery.rechecks) } else { (retries, self.cfg.recovery.retries) };
        let cancelling = matches!(self.draining, Some((ShutdownMode::Cancel, _)));
        let why = if used >= limit {
            Some(match fault {
                Fault::SelfCheck => format!(
                    "partition {first_unproven}: the proof failed its check with the verifying key {} times (re-proved {used} times); no unchecked proof is returned",
                    used + 1
                ),
                f => format!("partition {first_unproven}: {} ({}), after {used} retries", describe(f, device, &outcome), f.name()),
            })
        } else if cancelling {
            Some("cancelled: the daemon is shutting down".into())
        } else {
            self.no_device_reason()
        };
        if let Some(why) = why {
            let outcome = if cancelling { Outcome::Cancelled } else { outcome };
            let why = (!cancelling).then_some(why);
            return self.finish(api, outcome, why);
        }
        if let Err(why) = self.resubmit(api, fault, device) {
            self.finish(api, outcome, Some(why));
        }
    }

    /// Starts another attempt of the job's unproven partitions.
    fn resubmit(&mut self, api: JobId, fault: Fault, device: Option<u32>) -> Result<(), String> {
        let now = self.now();
        let Some(j) = self.jobs.get(&api) else { return Err("job unknown".into()) };
        if j.deadline_at.is_some_and(|d| d <= now) {
            return Err("deadline exceeded".into());
        }
        let missing: Vec<u32> = (0..j.proofs.len() as u32).filter(|i| j.proofs[*i as usize].is_none()).collect();
        let mut spec = JobSpec::new(JobKind::Generic, j.circuit, missing.len() as u32).with_priority(j.req.priority);
        if let Some(d) = j.deadline_at {
            spec = spec.with_deadline(d);
        }
        // Another device, when there is one in service, proves it again (the engine uses the
        // avoided one only when no other can serve).
        if let Some(d) = device {
            spec = spec.avoiding(DeviceId(d));
        }
        let attempt = self.engine.submit(spec, now).map_err(|e| format!("another attempt was refused: {e}"))?;
        *self.retried.entry(fault.name()).or_default() += 1;
        self.attempts.insert(attempt, api);
        if let Some(j) = self.jobs.get_mut(&api) {
            if fault == Fault::SelfCheck {
                j.rechecks += 1;
            } else {
                j.retries += 1;
            }
            tracing::warn!(
                job = api.0,
                attempt = attempt.0,
                cause = fault.name(),
                device = ?device,
                partitions = ?missing,
                retries = j.retries,
                rechecks = j.rechecks,
                "proving the unproven partitions again"
            );
            j.attempt = attempt;
            j.index_map = missing;
        }
        Ok(())
    }

    /// Why no job can run, when no device is in service.
    pub(super) fn no_device_reason(&self) -> Option<String> {
        if self.health.iter().any(|h| h.in_service()) {
            return None;
        }
        let why: Vec<String> = self.health.iter().enumerate().map(|(d, h)| format!("device {d}: {}", h.retired.clone().unwrap_or_default())).collect();
        Some(format!("no device in service ({})", why.join("; ")))
    }

    /// Records the fault a failed stage was, if it is one, on its job and its device.
    pub(super) fn stage_fault(&mut self, api: Option<(JobId, usize)>, device: Option<u32>, e: &WorkError) {
        let Some(mut fault) = classify(e) else { return };
        if matches!(e, WorkError::Backend(cuzk_core::backend::BackendError::Unavailable(_))) {
            fault = Fault::OutOfService;
        }
        let mut device = device;
        if let Some(j) = api.and_then(|(api, i)| self.jobs.get_mut(&api).map(|j| (j, i))).map(|(j, i)| {
            if fault == Fault::SelfCheck {
                // The wrong proof came from the device that ran the partition's MSM.
                device = j.devices.get(i).copied().flatten();
            }
            j
        }) {
            if j.fault.is_none() {
                j.fault = Some((fault, device));
            }
        }
        if fault == Fault::SelfCheck {
            self.self_check_failures += 1;
        }
        tracing::warn!(cause = fault.name(), device = ?device, error = %e, "stage fault");
        if let Some(d) = device {
            self.device_fault(d, fault);
        }
    }

    /// Counts a fault against device `d`; takes it out of service at the limit (the engine
    /// then places no more work there, drops its unused parameters and, once no device is
    /// left, fails the jobs that can no longer run).
    fn device_fault(&mut self, d: u32, fault: Fault) {
        let limit = self.cfg.recovery.device_fault_limit;
        let Some(h) = self.health.get_mut(d as usize) else { return };
        if !h.fault(fault, limit) {
            return;
        }
        tracing::error!(device = d, name = %self.worker.device_name(d as usize), why = ?h.retired, "device taken out of service until the daemon restarts");
        let now = self.now();
        if let Err(e) = self.engine.retire_device(DeviceId(d), now) {
            tracing::warn!(device = d, error = %e, "engine refused to retire the device");
        }
        if let Some(why) = self.no_device_reason() {
            tracing::error!("{why}: every live job fails");
        }
    }

    /// When the watchdog next looks at the running device stages.
    pub(super) fn watchdog_deadline(&self) -> Option<Instant> {
        let limit = self.cfg.recovery.stage_timeout?;
        self.running.values().filter(|r| matches!(r.location, Location::Device(_)) && !r.timed_out).map(|r| r.start + limit).min()
    }

    /// Device stages past the watchdog are device faults: their attempts end now (the stage
    /// still reports, and keeps its device slot and memory, until it returns).
    pub(super) fn watchdog(&mut self) {
        let Some(limit) = self.cfg.recovery.stage_timeout else { return };
        let now = Instant::now();
        let mut expired: Vec<(PartitionId, u32)> = Vec::new();
        for (p, r) in self.running.iter_mut() {
            if let (Location::Device(d), false) = (r.location, r.timed_out) {
                if r.start + limit <= now {
                    r.timed_out = true;
                    expired.push((*p, d.0));
                    tracing::error!(
                        job = p.job.0,
                        partition = p.index,
                        stage = r.stage.name(),
                        device = d.0,
                        limit_ms = limit.as_millis() as u64,
                        "stage past the watchdog: treated as a device fault"
                    );
                }
            }
        }
        expired.sort();
        for (p, d) in expired {
            self.device_fault(d, Fault::Watchdog);
            let Some((api, _)) = self.api_part(p) else { continue };
            let Some(j) = self.jobs.get_mut(&api) else { continue };
            if j.fault.is_none() {
                j.fault = Some((Fault::Watchdog, Some(d)));
            }
            let attempt = j.attempt;
            let t = self.now();
            let _ = self.engine.cancel(attempt, t);
            self.drain();
        }
        self.drain();
    }

    /// Publishes the final result of API job `job`, once: `why` replaces the reason of a
    /// failure (and turns a cancellation into one).
    pub(super) fn finish(&mut self, job: JobId, outcome: Outcome, why: Option<String>) {
        let Some(j) = self.jobs.remove(&job) else {
            return;
        };
        let outcome = match (outcome, why.is_some()) {
            (Outcome::Cancelled, true) => Outcome::Failed(JobFailure::DeadlineExceeded),
            (o, _) => o,
        };
        let queue_wait = self.engine.timeline().job(job).and_then(|r| r.queue_wait()).map_or(Duration::ZERO, |n| Duration::from_nanos(n.0));
        let total = j.submitted.elapsed();
        let mut res = JobResult {
            job_id: api_id(job, &j.req),
            status: FinalStatus::Completed,
            proof: Vec::new(),
            public_inputs: j.publics.iter().map(|p| scalar_bytes(p)).collect(),
            error: String::new(),
            queue_wait,
            srs_load: j.srs_load,
            synthesis: j.synth,
            gpu: j.gpu,
            total,
            interrupted: false,
        };
        match outcome {
            Outcome::Completed if j.proofs.iter().all(Option::is_some) => {
                if self.cfg.bench && j.req.filecoin.is_some() {
                    // Timing-only parameters: never hand these proofs out as if valid.
                    res.error = format!("{BENCH_MODE_NOTE} ({} partitions proved)", j.proofs.len());
                } else {
                    res.proof = j.proofs.iter().flatten().flat_map(|p| p.to_bytes()).collect();
                }
                self.counts.completed += 1;
                let name = self.registry.entry(j.circuit).map(|r| r.spec.id()).unwrap_or_default();
                self.latency.entry(j.circuit).or_insert_with(|| Histogram::new(name)).observe(total.as_secs_f64());
            }
            Outcome::Completed => {
                res.status = FinalStatus::Failed;
                res.error = "internal: a partition's proof is missing".into();
                self.counts.failed += 1;
            }
            Outcome::Failed(f) => {
                res.status = FinalStatus::Failed;
                res.error = match (why, f) {
                    (Some(why), _) => why,
                    (None, JobFailure::Stage { partition, stage, reason }) => format!("partition {} failed in {}: {reason}", partition.index, stage.name()),
                    (None, JobFailure::Params { reason, .. }) => format!("loading parameters failed: {reason}"),
                    (None, JobFailure::DeadlineExceeded) => "deadline exceeded".into(),
                    (None, JobFailure::NoDevice) => self.no_device_reason().unwrap_or_else(|| "no device in service".into()),
                    (None, JobFailure::DeviceRetired { partition, device }) => {
                        format!("partition {} was on device {} when it was taken out of service", partition.index, device.0)
                    }
                };
                self.counts.failed += 1;
            }
            Outcome::Cancelled => {
                res.status = FinalStatus::Cancelled;
                res.interrupted = self.draining.is_some();
                res.error = if res.interrupted { "cancelled: the daemon is shutting down".into() } else { "cancelled".into() };
                self.counts.cancelled += 1;
            }
        }
        let totals = self.kind_totals.entry(kind_name(j.req.kind)).or_default();
        match res.status {
            FinalStatus::Completed => {
                totals.completed += 1;
                totals.seconds += total.as_secs_f64();
            }
            FinalStatus::Failed => totals.failed += 1,
            FinalStatus::Cancelled => {}
        }
        tracing::info!(job = job.0, job_id = %res.job_id, status = ?res.status, total_ms = total.as_millis() as u64, error = %res.error, "job ended");
        if let Some(tx) = self.results.get(&job) {
            tx.send_replace(Some(Arc::new(res)));
        }
        self.ended.push_back((job, j.req.request_id));
        while self.ended.len() > self.cfg.keep_results.max(1) {
            if let Some((old, rid)) = self.ended.pop_front() {
                self.results.remove(&old);
                if self.request_ids.get(&rid).map(|e| e.0) == Some(old) {
                    self.request_ids.remove(&rid);
                    // The request id's count of payloads goes once none of its jobs is known.
                    let base = rid.split('#').next().unwrap_or(&rid).to_string();
                    let seen = self.payloads.get(&base).copied().unwrap_or(0);
                    if !(1..=seen).any(|n| self.request_ids.contains_key(&super::payload_job_id(&base, n))) {
                        self.payloads.remove(&base);
                    }
                }
            }
        }
    }
}

/// What the last fault of an attempt was, for the job's error.
fn describe(f: Fault, device: Option<u32>, outcome: &Outcome) -> String {
    let on = device.map(|d| format!(" on device {d}")).unwrap_or_default();
    match (f, outcome) {
        (Fault::Watchdog, _) => format!("a device stage{on} ran past the watchdog"),
        (_, Outcome::Failed(JobFailure::Stage { stage, reason, .. })) => format!("{} failed{on}: {reason}", stage.name()),
        (f, _) => format!("{}{on}", f.name()),
    }
}
