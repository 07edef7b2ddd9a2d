//! `cuzk doctor`: one deliberately broken host setting per check, caught by the check it
//! belongs to (asserted by check name and severity, not only by the exit code), and the real
//! binary on this host: without a GPU, exit 0 with a warning that there is none and that the
//! CPU backend proves; `--json` parses.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use cuzk_backend_cuda::nvrtc::NvrtcError;
use cuzk_backend_cuda::CudaError;
use cuzk_core::params::Validation;
use cuzk_daemon::config::Config;
use cuzk_daemon::devices::DeviceError;
use cuzk_daemon::tools::doctor::{self, Check, DeviceInfo, DeviceProbe, Finding, Host, KernelInfo, Opened, Rlimit, Severity};

const BIN: &str = env!("CARGO_BIN_EXE_cuzk");
const GIB: u64 = 1 << 30;

/// The findings of `check`, with the whole list in the panic message when there is none.
fn of(findings: &[Finding], check: Check) -> Vec<Finding> {
    let v: Vec<Finding> = findings.iter().filter(|f| f.check == check).cloned().collect();
    assert!(!v.is_empty(), "no {check:?} finding in {findings:#?}");
    v
}

/// The one finding of `check` with `severity`, naming it in the panic message when absent.
fn find(findings: &[Finding], check: Check, severity: Severity) -> Finding {
    of(findings, check).into_iter().find(|f| f.severity == severity).unwrap_or_else(|| panic!("no {severity:?} {check:?} finding in {findings:#?}"))
}

/// A healthy host with one CUDA device, as faked input: plenty of memory, unlimited locked
/// memory, a high open-file limit, this process's uid.
fn host(tmp: &Path) -> Host {
    let meminfo = tmp.join("meminfo");
    std::fs::write(&meminfo, format!("MemTotal: {} kB\nMemFree: 1 kB\nMemAvailable: {} kB\n", 256 * GIB / 1024, 240 * GIB / 1024)).unwrap();
    Host {
        meminfo,
        nvidia_version: tmp.join("no-nvidia-version"),
        memlock: Some(Rlimit { soft: None, hard: None }),
        nofile: Some(Rlimit { soft: Some(65536), hard: Some(65536) }),
        uid: uid(),
    }
}

fn uid() -> u32 {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() }
}

fn h200() -> DeviceProbe {
    DeviceProbe {
        driver: true,
        driver_version: Some("NVIDIA kernel module 580.159.04".into()),
        cuda_devices: 1,
        nvrtc: Ok("13.0 (libnvrtc.so.13)".into()),
        opened: Opened::Devices(vec![DeviceInfo {
            ordinal: 0,
            name: "cuda:0 NVIDIA H200".into(),
            free_bytes: Some(139 * GIB),
            kernels: Some(KernelInfo { cached: true, seconds: 0.2, defines: vec!["CUZK_NTT_FP64".into()] }),
        }]),
    }
}

/// A configuration whose paths all lie in `tmp`: data directory, Filecoin cache, socket,
/// meminfo.
fn config(tmp: &Path) -> Config {
    let mut cfg = Config::default();
    let data = tmp.join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::create_dir_all(tmp.join("fil")).unwrap();
    cfg.params.data_dir = Some(data);
    cfg.params.filecoin_dir = Some(tmp.join("fil"));
    cfg.server.socket = Some(tmp.join("cuzk.sock"));
    cfg.server.http = String::new();
    // The meminfo `host` writes, which the configuration's own checks read too.
    cfg.engine.meminfo_path = Some(tmp.join("meminfo"));
    cfg
}

fn examine(tmp: &Path, cfg: Config, host: &Host, probe: &DeviceProbe) -> Vec<Finding> {
    doctor::examine(None, &Ok(cfg), &tmp.join("cli-data"), host, probe)
}

