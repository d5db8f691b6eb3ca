//! Paired comparison of two result sets on the same images (system A, the baseline, and
//! system B): per metric the difference B - A, its paired bootstrap interval and p-value, and an
//! approximate-randomization p-value.
//!
//! Both tests recompute every aggregate from the per-image statistics as the metric pools them
//! (BLEU from summed counts, METEOR from summed segment statistics, the rest as means; CIDEr-D's
//! document frequencies are the references', the same for both systems, held fixed).
//!
//! - Paired bootstrap: resample `s` draws images with replacement (the same draws for A and B,
//!   the generator of the single-system bootstrap) and gives the difference of the two
//!   resampled aggregates. Interval: the percentile interval of those differences. p-value
//!   (two-sided, the bootstrap under the null by shifting the differences to mean 0):
//!   `(1 + #{s : |d_s - mean(d)| >= |d|}) / (samples + 1)`.
//! - Approximate randomization: trial `t` swaps the two systems' outputs of each image with
//!   probability 1/2; p-value `(1 + #{t : |d_t| >= |d|}) / (trials + 1)`.
//!
//! Deterministic for a seed whatever the thread count (every resample and trial has its own
//! generator stream; sums run in image order).
//!
//! Must not: read files or know about HTTP.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::bootstrap::{drawn, multiplicities, pooled, quantile, SplitMix};
use super::options::{cancelled, Options};
use super::report::{Scores, Warning};
use super::score::score;
use super::source::ReferenceSource;
use crate::input::{Candidate, ErrorCode, ImageId, ImageKey, InputError};

/// What to compute.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CompareSpec {
    /// Paired bootstrap resamples (1 to 10,000; default 1,000).
    #[serde(default = "default_count")]
    pub samples: u32,
    /// Approximate-randomization trials (1 to 10,000; default 1,000).
    #[serde(default = "default_count")]
    pub trials: u32,
    /// Seed of both tests.
    #[serde(default)]
    pub seed: u64,
    /// Confidence level of the interval, strictly between 0 and 1 (default 0.95).
    #[serde(default = "default_level")]
    pub level: f64,
}

fn default_count() -> u32 {
    1000
}

fn default_level() -> f64 {
    0.95
}

impl Default for CompareSpec {
    fn default() -> CompareSpec {
        CompareSpec {
            samples: default_count(),
            trials: default_count(),
            seed: 0,
            level: default_level(),
        }
    }
}

impl CompareSpec {
    /// Most resamples or trials.
    pub const MAX: u32 = 10_000;

    /// Why the spec cannot be used, if it cannot.
    pub fn check(&self) -> Result<(), String> {
        for (what, n) in [("samples", self.samples), ("trials", self.trials)] {
            if n == 0 || n > Self::MAX {
                return Err(format!("{what} must be 1 to {}, got {n}", Self::MAX));
            }
        }
        if !(self.level > 0.0 && self.level < 1.0) {
            return Err(format!(
                "level must be strictly between 0 and 1, got {}",
                self.level
            ));
        }
        Ok(())
    }
}

/// The comparison of B against A.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CompareReport {
    /// Images compared.
    pub images: usize,
    /// System A's corpus scores (the baseline).
    pub a: Scores,
    /// System B's corpus scores.
    pub b: Scores,
    /// B - A per metric.
    pub delta: Scores,
    /// Paired bootstrap of the difference.
    pub paired_bootstrap: PairedBootstrap,
    /// Approximate randomization.
    pub randomization: Randomization,
    /// The scoring signature (the same for both systems).
    pub signature: String,
    /// Warnings of either system's scoring, prefixed `A: ` / `B: `.
    pub warnings: Vec<Warning>,
}

/// Paired bootstrap results.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PairedBootstrap {
    /// Resamples.
    pub samples: u32,
    /// Seed.
    pub seed: u64,
    /// Confidence level of the interval.
    pub level: f64,
    /// Lower bounds of B - A.
    pub low: Scores,
    /// Upper bounds of B - A.
    pub high: Scores,
    /// Two-sided p-values of B - A = 0.
    pub p_value: Scores,
}

/// Approximate-randomization results.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Randomization {
    /// Trials.
    pub trials: u32,
    /// Seed.
    pub seed: u64,
    /// Two-sided p-values of B - A = 0.
    pub p_value: Scores,
}

/// The error when `a` and `b` do not name the same images.
fn same_images(a: &[Candidate], b: &[Candidate]) -> Result<(), InputError> {
    let keys = |c: &[Candidate]| -> rustc_hash::FxHashSet<ImageKey> {
        c.iter().map(|c| c.image_id.key.clone()).collect()
    };
    let (ka, kb) = (keys(a), keys(b));
    let only = |c: &[Candidate], other: &rustc_hash::FxHashSet<ImageKey>| -> Vec<ImageId> {
        c.iter()
            .filter(|c| !other.contains(&c.image_id.key))
            .map(|c| c.image_id.clone())
            .collect()
    };
    let (oa, ob) = (only(a, &kb), only(b, &ka));
    if oa.is_empty() && ob.is_empty() {
        return Ok(());
    }
    let list = |v: &[ImageId]| crate::input::list_ids(v);
    Err(InputError::new(
        ErrorCode::ImageSetsDiffer,
        format!(
            "the two result sets must cover the same images: {} only in A ({}), {} only in B ({})",
            oa.len(),
            list(&oa),
            ob.len(),
            list(&ob)
        ),
    ))
}

