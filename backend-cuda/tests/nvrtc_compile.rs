//! Compiles every kernel with NVRTC for sm_90 (no GPU needed); skips visibly without NVRTC.

use cuzk_backend_cuda::device::{kernel_defines, kernel_source, parse_defines};
use cuzk_backend_cuda::{kernels, nvrtc};

#[test]
fn all_kernels_compile_for_sm90() {
    if !nvrtc::available() {
        skip("SKIPPED: NVRTC not found (install libnvrtc11.2 from Debian non-free or set CUZK_NVRTC_LIB)");
        return;
    }
    let (ver, path) = nvrtc::version().unwrap();
    let t = std::time::Instant::now();
    // CUZK_CUDA_DEFINES=A,B prepends `#define`s as the backend does (to inspect an experiment).
    let defines = parse_defines(&std::env::var("CUZK_CUDA_DEFINES").unwrap_or_default());
    let cubin = match nvrtc::compile_cubin(&kernel_source(&defines), 90) {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    eprintln!("NVRTC {}.{} ({path}): {} bytes of sm_90 cubin in {:.1?}", ver.0, ver.1, cubin.len(), t.elapsed());
    // CUZK_NVRTC_DUMP=<file> keeps the image, e.g. for `cuobjdump -sass <file>`.
    if let Some(path) = std::env::var_os("CUZK_NVRTC_DUMP") {
        std::fs::write(&path, &cubin).expect("write the cubin");
    }
    assert_every_kernel_in(&cubin, "the cubin");
}

/// The build the backend makes for sm_90 devices (`kernel_defines`: the NTT's twiddle products
/// on the FP64 units, capped at 64 registers) compiles too.
#[test]
fn sm90_build_compiles() {
    if !nvrtc::available() {
        skip("SKIPPED: NVRTC not found (install libnvrtc11.2 from Debian non-free or set CUZK_NVRTC_LIB)");
        return;
    }
    let defines = kernel_defines(90, "");
    assert_eq!(defines, ["CUZK_NTT_FP64", "CUZK_NTT_LB"]);
    let cubin = nvrtc::compile_cubin(&kernel_source(&defines), 90).unwrap_or_else(|e| panic!("{defines:?}: {e}"));
    assert_every_kernel_in(&cubin, "the sm_90 cubin");
}

/// Every kernel name appears in the image's symbol table.
fn assert_every_kernel_in(cubin: &[u8], what: &str) {
    for k in kernels::KERNELS {
        assert!(cubin.windows(k.len()).any(|w| w == k.as_bytes()), "kernel {k} missing from {what}");
    }
}

/// Prints past libtest's output capture, so skips are visible in a plain `cargo test`.
fn skip(msg: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{msg}");
}
