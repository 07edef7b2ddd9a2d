//! wgpu backend for cuzk (work in progress).
