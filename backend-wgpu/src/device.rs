//! Adapter selection, the device and its limits, buffers, and recording of dispatches.

use std::num::NonZeroU64;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use wgpu::util::DeviceExt;

use crate::error::WgpuError;

/// Which adapter to open: a case-insensitive substring of its name and/or a device type.
///
/// [`AdapterSelector::from_env`] reads `CUZK_WGPU_ADAPTER` (name substring) and
/// `CUZK_WGPU_DEVICE_TYPE` (`discrete`, `integrated`, `virtual`, `cpu`).
#[derive(Debug, Clone, Default)]
pub struct AdapterSelector {
    /// Substring of the adapter name (case-insensitive).
    pub name: Option<String>,
    /// Required device type.
    pub device_type: Option<wgpu::DeviceType>,
    /// Lowers the storage binding limit to this many bytes (at least 64 KiB): exercises the
    /// splitting of large inputs on any adapter (tests).
    pub max_binding: Option<u64>,
    /// Directory of the on-disk pipeline cache (Vulkan adapters that offer one): compiled
    /// pipelines are kept there so that later processes skip the driver's compile. `None`: no
    /// cache. [`AdapterSelector::from_env`] takes `CUZK_WGPU_CACHE` (`off` disables it), else
    /// `$XDG_CACHE_HOME/cuzk/wgpu`, else `~/.cache/cuzk/wgpu`.
    pub pipeline_cache_dir: Option<PathBuf>,
}

impl AdapterSelector {
    /// The selection from the environment (empty: the best adapter present).
    pub fn from_env() -> Result<Self, WgpuError> {
        let name = std::env::var("CUZK_WGPU_ADAPTER").ok().filter(|s| !s.is_empty());
        let device_type = match std::env::var("CUZK_WGPU_DEVICE_TYPE").ok().as_deref() {
            None | Some("") => None,
            Some(t) => Some(parse_device_type(t)?),
        };
        Ok(AdapterSelector { name, device_type, max_binding: None, pipeline_cache_dir: pipeline_cache_dir_from_env() })
    }

    fn matches(&self, info: &wgpu::AdapterInfo) -> bool {
        let name_ok = self.name.as_ref().as_ref().is_none_or(|n| info.name.to_lowercase().contains(&n.to_lowercase()));
        let type_ok = self.device_type.is_none_or(|t| t == info.device_type);
        name_ok && type_ok
    }
}

/// `CUZK_WGPU_CACHE` (`off` or empty: none), else `$XDG_CACHE_HOME/cuzk/wgpu`, else
/// `~/.cache/cuzk/wgpu`.
fn pipeline_cache_dir_from_env() -> Option<PathBuf> {
    match std::env::var_os("CUZK_WGPU_CACHE") {
        Some(v) if v.is_empty() || v == "off" => None,
        Some(v) => Some(PathBuf::from(v)),
        None => cuzk_core::backend::user_cache_dir().map(|d| d.join("wgpu")),
    }
}

/// Parses `discrete`, `integrated`, `virtual`, `cpu` or `other`.
pub fn parse_device_type(s: &str) -> Result<wgpu::DeviceType, WgpuError> {
    Ok(match s.to_ascii_lowercase().as_str() {
        "discrete" | "discretegpu" => wgpu::DeviceType::DiscreteGpu,
        "integrated" | "integratedgpu" => wgpu::DeviceType::IntegratedGpu,
        "virtual" | "virtualgpu" => wgpu::DeviceType::VirtualGpu,
        "cpu" => wgpu::DeviceType::Cpu,
        "other" => wgpu::DeviceType::Other,
        other => return Err(WgpuError::Invalid(format!("unknown device type {other:?} (discrete, integrated, virtual, cpu, other)"))),
    })
}

fn type_rank(t: wgpu::DeviceType) -> u32 {
    match t {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Cpu => 3,
        wgpu::DeviceType::Other => 4,
    }
}

/// The adapters wgpu sees (Vulkan, Metal, DX12), as `(name, type, backend)`.
pub fn list_adapters() -> Vec<wgpu::AdapterInfo> {
    let instance = instance();
    pollster::block_on(instance.enumerate_adapters(backends())).iter().map(|a| a.get_info()).collect()
}

fn backends() -> wgpu::Backends {
    wgpu::Backends::VULKAN | wgpu::Backends::METAL | wgpu::Backends::DX12
}

fn instance() -> wgpu::Instance {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = backends();
    wgpu::Instance::new(desc)
}

