// Arbitrary bytes as a commitment field (raw 32 bytes or a CID): errors, never panics; the first
// byte picks sealed or unsealed. A CID that parses is exactly the CID `commitment_cid` writes.
//
// Included by `fuzz_targets/commitment.rs` (libFuzzer) and by a test of the workspace that runs it
// on seed inputs, so the body compiles with the crates it checks.

use cuzk_circuits_filecoin::{commitment_cid, parse_commitment, CommitmentKind};

/// One input through the checks: panics on a finding.
pub fn check(data: &[u8]) {
    let Some((&sel, body)) = data.split_first() else { return };
    let kind = if sel & 1 == 0 { CommitmentKind::Sealed } else { CommitmentKind::Unsealed };
    let other = if kind == CommitmentKind::Sealed { CommitmentKind::Unsealed } else { CommitmentKind::Sealed };
    match parse_commitment(body, "comm_r_old", kind) {
        Ok(c) if body.len() == 32 => assert_eq!(&c[..], body),
        Ok(c) => {
            assert_eq!(commitment_cid(&c, kind), body);
            assert!(parse_commitment(body, "comm_r_old", other).is_err(), "a CID of both kinds");
        }
        Err(e) => assert!(e.to_string().starts_with("comm_r_old: ")),
    }
}
