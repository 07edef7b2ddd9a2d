//! PoRep C2 (`StackedCircuit`): the native witness of a partition and synthetic jobs and
//! requests ([`synthetic`]).

pub mod synthetic;
pub(crate) mod witness;