/// An open device with its queue, limits and captured errors.
pub struct Gpu {
    /// The device.
    pub device: wgpu::Device,
    /// Its queue.
    pub queue: wgpu::Queue,
    /// Limits granted (the adapter's own, optionally lowered by `AdapterSelector::max_binding`).
    pub limits: wgpu::Limits,
    /// Adapter description.
    pub info: wgpu::AdapterInfo,
    /// Invocations per workgroup used by every kernel: `WORKGROUP`, or the adapter's maximum
    /// if smaller.
    pub wg: u32,
    /// Largest storage binding (and buffer) we use, in bytes.
    pub max_binding: u64,
    /// The pipeline cache and the file it is kept in, when the adapter offers one.
    pipeline_cache: Option<(wgpu::PipelineCache, PathBuf)>,
    errors: Arc<Mutex<Vec<String>>>,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu").field("adapter", &self.info.name).field("max_binding", &self.max_binding).finish()
    }
}

/// Invocations per workgroup, unless the adapter allows fewer.
const WORKGROUP: u32 = 64;

/// Buffers used as storage and copied to and from.
const STORAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE.union(wgpu::BufferUsages::COPY_SRC).union(wgpu::BufferUsages::COPY_DST);

impl Gpu {
    /// Opens the best adapter matching `sel` (discrete before integrated before CPU).
    pub fn open(sel: &AdapterSelector) -> Result<Gpu, WgpuError> {
        let instance = instance();
        let adapters = pollster::block_on(instance.enumerate_adapters(backends()));
        let seen: Vec<String> = adapters.iter().map(|a| describe(&a.get_info())).collect();
        let adapter = adapters.into_iter().filter(|a| sel.matches(&a.get_info())).min_by_key(|a| type_rank(a.get_info().device_type)).ok_or_else(|| {
            if seen.is_empty() {
                WgpuError::NoAdapter(
                    "no Vulkan, Metal or DX12 adapter is present (on Linux install a Vulkan driver, e.g. mesa-vulkan-drivers for lavapipe)".into(),
                )
            } else {
                WgpuError::NoAdapter(format!("none matches {sel:?}; present: {}", seen.join("; ")))
            }
        })?;
        let info = adapter.get_info();
        let mut limits = adapter.limits();
        // Lowering the binding limit (tests of the splitting paths).
        if let Some(cap) = sel.max_binding {
            limits.max_storage_buffer_binding_size = limits.max_storage_buffer_binding_size.min(cap.max(1 << 16));
        }
        // A pipeline cache where the adapter has one (Vulkan) and a directory is configured.
        let cache_file = sel
            .pipeline_cache_dir
            .as_ref()
            .filter(|_| adapter.features().contains(wgpu::Features::PIPELINE_CACHE))
            .and_then(|d| Some(d.join(wgpu::util::pipeline_cache_key(&info)?)));
        let required_features = if cache_file.is_some() { wgpu::Features::PIPELINE_CACHE } else { wgpu::Features::empty() };
        let desc = wgpu::DeviceDescriptor { label: Some("cuzk"), required_features, required_limits: limits.clone(), ..Default::default() };
        let (device, queue) =
            pollster::block_on(adapter.request_device(&desc)).map_err(|e| WgpuError::RequestDevice { adapter: describe(&info), reason: e.to_string() })?;
        let errors = Arc::new(Mutex::new(Vec::new()));
        let sink = errors.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            sink.lock().unwrap_or_else(|p| p.into_inner()).push(e.to_string());
        }));
        let wg = WORKGROUP.min(limits.max_compute_workgroup_size_x).min(limits.max_compute_invocations_per_workgroup).max(1);
        let wg = 1u32 << (31 - wg.leading_zeros()); // a power of two
        let max_binding = (limits.max_storage_buffer_binding_size as u64).min(limits.max_buffer_size) & !255;
        let pipeline_cache = cache_file.map(|path| {
            // A missing or unreadable file starts an empty cache; so does data the driver
            // rejects (fallback), e.g. after a driver update.
            let data = std::fs::read(&path).ok();
            // SAFETY: the file only ever receives `PipelineCache::get_data` output, written to a
            // temporary file and renamed into place (see `save_pipeline_cache`); wgpu and the
            // driver check its header (wgpu version, adapter, driver) and fall back on mismatch.
            let cache = unsafe { device.create_pipeline_cache(&wgpu::PipelineCacheDescriptor { label: Some("cuzk"), data: data.as_deref(), fallback: true }) };
            (cache, path)
        });
        Ok(Gpu { device, queue, limits, info, wg, max_binding, pipeline_cache, errors })
    }

    /// A short description of the adapter.
    pub fn describe(&self) -> String {
        describe(&self.info)
    }

    /// The file of the on-disk pipeline cache, if this device uses one.
    pub fn pipeline_cache_file(&self) -> Option<&std::path::Path> {
        self.pipeline_cache.as_ref().map(|(_, p)| p.as_path())
    }

    /// Writes the pipeline cache to its file (a temporary file renamed into place, so readers
    /// never see a torn file). Failures are returned for the caller to report; the cache is an
    /// optimisation, never a reason to fail a proof.
    pub fn save_pipeline_cache(&self) -> std::io::Result<()> {
        let Some((cache, path)) = &self.pipeline_cache else { return Ok(()) };
        let Some(data) = cache.get_data() else { return Ok(()) };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, &data)?;
        std::fs::rename(&tmp, path)
    }

    /// Returns (and clears) the errors wgpu reported since the last check.
    pub fn check(&self) -> Result<(), WgpuError> {
        let mut e = self.errors.lock().unwrap_or_else(|p| p.into_inner());
        if e.is_empty() {
            return Ok(());
        }
        let msg = e.join("; ");
        e.clear();
        if msg.to_lowercase().contains("out of memory") {
            Err(WgpuError::OutOfMemory(msg))
        } else {
            Err(WgpuError::Device(msg))
        }
    }

    fn check_size(&self, bytes: u64, what: &str) -> Result<u64, WgpuError> {
        if bytes > self.limits.max_buffer_size {
            return Err(WgpuError::OutOfMemory(format!("{what}: {bytes} bytes exceed the adapter's largest buffer ({} bytes)", self.limits.max_buffer_size)));
        }
        Ok(bytes.max(4).next_multiple_of(4))
    }

    /// A zero-filled storage buffer of at least `bytes` bytes.
    pub fn storage(&self, bytes: u64, what: &str) -> Result<wgpu::Buffer, WgpuError> {
        let size = self.check_size(bytes, what)?;
        Ok(self.device.create_buffer(&wgpu::BufferDescriptor { label: Some(what), size, usage: STORAGE, mapped_at_creation: false }))
    }

    /// A storage buffer holding `data`.
    pub fn storage_init(&self, data: &[u8], what: &str) -> Result<wgpu::Buffer, WgpuError> {
        let size = self.check_size(data.len() as u64, what)?;
        let buf = self.device.create_buffer(&wgpu::BufferDescriptor { label: Some(what), size, usage: STORAGE, mapped_at_creation: true });
        {
            let mut view = buf.slice(..).get_mapped_range_mut().map_err(|e| WgpuError::Device(format!("{what}: {e}")))?;
            view.slice(..data.len()).copy_from_slice(data);
        }
        buf.unmap();
        Ok(buf)
    }

    /// A uniform block of kernel arguments.
    pub fn params(&self, p: [u32; 8]) -> wgpu::Buffer {
        let bytes: Vec<u8> = p.iter().flat_map(|x| x.to_le_bytes()).collect();
        self.device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("params"), contents: &bytes, usage: wgpu::BufferUsages::UNIFORM })
    }

    /// Blocks until the queue is idle; reports errors wgpu captured meanwhile.
    pub fn wait(&self) -> Result<(), WgpuError> {
        self.device.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| WgpuError::Device(e.to_string()))?;
        self.check()
    }

    /// Copies `len` bytes at `offset` of `buf` back to the host (waits for queued work).
    pub fn read(&self, buf: &wgpu::Buffer, offset: u64, len: u64) -> Result<Vec<u8>, WgpuError> {
        if len == 0 {
            return Ok(Vec::new());
        }
        let size = len.next_multiple_of(4);
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut enc = self.device.create_command_encoder(&Default::default());
        enc.copy_buffer_to_buffer(buf, offset, &staging, 0, size);
        self.queue.submit([enc.finish()]);
        let (tx, rx) = std::sync::mpsc::channel();
        staging.slice(..).map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r.map_err(|e| e.to_string()));
        });
        // Another thread's poll may be the one that runs this callback (tests share a device),
        // so our own poll can return before it has run: wait for the callback itself.
        let mapped = loop {
            self.wait()?;
            match rx.recv_timeout(std::time::Duration::from_millis(20)) {
                Ok(r) => break r,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return Err(WgpuError::Device("readback buffer was not mapped".into())),
            }
        };
        if let Err(e) = mapped {
            return Err(WgpuError::Device(format!("mapping a readback buffer: {e}")));
        }
        let out = {
            let view = staging.slice(..).get_mapped_range().map_err(|e| WgpuError::Device(e.to_string()))?;
            view[..len as usize].to_vec()
        };
        staging.unmap();
        Ok(out)
    }

    /// `(x, y)` workgroup counts covering `threads` invocations.
    pub fn grid(&self, threads: u64) -> Result<(u32, u32), WgpuError> {
        let groups = threads.div_ceil(self.wg as u64).max(1);
        let maxd = self.limits.max_compute_workgroups_per_dimension.max(1) as u64;
        let x = groups.min(maxd);
        let y = groups.div_ceil(x);
        if y > maxd {
            return Err(WgpuError::Invalid(format!("{threads} invocations exceed the adapter's dispatch limits")));
        }
        Ok((x as u32, y as u32))
    }
}

