//! The bellperson parameter file (`Parameters::write` layout), parsed from bytes.
//!
//! Layout, all points uncompressed (G1: 96 bytes, G2: 192 bytes), lengths big-endian `u32`:
//!
//! ```text
//! vk:   alpha_g1 beta_g1 beta_g2 gamma_g2 delta_g1 delta_g2 | len | ic[len]
//! then: len | h[len]   len | l[len]   len | a[len]   len | b_g1[len]   len | b_g2[len]
//! ```
//!
//! Parsing first walks the lengths ([`ParamsLayout::parse`]): every length is checked against
//! the bytes that remain before anything is allocated, so a file that lies about its lengths
//! fails fast with a clear error. Points are then decoded section by section, optionally in
//! parallel by the caller (`decode_*_points` work on any run of whole points).

use blstrs::{G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;
use std::mem::MaybeUninit;
use std::ops::Range;

/// Bytes of an uncompressed G1 point.
pub const G1_UNCOMPRESSED: usize = 96;
/// Bytes of an uncompressed G2 point.
pub const G2_UNCOMPRESSED: usize = 192;

/// How much to check while decoding points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Validation {
    /// On the curve, in the prime-order subgroup, and not the point at infinity.
    Full,
    /// Trusted file: only the encoding and the point at infinity are checked (bellperson's
    /// `checked = false`). Much faster; use for files whose digest is known.
    Trusted,
}

/// The sections of a parameter file, in file order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// Verifying key `ic` (G1).
    Ic,
    /// `h` query (G1), `n - 1` points.
    H,
    /// `l` query (G1), one per aux variable.
    L,
    /// `a` query (G1): all inputs, then aux variables present in A.
    A,
    /// `b_g1` query (G1): inputs and aux present in B.
    BG1,
    /// `b_g2` query (G2): same variables as `b_g1`.
    BG2,
}

/// Why a parameter file was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamsError {
    /// The file ends inside a field.
    #[error("parameter file truncated: {what} needs {needed} bytes at offset {offset}, but the file has {available}")]
    Truncated {
        /// What was being read.
        what: String,
        /// Where it starts.
        offset: usize,
        /// How many bytes it needs.
        needed: usize,
        /// How many bytes remain.
        available: usize,
    },
    /// A length field claims more points than the file can hold.
    #[error(
        "parameter file lies about its length: section {section:?} claims {count} points ({bytes} bytes) at offset {offset}, but only {available} bytes remain"
    )]
    LengthTooLarge {
        /// The section.
        section: Section,
        /// Claimed point count.
        count: usize,
        /// Bytes that count needs.
        bytes: u128,
        /// Offset of the first point.
        offset: usize,
        /// Bytes remaining.
        available: usize,
    },
    /// Bytes remain after the last section.
    #[error("parameter file has {0} unexpected trailing bytes")]
    TrailingBytes(usize),
    /// A point failed validation.
    #[error("invalid point {index} of section {section:?}: {reason}")]
    InvalidPoint {
        /// The section.
        section: Section,
        /// Index of the point within its section (or field name for the vk).
        index: usize,
        /// What is wrong with it.
        reason: PointError,
    },
    /// A verifying-key point failed validation.
    #[error("invalid verifying key point {field}: {reason}")]
    InvalidVkPoint {
        /// Which field.
        field: &'static str,
        /// What is wrong with it.
        reason: PointError,
    },
    /// Reading the file failed, or it changed while it was read.
    #[error("reading {needed} bytes at offset {offset}: {reason}")]
    Read {
        /// Where the read started.
        offset: usize,
        /// How many bytes it wanted.
        needed: usize,
        /// What went wrong.
        reason: String,
    },
}

/// Where a parameter file's bytes come from: a slice in memory, or a file read piece by piece
/// (no map of it: a file shrunk under a map faults the process).
pub trait ParamsSource {
    /// Its length in bytes.
    fn len(&self) -> usize;
    /// Whether it is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// `n` bytes at `offset` (`offset + n <= len()`).
    fn read(&self, offset: usize, n: usize) -> Result<std::borrow::Cow<'_, [u8]>, ParamsError>;
}

