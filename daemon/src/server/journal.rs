//! The journal: every accepted job is on disk before its caller hears it was accepted, and its
//! result after it ends, so a daemon started after a crash, a `kill -9` or an upgrade takes the
//! open jobs up again and still answers AwaitProof for the ended ones.
//!
//! One file per job, written whole to a temporary name, synced and renamed into place (a torn
//! write leaves only a temporary file, removed at the next start): `open/<name>` holds the
//! request as the client encoded it, `ended/<name>` the result; `<name>` is a digest of the job
//! id. Each file carries its length and a SHA-256 of its contents: a damaged one is reported
//! and removed. Ended records are kept for the retention time and at most `keep` of them.

use std::collections::{BTreeSet, HashMap};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use prost::Message;
use sha2::{Digest, Sha256};

use crate::proto;

/// The first bytes of every journal file.
const MAGIC: &[u8; 8] = b"cuzkjnl1";

/// Why the journal could not be opened or written.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// A file operation failed.
    #[error("journal: {what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// Another daemon holds the journal.
    #[error("journal {0} is in use by another daemon: give each daemon its own ([journal] dir)")]
    InUse(PathBuf),
}

fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> JournalError {
    let what = what.into();
    move |source| JournalError::Io { what, source }
}

/// A job's record: its id, when it was written, its payload's digest, and either the request
/// (an open job) or the result (an ended one).
#[derive(Clone, PartialEq, Message)]
struct Record {
    #[prost(string, tag = "1")]
    job_id: String,
    #[prost(uint64, tag = "2")]
    at_ms: u64,
    #[prost(bytes = "vec", tag = "3")]
    digest: Vec<u8>,
    #[prost(message, optional, tag = "4")]
    result: Option<proto::AwaitProofResponse>,
}

/// A job accepted by an earlier run and not ended: to be taken up again.
#[derive(Debug, Clone)]
pub struct OpenJob {
    /// The job id it was given.
    pub job_id: String,
    /// The request as its client sent it.
    pub request: proto::SubmitProofRequest,
    /// When it was accepted, ms since the Unix epoch.
    pub accepted_ms: u64,
}

/// The journal's state for the status page and `/metrics`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct JournalStatus {
    /// Jobs accepted and not ended.
    pub open: u64,
    /// Ended jobs whose results are kept.
    pub ended: u64,
    /// Bytes of both on disk.
    pub bytes: u64,
    /// Writes that failed since the start.
    pub write_errors: u64,
    /// Damaged files found (and removed) at the start.
    pub damaged: u64,
}

#[derive(Debug, Clone)]
struct Ended {
    at_ms: u64,
    bytes: u64,
    digest: [u8; 32],
    completed: bool,
}

#[derive(Debug, Default)]
struct State {
    /// Open jobs and their files' sizes.
    open: HashMap<String, u64>,
    ended: HashMap<String, Ended>,
    /// Ended jobs, oldest first.
    order: BTreeSet<(u64, String)>,
    write_errors: u64,
    damaged: u64,
    tmp_seq: u64,
}

