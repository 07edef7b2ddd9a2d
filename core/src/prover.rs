//! The Groth16 prover, written once over [`Backend`].
//!
//! One partition proof goes synthesize → upload → NTT (`h`) → MSM → finalize. Each stage is a
//! separate function so an engine can run them on different workers; [`prove`] chains them.
//! Results are bit-identical to `bellperson::groth16::create_proof` with the same `r, s`.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::{prime::PrimeCurveAffine, Curve};

use crate::backend::{Backend, BackendError, MsmScalars};
use crate::domain::{Domain, DomainTooLarge};
use crate::matrices::{ConstraintMatrices, WitnessCs};
use crate::params::{Parameters, Section, VerifyingKey};
use crate::proof::Proof;
use crate::synth::Synthesized;

/// The stages of one partition proof.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stage {
    /// Running the circuit into a [`Synthesized`] record (CPU).
    Synthesize,
    /// Moving `a, b, c` and the assignments to the backend.
    Upload,
    /// Computing `h` (iNTT, coset NTT, quotient, inverse coset NTT).
    Ntt,
    /// The five multi-scalar multiplications.
    Msm,
    /// Combining the MSM results with the key and `r, s` (CPU).
    Finalize,
}

impl Stage {
    /// All stages in pipeline order.
    pub const ALL: [Stage; 5] = [Stage::Synthesize, Stage::Upload, Stage::Ntt, Stage::Msm, Stage::Finalize];

    /// Lower-case name for tables and traces.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Synthesize => "synthesize",
            Stage::Upload => "upload",
            Stage::Ntt => "ntt",
            Stage::Msm => "msm",
            Stage::Finalize => "finalize",
        }
    }
}

/// Why a proof could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ProveError {
    /// The circuit does not match the parameters.
    #[error("circuit does not match the parameters: {0}")]
    ShapeMismatch(String),
    /// The circuit is too large for any domain.
    #[error(transparent)]
    DomainTooLarge(#[from] DomainTooLarge),
    /// The verifying key has `δ` at infinity (a subverted setup).
    #[error("the parameters have delta at infinity; refusing to prove")]
    UnexpectedIdentity,
    /// The backend failed.
    #[error("backend failed during {stage:?}: {source}")]
    Backend {
        /// Stage that failed.
        stage: Stage,
        /// The backend's error.
        #[source]
        source: BackendError,
    },
}

fn at(stage: Stage) -> impl Fn(BackendError) -> ProveError {
    move |source| ProveError::Backend { stage, source }
}

/// Parameters made resident on a backend.
pub struct ProvingKey<B: Backend> {
    /// Verifying key (host).
    pub vk: VerifyingKey,
    /// `h` query.
    pub h: B::G1Bases,
    /// `l` query.
    pub l: B::G1Bases,
    /// `a` query.
    pub a: B::G1Bases,
    /// `b_g1` query.
    pub b_g1: B::G1Bases,
    /// `b_g2` query.
    pub b_g2: B::G2Bases,
}

impl<B: Backend> ProvingKey<B> {
    /// Moves decoded parameters onto `backend` (placed as the backend decides:
    /// [`Backend::load_g1`]).
    pub fn load(backend: &B, params: Parameters) -> Result<Self, BackendError> {
        Self::load_owned(backend, params, None)
    }

    /// Moves decoded parameters onto `backend`; with `streamed`, every query set is loaded
    /// streamed ([`Backend::load_g1_placed`]): kept in page-locked host memory and streamed
    /// through the device during MSMs, for parameters larger than the device's budget.
    pub fn load_placed(backend: &B, params: Parameters, streamed: bool) -> Result<Self, BackendError> {
        Self::load_owned(backend, params, Some(streamed))
    }

