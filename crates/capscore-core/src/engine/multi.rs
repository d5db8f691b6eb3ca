//! Several candidates per image (sampled captions, beam outputs): each candidate scored, then one
//! value per image selected (`max` by a chosen metric, or the `mean` over the candidates), as
//! aac-metrics defines SPIDEr-max and its other `mult_cands` metrics.
//!
//! How it is computed: every image must have the same number `K` of candidates (aac-metrics'
//! rule). Run `j` scores candidate `j` of every image as one ordinary corpus with
//! [`score`](super::score), so CIDEr-D's document frequencies come from the references alone
//! (pycocoevalcap's rule; or from the fixed table chosen in the options) and are the same in
//! every run; BLEU and METEOR pool within the run. Per image:
//! - `max`: the candidate with the highest value of the `by` metric (the first on ties); every
//!   metric's value is that candidate's (aac-metrics gathers all metrics at the `by` argmax);
//! - `mean`: every metric's mean over the candidates.
//!
//! The aggregate of every metric is then the mean over images of the selected per-image values
//! (aac-metrics' reduction), not a pooled corpus score: BLEU and METEOR differ from their
//! pooled form even with one candidate. Each run's own corpus scores are kept
//! (`multi_candidate.per_candidate`).
//!
//! Must not: read files or know about HTTP.

use rustc_hash::FxHashMap;

use super::options::Options;
use super::report::{ImageScores, Report, Scores, Warning};
pub use super::report::{MultiImage, MultiReport, Selection};
use super::score::score;
use super::source::ReferenceSource;
use crate::input::{Candidate, ErrorCode, ImageId, ImageKey, InputError};

/// What to select.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MultiSpec {
    /// `max` or `mean`.
    pub select: Selection,
    /// With `max`: the output key that picks the candidate (`SPIDEr`, `CIDEr`, `Bleu_4`, ...).
    /// Default: `SPIDEr` when computed, else `CIDEr`, else the first key computed. Given with
    /// `mean`, it is an error (`mean` selects nothing).
    pub by: Option<String>,
}

/// Groups candidates by image, images in the order of their first candidate, each image's
/// captions in the order given.
pub fn group(candidates: Vec<Candidate>) -> Vec<(ImageId, Vec<String>)> {
    let mut at: FxHashMap<ImageKey, usize> = FxHashMap::default();
    let mut out: Vec<(ImageId, Vec<String>)> = Vec::new();
    for c in candidates {
        match at.get(&c.image_id.key) {
            Some(&i) => out[i].1.push(c.caption),
            None => {
                at.insert(c.image_id.key.clone(), out.len());
                out.push((c.image_id, vec![c.caption]));
            }
        }
    }
    out
}

fn bad(message: String) -> InputError {
    InputError::new(ErrorCode::InvalidFormat, message)
}

/// The largest number of candidates any image has (1 for an empty list): the number of runs.
pub fn candidates_per_image(candidates: &[Candidate]) -> u64 {
    let mut per_image: FxHashMap<&ImageKey, u64> = FxHashMap::default();
    for c in candidates {
        *per_image.entry(&c.image_id.key).or_default() += 1;
    }
    per_image.values().copied().max().unwrap_or(1)
}

