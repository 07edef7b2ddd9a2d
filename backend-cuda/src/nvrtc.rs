//! Run-time compilation of the CUDA kernels with NVRTC, cached on disk.
//!
//! NVRTC is loaded with `libloading` from the first library that opens among
//! `$CUZK_NVRTC_LIB`, the sonames of CUDA 13, 12 and 11 (Debian ships NVRTC 11.8 as
//! `libnvrtc.so.11.2`) and the usual toolkit directories, so the Rust build needs no CUDA
//! toolkit. Compiled images are cached under `$CUZK_CUDA_CACHE`, else
//! `$XDG_CACHE_HOME/cuzk`, else `~/.cache/cuzk`, keyed by a hash of the source, the options,
//! the target architecture and the NVRTC version.

use std::ffi::{c_char, c_int, CStr, CString};
use std::path::PathBuf;
use std::sync::OnceLock;

/// An NVRTC failure.
#[derive(Debug, thiserror::Error)]
pub enum NvrtcError {
    /// No NVRTC library could be opened.
    #[error("NVRTC not found (tried {0}); set CUZK_NVRTC_LIB to its path")]
    NotFound(String),
    /// A symbol is missing from the library.
    #[error("NVRTC symbol {0} missing: {1}")]
    Symbol(&'static str, String),
    /// An NVRTC call failed.
    #[error("NVRTC {call} failed: {message}")]
    Call {
        /// The function.
        call: &'static str,
        /// NVRTC's error string.
        message: String,
    },
    /// Compilation failed; the log says why.
    #[error("NVRTC compilation for {arch} failed:\n{log}")]
    Compile {
        /// Target architecture.
        arch: String,
        /// Compiler log.
        log: String,
    },
}

type Program = *mut std::ffi::c_void;
type Res = c_int;

struct Api {
    _lib: libloading::Library,
    path: String,
    version: (i32, i32),
    get_error_string: unsafe extern "C" fn(Res) -> *const c_char,
    create: unsafe extern "C" fn(*mut Program, *const c_char, *const c_char, c_int, *const *const c_char, *const *const c_char) -> Res,
    destroy: unsafe extern "C" fn(*mut Program) -> Res,
    compile: unsafe extern "C" fn(Program, c_int, *const *const c_char) -> Res,
    log_size: unsafe extern "C" fn(Program, *mut usize) -> Res,
    log: unsafe extern "C" fn(Program, *mut c_char) -> Res,
    cubin_size: unsafe extern "C" fn(Program, *mut usize) -> Res,
    cubin: unsafe extern "C" fn(Program, *mut c_char) -> Res,
}

// SAFETY: the function pointers are plain C entry points; NVRTC is thread-safe per program.
unsafe impl Send for Api {}
unsafe impl Sync for Api {}

fn candidates() -> Vec<String> {
    let mut v = Vec::new();
    if let Ok(p) = std::env::var("CUZK_NVRTC_LIB") {
        v.push(p);
    }
    for n in ["libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so.11.1", "libnvrtc.so.11.0"] {
        v.push(n.to_string());
    }
    for dir in ["/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib64"] {
        if let Ok(rd) = std::fs::read_dir(dir) {
            let mut found: Vec<String> = rd
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("libnvrtc.so") && !n.contains("builtins"))
                .map(|n| format!("{dir}/{n}"))
                .collect();
            found.sort();
            found.reverse();
            v.extend(found);
        }
    }
    v
}

fn load() -> Result<Api, NvrtcError> {
    let tried = candidates();
    for name in &tried {
        // SAFETY: loading NVRTC runs no unusual initialisation code.
        let Ok(lib) = (unsafe { libloading::Library::new(name) }) else {
            continue;
        };
        macro_rules! sym {
            ($n:literal) => {{
                // SAFETY: the signature matches nvrtc.h.
                let s = unsafe { lib.get($n.as_bytes()) }.map_err(|e| NvrtcError::Symbol($n, e.to_string()))?;
                *s
            }};
        }
        let version_fn: unsafe extern "C" fn(*mut c_int, *mut c_int) -> Res = sym!("nvrtcVersion");
        let (mut major, mut minor) = (0, 0);
        // SAFETY: valid out-pointers.
        unsafe { version_fn(&mut major, &mut minor) };
        let api = Api {
            get_error_string: sym!("nvrtcGetErrorString"),
            create: sym!("nvrtcCreateProgram"),
            destroy: sym!("nvrtcDestroyProgram"),
            compile: sym!("nvrtcCompileProgram"),
            log_size: sym!("nvrtcGetProgramLogSize"),
            log: sym!("nvrtcGetProgramLog"),
            cubin_size: sym!("nvrtcGetCUBINSize"),
            cubin: sym!("nvrtcGetCUBIN"),
            path: name.clone(),
            version: (major, minor),
            _lib: lib,
        };
        return Ok(api);
    }
    Err(NvrtcError::NotFound(tried.join(", ")))
}

fn api() -> Result<&'static Api, NvrtcError> {
    static API: OnceLock<Result<Api, String>> = OnceLock::new();
    match API.get_or_init(|| load().map_err(|e| e.to_string())) {
        Ok(a) => Ok(a),
        Err(e) => Err(NvrtcError::NotFound(e.clone())),
    }
}

/// Whether an NVRTC library can be loaded on this machine.
pub fn available() -> bool {
    api().is_ok()
}

