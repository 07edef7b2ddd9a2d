//! `--filecoin KINDS`: one 2 KiB Filecoin partition (partition 0 of a sector sealed for the
//! run) proved through both paths on each backend, with the same `r, s`: the witness path
//! (witness on all threads, uploaded alone; `a, b, c` evaluated and checked on the backend) and
//! the host path (the same witness, `a, b, c` as sparse products and checked on the host, all
//! copied). The two proofs must be the same bytes, and verify.
//!
//! Per path and rep: witness wall and CPU seconds (and, once, one thread's ns per constraint for
//! Filecoin's gadgets and for the witness path's writer, native for PoRep),
//! the host products' wall and CPU seconds, the host check, the bytes a partition copies
//! host→device (which are also the host bytes it holds between synthesis and upload), and the
//! backend's evaluation and check times, each waited for. Parameters (`cuzk-setup`, random)
//! and the sector are made in `--fil-dir` (default: a directory in `TMPDIR`), parameters kept
//! there for later runs.

use std::path::Path;
use std::time::Instant;

use blstrs::Scalar;
use cuzk_circuits_filecoin::{fixtures, params, prepare, verify as fil_verify, FilRequest, FilShape};
use cuzk_core::backend::Backend;
use cuzk_core::compiled::CompiledSynthesis;
use cuzk_core::matrices::ConstraintMatrices;
use cuzk_core::params::Validation;
use cuzk_core::prover::{compute_h, finalize, msms, upload, upload_witness, ProvingKey};
use ff::Field;
use rand::SeedableRng;

use super::{cpu_time, median};

/// The sealed sector's requests, made once per run.
pub struct Fixtures(pub Vec<FilRequest>);

impl Fixtures {
    /// Seals a 2 KiB sector in `dir` (its requests of every kind).
    pub fn seal(dir: &Path) -> Fixtures {
        std::fs::create_dir_all(dir).expect("--fil-dir");
        fil_verify::use_cache_dir(dir);
        let t = Instant::now();
        let r = fixtures::generate(dir, 2048, 7).expect("sealing a 2 KiB sector");
        eprintln!("2 KiB sector sealed, vanilla proofs made in {:.1} s", t.elapsed().as_secs_f64());
        Fixtures(r)
    }
}

fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

