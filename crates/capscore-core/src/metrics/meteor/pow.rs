//! `pow(frag, β)` as the jar computes it (spec METEOR §13.2).
//!
//! `f64::powf` (glibc `pow` on Linux) equals the jar's `Math.pow` (a HotSpot intrinsic on x86_64)
//! except on rare arguments. For `β = 0.2` every fragmentation value `c / (S / 2.0)` with
//! `S ≤ 2000` where they differ is listed in `pow_table.rs` with the jar's
//! result, so per-segment scores are bit-identical; values outside the table (large pooled
//! corpora) keep a ≈0.1% chance of a 1-ulp difference. Never use an fdlibm port (`libm` crate):
//! it differs from the jar far more often.

#[path = "pow_table.rs"]
mod pow_table;

/// `frag.powf(beta)`, with the jar's result substituted for the known divergent `frag` values
/// when `beta == 0.2`.
pub(super) fn pow_frag(frag: f64, beta: f64) -> f64 {
    if beta == 0.2 {
        let bits = frag.to_bits();
        if let Ok(k) = pow_table::JAVA_POW_0_2.binary_search_by_key(&bits, |&(f, _)| f) {
            return f64::from_bits(pow_table::JAVA_POW_0_2[k].1);
        }
    }
    frag.powf(beta)
}

/// `Math.pow(frag, 0.2)` as the jar computes it (table, else `f64::powf`).
pub fn pow_0_2(frag: f64) -> f64 {
    pow_frag(frag, 0.2)
}