#[test]
fn a_healthy_fake_host_has_no_fatal_finding() {
    let tmp = tempfile::tempdir().unwrap();
    let f = examine(tmp.path(), config(tmp.path()), &host(tmp.path()), &h200());
    assert!(f.iter().all(|f| f.severity != Severity::Fatal), "{f:#?}");
    let gpu = find(&f, Check::Gpu, Severity::Ok);
    assert!(gpu.message.contains("NVIDIA H200") && gpu.message.contains("139.0 GiB free"), "{gpu:?}");
    find(&f, Check::Nvrtc, Severity::Ok);
    find(&f, Check::Memlock, Severity::Ok);
    find(&f, Check::OpenFiles, Severity::Ok);
    find(&f, Check::DataDir, Severity::Ok);
    find(&f, Check::Socket, Severity::Ok);
    // The journal and the matrices go under the data directory by default: checked there, and
    // their free space reported once, for the one file system they share.
    let data = tmp.path().join("data");
    assert!(find(&f, Check::Journal, Severity::Ok).message.contains(&data.join("journal").display().to_string()), "{f:#?}");
    assert!(find(&f, Check::Matrices, Severity::Ok).message.contains(&data.join("matrices").display().to_string()), "{f:#?}");
    let disk = of(&f, Check::Disk);
    assert_eq!(disk.len(), 1, "{disk:#?}");
    assert!(disk[0].message.contains("(the data directory, the recorded matrices and the journal)"), "{disk:?}");
}

#[test]
fn the_journal_off_or_elsewhere() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = config(tmp.path());
    cfg.journal.enabled = false;
    cfg.params.matrices_dir = Some(PathBuf::new());
    let f = examine(tmp.path(), cfg.clone(), &host(tmp.path()), &h200());
    let j = find(&f, Check::Journal, Severity::Warn);
    assert!(j.message.contains("accepted jobs are lost"), "{j:?}");
    assert!(find(&f, Check::Matrices, Severity::Ok).message.contains("no recorded matrices are kept"), "{f:#?}");
    assert!(of(&f, Check::Disk)[0].message.ends_with("(the data directory)"), "{f:#?}");

    // A journal directory that is a file: cuzk serve cannot open the journal.
    let file = tmp.path().join("journal-file");
    std::fs::write(&file, b"x").unwrap();
    cfg.journal.enabled = true;
    cfg.journal.dir = Some(file.clone());
    let f = examine(tmp.path(), cfg, &host(tmp.path()), &h200());
    assert!(find(&f, Check::Journal, Severity::Fatal).message.contains("is not a directory"), "{f:#?}");
}

#[test]
fn the_largest_circuit_in_the_parameter_cache_is_held_against_the_host_budget() {
    use cuzk_circuits_filecoin::{params as fil_params, FilKind, FilShape};
    // A cache of this test's own: the 2 KiB WinningPoSt parameters and a smaller file under
    // WindowPoSt's name (not a parameter file: only its size counts in choosing the largest).
    crate::filecoin::ensure_params(FilKind::WinningPoSt);
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = config(tmp.path());
    let fil = tmp.path().join("fil");
    let name = |kind| fil_params::files(Path::new(""), FilShape::new(kind, 2048).unwrap()).unwrap().params;
    std::fs::copy(crate::filecoin::cache().join(name(FilKind::WinningPoSt)), fil.join(name(FilKind::WinningPoSt))).unwrap();
    std::fs::write(fil.join(name(FilKind::WindowPoSt)), [0u8; 100]).unwrap();
    assert_eq!(doctor::largest_in_cache(&fil).as_deref(), Some("winning-2k"));

    // Nothing is preloaded, and the engine's part of a 64 KiB host budget cannot load it.
    cfg.engine.host_memory_bytes = 64 << 10;
    let f = examine(tmp.path(), cfg.clone(), &host(tmp.path()), &h200());
    let m = find(&f, Check::HostMemory, Severity::Fatal);
    assert!(m.message.contains("winning-2k (the largest circuit in the parameter cache) can never be loaded"), "{m:?}");
    assert!(m.fix.contains("its jobs fail until then") && !m.fix.contains("params.preload"), "{m:?}");
    // With 64 GiB it fits.
    cfg.engine.host_memory_bytes = 64 * GIB;
    let f = examine(tmp.path(), cfg, &host(tmp.path()), &h200());
    assert!(
        of(&f, Check::HostMemory)
            .iter()
            .any(|m| m.severity == Severity::Ok && m.message.starts_with("winning-2k (the largest circuit in the parameter cache): parameters")),
        "{f:#?}"
    );
    assert!(f.iter().all(|f| f.severity != Severity::Fatal), "{f:#?}");
}

