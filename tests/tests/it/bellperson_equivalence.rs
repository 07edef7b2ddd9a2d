//! Our proofs equal bellperson's byte for byte (same parameters, same `r, s`), bellperson
//! verifies them, and a wrong public input is rejected.

use bellpepper_core::{Circuit, ConstraintSystem, LinearCombination, SynthesisError, Variable};
use bellperson::groth16;
use blstrs::{Bls12, Scalar};
use cuzk_backend_cpu::CpuBackend;
use cuzk_core::alloc::heap;
use cuzk_core::backend::Backend;
use cuzk_core::matrices::ConstraintMatrices;
use cuzk_core::params::{Parameters, Validation};
use cuzk_core::proof::{verify, Proof};
use cuzk_core::prover::{compute_h, finalize, msms, prove, upload_witness, ProvingKey};
use cuzk_core::synth::{synthesize, SizeHint};
use ff::Field;
use proptest::prelude::*;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// How a coefficient is drawn.
#[derive(Debug, Clone, Copy)]
enum Coeff {
    Zero,
    One,
    MinusOne,
    Random,
}

/// A term: which earlier variable (index into the allocated list) and its coefficient.
#[derive(Debug, Clone)]
struct Term {
    var: usize,
    coeff: Coeff,
}

/// A random satisfied circuit: public inputs, aux variables, and constraints
/// `A·B = C_rest + w` where `w` is a fresh aux variable set to `A·B − C_rest` (so `w` appears
/// only in C unless later constraints pick it).
#[derive(Debug, Clone)]
struct RandomCircuit {
    inputs: Vec<Scalar>,
    aux: Vec<Scalar>,
    /// (A terms, B terms, C terms); variable indices refer to the list
    /// `[ONE, inputs.., aux.., w_0, w_1, ..]` truncated to what exists at that point.
    constraints: Vec<(Vec<Term>, Vec<Term>, Vec<Term>)>,
    /// Extra public inputs that no constraint of the circuit uses (bellperson's generator
    /// refuses unconstrained *aux* variables, since their `l` point would be infinity; an
    /// unused input is still constrained by the prover's `input · 0 = 0`).
    unused: usize,
}

fn value(kind: u8, rng: &mut ChaCha8Rng) -> Scalar {
    match kind % 4 {
        0 => Scalar::ZERO,
        1 => Scalar::ONE,
        _ => Scalar::random(rng),
    }
}

impl RandomCircuit {
    fn coeff(c: Coeff, rng: &mut ChaCha8Rng) -> Scalar {
        match c {
            Coeff::Zero => Scalar::ZERO,
            Coeff::One => Scalar::ONE,
            Coeff::MinusOne => -Scalar::ONE,
            Coeff::Random => Scalar::random(rng),
        }
    }
}

cuzk_core::compiled_synthesis!(RandomCircuit);

impl Circuit<Scalar> for RandomCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        // Deterministic coefficients: the same circuit shape for setup and proving.
        let mut rng = ChaCha8Rng::seed_from_u64(99);
        let mut vars: Vec<(Variable, Scalar)> = vec![(CS::one(), Scalar::ONE)];
        for (i, x) in self.inputs.iter().enumerate() {
            let v = cs.alloc_input(|| format!("in{i}"), || Ok(*x))?;
            vars.push((v, *x));
        }
        for (i, x) in self.aux.iter().enumerate() {
            let v = cs.alloc(|| format!("aux{i}"), || Ok(*x))?;
            vars.push((v, *x));
        }
        for i in 0..self.unused {
            cs.alloc_input(|| format!("unused{i}"), || Ok(Scalar::from(i as u64 + 5)))?;
        }
        for (k, (ta, tb, tc)) in self.constraints.iter().enumerate() {
            let mut build = |terms: &[Term], vars: &[(Variable, Scalar)]| {
                let mut lc = LinearCombination::zero();
                let mut val = Scalar::ZERO;
                for t in terms {
                    let (v, x) = vars[t.var % vars.len()];
                    let c = RandomCircuit::coeff(t.coeff, &mut rng);
                    lc = lc + (c, v);
                    val += c * x;
                }
                (lc, val)
            };
            let (la, va) = build(ta, &vars);
            let (lb, vb) = build(tb, &vars);
            let (lc, vc) = build(tc, &vars);
            let wv = va * vb - vc;
            let w = cs.alloc(|| format!("w{k}"), || Ok(wv))?;
            cs.enforce(|| format!("c{k}"), |_| la, |_| lb, |_| lc + w);
            vars.push((w, wv));
        }
        // Pin every pre-allocated aux variable through C alone (`0 · 0 = x − value`), so none
        // is unconstrained and some are present only in C.
        for (i, x) in self.aux.iter().enumerate() {
            let (v, _) = vars[1 + self.inputs.len() + i];
            cs.enforce(|| format!("pin{i}"), |lc| lc, |lc| lc, |lc| lc + v - (*x, CS::one()));
        }
        Ok(())
    }
}

fn term() -> impl Strategy<Value = Term> {
    (0usize..64, prop_oneof![Just(Coeff::Zero), Just(Coeff::One), Just(Coeff::MinusOne), Just(Coeff::Random), Just(Coeff::Random)])
        .prop_map(|(var, coeff)| Term { var, coeff })
}

