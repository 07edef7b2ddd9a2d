//! `cuzk-faults`: test support that makes a compute backend misbehave on purpose.
//!
//! [`FaultyBackend`] wraps any [`cuzk_core::backend::Backend`] and, following a
//! [`FaultPlan`], makes chosen calls fail with a device error or out-of-memory, return a
//! corrupted result, or block for a while before running. Rules are written
//! `STAGE:ACTION[:TRIGGER]` (`msm:corrupt:nth=1`, `ntt:error:p=0.01`, `msm:delay=5000:nth=2`);
//! random triggers draw from a generator seeded by the plan, so a run can be repeated.
//! The daemon's tests wrap the CPU backend with it; `cuzk serve` wraps its backend when the
//! test-only `[faults]` section of its configuration is enabled.

#![warn(missing_docs)]

mod backend;
mod plan;

pub use backend::{FaultProbe, FaultyBackend, Injected};
pub use plan::{FaultAction, FaultPlan, FaultRule, FaultStage, RuleError, Trigger};
