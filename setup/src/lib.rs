//! Random Groth16 parameters for any `bellpepper-core` circuit, fast.
//!
//! The toxic waste `τ, α, β, γ, δ` is drawn from the caller's RNG, so these parameters are for
//! tests and benchmarks only. The result is bellperson's `Parameters` layout (same queries,
//! same filtering of points at infinity), so bellperson's prover and verifier accept it.
//!
//! How: the circuit is first counted, so the domain is known; then the Lagrange basis at `τ`
//! is computed with one batch inversion, and a second synthesis accumulates
//! `u_i(τ), v_i(τ), w_i(τ)` per variable directly from the constraints; finally every query
//! point is a fixed-base multiplication from precomputed window tables (no doublings), in
//! parallel, normalized in batches.

#![warn(missing_docs)]

mod fixed_base;
pub mod timing;

use bellpepper_core::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::{G1Projective, G2Projective, Scalar};
use ff::Field;
use group::{Curve, Group};
use rand_core::RngCore;
use rayon::prelude::*;

use cuzk_backend_cpu::ntt::powers;
use cuzk_core::domain::{Domain, DomainTooLarge};
use cuzk_core::params::{Parameters, VerifyingKey};
use cuzk_core::synth::ShapeCounter;

pub use fixed_base::FixedBase;

/// Why parameters could not be generated.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The circuit failed to synthesize.
    #[error("circuit synthesis failed: {0}")]
    Synthesis(#[from] SynthesisError),
    /// Too many constraints.
    #[error(transparent)]
    DomainTooLarge(#[from] DomainTooLarge),
    /// An aux variable appears in no constraint; its `l` point would be infinity, which the
    /// parameter format cannot hold (bellperson refuses the same circuits).
    #[error("aux variable {0} is unconstrained")]
    UnconstrainedVariable(usize),
    /// A drawn secret was zero (probability ~2^-255).
    #[error("a random secret was zero; retry")]
    ZeroSecret,
}

/// `u, v, w` evaluated at `τ`, per variable.
#[derive(Default, Clone, Copy)]
struct Qap {
    u: Scalar,
    v: Scalar,
    w: Scalar,
}

/// Accumulates `u_i(τ), v_i(τ), w_i(τ)` from the constraints, given the Lagrange basis.
struct Evaluator<'a> {
    lagrange: &'a [Scalar],
    next: usize,
    inputs: Vec<Qap>,
    aux: Vec<Qap>,
}

impl Evaluator<'_> {
    fn add(&mut self, lc: &LinearCombination<Scalar>, lj: Scalar, pick: fn(&mut Qap) -> &mut Scalar) {
        for (&i, c) in lc.iter_inputs() {
            *pick(&mut self.inputs[i]) += lj * c;
        }
        for (&i, c) in lc.iter_aux() {
            *pick(&mut self.aux[i]) += lj * c;
        }
    }
}

impl ConstraintSystem<Scalar> for Evaluator<'_> {
    type Root = Self;
    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux.push(Qap::default());
        Ok(Variable::new_unchecked(Index::Aux(self.aux.len() - 1)))
    }
    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs.push(Qap::default());
        Ok(Variable::new_unchecked(Index::Input(self.inputs.len() - 1)))
    }
    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        // The counting pass sized the basis; a circuit that enforces more constraints the
        // second time is not deterministic, and its extra constraints are dropped here and
        // caught by the count check after synthesis.
        let Some(&lj) = self.lagrange.get(self.next) else {
            self.next += 1;
            return;
        };
        self.next += 1;
        self.add(&a(LinearCombination::zero()), lj, |q| &mut q.u);
        self.add(&b(LinearCombination::zero()), lj, |q| &mut q.v);
        self.add(&c(LinearCombination::zero()), lj, |q| &mut q.w);
    }
    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }
    fn pop_namespace(&mut self) {}
    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

/// `L_j(τ) = (τⁿ − 1)/n · ωʲ/(τ − ωʲ)` for `j < count`.
fn lagrange_at(domain: &Domain, tau: Scalar, count: usize) -> Vec<Scalar> {
    let n = domain.size();
    let omegas = powers(domain.omega, count);
    let mut denom: Vec<Scalar> = omegas.par_iter().map(|w| tau - w).collect();
    batch_invert(&mut denom);
    let zn = (tau.pow_vartime([n as u64]) - Scalar::ONE) * domain.n_inv;
    omegas.par_iter().zip(denom.par_iter()).map(|(w, d)| zn * w * d).collect()
}

