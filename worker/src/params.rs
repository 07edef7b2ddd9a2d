//! Reading bellperson parameter files: the file is read piece by piece (never mapped: a file
//! shrunk under a map faults the process), its layout checked, and the point sections decoded
//! on all threads while the next block is read.
//!
//! A full validation (every point on the curve, in the prime-order subgroup, not the identity)
//! runs while the file decodes: on the host when the points are decoded with
//! [`Validation::Full`], or, given [`PointChecks`] (a backend whose
//! [`Backend::checks_points`] says so, e.g. a GPU), with the cheap checks only on the host
//! (the encoding, on the curve, not the identity) and the subgroup checks on the backend, block
//! `k` checked while block `k + 1` decodes and block `k + 2` is read. Both refuse a file with
//! the same section, index and reason. A file its publisher lists ([`PublishedDigest`]) has its digest
//! computed beside the validation, which stops checking once it matches.

use std::borrow::Cow;
use std::fs::File;
use std::mem::MaybeUninit;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime};

use rayon::prelude::*;

use crate::WorkError;
use blstrs::{G1Affine, G2Affine};
use cuzk_core::backend::{Backend, BackendError};
use cuzk_core::params::{
    decode_g1_points_into, decode_g2_points_into, Parameters, ParamsError, ParamsLayout, ParamsSource, PointFailure, Section, Validation, VerifyingKey,
    G1_UNCOMPRESSED, G2_UNCOMPRESSED,
};

/// The curve and subgroup checks of decoded points, run where a backend runs them
/// ([`Backend::first_invalid_g1`]): what a [`Validation::Full`] load hands its points to when
/// [`Backend::checks_points`]. Every backend is one.
pub trait PointChecks: Sync {
    /// The first G1 point of `points` that is the identity, off the curve or outside the
    /// subgroup ([`Backend::first_invalid_g1`]).
    fn check_g1(&self, points: &[G1Affine]) -> Result<Option<PointFailure>, BackendError>;
    /// G2 counterpart of [`PointChecks::check_g1`].
    fn check_g2(&self, points: &[G2Affine]) -> Result<Option<PointFailure>, BackendError>;
}

impl<B: Backend> PointChecks for B {
    fn check_g1(&self, points: &[G1Affine]) -> Result<Option<PointFailure>, BackendError> {
        self.first_invalid_g1(points)
    }
    fn check_g2(&self, points: &[G2Affine]) -> Result<Option<PointFailure>, BackendError> {
        self.first_invalid_g2(points)
    }
}

/// The point checks of `backend` where it offers them ([`Backend::checks_points`]), for
/// [`ParamsFile::g1_checked`] and [`read_params_checked`].
pub fn point_checks<B: Backend>(backend: &B) -> Option<&dyn PointChecks> {
    backend.checks_points().then_some(backend as &dyn PointChecks)
}

/// Why a section did not load: the file (its bytes, a point the host refused or the backend's
/// checks did), or the backend's checks themselves.
#[derive(Debug)]
enum LoadError {
    Params(ParamsError),
    Backend(BackendError),
}

impl From<ParamsError> for LoadError {
    fn from(e: ParamsError) -> Self {
        LoadError::Params(e)
    }
}

/// A check of a decoded block: its points and the index of the first.
type BlockCheck<'a, T> = dyn Fn(&[T], usize) -> Result<(), LoadError> + Sync + 'a;

/// `checks`' answer on the points of `section` from index `first` on, as a load error.
fn checked(answer: Result<Option<PointFailure>, BackendError>, section: Section, first: usize) -> Result<(), LoadError> {
    match answer {
        Ok(None) => Ok(()),
        Ok(Some(PointFailure { index, reason })) => Err(LoadError::Params(ParamsError::InvalidPoint { section, index: first + index, reason })),
        Err(e) => Err(LoadError::Backend(e)),
    }
}

/// Points decoded per task.
const POINTS_PER_TASK: usize = 1 << 12;

/// A decoder of whole points into a section: `(bytes, out, first index)`, one point of `out`
/// per point of `bytes` ([`decode_g1_points_into`]).
type DecodeInto<'a, T> = dyn Fn(&[u8], &mut [MaybeUninit<T>], usize) -> Result<(), ParamsError> + Sync + 'a;

