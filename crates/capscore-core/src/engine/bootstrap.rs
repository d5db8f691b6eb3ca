//! Bootstrap confidence intervals of the aggregates: images are resampled with replacement and
//! every aggregate is recomputed from the per-image statistics of the resample, as the metric
//! pools them: BLEU from the summed counts (testlen, reflen, guess, correct), METEOR from its
//! summed segment statistics, ROUGE-L, CIDEr-D (document frequencies held fixed: those of the
//! full batch) and SPICE as means of the per-image values. The interval is the percentile one
//! (numpy's default linear interpolation between order statistics).
//!
//! Deterministic: resample `s` draws its images from a generator seeded by (seed, s) alone, and
//! each resample's sums run in image order, so the bytes do not depend on the thread count.
//!
//! Must not: read files or know where the statistics came from.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::report::Scores;
pub use super::report::{BootstrapReport, PoolStats};
use crate::metrics::bleu::BleuStats;
use crate::metrics::meteor;

/// What to resample.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct BootstrapSpec {
    /// Number of resamples (1 to 10,000).
    pub samples: u32,
    /// Seed of the resampling (the same seed gives the same intervals).
    #[serde(default)]
    pub seed: u64,
    /// Confidence level, strictly between 0 and 1.
    #[serde(default = "default_level")]
    pub level: f64,
}

fn default_level() -> f64 {
    0.95
}

impl BootstrapSpec {
    /// Most resamples a request may ask for.
    pub const MAX_SAMPLES: u32 = 10_000;

    /// `samples` resamples at level 0.95, seed 0.
    pub fn new(samples: u32) -> BootstrapSpec {
        BootstrapSpec {
            samples,
            seed: 0,
            level: default_level(),
        }
    }

    /// Why the spec cannot be used, if it cannot.
    pub fn check(&self) -> Result<(), String> {
        if self.samples == 0 || self.samples > Self::MAX_SAMPLES {
            return Err(format!(
                "bootstrap samples must be 1 to {}, got {}",
                Self::MAX_SAMPLES,
                self.samples
            ));
        }
        if !(self.level > 0.0 && self.level < 1.0) {
            return Err(format!(
                "bootstrap level must be strictly between 0 and 1, got {}",
                self.level
            ));
        }
        Ok(())
    }
}

