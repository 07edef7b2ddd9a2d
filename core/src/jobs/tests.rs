//! The job layer driven by its simulator: every accepted job ends once per acceptance, no
//! corrupted proof goes out when proofs are checked, retries stay within their bounds,
//! failing devices leave service, request ids never join another payload, low memory holds
//! synthesis back, and a restart takes every unfinished job up again.

use proptest::prelude::*;

use super::sim::{JobSim, Mishaps, Record, Request, Scenario};
use super::*;
use crate::engine::sim::Dur;

const MS: u64 = 1_000_000;

fn stages() -> [Dur; 5] {
    let d = |ms: u64| Dur::spread(Nanos(ms * MS), Nanos(ms * MS / 2));
    [d(20), d(5), d(10), d(30), d(3)]
}

fn config() -> JobsConfig {
    JobsConfig {
        recovery: Recovery { retries: 3, rechecks: 1, stage_timeout: Some(Nanos::from_secs(5)), device_fault_limit: 3 },
        queue_limit: 1_000,
        memory_margin: 0,
        keep_results: 1_000,
    }
}

fn request(at_ms: u64, request_id: &str, payload: u8, priority: Priority, partitions: u32) -> Request {
    Request { at: Nanos(at_ms * MS), request_id: request_id.into(), payload, priority, partitions, check: true, cancel_at: None }
}

fn scenario(devices: u32, requests: Vec<Request>) -> Scenario {
    Scenario { devices, config: config(), stages: stages(), mishaps: Mishaps::default(), requests, memory: Vec::new(), crashes: Vec::new(), seed: 1 }
}

const LIMIT: Nanos = Nanos::from_secs(100_000);

/// The promises every run must keep.
fn audit(s: &Scenario, r: &Record) -> Result<(), String> {
    if let Some(v) = r.violations.first() {
        return Err(format!("{} violations, first: {v}", r.violations.len()));
    }
    for (id, n) in &r.accepted {
        let ends = r.ends.get(id).map_or(0, Vec::len);
        if ends != *n as usize {
            return Err(format!("{id}: accepted {n} times, ended {ends} times"));
        }
    }
    for id in r.ends.keys() {
        if !r.accepted.contains_key(id) {
            return Err(format!("{id} ended without being accepted"));
        }
    }
    if s.requests.iter().all(|q| q.check) && !r.wrong_proofs.is_empty() {
        return Err(format!("corrupted proofs returned as completed: {:?}", r.wrong_proofs));
    }
    for ((_, job), (faults, rechecks)) in &r.attempts {
        if *faults > s.config.recovery.retries || *rechecks > s.config.recovery.rechecks {
            return Err(format!("job {job:?}: {faults} retries, {rechecks} re-proofs"));
        }
    }
    if r.starts_on_retired > 0 {
        return Err(format!("{} stages started on a retired device", r.starts_on_retired));
    }
    if r.starts_while_low > 0 {
        return Err(format!("{} syntheses started while memory was low", r.starts_while_low));
    }
    let mut seen = std::collections::BTreeSet::new();
    for (epoch, d, _) in &r.retired {
        if !seen.insert((*epoch, *d)) {
            return Err(format!("device {d} retired twice"));
        }
    }
    Ok(())
}

fn completed(r: &Record, id: &str) -> bool {
    r.ends.get(id).and_then(|e| e.last()).is_some_and(|e| e.0 == EndStatus::Completed)
}

#[test]
fn a_clean_run_completes_every_job() {
    let reqs = (0..6).map(|i| request(i * 7, "", 0, Priority::Normal, 1 + (i as u32 % 3))).collect();
    let s = scenario(1, reqs);
    let r = JobSim::new(s.clone()).run(LIMIT);
    audit(&s, &r).unwrap();
    assert_eq!(r.ends.len(), 6);
    assert!(r.ends.values().all(|e| e.len() == 1 && e[0].0 == EndStatus::Completed));
    assert!(r.retries.is_empty());
    // Each job's stage time as the job layer sums it is what the simulator's stages took.
    assert_eq!(r.stage_time.len(), 6);
    for (id, [reported, timed]) in &r.stage_time {
        assert!(timed.0 > Nanos::ZERO && timed.1 > Nanos::ZERO, "{id}: no stage timed");
        assert_eq!(reported, timed, "{id}: (synthesis, gpu) reported against timed");
    }
}