impl ParamsSource for &[u8] {
    fn len(&self) -> usize {
        <[u8]>::len(self)
    }
    fn read(&self, offset: usize, n: usize) -> Result<std::borrow::Cow<'_, [u8]>, ParamsError> {
        Ok(std::borrow::Cow::Borrowed(&self[offset..offset + n]))
    }
}

/// What is wrong with one encoded point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PointError {
    /// Not a valid encoding, or (with full validation) not on the curve or not in the subgroup.
    #[error("not a valid point on the curve in the prime-order subgroup")]
    NotOnCurveOrSubgroup,
    /// The point at infinity, which parameters never contain.
    #[error("point at infinity")]
    Identity,
}

/// A decoded point that fails the checks of [`Validation::Full`]: its index in the batch that
/// was checked, and why ([`Backend::first_invalid_g1`](crate::backend::Backend::first_invalid_g1)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PointFailure {
    /// Index of the point in its batch.
    pub index: usize,
    /// What is wrong with it.
    pub reason: PointError,
}

/// Why a decoded G1 point fails the checks of [`Validation::Full`], or `None` when it passes:
/// the point at infinity is [`PointError::Identity`]; a point off the curve or outside the
/// prime-order subgroup is [`PointError::NotOnCurveOrSubgroup`] (blst's checks: the oracle of
/// every backend's point checks).
pub fn g1_point_error(p: &G1Affine) -> Option<PointError> {
    if bool::from(p.is_identity()) {
        Some(PointError::Identity)
    } else if !bool::from(p.is_on_curve()) || !bool::from(p.is_torsion_free()) {
        Some(PointError::NotOnCurveOrSubgroup)
    } else {
        None
    }
}

/// G2 counterpart of [`g1_point_error`].
pub fn g2_point_error(p: &G2Affine) -> Option<PointError> {
    if bool::from(p.is_identity()) {
        Some(PointError::Identity)
    } else if !bool::from(p.is_on_curve()) || !bool::from(p.is_torsion_free()) {
        Some(PointError::NotOnCurveOrSubgroup)
    } else {
        None
    }
}

/// The first point of `points` that fails [`g1_point_error`], on the calling thread.
pub fn first_invalid_g1(points: &[G1Affine]) -> Option<PointFailure> {
    points.iter().enumerate().find_map(|(index, p)| g1_point_error(p).map(|reason| PointFailure { index, reason }))
}

/// The first point of `points` that fails [`g2_point_error`], on the calling thread.
pub fn first_invalid_g2(points: &[G2Affine]) -> Option<PointFailure> {
    points.iter().enumerate().find_map(|(index, p)| g2_point_error(p).map(|reason| PointFailure { index, reason }))
}

/// Decodes one uncompressed G1 point.
pub fn decode_g1(bytes: &[u8; G1_UNCOMPRESSED], validation: Validation, allow_identity: bool) -> Result<G1Affine, PointError> {
    let p = match validation {
        Validation::Full => G1Affine::from_uncompressed(bytes),
        Validation::Trusted => G1Affine::from_uncompressed_unchecked(bytes),
    };
    let p: G1Affine = Option::from(p).ok_or(PointError::NotOnCurveOrSubgroup)?;
    if !allow_identity && bool::from(p.is_identity()) {
        return Err(PointError::Identity);
    }
    Ok(p)
}

/// Decodes one uncompressed G2 point (ZCash layout: `x.c1 | x.c0 | y.c1 | y.c0`).
pub fn decode_g2(bytes: &[u8; G2_UNCOMPRESSED], validation: Validation, allow_identity: bool) -> Result<G2Affine, PointError> {
    let p = match validation {
        Validation::Full => G2Affine::from_uncompressed(bytes),
        Validation::Trusted => G2Affine::from_uncompressed_unchecked(bytes),
    };
    let p: G2Affine = Option::from(p).ok_or(PointError::NotOnCurveOrSubgroup)?;
    if !allow_identity && bool::from(p.is_identity()) {
        return Err(PointError::Identity);
    }
    Ok(p)
}

/// Decodes a run of whole G1 points of `section`; `first_index` numbers them in errors.
pub fn decode_g1_points(bytes: &[u8], section: Section, first_index: usize, validation: Validation) -> Result<Vec<G1Affine>, ParamsError> {
    decode_points(bytes, section, first_index, |c| decode_g1(c, validation, false))
}

