//! The CUDA C sources (from `kernels/cuda/`) assembled into one translation unit, and the
//! names of the kernels the backend launches.

/// The full kernel source, in dependency order.
pub const SOURCE: &str = concat!(
    include_str!("../../kernels/cuda/field/mont.cuh"),
    "\n",
    include_str!("../../kernels/cuda/field/fp64_mont.cuh"),
    "\n",
    include_str!("../../kernels/cuda/field/fp2.cuh"),
    "\n",
    include_str!("../../kernels/cuda/curve/xyzz.cuh"),
    "\n",
    include_str!("../../kernels/cuda/ntt/ntt.cu"),
    "\n",
    include_str!("../../kernels/cuda/msm/msm.cu"),
    "\n",
    include_str!("../../kernels/cuda/constraints/eval.cu"),
    "\n",
    include_str!("../../kernels/cuda/constraints/check.cu"),
    "\n",
    include_str!("../../kernels/cuda/curve/points.cu"),
    "\n",
    include_str!("../../kernels/cuda/field/selftest.cu"),
    "\n",
);

/// Every `extern "C"` kernel the backend looks up after loading the module.
pub const KERNELS: &[&str] = &[
    "ntt_pass",
    "ntt_bitrev",
    "ntt_bitrev_tiled",
    "ntt_quotient",
    "ntt_mul",
    "ntt_sub",
    "ntt_pow_table",
    "density_popcounts",
    "msm_prepare",
    "msm_count_dense",
    "msm_histogram",
    "msm_scatter",
    "msm_window_keys",
    "msm_scatter_range",
    "msm_bin_starts",
    "msm_bin_keys",
    "msm_scatter_binned",
    "read_u32s",
    "scan_block",
    "scan_add",
    "msm_make_tasks",
    "msm_seg_counts",
    "msm_pair_index",
    "msm_accumulate_seg_g1",
    "msm_accumulate_seg_g2",
    "msm_accumulate_xyzz_g1",
    "msm_window_segments_g1",
    "msm_window_segments_affine_g1",
    "msm_pair_sums_g1",
    "msm_to_jacobian_g1",
    "msm_affine_prefix_g1",
    "msm_affine_finish_g1",
    "msm_inv_prefix_g1",
    "msm_inv_down_g1",
    "msm_inv_each_g1",
    "msm_accumulate_xyzz_g2",
    "msm_window_segments_g2",
    "msm_window_segments_affine_g2",
    "msm_pair_sums_g2",
    "msm_to_jacobian_g2",
    "msm_affine_prefix_g2",
    "msm_affine_finish_g2",
    "msm_inv_prefix_g2",
    "msm_inv_down_g2",
    "msm_inv_each_g2",
    "eval_constraints_u32",
    "eval_constraints_u64",
    "eval_long_rows_u32",
    "eval_long_rows_u64",
    "check_constraints",
    "check_points_g1",
    "check_points_g2",
    "selftest_fr_ops",
    "selftest_fp_ops",
    "selftest_fp2_ops",
    "selftest_g1_ops",
    "selftest_g2_ops",
    "bench_fr_mul",
    "bench_fp_mul",
    "bench_fr_mul_fp64",
    "bench_fp_mul_fp64",
    "selftest_fr_mul_fp64",
    "selftest_fp_mul_fp64",
];

#[cfg(test)]
mod tests {
    use super::*;

    /// The names after `extern "C" __global__ void` in the source, past launch-bound
    /// annotations (`__launch_bounds__(…)` or an upper-case macro, with or without arguments);
    /// and apart, the prefixes of names built by token pasting inside macros (`name_##G`).
    fn defined_kernels() -> (Vec<String>, Vec<String>) {
        let ident = |s: &str| -> String { s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect() };
        let (mut names, mut pasted) = (Vec::new(), Vec::new());
        for part in SOURCE.split("extern \"C\" __global__ void").skip(1) {
            let mut rest = part.trim_start();
            loop {
                let word = ident(rest);
                let annotation =
                    word == "__launch_bounds__" || (!word.is_empty() && word.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'));
                if !annotation {
                    // A name pasted by a macro (`name_##G`) is checked where it is expanded.
                    if rest[word.len()..].trim_start().starts_with("##") {
                        pasted.push(word);
                    } else {
                        names.push(word);
                    }
                    break;
                }
                rest = rest[word.len()..].trim_start();
                if let Some(r) = rest.strip_prefix('(') {
                    rest = r.split_once(')').map_or("", |(_, r)| r).trim_start();
                }
            }
        }
        (names, pasted)
    }

    #[test]
    fn every_kernel_in_the_source_is_listed_and_every_listed_one_defined() {
        let (defined, pasted) = defined_kernels();
        assert!(defined.len() > 20 && !pasted.is_empty(), "found only {defined:?} and {pasted:?}");
        for name in &defined {
            assert!(KERNELS.contains(&name.as_str()), "kernel {name} is defined in kernels/cuda but not listed in KERNELS");
        }
        for name in KERNELS {
            let known = defined.iter().any(|d| d == name) || pasted.iter().any(|p| name.starts_with(p.as_str()));
            assert!(known, "KERNELS lists {name}, which the source does not define");
        }
    }
}