/// Decodes `bytes` (points of `point` bytes, the first numbered `first`) into `out` on all
/// threads; the error of the earliest failing point wins.
fn par_decode<T: Send>(bytes: &[u8], out: &mut [MaybeUninit<T>], point: usize, first: usize, decode: &DecodeInto<'_, T>) -> Result<(), ParamsError> {
    let results: Vec<Result<(), ParamsError>> = bytes
        .par_chunks(POINTS_PER_TASK * point)
        .zip(out.par_chunks_mut(POINTS_PER_TASK))
        .enumerate()
        .map(|(i, (b, o))| decode(b, o, first + i * POINTS_PER_TASK))
        .collect();
    results.into_iter().collect()
}

/// Decodes a whole section held in memory on all threads.
fn decode_section<T: Send>(bytes: &[u8], point: usize, decode: &DecodeInto<'_, T>) -> Result<Vec<T>, ParamsError> {
    let n = bytes.len() / point;
    let mut out = Vec::with_capacity(n);
    par_decode(bytes, &mut out.spare_capacity_mut()[..n], point, 0, decode)?;
    // SAFETY: par_decode succeeded, so every one of the first `n` elements is written.
    unsafe { out.set_len(n) };
    Ok(out)
}

/// `points`, every one written.
///
/// # Safety
/// Every element of `points` must be initialised.
unsafe fn assume_init<T>(points: &[MaybeUninit<T>]) -> &[T] {
    // SAFETY: MaybeUninit<T> has T's layout, and the caller promises every element is written.
    unsafe { std::slice::from_raw_parts(points.as_ptr().cast::<T>(), points.len()) }
}

/// Where a section's load spent its time: each part's own time (they overlap: the slowest
/// part of each block bounds the load).
#[derive(Debug, Clone, Copy, Default)]
struct SectionTimes {
    read: Duration,
    decode: Duration,
    check: Duration,
}

/// A decoder of `section`'s G1 points for [`decode_section`].
fn g1_decoder(section: Section, validation: Validation) -> impl Fn(&[u8], &mut [MaybeUninit<G1Affine>], usize) -> Result<(), ParamsError> + Sync {
    move |b, out, first| decode_g1_points_into(b, out, section, first, validation)
}

/// G2 counterpart of [`g1_decoder`].
fn g2_decoder(section: Section, validation: Validation) -> impl Fn(&[u8], &mut [MaybeUninit<G2Affine>], usize) -> Result<(), ParamsError> + Sync {
    move |b, out, first| decode_g2_points_into(b, out, section, first, validation)
}

/// Logs a loaded section and where its time went ([`progress!`]). `checks`: where the curve and
/// subgroup checks ran.
fn log_section(path: &Path, section: Section, points: usize, bytes: usize, took: Duration, times: SectionTimes, checks: &str) {
    let (seconds, gb_per_s) = (took.as_secs_f64(), bytes as f64 / took.as_secs_f64().max(1e-9) / 1e9);
    let (read, decode, check) = (times.read.as_secs_f64(), times.decode.as_secs_f64(), times.check.as_secs_f64());
    let path = path.display();
    progress!(took, %path, ?section, points, seconds, gb_per_s, read, decode, check, checks, "parameter section loaded (seconds of each part, overlapping)");
}

/// Bytes of a section read at once (two such blocks are held: one decoded while the next is
/// read).
const READ_BLOCK: usize = 64 << 20;

/// A parameter file read with `pread`; its length and modification time at open are checked
/// again after every section, so a file changed while it loads is an error.
#[derive(Debug)]
pub struct FileSource {
    file: File,
    len: usize,
    modified: Option<SystemTime>,
}

impl FileSource {
    /// Opens `path`.
    pub fn open(path: &Path) -> std::io::Result<FileSource> {
        let file = File::open(path)?;
        let meta = file.metadata()?;
        Ok(FileSource { len: meta.len() as usize, modified: meta.modified().ok(), file })
    }

    /// Fills `buf` from `offset`, in 4 MiB pieces on all threads.
    fn read_into(&self, offset: usize, buf: &mut [u8]) -> Result<(), ParamsError> {
        const PIECE: usize = 4 << 20;
        buf.par_chunks_mut(PIECE).enumerate().try_for_each(|(i, piece)| self.read_piece(offset + i * PIECE, piece))
    }

    fn read_piece(&self, offset: usize, buf: &mut [u8]) -> Result<(), ParamsError> {
        self.file.read_exact_at(buf, offset as u64).map_err(|e| ParamsError::Read {
            offset,
            needed: buf.len(),
            reason: if e.kind() == std::io::ErrorKind::UnexpectedEof {
                "the file is shorter than when it was opened: it changed while it was read".into()
            } else {
                e.to_string()
            },
        })
    }