#[test]
fn missing_preloaded_parameters_are_fatal() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = config(tmp.path());
    // An empty Filecoin cache and an empty data directory, with one circuit of each preloaded.
    cfg.params.preload = vec!["wpost-2k".into(), "squaring-chain-2^4".into()];
    let f = examine(tmp.path(), cfg.clone(), &host(tmp.path()), &h200());
    let missing: Vec<Finding> = of(&f, Check::Params).into_iter().filter(|f| f.severity == Severity::Fatal).collect();
    assert_eq!(missing.len(), 2, "{f:#?}");
    assert!(missing[0].message.contains("wpost-2k is preloaded") && missing[0].message.contains("missing"), "{:?}", missing[0]);
    assert!(missing[0].fix.contains(&tmp.path().join("fil").display().to_string()), "the fix names the cache: {:?}", missing[0]);
    assert!(missing[1].fix.contains("cuzk setup --circuit squaring-chain --log-size 4"), "{:?}", missing[1]);
    let cache = find(&f, Check::ParamsCache, Severity::Warn);
    assert!(cache.message.contains("holds no .params file"), "{cache:?}");

    // A built-in circuit that the daemon generates at its first job is only a warning.
    cfg.params.preload = vec!["squaring-chain-2^4".into()];
    cfg.params.generate_missing = true;
    let f = examine(tmp.path(), cfg.clone(), &host(tmp.path()), &h200());
    let w = find(&f, Check::Params, Severity::Warn);
    assert!(w.message.contains("generated at its first job"), "{w:?}");
    // A Filecoin circuit's file is never generated (random parameters no chain accepts): still fatal.
    cfg.params.preload = vec!["wpost-2k".into()];
    let f = examine(tmp.path(), cfg, &host(tmp.path()), &h200());
    let m = find(&f, Check::Params, Severity::Fatal);
    assert!(m.message.contains("the preload fails and its jobs are refused"), "{m:?}");
}

#[test]
fn present_parameters_are_listed_with_their_validation_records() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = config(tmp.path());
    let data = cfg.params.data_dir.clone().unwrap();
    // The built-in circuit's file, copied into this test's data directory.
    std::fs::create_dir_all(data.join("params")).unwrap();
    let file = data.join("params/squaring-chain-2^4.params");
    std::fs::copy(common::ensure(4), &file).unwrap();
    cfg.params.preload = vec!["squaring-chain-2^4".into()];
    let f = doctor::params(&cfg, &data);
    find(&f, Check::Params, Severity::Ok);
    assert!(find(&f, Check::Validation, Severity::Ok).message.contains("not validated yet"), "{f:#?}");
    let listed =
        of(&f, Check::ParamsCache).into_iter().find(|f| f.message.contains("built-in circuit parameter file")).expect("the data directory's files listed");
    assert!(listed.message.contains("squaring-chain-2^4 ") && listed.message.contains("(not validated yet)"), "{listed:?}");

    // A full validation by the worker writes the record the daemon's loads read.
    let (_, checked) = cuzk_worker::read_params_with_records(&file, Validation::Full, Some(&data.join("validated"))).unwrap();
    assert_eq!(checked, cuzk_worker::Checked::Full);
    let f = doctor::params(&cfg, &data);
    assert!(find(&f, Check::Validation, Severity::Ok).message.contains("validated in full before"), "{f:#?}");
    assert!(of(&f, Check::ParamsCache).iter().any(|f| f.message.contains("squaring-chain-2^4 ") && f.message.contains("(validated)")), "{f:#?}");

    // The file grew since (trailing bytes): no longer a parameter file, and its record is stale.
    let mut bytes = std::fs::read(&file).unwrap();
    bytes.extend_from_slice(&[0; 96]);
    std::fs::write(&file, bytes).unwrap();
    let f = doctor::params(&cfg, &data);
    assert!(find(&f, Check::Params, Severity::Fatal).message.contains("not a readable parameter file"), "{f:#?}");
    assert!(of(&f, Check::ParamsCache).iter().any(|f| f.message.contains("squaring-chain-2^4 ") && f.message.contains("(changed since validated)")), "{f:#?}");
    assert_eq!(doctor::record(&data.join("validated"), &file, false), doctor::Record::Stale);

    cfg.params.trusted = true;
    std::fs::copy(common::ensure(4), &file).unwrap();
    let f = doctor::params(&cfg, &data);
    assert!(find(&f, Check::Validation, Severity::Ok).message.contains("params.trusted"), "{f:#?}");
}

