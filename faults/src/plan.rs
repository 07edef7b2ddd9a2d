//! What to inject where: rules parsed from `STAGE:ACTION[:TRIGGER]`.

use std::fmt;
use std::time::Duration;

/// A group of backend calls a rule applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultStage {
    /// `upload_scalars`.
    Upload,
    /// `download_scalars`.
    Download,
    /// `ntt`, `quotient_on_coset`, `compute_h`.
    Ntt,
    /// `msm_g1`, `msm_g2`.
    Msm,
    /// `evaluate_constraints`.
    Evaluate,
    /// `load_g1`, `load_g2`, `load_matrices` (parameter and matrix loads).
    Load,
}

impl FaultStage {
    /// Every stage, in the order of [`FaultStage::name`].
    pub const ALL: [FaultStage; 6] = [FaultStage::Upload, FaultStage::Download, FaultStage::Ntt, FaultStage::Msm, FaultStage::Evaluate, FaultStage::Load];

    /// The name used in rules.
    pub fn name(self) -> &'static str {
        match self {
            FaultStage::Upload => "upload",
            FaultStage::Download => "download",
            FaultStage::Ntt => "ntt",
            FaultStage::Msm => "msm",
            FaultStage::Evaluate => "evaluate",
            FaultStage::Load => "load",
        }
    }

    fn parse(s: &str) -> Option<FaultStage> {
        FaultStage::ALL.into_iter().find(|x| x.name() == s)
    }

    /// Whether [`FaultAction::Corrupt`] can be applied to this stage's results.
    pub fn can_corrupt(self) -> bool {
        matches!(self, FaultStage::Upload | FaultStage::Download | FaultStage::Ntt | FaultStage::Msm)
    }
}

/// What an injected fault does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultAction {
    /// The call fails with `BackendError::Device`.
    DeviceError,
    /// The call fails with `BackendError::OutOfMemory`.
    OutOfMemory,
    /// The call succeeds with a wrong result (an MSM sum off by the generator, a transform
    /// applied twice, one scalar changed on upload or download).
    Corrupt,
    /// The call blocks this long, then runs normally.
    Delay(Duration),
}

/// When a rule fires.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Trigger {
    /// On every matching call.
    Always,
    /// On the n-th matching call of this backend (1-based), once.
    Nth(u64),
    /// On each matching call with this probability, from the plan's seeded generator.
    Probability(f64),
}

/// One injection rule.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultRule {
    /// The calls it applies to.
    pub stage: FaultStage,
    /// What it does.
    pub action: FaultAction,
    /// When.
    pub trigger: Trigger,
}

/// A rule that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("fault rule {rule:?}: {reason} (expected STAGE:ACTION[:TRIGGER], STAGE one of upload, download, ntt, msm, evaluate, load; ACTION error, oom, corrupt or delay=MS; TRIGGER always, nth=N or p=P)")]
pub struct RuleError {
    /// The rule as written.
    pub rule: String,
    /// What is wrong.
    pub reason: String,
}

impl FaultRule {
    /// Parses `STAGE:ACTION[:TRIGGER]`, e.g. `msm:corrupt:nth=1`, `ntt:error:p=0.01`,
    /// `msm:delay=5000:nth=2`, `upload:oom`.
    pub fn parse(s: &str) -> Result<FaultRule, RuleError> {
        let bad = |reason: &str| RuleError { rule: s.to_string(), reason: reason.to_string() };
        let parts: Vec<&str> = s.trim().split(':').collect();
        if !(2..=3).contains(&parts.len()) {
            return Err(bad("wrong number of fields"));
        }
        let stage = FaultStage::parse(parts[0]).ok_or_else(|| bad("unknown stage"))?;
        let action = match parts[1] {
            "error" => FaultAction::DeviceError,
            "oom" => FaultAction::OutOfMemory,
            "corrupt" if stage.can_corrupt() => FaultAction::Corrupt,
            "corrupt" => return Err(bad("corrupt applies to upload, download, ntt and msm only")),
            a => match a.strip_prefix("delay=").and_then(|ms| ms.parse::<u64>().ok()) {
                Some(ms) => FaultAction::Delay(Duration::from_millis(ms)),
                None => return Err(bad("unknown action")),
            },
        };
        let trigger = match parts.get(2).copied() {
            None | Some("always") => Trigger::Always,
            Some(t) => {
                if let Some(n) = t.strip_prefix("nth=") {
                    match n.parse::<u64>() {
                        Ok(n) if n > 0 => Trigger::Nth(n),
                        _ => return Err(bad("nth must be a positive integer")),
                    }
                } else if let Some(p) = t.strip_prefix("p=") {
                    match p.parse::<f64>() {
                        Ok(p) if (0.0..=1.0).contains(&p) => Trigger::Probability(p),
                        _ => return Err(bad("p must be a probability in [0, 1]")),
                    }
                } else {
                    return Err(bad("unknown trigger"));
                }
            }
        };
        Ok(FaultRule { stage, action, trigger })
    }
}

impl fmt::Display for FaultRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let action = match self.action {
            FaultAction::DeviceError => "error".to_string(),
            FaultAction::OutOfMemory => "oom".to_string(),
            FaultAction::Corrupt => "corrupt".to_string(),
            FaultAction::Delay(d) => format!("delay={}", d.as_millis()),
        };
        let trigger = match self.trigger {
            Trigger::Always => "always".to_string(),
            Trigger::Nth(n) => format!("nth={n}"),
            Trigger::Probability(p) => format!("p={p}"),
        };
        write!(f, "{}:{action}:{trigger}", self.stage.name())
    }
}

/// The rules of one backend and the seed of its random triggers.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FaultPlan {
    /// The rules, checked in order: the first that fires decides a call.
    pub rules: Vec<FaultRule>,
    /// Seed of the generator behind [`Trigger::Probability`].
    pub seed: u64,
}

impl FaultPlan {
    /// A plan from rule strings.
    pub fn parse<S: AsRef<str>>(rules: &[S], seed: u64) -> Result<FaultPlan, RuleError> {
        Ok(FaultPlan { rules: rules.iter().map(|r| FaultRule::parse(r.as_ref())).collect::<Result<_, _>>()?, seed })
    }

    /// A plan of one rule.
    pub fn one(rule: FaultRule) -> FaultPlan {
        FaultPlan { rules: vec![rule], seed: 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse_and_print_back() {
        for s in ["msm:corrupt:nth=1", "ntt:error:p=0.25", "msm:delay=5000:nth=2", "upload:oom:always", "load:error:always"] {
            assert_eq!(FaultRule::parse(s).unwrap().to_string(), s);
        }
        assert_eq!(FaultRule::parse("upload:oom").unwrap().trigger, Trigger::Always);
        assert_eq!(FaultRule::parse("msm:delay=20").unwrap().action, FaultAction::Delay(Duration::from_millis(20)));
    }

    #[test]
    fn bad_rules_are_refused_with_the_reason() {
        for (s, why) in [
            ("msm", "wrong number"),
            ("gpu:error", "unknown stage"),
            ("msm:explode", "unknown action"),
            ("load:corrupt", "corrupt applies"),
            ("msm:error:nth=0", "positive"),
            ("msm:error:p=1.5", "probability"),
            ("msm:error:sometimes", "unknown trigger"),
            ("msm:delay=soon", "unknown action"),
        ] {
            let e = FaultRule::parse(s).unwrap_err();
            assert!(e.reason.contains(why), "{s}: {e}");
        }
    }
}