/// G2 counterpart of [`decode_g1_points`].
pub fn decode_g2_points(bytes: &[u8], section: Section, first_index: usize, validation: Validation) -> Result<Vec<G2Affine>, ParamsError> {
    decode_points(bytes, section, first_index, |c| decode_g2(c, validation, false))
}

/// [`decode_g1_points`] into `out`, which receives one point per `G1_UNCOMPRESSED` bytes of
/// `bytes` (their counts must agree): a loader decodes straight into the section it builds.
/// On an error, the points before the failing one are written and the rest are not.
pub fn decode_g1_points_into(
    bytes: &[u8],
    out: &mut [MaybeUninit<G1Affine>],
    section: Section,
    first_index: usize,
    validation: Validation,
) -> Result<(), ParamsError> {
    decode_points_into(bytes, out, section, first_index, |c| decode_g1(c, validation, false))
}

/// G2 counterpart of [`decode_g1_points_into`].
pub fn decode_g2_points_into(
    bytes: &[u8],
    out: &mut [MaybeUninit<G2Affine>],
    section: Section,
    first_index: usize,
    validation: Validation,
) -> Result<(), ParamsError> {
    decode_points_into(bytes, out, section, first_index, |c| decode_g2(c, validation, false))
}

fn decode_points<T, const N: usize>(
    bytes: &[u8],
    section: Section,
    first_index: usize,
    decode: impl Fn(&[u8; N]) -> Result<T, PointError>,
) -> Result<Vec<T>, ParamsError> {
    let mut out = Vec::with_capacity(bytes.len() / N);
    decode_points_into(bytes, &mut out.spare_capacity_mut()[..bytes.len() / N], section, first_index, decode)?;
    // SAFETY: decode_points_into wrote every one of the first `bytes.len() / N` elements.
    unsafe { out.set_len(bytes.len() / N) };
    Ok(out)
}

fn decode_points_into<T, const N: usize>(
    bytes: &[u8],
    out: &mut [MaybeUninit<T>],
    section: Section,
    first_index: usize,
    decode: impl Fn(&[u8; N]) -> Result<T, PointError>,
) -> Result<(), ParamsError> {
    assert_eq!(bytes.len(), out.len() * N, "{} bytes are not {} points of {N}", bytes.len(), out.len());
    for (i, (c, slot)) in bytes.chunks_exact(N).zip(out.iter_mut()).enumerate() {
        let p = decode(c.try_into().expect("exact chunk")).map_err(|reason| ParamsError::InvalidPoint { section, index: first_index + i, reason })?;
        slot.write(p);
    }
    Ok(())
}

/// The Groth16 verifying key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyingKey {
    /// `[α]₁`
    pub alpha_g1: G1Affine,
    /// `[β]₁`
    pub beta_g1: G1Affine,
    /// `[β]₂`
    pub beta_g2: G2Affine,
    /// `[γ]₂`
    pub gamma_g2: G2Affine,
    /// `[δ]₁`
    pub delta_g1: G1Affine,
    /// `[δ]₂`
    pub delta_g2: G2Affine,
    /// `[(β·u_i(τ) + α·v_i(τ) + w_i(τ))/γ]₁` for each public input.
    pub ic: Vec<G1Affine>,
}

impl VerifyingKey {
    /// Serializes in bellperson's `VerifyingKey::write` layout.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(4 * G1_UNCOMPRESSED + 3 * G2_UNCOMPRESSED + 4 + self.ic.len() * G1_UNCOMPRESSED);
        out.extend_from_slice(&self.alpha_g1.to_uncompressed());
        out.extend_from_slice(&self.beta_g1.to_uncompressed());
        out.extend_from_slice(&self.beta_g2.to_uncompressed());
        out.extend_from_slice(&self.gamma_g2.to_uncompressed());
        out.extend_from_slice(&self.delta_g1.to_uncompressed());
        out.extend_from_slice(&self.delta_g2.to_uncompressed());
        out.extend_from_slice(&(self.ic.len() as u32).to_be_bytes());
        for p in &self.ic {
            out.extend_from_slice(&p.to_uncompressed());
        }
        out
    }

    /// Parses a standalone verifying key (bellperson `VerifyingKey::read`, e.g. a `.vk` file),
    /// fully validated; returns the key and the bytes it used.
    pub fn from_bytes(bytes: &[u8]) -> Result<(Self, usize), ParamsError> {
        let mut r = Reader { src: &bytes, pos: 0 };
        let vk = r.vk()?;
        Ok((vk, r.pos))
    }
}

