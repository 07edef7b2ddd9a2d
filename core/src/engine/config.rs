//! Engine configuration and per-circuit memory profiles.

use crate::prover::Stage;

use super::error::EngineError;

/// One GPU (or the CPU standing in for one, as a fallback device).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceConfig {
    /// Device memory the engine may reserve (parameters plus partitions), in bytes.
    pub memory_bytes: u64,
    /// Partitions that may be on the device at once (upload through MSM); one stream each.
    pub gpu_workers: u32,
    /// Partitions that may run kernels (NTT then MSM) at once; 1 serialises compute so that
    /// extra workers overlap their uploads with another partition's kernels.
    pub kernel_lanes: u32,
    /// A fallback device takes only work no other device may take: the partitions of a job
    /// avoiding ([`super::JobSpec::avoiding`]) the one other device in service (a retry
    /// after a fault there), and all work once no other device is in service. Parameters are
    /// loaded onto it only for such work.
    pub fallback: bool,
}

impl DeviceConfig {
    /// A device with `memory_bytes`, two workers and one kernel lane.
    pub fn new(memory_bytes: u64) -> DeviceConfig {
        DeviceConfig { memory_bytes, gpu_workers: 2, kernel_lanes: 1, fallback: false }
    }
}

/// Everything the engine schedules with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineConfig {
    /// Partitions synthesized at once (CPU).
    pub synth_workers: u32,
    /// Partitions finalized at once (CPU).
    pub finalize_workers: u32,
    /// Host memory budget (pinned pool plus warm parameters), in bytes.
    pub host_memory_bytes: u64,
    /// The GPUs.
    pub devices: Vec<DeviceConfig>,
    /// Non-CRITICAL partitions that may be synthesizing or waiting for a GPU at once; bounds
    /// how far synthesis runs ahead of the GPUs.
    pub synth_lookahead: u32,
    /// Host bytes only CRITICAL partitions may use.
    pub critical_host_reserve: u64,
    /// Bytes on every device only CRITICAL partitions and parameters may use.
    pub critical_device_reserve: u64,
    /// After which stage the host copy of `a, b, c` is released: [`Stage::Upload`] for GPU
    /// backends (it has been copied), [`Stage::Ntt`] when the NTT reads host memory.
    pub release_host_abc_after: Stage,
    /// Spans, gaps and job records the timeline keeps (oldest dropped first).
    pub timeline_capacity: usize,
}

impl EngineConfig {
    /// A configuration with `synth_workers` synthesis workers, `host_memory_bytes` of host
    /// memory and the given devices; other fields get defaults.
    pub fn new(synth_workers: u32, host_memory_bytes: u64, devices: Vec<DeviceConfig>) -> Self {
        let gpu: u32 = devices.iter().map(|d| d.gpu_workers).sum();
        EngineConfig {
            synth_workers,
            finalize_workers: synth_workers.max(1),
            host_memory_bytes,
            synth_lookahead: gpu.saturating_add(synth_workers),
            devices,
            critical_host_reserve: 0,
            critical_device_reserve: 0,
            release_host_abc_after: Stage::Upload,
            timeline_capacity: 1 << 20,
        }
    }

    /// Checks that the engine can make progress with this configuration.
    pub fn validate(&self) -> Result<(), EngineError> {
        if self.synth_workers == 0 {
            return Err(EngineError::InvalidConfig("synth_workers must be at least 1"));
        }
        if self.finalize_workers == 0 {
            return Err(EngineError::InvalidConfig("finalize_workers must be at least 1"));
        }
        if self.devices.is_empty() {
            return Err(EngineError::InvalidConfig("at least one device is needed"));
        }
        if self.devices.len() > u32::MAX as usize {
            return Err(EngineError::InvalidConfig("too many devices"));
        }
        if self.devices.iter().any(|d| d.gpu_workers == 0 || d.kernel_lanes == 0) {
            return Err(EngineError::InvalidConfig("every device needs a worker and a lane"));
        }
        if self.synth_lookahead == 0 {
            return Err(EngineError::InvalidConfig("synth_lookahead must be at least 1"));
        }
        if !matches!(self.release_host_abc_after, Stage::Upload | Stage::Ntt) {
            return Err(EngineError::InvalidConfig("release_host_abc_after must be Upload or Ntt"));
        }
        if self.critical_host_reserve > self.host_memory_bytes {
            return Err(EngineError::InvalidConfig("critical_host_reserve exceeds host memory"));
        }
        if self.devices.iter().all(|d| d.fallback) {
            return Err(EngineError::InvalidConfig("at least one device must not be a fallback"));
        }
        if self.devices.iter().any(|d| self.critical_device_reserve > d.memory_bytes) {
            return Err(EngineError::InvalidConfig("critical_device_reserve exceeds a device"));
        }
        Ok(())
    }
}

