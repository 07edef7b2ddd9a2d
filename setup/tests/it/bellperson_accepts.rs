//! Parameters from our generator are accepted by bellperson: it proves with them, verifies the
//! proof, and our prover produces the same bytes.

use bellperson::groth16;
use blstrs::{Bls12, Scalar};
use cuzk_backend_cpu::CpuBackend;
use cuzk_circuits::CircuitKind;
use cuzk_core::alloc::heap;
use cuzk_core::params::Validation;
use cuzk_core::prover::{prove, ProvingKey};
use cuzk_core::synth::{synthesize, SizeHint};
use ff::Field;
use rand::SeedableRng;

#[test]
fn bellperson_proves_and_verifies_with_our_parameters() {
    for (kind, k) in [(CircuitKind::SquaringChain, 9), (CircuitKind::Sha256Chain, 15)] {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(k as u64);
        let circuit = kind.instance(k, 4).unwrap();
        let public = circuit.public_inputs();
        let ours = cuzk_setup::generate_parameters(circuit.clone(), &mut rng).unwrap();
        let bytes = ours.to_bytes();
        let params = groth16::Parameters::<Bls12>::read(&bytes[..], true).expect("bellperson reads our file");
        let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        let theirs = groth16::create_proof::<Bls12, _, _>(circuit.clone(), &params, r, s).unwrap();
        let pvk = groth16::prepare_verifying_key(&params.vk);
        assert!(groth16::verify_proof(&pvk, &theirs, &public).unwrap(), "{kind:?}: bellperson rejects its proof");
        let mut wrong = public.clone();
        wrong[0] += Scalar::ONE;
        assert!(!groth16::verify_proof(&pvk, &theirs, &wrong).unwrap());

        let backend = CpuBackend::new();
        let parsed = cuzk_core::params::Parameters::from_bytes(&bytes, Validation::Full).unwrap();
        let key = ProvingKey::load(&backend, parsed).unwrap();
        let synth = synthesize(circuit, heap(), SizeHint::default()).unwrap();
        let proof = prove(&backend, &key, synth, r, s, &mut |_| {}).unwrap();
        let mut tb = Vec::new();
        theirs.write(&mut tb).unwrap();
        assert_eq!(proof.to_bytes().to_vec(), tb, "{kind:?}: proofs differ");
    }
}

#[test]
fn unconstrained_aux_variables_are_refused() {
    #[derive(Clone)]
    struct Lonely;
    impl bellpepper_core::Circuit<Scalar> for Lonely {
        fn synthesize<CS: bellpepper_core::ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), bellpepper_core::SynthesisError> {
            let x = cs.alloc(|| "x", || Ok(Scalar::ONE))?;
            cs.alloc(|| "unused", || Ok(Scalar::ONE))?;
            cs.enforce(|| "x*x=x", |lc| lc + x, |lc| lc + x, |lc| lc + x);
            Ok(())
        }
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    assert!(matches!(cuzk_setup::generate_parameters(Lonely, &mut rng), Err(cuzk_setup::SetupError::UnconstrainedVariable(1))));
}
