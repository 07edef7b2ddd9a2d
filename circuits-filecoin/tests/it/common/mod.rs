//! Shared helpers: one parameter cache and one set of 2 KiB fixtures per test binary, and a
//! proof made by cuzk's own prover on the CPU backend.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use cuzk_backend_cpu::CpuBackend;
use cuzk_circuits_filecoin::{params, prepare, FilKind, FilRequest, FilShape};
use cuzk_core::backend::Backend;
use cuzk_core::compiled::CompiledSynthesis;
use cuzk_core::params::{Parameters, Validation};
use cuzk_core::prover::{prove, ProvingKey};
use cuzk_core::synth::SizeHint;
use ff::Field;

pub const KIB2: u64 = 2048;

/// The parameter cache of this test build; `filecoin-proofs` is pointed at it before anything
/// else runs.
pub fn cache() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fil-params");
        std::fs::create_dir_all(&d).expect("cache dir");
        cuzk_circuits_filecoin::verify::use_cache_dir(&d);
        d
    })
    .clone()
}

/// The 2 KiB fixtures (sealed once per test binary).
pub fn fixtures() -> Vec<FilRequest> {
    static F: OnceLock<Vec<FilRequest>> = OnceLock::new();
    let dir = cache();
    F.get_or_init(|| {
        let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
        cuzk_circuits_filecoin::fixtures::generate(&work, KIB2, 7).unwrap_or_else(|e| panic!("sealing in {}: {e}", dir.display()))
    })
    .clone()
}

/// The fixture of `kind`.
pub fn fixture(kind: FilKind) -> FilRequest {
    fixtures().into_iter().find(|r| r.kind == kind).expect("fixture")
}

/// Parameters for `kind` at 2 KiB (generated with cuzk-setup once).
pub fn ensure_params(kind: FilKind) -> Parameters {
    static LOCK: Mutex<()> = Mutex::new(());
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let id = FilShape::new(kind, KIB2).expect("id");
    let f = params::generate(&cache(), id, false, &mut rand::rngs::OsRng).expect("params");
    let bytes = std::fs::read(&f.params).expect("read params");
    Parameters::from_bytes(&bytes, Validation::Trusted).expect("parse params")
}

/// Proves `req` with cuzk's CPU prover: the concatenated partition proofs.
pub fn cuzk_prove(req: &FilRequest) -> Vec<u8> {
    let params = ensure_params(req.kind);
    let b = CpuBackend::new();
    let key = ProvingKey::load(&b, params).expect("load");
    let p = prepare(req).expect("prepare");
    let mut out = Vec::new();
    for k in 0..p.partitions() {
        let c = p.partition(k);
        let public = c.public_inputs().expect("inputs");
        let s = c.synthesize_in_full(b.host_allocator(), SizeHint::default()).expect("synthesize");
        assert_eq!(&s.input[1..], &public[..], "public inputs");
        let mut rng = rand::rngs::OsRng;
        let proof = prove(&b, &key, s, blstrs::Scalar::random(&mut rng), blstrs::Scalar::random(&mut rng), &mut |_| {}).expect("prove");
        out.extend_from_slice(&proof.to_bytes());
    }
    out
}