/// Both paths of `shape` on `backend`, `reps` times (at least once).
pub fn run<B: Backend>(backend: &B, name: &str, shape: FilShape, dir: &Path, fx: &Fixtures, reps: usize) {
    let Some(req) = fx.0.iter().find(|r| r.kind == shape.kind) else {
        println!("{}: no fixture", shape.id());
        return;
    };
    let t = Instant::now();
    let files = params::generate(dir, shape, false, &mut rand::rngs::OsRng).expect("parameters");
    let p = cuzk_worker::read_params(&files.params, Validation::Trusted).expect("read parameters");
    let key = ProvingKey::load(backend, p).expect("parameters resident");
    eprintln!("{}: parameters ready and resident in {:.1} s", shape.id(), secs(t));
    let prepared = prepare(req).expect("prepare");
    let c = prepared.partition(0);
    let public = c.public_inputs().expect("public inputs");
    let t = Instant::now();
    let m = std::sync::Arc::new(c.record().expect("record"));
    let record = secs(t);
    let resident = backend.load_matrices(&m).expect("matrices resident");
    let rows = m.num_constraints();
    let alloc = backend.host_allocator();
    // One thread's witness, for ns per constraint: Filecoin's gadgets run sequentially, and the
    // witness path's writer (native where the kind has one) on a one-thread pool; the same values.
    let t = Instant::now();
    let gadgets = m.witness(c.clone(), alloc.clone()).expect("witness");
    let one_thread = secs(t);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("one-thread pool");
    let t = Instant::now();
    let native = pool.install(|| m.witness_parallel(&c, alloc.clone())).expect("witness");
    let native_one_thread = secs(t);
    assert!(*native.aux == *gadgets.aux && *native.input == *gadgets.input, "{}: the witness path's values differ from the gadgets'", shape.id());
    drop((gadgets, native));
    let per = |t: f64| t / rows as f64 * 1e9;
    println!(
        "{} on {name}: {rows} constraints, {} inputs, {} aux, matrices {} entries ({:.0} MiB, recorded in {record:.2} s); witness on one thread: gadgets {:.3} s = {:.0} ns/constraint, witness path {:.3} s = {:.0} ns/constraint ({:.2}x)",
        shape.id(),
        m.num_inputs,
        m.num_aux,
        m.num_entries(),
        mib(m.heap_bytes()),
        one_thread,
        per(one_thread),
        native_one_thread,
        per(native_one_thread),
        one_thread / native_one_thread
    );
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0xf11ec0);
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let witness_bytes = 32 * (m.num_inputs + m.num_aux);
    let abc_bytes = 3 * 32 * rows;
    let (mut w_wall, mut w_cpu, mut e_dev, mut k_dev, mut wp_total) = (vec![], vec![], vec![], vec![], vec![]);
    let (mut hw_wall, mut h_wall, mut h_cpu, mut h_check, mut hp_total) = (vec![], vec![], vec![], vec![], vec![]);
    for _ in 0..reps.max(1) {
        // The witness path.
        let (t, cpu) = (Instant::now(), cpu_time());
        let w = m.witness_parallel(&c, alloc.clone()).expect("parallel witness");
        w_wall.push(secs(t));
        w_cpu.push((cpu_time() - cpu).as_secs_f64());
        assert!(w.input.get(1..) == Some(&public[..]), "{}: public inputs differ", shape.id());
        // The evaluation and the check alone, each waited for, on a copy of the witness.
        let up = |v: &[Scalar]| backend.upload_scalars(cuzk_core::alloc::PinnedVec::from_slice_in(v, alloc.clone()).expect("host memory")).expect("upload");
        let (input, aux) = (up(&w.input), up(&w.aux));
        let domain = cuzk_core::domain::Domain::for_len(rows).expect("domain");
        backend.wait_idle().expect("wait");
        let t = Instant::now();
        let [a, b, cc] = backend.evaluate_constraints(&resident, &input, &aux, &domain).expect("evaluate");
        backend.wait_idle().expect("wait");
        e_dev.push(secs(t));
        let t = Instant::now();
        assert_eq!(backend.first_unsatisfied(&a, &b, &cc, rows).expect("check"), None, "{}: unsatisfied", shape.id());
        k_dev.push(secs(t));
        drop((input, aux, a, b, cc));
        let t = Instant::now();
        let upl = upload_witness(backend, &key, &m, &resident, w).expect("upload witness");
        assert_eq!(backend.first_unsatisfied(&upl.a, &upl.b, &upl.c, rows).expect("check"), None);
        let (h, domain, wit) = compute_h(backend, upl).expect("h");
        let ms = msms(backend, &key, &h, &domain, &wit).expect("msms");
        let via_witness = finalize(&key.vk, &ms, r, s);
        wp_total.push(secs(t));

        // The host path: the same witness, host products, host check, everything copied.
        let t = Instant::now();
        let w = m.witness_parallel(&c, alloc.clone()).expect("parallel witness");
        hw_wall.push(secs(t));
        let (t, cpu) = (Instant::now(), cpu_time());
        let synth = cuzk_worker::matrices::evaluate(&m, w, alloc.clone()).expect("host products");
        h_wall.push(secs(t));
        h_cpu.push((cpu_time() - cpu).as_secs_f64());
        let t = Instant::now();
        let cpu_oracle = cuzk_backend_cpu::CpuBackend::new();
        assert_eq!(cpu_oracle.first_unsatisfied(&synth.a, &synth.b, &synth.c, rows).expect("host check"), None);
        h_check.push(secs(t));
        let t = Instant::now();
        let upl = upload(backend, &key, synth).expect("upload");
        let (h, domain, wit) = compute_h(backend, upl).expect("h");
        let ms = msms(backend, &key, &h, &domain, &wit).expect("msms");
        let via_host = finalize(&key.vk, &ms, r, s);
        hp_total.push(secs(t));
        assert_eq!(via_witness.to_bytes(), via_host.to_bytes(), "{}: the two paths' proofs differ", shape.id());
        assert!(cuzk_core::proof::verify(&key.vk, &via_witness, &public).expect("verify"), "{}: the proof does not verify", shape.id());
        if prepared.partitions() == 1 {
            assert!(fil_verify::verify(req, &via_witness.to_bytes()).expect("Filecoin's verifier"), "{}: Filecoin rejects the proof", shape.id());
        }
    }
    let ms = |v: &[f64]| median(v.to_vec()) * 1e3;
    println!("| circuit | backend | path | witness ms (CPU s) | host products ms (CPU s) | check ms | eval ms | copied host→device MiB | host MiB per partition | upload → proof ms |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    println!(
        "| {} | {name} | witness, device evaluation and check | {:.1} ({:.2}) | — | {:.1} (device) | {:.1} (device) | {:.1} | {:.1} | {:.1} |",
        shape.id(),
        ms(&w_wall),
        median(w_cpu.clone()),
        ms(&k_dev),
        ms(&e_dev),
        mib(witness_bytes),
        mib(witness_bytes),
        ms(&wp_total)
    );
    println!(
        "| {} | {name} | witness, host products and check | {:.1} | {:.1} ({:.2}) | {:.1} (host) | — | {:.1} | {:.1} | {:.1} |",
        shape.id(),
        ms(&hw_wall),
        ms(&h_wall),
        median(h_cpu.clone()),
        ms(&h_check),
        mib(witness_bytes + abc_bytes),
        mib(witness_bytes + abc_bytes),
        ms(&hp_total)
    );
    println!("(proofs of both paths byte-identical and verified; {} threads)", rayon::current_num_threads());
}

