//! PoRep C2 (`StackedCircuit`): the native witness of a partition and synthetic jobs and
//! requests (`crate::synthetic::porep`).

pub(crate) mod witness;
