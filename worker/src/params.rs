//! Reading bellperson parameter files: the file is mapped, its layout checked, and the point
//! sections decoded on all threads.

use std::path::Path;

use rayon::prelude::*;

use crate::WorkError;
use cuzk_core::params::{decode_g1_points, decode_g2_points, Parameters, ParamsError, ParamsLayout, Section, Validation, G1_UNCOMPRESSED, G2_UNCOMPRESSED};

/// Points decoded per task.
const POINTS_PER_TASK: usize = 1 << 12;

fn g1_section(bytes: &[u8], section: Section, validation: Validation) -> Result<Vec<blstrs::G1Affine>, ParamsError> {
    let parts: Vec<_> = bytes
        .par_chunks(POINTS_PER_TASK * G1_UNCOMPRESSED)
        .enumerate()
        .map(|(i, c)| decode_g1_points(c, section, i * POINTS_PER_TASK, validation))
        .collect::<Result<_, _>>()?;
    Ok(parts.concat())
}

fn g2_section(bytes: &[u8], section: Section, validation: Validation) -> Result<Vec<blstrs::G2Affine>, ParamsError> {
    let parts: Vec<_> = bytes
        .par_chunks(POINTS_PER_TASK * G2_UNCOMPRESSED)
        .enumerate()
        .map(|(i, c)| decode_g2_points(c, section, i * POINTS_PER_TASK, validation))
        .collect::<Result<_, _>>()?;
    Ok(parts.concat())
}

/// Decodes a whole parameter file using all threads; same result and errors as
/// [`Parameters::from_bytes`].
pub fn load_parameters(bytes: &[u8], validation: Validation) -> Result<Parameters, ParamsError> {
    let layout = ParamsLayout::parse(bytes)?;
    Ok(Parameters {
        h: g1_section(&bytes[layout.h.clone()], Section::H, validation)?,
        l: g1_section(&bytes[layout.l.clone()], Section::L, validation)?,
        a: g1_section(&bytes[layout.a.clone()], Section::A, validation)?,
        b_g1: g1_section(&bytes[layout.b_g1.clone()], Section::BG1, validation)?,
        b_g2: g2_section(&bytes[layout.b_g2.clone()], Section::BG2, validation)?,
        vk: layout.vk,
    })
}

/// Reads and decodes a parameter file with all threads.
pub fn read_params(path: &Path, validation: Validation) -> Result<Parameters, WorkError> {
    let io = |source| WorkError::Io { path: path.into(), source };
    let file = std::fs::File::open(path).map_err(io)?;
    // SAFETY: the file is only read; cuzk never writes a file it has open.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
    load_parameters(&map, validation).map_err(|source| WorkError::Params { path: path.into(), source })
}