    fn load_owned(backend: &B, params: Parameters, placement: Option<bool>) -> Result<Self, BackendError> {
        let Parameters { vk, mut h, mut l, mut a, mut b_g1, b_g2 } = params;
        let g1 = |section: Section| {
            Ok(std::mem::take(match section {
                Section::H => &mut h,
                Section::L => &mut l,
                Section::A => &mut a,
                Section::BG1 => &mut b_g1,
                Section::Ic | Section::BG2 => return Ok(Vec::new()),
            }))
        };
        Self::load_by_query(backend, vk, placement, g1, || Ok(b_g2))
    }

    /// Moves a parameter set onto `backend` one query at a time, each taken from `g1` (`H`,
    /// `L`, `A`, `BG1`, in that order) or `b_g2` when it is loaded and dropped once loaded, so
    /// a caller decoding or copying queries on demand holds one at a time. `placement`:
    /// `None` lets the backend place them ([`Backend::load_g1`]), `Some(streamed)` is the
    /// caller's ([`Backend::load_g1_placed`]).
    pub fn load_by_query<E: From<BackendError>>(
        backend: &B,
        vk: VerifyingKey,
        placement: Option<bool>,
        mut g1: impl FnMut(Section) -> Result<Vec<G1Affine>, E>,
        b_g2: impl FnOnce() -> Result<Vec<G2Affine>, E>,
    ) -> Result<Self, E> {
        let mut put = |section: Section| -> Result<B::G1Bases, E> {
            let points = g1(section)?;
            Ok(match placement {
                None => backend.load_g1(points)?,
                Some(streamed) => backend.load_g1_placed(points, streamed)?,
            })
        };
        let (h, l, a, b_g1) = (put(Section::H)?, put(Section::L)?, put(Section::A)?, put(Section::BG1)?);
        let points = b_g2()?;
        let b_g2 = match placement {
            None => backend.load_g2(points)?,
            Some(streamed) => backend.load_g2_placed(points, streamed)?,
        };
        Ok(ProvingKey { vk, h, l, a, b_g1, b_g2 })
    }

    /// Checks that `synth` is a circuit these parameters were made for; returns its domain.
    pub fn check(&self, backend: &B, synth: &Synthesized) -> Result<Domain, ProveError> {
        let b_need = synth.b_input_density.count() + synth.b_aux_density.count();
        self.check_shape(backend, synth.num_constraints(), synth.input.len(), synth.aux.len(), synth.a_aux_density.count(), b_need)
    }

    /// [`ProvingKey::check`] from the numbers alone: constraints, inputs (with `ONE`), aux
    /// variables, aux variables in the A query, variables in the B query.
    fn check_shape(&self, backend: &B, constraints: usize, inputs: usize, aux: usize, a_aux: usize, b_need: usize) -> Result<Domain, ProveError> {
        let domain = Domain::for_len(constraints)?;
        let n = domain.size();
        let mismatch = |what: &str, want: usize, got: usize| Err(ProveError::ShapeMismatch(format!("{what}: parameters have {want}, circuit needs {got}")));
        if self.vk.ic.len() != inputs {
            return mismatch("public inputs (ic)", self.vk.ic.len(), inputs);
        }
        if backend.g1_len(&self.h) != n - 1 {
            return mismatch("h query points (domain size - 1)", backend.g1_len(&self.h), n - 1);
        }
        if backend.g1_len(&self.l) != aux {
            return mismatch("l query points (aux variables)", backend.g1_len(&self.l), aux);
        }
        let a_need = inputs + a_aux;
        if backend.g1_len(&self.a) != a_need {
            return mismatch("a query points", backend.g1_len(&self.a), a_need);
        }
        if backend.g1_len(&self.b_g1) != b_need {
            return mismatch("b_g1 query points", backend.g1_len(&self.b_g1), b_need);
        }
        if backend.g2_len(&self.b_g2) != b_need {
            return mismatch("b_g2 query points", backend.g2_len(&self.b_g2), b_need);
        }
        if bool::from(self.vk.delta_g1.is_identity() | self.vk.delta_g2.is_identity()) {
            return Err(ProveError::UnexpectedIdentity);
        }
        Ok(domain)
    }
}