#[test]
fn a_preloaded_circuit_larger_than_the_host_budget_is_fatal() {
    let tmp = tempfile::tempdir().unwrap();
    common::ensure(10);
    let mut cfg = config(tmp.path());
    cfg.params.data_dir = Some(common::params_dir());
    cfg.params.preload = vec!["squaring-chain-2^10".into()];
    // A host budget of 64 KiB: the engine's half (32 KiB) cannot hold the largest query.
    cfg.engine.host_memory_bytes = 64 << 10;
    let f = examine(tmp.path(), cfg, &host(tmp.path()), &h200());
    let m = find(&f, Check::HostMemory, Severity::Fatal);
    assert!(m.message.contains("squaring-chain-2^10 can never be loaded"), "{m:?}");
}

#[test]
fn low_memlock_below_the_pinned_pool_is_caught() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = host(tmp.path());
    h.memlock = Some(Rlimit { soft: Some(8 << 20), hard: Some(8 << 20) });
    let f = examine(tmp.path(), config(tmp.path()), &h, &h200());
    let m = find(&f, Check::Memlock, Severity::Warn);
    assert!(m.message.contains("8.0 MiB") && m.message.contains("pinned pool"), "{m:?}");
    assert!(m.fix.contains("LimitMEMLOCK=infinity"), "{m:?}");
    // The same limit with no CUDA device: nothing is pinned.
    assert_eq!(doctor::memlock(h.memlock, None).severity, Severity::Ok);
    // A limit above the pool.
    assert_eq!(doctor::memlock(Some(Rlimit { soft: Some(512 * GIB), hard: None }), Some(200 * GIB)).severity, Severity::Ok);
    // Unreadable.
    assert_eq!(doctor::memlock(None, Some(GIB)).severity, Severity::Warn);
}

#[test]
fn a_low_open_file_limit_is_caught() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = host(tmp.path());
    h.nofile = Some(Rlimit { soft: Some(256), hard: Some(256) });
    let f = examine(tmp.path(), config(tmp.path()), &h, &h200());
    let m = find(&f, Check::OpenFiles, Severity::Warn);
    assert!(m.message.contains("256") && m.fix.contains("LimitNOFILE"), "{m:?}");
}

#[test]
fn host_memory_against_the_budget() {
    let tmp = tempfile::tempdir().unwrap();
    let meminfo = tmp.path().join("meminfo");
    std::fs::write(&meminfo, format!("MemTotal: {} kB\nMemAvailable: {} kB\n", 8 * GIB / 1024, 4 * GIB / 1024)).unwrap();
    let mut cfg = Config::default();
    cfg.engine.meminfo_path = Some(meminfo.clone());
    let b = |cfg: &Config| doctor::budgets(cfg, &meminfo);
    cfg.engine.host_memory_bytes = 6 * GIB;
    let f = doctor::host_memory(&cfg, &meminfo, &b(&cfg));
    assert!(find(&f, Check::HostMemory, Severity::Warn).message.contains("more than the 4.0 GiB available"), "{f:#?}");
    cfg.engine.host_memory_bytes = 16 * GIB;
    let f = doctor::host_memory(&cfg, &meminfo, &b(&cfg));
    assert!(find(&f, Check::HostMemory, Severity::Fatal).message.contains("more than this machine's 8.0 GiB"), "{f:#?}");
    // No /proc/meminfo: a finding, not a crash.
    cfg.engine.host_memory_bytes = 0;
    let absent = tmp.path().join("absent");
    let f = doctor::host_memory(&cfg, &absent, &doctor::budgets(&cfg, &absent));
    assert!(find(&f, Check::HostMemory, Severity::Warn).message.contains("cannot be read"), "{f:#?}");
}