struct Reader<'a> {
    src: &'a dyn ParamsSource,
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<std::borrow::Cow<'a, [u8]>, ParamsError> {
        let available = self.src.len() - self.pos;
        if n > available {
            return Err(ParamsError::Truncated { what: what.to_string(), offset: self.pos, needed: n, available });
        }
        let s = self.src.read(self.pos, n)?;
        self.pos += n;
        Ok(s)
    }

    fn u32(&mut self, what: &str) -> Result<usize, ParamsError> {
        Ok(u32::from_be_bytes(self.take(4, what)?.as_ref().try_into().expect("4 bytes")) as usize)
    }

    fn g1(&mut self, field: &'static str) -> Result<G1Affine, ParamsError> {
        let b = self.take(G1_UNCOMPRESSED, field)?;
        decode_g1(b.as_ref().try_into().expect("96 bytes"), Validation::Full, true).map_err(|reason| ParamsError::InvalidVkPoint { field, reason })
    }

    fn g2(&mut self, field: &'static str) -> Result<G2Affine, ParamsError> {
        let b = self.take(G2_UNCOMPRESSED, field)?;
        decode_g2(b.as_ref().try_into().expect("192 bytes"), Validation::Full, true).map_err(|reason| ParamsError::InvalidVkPoint { field, reason })
    }

    /// Reads a length and checks the points it claims fit in the rest of the file.
    fn section(&mut self, section: Section, point_size: usize) -> Result<Range<usize>, ParamsError> {
        let count = self.u32(&format!("length of {section:?}"))?;
        let bytes = count as u128 * point_size as u128;
        let available = self.src.len() - self.pos;
        if bytes > available as u128 {
            return Err(ParamsError::LengthTooLarge { section, count, bytes, offset: self.pos, available });
        }
        let start = self.pos;
        self.pos += bytes as usize;
        Ok(start..self.pos)
    }

    fn vk(&mut self) -> Result<VerifyingKey, ParamsError> {
        let alpha_g1 = self.g1("alpha_g1")?;
        let beta_g1 = self.g1("beta_g1")?;
        let beta_g2 = self.g2("beta_g2")?;
        let gamma_g2 = self.g2("gamma_g2")?;
        let delta_g1 = self.g1("delta_g1")?;
        let delta_g2 = self.g2("delta_g2")?;
        let ic_range = self.section(Section::Ic, G1_UNCOMPRESSED)?;
        // The vk is small next to the queries: always fully validated.
        let ic = decode_g1_points(&self.src.read(ic_range.start, ic_range.len())?, Section::Ic, 0, Validation::Full)?;
        Ok(VerifyingKey { alpha_g1, beta_g1, beta_g2, gamma_g2, delta_g1, delta_g2, ic })
    }
}

/// Where each query section lies in a parameter file; obtained without decoding any query
/// point.
#[derive(Debug, Clone)]
pub struct ParamsLayout {
    /// The verifying key (decoded and validated).
    pub vk: VerifyingKey,
    /// Byte range of the `h` points.
    pub h: Range<usize>,
    /// Byte range of the `l` points.
    pub l: Range<usize>,
    /// Byte range of the `a` points.
    pub a: Range<usize>,
    /// Byte range of the `b_g1` points.
    pub b_g1: Range<usize>,
    /// Byte range of the `b_g2` points.
    pub b_g2: Range<usize>,
}

impl ParamsLayout {
    /// Walks the file's lengths; decodes and validates only the verifying key.
    pub fn parse(bytes: &[u8]) -> Result<Self, ParamsError> {
        Self::read(&bytes)
    }

