//! The built-in circuits' witnesses in parallel parts ([`ParallelWitness`]).
//!
//! A SHA-256 chain's variables are the 512 preimage bits, then one equal-sized run per block,
//! then the packed digest (inputs only). A part takes a run of consecutive blocks: the bits
//! entering its first block are computed natively, and the part writes its own window with
//! `cuzk-gadget-witness`'s native SHA-256 writer, which pushes exactly the values
//! `sha256_block_no_padding` allocates, in order. The first part also writes the preimage bits,
//! the last one the digest packed as `multipack::pack_into_inputs` does. The gadgets run only
//! in sequential synthesis ([`Circuit::synthesize`](bellpepper_core::Circuit::synthesize)),
//! which stays the reference.

use std::sync::OnceLock;

use bellpepper::gadgets::multipack;
use blstrs::Scalar;
use cuzk_core::witness::{windows, ParallelWitness, WitnessError};
use cuzk_gadget_witness::bits::Bit;
use cuzk_gadget_witness::sha256::sha256_block_no_padding;
use cuzk_gadget_witness::Assignment;
use ff::Field;
use rayon::prelude::*;

use crate::{compress, double, first_block, BuiltinCircuit, Sha256Chain, SquaringChain};

/// Preimage bits, allocated before the first block.
const PREIMAGE_BITS: usize = 512;

/// Parts per thread, so uneven parts still balance.
const PARTS_PER_THREAD: usize = 4;

/// Aux variables one block allocates when its 512 input bits are allocated bits, counted once
/// by running the native writer into an empty window (which counts writes without storing).
fn block_aux() -> usize {
    static AUX: OnceLock<usize> = OnceLock::new();
    *AUX.get_or_init(|| {
        let mut a = Assignment::new(&mut [], &mut []);
        let bits = vec![Bit::Is(false); PREIMAGE_BITS];
        sha256_block_no_padding(&mut a, &bits);
        a.aux_used()
    })
}

/// Bits of a 64-byte block, big-endian within each byte.
fn bits_of(block: &[u8; 64]) -> impl Iterator<Item = bool> + '_ {
    block.iter().flat_map(|byte| (0..8).rev().map(move |i| (byte >> i) & 1 == 1))
}

impl ParallelWitness for Sha256Chain {
    fn witness_into(&self, input: &mut [Scalar], aux: &mut [Scalar]) -> Result<(), WitnessError> {
        let block_aux = block_aux();
        let want = PREIMAGE_BITS + self.blocks * block_aux;
        if aux.len() != want || input.is_empty() {
            return Err(WitnessError::Layout { part: 0, detail: format!("{} blocks need {want} aux variables, the shape has {}", self.blocks, aux.len()) });
        }
        let parts = self.blocks.clamp(1, rayon::current_num_threads() * PARTS_PER_THREAD);
        let bounds: Vec<usize> = (0..=parts).map(|j| j * self.blocks / parts).collect();
        // The bytes entering each part's first block, natively.
        let mut starts = Vec::with_capacity(parts);
        let mut block = first_block(&self.preimage);
        for b in 0..=self.blocks {
            if starts.len() < parts && bounds[starts.len()] == b {
                starts.push(block);
            }
            if b < self.blocks {
                block = double(&compress(&block));
            }
        }
        let aux_lens: Vec<usize> = bounds.windows(2).enumerate().map(|(j, w)| (w[1] - w[0]) * block_aux + if j == 0 { PREIMAGE_BITS } else { 0 }).collect();
        let input_lens: Vec<usize> = (0..parts).map(|j| if j + 1 == parts { input.len() - 1 } else { 0 }).collect();
        let aux_windows = windows(aux, &aux_lens);
        let input_windows = windows(&mut input[1..], &input_lens);
        aux_windows.into_par_iter().zip(input_windows).enumerate().try_for_each(|(j, (aux, input))| {
            let mut a = Assignment::new(aux, input);
            write_blocks(&mut a, &starts[j], bounds[j + 1] - bounds[j], j == 0, j + 1 == parts).map_err(|detail| WitnessError::Layout { part: j, detail })?;
            a.finish().map_err(|e| WitnessError::Layout { part: j, detail: e.to_string() })
        })
    }
}

/// Writes `blocks` blocks from the bits of `start`: allocated first when `first` (the preimage
/// bits), otherwise the previous block's output bits, which another part writes. Packs the last
/// digest into inputs when `last`. Fails when a block's output bits are not all allocated bits
/// (`Boolean::Is`), as the next block's input and every part but the first assume.
fn write_blocks(a: &mut Assignment<'_>, start: &[u8; 64], blocks: usize, first: bool, last: bool) -> Result<(), String> {
    let mut bits: Vec<Bit> = if first { bits_of(start).map(|v| Bit::alloc(a, v)).collect() } else { bits_of(start).map(Bit::Is).collect() };
    let mut out = Vec::new();
    for _ in 0..blocks {
        out = sha256_block_no_padding(a, &bits);
        if let Some(k) = out.iter().position(|b| !matches!(b, Bit::Is(_))) {
            return Err(format!("output bit {k} of a block is {:?}, not an allocated bit", out[k]));
        }
        bits.clear();
        bits.extend_from_slice(&out);
        bits.extend_from_slice(&out);
    }
    if last {
        let digest: Vec<bool> = out.iter().map(|b| b.value()).collect();
        for v in multipack::compute_multipacking::<Scalar>(&digest) {
            a.input(v);
        }
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

    /// The parallel witness (the native writer) equals sequential synthesis's (the gadgets),
    /// index for index, for chains of no block, one block, a few blocks (as many parts as
    /// blocks on a small pool) and many blocks, so both one block per part and runs of several
    /// blocks meet at part boundaries (13 blocks in 12 parts on 3 threads; 9 in 4 on one).
    #[test]
    fn parallel_witness_equals_sequential() {
        for (threads, blocks) in [(3, 0), (3, 1), (3, 2), (3, 5), (3, 13), (1, 9)] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
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