/// A partition's data on the backend after [`upload`].
pub struct Uploaded<B: Backend> {
    /// Domain of the circuit.
    pub domain: Domain,
    /// `a` evaluations, padded to the domain.
    pub a: B::Scalars,
    /// `b` evaluations.
    pub b: B::Scalars,
    /// `c` evaluations.
    pub c: B::Scalars,
    /// The rest of the record (assignments and densities).
    pub witness: Witness<B>,
}

/// Assignments on the backend and densities on the host.
pub struct Witness<B: Backend> {
    /// Public inputs (with `ONE`).
    pub input: B::Scalars,
    /// Number of public inputs.
    pub input_len: usize,
    /// Aux assignment.
    pub aux: B::Scalars,
    /// Number of aux variables.
    pub aux_len: usize,
    /// Record densities.
    pub a_aux_density: crate::density::DensityBitmap,
    /// Record densities.
    pub b_input_density: crate::density::DensityBitmap,
    /// Record densities.
    pub b_aux_density: crate::density::DensityBitmap,
}

/// Pads `a, b, c` to the domain and moves everything to the backend.
pub fn upload<B: Backend>(backend: &B, key: &ProvingKey<B>, synth: Synthesized) -> Result<Uploaded<B>, ProveError> {
    let domain = key.check(backend, &synth)?;
    let n = domain.size();
    let Synthesized { mut a, mut b, mut c, input, aux, a_aux_density, b_input_density, b_aux_density } = synth;
    for v in [&mut a, &mut b, &mut c] {
        v.try_resize(n, Scalar::ZERO).map_err(|e| at(Stage::Upload)(BackendError::OutOfMemory(e.to_string())))?;
    }
    let up = |v| backend.upload_scalars(v).map_err(at(Stage::Upload));
    let (input_len, aux_len) = (input.len(), aux.len());
    Ok(Uploaded {
        domain,
        a: up(a)?,
        b: up(b)?,
        c: up(c)?,
        witness: Witness { input: up(input)?, input_len, aux: up(aux)?, aux_len, a_aux_density, b_input_density, b_aux_density },
    })
}

/// Moves a witness to the backend and evaluates `a, b, c` there from the circuit's resident
/// matrices ([`Backend::evaluate_constraints`]): only the assignments cross to the device, and
/// the result is exactly what [`upload`] of the full record gives.
pub fn upload_witness<B: Backend>(
    backend: &B,
    key: &ProvingKey<B>,
    matrices: &ConstraintMatrices,
    resident: &B::Matrices,
    w: WitnessCs,
) -> Result<Uploaded<B>, ProveError> {
    let [a_aux, b_input, b_aux] = matrices.densities();
    let domain = key.check_shape(backend, matrices.num_constraints(), w.input.len(), w.aux.len(), a_aux.count(), b_input.count() + b_aux.count())?;
    let (input_len, aux_len) = (w.input.len(), w.aux.len());
    let e = at(Stage::Upload);
    let input = backend.upload_scalars(w.input).map_err(&e)?;
    let aux = backend.upload_scalars(w.aux).map_err(&e)?;
    let [a, b, c] = backend.evaluate_constraints(resident, &input, &aux, &domain).map_err(&e)?;
    let witness = Witness { input, input_len, aux, aux_len, a_aux_density: a_aux.clone(), b_input_density: b_input.clone(), b_aux_density: b_aux.clone() };
    Ok(Uploaded { domain, a, b, c, witness })
}

/// Computes the coefficients of `h` on the backend.
pub fn compute_h<B: Backend>(backend: &B, up: Uploaded<B>) -> Result<(B::Scalars, Domain, Witness<B>), ProveError> {
    let Uploaded { domain, a, b, c, witness } = up;
    let h = backend.compute_h(a, b, c, &domain).map_err(at(Stage::Ntt))?;
    Ok((h, domain, witness))
}