/// The journal of a daemon.
#[derive(Debug)]
pub struct Journal {
    dir: PathBuf,
    retention: Duration,
    keep: usize,
    state: Mutex<State>,
    _lock: File,
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// A job id's file name.
fn file_name(job_id: &str) -> String {
    hex::encode(&Sha256::digest(job_id.as_bytes())[..20])
}

/// Writes `parts` to `dir/name` so that the file is either absent or whole: a temporary file,
/// synced, renamed, and the directory synced.
fn write_whole(dir: &Path, name: &str, seq: u64, parts: &[&[u8]]) -> io::Result<u64> {
    let tmp = dir.join(format!(".{name}.{}.{seq}.tmp", std::process::id()));
    let result = (|| {
        let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        let mut n = 0u64;
        for p in parts {
            f.write_all(p)?;
            n += p.len() as u64;
        }
        f.sync_all()?;
        fs::rename(&tmp, dir.join(name))?;
        File::open(dir)?.sync_all()?;
        Ok(n)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// A file's parts: magic, record length, record, request length, request, SHA-256 of both.
fn frame(record: &[u8], request: &[u8]) -> ([u8; 16], [u8; 8], [u8; 32]) {
    let mut head = [0u8; 16];
    head[..8].copy_from_slice(MAGIC);
    head[8..].copy_from_slice(&(record.len() as u64).to_le_bytes());
    let req_len = (request.len() as u64).to_le_bytes();
    let mut h = Sha256::new();
    h.update(record);
    h.update(request);
    (head, req_len, h.finalize().into())
}

/// Reads a journal file back: its record and its request bytes, or why it is damaged.
fn read_file(path: &Path) -> Result<(Record, Vec<u8>), String> {
    let mut f = File::open(path).map_err(|e| e.to_string())?;
    let size = f.metadata().map_err(|e| e.to_string())?.len();
    let mut head = [0u8; 16];
    f.read_exact(&mut head).map_err(|_| format!("{size} bytes: shorter than its header"))?;
    if &head[..8] != MAGIC {
        return Err("not a journal file (wrong magic)".into());
    }
    let rec_len = u64::from_le_bytes(head[8..].try_into().unwrap_or_default());
    if rec_len > size {
        return Err(format!("{size} bytes: its record claims {rec_len}"));
    }
    let mut record = vec![0u8; rec_len as usize];
    f.read_exact(&mut record).map_err(|_| "cut short in its record".to_string())?;
    let mut len = [0u8; 8];
    f.read_exact(&mut len).map_err(|_| "cut short before its request".to_string())?;
    let req_len = u64::from_le_bytes(len);
    if 16 + rec_len + 8 + req_len + 32 != size {
        return Err(format!("{size} bytes: its lengths say {}", 16 + rec_len + 8 + req_len + 32));
    }
    let mut request = vec![0u8; req_len as usize];
    f.read_exact(&mut request).map_err(|_| "cut short in its request".to_string())?;
    let mut sum = [0u8; 32];
    f.read_exact(&mut sum).map_err(|_| "cut short in its checksum".to_string())?;
    let (_, _, want) = frame(&record, &request);
    if sum != want {
        return Err("its checksum does not match its contents".into());
    }
    let record = Record::decode(record.as_slice()).map_err(|e| format!("its record does not decode: {e}"))?;
    Ok((record, request))
}

fn private_dir(path: &Path) -> Result<(), JournalError> {
    fs::DirBuilder::new().recursive(true).mode(0o700).create(path).map_err(io_err(format!("creating {}", path.display())))?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o700)).map_err(io_err(format!("chmod 700 {}", path.display())))
}

impl Journal {
    /// Opens (or creates) the journal in `dir`, held by this process alone; returns it with
    /// the open jobs of earlier runs, oldest first. Temporary files of torn writes are removed,
    /// as are damaged files (each reported), and ended records past `retention` or beyond the
    /// newest `keep`.
    pub fn open(dir: &Path, retention: Duration, keep: usize) -> Result<(Journal, Vec<OpenJob>), JournalError> {
        private_dir(dir)?;
        let lock_path = dir.join("lock");
        let lock = OpenOptions::new().create(true).truncate(false).write(true).open(&lock_path).map_err(io_err(format!("opening {}", lock_path.display())))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => return Err(JournalError::InUse(dir.into())),
            Err(fs::TryLockError::Error(e)) => return Err(io_err(format!("locking {}", lock_path.display()))(e)),
        }
        let (open_dir, ended_dir) = (dir.join("open"), dir.join("ended"));
        private_dir(&open_dir)?;
        private_dir(&ended_dir)?;
        let mut state = State::default();
        let mut found = Vec::new();
        for (sub, is_open) in [(&ended_dir, false), (&open_dir, true)] {
            for entry in fs::read_dir(sub).map_err(io_err(format!("reading {}", sub.display())))? {
                let entry = entry.map_err(io_err(format!("reading {}", sub.display())))?;
                let path = entry.path();
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.ends_with(".tmp") {
                    tracing::warn!(file = %path.display(), "journal: removing the temporary file of a write that did not finish");
                    let _ = fs::remove_file(&path);
                    continue;
                }
                match read_file(&path) {
                    Ok((rec, request)) if file_name(&rec.job_id) == name => found.push((is_open, path, rec, request)),
                    Ok((rec, _)) => {
                        state.damaged += 1;
                        tracing::error!(file = %path.display(), job_id = %rec.job_id.escape_debug(), "journal: a record under another job's name: removed");
                        let _ = fs::remove_file(&path);
                    }
                    Err(why) => {
                        state.damaged += 1;
                        tracing::error!(file = %path.display(), why = %why, "journal: damaged file removed");
                        let _ = fs::remove_file(&path);
                    }
                }
            }
        }
        let mut open = Vec::new();
        for (is_open, path, rec, request) in found {
            let bytes = fs::metadata(&path).map_or(0, |m| m.len());
            if !is_open {
                let digest = rec.digest.as_slice().try_into().unwrap_or([0; 32]);
                let completed = rec.result.as_ref().is_some_and(|r| r.status == proto::await_proof_response::Status::Completed as i32);
                state.order.insert((rec.at_ms, rec.job_id.clone()));
                state.ended.insert(rec.job_id, Ended { at_ms: rec.at_ms, bytes, digest, completed });
                continue;
            }
            if state.ended.contains_key(&rec.job_id) {
                // It ended and the daemon stopped before its open record was removed.
                let _ = fs::remove_file(&path);
                continue;
            }
            match proto::SubmitProofRequest::decode(request.as_slice()) {
                Ok(request) => {
                    state.open.insert(rec.job_id.clone(), bytes);
                    open.push(OpenJob { job_id: rec.job_id, request, accepted_ms: rec.at_ms });
                }
                Err(e) => {
                    state.damaged += 1;
                    tracing::error!(file = %path.display(), error = %e, "journal: an open job's request does not decode: removed");
                    let _ = fs::remove_file(&path);
                }
            }
        }
        open.sort_by(|a, b| (a.accepted_ms, &a.job_id).cmp(&(b.accepted_ms, &b.job_id)));
        let j = Journal { dir: dir.into(), retention, keep: keep.max(1), state: Mutex::new(state), _lock: lock };
        j.prune(now_ms());
        Ok((j, open))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The first job number no earlier run gave out.
    pub fn next_job_number(&self) -> u64 {
        let s = self.state();
        s.open.keys().chain(s.ended.keys()).filter_map(|id| id.parse::<u64>().ok()).max().map_or(0, |n| n + 1)
    }

    /// The job ids of the ended records, with their payloads' digests.
    pub fn ended_ids(&self) -> Vec<(String, [u8; 32])> {
        self.state().ended.iter().map(|(id, e)| (id.clone(), e.digest)).collect()
    }

    /// Whether `job_id` has an open record.
    pub fn is_open(&self, job_id: &str) -> bool {
        self.state().open.contains_key(job_id)
    }

    /// Records an accepted job: `request` is the request as its client encoded it. Blocking.
    pub fn accepted(&self, job_id: &str, digest: [u8; 32], request: &[u8]) -> Result<(), JournalError> {
        let rec = Record { job_id: job_id.into(), at_ms: now_ms(), digest: digest.to_vec(), result: None }.encode_to_vec();
        let seq = self.next_seq();
        let (head, req_len, sum) = frame(&rec, request);
        let r = write_whole(&self.dir.join("open"), &file_name(job_id), seq, &[&head, &rec, &req_len, request, &sum]);
        let mut s = self.state();
        match r {
            Ok(bytes) => {
                s.open.insert(job_id.into(), bytes);
                Ok(())
            }
            Err(e) => {
                s.write_errors += 1;
                Err(io_err(format!("recording job {}", job_id.escape_debug()))(e))
            }
        }
    }

    /// Records a job's end (its open record goes). Blocking.
    pub fn ended(&self, job_id: &str, digest: [u8; 32], result: &proto::AwaitProofResponse) -> Result<(), JournalError> {
        let at_ms = now_ms();
        let completed = result.status == proto::await_proof_response::Status::Completed as i32;
        let rec = Record { job_id: job_id.into(), at_ms, digest: digest.to_vec(), result: Some(result.clone()) }.encode_to_vec();
        let seq = self.next_seq();
        let (head, req_len, sum) = frame(&rec, &[]);
        let name = file_name(job_id);
        let r = write_whole(&self.dir.join("ended"), &name, seq, &[&head, &rec, &req_len, &sum]);
        let bytes = match r {
            Ok(b) => b,
            Err(e) => {
                self.state().write_errors += 1;
                return Err(io_err(format!("recording the end of job {}", job_id.escape_debug()))(e));
            }
        };
        let _ = fs::remove_file(self.dir.join("open").join(&name));
        {
            let mut s = self.state();
            s.open.remove(job_id);
            if let Some(old) = s.ended.insert(job_id.into(), Ended { at_ms, bytes, digest, completed }) {
                s.order.remove(&(old.at_ms, job_id.to_string()));
            }
            s.order.insert((at_ms, job_id.into()));
        }
        self.prune(at_ms);
        Ok(())
    }

    /// Removes ended records past the retention time or beyond the newest `keep`.
    fn prune(&self, now: u64) {
        let horizon = now.saturating_sub(self.retention.as_millis() as u64);
        let mut s = self.state();
        while let Some((at, id)) = s.order.first().cloned() {
            if at >= horizon && s.order.len() <= self.keep {
                break;
            }
            s.order.pop_first();
            s.ended.remove(&id);
            let _ = fs::remove_file(self.dir.join("ended").join(file_name(&id)));
        }
    }

    fn next_seq(&self) -> u64 {
        let mut s = self.state();
        s.tmp_seq += 1;
        s.tmp_seq
    }

    /// The result of an ended job, read from its record.
    pub fn result(&self, job_id: &str) -> Option<proto::AwaitProofResponse> {
        if !self.state().ended.contains_key(job_id) {
            return None;
        }
        match read_file(&self.dir.join("ended").join(file_name(job_id))) {
            Ok((rec, _)) if rec.job_id == job_id => rec.result,
            Ok(_) => None,
            Err(why) => {
                tracing::error!(job_id = %job_id.escape_debug(), why = %why, "journal: an ended job's record cannot be read");
                None
            }
        }
    }

    /// The result of `job_id` if it completed with the payload of `digest`.
    pub fn completed(&self, job_id: &str, digest: [u8; 32]) -> Option<proto::AwaitProofResponse> {
        let same = self.state().ended.get(job_id).is_some_and(|e| e.completed && e.digest == digest);
        if same {
            self.result(job_id)
        } else {
            None
        }
    }

    /// Its state.
    pub fn status(&self) -> JournalStatus {
        let s = self.state();
        JournalStatus {
            open: s.open.len() as u64,
            ended: s.ended.len() as u64,
            bytes: s.open.values().sum::<u64>() + s.ended.values().map(|e| e.bytes).sum::<u64>(),
            write_errors: s.write_errors,
            damaged: s.damaged,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(seed: u64) -> proto::SubmitProofRequest {
        proto::SubmitProofRequest {
            request_id: format!("r-{seed}"),
            proof_kind: proto::ProofKind::Generic as i32,
            generic: Some(proto::GenericJob { circuit: "squaring-chain".into(), log_size: 4, seed, partitions: 1 }),
            ..Default::default()
        }
    }

    fn completed(job_id: &str) -> proto::AwaitProofResponse {
        proto::AwaitProofResponse {
            job_id: job_id.into(),
            status: proto::await_proof_response::Status::Completed as i32,
            proof: vec![7; 192],
            ..Default::default()
        }
    }

    const DAY: Duration = Duration::from_secs(86_400);

    #[test]
    fn open_jobs_and_results_survive_a_reopen() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("journal");
        {
            let (j, open) = Journal::open(&dir, DAY, 100).unwrap();
            assert!(open.is_empty());
            for (id, seed) in [("r-1", 1), ("17", 2), ("r-3", 3)] {
                j.accepted(id, [seed as u8; 32], &request(seed).encode_to_vec()).unwrap();
            }
            j.ended("r-3", [3; 32], &completed("r-3")).unwrap();
            // A second daemon on the same journal is refused.
            assert!(matches!(Journal::open(&dir, DAY, 100), Err(JournalError::InUse(_))));
        }
        let (j, open) = Journal::open(&dir, DAY, 100).unwrap();
        let ids: Vec<_> = open.iter().map(|o| o.job_id.as_str()).collect();
        assert_eq!(ids.len(), 2);
        assert!(ids.contains(&"r-1") && ids.contains(&"17"));
        let o = open.iter().find(|o| o.job_id == "r-1").unwrap();
        assert_eq!(o.request, request(1));
        assert_eq!(j.result("r-3"), Some(completed("r-3")));
        assert_eq!(j.completed("r-3", [3; 32]), Some(completed("r-3")));
        assert_eq!(j.completed("r-3", [4; 32]), None, "another payload");
        assert_eq!(j.next_job_number(), 18);
        let s = j.status();
        assert_eq!((s.open, s.ended, s.damaged), (2, 1, 0));
        assert!(s.bytes > 0);
        assert_eq!(fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
    }

    #[test]
    fn torn_and_damaged_files_are_removed_and_the_rest_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("journal");
        {
            let (j, _) = Journal::open(&dir, DAY, 100).unwrap();
            for (id, seed) in [("a", 1), ("b", 2), ("c", 3)] {
                j.accepted(id, [seed as u8; 32], &request(seed).encode_to_vec()).unwrap();
            }
        }
        let open = dir.join("open");
        // A torn write: the temporary file of a write cut short.
        fs::write(open.join(format!(".{}.1.1.tmp", file_name("d"))), b"cuzkjnl1\x10").unwrap();
        // One file cut short, one with a byte changed.
        let b = open.join(file_name("b"));
        let bytes = fs::read(&b).unwrap();
        fs::write(&b, &bytes[..bytes.len() - 5]).unwrap();
        let c = open.join(file_name("c"));
        let mut bytes = fs::read(&c).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 1;
        fs::write(&c, &bytes).unwrap();
        let (j, open_jobs) = Journal::open(&dir, DAY, 100).unwrap();
        assert_eq!(open_jobs.iter().map(|o| o.job_id.as_str()).collect::<Vec<_>>(), ["a"]);
        assert_eq!(j.status().damaged, 2);
        assert_eq!(fs::read_dir(&open).unwrap().count(), 1, "the temporary and damaged files are gone");
    }

    #[test]
    fn ended_records_are_pruned_by_count_and_age() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("journal");
        let (j, _) = Journal::open(&dir, DAY, 3).unwrap();
        for i in 0..5 {
            let id = format!("r-{i}");
            j.accepted(&id, [0; 32], &request(i).encode_to_vec()).unwrap();
            j.ended(&id, [0; 32], &completed(&id)).unwrap();
        }
        assert_eq!(j.status().ended, 3);
        assert!(j.result("r-1").is_none() && j.result("r-4").is_some());
        assert_eq!(fs::read_dir(dir.join("ended")).unwrap().count(), 3);
        assert_eq!(fs::read_dir(dir.join("open")).unwrap().count(), 0);
        drop(j);
        // Past the retention time, nothing is kept.
        let (j, _) = Journal::open(&dir, Duration::ZERO, 3).unwrap();
        std::thread::sleep(Duration::from_millis(5));
        j.prune(now_ms());
        assert_eq!(j.status().ended, 0);
    }
}