#[test]
fn a_world_writable_or_foreign_data_directory_is_caught() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(tmp.path());
    let data = cfg.params.data_dir.clone().unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o777)).unwrap();
    let f = examine(tmp.path(), cfg.clone(), &host(tmp.path()), &h200());
    // `cuzk serve` refuses a data directory others may write: fatal, with the chmod to run.
    let m = find(&f, Check::DataDir, Severity::Fatal);
    assert!(m.message.contains("writable by other users (mode 777)"), "{m:?}");
    assert_eq!(m.fix, format!("chmod go-w {}", data.display()));

    // Owned by another user than the one the daemon would run as (a fake uid).
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o700)).unwrap();
    let mut h = host(tmp.path());
    h.uid = uid() + 1;
    let f = examine(tmp.path(), cfg, &h, &h200());
    let m = find(&f, Check::DataDir, Severity::Warn);
    assert!(m.message.contains(&format!("belongs to uid {}", uid())) && m.message.contains(&format!("(uid {})", uid() + 1)), "{m:?}");
    assert!(m.fix.contains("chown"), "{m:?}");

    // A file where the directory should be.
    let file = tmp.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    let f = doctor::directory(Check::DataDir, "the data directory", &file, uid(), true);
    assert!(find(&f, Check::DataDir, Severity::Fatal).message.contains("is not a directory"));
}

#[test]
fn no_nvrtc_is_fatal_with_a_gpu() {
    // Opening the device fails as CudaBackend::new fails without NVRTC.
    let tmp = tempfile::tempdir().unwrap();
    let mut probe = h200();
    probe.nvrtc = Err("NVRTC not found (tried libnvrtc.so, libnvrtc.so.13); set CUZK_NVRTC_LIB to its path".into());
    probe.opened = Opened::Failed(DeviceError::Open { ordinal: 0, source: CudaError::Nvrtc(NvrtcError::NotFound("libnvrtc.so, libnvrtc.so.13".into())) });
    let f = examine(tmp.path(), config(tmp.path()), &host(tmp.path()), &probe);
    let m = find(&f, Check::Nvrtc, Severity::Fatal);
    assert!(m.message.contains("NVRTC is not installed") && m.message.contains("CUDA device 0"), "{m:?}");
    assert!(m.fix.contains("CUZK_NVRTC_LIB"), "{m:?}");
    assert_eq!(of(&f, Check::Nvrtc).len(), 1, "one NVRTC finding: {f:#?}");

    // NVRTC too old for the GPU.
    let e = DeviceError::Open {
        ordinal: 1,
        source: CudaError::Nvrtc(NvrtcError::Compile { arch: "sm_90".into(), log: "error: invalid value for --gpu-architecture".into() }),
    };
    let m = doctor::open_error(&e);
    assert_eq!((m.check, m.severity), (Check::Nvrtc, Severity::Fatal));
    assert!(m.message.contains("sm_90") && m.message.contains("invalid value"), "{m:?}");

    // The driver refusing the device is a GPU finding.
    let m = doctor::open_error(&DeviceError::Open { ordinal: 0, source: CudaError::Unavailable("device 0 requested, 0 present".into()) });
    assert_eq!((m.check, m.severity), (Check::Gpu, Severity::Fatal));

    // A GPU present, NVRTC missing, and no open error to say so (the probe alone): still fatal.
    let mut probe = h200();
    probe.opened = Opened::Devices(vec![]);
    probe.nvrtc = Err("NVRTC not found".into());
    let f = doctor::device_findings("auto", &probe);
    find(&f, Check::Nvrtc, Severity::Fatal);
}