/// An empty assignment of `inputs` inputs (`ONE` first) and `aux` aux variables.
fn zeros(inputs: usize, aux: usize) -> (Vec<Scalar>, Vec<Scalar>) {
    let mut input = vec![Scalar::ZERO; inputs];
    input[0] = Scalar::ONE;
    (input, vec![Scalar::ZERO; aux])
}

/// Seconds of one thread writing partition `c`'s witness (of size `n`) through Filecoin's
/// gadgets and natively, after checking the two give the same values. The native writer runs
/// once untimed first: it measures the partition's header once per job.
fn gadgets_against_native(c: &cuzk_circuits_filecoin::PartitionCircuit, n: cuzk_circuits_filecoin::CircuitSize, id: &str) -> (f64, f64) {
    let (mut gi, mut ga) = zeros(n.inputs, n.aux);
    let t = Instant::now();
    c.witness_sequential(&mut gi, &mut ga).expect("gadgets");
    let gadgets = secs(t);
    let (mut ni, mut na) = zeros(n.inputs, n.aux);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("one-thread pool");
    assert!(pool.install(|| c.witness_in_parts(&mut ni, &mut na)).expect("native"), "{id}: the native writer did not run");
    let t = Instant::now();
    pool.install(|| c.witness_in_parts(&mut ni, &mut na)).expect("native");
    let native = secs(t);
    assert!(ni == gi && na == ga, "{id}: the native witness differs from the gadgets'");
    (gadgets, native)
}

/// `--fil-shapes 32g,64g`: the witness of a synthetic PoRep partition of `sector_size`
/// (`cuzk_circuits_filecoin::synthetic::porep`: the real circuit, fabricated values; no
/// proof). Filecoin's gadgets and the native writer on one thread over a partition of two
/// challenges (the same values, checked), then the native writer over a whole partition on all
/// threads. Sizes are counted on partitions of one and two challenges (a partition is a header
/// and equal challenges).
pub fn synthetic_porep_witness(sector_size: u64) {
    use cuzk_circuits_filecoin::synthetic::porep as synthetic;
    let id = cuzk_circuits_filecoin::FilShape::new(cuzk_circuits_filecoin::FilKind::PoRep, sector_size).expect("a PoRep sector size").id();
    let job = |challenges: Option<usize>| synthetic::porep(sector_size, Some(1), challenges, 3).expect("synthetic job").partition(0);
    let (one, two) = (job(Some(1)).size().expect("size"), job(Some(2)).size().expect("size"));
    let n = synthetic::porep_challenges(sector_size).expect("challenges per partition");
    let full = |a: usize, b: usize| a + (n - 1) * (b - a);
    let (rows, inputs, aux) = (full(one.constraints, two.constraints), full(one.inputs, two.inputs), full(one.aux, two.aux));
    // One thread, two challenges: gadgets against the native writer.
    let (gadgets, native) = gadgets_against_native(&job(Some(2)), two, &id);
    let per = |t: f64, rows: usize| t / rows as f64 * 1e9;
    println!(
        "{id} (synthetic): {rows} constraints, {inputs} inputs, {aux} aux per partition of {n} challenges; one thread, 2 challenges ({} constraints): gadgets {:.3} s = {:.0} ns/constraint, native {:.3} s = {:.0} ns/constraint ({:.2}x)",
        two.constraints,
        gadgets,
        per(gadgets, two.constraints),
        native,
        per(native, two.constraints),
        gadgets / native
    );
    // A whole partition, native, all threads.
    let c = job(None);
    let (mut input, mut aux_buf) = zeros(inputs, aux);
    let (t, cpu) = (Instant::now(), cpu_time());
    assert!(c.witness_in_parts(&mut input, &mut aux_buf).expect("native"), "{id}: the native writer did not run");
    let (wall, cpu) = (secs(t), (cpu_time() - cpu).as_secs_f64());
    println!(
        "{id} (synthetic): whole partition native on {} threads: {:.3} s wall, {:.2} s CPU ({:.0} ns/constraint of CPU); witness {:.2} GiB",
        rayon::current_num_threads(),
        wall,
        cpu,
        per(cpu, rows),
        (32 * (inputs + aux)) as f64 / (1u64 << 30) as f64
    );
}

