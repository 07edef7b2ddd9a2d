//! The built-in circuits' witnesses in parallel parts ([`ParallelWitness`]).
//!
//! A SHA-256 chain's variables are the 512 preimage bits, then one equal-sized run per block,
//! then the packed digest (inputs only). A part takes a run of consecutive blocks: the bits
//! entering its first block are computed natively and imported as the variables the previous
//! block's output bits are, so every part writes only its own window.

use std::sync::OnceLock;

use bellpepper::gadgets::multipack;
use bellpepper::gadgets::sha256::sha256_block_no_padding;
use bellpepper_core::boolean::{AllocatedBit, Boolean};
use bellpepper_core::{ConstraintSystem, Index, SynthesisError, Variable};
use blstrs::Scalar;
use cuzk_core::matrices::WitnessCs;
use cuzk_core::witness::{windows, ParallelWitness, SegmentCs, WitnessError};
use ff::Field;
use rayon::prelude::*;

use crate::{compress, double, first_block, BuiltinCircuit, Sha256Chain, SquaringChain};

/// Preimage bits, allocated before the first block.
const PREIMAGE_BITS: usize = 512;

/// Parts per thread, so uneven parts still balance.
const PARTS_PER_THREAD: usize = 4;

/// The variables of one block, relative to the first aux variable it allocates.
#[derive(Debug)]
struct BlockLayout {
    /// Aux variables a block allocates.
    aux: usize,
    /// Where each of its 256 output bits lives.
    outputs: Vec<usize>,
}

/// Measured once by running one block on allocated bits.
fn block_layout() -> Result<&'static BlockLayout, WitnessError> {
    static LAYOUT: OnceLock<Result<BlockLayout, String>> = OnceLock::new();
    let measured = LAYOUT.get_or_init(|| {
        let mut cs = <WitnessCs as ConstraintSystem<Scalar>>::new();
        let bits = (0..PREIMAGE_BITS)
            .map(|_| AllocatedBit::alloc(&mut cs, Some(false)).map(Boolean::from))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())?;
        let out = sha256_block_no_padding(&mut cs, &bits).map_err(|e| e.to_string())?;
        let outputs = out
            .iter()
            .map(|b| match b {
                Boolean::Is(bit) => match bit.get_variable().get_unchecked() {
                    Index::Aux(i) if i >= PREIMAGE_BITS => Ok(i - PREIMAGE_BITS),
                    other => Err(format!("output bit at {other:?}, not in the block's run")),
                },
                _ => Err("an output bit is not an allocated bit".to_string()),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(BlockLayout { aux: cs.aux.len() - PREIMAGE_BITS, outputs })
    });
    measured.as_ref().map_err(|detail| WitnessError::Layout { part: 0, detail: detail.clone() })
}

/// Bits of a 64-byte block, big-endian within each byte.
fn bits_of(block: &[u8; 64]) -> impl Iterator<Item = bool> + '_ {
    block.iter().flat_map(|byte| (0..8).rev().map(move |i| (byte >> i) & 1 == 1))
}

impl ParallelWitness for Sha256Chain {
    fn witness_into(&self, input: &mut [Scalar], aux: &mut [Scalar]) -> Result<(), WitnessError> {
        let layout = block_layout()?;
        let want = PREIMAGE_BITS + self.blocks * layout.aux;
        if aux.len() != want || input.is_empty() {
            return Err(WitnessError::Layout { part: 0, detail: format!("{} blocks need {want} aux variables, the shape has {}", self.blocks, aux.len()) });
        }
        let parts = self.blocks.clamp(1, rayon::current_num_threads() * PARTS_PER_THREAD);
        let bounds: Vec<usize> = (0..=parts).map(|j| j * self.blocks / parts).collect();
        // The bytes entering each part's first block, natively.
        let mut starts = Vec::with_capacity(parts);
        let mut block = first_block(&self.preimage);
        for b in 0..self.blocks {
            if bounds[starts.len()] == b {
                starts.push(block);
            }
            block = double(&compress(&block));
        }
        let aux_lens: Vec<usize> = bounds.windows(2).enumerate().map(|(j, w)| (w[1] - w[0]) * layout.aux + if j == 0 { PREIMAGE_BITS } else { 0 }).collect();
        let input_lens: Vec<usize> = (0..parts).map(|j| if j + 1 == parts { input.len() - 1 } else { 0 }).collect();
        let aux_windows = windows(aux, &aux_lens);
        let input_windows = windows(&mut input[1..], &input_lens);
        aux_windows.into_par_iter().zip(input_windows).enumerate().try_for_each(|(j, (aux, input))| {
            let (b0, b1) = (bounds[j], bounds[j + 1]);
            let aux_base = if j == 0 { 0 } else { PREIMAGE_BITS + b0 * layout.aux };
            let mut cs = SegmentCs::new(aux, aux_base, input, 1);
            if b0 > 0 {
                let prev = PREIMAGE_BITS + (b0 - 1) * layout.aux;
                let outputs = layout.outputs.iter().map(|&o| Variable::new_unchecked(Index::Aux(prev + o)));
                cs.import(outputs.clone().chain(outputs));
            }
            let ran = run_blocks(&mut cs, &starts[j], b1 - b0, j + 1 == parts);
            cs.finish_after(j, ran)
        })
    }
}

