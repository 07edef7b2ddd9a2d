//! `cuzk compare-bellperson`: our CPU prover against bellperson's, same circuits, same parameters,
//! same `r, s`, in one run.

use std::path::Path;
use std::time::{Duration, Instant};

use std::sync::Arc;

use blstrs::{Bls12, Scalar};
use cuzk_backend_cpu::CpuBackend;
use cuzk_circuits::BuiltinShape;
use cuzk_circuits::CircuitKind;
use cuzk_core::engine::{CircuitId, DeviceId, Location};
use cuzk_core::params::Validation;
use cuzk_worker::{prove_one, BackendWorker, LoadTask, ParamSource, PartData, StageOutput, Worker};
use ff::Field;
use rand::SeedableRng;

use crate::{setup, CliError};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Runs the comparison and prints a Markdown table.
pub fn compare_bellperson(dir: &Path, circuits: &[String], log_sizes: &[u32], reps: usize) -> Result<(), CliError> {
    let kinds: Vec<CircuitKind> =
        if circuits.is_empty() { CircuitKind::ALL.to_vec() } else { circuits.iter().map(|c| CircuitKind::from_name(c)).collect::<Result<_, _>>()? };
    let reps = reps.max(1);
    println!("| circuit | domain | constraints | bellperson (s) | cuzk cpu (s) | speed-up |");
    println!("|---|---|---|---|---|---|");
    for kind in kinds {
        for &k in log_sizes {
            if k < kind.min_log_size() {
                continue;
            }
            let path = setup::ensure_params(dir, crate::families::GenericShape::new(kind.name(), k)?, false)?;
            let mut bp_bytes = Vec::new();
            let bp_params =
                bellperson::groth16::Parameters::<Bls12>::read(&std::fs::read(&path).map_err(|source| CliError::Io { path: path.clone(), source })?[..], false)
                    .map_err(|source| CliError::Io { path: path.clone(), source })?;
            // Full synthesis every time, as bellperson does: no recorded matrices.
            let worker = BackendWorker::new(vec![Arc::new(CpuBackend::new())]).without_matrix_cache();
            let id = CircuitId(0);
            worker.load_params(LoadTask {
                circuit: id,
                at: Location::Device(DeviceId(0)),
                source: ParamSource::File(path.clone()),
                validation: Validation::Trusted,
                from_host: false,
                streamed: false,
            })?;
            let shape = BuiltinShape::new(kind, k)?;
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(k as u64);
            let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
            let mut ours = Vec::new();
            let mut theirs = Vec::new();
            let mut constraints = 0;
            for rep in 0..reps {
                let circuit = kind.instance(k, rep as u64)?;
                let t = Instant::now();
                let (p, _) = prove_one(&worker, id, 0, Arc::new(shape.partition(rep as u64)?), Some((r, s)), false, |_, _, out| {
                    if let StageOutput::Synthesized { data: PartData::Synthesized(s), .. } = out {
                        constraints = s.num_constraints();
                    }
                })?;
                ours.push(t.elapsed());
                let t = Instant::now();
                let q = bellperson::groth16::create_proof::<Bls12, _, _>(circuit, &bp_params, r, s).map_err(|e| CliError::Setup(e.to_string()))?;
                theirs.push(t.elapsed());
                bp_bytes.clear();
                q.write(&mut bp_bytes).expect("write to a Vec");
                if bp_bytes != p.to_bytes() {
                    return Err(CliError::InvalidProof);
                }
            }
            let (o, t) = (median(ours), median(theirs));
            println!(
                "| {} | 2^{k} | {constraints} | {:.3} | {:.3} | {:.2}× |",
                kind.name(),
                t.as_secs_f64(),
                o.as_secs_f64(),
                t.as_secs_f64() / o.as_secs_f64()
            );
        }
    }
    Ok(())
}