#[test]
fn corrupted_proofs_are_proved_again_when_checked_and_escape_when_not() {
    let mut s = scenario(2, (0..10).map(|i| request(i * 5, "", 0, Priority::Normal, 2)).collect());
    s.mishaps.corrupt_ppm = 300_000;
    let r = JobSim::new(s.clone()).run(LIMIT);
    audit(&s, &r).unwrap();
    assert!(r.retries.get(&Fault::SelfCheck).copied().unwrap_or(0) > 0, "no corruption was caught: {r:?}");
    assert!(r.wrong_proofs.is_empty());
    // The same run without the check: the simulator sees the wrong proofs go out.
    for q in &mut s.requests {
        q.check = false;
    }
    let r = JobSim::new(s.clone()).run(LIMIT);
    assert!(!r.wrong_proofs.is_empty(), "the corruption model never produced a wrong proof");
}

#[test]
fn a_broken_device_leaves_service_after_the_limit_and_its_work_moves() {
    let mut s = scenario(2, (0..8).map(|i| request(i * 3, "", 0, Priority::Normal, 2)).collect());
    s.mishaps.broken_device = Some((1, Nanos::ZERO));
    let r = JobSim::new(s.clone()).run(LIMIT);
    audit(&s, &r).unwrap();
    assert_eq!(r.retired.iter().map(|x| x.1).collect::<Vec<_>>(), vec![1], "device 1 retired once");
    assert!(r.faults_seen >= u64::from(s.config.recovery.device_fault_limit), "retired at the limit of consecutive faults");
    assert!(r.ends.values().all(|e| e[0].0 == EndStatus::Completed), "{:?}", r.ends);
}

#[test]
fn a_retry_avoids_the_device_that_failed() {
    // Device 1 fails every stage and is never retired: each job that met it there is proved
    // again on device 0.
    let mut s = scenario(2, (0..8).map(|i| request(i * 3, "", 0, Priority::Normal, 2)).collect());
    s.mishaps.broken_device = Some((1, Nanos::ZERO));
    s.config.recovery.device_fault_limit = 0;
    s.config.recovery.retries = 1;
    let r = JobSim::new(s.clone()).run(LIMIT);
    audit(&s, &r).unwrap();
    assert!(r.retries.get(&Fault::Device).copied().unwrap_or(0) > 0, "device 1 was never used: {:?}", r.retries);
    assert!(r.ends.values().all(|e| e[0].0 == EndStatus::Completed), "{:?}", r.ends);
}

#[test]
fn with_every_device_broken_jobs_fail_and_new_ones_are_refused() {
    let mut s = scenario(1, (0..3).map(|i| request(i, "", 0, Priority::Normal, 1)).collect());
    s.requests.push(request(60_000, "", 0, Priority::Normal, 1));
    s.mishaps.broken_device = Some((0, Nanos::ZERO));
    let r = JobSim::new(s.clone()).run(LIMIT);
    audit(&s, &r).unwrap();
    assert!(r.ends.values().all(|e| e[0].0 == EndStatus::Failed));
    assert!(r.answers[3].as_ref().is_err_and(|e| e.contains("no device in service")), "{:?}", r.answers[3]);
}