/// Runs `blocks` blocks from the bits of `start`, packing the last digest into inputs when
/// `last`.
fn run_blocks(cs: &mut SegmentCs<'_>, start: &[u8; 64], blocks: usize, last: bool) -> Result<(), SynthesisError> {
    let mut bits = bits_of(start).map(|v| AllocatedBit::alloc(&mut *cs, Some(v)).map(Boolean::from)).collect::<Result<Vec<_>, _>>()?;
    let mut out = Vec::new();
    for _ in 0..blocks {
        out = sha256_block_no_padding(&mut *cs, &bits)?;
        bits = [out.clone(), out.clone()].concat();
    }
    if last {
        multipack::pack_into_inputs(&mut *cs, &out)?;
    }
    Ok(())
}

impl ParallelWitness for SquaringChain {
    /// The chain is sequential; its values are written directly, without gadgets.
    fn witness_into(&self, input: &mut [Scalar], aux: &mut [Scalar]) -> Result<(), WitnessError> {
        if input.len() != 3 || aux.len() != self.steps.saturating_sub(1) {
            return Err(WitnessError::Layout {
                part: 0,
                detail: format!("{} steps need 3 inputs and {} aux, the shape has {} and {}", self.steps, self.steps.saturating_sub(1), input.len(), aux.len()),
            });
        }
        let mut x = self.x0;
        input[1] = x;
        for (i, slot) in aux.iter_mut().enumerate() {
            x = x.square() + Scalar::from(i as u64);
            *slot = x;
        }
        if self.steps > 0 {
            x = x.square() + Scalar::from((self.steps - 1) as u64);
        }
        input[2] = x;
        Ok(())
    }
}

impl ParallelWitness for BuiltinCircuit {
    fn witness_into(&self, input: &mut [Scalar], aux: &mut [Scalar]) -> Result<(), WitnessError> {
        match self {
            BuiltinCircuit::Sha256(c) => c.witness_into(input, aux),
            BuiltinCircuit::Squaring(c) => c.witness_into(input, aux),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuzk_core::alloc::heap;
    use cuzk_core::matrices::ConstraintMatrices;

    /// The parallel witness equals sequential synthesis's, index for index, for chains of one
    /// block, a few blocks (more parts than blocks on a small pool) and many blocks.
    #[test]
    fn parallel_witness_equals_sequential() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        for blocks in [1, 2, 5, 13] {
            let c = Sha256Chain { blocks, ..Sha256Chain::for_log_size(15, blocks as u64) };
            let m = ConstraintMatrices::record(c.clone()).unwrap();
            let seq = m.witness(c.clone(), heap()).unwrap();
            let par = pool.install(|| m.witness_parallel(&c, heap())).unwrap();
            assert_eq!(&par.input[..], &seq.input[..], "{blocks} blocks: inputs");
            assert!(par.aux[..] == seq.aux[..], "{blocks} blocks: aux differ at {:?}", par.aux.iter().zip(seq.aux.iter()).position(|(a, b)| a != b));
        }
        for steps in [0, 1, 2, 100] {
            let c = SquaringChain { steps, ..SquaringChain::for_log_size(4, 3) };
            let m = ConstraintMatrices::record(c.clone()).unwrap();
            let seq = m.witness(c.clone(), heap()).unwrap();
            let par = m.witness_parallel(&c, heap()).unwrap();
            assert_eq!((&par.input[..], &par.aux[..]), (&seq.input[..], &seq.aux[..]), "{steps} squarings");
        }
    }

    #[test]
    fn a_shape_that_does_not_fit_is_an_error() {
        let c = Sha256Chain::for_log_size(16, 1);
        let m = ConstraintMatrices::record(Sha256Chain { blocks: c.blocks + 1, ..c.clone() }).unwrap();
        assert!(matches!(m.witness_parallel(&c, heap()), Err(cuzk_core::synth::SynthesizeError::Witness(WitnessError::Layout { .. }))));
        let s = SquaringChain::for_log_size(5, 1);
        let m = ConstraintMatrices::record(SquaringChain { steps: 3, ..s.clone() }).unwrap();
        assert!(m.witness_parallel(&s, heap()).is_err());
    }
}
