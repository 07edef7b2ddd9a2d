//! Which backends `cuzk serve` and `cuzk prove` open: the backend choice (`engine.backend`)
//! over the device selection (`engine.devices`), one backend per selected device.

use cuzk_backend_cpu::CpuBackend;
use cuzk_backend_cuda::CudaBackend;
use cuzk_backend_wgpu::WgpuBackend;

use crate::any_backend::AnyBackend;
use crate::config::DeviceSelection;

/// Why the selected devices could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    /// `backend = "cuda"` on a host without a usable CUDA device.
    #[error("engine.backend = \"cuda\" but no CUDA device is usable ({0})")]
    NoCuda(String),
    /// A listed ordinal is not on this host.
    #[error("CUDA device {ordinal} is selected (engine.devices, --devices) but does not exist: this host has {}", present(*.count))]
    NoSuchDevice {
        /// The ordinal asked for.
        ordinal: u32,
        /// CUDA devices present.
        count: usize,
    },
    /// A present device could not be opened.
    #[error("opening CUDA device {ordinal}: {source}")]
    Open {
        /// Its ordinal.
        ordinal: u32,
        /// The error.
        #[source]
        source: cuzk_backend_cuda::CudaError,
    },
    /// `backend = "wgpu"` without a usable adapter.
    #[error("engine.backend = \"wgpu\" but no wgpu adapter is usable: {0}")]
    NoWgpu(String),
    /// An unknown backend name.
    #[error("backend {0:?} is not one of auto, cpu, cuda, wgpu")]
    UnknownBackend(String),
}

fn present(count: usize) -> String {
    match count {
        0 => "none".into(),
        1 => "one, ordinal 0".into(),
        n => format!("{n}, ordinals 0 to {}", n - 1),
    }
}

/// What [`open`] opened: the backends, all of one kind (CUDA devices, one wgpu adapter, or
/// CPU backends: one, or one per listed entry for tests of several devices), and per backend
/// the ordinal it drives.
pub struct Devices {
    /// The backends, engine device `i` first.
    pub backends: Vec<AnyBackend>,
    /// The ordinal of engine device `i` (a CUDA ordinal; for the CPU, the entry's number).
    pub ordinals: Vec<u32>,
}

/// Opens one backend per selected device. `backend` is `auto`, `cpu`, `cuda` or `wgpu`.
///
/// `auto` with `"all"` opens every CUDA device, or the CPU backend when there is none (with
/// a log line saying so); an ordinal that is not on the host is an error whatever the
/// backend. An ordinal listed twice opens two backends on one GPU (each with its own
/// streams and pinned pool), which is how several devices are tested on a one-GPU host.
pub fn open(backend: &str, selection: &DeviceSelection) -> Result<Devices, DeviceError> {
    match backend {
        "cpu" => Ok(cpu(selection)),
        "wgpu" => {
            let gpu = WgpuBackend::from_env().map_err(|e| DeviceError::NoWgpu(e.to_string()))?;
            Ok(Devices { backends: vec![AnyBackend::Wgpu(gpu)], ordinals: vec![0] })
        }
        "cuda" | "auto" => {
            let count = cuzk_backend_cuda::device::device_count();
            let ordinals: Vec<u32> = match selection {
                DeviceSelection::All => (0..count as u32).collect(),
                DeviceSelection::List(l) => {
                    if let Some(&ordinal) = l.iter().find(|&&d| d as usize >= count) {
                        return Err(DeviceError::NoSuchDevice { ordinal, count });
                    }
                    l.clone()
                }
            };
            if ordinals.is_empty() {
                let why = if cuzk_backend_cuda::device::driver_present() { "the CUDA driver reports no device" } else { "libcuda not found" };
                if backend == "cuda" {
                    return Err(DeviceError::NoCuda(why.into()));
                }
                tracing::info!("no CUDA device ({why}): engine.devices = \"all\" falls back to the CPU backend");
                return Ok(cpu(&DeviceSelection::All));
            }
            let mut backends = Vec::with_capacity(ordinals.len());
            for (i, &ordinal) in ordinals.iter().enumerate() {
                if ordinals[..i].contains(&ordinal) {
                    tracing::warn!(ordinal, "CUDA device {ordinal} is listed more than once: its backends share the GPU and split its memory (a test setup)");
                }
                backends.push(AnyBackend::Cuda(CudaBackend::new(ordinal as usize).map_err(|source| DeviceError::Open { ordinal, source })?));
            }
            Ok(Devices { backends, ordinals })
        }
        other => Err(DeviceError::UnknownBackend(other.into())),
    }
}

fn cpu(selection: &DeviceSelection) -> Devices {
    let n = match selection {
        DeviceSelection::All => 1,
        DeviceSelection::List(l) => l.len().max(1),
    };
    Devices { backends: (0..n).map(|_| AnyBackend::Cpu(CpuBackend::new())).collect(), ordinals: (0..n as u32).collect() }
}

/// How many backends drive the same memory as each backend: those listing the same ordinal
/// (CUDA), or every backend reporting no memory of its own (the CPU backends share the host).
pub fn sharing(ordinals: &[u32], reports_memory: &[bool]) -> Vec<u32> {
    let shared_host = reports_memory.iter().filter(|r| !**r).count() as u32;
    ordinals
        .iter()
        .zip(reports_memory)
        .map(|(o, r)| if *r { ordinals.iter().zip(reports_memory).filter(|(p, q)| *p == o && **q).count() as u32 } else { shared_host })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_cpu(d: &Devices, n: usize) -> bool {
        d.backends.len() == n && d.backends.iter().all(|b| matches!(b, AnyBackend::Cpu(_)))
    }

    #[test]
    fn cpu_backends_one_per_listed_entry() {
        let d = open("cpu", &DeviceSelection::List(vec![0, 1, 2])).unwrap();
        assert!(all_cpu(&d, 3));
        assert_eq!(d.ordinals, vec![0, 1, 2]);
        assert!(all_cpu(&open("cpu", &DeviceSelection::All).unwrap(), 1));
    }

    #[test]
    fn an_absent_cuda_ordinal_is_an_error_naming_it() {
        let count = cuzk_backend_cuda::device::device_count();
        let asked = count as u32 + 3;
        let e = open("auto", &DeviceSelection::List(vec![asked])).err().expect("an absent device opened");
        assert!(matches!(e, DeviceError::NoSuchDevice { ordinal, .. } if ordinal == asked), "{e}");
        assert!(e.to_string().contains(&format!("CUDA device {asked}")), "{e}");
    }

    #[test]
    fn all_without_a_gpu_falls_back_to_the_cpu() {
        if cuzk_backend_cuda::device::device_count() > 0 {
            eprintln!("SKIPPED: this host has a CUDA device, so \"all\" opens it");
            return;
        }
        assert!(all_cpu(&open("auto", &DeviceSelection::All).unwrap(), 1));
        let e = open("cuda", &DeviceSelection::All).err().expect("cuda without a device");
        assert!(matches!(e, DeviceError::NoCuda(_)), "{e}");
    }

    #[test]
    fn backends_on_one_memory_share_it() {
        assert_eq!(sharing(&[0, 1], &[true, true]), vec![1, 1]);
        assert_eq!(sharing(&[0, 0, 1], &[true, true, true]), vec![2, 2, 1]);
        assert_eq!(sharing(&[0, 1, 2], &[false, false, false]), vec![3, 3, 3]);
    }
}
