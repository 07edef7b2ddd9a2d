//! Command-line tools beside the daemon: [`prove`] (one proof in process), [`filecoin`]
//! (Filecoin parameters, requests and reference proofs), [`compare_bellperson`], [`doctor`]
//! (checks a host before the first job).

pub mod compare_bellperson;
pub mod doctor;
pub mod filecoin;
pub mod prove;