/// Memory one partition holds while it moves through the stages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Footprint {
    /// Host `a, b, c` (reserved at synthesis, released after upload or NTT).
    pub host_abc: u64,
    /// Other host buffers (reserved at synthesis, released after finalize).
    pub host_rest: u64,
    /// Device `a, b, c` (reserved at upload, released after the NTT).
    pub device_abc: u64,
    /// Other device buffers (reserved at upload, released after the MSM).
    pub device_rest: u64,
}

impl Footprint {
    /// Host bytes reserved at synthesis.
    pub fn host(&self) -> u64 {
        self.host_abc.saturating_add(self.host_rest)
    }

    /// Device bytes reserved at upload.
    pub fn device(&self) -> u64 {
        self.device_abc.saturating_add(self.device_rest)
    }

    /// The footprint of a partition over a domain of `2^log_n` (32-byte scalars): `a, b, c`
    /// are `3·n·32` bytes on each side; `aux_bytes` models everything else.
    pub fn for_domain(log_n: u32, aux_bytes: u64) -> Footprint {
        let abc = 3u64.saturating_mul(32).saturating_mul(1u64 << log_n.min(40));
        Footprint { host_abc: abc, host_rest: aux_bytes, device_abc: abc, device_rest: aux_bytes }
    }
}

/// What the engine must know about a circuit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CircuitProfile {
    /// Host bytes of a warm copy of the parameters (0 when they are memory-mapped).
    pub params_host_bytes: u64,
    /// Device bytes of a hot copy of the parameters.
    pub params_device_bytes: u64,
    /// Host bytes a device copy holds besides `params_device_bytes`: streamed parameters'
    /// bases in page-locked host memory (0 for resident copies). The engine reserves them on
    /// the host with each device copy and frees them with it; while partitions of the circuit
    /// are under way (synthesis started, MSM not finished) an evicted copy's host bytes stay
    /// reserved for its next load, so those partitions never wait on host memory they hold.
    /// A partition of such a circuit starts synthesis only once a device copy it may use is
    /// there or loading (or these bytes are still reserved), and a job is refused
    /// ([`super::EngineError::TooLarge`]) when these bytes and one partition's host footprint
    /// exceed the host budget.
    pub params_device_host_bytes: u64,
    /// Memory of one partition on the host path: synthesis hands on `a, b, c` (or the upload
    /// evaluates them on the host), so the host reserves them.
    pub footprint: Footprint,
    /// For a circuit whose synthesis hands on only the witness (`a, b, c` evaluated on the
    /// device from its resident constraint matrices): the memory of such a partition, whose
    /// host side is the witness alone. The engine reserves it at synthesis when some device in
    /// service that may take the job holds the circuit's copy with its matrices reserved
    /// ([`super::Action::MatricesReserved`]), and then uploads the partition only to such a
    /// device; otherwise it reserves [`CircuitProfile::footprint`] (the upload evaluates
    /// `a, b, c` on the host). Its device side must equal `footprint`'s and its host side
    /// must not exceed it ([`super::Engine::register_circuit`] refuses the profile otherwise).
    pub witness_footprint: Option<Footprint>,
    /// Host bytes a device load holds in flight besides the copy it makes: the one decoded
    /// query it moves at a time (the largest query of the parameters; 12.9 GB for a 32 GiB
    /// PoRep). The engine sets aside the largest of these among the registered circuits in
    /// the host budget for loads alone, and starts a device load only when its bytes fit
    /// there beside the loads already in flight (a load waits only for other loads).
    pub load_host_bytes: u64,
}

impl CircuitProfile {
    /// The witness footprint is usable: device side equal to the host path's, host side no
    /// larger.
    pub(crate) fn witness_ok(&self) -> bool {
        self.witness_footprint.is_none_or(|w| {
            let f = self.footprint;
            w.device_abc == f.device_abc && w.device_rest == f.device_rest && w.host() <= f.host()
        })
    }
}
