//! The matrix product of the parser's dense layers, through `matrixmultiply`'s SIMD kernels
//! (runtime AVX/FMA detection).
//!
//! Owns the crate's only `unsafe` block (the crate root denies `unsafe_code`; this file alone
//! allows it). Must not grow: anything else belongs in safe code.

use super::model::Linear;

/// `out = x * lin.w^T` (`rows x n_out`): `x` is `rows x n_in` row-major, `lin.w` is
/// `n_out x n_in` row-major; the first `rows * n_out` values of `out` are overwritten.
///
/// Why `unsafe`: `matrixmultiply::sgemm` is the library's only entry point and takes raw
/// pointers with strides; a safe matrix product of the same speed would need a second
/// dependency or hand-written SIMD. The bounds are asserted before the call, so a wrong size
/// panics instead of reading or writing out of bounds.
#[allow(unsafe_code)]
pub(super) fn gemm_bt(x: &[f32], rows: usize, lin: &Linear, out: &mut [f32]) {
    let (k, n) = (lin.n_in, lin.n_out);
    assert!(x.len() >= rows * k && out.len() >= rows * n && lin.w.len() >= n * k);
    if rows == 0 {
        return;
    }
    // SAFETY: the assertion above guarantees that `x` holds rows*k elements, `lin.w` n*k and
    // `out` rows*n, and the strides below address exactly those row-major layouts; `out` is a
    // unique borrow, so it aliases neither input.
    unsafe {
        matrixmultiply::sgemm(
            rows,
            k,
            n,
            1.0,
            x.as_ptr(),
            k as isize,
            1,
            lin.w.as_ptr(),
            1,
            k as isize,
            0.0,
            out.as_mut_ptr(),
            n as isize,
            1,
        );
    }
}