    /// An error if the file's length or modification time differ from those at open.
    fn unchanged(&self) -> Result<(), ParamsError> {
        let meta = self.file.metadata().map_err(|e| ParamsError::Read { offset: 0, needed: 0, reason: e.to_string() })?;
        if meta.len() as usize != self.len || meta.modified().ok() != self.modified {
            return Err(ParamsError::Read {
                offset: 0,
                needed: self.len,
                reason: format!("the file changed while it was read ({} bytes at open, {} now, or a new modification time)", self.len, meta.len()),
            });
        }
        Ok(())
    }

    /// Decodes the points in `range` (of `point` bytes each) with `decode` straight into the
    /// section, block by block, reading the next block while one is decoded; with `check`, each
    /// decoded block is checked with `check(points, first index)` while the next one decodes.
    /// The error of the earliest block wins: a failed check before a later block's decoding
    /// error, which comes before a read error. Returns the points and where the time went.
    fn section<T: Copy + Send + Sync>(
        &self,
        range: Range<usize>,
        point: usize,
        decode: &DecodeInto<'_, T>,
        check: Option<&BlockCheck<'_, T>>,
    ) -> Result<(Vec<T>, SectionTimes), LoadError> {
        let n = range.len() / point;
        let per_block = (READ_BLOCK / point).max(1);
        let block = per_block * point;
        let mut times = SectionTimes::default();
        let mut out: Vec<T> = Vec::with_capacity(n);
        let mut slots = out.spare_capacity_mut()[..n].chunks_mut(per_block);
        let mut cur = vec![0u8; block.min(range.len())];
        let mut next = vec![0u8; block.min(range.len().saturating_sub(block))];
        let (mut at, mut len) = (range.start, block.min(range.len()));
        let t = Instant::now();
        self.read_into(at, &mut cur[..len])?;
        times.read += t.elapsed();
        // A decoded block waiting for its check, and its first index.
        let mut pending: Option<(&[T], usize)> = None;
        while len > 0 || pending.is_some() {
            let next_at = at + len;
            let next_len = if len > 0 { block.min(range.end - next_at) } else { 0 };
            let first = (at - range.start) / point;
            let slot = if len > 0 { slots.next() } else { None };
            // The section's slots and its byte blocks are cut alike; `set_len` below relies on it.
            assert_eq!(slot.as_ref().map_or(0, |s| s.len() * point), len, "a block without its slot");
            let (((decoded, decode_time), (read, read_time)), (verdict, check_time)) = rayon::join(
                || {
                    rayon::join(
                        || {
                            let t = Instant::now();
                            let decoded = slot.map(|s| par_decode(&cur[..len], s, point, first, decode).map(|()| (s, first)));
                            (decoded, t.elapsed())
                        },
                        || {
                            let t = Instant::now();
                            let read = if next_len > 0 { self.read_into(next_at, &mut next[..next_len]) } else { Ok(()) };
                            (read, t.elapsed())
                        },
                    )
                },
                || {
                    let t = Instant::now();
                    let verdict = match (pending, check) {
                        (Some((points, first)), Some(check)) => check(points, first),
                        _ => Ok(()),
                    };
                    (verdict, t.elapsed())
                },
            );
            (times.decode, times.read, times.check) = (times.decode + decode_time, times.read + read_time, times.check + check_time);
            verdict?;
            // SAFETY: the block decoded without an error, so every point of it is written.
            pending = decoded.transpose()?.map(|(s, first)| (unsafe { assume_init(s) }, first));
            read?;
            std::mem::swap(&mut cur, &mut next);
            (at, len) = (next_at, next_len);
        }
        self.unchanged()?;
        // SAFETY: every block of the first `n` points decoded without an error.
        unsafe { out.set_len(n) };
        Ok((out, times))
    }
}

impl ParamsSource for FileSource {
    fn len(&self) -> usize {
        self.len
    }

    fn read(&self, offset: usize, n: usize) -> Result<Cow<'_, [u8]>, ParamsError> {
        let mut buf = vec![0u8; n];
        self.read_into(offset, &mut buf)?;
        Ok(Cow::Owned(buf))
    }
}