/// The aggregates (in `keys` order) of a weighted selection of images, each taken from one of
/// several systems' statistics: `picks` yields (system, image index, times drawn); `n` is the
/// number of draws. Pooled as the metric pools: BLEU from summed counts, METEOR from summed
/// segment statistics, the rest as means. Sums run in the order of `picks`.
pub(crate) fn pooled<'a, I>(keys: &[&'static str], picks: I, n: f64) -> Vec<f64>
where
    I: Iterator<Item = (&'a PoolStats, usize, u32)> + Clone,
{
    let bleu = keys.iter().any(|k| k.starts_with("Bleu_")).then(|| {
        let mut total = BleuStats::default();
        for (st, i, k) in picks.clone() {
            if let Some(b) = &st.bleu {
                total.add_times(&b[i], u64::from(k));
            }
        }
        total.scores()
    });
    let meteor = keys.contains(&"METEOR").then(|| {
        meteor::pooled_score_weighted(
            picks
                .clone()
                .filter_map(|(st, i, k)| st.meteor.as_ref().map(|m| (&m[i], u64::from(k)))),
        )
    });
    keys.iter()
        .map(|&key| match (key, bleu, meteor) {
            ("Bleu_1", Some(b), _) => b[0],
            ("Bleu_2", Some(b), _) => b[1],
            ("Bleu_3", Some(b), _) => b[2],
            ("Bleu_4", Some(b), _) => b[3],
            ("METEOR", _, Some(v)) => v,
            _ => {
                let mut sum = 0.0;
                for (st, i, k) in picks.clone() {
                    sum += f64::from(k) * st.per_image[i].get(key).unwrap_or(0.0);
                }
                sum / n
            }
        })
        .collect()
}

/// SplitMix64: a small, fixed generator (the stream is part of the output's definition).
pub(crate) struct SplitMix(u64);

impl SplitMix {
    /// The generator of stream `s` under `seed` (one per resample or trial).
    pub(crate) fn stream(seed: u64, s: u32) -> SplitMix {
        let mut g = SplitMix(seed ^ u64::from(s).wrapping_mul(0xD1B5_4A32_D192_ED03));
        g.next();
        g
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (Lemire's multiply-shift with rejection).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        let threshold = n.wrapping_neg() % n;
        loop {
            let m = u128::from(self.next()) * u128::from(n);
            if (m as u64) >= threshold {
                return (m >> 64) as u64;
            }
        }
    }
}

/// How many times each of `n` images is drawn in resample `s`.
pub(crate) fn multiplicities(seed: u64, s: u32, n: usize) -> Vec<u32> {
    let mut g = SplitMix::stream(seed, s);
    let mut m = vec![0u32; n];
    for _ in 0..n {
        m[g.below(n as u64) as usize] += 1;
    }
    m
}

/// The images drawn by multiplicities `m`, from `st`, as [`pooled`] takes them.
pub(crate) fn drawn<'a>(
    st: &'a PoolStats,
    m: &'a [u32],
) -> impl Iterator<Item = (&'a PoolStats, usize, u32)> + Clone + 'a {
    m.iter()
        .enumerate()
        .filter(|(_, &k)| k > 0)
        .map(move |(i, &k)| (st, i, k))
}

/// The aggregates of one resample, in `keys` order.
fn resampled(st: &PoolStats, m: &[u32]) -> Vec<f64> {
    pooled(&st.keys, drawn(st, m), m.len() as f64)
}

/// numpy's `quantile(values, q)` (linear) of sorted values.
pub(crate) fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// The intervals of every aggregate; `None` once `cancel()` is true (resamples not started
/// yet are skipped).
pub(super) fn intervals(
    spec: &BootstrapSpec,
    st: &PoolStats,
    cancel: &(dyn Fn() -> bool + Sync),
) -> Option<BootstrapReport> {
    let _span = tracing::debug_span!("bootstrap").entered();
    let n = st.per_image.len();
    let draws: Vec<Vec<f64>> = (0..spec.samples)
        .into_par_iter()
        .map(|s| (!cancel()).then(|| resampled(st, &multiplicities(spec.seed, s, n))))
        .collect::<Option<_>>()?;
    let (mut low, mut high) = (Scores::default(), Scores::default());
    let q = (1.0 - spec.level) / 2.0;
    for (j, &key) in st.keys.iter().enumerate() {
        let mut column: Vec<f64> = draws.iter().map(|d| d[j]).collect();
        column.sort_by(f64::total_cmp);
        low.set(key, quantile(&column, q));
        high.set(key, quantile(&column, 1.0 - q));
    }
    Some(BootstrapReport {
        samples: spec.samples,
        seed: spec.seed,
        level: spec.level,
        method: "percentile",
        low,
        high,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resamples_draw_n_images_and_depend_on_seed_and_index_only() {
        let a = multiplicities(7, 3, 1000);
        assert_eq!(a.iter().map(|&k| k as usize).sum::<usize>(), 1000);
        assert_eq!(a, multiplicities(7, 3, 1000));
        assert_ne!(a, multiplicities(7, 4, 1000));
        assert_ne!(a, multiplicities(8, 3, 1000));
    }

    #[test]
    fn quantiles_interpolate_like_numpy() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&v, 0.0), 1.0);
        assert_eq!(quantile(&v, 1.0), 4.0);
        assert_eq!(quantile(&v, 0.5), 2.5);
        assert!((quantile(&v, 0.025) - 1.075).abs() < 1e-12);
    }

    #[test]
    fn specs_are_checked() {
        assert!(BootstrapSpec::new(1000).check().is_ok());
        assert!(BootstrapSpec::new(0).check().is_err());
        assert!(BootstrapSpec::new(10_001).check().is_err());
        let mut s = BootstrapSpec::new(10);
        s.level = 1.0;
        assert!(s.check().is_err());
    }
}