/// Scores A and B against `refs` (the same options) and compares them. The settings are
/// checked by [`super::Job::check`] before this runs.
pub(crate) fn compare(
    a: Vec<Candidate>,
    b: Vec<Candidate>,
    refs: &dyn ReferenceSource,
    opts: &Options<'_>,
    spec: &CompareSpec,
) -> Result<CompareReport, InputError> {
    same_images(&a, &b)?;
    let opts = Options {
        keep_pool: true,
        bootstrap: None,
        explain: false,
        include_tokenized: false,
        ..*opts
    };
    let ra = score(a, refs, &opts)?;
    let rb = score(b, refs, &opts)?;
    let (Some(pa), Some(pb)) = (&ra.pool, &rb.pool) else {
        return Err(InputError::new(
            ErrorCode::Internal,
            "per-image statistics were not kept",
        ));
    };
    if pa.ids != pb.ids || pa.keys != pb.keys {
        return Err(InputError::new(
            ErrorCode::Internal,
            "the two systems were scored in different orders",
        ));
    }
    let keys = pa.keys.clone();
    let n = pa.per_image.len();
    let delta_of =
        |x: &[f64], y: &[f64]| -> Vec<f64> { y.iter().zip(x).map(|(b, a)| b - a).collect() };
    // The difference of the reported aggregates (pooling from the per-image statistics can
    // differ from them in the last bits: a mean summed in another order).
    let observed: Vec<f64> = keys
        .iter()
        .map(|k| rb.aggregate.get(k).unwrap_or(0.0) - ra.aggregate.get(k).unwrap_or(0.0))
        .collect();
    // Paired bootstrap.
    let boot: Vec<Vec<f64>> = (0..spec.samples)
        .into_par_iter()
        .map(|s| {
            if opts.cancelled() {
                return None;
            }
            let m = multiplicities(spec.seed, s, n);
            Some(delta_of(
                &pooled(&keys, drawn(pa, &m), n as f64),
                &pooled(&keys, drawn(pb, &m), n as f64),
            ))
        })
        .collect::<Option<_>>()
        .ok_or_else(cancelled)?;
    // Approximate randomization: trial t swaps image i when bit i of its stream says so.
    let trials: Vec<Vec<f64>> = (0..spec.trials)
        .into_par_iter()
        .map(|t| {
            if opts.cancelled() {
                return None;
            }
            let mut g = SplitMix::stream(spec.seed ^ 0xA5A5_5A5A_C3C3_3C3C, t);
            let mut swap = Vec::with_capacity(n);
            let mut bits = 0u64;
            for i in 0..n {
                if i % 64 == 0 {
                    bits = g.next();
                }
                swap.push(bits >> (i % 64) & 1 == 1);
            }
            // The A side takes A's output unless swapped; the B side the other one.
            let side = |a_side: bool| {
                let swap = &swap;
                (0..n).map(move |i| (if a_side != swap[i] { pa } else { pb }, i, 1u32))
            };
            Some(delta_of(
                &pooled(&keys, side(true), n as f64),
                &pooled(&keys, side(false), n as f64),
            ))
        })
        .collect::<Option<_>>()
        .ok_or_else(cancelled)?;
    let q = (1.0 - spec.level) / 2.0;
    let (mut low, mut high, mut p_boot, mut p_ar, mut delta) = (
        Scores::default(),
        Scores::default(),
        Scores::default(),
        Scores::default(),
        Scores::default(),
    );
    for (j, &key) in keys.iter().enumerate() {
        let d = observed[j];
        delta.set(key, d);
        let mut column: Vec<f64> = boot.iter().map(|v| v[j]).collect();
        let mean = column.iter().sum::<f64>() / column.len() as f64;
        let extreme = column.iter().filter(|&&x| at_least(x - mean, d)).count();
        p_boot.set(key, (1 + extreme) as f64 / (f64::from(spec.samples) + 1.0));
        column.sort_by(f64::total_cmp);
        low.set(key, quantile(&column, q));
        high.set(key, quantile(&column, 1.0 - q));
        let extreme = trials.iter().filter(|v| at_least(v[j], d)).count();
        p_ar.set(key, (1 + extreme) as f64 / (f64::from(spec.trials) + 1.0));
    }
    let warnings = [("A", ra.warnings), ("B", rb.warnings)]
        .into_iter()
        .flat_map(|(side, ws)| {
            ws.into_iter().map(move |mut w| {
                w.message = format!("{side}: {}", w.message);
                w
            })
        })
        .collect();
    Ok(CompareReport {
        images: n,
        a: ra.aggregate,
        b: rb.aggregate,
        delta,
        paired_bootstrap: PairedBootstrap {
            samples: spec.samples,
            seed: spec.seed,
            level: spec.level,
            low,
            high,
            p_value: p_boot,
        },
        randomization: Randomization {
            trials: spec.trials,
            seed: spec.seed,
            p_value: p_ar,
        },
        signature: ra.signature,
        warnings,
    })
}

/// `|x| >= |d|`, with a relative tolerance for sums that equal `d` up to rounding (a trial that
/// reproduces the observed split exactly must count).
fn at_least(x: f64, d: f64) -> bool {
    x.abs() >= d.abs() * (1.0 - 1e-12) - 1e-15
}