/// The layout of the parameter file at `path` (the verifying key and the query lengths),
/// reading only those.
pub fn read_layout(path: &Path) -> Result<ParamsLayout, WorkError> {
    let src = FileSource::open(path).map_err(|source| WorkError::Io { path: path.into(), source })?;
    ParamsLayout::read(&src).map_err(|source| WorkError::Params { path: path.into(), source })
}

/// [`checksum`] of a whole file, read in pieces: the same value as `checksum` of its bytes.
/// Gives up (an error) once `stop` is set.
fn checksum_file(src: &FileSource, stop: &AtomicBool) -> Result<u64, ParamsError> {
    const PIECE: usize = 8 << 20;
    let parts: Vec<u64> = (0..src.len.div_ceil(CHECKSUM_CHUNK))
        .into_par_iter()
        .map(|i| {
            let (start, end) = (i * CHECKSUM_CHUNK, ((i + 1) * CHECKSUM_CHUNK).min(src.len));
            let mut h = xxhash_rust::xxh3::Xxh3::new();
            let mut buf = vec![0u8; PIECE.min(end - start)];
            let mut at = start;
            while at < end {
                if stop.load(Ordering::Relaxed) {
                    return Err(ParamsError::Read { offset: at, needed: end - at, reason: "the checksum was no longer needed".into() });
                }
                let n = PIECE.min(end - at);
                src.read_into(at, &mut buf[..n])?;
                h.update(&buf[..n]);
                at += n;
            }
            Ok(h.digest())
        })
        .collect::<Result<_, ParamsError>>()?;
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(&(src.len as u64).to_le_bytes());
    for p in parts {
        h.update(&p.to_le_bytes());
    }
    Ok(h.digest())
}

/// Decodes a whole parameter file using all threads; same result and errors as
/// [`Parameters::from_bytes`].
pub fn load_parameters(bytes: &[u8], validation: Validation) -> Result<Parameters, ParamsError> {
    let layout = ParamsLayout::parse(bytes)?;
    Ok(Parameters {
        h: decode_section(&bytes[layout.h.clone()], G1_UNCOMPRESSED, &g1_decoder(Section::H, validation))?,
        l: decode_section(&bytes[layout.l.clone()], G1_UNCOMPRESSED, &g1_decoder(Section::L, validation))?,
        a: decode_section(&bytes[layout.a.clone()], G1_UNCOMPRESSED, &g1_decoder(Section::A, validation))?,
        b_g1: decode_section(&bytes[layout.b_g1.clone()], G1_UNCOMPRESSED, &g1_decoder(Section::BG1, validation))?,
        b_g2: decode_section(&bytes[layout.b_g2.clone()], G2_UNCOMPRESSED, &g2_decoder(Section::BG2, validation))?,
        vk: layout.vk,
    })
}

/// Reads and decodes a parameter file with all threads.
pub fn read_params(path: &Path, validation: Validation) -> Result<Parameters, WorkError> {
    read_params_with_records(path, validation, None).map(|(p, _)| p)
}

/// Which checks a load ran ([`read_params_with_records`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checked {
    /// Every point was checked (and, with a record directory, a record written on success).
    Full,
    /// The file matched its validation record (length and checksum): decoded without the point
    /// checks.
    Record,
    /// The caller trusts the file ([`Validation::Trusted`]): no point checks.
    Trusted,
    /// The file's digest is the one its publisher lists for its name ([`PublishedDigest`]):
    /// decoded without the point checks, and recorded (with a record directory).
    Published,
}

/// Whether a parameter file is one a publisher lists with a digest (Filecoin's
/// `parameters.json`): `Ok(None)` when its name is not listed, else whether its contents have
/// that digest; it may give up (an error) once the flag is set. The family that knows the list
/// supplies it; the worker knows none.
pub type PublishedDigest = dyn Fn(&Path, &AtomicBool) -> std::io::Result<Option<bool>> + Send + Sync;

/// The published digest of a file being validated in full, computed on its own thread while
/// the points are checked ([`ParamsFile::open_with`]).
#[derive(Debug, Default)]
struct DigestWatch {
    /// Set once the digest matched: blocks decoded from then on skip the point checks.
    matched: AtomicBool,
    /// The thread's answer, once it has one (`Some(true)`: it matched).
    done: Mutex<Option<bool>>,
    answered: Condvar,
    /// Set when a block or section skipped its checks because the digest matched.
    used: AtomicBool,
}