fn describe(info: &wgpu::AdapterInfo) -> String {
    format!("{} ({:?}, {:?}, driver {} {})", info.name, info.device_type, info.backend, info.driver, info.driver_info)
}

/// A compute kernel: a pipeline with its automatic bind group layout.
pub struct Kernel {
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
    name: &'static str,
}

impl Kernel {
    /// Creates the pipeline of `entry` in `module`.
    pub fn new(gpu: &Gpu, module: &wgpu::ShaderModule, entry: &'static str) -> Kernel {
        let pipeline = gpu.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(entry),
            layout: None,
            module,
            entry_point: Some(entry),
            compilation_options: Default::default(),
            cache: gpu.pipeline_cache.as_ref().map(|(c, _)| c),
        });
        let layout = pipeline.get_bind_group_layout(0);
        Kernel { pipeline, layout, name: entry }
    }
}

/// A storage binding: a buffer, or a byte range of one.
#[derive(Clone, Copy)]
pub struct Bind<'a> {
    /// The buffer.
    pub buf: &'a wgpu::Buffer,
    /// Start, in bytes (a multiple of the adapter's storage offset alignment).
    pub offset: u64,
    /// Length in bytes (`None`: to the end).
    pub size: Option<u64>,
}

impl<'a> From<&'a wgpu::Buffer> for Bind<'a> {
    fn from(buf: &'a wgpu::Buffer) -> Self {
        Bind { buf, offset: 0, size: None }
    }
}