#[test]
fn a_hung_device_stage_is_a_fault_after_the_watchdog() {
    let mut s = scenario(3, (0..6).map(|i| request(i, "", 0, Priority::Normal, 1)).collect());
    s.mishaps.hang_ppm = 100_000;
    s.config.recovery.device_fault_limit = 0;
    let r = JobSim::new(s.clone()).run(LIMIT);
    audit(&s, &r).unwrap();
    assert!(r.retries.get(&Fault::Watchdog).copied().unwrap_or(0) > 0, "{:?}", r.retries);
    // A job whose stage hung completed long before that stage returned: another attempt did it.
    let rescued = r.retried.iter().filter(|(_, f)| f.contains(&Fault::Watchdog)).any(|(id, _)| r.ends[id][0].1 < Nanos::from_secs(1_000) && completed(&r, id));
    assert!(rescued, "{:?} {:?}", r.retried, r.ends);
}

#[test]
fn request_ids_join_the_same_payload_and_number_another() {
    let reqs = vec![
        request(0, "r", 1, Priority::Normal, 2),
        request(1, "r", 1, Priority::Normal, 2),      // joins r while it runs
        request(2, "r", 2, Priority::Normal, 2),      // another payload: r#2
        request(50_000, "r", 1, Priority::Normal, 2), // joins the completed r
        request(50_001, "r", 3, Priority::Normal, 2), // r#3
        request(60_001, "r", 4, Priority::Normal, 2), // after a restart: r#4, never r
    ];
    let mut s = scenario(1, reqs);
    s.crashes = vec![Nanos::from_secs(55)];
    let r = JobSim::new(s.clone()).run(LIMIT);
    audit(&s, &r).unwrap();
    let ids: Vec<_> = r.answers.iter().map(|a| a.clone().unwrap()).collect();
    assert_eq!(
        ids,
        vec![("r".into(), false), ("r".into(), true), ("r#2".into(), false), ("r".into(), true), ("r#3".into(), false), ("r#4".into(), false)],
        "{:?}",
        r.answers
    );
    assert_eq!(r.payload_of["r#2"], 2);
}

#[test]
fn a_failed_job_is_proved_again_under_its_request_id() {
    // Device 0 fails every stage (and is never retired): the first job fails after its
    // retries, and the same request id and payload a second later is a job again.
    let mut s = scenario(1, vec![request(0, "r", 1, Priority::Normal, 1), request(1_000, "r", 1, Priority::Normal, 1)]);
    s.mishaps.broken_device = Some((0, Nanos::ZERO));
    s.config.recovery.device_fault_limit = 0;
    let r = JobSim::new(s.clone()).run(LIMIT);
    audit(&s, &r).unwrap();
    assert_eq!(r.accepted["r"], 2, "{:?}", r.answers);
    assert_eq!(r.ends["r"].iter().map(|e| e.0).collect::<Vec<_>>(), vec![EndStatus::Failed, EndStatus::Failed]);
    assert_eq!(r.attempts.values().map(|a| a.0).max(), Some(s.config.recovery.retries));
}

#[test]
fn low_memory_holds_normal_synthesis_until_it_returns() {
    let mut s = scenario(1, (0..4).map(|i| request(10 + i, "", 0, Priority::Normal, 2)).collect());
    s.config.memory_margin = 4 * (1 << 30);
    s.memory = vec![(Nanos::ZERO, 1 << 30), (Nanos::from_secs(3), 64 << 30)];
    let r = JobSim::new(s.clone()).run(LIMIT);
    audit(&s, &r).unwrap();
    assert!(r.ends.values().all(|e| e[0].0 == EndStatus::Completed && e[0].1 > Nanos::from_secs(3)), "{:?}", r.ends);
}

#[test]
fn a_critical_job_is_not_held_by_low_memory() {
    let mut s = scenario(1, vec![request(0, "n", 1, Priority::Normal, 1), request(100, "c", 2, Priority::Critical, 1)]);
    s.config.memory_margin = 4 * (1 << 30);
    s.memory = vec![(Nanos::ZERO, 1 << 30), (Nanos::from_secs(30), 64 << 30)];
    let r = JobSim::new(s.clone()).run(LIMIT);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert!(r.ends["c"][0].1 < Nanos::from_secs(30), "{:?}", r.ends);
    assert!(completed(&r, "n"));
}