/// Montgomery's batch inversion, in parallel chunks (inputs must be non-zero).
fn batch_invert(v: &mut [Scalar]) {
    v.par_chunks_mut(1 << 12).for_each(|chunk| {
        let mut prefix = Vec::with_capacity(chunk.len());
        let mut acc = Scalar::ONE;
        for x in chunk.iter() {
            prefix.push(acc);
            acc *= x;
        }
        let mut inv = acc.invert().unwrap();
        for (x, p) in chunk.iter_mut().zip(prefix).rev() {
            let next = inv * *x;
            *x = inv * p;
            inv = next;
        }
    });
}

fn nonzero(rng: &mut impl RngCore) -> Result<Scalar, SetupError> {
    let x = Scalar::random(rng);
    if bool::from(x.is_zero()) {
        Err(SetupError::ZeroSecret)
    } else {
        Ok(x)
    }
}

/// Generates random parameters for `circuit` (synthesized twice: once to count, once to
/// evaluate). Equivalent to bellperson's `generate_random_parameters`, much faster.
pub fn generate_parameters<C: Circuit<Scalar> + Clone>(circuit: C, rng: &mut impl RngCore) -> Result<Parameters, SetupError> {
    let verbose = std::env::var_os("CUZK_SETUP_TRACE").is_some();
    let t0 = std::time::Instant::now();
    let mark = |what: &str| {
        if verbose {
            eprintln!("setup: {what} at {:.3} s", t0.elapsed().as_secs_f64());
        }
    };
    // Pass 1: the shape.
    let count = ShapeCounter::of(circuit.clone())?;
    let total = count.constraints;
    let domain = Domain::for_len(total)?;
    let n = domain.size();

    let tau = nonzero(rng)?;
    let alpha = nonzero(rng)?;
    let beta = nonzero(rng)?;
    let gamma = nonzero(rng)?;
    let delta = nonzero(rng)?;
    if bool::from((tau.pow_vartime([n as u64]) - Scalar::ONE).is_zero()) {
        return Err(SetupError::ZeroSecret); // τ in the domain: Z(τ) = 0
    }

    mark("counted");
    // Pass 2: u, v, w at τ.
    let lagrange = lagrange_at(&domain, tau, total);
    mark("lagrange");
    let mut ev = Evaluator { lagrange: &lagrange, next: 0, inputs: vec![Qap::default()], aux: Vec::new() };
    circuit.synthesize(&mut ev)?;
    for i in 0..ev.inputs.len() {
        ev.enforce(|| "", |lc| lc + Variable::new_unchecked(Index::Input(i)), |lc| lc, |lc| lc);
    }
    if ev.next != total || ev.aux.len() != count.aux || ev.inputs.len() != count.inputs {
        return Err(SetupError::Synthesis(SynthesisError::Unsatisfiable));
    }

    mark("evaluated");
    let gamma_inv = gamma.invert().unwrap();
    let delta_inv = delta.invert().unwrap();
    let combine = |q: &Qap, k: Scalar| (beta * q.u + alpha * q.v + q.w) * k;
    let ic_s: Vec<Scalar> = ev.inputs.iter().map(|q| combine(q, gamma_inv)).collect();
    let l_s: Vec<Scalar> = ev.aux.par_iter().map(|q| combine(q, delta_inv)).collect();
    if let Some(i) = l_s.iter().position(|x| bool::from(x.is_zero())) {
        return Err(SetupError::UnconstrainedVariable(i));
    }
    let zt = (tau.pow_vartime([n as u64]) - Scalar::ONE) * delta_inv;
    let h_s: Vec<Scalar> = powers(tau, n - 1).into_par_iter().map(|t| t * zt).collect();
    // A and B queries keep only the variables with a non-zero polynomial at τ (bellperson drops
    // the points at infinity), inputs first.
    let all = || ev.inputs.iter().chain(ev.aux.iter());
    let a_s: Vec<Scalar> = all().map(|q| q.u).filter(|x| !bool::from(x.is_zero())).collect();
    let b_s: Vec<Scalar> = all().map(|q| q.v).filter(|x| !bool::from(x.is_zero())).collect();

    mark("scalars");
    let g1 = FixedBase::new(G1Projective::generator());
    let g2 = FixedBase::new(G2Projective::generator());
    mark("tables");
    let vk = VerifyingKey {
        alpha_g1: (G1Projective::generator() * alpha).to_affine(),
        beta_g1: (G1Projective::generator() * beta).to_affine(),
        beta_g2: (G2Projective::generator() * beta).to_affine(),
        gamma_g2: (G2Projective::generator() * gamma).to_affine(),
        delta_g1: (G1Projective::generator() * delta).to_affine(),
        delta_g2: (G2Projective::generator() * delta).to_affine(),
        ic: g1.mul_many(&ic_s),
    };
    let h = g1.mul_many(&h_s);
    mark("h");
    Ok(Parameters { vk, h, l: g1.mul_many(&l_s), a: g1.mul_many(&a_s), b_g1: g1.mul_many(&b_s), b_g2: g2.mul_many(&b_s) })
}
