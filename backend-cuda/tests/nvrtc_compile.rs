//! Compiles every kernel with NVRTC for sm_90 (no GPU needed); skips visibly without NVRTC.
//!
//! `CUZK_NVRTC_DUMP=<dir>` keeps the images as `<dir>/portable.cubin` and `<dir>/sm90.cubin`,
//! e.g. for `cuobjdump -sass`.

use cuzk_backend_cuda::device::{kernel_defines, kernel_source};
use cuzk_backend_cuda::{kernels, nvrtc};

/// The portable build (what GPUs other than sm_90 get: no defines, the NTT's IMAD products),
/// compiled for sm_90.
#[test]
fn all_kernels_compile_for_sm90() {
    compile("portable", &kernel_defines(80));
}

/// The build the backend makes for sm_90 devices (`kernel_defines`: the NTT's twiddle products
/// on the FP64 units, capped at 64 registers) compiles too.
#[test]
fn sm90_build_compiles() {
    let defines = kernel_defines(90);
    assert_eq!(defines, ["CUZK_NTT_FP64"]);
    compile("sm90", &defines);
}

fn compile(build: &str, defines: &[String]) {
    if !nvrtc::available() {
        skip("SKIPPED: NVRTC not found (install libnvrtc11.2 from Debian non-free or set CUZK_NVRTC_LIB)");
        return;
    }
    let (ver, path) = nvrtc::version().unwrap();
    let t = std::time::Instant::now();
    let cubin = nvrtc::compile_cubin(&kernel_source(defines), 90).unwrap_or_else(|e| panic!("{build} build {defines:?}: {e}"));
    eprintln!("NVRTC {}.{} ({path}): {} bytes of sm_90 cubin ({build} build) in {:.1?}", ver.0, ver.1, cubin.len(), t.elapsed());
    if let Some(dir) = std::env::var_os("CUZK_NVRTC_DUMP") {
        let file = std::path::Path::new(&dir).join(format!("{build}.cubin"));
        std::fs::create_dir_all(&dir).and_then(|_| std::fs::write(&file, &cubin)).unwrap_or_else(|e| panic!("writing {}: {e}", file.display()));
    }
    for k in kernels::KERNELS {
        assert!(cubin.windows(k.len()).any(|w| w == k.as_bytes()), "kernel {k} missing from the {build} cubin");
    }
}

/// Prints past libtest's output capture, so skips are visible in a plain `cargo test`.
fn skip(msg: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{msg}");
}
