//! Parallel recording of constraint matrices (`cuzk_worker::matrices::record_parallel`) gives the
//! same file bytes as `ConstraintMatrices::record` on the built-in circuits at a few sizes, in
//! 1, 2, 3 and 7 parts, with the default chunks and with chunks small enough that every part
//! holds many.

use cuzk_circuits::CircuitKind;
use cuzk_core::matrices::ConstraintMatrices;

#[test]
fn parallel_recording_equals_sequential_on_the_builtins() {
    for (kind, logs) in [(CircuitKind::SquaringChain, [4u32, 10, 14]), (CircuitKind::Sha256Chain, [15, 16, 17])] {
        for log in logs {
            let c = kind.instance(log, 3).expect("circuit");
            let want = ConstraintMatrices::record(c.clone()).expect("record").to_file_bytes("k");
            for parts in [1, 2, 3, 7] {
                for chunk in [cuzk_core::matrices::DEFAULT_CHUNK_ROWS, 1000] {
                    let got = cuzk_worker::matrices::record_parallel_chunked(&c, parts, chunk).expect("record_parallel").to_file_bytes("k");
                    assert!(got == want, "{kind:?} 2^{log}: {parts} parts of {chunk}-row chunks differ");
                }
            }
        }
    }
}
