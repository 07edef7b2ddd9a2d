//! A circuit family from outside the workspace's circuit crates, registered through
//! `cuzk_daemon::families` (the door the built-in circuits use) and proved through the daemon:
//! its GENERIC jobs complete, and bellperson's verifier accepts every partition's proof against
//! the parameters the daemon generated for it.

use std::ops::RangeInclusive;
use std::sync::Arc;

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::{Bls12, Scalar};
use cuzk_core::circuit::{CircuitError, Partition, PublicInputs, ShapeKey, WitnessCheck};
use cuzk_core::params::Parameters;
use cuzk_core::witness::{ParallelWitness, SegmentCs, WitnessError};
use cuzk_daemon::families::{register_family, CircuitFamily, FamilyError, GenericShape};
use cuzk_daemon::proto;
use cuzk_worker::Work;
use ff::Field;
use rand::RngCore;

use crate::common::{daemon_with, stop};

/// `x ← x³ + x + 5`, `steps` times from `x0`; public inputs `x0` and the last `x`.
#[derive(Debug, Clone)]
struct CubeChain {
    x0: Scalar,
    steps: usize,
}

impl CubeChain {
    fn at(log_size: u32, seed: u64) -> CubeChain {
        // Two constraints a step, plus the inputs' rows, within the domain.
        CubeChain { x0: Scalar::from(seed + 3), steps: (1usize << (log_size - 1)) - 4 }
    }

    fn result(&self) -> Scalar {
        (0..self.steps).fold(self.x0, |x, _| x.square() * x + x + Scalar::from(5u64))
    }
}

impl Circuit<Scalar> for CubeChain {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut x_val = self.x0;
        let mut x = cs.alloc_input(|| "x0", || Ok(self.x0))?;
        for i in 0..self.steps {
            let sq_val = x_val.square();
            let sq = cs.alloc(|| format!("sq {i}"), || Ok(sq_val))?;
            cs.enforce(|| format!("square {i}"), |lc| lc + x, |lc| lc + x, |lc| lc + sq);
            let next_val = sq_val * x_val + x_val + Scalar::from(5u64);
            let next = if i + 1 == self.steps { cs.alloc_input(|| "out", || Ok(next_val))? } else { cs.alloc(|| format!("x {i}"), || Ok(next_val))? };
            cs.enforce(|| format!("cube {i}"), |lc| lc + sq, |lc| lc + x, |lc| lc + next - x - (Scalar::from(5u64), CS::one()));
            (x, x_val) = (next, next_val);
        }
        Ok(())
    }
}

cuzk_core::compiled_synthesis!(CubeChain);

/// The witness by running the circuit's own gadgets once, in one part.
impl ParallelWitness for CubeChain {
    fn witness_into(&self, input: &mut [Scalar], aux: &mut [Scalar]) -> Result<(), WitnessError> {
        let mut cs = SegmentCs::new(aux, 0, &mut input[1..], 1);
        let ran = self.clone().synthesize(&mut cs);
        cs.finish_after(0, ran)
    }
}

impl PublicInputs for CubeChain {
    fn public_inputs(&self) -> Result<Vec<Scalar>, CircuitError> {
        Ok(vec![self.x0, self.result()])
    }
}

struct CubeFamily;

