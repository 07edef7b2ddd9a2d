//! Compiles every kernel with NVRTC for sm_90 (no GPU needed); skips visibly without NVRTC.

use cuzk_backend_cuda::{kernels, nvrtc};

#[test]
fn all_kernels_compile_for_sm90() {
    if !nvrtc::available() {
        skip("SKIPPED: NVRTC not found (install libnvrtc11.2 from Debian non-free or set CUZK_NVRTC_LIB)");
        return;
    }
    let (ver, path) = nvrtc::version().unwrap();
    let t = std::time::Instant::now();
    let cubin = match nvrtc::compile_cubin(kernels::SOURCE, 90) {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    eprintln!("NVRTC {}.{} ({path}): {} bytes of sm_90 cubin in {:.1?}", ver.0, ver.1, cubin.len(), t.elapsed());
    // CUZK_NVRTC_DUMP=<file> keeps the image, e.g. for `cuobjdump -sass <file>`.
    if let Some(path) = std::env::var_os("CUZK_NVRTC_DUMP") {
        std::fs::write(&path, &cubin).expect("write the cubin");
    }
    // Every kernel name appears in the image's symbol table.
    for k in kernels::KERNELS {
        assert!(cubin.windows(k.len()).any(|w| w == k.as_bytes()), "kernel {k} missing from the cubin");
    }
}

/// The experimental NTT on the FP64 units (`CUZK_CUDA_DEFINES=CUZK_NTT_FP64`) compiles too.
#[test]
fn ntt_fp64_variant_compiles_for_sm90() {
    if !nvrtc::available() {
        skip("SKIPPED: NVRTC not found (install libnvrtc11.2 from Debian non-free or set CUZK_NVRTC_LIB)");
        return;
    }
    let source = format!("#define CUZK_NTT_FP64\n{}", kernels::SOURCE);
    let cubin = nvrtc::compile_cubin(&source, 90).unwrap_or_else(|e| panic!("{e}"));
    assert!(cubin.windows(8).any(|w| w == b"ntt_pass"), "ntt_pass missing from the cubin");
}

/// Prints past libtest's output capture, so skips are visible in a plain `cargo test`.
fn skip(msg: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{msg}");
}
