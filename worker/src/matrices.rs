//! Synthesis through recorded constraint matrices (`cuzk_core::matrices`): a witness, then
//! `a, b, c` as sparse products on all threads; and the cache of matrices per circuit shape,
//! optionally kept on disk.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use cuzk_core::alloc::{PinnedVec, SharedAllocator};
use cuzk_core::compiled::CompiledSynthesis;
use cuzk_core::matrices::{ConstraintMatrices, FileImage, RecordedShare, WitnessCs};
use cuzk_core::synth::{SynthesizeError, Synthesized};

use cuzk_core::circuit::{PartitionCircuit, ShapeKey};

/// Rows per parallel task.
const ROWS_PER_TASK: usize = 1 << 13;

/// Witness generation on the calling thread, then `a, b, c` as sparse products on all threads.
/// Produces exactly what `cuzk_core::synth::synthesize` produces.
pub fn synthesize<C: CompiledSynthesis>(m: &ConstraintMatrices, circuit: C, alloc: SharedAllocator) -> Result<Synthesized, SynthesizeError> {
    let w = circuit.witness_through(m, alloc.clone())?;
    evaluate(m, w, alloc)
}

/// `a, b, c` of a witness as sparse products on all threads, assembled into the record
/// synthesis would have produced.
pub fn evaluate(m: &ConstraintMatrices, w: WitnessCs, alloc: SharedAllocator) -> Result<Synthesized, SynthesizeError> {
    let rows = m.num_constraints();
    let mut a = PinnedVec::from_elem_in(Scalar::ZERO, rows, alloc.clone())?;
    let mut b = PinnedVec::from_elem_in(Scalar::ZERO, rows, alloc.clone())?;
    let mut c = PinnedVec::from_elem_in(Scalar::ZERO, rows, alloc)?;
    a.par_chunks_mut(ROWS_PER_TASK).zip(b.par_chunks_mut(ROWS_PER_TASK)).zip(c.par_chunks_mut(ROWS_PER_TASK)).enumerate().for_each(|(t, ((a, b), c))| {
        let lo = t * ROWS_PER_TASK;
        m.evaluate_rows(lo..lo + a.len(), &w.input, &w.aux, a, b, c);
    });
    Ok(m.assemble(w, a, b, c))
}

/// Stack of a recording thread: gadgets may recurse deeply; only touched pages cost memory.
const RECORD_STACK_BYTES: usize = 32 << 20;

/// [`ConstraintMatrices::record`] on `parts` threads (the calling thread and `parts − 1` more):
/// one share each ([`ConstraintMatrices::record_share`], chunks of
/// [`cuzk_core::matrices::DEFAULT_CHUNK_ROWS`] rows), merged; byte-identical to `record`. The
/// threads are its own, not rayon's, so callers blocked on the pool cannot stall it. `parts` of
/// 0 or 1 records sequentially.
pub fn record_parallel<C: CompiledSynthesis + Sync>(circuit: &C, parts: usize) -> Result<ConstraintMatrices, SynthesizeError> {
    record_parallel_chunked(circuit, parts, cuzk_core::matrices::DEFAULT_CHUNK_ROWS)
}

/// [`record_parallel`] with chunks of `chunk_rows` rows.
pub fn record_parallel_chunked<C: CompiledSynthesis + Sync>(circuit: &C, parts: usize, chunk_rows: usize) -> Result<ConstraintMatrices, SynthesizeError> {
    record_in_threads(parts, |p| circuit.record_share(p, parts, chunk_rows), || circuit.record())
}

/// The matrices of a partition circuit: from its header and two blocks where it says it
/// repeats one ([`ConstraintMatrices::record_repeated`], in shares on `parts` threads), else
/// (or when it does not repeat as it says, which is logged) the whole circuit on `parts`
/// threads ([`record_partition_parallel`]).
pub fn record_partition(circuit: &dyn PartitionCircuit, parts: usize) -> Result<ConstraintMatrices, SynthesizeError> {
    if let Some(r) = circuit.repeats() {
        let (shares, chunk_rows) = (parts.max(1), cuzk_core::matrices::DEFAULT_CHUNK_ROWS);
        let in_threads = || shares_in_threads(shares, |p| circuit.record_repeated_share(&r, p, shares, chunk_rows));
        match ConstraintMatrices::record_repeated_from(&r, in_threads)? {
            Some(m) => return Ok(m),
            // Fewer than three blocks leave nothing to copy: recorded whole, as expected.
            None if r.count < 3 => {}
            None => tracing::warn!(circuit = %circuit.shape(), blocks = r.count, "the circuit does not repeat as it says: recording it whole"),
        }
    }
    record_partition_parallel(circuit, parts)
}