/// The loaded NVRTC's version and path.
pub fn version() -> Result<((i32, i32), String), NvrtcError> {
    let a = api()?;
    Ok((a.version, a.path.clone()))
}

fn check(a: &Api, call: &'static str, r: Res) -> Result<(), NvrtcError> {
    if r == 0 {
        return Ok(());
    }
    // SAFETY: NVRTC returns a static string.
    let message = unsafe { CStr::from_ptr((a.get_error_string)(r)) }.to_string_lossy().into_owned();
    Err(NvrtcError::Call { call, message })
}

/// Options every compilation uses (besides the architecture).
pub const OPTIONS: &[&str] = &["-std=c++17", "-default-device"];

/// Compiles `source` to a cubin for `sm_{arch}` (e.g. `90`), without the disk cache.
///
/// NVRTC recurses deeply on large kernels, so the compilation runs on its own thread with a
/// 1 GiB stack (reserved address space, touched only as needed).
pub fn compile_cubin(source: &str, arch: u32) -> Result<Vec<u8>, NvrtcError> {
    let src = source.to_owned();
    std::thread::Builder::new()
        .name("nvrtc".into())
        .stack_size(1 << 30)
        .spawn(move || compile_cubin_here(&src, arch))
        .map_err(|e| NvrtcError::Call { call: "spawn", message: e.to_string() })?
        .join()
        .map_err(|_| NvrtcError::Call { call: "nvrtcCompileProgram", message: "compiler thread panicked".into() })?
}

fn compile_cubin_here(source: &str, arch: u32) -> Result<Vec<u8>, NvrtcError> {
    let a = api()?;
    let src = CString::new(source).map_err(|_| NvrtcError::Call { call: "nvrtcCreateProgram", message: "NUL in source".into() })?;
    let name = CString::new("cuzk_kernels.cu").unwrap();
    let mut prog: Program = std::ptr::null_mut();
    // SAFETY: valid C strings, no headers.
    check(a, "nvrtcCreateProgram", unsafe { (a.create)(&mut prog, src.as_ptr(), name.as_ptr(), 0, std::ptr::null(), std::ptr::null()) })?;
    let mut opts: Vec<CString> = OPTIONS.iter().map(|o| CString::new(*o).unwrap()).collect();
    opts.push(CString::new(format!("--gpu-architecture=sm_{arch}")).unwrap());
    let ptrs: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
    // SAFETY: prog is valid; option pointers live across the call.
    let r = unsafe { (a.compile)(prog, ptrs.len() as c_int, ptrs.as_ptr()) };
    let result = if r != 0 {
        let mut size = 0usize;
        // SAFETY: prog is valid.
        unsafe { (a.log_size)(prog, &mut size) };
        let mut buf = vec![0u8; size.max(1)];
        // SAFETY: buffer has `size` bytes.
        unsafe { (a.log)(prog, buf.as_mut_ptr().cast()) };
        let log = String::from_utf8_lossy(&buf).trim_end_matches('\0').to_string();
        Err(NvrtcError::Compile { arch: format!("sm_{arch}"), log })
    } else {
        let mut size = 0usize;
        // SAFETY: prog compiled.
        check(a, "nvrtcGetCUBINSize", unsafe { (a.cubin_size)(prog, &mut size) }).and_then(|_| {
            let mut buf = vec![0u8; size];
            // SAFETY: buffer has `size` bytes.
            check(a, "nvrtcGetCUBIN", unsafe { (a.cubin)(prog, buf.as_mut_ptr().cast()) }).map(|_| buf)
        })
    };
    // SAFETY: prog is valid and destroyed once.
    unsafe { (a.destroy)(&mut prog) };
    result
}

/// The cache directory: `CUZK_CUDA_CACHE`, else the user's cuzk cache directory.
pub fn cache_dir() -> Option<PathBuf> {
    std::env::var_os("CUZK_CUDA_CACHE").map(PathBuf::from).or_else(cuzk_core::backend::user_cache_dir)
}

/// FNV-1a, 64 bits: enough to key a cache of our own outputs.
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in *p {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        h ^= 0xff;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Compiles `source` for `sm_{arch}`, reusing a cached cubin when one exists; returns the image
/// and whether it came from the cache.
pub fn compile_cached(source: &str, arch: u32) -> Result<(Vec<u8>, bool), NvrtcError> {
    let a = api()?;
    let key = fnv1a(&[source.as_bytes(), OPTIONS.join(" ").as_bytes(), arch.to_string().as_bytes(), format!("{}.{}", a.version.0, a.version.1).as_bytes()]);
    let file = cache_dir().map(|d| d.join(format!("kernels-sm{arch}-{key:016x}.cubin")));
    if let Some(f) = &file {
        if let Ok(bytes) = std::fs::read(f) {
            if !bytes.is_empty() {
                return Ok((bytes, true));
            }
        }
    }
    let cubin = compile_cubin(source, arch)?;
    if let Some(f) = &file {
        // Best effort: a read-only cache only costs a recompilation.
        if let Some(dir) = f.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let tmp = f.with_extension(format!("tmp{}", std::process::id()));
        if std::fs::write(&tmp, &cubin).is_ok() {
            let _ = std::fs::rename(&tmp, f);
        }
    }
    Ok((cubin, false))
}
