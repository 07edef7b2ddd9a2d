//! SnapDeals (`EmptySectorUpdateCircuit`): the native witness of a partition and synthetic jobs
//! and requests (`crate::synthetic::snap`).

pub(crate) mod witness;