/// [`record_parallel`] of a partition circuit of any family.
pub fn record_partition_parallel(circuit: &dyn PartitionCircuit, parts: usize) -> Result<ConstraintMatrices, SynthesizeError> {
    let chunk_rows = cuzk_core::matrices::DEFAULT_CHUNK_ROWS;
    record_in_threads(parts, |p| circuit.record_share(p, parts, chunk_rows), || circuit.record())
}

/// Shares `0..parts` from `share`, each on a thread (the calling thread and `parts − 1` more),
/// merged; `whole` when `parts` is 0 or 1.
fn record_in_threads(
    parts: usize,
    share: impl Fn(usize) -> Result<RecordedShare, SynthesizeError> + Sync,
    whole: impl FnOnce() -> Result<ConstraintMatrices, SynthesizeError>,
) -> Result<ConstraintMatrices, SynthesizeError> {
    if parts <= 1 {
        return whole();
    }
    ConstraintMatrices::merge_shares(shares_in_threads(parts, share)?)
}

/// `share(p)` for `p` in `0..parts`, each on a thread of its own (the calling thread takes
/// share 0; a share whose thread cannot start runs here after the others), in order of `p`.
fn shares_in_threads<T: Send>(parts: usize, share: impl Fn(usize) -> Result<T, SynthesizeError> + Sync) -> Result<Vec<T>, SynthesizeError> {
    let share = &share;
    let shares: Vec<Result<_, SynthesizeError>> = std::thread::scope(|s| {
        let threads: Vec<_> = (1..parts)
            .map(|p| std::thread::Builder::new().name(format!("cuzk-record-{p}")).stack_size(RECORD_STACK_BYTES).spawn_scoped(s, move || share(p)))
            .collect();
        let mut out = Vec::with_capacity(parts);
        out.push(share(0));
        for (p, t) in (1..parts).zip(threads) {
            out.push(match t {
                Ok(t) => t.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                // No thread to be had: this share runs here, after the others.
                Err(_) => share(p),
            });
        }
        out
    });
    shares.into_iter().collect()
}

/// One shape's entry: filled once, by the first synthesis of the shape; the others wait for
/// it instead of recording the same matrices again.
type Slot = Arc<OnceLock<Option<Arc<ConstraintMatrices>>>>;

/// Constraint matrices per circuit shape, recorded by the first synthesis of that shape. Later
/// syntheses only generate their witness and evaluate `a, b, c` from the matrices.
///
/// A persistent cache writes each recording to its file on a thread of its own, so the job
/// that recorded it goes on at once (writing a 32 GiB PoRep's 8.9 GB took 9–12.5 s of its
/// first job); [`MatrixCache::saves`] waits for the writes, and dropping the cache waits too.
#[derive(Debug)]
pub struct MatrixCache {
    entries: Mutex<HashMap<ShapeKey, Slot>>,
    store: Option<PathBuf>,
    saves: Arc<Saves>,
    /// Writes a file ([`save`]; tests slow it down).
    write: WriteFile,
}

/// Writes the matrices of a shape to a file; true if written.
type WriteFile = fn(&std::path::Path, &ShapeKey, &ConstraintMatrices) -> bool;

impl Default for MatrixCache {
    fn default() -> Self {
        MatrixCache { entries: Mutex::default(), store: None, saves: Arc::default(), write: save }
    }
}

/// The background writes of a persistent [`MatrixCache`]: how many are running.
#[derive(Debug, Default)]
pub struct Saves {
    running: Mutex<usize>,
    done: Condvar,
}