impl DigestWatch {
    /// Whether the digest has matched; when it has, notes that a check is skipped on its word.
    fn vouches(&self) -> bool {
        let m = self.matched.load(Ordering::Acquire);
        if m {
            self.used.store(true, Ordering::Relaxed);
        }
        m
    }

    /// Waits for the thread's answer: whether the digest matched.
    fn wait(&self) -> bool {
        let mut done = self.done.lock().unwrap_or_else(|e| e.into_inner());
        while done.is_none() {
            done = self.answered.wait(done).unwrap_or_else(|e| e.into_inner());
        }
        *done == Some(true)
    }

    fn answer(&self, matched: bool) {
        self.matched.store(matched, Ordering::Release);
        *self.done.lock().unwrap_or_else(|e| e.into_inner()) = Some(matched);
        self.answered.notify_all();
    }
}

/// Bytes hashed per task by [`checksum`]; part of the record format (changing it changes every
/// checksum, so records written before simply stop matching).
const CHECKSUM_CHUNK: usize = 64 << 20;

/// First line of a validation record.
const RECORD_HEADER: &str = "cuzk validated parameter file v1";

/// XXH3-64 of `bytes`, computed in 64 MiB chunks on all threads: the chunk hashes (in order,
/// little-endian) and the length are hashed once more, so the result does not depend on the
/// thread count.
pub fn checksum(bytes: &[u8]) -> u64 {
    let parts: Vec<u64> = bytes.par_chunks(CHECKSUM_CHUNK).map(xxhash_rust::xxh3::xxh3_64).collect();
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(&(bytes.len() as u64).to_le_bytes());
    for p in parts {
        h.update(&p.to_le_bytes());
    }
    h.digest()
}

/// The record file of the parameter file at `canonical` (an absolute, canonical path) in `dir`:
/// named from a hash of the path, one per parameter file.
pub fn record_path(dir: &Path, canonical: &Path) -> PathBuf {
    let name = xxhash_rust::xxh3::xxh3_64(canonical.as_os_str().as_encoded_bytes());
    dir.join(format!("{name:016x}.validated"))
}

/// The exact text of the record of a file at `canonical` with `len` bytes and checksum `sum`.
/// A record is trusted only if it equals this text byte for byte.
fn record_text(canonical: &Path, len: u64, sum: u64) -> String {
    format!("{RECORD_HEADER}\npath {}\nlen {len}\nxxh3 {sum:016x}\n", canonical.display())
}

/// Writes the record atomically (a temporary file renamed over it).
fn write_record(record: &Path, text: &str) -> std::io::Result<()> {
    if let Some(dir) = record.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = record.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, record).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// Reads and decodes a parameter file with all threads, like [`read_params`], and with
/// `records` (a directory) remembers full validations: after a [`Validation::Full`] load
/// succeeds, a record of the file's length and [`checksum`] is written to `records`
/// ([`record_path`]); a later full load of a file whose length and checksum equal its record's
/// decodes it as [`Validation::Trusted`]. A missing, unreadable or garbled record (one that is
/// not exactly what [`Checked::Full`] would write) or a mismatch means a full validation.
/// Failing to write a record is logged, not an error. Returns which checks ran.
pub fn read_params_with_records(path: &Path, validation: Validation, records: Option<&Path>) -> Result<(Parameters, Checked), WorkError> {
    read_params_checked(path, validation, records, None)
}

/// [`read_params_with_records`], a full validation's curve and subgroup checks run by `checks`
/// (a backend's, [`point_checks`]) when given: the host decodes with the cheap checks only.
/// Same outcomes.
pub fn read_params_checked(
    path: &Path,
    validation: Validation,
    records: Option<&Path>,
    checks: Option<&dyn PointChecks>,
) -> Result<(Parameters, Checked), WorkError> {
    read_params_trusting(path, validation, records, checks, None)
}

/// [`read_params_checked`], a full validation skipped for a file whose digest is the one
/// `published` lists for its name ([`ParamsFile::open_with`]).
pub fn read_params_trusting(
    path: &Path,
    validation: Validation,
    records: Option<&Path>,
    checks: Option<&dyn PointChecks>,
    published: Option<&Arc<PublishedDigest>>,
) -> Result<(Parameters, Checked), WorkError> {
    let file = ParamsFile::open_with(path, validation, records, published)?;
    let params = file.decode_checked(checks)?;
    Ok((params, file.finish()))
}

