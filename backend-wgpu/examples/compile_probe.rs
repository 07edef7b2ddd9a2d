//! Compiles every kernel of the backend and prints the time each took (`CUZK_WGPU_TRACE`).
fn main() {
    std::env::set_var("CUZK_WGPU_TRACE", "1");
    let b = cuzk_backend_wgpu::WgpuBackend::from_env().expect("adapter");
    let t = std::time::Instant::now();
    b.warm_up().expect("kernels");
    eprintln!("all kernels in {:.1} s", t.elapsed().as_secs_f64());
}