fn lc() -> impl Strategy<Value = Vec<Term>> {
    prop::collection::vec(term(), 0..4)
}

fn circuit() -> impl Strategy<Value = (RandomCircuit, u64)> {
    (
        prop::collection::vec(any::<u8>(), 0..5),
        prop::collection::vec(any::<u8>(), 0..12),
        prop::collection::vec((lc(), lc(), lc()), 1..40),
        0usize..3,
        any::<u64>(),
    )
        .prop_map(|(inputs, aux, constraints, unused, seed)| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let inputs = inputs.into_iter().map(|k| value(k, &mut rng)).collect();
            let aux = aux.into_iter().map(|k| value(k, &mut rng)).collect();
            (RandomCircuit { inputs, aux, constraints, unused }, seed)
        })
}

/// Proves `circuit` with bellperson and with cuzk's CPU backend; checks everything.
fn check_against_bellperson<C: cuzk_core::compiled::CompiledSynthesis>(circuit: C, public: &[Scalar], seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let params = groth16::generate_random_parameters::<Bls12, _, _>(circuit.clone(), &mut rng).expect("setup");
    let mut bytes = Vec::new();
    params.write(&mut bytes).unwrap();
    let ours_params = Parameters::from_bytes(&bytes, Validation::Full).expect("our parser reads bellperson's file");
    assert_eq!(ours_params.to_bytes(), bytes, "parameter re-encoding differs");

    let r = Scalar::random(&mut rng);
    let s = Scalar::random(&mut rng);
    let theirs = groth16::create_proof::<Bls12, _, _>(circuit.clone(), &params, r, s).expect("bellperson proof");
    let mut theirs_bytes = Vec::new();
    theirs.write(&mut theirs_bytes).unwrap();

    let backend = CpuBackend::new();
    let key = ProvingKey::load(&backend, ours_params).unwrap();
    let synth = synthesize(circuit.clone(), heap(), SizeHint::default()).unwrap();
    assert_eq!(&synth.input[1..], public, "recorded public inputs");
    // The synthesis cache (recorded matrices + witness-only synthesis) gives the same record.
    let matrices = ConstraintMatrices::record(circuit.clone()).unwrap();
    for cached in [matrices.synthesize(circuit.clone(), heap()).unwrap(), cuzk_worker::matrices::synthesize(&matrices, circuit.clone(), heap()).unwrap()] {
        assert!(*cached.a == *synth.a && *cached.b == *synth.b && *cached.c == *synth.c, "cached a/b/c differ");
        assert!(*cached.input == *synth.input && *cached.aux == *synth.aux, "cached assignments differ");
        for (x, y) in
            [(&cached.a_aux_density, &synth.a_aux_density), (&cached.b_input_density, &synth.b_input_density), (&cached.b_aux_density, &synth.b_aux_density)]
        {
            assert_eq!((x.words(), x.len(), x.count()), (y.words(), y.len(), y.count()), "cached densities differ");
        }
    }
    let ours = prove(&backend, &key, synth, r, s, &mut |_| {}).expect("cuzk proof");
    assert_eq!(ours.to_bytes().to_vec(), theirs_bytes, "proof bytes differ from bellperson's");
    // Witness-only synthesis, `a, b, c` evaluated by the backend from resident matrices.
    let matrices = std::sync::Arc::new(matrices);
    let resident = backend.load_matrices(&matrices).unwrap();
    let up = upload_witness(&backend, &key, &matrices, &resident, matrices.witness(circuit.clone(), heap()).unwrap()).expect("witness upload");
    let (h, domain, w) = compute_h(&backend, up).unwrap();
    let via_matrices = finalize(&key.vk, &msms(&backend, &key, &h, &domain, &w).unwrap(), r, s);
    assert_eq!(via_matrices.to_bytes().to_vec(), theirs_bytes, "proof through resident matrices differs from bellperson's");

    let pvk = groth16::prepare_verifying_key(&params.vk);
    let decoded = groth16::Proof::<Bls12>::read(&ours.to_bytes()[..]).unwrap();
    assert!(groth16::verify_proof(&pvk, &decoded, public).unwrap(), "bellperson rejects our proof");
    assert!(verify(&key.vk, &ours, public).unwrap(), "our verifier rejects our proof");
    assert_eq!(Proof::from_bytes(&ours.to_bytes()).unwrap(), ours);
    if !public.is_empty() {
        let mut wrong = public.to_vec();
        wrong[0] += Scalar::ONE;
        assert!(!groth16::verify_proof(&pvk, &decoded, &wrong).unwrap(), "bellperson accepts a wrong input");
        assert!(!verify(&key.vk, &ours, &wrong).unwrap(), "our verifier accepts a wrong input");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_circuits_match_bellperson((c, seed) in circuit()) {
        let mut public = c.inputs.clone();
        public.extend((0..c.unused).map(|i| Scalar::from(i as u64 + 5)));
        check_against_bellperson(c, &public, seed);
    }
}

#[test]
fn builtin_circuits_match_bellperson() {
    use cuzk_circuits::CircuitKind;
    for (kind, k) in [(CircuitKind::SquaringChain, 10), (CircuitKind::Sha256Chain, 15)] {
        let c = kind.instance(k, 3).unwrap();
        let public = c.public_inputs();
        check_against_bellperson(c, &public, 11);
    }
}