impl Saves {
    /// Blocks until no write is running (a clean stop calls it, so the next start loads).
    pub fn wait(&self) {
        let mut n = self.running.lock().unwrap_or_else(|e| e.into_inner());
        while *n > 0 {
            n = self.done.wait(n).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// How many writes are running.
    pub fn running(&self) -> usize {
        *self.running.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn begin(self: &Arc<Self>) -> SaveGuard {
        *self.running.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        SaveGuard(self.clone())
    }
}

/// One running write; ends it when dropped, also when the write panics.
struct SaveGuard(Arc<Saves>);

impl Drop for SaveGuard {
    fn drop(&mut self) {
        *self.0.running.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
        self.0.done.notify_all();
    }
}

impl Drop for MatrixCache {
    fn drop(&mut self) {
        self.saves.wait();
    }
}

/// What a persistent cache found for a shape.
#[derive(Debug)]
enum Stored {
    Loaded(Box<ConstraintMatrices>),
    Absent,
    /// Unreadable, corrupt or stale: recorded again and rewritten.
    Unusable(String),
}

impl MatrixCache {
    /// A cache that also keeps every recording in `dir` (one file per shape, checksummed and
    /// keyed by the shape and this version of cuzk) and loads it from there instead of
    /// recording again: after a restart, or in a second process. A file that is unreadable,
    /// corrupt or stale is recorded again and replaced, never trusted. Temporary files that
    /// writes of processes no longer running left in `dir` are removed.
    pub fn persistent(dir: PathBuf) -> Self {
        remove_orphaned_writes(&dir);
        MatrixCache { entries: Mutex::default(), store: Some(dir), saves: Arc::default(), write: save }
    }

    /// The file of `shape` in a persistent cache.
    pub fn file_of(&self, shape: &ShapeKey) -> Option<PathBuf> {
        self.store.as_ref().map(|d| d.join(format!("{}.matrices", shape)))
    }

    /// The key a file of `shape` is written under: the shape and the versions its structure
    /// depends on (a circuit's code changes only with a release of cuzk or of its circuit crates).
    pub fn file_key(shape: &ShapeKey) -> String {
        format!("{} cuzk-worker {} format 2", shape, env!("CARGO_PKG_VERSION"))
    }

    fn load(&self, shape: &ShapeKey) -> Stored {
        let Some(path) = self.file_of(shape) else { return Stored::Absent };
        // Read into memory of the daemon's own, checked there: a file changed, truncated or
        // replaced afterwards cannot reach the matrices in use (a map of it could: a truncated
        // file faults its reader with SIGBUS, a byte written in place changes the next proofs).
        let image = match read_aligned(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Stored::Absent,
            Err(e) => return Stored::Unusable(format!("{}: {e}", path.display())),
        };
        match ConstraintMatrices::from_file_image(FileImage(Arc::new(image)), &Self::file_key(shape)) {
            Ok(m) => Stored::Loaded(Box::new(m)),
            Err(e) => Stored::Unusable(format!("{}: {e}", path.display())),
        }
    }

    /// The background writes of this cache.
    pub fn saves(&self) -> Arc<Saves> {
        self.saves.clone()
    }

    /// Writes `m` as the file of `shape` on a thread of its own (on this one if no thread can
    /// be had); [`MatrixCache::saves`] tells when it is done.
    fn save_in_background(&self, shape: &ShapeKey, m: &Arc<ConstraintMatrices>) {
        let Some(path) = self.file_of(shape) else { return };
        let guard = self.saves.begin();
        let (p, k, mm, write) = (path.clone(), shape.clone(), m.clone(), self.write);
        let spawned = std::thread::Builder::new().name("cuzk-matrices-save".into()).spawn(move || {
            let _running = guard;
            write(&p, &k, &mm);
        });
        if let Err(e) = spawned {
            tracing::warn!(circuit = %shape, "no thread for writing the matrices ({e}): writing them before the job goes on");
            (self.write)(&path, shape, m);
        }
    }

    /// The matrices of `shape`, loaded from a persistent cache's file or recorded from
    /// `circuit` when absent (once: concurrent callers wait for the one load or recording);
    /// `None` when the circuit cannot be recorded (then plain synthesis reports why, and a
    /// later call tries again). Records on the calling thread; a circuit that can be sent to
    /// other threads is recorded faster by [`MatrixCache::get_or_record_parallel`].
    pub fn get_or_record<C: CompiledSynthesis>(&self, shape: &ShapeKey, circuit: &C) -> Option<Arc<ConstraintMatrices>> {
        self.get_or_insert_with(shape, || circuit.record())
    }

    /// [`MatrixCache::get_or_record`], recording on as many threads as rayon's pool has
    /// ([`record_parallel`]: the same matrices, byte for byte). The threads
    /// are its own, not the pool's, so callers blocked on the pool cannot stall it.
    pub fn get_or_record_parallel<C: CompiledSynthesis + Sync>(&self, shape: &ShapeKey, circuit: &C) -> Option<Arc<ConstraintMatrices>> {
        self.get_or_record_in_parts(shape, circuit, rayon::current_num_threads())
    }

    /// The matrices of a partition circuit's shape, recorded from it when absent: from its
    /// header and two blocks where it says it repeats one ([`ConstraintMatrices::record_repeated`]),
    /// else (or when it does not repeat as it says) on as many threads as rayon's pool has.
    pub fn get_or_record_partition(&self, circuit: &dyn PartitionCircuit) -> Option<Arc<ConstraintMatrices>> {
        self.get_or_insert_with(circuit.shape(), || record_partition(circuit, rayon::current_num_threads()))
    }

    /// [`MatrixCache::get_or_record_parallel`] on `parts` threads.
    fn get_or_record_in_parts<C: CompiledSynthesis + Sync>(&self, shape: &ShapeKey, circuit: &C, parts: usize) -> Option<Arc<ConstraintMatrices>> {
        self.get_or_insert_with(shape, || record_parallel(circuit, parts))
    }

    /// The matrices of `shape`: loaded, or made by `record` once however many callers ask at
    /// the same time (the others wait for it); a failure is forgotten so a later call tries
    /// again.
    fn get_or_insert_with(&self, shape: &ShapeKey, record: impl FnOnce() -> Result<ConstraintMatrices, SynthesizeError>) -> Option<Arc<ConstraintMatrices>> {
        let slot = self.lock().entry(shape.clone()).or_default().clone();
        let recorded = slot
            .get_or_init(|| {
                match self.load(shape) {
                    Stored::Loaded(m) => {
                        tracing::info!(circuit = %shape, constraints = m.num_constraints(), entries = m.num_entries(), in_place = m.in_file_image(), "constraint matrices loaded");
                        return Some(Arc::new(*m));
                    }
                    Stored::Unusable(why) => tracing::warn!(circuit = %shape, "constraint matrices file not used, recording again: {why}"),
                    Stored::Absent => {}
                }
                let t = std::time::Instant::now();
                let m = match record() {
                    Ok(m) => Arc::new(m),
                    Err(e) => {
                        tracing::warn!(circuit = %shape, "constraint matrices not recorded: {e}");
                        return None;
                    }
                };
                tracing::info!(circuit = %shape, constraints = m.num_constraints(), entries = m.num_entries(), bytes = m.heap_bytes(), secs = t.elapsed().as_secs_f64(), "constraint matrices recorded");
                self.save_in_background(shape, &m);
                Some(m)
            })
            .clone();
        if recorded.is_none() {
            // Forget the failure so that a later job (another witness) records again.
            let mut entries = self.lock();
            if entries.get(shape).is_some_and(|s| Arc::ptr_eq(s, &slot)) {
                entries.remove(shape);
            }
        }
        recorded
    }

    /// Keeps `m` as the matrices of `shape` (recorded elsewhere), unless some are already.
    pub fn insert(&self, shape: &ShapeKey, m: Arc<ConstraintMatrices>) -> Arc<ConstraintMatrices> {
        let slot = self.lock().entry(shape.clone()).or_default().clone();
        slot.get_or_init(|| Some(m.clone())).clone().unwrap_or(m)
    }

    /// The recorded matrices of `shape`, if any (`None` while they are being recorded).
    pub fn get(&self, shape: &ShapeKey) -> Option<Arc<ConstraintMatrices>> {
        self.lock().get(shape).and_then(|s| s.get().cloned().flatten())
    }

    /// The recorded shapes and their matrices.
    pub fn recorded(&self) -> Vec<(ShapeKey, Arc<ConstraintMatrices>)> {
        self.lock().iter().filter_map(|(shape, slot)| slot.get().cloned().flatten().map(|m| (shape.clone(), m))).collect()
    }

    /// Number of recorded shapes.
    pub fn len(&self) -> usize {
        self.lock().values().filter(|s| matches!(s.get(), Some(Some(_)))).count()
    }

    /// Whether nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ShapeKey, Slot>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The process id in the name of a write's temporary file (`<shape>.matrices.tmp<pid>-<n>`, or
/// `…tmp<pid>` as older versions named it); `None` for any other name.
fn writer_of(name: &str) -> Option<u32> {
    let (_, rest) = name.split_once(".matrices.tmp")?;
    let pid = rest.split_once('-').map_or(rest, |(pid, _)| pid);
    pid.parse().ok()
}

/// Removes the temporary files in `dir` of writes whose process is gone (killed while it wrote
/// them: up to 9 GB for a 32 GiB PoRep). Only where `/proc` tells which processes run; a file
/// whose process id is running (even as another program) is left.
fn remove_orphaned_writes(dir: &std::path::Path) {
    if !std::path::Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(writer_of) else { continue };
        if pid != std::process::id() && !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            match std::fs::remove_file(e.path()) {
                Ok(()) => tracing::info!(path = %e.path().display(), pid, "removed the temporary file of an interrupted matrices write"),
                Err(err) => tracing::warn!(path = %e.path().display(), "cannot remove the temporary file of an interrupted matrices write: {err}"),
            }
        }
    }
}

/// Numbers the temporary files of writes, so two writes of one shape never share one.
static SAVE_NUMBER: AtomicU64 = AtomicU64::new(0);

/// Writes `m` as the file `path` of `shape` (a temporary file renamed over the old one); true
/// if it was written.
fn save(path: &std::path::Path, shape: &ShapeKey, m: &ConstraintMatrices) -> bool {
    let t = std::time::Instant::now();
    let tmp = path.with_extension(format!("matrices.tmp{}-{}", std::process::id(), SAVE_NUMBER.fetch_add(1, Ordering::Relaxed)));
    let write = || -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut w = std::io::BufWriter::with_capacity(1 << 22, std::fs::File::create(&tmp)?);
        m.write_file(&MatrixCache::file_key(shape), &mut w)?;
        w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    match write() {
        Ok(()) => {
            tracing::info!(circuit = %shape, path = %path.display(), secs = t.elapsed().as_secs_f64(), "constraint matrices saved");
            true
        }
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            tracing::warn!(circuit = %shape, path = %path.display(), "constraint matrices not saved: {e}");
            false
        }
    }
}

/// A file's bytes in memory aligned to 8 bytes (the matrices' arrays are read in place).
struct AlignedBytes {
    words: Vec<u64>,
    len: usize,
}

impl AsRef<[u8]> for AlignedBytes {
    fn as_ref(&self) -> &[u8] {
        &bytemuck::cast_slice(&self.words)[..self.len]
    }
}

/// Reads the whole file at `path` into 8-byte-aligned memory.
fn read_aligned(path: &std::path::Path) -> std::io::Result<AlignedBytes> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let len = usize::try_from(f.metadata()?.len()).map_err(std::io::Error::other)?;
    let mut words = vec![0u64; len.div_ceil(8)];
    let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut words);
    f.read_exact(&mut bytes[..len])?;
    // A file that grew since its length was read is not the one measured: read it as changed.
    if f.read(&mut [0u8; 1])? != 0 {
        return Err(std::io::Error::other("the file changed while it was read"));
    }
    Ok(AlignedBytes { words, len })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
    use cuzk_circuits::CircuitKind;

    use cuzk_circuits::BuiltinShape;

    /// A circuit that counts how often it is synthesized and can be made to fail.
    #[derive(Clone)]
    struct Counted<'a> {
        runs: &'a AtomicUsize,
        fail: bool,
    }

    impl Circuit<Scalar> for Counted<'_> {
        fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            self.runs.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(20));
            if self.fail {
                return Err(SynthesisError::Unsatisfiable);
            }
            let x = cs.alloc(|| "x", || Ok(Scalar::ONE))?;
            cs.enforce(|| "x", |lc| lc + x, |lc| lc + x, |lc| lc + x);
            Ok(())
        }
    }

    cuzk_core::compiled_synthesis!(Counted<'_>);

    #[test]
    fn a_persistent_cache_loads_instead_of_recording_and_rebuilds_a_damaged_file() {
        let dir = tempfile::tempdir().unwrap();
        let shape = BuiltinShape::new(CircuitKind::Sha256Chain, 15).unwrap().key();
        let circuit = CircuitKind::Sha256Chain.instance(15, 3).unwrap();
        let runs = AtomicUsize::new(0);
        let counted = Counting { runs: &runs, inner: circuit.clone() };
        let first = MatrixCache::persistent(dir.path().to_path_buf());
        let recorded = first.get_or_record(&shape, &counted).unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        let file = first.file_of(&shape).unwrap();
        first.saves().wait();
        assert_eq!(first.saves().running(), 0);
        assert!(file.exists());
        assert!(!recorded.in_file_image(), "once saved, the recording is kept as it is");
        assert!(!MatrixCache::default().get_or_record(&shape, &circuit).unwrap().in_file_image(), "without a file, in memory");

        // A second cache (a restart) loads the file: no recording, the same matrices.
        let second = MatrixCache::persistent(dir.path().to_path_buf());
        let loaded = second.get_or_record(&shape, &counted).unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 1, "the file was not used");
        let same = |m: &ConstraintMatrices| m.to_file_bytes("k");
        assert!(same(&loaded) == same(&recorded));
        assert!(loaded.in_file_image(), "a loaded file is read in place from the daemon's copy");
        let w = loaded.witness(circuit.clone(), cuzk_core::alloc::heap()).unwrap();
        let full = cuzk_core::synth::synthesize(circuit.clone(), cuzk_core::alloc::heap(), Default::default()).unwrap();
        let via_file = evaluate(&loaded, w, cuzk_core::alloc::heap()).unwrap();
        assert!(*via_file.a == *full.a && *via_file.b == *full.b && *via_file.c == *full.c, "the loaded matrices evaluate differently");

        // A damaged file is detected, recorded again and replaced.
        let mut bytes = std::fs::read(&file).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 1;
        // A new file in its place, as the cache itself replaces one: the images held above
        // keep the old one.
        std::fs::remove_file(&file).unwrap();
        std::fs::write(&file, &bytes).unwrap();
        let third = MatrixCache::persistent(dir.path().to_path_buf());
        assert!(third.get_or_record(&shape, &counted).is_some());
        assert_eq!(runs.load(Ordering::SeqCst), 2, "a corrupt file must be recorded again");
        drop(third); // waits for its write
        assert!(ConstraintMatrices::from_file_bytes(&std::fs::read(&file).unwrap(), &MatrixCache::file_key(&shape)).is_ok(), "the file was not rebuilt");
    }

    /// Holds the test writer below until the test opens it (or 5 s have passed, so a cache
    /// that wrote on the job's thread fails the test instead of hanging it).
    static GATE: (Mutex<bool>, std::sync::Condvar) = (Mutex::new(false), std::sync::Condvar::new());

    fn gated_save(path: &std::path::Path, shape: &ShapeKey, m: &ConstraintMatrices) -> bool {
        let open = GATE.0.lock().unwrap();
        drop(GATE.1.wait_timeout_while(open, std::time::Duration::from_secs(5), |open| !*open).unwrap());
        save(path, shape, m)
    }

    /// The file is written beside the job: recordings return while their writes are held,
    /// dropping the cache waits for the writes, and the next cache loads what they wrote. No
    /// temporary file is left.
    #[test]
    fn recordings_are_written_in_the_background_and_a_dropped_cache_waits() {
        let dir = tempfile::tempdir().unwrap();
        let shapes: Vec<_> =
            [15, 16, 17].map(|k| (BuiltinShape::new(CircuitKind::Sha256Chain, k).unwrap().key(), CircuitKind::Sha256Chain.instance(k, 1).unwrap())).into();
        let mut cache = MatrixCache::persistent(dir.path().to_path_buf());
        cache.write = gated_save;
        let recorded: Vec<_> = shapes.iter().map(|(shape, c)| cache.get_or_record(shape, c).unwrap()).collect();
        let files: Vec<_> = shapes.iter().map(|(shape, _)| cache.file_of(shape).unwrap()).collect();
        // Every recording came back with its write still held.
        assert_eq!(cache.saves().running(), 3);
        assert!(files.iter().all(|f| !f.exists()));
        let dropped = std::thread::spawn(move || drop(cache));
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!dropped.is_finished(), "the cache was dropped with its writes running");
        *GATE.0.lock().unwrap() = true;
        GATE.1.notify_all();
        dropped.join().unwrap();
        let runs = AtomicUsize::new(0);
        let again = MatrixCache::persistent(dir.path().to_path_buf());
        for (((shape, c), m), file) in shapes.iter().zip(&recorded).zip(&files) {
            assert!(file.exists(), "{} not written when the cache was dropped", file.display());
            let loaded = again.get_or_record(shape, &Counting { runs: &runs, inner: c.clone() }).unwrap();
            assert!(loaded.to_file_bytes("k") == m.to_file_bytes("k"));
        }
        assert_eq!(runs.load(Ordering::SeqCst), 0, "a file was not used");
        let names: Vec<String> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        assert!(names.iter().all(|n| n.ends_with(".matrices")), "files left behind: {names:?}");
        assert_eq!(names.len(), 3);
    }

    /// Temporary files of writes whose process is gone are removed when a cache opens the
    /// directory; those of running processes, and other files, are left.
    #[test]
    fn a_persistent_cache_removes_the_temporary_files_of_dead_writers() {
        let dir = tempfile::tempdir().unwrap();
        // A process id no process has: above the kernel's maximum.
        let dead = std::fs::read_to_string("/proc/sys/kernel/pid_max").ok().and_then(|s| s.trim().parse::<u32>().ok()).map_or(u32::MAX, |m| m + 1);
        let own = std::process::id();
        let names = [
            format!("porep-32g.matrices.tmp{dead}-0"),
            format!("porep-32g.matrices.tmp{dead}"),
            format!("snap-32g.matrices.tmp{own}-3"),
            "porep-32g.matrices".to_string(),
            format!("notes.tmp{dead}"),
        ];
        for n in &names {
            std::fs::write(dir.path().join(n), b"x").unwrap();
        }
        let _cache = MatrixCache::persistent(dir.path().to_path_buf());
        let mut left: Vec<String> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        left.sort();
        let mut want = names[2..].to_vec();
        want.sort();
        assert_eq!(left, want);
        assert_eq!(writer_of("a.matrices.tmp12-7"), Some(12));
        assert_eq!(writer_of("a.matrices.tmp12"), Some(12));
        assert_eq!(writer_of("a.matrices"), None);
        assert_eq!(writer_of("a.matrices.tmpx-1"), None);
    }

    /// A circuit that counts its syntheses.
    #[derive(Clone)]
    struct Counting<'a, C> {
        runs: &'a AtomicUsize,
        inner: C,
    }

    impl<C: Circuit<Scalar>> Circuit<Scalar> for Counting<'_, C> {
        fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            self.runs.fetch_add(1, Ordering::SeqCst);
            self.inner.synthesize(cs)
        }
    }

    cuzk_core::compiled_synthesis!(Counting<'_, cuzk_circuits::BuiltinCircuit>);

    #[test]
    fn concurrent_first_parallel_recordings_record_once_and_failures_are_retried() {
        // A recording in 3 parts runs the circuit 3 times; six callers at once must cause one.
        let shape = BuiltinShape::new(CircuitKind::SquaringChain, 6).unwrap().key();
        let cache = MatrixCache::default();
        let runs = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..6 {
                s.spawn(|| assert!(cache.get_or_record_in_parts(&shape, &Counted { runs: &runs, fail: false }, 3).is_some()));
            }
        });
        assert_eq!(runs.load(Ordering::SeqCst), 3, "six concurrent first syntheses recorded more than once");
        let sequential = ConstraintMatrices::record(Counted { runs: &AtomicUsize::new(0), fail: false }).unwrap();
        assert!(cache.get(&shape).unwrap().to_file_bytes("k") == sequential.to_file_bytes("k"));

        let other = BuiltinShape::new(CircuitKind::SquaringChain, 7).unwrap().key();
        let fails = AtomicUsize::new(0);
        assert!(cache.get_or_record_in_parts(&other, &Counted { runs: &fails, fail: true }, 2).is_none());
        assert!(cache.get(&other).is_none());
        assert!(cache.get_or_record_parallel(&other, &Counted { runs: &fails, fail: false }).is_some(), "a failed recording is retried");
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn concurrent_first_syntheses_record_once_and_failures_are_retried() {
        let shape = BuiltinShape::new(CircuitKind::SquaringChain, 4).unwrap().key();
        let cache = MatrixCache::default();
        let runs = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..6 {
                s.spawn(|| assert!(cache.get_or_record(&shape, &Counted { runs: &runs, fail: false }).is_some()));
            }
        });
        assert_eq!(runs.load(Ordering::SeqCst), 1, "six concurrent first syntheses recorded more than once");
        assert_eq!(cache.len(), 1);

        let other = BuiltinShape::new(CircuitKind::SquaringChain, 5).unwrap().key();
        let fails = AtomicUsize::new(0);
        assert!(cache.get_or_record(&other, &Counted { runs: &fails, fail: true }).is_none());
        assert!(cache.get(&other).is_none());
        assert!(cache.get_or_record(&other, &Counted { runs: &fails, fail: false }).is_some(), "a failed recording is retried");
        assert_eq!((fails.load(Ordering::SeqCst), cache.len()), (2, 2));
    }
}