/// An open parameter file: its layout read (the verifying key decoded), and the checks its
/// sections are decoded with decided as [`read_params_with_records`] decides them. Sections
/// are read and decoded on demand, so a device load can hold one decoded query at a time.
#[derive(Debug)]
pub struct ParamsFile {
    path: PathBuf,
    src: Arc<FileSource>,
    layout: ParamsLayout,
    validation: Validation,
    checked: Checked,
    /// The record to write once every section has decoded under a full validation.
    record: Option<(PathBuf, Record)>,
    /// The published digest, computed beside a full validation.
    digest: Option<Arc<DigestWatch>>,
    /// Tells the threads of the digest and the checksum to give up (set when the file is
    /// finished or dropped).
    stop: Arc<AtomicBool>,
}

/// A validation record's text, or the thread computing the checksum it needs.
#[derive(Debug)]
enum Record {
    Ready(String),
    Pending { canonical: PathBuf, sum: std::thread::JoinHandle<Result<u64, ParamsError>> },
}

impl Drop for ParamsFile {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl ParamsFile {
    /// Opens the file at `path` and decides the checks (`records`: see
    /// [`read_params_with_records`]).
    pub fn open(path: &Path, validation: Validation, records: Option<&Path>) -> Result<ParamsFile, WorkError> {
        Self::open_with(path, validation, records, None)
    }