#[test]
fn no_gpu_is_a_warning_with_auto_and_fatal_with_cuda() {
    let probe = |opened| DeviceProbe { driver: false, driver_version: None, cuda_devices: 0, nvrtc: Ok("11.8 (libnvrtc.so)".into()), opened };
    let cpu = || Opened::Devices(vec![DeviceInfo { ordinal: 0, name: "cpu (2 threads)".into(), free_bytes: None, kernels: None }]);
    let f = doctor::device_findings("auto", &probe(cpu()));
    let m = find(&f, Check::Gpu, Severity::Warn);
    assert!(m.message.contains("no CUDA GPU") && m.message.contains("CPU backend"), "{m:?}");
    find(&f, Check::CudaDriver, Severity::Warn);
    assert!(f.iter().all(|f| f.severity != Severity::Fatal), "{f:#?}");

    let f = doctor::device_findings("cuda", &probe(Opened::Failed(DeviceError::NoCuda("libcuda not found".into()))));
    find(&f, Check::Gpu, Severity::Fatal);
    find(&f, Check::CudaDriver, Severity::Fatal);
}

#[test]
fn socket_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.sock");
    find(&doctor::socket(Some(&path), uid(), None), Check::Socket, Severity::Ok);
    // A stale socket (nobody listens): replaced at start.
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    assert!(find(&doctor::socket(Some(&path), uid(), None), Check::Socket, Severity::Ok).message.contains("stale"));
    std::fs::remove_file(&path).unwrap();
    // A daemon (here: a listener) answering on it.
    let l = std::os::unix::net::UnixListener::bind(&path).unwrap();
    assert!(find(&doctor::socket(Some(&path), uid(), None), Check::Socket, Severity::Warn).message.contains("already listens"));
    drop(l);
    std::fs::remove_file(&path).unwrap();
    // A regular file: cuzk serve refuses to replace it.
    std::fs::write(&path, b"x").unwrap();
    assert!(find(&doctor::socket(Some(&path), uid(), None), Check::Socket, Severity::Fatal).message.contains("not a socket"));
    // A path too long for a socket address.
    let long = tmp.path().join("d".repeat(120)).join("s.sock");
    assert!(find(&doctor::socket(Some(&long), uid(), None), Check::Socket, Severity::Fatal).message.contains("longer than a unix socket address"));
    // A group for Curio's user: one that exists (root's, gid 0), and one that does not.
    let free = tmp.path().join("g.sock");
    assert!(find(&doctor::socket(Some(&free), uid(), Some("root")), Check::Socket, Severity::Ok).message.contains("mode 0660 in group root (gid 0)"));
    let f = find(&doctor::socket(Some(&free), uid(), Some("no-such-group-cuzk")), Check::Socket, Severity::Fatal);
    assert!(f.message.contains("names no group") && f.fix.contains("groupadd"), "{f:?}");
}

#[test]
fn taken_ports() {
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = held.local_addr().unwrap().to_string();
    let f = doctor::ports(&[("server.http", taken.clone())]);
    assert!(find(&f, Check::Ports, Severity::Warn).message.contains("already taken"), "{f:#?}");
    drop(held);
    find(&doctor::ports(&[("server.http", taken)]), Check::Ports, Severity::Ok);
    find(&doctor::ports(&[("server.http", "localhost".into())]), Check::Ports, Severity::Fatal);
}

#[test]
fn disk_space() {
    let p = PathBuf::from("/data");
    assert_eq!(doctor::disk("the data directory", &p, Ok(100 << 20)).severity, Severity::Fatal);
    assert_eq!(doctor::disk("the data directory", &p, Ok(GIB)).severity, Severity::Warn);
    assert_eq!(doctor::disk("the data directory", &p, Ok(100 * GIB)).severity, Severity::Ok);
    assert_eq!(doctor::disk("the data directory", &p, Err(std::io::Error::other("no"))).severity, Severity::Warn);
    assert!(doctor::free_space(Path::new("/tmp/certainly/not/there")).is_ok_and(|b| b > 0), "the nearest existing ancestor's file system");
}

