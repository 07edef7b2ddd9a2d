//! WindowPoSt and WinningPoSt (`FallbackPoStCircuit`): the native witness of a partition and
//! synthetic requests (`crate::synthetic::post`).

pub(crate) mod witness;
