// Inputs for running a fuzz body without libFuzzer (the workspace's tests include this file
// beside the bodies): each seed, its truncations, copies with one byte changed, and random
// bytes, from a fixed xorshift so that every run tries the same inputs.

/// Each seed whole and cut short at up to 64 lengths, each with one byte changed at up to 64
/// places (two ways), then 256 random inputs of 0 to 511 bytes.
pub fn variations(seeds: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out = Vec::new();
    for seed in seeds {
        out.push(seed.clone());
        let step = (seed.len() / 64).max(1);
        for len in (0..seed.len()).step_by(step) {
            out.push(seed[..len].to_vec());
        }
        for at in (0..seed.len()).step_by(step) {
            for change in [0x01u8, 0xff] {
                let mut v = seed.clone();
                v[at] ^= change;
                out.push(v);
            }
        }
    }
    for _ in 0..256 {
        let len = (next() % 512) as usize;
        out.push((0..len).map(|_| next() as u8).collect());
    }
    out
}