/// The length and checksum of `m`'s file form (the last 8 bytes are an XXH3-64 of the rest):
/// two recordings compared without holding either's file bytes.
fn file_digest(m: &ConstraintMatrices) -> (u64, [u8; 8]) {
    struct Tail(u64, [u8; 8]);
    impl std::io::Write for Tail {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len() as u64;
            let keep = buf.len().min(8);
            self.1.rotate_left(keep);
            self.1[8 - keep..].copy_from_slice(&buf[buf.len() - keep..]);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut t = Tail(0, [0; 8]);
    m.write_file("bench", &mut t).expect("writing to a sink");
    (t.0, t.1)
}

/// `--fil-shapes`: recording the matrices of a whole synthetic PoRep partition of
/// `sector_size` (`cuzk_circuits_filecoin::synthetic::porep`, the real challenge count) sequentially
/// (`ConstraintMatrices::record`) against in parallel on all threads
/// (`cuzk_worker::matrices::record_parallel`) and from two of its challenges
/// (`ConstraintMatrices::record_repeated`), checked to give the same file bytes; and the
/// circuit run once without building any constraint (`ShapeCounter`), the part of its work
/// every thread of a parallel recording repeats.
pub fn synthetic_porep_recording(sector_size: u64) {
    use cuzk_circuits_filecoin::synthetic::porep as synthetic;
    let id = cuzk_circuits_filecoin::FilShape::new(cuzk_circuits_filecoin::FilKind::PoRep, sector_size).expect("a PoRep sector size").id();
    let c = synthetic::porep(sector_size, Some(1), None, 3).expect("synthetic job").partition(0);
    let threads = rayon::current_num_threads();
    let t = Instant::now();
    let counted = cuzk_core::synth::ShapeCounter::of(c.clone()).expect("count");
    let skip = secs(t);
    let t = Instant::now();
    let seq = c.record().expect("record");
    let sequential = secs(t);
    let (rows, entries, want) = (seq.num_constraints(), seq.num_entries(), file_digest(&seq));
    assert_eq!(rows, counted.constraints, "{id}: the counter and the recorder disagree");
    drop(seq);
    let t = Instant::now();
    let par = cuzk_worker::matrices::record_parallel(&c, threads).expect("record_parallel");
    let parallel = secs(t);
    assert!(file_digest(&par) == want, "{id}: parallel recording differs from sequential recording");
    drop(par);
    let r = cuzk_core::witness::ParallelWitness::repeats(&c).expect("a PoRep partition repeats its challenges");
    let t = Instant::now();
    let rep = c.record_repeated(&r).expect("record_repeated").expect("the challenges repeat");
    let repeated = secs(t);
    assert!(file_digest(&rep) == want, "{id}: recording from two challenges differs from sequential recording");
    println!(
        "{id} (synthetic): recording one partition ({rows} constraints, {entries} entries): sequential {sequential:.3} s, parallel on {threads} threads {parallel:.3} s ({:.2}x), from 2 of its {} challenges {repeated:.3} s ({:.2}x), same bytes; the circuit without constraints (what each thread repeats) {skip:.3} s = {:.2} of sequential",
        sequential / parallel,
        r.count,
        sequential / repeated,
        skip / sequential
    );
}

/// `--fil-shapes`: the witness of a synthetic SnapDeals partition of `sector_size`
/// (`cuzk_circuits_filecoin::synthetic::snap`, the real challenge count): Filecoin's gadgets and the
/// native writer on one thread (the same values, checked), then the native writer on all
/// threads.
pub fn synthetic_snap_witness(sector_size: u64) {
    let id = cuzk_circuits_filecoin::FilShape::new(cuzk_circuits_filecoin::FilKind::SnapDeals, sector_size).expect("a SnapDeals sector size").id();
    let c = cuzk_circuits_filecoin::synthetic::snap::snap(sector_size, None, 3).expect("synthetic job").partition(0);
    let n = c.size().expect("size");
    let (gadgets, native) = gadgets_against_native(&c, n, &id);
    let (mut input, mut aux) = zeros(n.inputs, n.aux);
    let (t, cpu) = (Instant::now(), cpu_time());
    c.witness_in_parts(&mut input, &mut aux).expect("native");
    let (wall, cpu) = (secs(t), (cpu_time() - cpu).as_secs_f64());
    let per = |t: f64| t / n.constraints as f64 * 1e9;
    println!(
        "{id} (synthetic): {} constraints, {} inputs, {} aux; one thread: gadgets {:.3} s = {:.0} ns/constraint, native {:.3} s = {:.0} ns/constraint ({:.2}x); native on {} threads {:.3} s wall, {:.2} s CPU ({:.0} ns/constraint of CPU)",
        n.constraints,
        n.inputs,
        n.aux,
        gadgets,
        per(gadgets),
        native,
        per(native),
        gadgets / native,
        rayon::current_num_threads(),
        wall,
        cpu,
        per(cpu)
    );
}

/// `--fil-shares porep-32g,snap-32g`: the scalar shares (0, 1, small, dense) of the A, B and L
/// MSMs of a synthetic partition of `kind` and `sector_size` (real circuit, fabricated values;
/// `circuits-filecoin/tests/it/witness.rs` checks at 2 KiB that they are a real sector's), the
/// matrices recorded for the densities (from two challenges where the blocks repeat, else in parallel).
pub fn synthetic_shares(kind: cuzk_circuits_filecoin::FilKind, sector_size: u64) {
    use cuzk_circuits_filecoin::{synthetic, FilKind};
    let id = FilShape::new(kind, sector_size).expect("a sector size of this kind").id();
    let c = match kind {
        FilKind::PoRep => synthetic::porep::porep(sector_size, Some(1), None, 3).expect("synthetic job").partition(0),
        FilKind::SnapDeals => synthetic::snap::snap(sector_size, None, 3).expect("synthetic job").partition(0),
        _ => prepare_unchecked_partition(kind, sector_size),
    };
    let t = Instant::now();
    let m = record_fast(&id, &c);
    let recorded = secs(t);
    let (mut input, mut aux) = zeros(m.num_inputs, m.num_aux);
    let t = Instant::now();
    let native = c.witness_in_parts(&mut input, &mut aux).expect("native witness");
    let written = secs(t);
    assert!(native, "{id}: the witness was not written in parts");
    let w = cuzk_core::msm::WitnessShares::of(&input, &aux, m.densities());
    println!("{id} (synthetic): {} constraints; matrices recorded in {recorded:.1} s, witness in {written:.2} s", m.num_constraints());
    for (msm, shares) in [("A", w.a), ("B (G1 and G2)", w.b), ("L", w.l)] {
        println!("  {msm}: {shares}");
    }
}

/// The matrices of `c` (shape `id`) as the daemon records them
/// (`cuzk_worker::matrices::record_partition`: from two blocks where they repeat, else on all
/// threads).
fn record_fast(id: &str, c: &cuzk_circuits_filecoin::PartitionCircuit) -> ConstraintMatrices {
    let partition =
        cuzk_core::circuit::Partition { shape: cuzk_core::circuit::ShapeKey::new(id), check: cuzk_core::circuit::WitnessCheck::Ignore, circuit: c.clone() };
    cuzk_worker::matrices::record_partition(&partition, rayon::current_num_threads()).expect("record")
}

/// Partition 0 of a synthetic PoSt request of `kind` and `sector_size`.
fn prepare_unchecked_partition(kind: cuzk_circuits_filecoin::FilKind, sector_size: u64) -> cuzk_circuits_filecoin::PartitionCircuit {
    let req = cuzk_circuits_filecoin::synthetic_request(kind, sector_size, 3).expect("synthetic request");
    cuzk_circuits_filecoin::prepare_unchecked(&req).expect("prepare").partition(0)
}

/// `--fil-shape-proofs 32g` (`snap-32g`): one whole synthetic PoRep C2 (SnapDeals proof) of
/// `sector_size` (its real partition count) proved on `backend` with timing-only parameters of
/// the circuit's exact shape (`super::timing_params`: pseudo-random points, so nothing is
/// verified): the matrices recorded from partition 0, made resident with the parameters, then
/// every partition's witness written on a thread of its own (the next one while the device
/// proves the current one) and proved through the witness path. Prints the one-time costs and
/// per partition the witness and the upload → proof time, then the proof's wall time from the
/// first witness to the last partition.
pub fn synthetic_proofs<B: Backend>(backend: &B, name: &str, kind: cuzk_circuits_filecoin::FilKind, sector_size: u64) {
    use cuzk_circuits_filecoin::FilKind;
    let id = FilShape::new(kind, sector_size).expect("a sector size of this kind").id();
    let job = match kind {
        FilKind::PoRep => cuzk_circuits_filecoin::synthetic::porep::porep(sector_size, None, None, 5).expect("synthetic job"),
        _ => cuzk_circuits_filecoin::prepare_unchecked(&cuzk_circuits_filecoin::synthetic_request(kind, sector_size, 5).expect("synthetic request"))
            .expect("prepare"),
    };
    let parts = job.partitions();
    let t = Instant::now();
    let m = std::sync::Arc::new(record_fast(&id, &job.partition(0)));
    let record = secs(t);
    let rows = m.num_constraints();
    println!(
        "{id} (synthetic) on {name}: {parts} partitions of {rows} constraints, {} inputs, {} aux; matrices {} entries ({:.0} MiB), recorded in {record:.1} s",
        m.num_inputs,
        m.num_aux,
        m.num_entries(),
        mib(m.heap_bytes())
    );
    let t = Instant::now();
    let params = super::timing_params(&m);
    let generated = secs(t);
    let t = Instant::now();
    let key = ProvingKey::load(backend, params).expect("parameters resident");
    let loaded = secs(t);
    let t = Instant::now();
    let resident = backend.load_matrices(&m).expect("matrices resident");
    backend.wait_idle().expect("wait");
    println!(
        "  timing-only parameters generated in {generated:.1} s, resident in {loaded:.1} s; matrices resident in {:.1} s ({:.0} MiB on the device)",
        secs(t),
        backend.matrices_bytes(&resident) as f64 / (1 << 20) as f64
    );
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x5ea1);
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let alloc = backend.host_allocator();
    let start = Instant::now();
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    std::thread::scope(|scope| {
        let (job, m, alloc) = (&job, &m, alloc.clone());
        scope.spawn(move || {
            for k in 0..parts {
                let t = Instant::now();
                let w = m.witness_parallel(&job.partition(k), alloc.clone()).expect("witness");
                if tx.send((w, secs(t))).is_err() {
                    return;
                }
            }
        });
        for k in 0..parts {
            let (w, witness) = rx.recv().expect("a witness");
            let t = Instant::now();
            let upl = upload_witness(backend, &key, m, &resident, w).expect("upload witness");
            let (h, domain, wit) = compute_h(backend, upl).expect("h");
            let ms = msms(backend, &key, &h, &domain, &wit).expect("msms");
            let _timing_only = finalize(&key.vk, &ms, r, s);
            println!("  partition {k}: witness {:.0} ms ({} threads), upload → proof {:.0} ms", witness * 1e3, rayon::current_num_threads(), secs(t) * 1e3);
        }
    });
    let wall = secs(start);
    println!("{id} (synthetic) on {name}: {parts} partitions proved in {wall:.2} s from the first witness ({:.2} s a partition)", wall / parts as f64);
}
