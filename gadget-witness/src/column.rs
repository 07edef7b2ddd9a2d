//! storage-proofs-porep's stacked-DRG column gadgets (`stacked::circuit::column`, `hash`).

use blstrs::Scalar;

use crate::poseidon::{constants_11, constants_2, poseidon_hash};
use crate::Assignment;

/// `Column::alloc`: one aux value per row (layer), in order.
pub fn alloc_column(a: &mut Assignment<'_>, rows: &[Scalar]) {
    for row in rows {
        a.aux(*row);
    }
}

/// `hash_single_column` (`AllocatedColumn::hash`) of an allocated column: neptune's legacy
/// Poseidon circuit with filecoin-hashers' `POSEIDON_CONSTANTS_11` for 11 layers (598 aux) or
/// `POSEIDON_CONSTANTS_2` for 2 layers (311 aux). Returns the column hash. Panics on other
/// lengths, as the gadget does.
pub fn hash_single_column(a: &mut Assignment<'_>, column: &[Scalar]) -> Scalar {
    match column.len() {
        2 => poseidon_hash(a, column, constants_2()),
        11 => poseidon_hash(a, column, constants_11()),
        n => panic!("unsupported column size: {n}"),
    }
}