    /// As [`ParamsLayout::parse`], reading only the verifying key and the section lengths
    /// from `src`.
    pub fn read(src: &dyn ParamsSource) -> Result<Self, ParamsError> {
        let mut r = Reader { src, pos: 0 };
        let vk = r.vk()?;
        let h = r.section(Section::H, G1_UNCOMPRESSED)?;
        let l = r.section(Section::L, G1_UNCOMPRESSED)?;
        let a = r.section(Section::A, G1_UNCOMPRESSED)?;
        let b_g1 = r.section(Section::BG1, G1_UNCOMPRESSED)?;
        let b_g2 = r.section(Section::BG2, G2_UNCOMPRESSED)?;
        if r.pos != src.len() {
            return Err(ParamsError::TrailingBytes(src.len() - r.pos));
        }
        Ok(ParamsLayout { vk, h, l, a, b_g1, b_g2 })
    }

    /// Host bytes of the largest query once decoded (what a load moving one query at a time
    /// holds): a decoded point takes as many bytes as its uncompressed encoding.
    pub fn largest_query_bytes(&self) -> u64 {
        [&self.h, &self.l, &self.a, &self.b_g1, &self.b_g2].iter().map(|r| r.len() as u64).max().unwrap_or(0)
    }

    /// The G1 query sections with their byte ranges.
    pub fn g1_sections(&self) -> [(Section, Range<usize>); 4] {
        [(Section::H, self.h.clone()), (Section::L, self.l.clone()), (Section::A, self.a.clone()), (Section::BG1, self.b_g1.clone())]
    }
}

/// A decoded parameter file: the proving key on the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parameters {
    /// Verifying key.
    pub vk: VerifyingKey,
    /// `h` query: `[τ^i·Z(τ)/δ]₁`, `n - 1` points.
    pub h: Vec<G1Affine>,
    /// `l` query: `[(β·u_i + α·v_i + w_i)/δ]₁` for aux variables.
    pub l: Vec<G1Affine>,
    /// `a` query: `[u_i(τ)]₁`.
    pub a: Vec<G1Affine>,
    /// `b_g1` query: `[v_i(τ)]₁`.
    pub b_g1: Vec<G1Affine>,
    /// `b_g2` query: `[v_i(τ)]₂`.
    pub b_g2: Vec<G2Affine>,
}

impl Parameters {
    /// Parses a whole parameter file on the calling thread. Backends offer parallel loaders
    /// built on [`ParamsLayout`] for large files.
    pub fn from_bytes(bytes: &[u8], validation: Validation) -> Result<Self, ParamsError> {
        let layout = ParamsLayout::parse(bytes)?;
        Ok(Parameters {
            h: decode_g1_points(&bytes[layout.h.clone()], Section::H, 0, validation)?,
            l: decode_g1_points(&bytes[layout.l.clone()], Section::L, 0, validation)?,
            a: decode_g1_points(&bytes[layout.a.clone()], Section::A, 0, validation)?,
            b_g1: decode_g1_points(&bytes[layout.b_g1.clone()], Section::BG1, 0, validation)?,
            b_g2: decode_g2_points(&bytes[layout.b_g2.clone()], Section::BG2, 0, validation)?,
            vk: layout.vk,
        })
    }

    /// Serializes in bellperson's `Parameters::write` layout.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len());
        self.write_to(&mut out).expect("writing to a Vec cannot fail");
        out
    }

    /// Size of the encoding in bytes.
    pub fn encoded_len(&self) -> usize {
        self.vk.to_bytes().len() + 5 * 4 + (self.h.len() + self.l.len() + self.a.len() + self.b_g1.len()) * G1_UNCOMPRESSED + self.b_g2.len() * G2_UNCOMPRESSED
    }

    /// Streams the encoding into `w` (which the caller buffers).
    pub fn write_to(&self, w: &mut impl std::io::Write) -> std::io::Result<()> {
        w.write_all(&self.vk.to_bytes())?;
        for sec in [&self.h, &self.l, &self.a, &self.b_g1] {
            w.write_all(&(sec.len() as u32).to_be_bytes())?;
            for p in sec.iter() {
                w.write_all(&p.to_uncompressed())?;
            }
        }
        w.write_all(&(self.b_g2.len() as u32).to_be_bytes())?;
        for p in &self.b_g2 {
            w.write_all(&p.to_uncompressed())?;
        }
        Ok(())
    }
}