#[test]
fn a_config_cuzk_serve_refuses_is_fatal() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("bad.toml");
    std::fs::write(&file, "[engine]\nbackend = \"tpu\"\n").unwrap();
    let loaded = Config::load(&file).map_err(|e| e.to_string());
    let f = doctor::config_findings(Some(&file), &loaded);
    assert!(find(&f, Check::Config, Severity::Fatal).message.contains("tpu"), "{f:#?}");
    std::fs::write(&file, "[engine]\nno_such_key = 1\n").unwrap();
    let loaded = Config::load(&file).map_err(|e| e.to_string());
    assert!(find(&doctor::config_findings(Some(&file), &loaded), Check::Config, Severity::Fatal).message.contains("no_such_key"));
}

/// The real binary on this host. Without a GPU: exit 0, a warning that there is none and that
/// the CPU backend proves. With one (the H200 host): its devices are ok findings.
#[test]
fn the_binary_on_this_host() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("cuzk.toml");
    std::fs::create_dir_all(tmp.path().join("fil")).unwrap();
    std::fs::write(&cfg, format!("[server]\nsocket = {:?}\nhttp = \"\"\n\n[params]\nfilecoin_dir = {:?}\n", tmp.path().join("d.sock"), tmp.path().join("fil")))
        .unwrap();
    let run = |json: bool| {
        let mut c = Command::new(BIN);
        c.arg("--data-dir").arg(tmp.path().join("data")).arg("doctor").arg("--config").arg(&cfg).stdin(Stdio::null());
        if json {
            c.arg("--json");
        }
        c.output().expect("cuzk doctor runs")
    };
    let text = run(false);
    let stdout = String::from_utf8_lossy(&text.stdout);
    eprintln!("{stdout}{}", String::from_utf8_lossy(&text.stderr));
    let out = run(true);
    let findings: Vec<Finding> =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("--json does not parse: {e}\n{}", String::from_utf8_lossy(&out.stdout)));
    let raw: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let first = &raw.as_array().expect("an array")[0];
    for key in ["check", "severity", "message", "fix"] {
        assert!(first.get(key).is_some(), "{key} missing from {first}");
    }
    if cuzk_backend_cuda::device::device_count() == 0 {
        assert_eq!(text.status.code(), Some(0), "no fatal finding on this host:\n{stdout}");
        assert_eq!(out.status.code(), Some(0));
        let gpu = find(&findings, Check::Gpu, Severity::Warn);
        assert!(gpu.message.contains("no CUDA GPU") && gpu.message.contains("CPU backend"), "{gpu:?}");
        assert!(stdout.contains("WARN") && stdout.contains("no CUDA GPU"), "{stdout}");
    } else {
        eprintln!("this host has a CUDA GPU: its devices must be ok findings");
        assert!(of(&findings, Check::Gpu).iter().all(|f| f.severity == Severity::Ok), "{findings:#?}");
        find(&findings, Check::Nvrtc, Severity::Ok);
        assert_eq!(text.status.code(), Some(0), "{stdout}");
    }
    // An empty Filecoin cache is a warning, not fatal; nothing fatal here either way.
    assert!(findings.iter().all(|f| f.severity != Severity::Fatal), "{findings:#?}");

    // A fatal finding: exit status 2.
    std::fs::write(
        &cfg,
        format!(
            "[server]\nsocket = {:?}\nhttp = \"\"\n\n[params]\npreload = [\"wpost-2k\"]\nfilecoin_dir = {:?}\n",
            tmp.path().join("d.sock"),
            tmp.path().join("fil")
        ),
    )
    .unwrap();
    let out = run(true);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stdout));
    let findings: Vec<Finding> = serde_json::from_slice(&out.stdout).unwrap();
    find(&findings, Check::Params, Severity::Fatal);
}