#[test]
fn a_crash_takes_every_unfinished_job_up_again() {
    let mut s = scenario(2, (0..8).map(|i| request(i * 10, &format!("q{i}"), i as u8, Priority::Normal, 3)).collect());
    s.crashes = vec![Nanos(60 * MS), Nanos(150 * MS)];
    let r = JobSim::new(s.clone()).run(LIMIT);
    audit(&s, &r).unwrap();
    assert_eq!(r.restarts, 2);
    for i in 0..8 {
        assert!(completed(&r, &format!("q{i}")), "q{i}: {:?}", r.ends.get(&format!("q{i}")));
    }
}

fn priority() -> impl Strategy<Value = Priority> {
    prop_oneof![Just(Priority::Low), Just(Priority::Normal), Just(Priority::High), Just(Priority::Critical)]
}

fn requests() -> impl Strategy<Value = Vec<Request>> {
    let one = (0u64..400, prop_oneof![Just(""), Just("a"), Just("b")], 0u8..3, priority(), 1u32..4, prop::option::weighted(0.1, 0u64..400));
    prop::collection::vec(one, 1..14).prop_map(|v| {
        v.into_iter()
            .map(|(at, rid, payload, priority, partitions, cancel)| Request {
                at: Nanos(at * MS),
                request_id: rid.into(),
                payload,
                priority,
                partitions,
                check: true,
                cancel_at: cancel.map(|c| Nanos((at + c) * MS)),
            })
            .collect()
    })
}

fn scenarios() -> impl Strategy<Value = Scenario> {
    (
        1u32..4,
        requests(),
        (0u32..150_000, 0u32..150_000, 0u32..30_000),
        prop::option::weighted(0.3, (0u32..3, 0u64..300)),
        prop::collection::vec(0u64..600, 0..3),
        prop::option::weighted(0.3, (0u64..200, 1u64..400)),
        (0u32..4, 0u32..3, 0u32..4),
        any::<u64>(),
    )
        .prop_map(|(devices, requests, (device_error_ppm, corrupt_ppm, hang_ppm), broken, crashes, low, (retries, rechecks, limit), seed)| {
            let mut s = scenario(devices, requests);
            s.mishaps = Mishaps { device_error_ppm, corrupt_ppm, hang_ppm, broken_device: broken.map(|(d, t)| (d % devices, Nanos(t * MS))) };
            s.crashes = crashes.into_iter().map(|t| Nanos(t * MS)).collect();
            if let Some((from, len)) = low {
                s.config.memory_margin = 4 << 30;
                s.memory = vec![(Nanos(from * MS), 1 << 30), (Nanos((from + len) * MS), 64 << 30)];
            }
            s.config.recovery = Recovery { retries, rechecks, stage_timeout: Some(Nanos::from_secs(5)), device_fault_limit: limit };
            s.seed = seed;
            s
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn the_job_layer_keeps_its_promises_under_faults_joins_low_memory_and_crashes(s in scenarios()) {
        let r = JobSim::new(s.clone()).run(LIMIT);
        if let Err(e) = audit(&s, &r) {
            return Err(TestCaseError::fail(format!("{e}\n{r:?}")));
        }
        // With every device in service and no faults, every job a caller did not cancel
        // completes.
        let clean = s.mishaps == Mishaps::default();
        let cancelled: Vec<&str> = s.requests.iter().zip(&r.answers).filter(|(q, _)| q.cancel_at.is_some()).filter_map(|(_, a)| a.as_ref().ok().map(|a| a.0.as_str())).collect();
        for (i, _) in s.requests.iter().enumerate() {
            if let (true, Ok((id, _))) = (clean, &r.answers[i]) {
                if cancelled.contains(&id.as_str()) {
                    continue;
                }
                prop_assert!(r.ends.get(id).is_some_and(|e| e.iter().any(|e| e.0 == EndStatus::Completed)), "{id}: {:?}", r.ends.get(id));
            }
        }
    }
}
