//! Command-line tools beside the daemon: [`prove`] (one proof in process), [`filecoin`]
//! (Filecoin parameters, requests and reference proofs), [`compare_bellperson`].

pub mod compare_bellperson;
pub mod filecoin;
pub mod prove;