/// Scores several candidates per image (`candidates` may repeat image ids; see [`group`]) and
/// selects one value per image. What does not combine with it (bootstrap intervals, SPICE's
/// explanations, the tokenized captions, `mean` with a `by`) is refused by
/// [`super::Job::check`] before this runs.
pub(crate) fn score_multi(
    candidates: Vec<Candidate>,
    refs: &dyn ReferenceSource,
    opts: &Options<'_>,
    spec: &MultiSpec,
) -> Result<Report, InputError> {
    let images = group(candidates);
    let k = images.first().map_or(0, |(_, c)| c.len());
    if let Some((id, c)) = images.iter().find(|(_, c)| c.len() != k) {
        return Err(bad(format!(
            "every image needs the same number of candidates: image_id {} has {k}, image_id {id} has {}",
            images[0].0,
            c.len()
        )));
    }
    // The keys the runs will give, in output order: a bad `by` is refused before any run.
    let computed: Vec<&str> = opts
        .metrics
        .iter()
        .flat_map(|m| m.keys())
        .copied()
        .collect();
    let keys: Vec<&'static str> = Scores::KEYS
        .iter()
        .copied()
        .filter(|key| computed.contains(key))
        .collect();
    let by = match (spec.select, &spec.by) {
        // `mean` with a `by` is refused by the job's check.
        (Selection::Mean, _) => None,
        (Selection::Max, Some(b)) => Some(
            keys.iter()
                .copied()
                .find(|key| *key == b.as_str())
                .ok_or_else(|| {
                    bad(format!(
                        "select by {b:?}: not a computed score (computed: {})",
                        keys.join(", ")
                    ))
                })?,
        ),
        (Selection::Max, None) => ["SPIDEr", "CIDEr"]
            .into_iter()
            .find(|key| keys.contains(key))
            .or_else(|| keys.first().copied()),
    };
    // The runs borrow the references and free little each: no memory hook.
    let run_opts = Options {
        release_memory: None,
        ..*opts
    };
    let runs = (0..k)
        .map(|j| {
            let cands = images
                .iter()
                .map(|(id, c)| Candidate {
                    image_id: id.clone(),
                    caption: c[j].clone(),
                })
                .collect();
            score(cands, refs, &run_opts)
        })
        .collect::<Result<Vec<Report>, InputError>>()?;
    let Some(first) = runs.first() else {
        return Err(InputError::new(
            ErrorCode::EmptyResults,
            "no candidates to score (empty batch)",
        ));
    };
    let n = first.per_image.len();
    let mut per_image = Vec::with_capacity(n);
    let mut multi = Vec::with_capacity(n);
    for i in 0..n {
        let scores: Vec<Scores> = runs.iter().map(|r| r.per_image[i].scores).collect();
        let (selected, chosen) = match by {
            Some(key) => {
                let value = |s: &Scores| s.get(key).unwrap_or(f64::NEG_INFINITY);
                let mut best = 0;
                for (j, s) in scores.iter().enumerate().skip(1) {
                    if value(s) > value(&scores[best]) {
                        best = j;
                    }
                }
                (Some(best), scores[best])
            }
            None => (None, mean_of(&keys, &scores)),
        };
        let image_id = first.per_image[i].image_id.clone();
        per_image.push(ImageScores {
            image_id: image_id.clone(),
            scores: chosen,
        });
        multi.push(MultiImage {
            image_id,
            selected,
            candidates: scores,
        });
    }
    let mut aggregate = Scores::default();
    for key in &keys {
        let values: Vec<f64> = per_image
            .iter()
            .map(|p| p.scores.get(key).unwrap_or(f64::NAN))
            .collect();
        aggregate.set(key, crate::metrics::numpy_mean(&values));
    }
    let mut warnings: Vec<Warning> = Vec::new();
    for w in runs.iter().flat_map(|r| &r.warnings) {
        if !warnings.contains(w) {
            warnings.push(w.clone());
        }
    }
    let signature = format!(
        "{}|multi:k={k},select={}{},aggregate=mean",
        first.signature,
        spec.select.as_str(),
        by.map(|b| format!("({b})")).unwrap_or_default()
    );
    let per_candidate = runs.iter().map(|r| r.aggregate).collect();
    let mut report = runs.into_iter().next().expect("k >= 1");
    report.aggregate = aggregate;
    report.per_image = per_image;
    report.bleu_totals = None;
    report.spice = None;
    report.signature = signature;
    report.warnings = warnings;
    report.multi_candidate = Some(MultiReport {
        candidates: k,
        select: spec.select,
        by: by.map(str::to_owned),
        per_candidate,
        per_image: multi,
    });
    Ok(report)
}

/// The mean of each key over one image's candidates (summed in order, then divided).
fn mean_of(keys: &[&'static str], scores: &[Scores]) -> Scores {
    let mut out = Scores::default();
    for key in keys {
        let sum: f64 = scores.iter().map(|s| s.get(key).unwrap_or(f64::NAN)).sum();
        out.set(key, sum / scores.len() as f64);
    }
    out
}