impl CircuitFamily for CubeFamily {
    fn name(&self) -> &str {
        "cube-chain"
    }
    fn log_sizes(&self) -> RangeInclusive<u32> {
        4..=14
    }
    fn partition(&self, shape: ShapeKey, log_size: u32, seed: u64) -> Result<Work, CircuitError> {
        Ok(Arc::new(Partition { shape, check: WitnessCheck::Trusted, circuit: CubeChain::at(log_size, seed) }))
    }
    fn parameters(&self, log_size: u32, rng: &mut dyn RngCore) -> Result<Parameters, CircuitError> {
        Ok(cuzk_setup::generate_parameters(CubeChain::at(log_size, 0), &mut &mut *rng)?)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_family_registered_from_outside_is_proved_through_the_daemon() {
    static ONCE: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    ONCE.get_or_init(|| {
        register_family(Arc::new(CubeFamily)).expect("registered");
    });
    assert_eq!(register_family(Arc::new(CubeFamily)).unwrap_err(), FamilyError::Taken("cube-chain".into()));
    const K: u32 = 9;
    let d = daemon_with(&[], |cfg| cfg.params.generate_missing = true).await;
    let mut c = d.client().await;
    let (seed, partitions) = (40, 3);
    let job = proto::SubmitProofRequest {
        proof_kind: proto::ProofKind::Generic as i32,
        generic: Some(proto::GenericJob { circuit: "cube-chain".into(), log_size: K, seed, partitions }),
        ..Default::default()
    };
    let r = c.prove(proto::ProveRequest { submit: Some(job), timeout_ms: 0 }).await.expect("proved").into_inner();
    let r = r.result.expect("a result");
    assert_eq!(r.status, proto::await_proof_response::Status::Completed as i32, "{}", r.error_message);
    assert_eq!(r.proof.len(), 192 * partitions as usize);

    // bellperson's verifier, with the verifying key of the file the daemon generated.
    let path = cuzk_daemon::setup::params_path(&crate::common::params_dir(), GenericShape::new("cube-chain", K).unwrap());
    let params = bellperson::groth16::Parameters::<Bls12>::read(&std::fs::read(&path).expect("parameter file")[..], false).expect("bellperson reads it");
    let pvk = bellperson::groth16::prepare_verifying_key(&params.vk);
    for i in 0..partitions as usize {
        let circuit = CubeChain::at(K, seed + i as u64);
        let public = circuit.public_inputs().unwrap();
        assert_eq!(cuzk_daemon::client::decode_scalars(&r.public_inputs[i]).unwrap(), public, "partition {i}'s public inputs");
        let proof = bellperson::groth16::Proof::<Bls12>::read(&r.proof[192 * i..192 * (i + 1)]).expect("proof bytes");
        assert!(bellperson::groth16::verify_proof(&pvk, &proof, &public).expect("verify"), "partition {i}: bellperson rejects the proof");
        let mut wrong = public.clone();
        wrong[1] += Scalar::ONE;
        assert!(!bellperson::groth16::verify_proof(&pvk, &proof, &wrong).expect("verify"), "partition {i}: accepted for other public inputs");
    }

    // Sizes outside the family's range and unknown names are refused before they become jobs.
    for (name, k) in [("cube-chain", 3), ("cube-chain", 15), ("cube-chains", 9)] {
        let bad = proto::SubmitProofRequest {
            proof_kind: proto::ProofKind::Generic as i32,
            generic: Some(proto::GenericJob { circuit: name.into(), log_size: k, seed: 0, partitions: 1 }),
            ..Default::default()
        };
        let e = c.prove(proto::ProveRequest { submit: Some(bad), timeout_ms: 0 }).await.expect_err("refused");
        assert_eq!(e.code(), tonic::Code::InvalidArgument, "{name} 2^{k}: {e}");
    }
    stop(d).await;
}

#[test]
fn family_names_that_clash_are_refused() {
    struct Named(&'static str);
    impl CircuitFamily for Named {
        fn name(&self) -> &str {
            self.0
        }
        fn log_sizes(&self) -> RangeInclusive<u32> {
            4..=4
        }
        fn partition(&self, _: ShapeKey, _: u32, _: u64) -> Result<Work, CircuitError> {
            Err("unused".into())
        }
        fn parameters(&self, _: u32, _: &mut dyn RngCore) -> Result<Parameters, CircuitError> {
            Err("unused".into())
        }
    }
    assert_eq!(register_family(Arc::new(Named("squaring-chain"))).unwrap_err(), FamilyError::Taken("squaring-chain".into()));
    for bad in ["", "a/b", "x y", "../p", "porep"] {
        assert_eq!(register_family(Arc::new(Named(bad))).unwrap_err(), FamilyError::BadName(bad.into()), "{bad:?}");
    }
}