/// The MSM results of one partition.
#[derive(Debug, Clone, Copy)]
pub struct MsmResults {
    /// `Σ hᵢ·Hᵢ`
    pub h: G1Projective,
    /// `Σ auxᵢ·Lᵢ`
    pub l: G1Projective,
    /// A query over inputs and present aux.
    pub a: G1Projective,
    /// B query in G1.
    pub b_g1: G1Projective,
    /// B query in G2.
    pub b_g2: G2Projective,
}

fn full<S>(buf: &S, len: usize) -> MsmScalars<'_, S> {
    MsmScalars { buf, len, density: None }
}

fn sparse<'a, S>(buf: &'a S, d: &'a crate::density::DensityBitmap) -> MsmScalars<'a, S> {
    MsmScalars { buf, len: d.len(), density: Some(d) }
}

/// Runs the five MSMs (inputs and aux parts summed).
pub fn msms<B: Backend>(backend: &B, key: &ProvingKey<B>, h: &B::Scalars, domain: &Domain, w: &Witness<B>) -> Result<MsmResults, ProveError> {
    let e = at(Stage::Msm);
    let n = domain.size();
    let h_sum = backend.msm_g1(&key.h, 0, full(h, n - 1)).map_err(&e)?;
    let l_sum = backend.msm_g1(&key.l, 0, full(&w.aux, w.aux_len)).map_err(&e)?;
    let a_sum = backend.msm_g1(&key.a, 0, full(&w.input, w.input_len)).map_err(&e)?
        + backend.msm_g1(&key.a, w.input_len, sparse(&w.aux, &w.a_aux_density)).map_err(&e)?;
    let b_in = w.b_input_density.count();
    let b_g1 = backend.msm_g1(&key.b_g1, 0, sparse(&w.input, &w.b_input_density)).map_err(&e)?
        + backend.msm_g1(&key.b_g1, b_in, sparse(&w.aux, &w.b_aux_density)).map_err(&e)?;
    let b_g2 = backend.msm_g2(&key.b_g2, 0, sparse(&w.input, &w.b_input_density)).map_err(&e)?
        + backend.msm_g2(&key.b_g2, b_in, sparse(&w.aux, &w.b_aux_density)).map_err(&e)?;
    Ok(MsmResults { h: h_sum, l: l_sum, a: a_sum, b_g1, b_g2 })
}

/// Combines the MSM results with the verifying key and the blinding factors, exactly as
/// bellperson does.
pub fn finalize(vk: &VerifyingKey, m: &MsmResults, r: Scalar, s: Scalar) -> Proof {
    let g_a = vk.delta_g1 * r + vk.alpha_g1 + m.a;
    let g_b = vk.delta_g2 * s + vk.beta_g2 + m.b_g2;
    let g_c = m.a * s + m.b_g1 * r + vk.delta_g1 * (r * s) + vk.alpha_g1 * s + vk.beta_g1 * r + m.h + m.l;
    Proof { a: g_a.to_affine(), b: g_b.to_affine(), c: g_c.to_affine() }
}

/// Proves a synthesized circuit, reporting each stage to `observe` as it begins (the caller
/// reads the clock; the core never does).
pub fn prove<B: Backend>(
    backend: &B,
    key: &ProvingKey<B>,
    synth: Synthesized,
    r: Scalar,
    s: Scalar,
    observe: &mut dyn FnMut(Stage),
) -> Result<Proof, ProveError> {
    observe(Stage::Upload);
    let up = upload(backend, key, synth)?;
    observe(Stage::Ntt);
    let (h, domain, witness) = compute_h(backend, up)?;
    observe(Stage::Msm);
    let m = msms(backend, key, &h, &domain, &witness)?;
    observe(Stage::Finalize);
    Ok(finalize(&key.vk, &m, r, s))
}