    /// [`ParamsFile::open`]; a file that would be validated in full is trusted instead once
    /// `published` says its name is listed with the digest its contents have (and recorded,
    /// with `records`, so the next load is trusted by its checksum). The digest is computed on
    /// its own thread while the validation runs: blocks decoded after it matched skip the point
    /// checks, and a point that fails its check waits for the digest (a listed file is trusted
    /// whatever it holds: the list is the authority). A listed file whose digest differs is
    /// validated in full, with a warning: it is not the file its name says.
    pub fn open_with(path: &Path, validation: Validation, records: Option<&Path>, published: Option<&Arc<PublishedDigest>>) -> Result<ParamsFile, WorkError> {
        let mut file = Self::open_deciding(path, validation, records)?;
        if let (Checked::Full, Some(published)) = (file.checked, published) {
            let watch = Arc::new(DigestWatch::default());
            let (w, published, stop, at) = (watch.clone(), published.clone(), file.stop.clone(), path.to_path_buf());
            let spawned = std::thread::Builder::new().name("params-digest".into()).spawn(move || {
                let t = std::time::Instant::now();
                let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| published(&at, &stop)))
                    .unwrap_or_else(|_| Err(std::io::Error::other("the digest's computation panicked")));
                match &answer {
                    Ok(Some(true)) => {
                        tracing::info!(path = %at.display(), seconds = t.elapsed().as_secs_f64(), "parameter file has its published digest: point checks skipped from here on")
                    }
                    Ok(Some(false)) => tracing::warn!(
                        path = %at.display(),
                        "parameter file does NOT have the digest published for its name (a damaged download, or not the file its name says): validated in full"
                    ),
                    Ok(None) => {}
                    Err(_) if stop.load(Ordering::Relaxed) => {}
                    Err(e) => tracing::warn!(path = %at.display(), error = %e, "the file's digest could not be computed: validated in full"),
                }
                w.answer(matches!(answer, Ok(Some(true))));
            });
            match spawned {
                Ok(_) => file.digest = Some(watch),
                Err(e) => tracing::warn!(path = %path.display(), error = %e, "no thread for the file's digest: validating in full"),
            }
        }
        Ok(file)
    }

    fn open_deciding(path: &Path, validation: Validation, records: Option<&Path>) -> Result<ParamsFile, WorkError> {
        let src = Arc::new(FileSource::open(path).map_err(|source| WorkError::Io { path: path.into(), source })?);
        let params = |source| WorkError::Params { path: path.into(), source };
        let layout = ParamsLayout::read(&*src).map_err(params)?;
        let stop = Arc::new(AtomicBool::new(false));
        let (validation, checked, record) = match (validation, records) {
            (Validation::Trusted, _) => (Validation::Trusted, Checked::Trusted, None),
            (Validation::Full, None) => (Validation::Full, Checked::Full, None),
            (Validation::Full, Some(dir)) => match std::fs::canonicalize(path) {
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "no canonical path: validating the parameter file in full, recording nothing");
                    (Validation::Full, Checked::Full, None)
                }
                Ok(canonical) => {
                    let record = record_path(dir, &canonical);
                    match std::fs::read(&record) {
                        Ok(text) => {
                            let t = std::time::Instant::now();
                            let expected = record_text(&canonical, src.len as u64, checksum_file(&src, &stop).map_err(params)?);
                            tracing::debug!(path = %path.display(), seconds = t.elapsed().as_secs_f64(), "parameter file checksummed");
                            if text == expected.as_bytes() {
                                tracing::info!(path = %path.display(), record = %record.display(), "parameter file matches its validation record: point checks skipped");
                                (Validation::Trusted, Checked::Record, None)
                            } else {
                                tracing::warn!(path = %path.display(), record = %record.display(), "parameter file does not match its validation record (changed, corrupt, or a garbled record): validating in full");
                                (Validation::Full, Checked::Full, Some((record, Record::Ready(expected))))
                            }
                        }
                        Err(e) => {
                            if e.kind() != std::io::ErrorKind::NotFound {
                                tracing::warn!(record = %record.display(), error = %e, "validation record unreadable: validating in full");
                            }
                            // No record to compare with: the checksum the new record needs is
                            // computed beside the validation.
                            let (src, stop) = (src.clone(), stop.clone());
                            let sum = std::thread::Builder::new()
                                .name("params-checksum".into())
                                .spawn(move || checksum_file(&src, &stop))
                                .map_err(|source| WorkError::Io { path: path.into(), source })?;
                            (Validation::Full, Checked::Full, Some((record, Record::Pending { canonical, sum })))
                        }
                    }
                }
            },
        };
        Ok(ParamsFile { path: path.into(), src, layout, validation, checked, record, digest: None, stop })
    }

    /// Whether the published digest has matched (blocks from now on skip the point checks).
    fn vouched(&self) -> bool {
        self.digest.as_ref().is_some_and(|d| d.vouches())
    }

    /// Decodes `section` (the bytes of `range`, points of `point` bytes, with `decode`) under
    /// this file's checks, `check` running `checks` on a block: blocks after the published
    /// digest matched skip them, and a point that failed its check is forgiven (the section
    /// decoded again, trusted) if the digest, once it answers, vouches for the file.
    fn checked_section<T: Copy + Send + Sync>(
        &self,
        section: Section,
        range: Range<usize>,
        point: usize,
        decode: impl Fn(&[u8], &mut [MaybeUninit<T>], Section, usize, Validation) -> Result<(), ParamsError> + Sync,
        checks: Option<&dyn PointChecks>,
        check: impl Fn(&dyn PointChecks, &[T]) -> Result<Option<PointFailure>, BackendError> + Sync,
    ) -> Result<Vec<T>, WorkError> {
        let start = Instant::now();
        let load = |trusted: bool| {
            let (validation, checks) = self.plan(checks, trusted);
            let check = &check;
            let block_check = checks.map(|c| move |points: &[T], first: usize| if self.vouched() { Ok(()) } else { checked(check(c, points), section, first) });
            let decode_block = |b: &[u8], out: &mut [MaybeUninit<T>], first: usize| decode(b, out, section, first, self.block_validation(validation));
            let on = match (checks, validation) {
                (Some(_), _) => "backend",
                (None, Validation::Full) => "host",
                (None, Validation::Trusted) => "none",
            };
            self.src.section(range.clone(), point, &decode_block, block_check.as_ref().map(|c| c as _)).map(|(points, times)| (points, times, on))
        };
        let (points, times, on) = match load(false) {
            Err(LoadError::Params(ParamsError::InvalidPoint { .. })) if self.digest.as_ref().is_some_and(|d| d.wait()) => {
                self.digest.as_ref().inspect(|d| d.used.store(true, Ordering::Relaxed));
                load(true)
            }
            r => r,
        }
        .map_err(|e| self.err(e))?;
        log_section(&self.path, section, points.len(), range.len(), start.elapsed(), times, on);
        Ok(points)
    }

    fn err(&self, e: LoadError) -> WorkError {
        match e {
            LoadError::Params(source) => WorkError::Params { path: self.path.clone(), source },
            LoadError::Backend(e) => WorkError::Backend(e),
        }
    }

    /// The verifying key.
    pub fn vk(&self) -> &VerifyingKey {
        &self.layout.vk
    }

    /// The decoding and the checks of a section: with `checks` under a full validation, the
    /// host decodes as trusted (encoding, on the curve, not the identity) and `checks` take
    /// the rest; otherwise the host does all of it.
    fn plan<'c>(&self, checks: Option<&'c dyn PointChecks>, trusted: bool) -> (Validation, Option<&'c dyn PointChecks>) {
        match checks {
            _ if trusted => (Validation::Trusted, None),
            Some(c) if self.validation == Validation::Full => (Validation::Trusted, Some(c)),
            _ => (self.validation, None),
        }
    }

    /// A block's host validation: `validation`, or trusted once the digest has matched.
    fn block_validation(&self, validation: Validation) -> Validation {
        if validation == Validation::Full && self.vouched() {
            Validation::Trusted
        } else {
            validation
        }
    }

    /// Decodes one G1 query (`Section::Ic` is the verifying key's, already decoded; `BG2` is
    /// not a G1 query: both empty).
    pub fn g1(&self, section: Section) -> Result<Vec<G1Affine>, WorkError> {
        self.g1_checked(section, None)
    }

    /// [`ParamsFile::g1`], a full validation's curve and subgroup checks run by `checks` when
    /// given ([`point_checks`]); the same points or the same error.
    pub fn g1_checked(&self, section: Section, checks: Option<&dyn PointChecks>) -> Result<Vec<G1Affine>, WorkError> {
        let range = match section {
            Section::H => &self.layout.h,
            Section::L => &self.layout.l,
            Section::A => &self.layout.a,
            Section::BG1 => &self.layout.b_g1,
            Section::Ic | Section::BG2 => return Ok(Vec::new()),
        };
        self.checked_section(section, range.clone(), G1_UNCOMPRESSED, decode_g1_points_into, checks, |c, points| c.check_g1(points))
    }

    /// Decodes the `b_g2` query.
    pub fn b_g2(&self) -> Result<Vec<G2Affine>, WorkError> {
        self.b_g2_checked(None)
    }

    /// [`ParamsFile::b_g2`] with `checks`, as [`ParamsFile::g1_checked`].
    pub fn b_g2_checked(&self, checks: Option<&dyn PointChecks>) -> Result<Vec<G2Affine>, WorkError> {
        self.checked_section(Section::BG2, self.layout.b_g2.clone(), G2_UNCOMPRESSED, decode_g2_points_into, checks, |c, points| c.check_g2(points))
    }

    /// Decodes every query.
    pub fn decode(&self) -> Result<Parameters, WorkError> {
        self.decode_checked(None)
    }

    /// Decodes every query, with `checks` as [`ParamsFile::g1_checked`].
    pub fn decode_checked(&self, checks: Option<&dyn PointChecks>) -> Result<Parameters, WorkError> {
        Ok(Parameters {
            h: self.g1_checked(Section::H, checks)?,
            l: self.g1_checked(Section::L, checks)?,
            a: self.g1_checked(Section::A, checks)?,
            b_g1: self.g1_checked(Section::BG1, checks)?,
            b_g2: self.b_g2_checked(checks)?,
            vk: self.layout.vk.clone(),
        })
    }

    /// After every section decoded: writes the validation record a full validation earns
    /// (failing to is logged) and says which checks ran.
    /// A full validation that skipped checks because the published digest matched counts as
    /// [`Checked::Published`]; the digest's thread is told to stop (by the drop) if it still runs.
    pub fn finish(mut self) -> Checked {
        let checked = match &self.digest {
            Some(d) if self.checked == Checked::Full && d.used.load(Ordering::Relaxed) => Checked::Published,
            _ => self.checked,
        };
        let text = match self.record.take() {
            None => None,
            Some((record, Record::Ready(text))) => Some((record, text)),
            Some((record, Record::Pending { canonical, sum })) => match sum.join() {
                Ok(Ok(sum)) => Some((record, record_text(&canonical, self.src.len as u64, sum))),
                Ok(Err(e)) => {
                    tracing::warn!(record = %record.display(), error = %e, "no checksum for the validation record");
                    None
                }
                Err(_) => {
                    tracing::warn!(record = %record.display(), "the checksum's thread panicked: no validation record");
                    None
                }
            },
        };
        if let Some((record, text)) = text {
            match write_record(&record, &text) {
                Ok(()) => tracing::info!(path = %self.path.display(), record = %record.display(), checked = ?checked, "parameter file recorded as valid"),
                Err(e) => tracing::warn!(record = %record.display(), error = %e, "could not write the validation record"),
            }
        }
        checked
    }
}
