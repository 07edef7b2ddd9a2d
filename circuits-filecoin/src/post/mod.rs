//! WindowPoSt and WinningPoSt (`FallbackPoStCircuit`): the native witness of a partition and
//! synthetic requests ([`synthetic`]).

pub mod synthetic;
pub(crate) mod witness;