/// Dispatches and copies recorded into one command buffer.
pub struct Batch<'g> {
    gpu: &'g Gpu,
    enc: wgpu::CommandEncoder,
}

impl<'g> Batch<'g> {
    /// An empty batch.
    pub fn new(gpu: &'g Gpu) -> Self {
        Batch { gpu, enc: gpu.device.create_command_encoder(&Default::default()) }
    }

    /// Records `kernel` over `threads` invocations (`workgroups`: the count is of workgroups)
    /// with storage `binds` (binding, buffer) and the uniform `params` at `params_binding`.
    pub fn dispatch(
        &mut self,
        kernel: &Kernel,
        binds: &[(u32, Bind<'_>)],
        params_binding: u32,
        params: [u32; 8],
        threads: u64,
        workgroups: bool,
    ) -> Result<(), WgpuError> {
        let gpu = self.gpu;
        let pbuf = gpu.params(params);
        let mut entries: Vec<wgpu::BindGroupEntry<'_>> = binds
            .iter()
            .map(|(b, bind)| wgpu::BindGroupEntry {
                binding: *b,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: bind.buf,
                    offset: bind.offset,
                    size: bind.size.and_then(NonZeroU64::new),
                }),
            })
            .collect();
        entries.push(wgpu::BindGroupEntry { binding: params_binding, resource: pbuf.as_entire_binding() });
        let group = gpu.device.create_bind_group(&wgpu::BindGroupDescriptor { label: Some(kernel.name), layout: &kernel.layout, entries: &entries });
        let (x, y) = gpu.grid(if workgroups { threads * gpu.wg as u64 } else { threads })?;
        let mut pass = self.enc.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(kernel.name), timestamp_writes: None });
        pass.set_pipeline(&kernel.pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.dispatch_workgroups(x, y, 1);
        Ok(())
    }

    /// Records a buffer-to-buffer copy.
    pub fn copy(&mut self, src: &wgpu::Buffer, src_off: u64, dst: &wgpu::Buffer, dst_off: u64, bytes: u64) {
        if bytes > 0 {
            self.enc.copy_buffer_to_buffer(src, src_off, dst, dst_off, bytes);
        }
    }

    /// Submits the batch (does not wait) and reports errors captured so far.
    pub fn submit(self) -> Result<(), WgpuError> {
        self.gpu.queue.submit([self.enc.finish()]);
        self.gpu.check()
    }
}
