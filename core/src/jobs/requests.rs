//! Job ids as the API names them, and request ids: a caller's idempotency key joins the job
//! of the same payload; another payload under a used request id is a job of its own.

use std::collections::HashMap;

use crate::engine::JobId;

/// Longest accepted request id.
pub const MAX_REQUEST_ID: usize = 256;

/// A job as the API names it: the daemon's own number, or the request id it was submitted
/// under (the newest job of that id).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum JobRef {
    /// The daemon's job number.
    Id(JobId),
    /// A request id.
    Request(String),
}

impl JobRef {
    /// Parses an API job id: a decimal number is the daemon's own id, anything else a request
    /// id (request ids may not be bare numbers).
    pub fn parse(s: &str) -> Result<JobRef, BadJobRef> {
        let s = s.trim();
        if s.is_empty() {
            return Err(BadJobRef("job_id is empty: pass the id SubmitProof returned, or the request id".into()));
        }
        if s.bytes().all(|b| b.is_ascii_digit()) {
            return s.parse::<u64>().map(|n| JobRef::Id(JobId(n))).map_err(|_| BadJobRef(format!("job_id {s:?} is out of range")));
        }
        if s.len() > MAX_REQUEST_ID {
            return Err(BadJobRef(format!("job_id longer than {MAX_REQUEST_ID} bytes")));
        }
        Ok(JobRef::Request(s.to_string()))
    }
}

impl std::fmt::Display for JobRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JobRef::Id(j) => write!(f, "{}", j.0),
            JobRef::Request(r) => f.write_str(r),
        }
    }
}

/// An API job id that names no job.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadJobRef(pub String);

/// The job id of a request id's `n`-th payload (from 1): the request id itself, then `<id>#n`.
pub fn payload_job_id(request_id: &str, n: u32) -> String {
    if n <= 1 {
        request_id.to_string()
    } else {
        format!("{request_id}#{n}")
    }
}

/// What a request id and payload name among the jobs known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Named {
    /// A job of the same payload, under this job id (`None`: one an earlier run ended).
    Same(String, Option<JobId>),
    /// A payload not seen under the request id: its job id and its number.
    New(String, u32),
}

/// The jobs each request id names.
#[derive(Debug, Default)]
pub(crate) struct RequestBook {
    /// Per job id of a request (the request id for its first payload, `<id>#n` for its n-th),
    /// the newest job of that payload (`None`: one an earlier run ended) and the payload's
    /// digest.
    ids: HashMap<String, (Option<JobId>, [u8; 32])>,
    /// Per request id, how many payloads it has named.
    payloads: HashMap<String, u32>,
}

impl RequestBook {
    /// What `request_id` with `payload` names (a first use is payload 1).
    pub(crate) fn name(&self, request_id: &str, payload: &[u8; 32]) -> Named {
        let seen = self.payloads.get(request_id).copied().unwrap_or(0);
        let same = (1..=seen).map(|n| payload_job_id(request_id, n)).find(|id| self.ids.get(id).is_some_and(|e| &e.1 == payload));
        match same {
            Some(id) => {
                let job = self.ids[&id].0;
                Named::Same(id, job)
            }
            None => Named::New(payload_job_id(request_id, seen + 1), seen + 1),
        }
    }

    /// The request id and payload number of a job id an earlier run gave out (`<id>`,
    /// `<id>#n`); `None` for a bare number.
    pub(crate) fn parse_restored(job_id: &str) -> Option<(String, u32)> {
        if let Some((base, n)) = job_id.rsplit_once('#').and_then(|(b, n)| Some((b.to_string(), n.parse::<u32>().ok()?))) {
            return Some((base, n));
        }
        (!job_id.bytes().all(|b| b.is_ascii_digit())).then(|| (job_id.to_string(), 1))
    }

    /// Records that job id `id` (payload `n` of request id `base`) is now proved by `job`.
    pub(crate) fn record(&mut self, id: String, job: Option<JobId>, payload: [u8; 32], named: Option<(String, u32)>) {
        self.ids.insert(id, (job, payload));
        if let Some((base, n)) = named {
            let seen = self.payloads.entry(base).or_insert(0);
            *seen = (*seen).max(n);
        }
    }

    /// The newest job of a job id.
    pub(crate) fn job(&self, id: &str) -> Option<JobId> {
        self.ids.get(id).and_then(|e| e.0)
    }

    /// Forgets job id `id` if `job` is still its newest; the request id's count of payloads
    /// goes once none of its jobs is known.
    pub(crate) fn forget(&mut self, id: &str, job: JobId) {
        if self.ids.get(id).map(|e| e.0) != Some(Some(job)) {
            return;
        }
        self.ids.remove(id);
        let base = id.split('#').next().unwrap_or(id).to_string();
        let seen = self.payloads.get(&base).copied().unwrap_or(0);
        if !(1..=seen).any(|n| self.ids.contains_key(&payload_job_id(&base, n))) {
            self.payloads.remove(&base);
        }
    }

    /// Job ids known.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_payload_numbers_on_and_the_first_keeps_its_id() {
        let mut b = RequestBook::default();
        let (p1, p2) = ([1u8; 32], [2u8; 32]);
        assert_eq!(b.name("r", &p1), Named::New("r".into(), 1));
        b.record("r".into(), Some(JobId(1)), p1, Some(("r".into(), 1)));
        assert_eq!(b.name("r", &p1), Named::Same("r".into(), Some(JobId(1))));
        assert_eq!(b.name("r", &p2), Named::New("r#2".into(), 2));
        b.record("r#2".into(), Some(JobId(2)), p2, Some(("r".into(), 2)));
        assert_eq!(b.name("r", &p2), Named::Same("r#2".into(), Some(JobId(2))));
        b.forget("r", JobId(1));
        assert_eq!(b.name("r", &p1), Named::New("r#3".into(), 3), "the count stays while r#2 is known");
        b.forget("r#2", JobId(2));
        assert_eq!(b.name("r", &p1), Named::New("r".into(), 1));
        assert_eq!(b.len(), 0);
    }

    #[test]
    fn ids_an_earlier_run_ended_keep_their_payload() {
        let mut b = RequestBook::default();
        let (p1, p2) = ([1u8; 32], [2u8; 32]);
        b.record("r#2".into(), None, p2, RequestBook::parse_restored("r#2"));
        assert_eq!(b.name("r", &p2), Named::Same("r#2".into(), None));
        assert_eq!(b.name("r", &p1), Named::New("r#3".into(), 3));
        assert_eq!(b.job("r#2"), None);
    }

    #[test]
    fn restored_ids_name_their_payload() {
        assert_eq!(RequestBook::parse_restored("abc"), Some(("abc".into(), 1)));
        assert_eq!(RequestBook::parse_restored("abc#3"), Some(("abc".into(), 3)));
        assert_eq!(RequestBook::parse_restored("17"), None);
    }

    #[test]
    fn api_ids_parse() {
        assert_eq!(JobRef::parse(" 12 "), Ok(JobRef::Id(JobId(12))));
        assert_eq!(JobRef::parse("abc"), Ok(JobRef::Request("abc".into())));
        assert!(JobRef::parse("").is_err());
        assert!(JobRef::parse("99999999999999999999999").is_err());
        assert!(JobRef::parse(&"x".repeat(MAX_REQUEST_ID + 1)).is_err());
    }
}
