//! The CUDA C sources (from `kernels/cuda/`) assembled into one translation unit, and the
//! names of the kernels the backend launches.

/// The full kernel source, in dependency order.
pub const SOURCE: &str = concat!(
    include_str!("../../kernels/cuda/field/mont.cuh"),
    "\n",
    include_str!("../../kernels/cuda/field/fp2.cuh"),
    "\n",
    include_str!("../../kernels/cuda/curve/xyzz.cuh"),
    "\n",
    include_str!("../../kernels/cuda/ntt/ntt.cu"),
    "\n",
    include_str!("../../kernels/cuda/msm/msm.cu"),
    "\n",
    include_str!("../../kernels/cuda/field/selftest.cu"),
    "\n",
);

/// Every `extern "C"` kernel the backend looks up after loading the module.
pub const KERNELS: &[&str] = &[
    "ntt_pass",
    "ntt_bitrev",
    "ntt_quotient",
    "ntt_pow_table",
    "msm_prepare",
    "msm_histogram",
    "msm_scatter",
    "scan_block",
    "scan_add",
    "msm_make_tasks",
    "msm_seg_counts",
    "msm_accumulate_seg_g1",
    "msm_accumulate_seg_g2",
    "msm_accumulate_affine_g1",
    "msm_accumulate_affine_lb_g1",
    "msm_accumulate_xyzz_g1",
    "msm_gather_g1",
    "msm_window_segments_g1",
    "msm_pair_sums_g1",
    "msm_to_jacobian_g1",
    "msm_accumulate_affine_g2",
    "msm_accumulate_affine_lb_g2",
    "msm_accumulate_xyzz_g2",
    "msm_gather_g2",
    "msm_window_segments_g2",
    "msm_pair_sums_g2",
    "msm_to_jacobian_g2",
    "selftest_fr_ops",
    "selftest_fp_ops",
    "selftest_fp2_ops",
    "selftest_g1_ops",
    "selftest_g2_ops",
];
