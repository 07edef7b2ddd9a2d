//! `--filecoin KINDS`: one 2 KiB Filecoin partition (partition 0 of a sector sealed for the
//! run) proved through both paths on each backend, with the same `r, s`: the witness path
//! (witness on all threads, uploaded alone; `a, b, c` evaluated and checked on the backend) and
//! the host path (the same witness, `a, b, c` as sparse products and checked on the host, all
//! copied). The two proofs must be the same bytes, and verify.
//!
//! Per path and rep: witness wall and CPU seconds (and, once, one thread's ns per constraint),
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
    let m = std::sync::Arc::new(ConstraintMatrices::record(c.clone()).expect("record"));
    let record = secs(t);
    let resident = backend.load_matrices(&m).expect("matrices resident");
    let rows = m.num_constraints();
    let alloc = backend.host_allocator();
    // One thread's witness (sequential synthesis), for ns per constraint.
    let t = Instant::now();
    let seq = m.witness(c.clone(), alloc.clone()).expect("witness");
    let one_thread = secs(t);
    drop(seq);
    println!(
        "{} on {name}: {rows} constraints, {} inputs, {} aux, matrices {} entries ({:.0} MiB, recorded in {record:.2} s); witness on one thread {:.3} s = {:.0} ns/constraint",
        shape.id(),
        m.num_inputs,
        m.num_aux,
        m.num_entries(),
        mib(m.heap_bytes()),
        one_thread,
        one_thread / rows as f64 * 1e9
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
