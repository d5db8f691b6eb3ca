//! The SPICE step: candidates parsed into tuples, references parsed and merged per image (or
//! taken from the source's graph cache), scored; the corpus score in pycocoevalcap's order
//! (sorted image ids), the seven categories per image and on average.
//!
//! A caption whose tuples cannot be built (an internal failure of the converter) contributes
//! no tuples and its image is named in a `spice_conversion_failed` warning: never a silent 0.
//!
//! Must not: read files (the loaded [`Spice`](crate::metrics::spice::Spice) comes in the
//! options).

use serde_json::Value;

use super::metric::Metric;
use super::options::{cancelled, Stage, Tally};
use super::report::{SpiceCategories, SpiceImageReport, SpiceMeans, SpiceReport, SpiceTuple};
use super::report::{Warning, WarningCode};
use super::step::{Ctx, Out};
use crate::input::{ImageKey, InputError};
use crate::metrics::spice::{SceneGraph, SpiceImage, SpiceItem};

/// Runs SPICE (the engine calls it only when the metric is asked for).
pub(super) fn run(ctx: &Ctx<'_>, out: &mut Out) -> Result<(), InputError> {
    let sp = ctx.loaded(Metric::Spice, ctx.opts.spice)?;
    let _span = tracing::debug_span!("spice").entered();
    let (batch, tok) = (ctx.batch, ctx.tok);
    let n = batch.items.len();
    let stop = ctx.opts.stop();
    let cached = ctx
        .refs
        .spice
        .as_ref()
        .filter(|c| c.graphs.len() == n && c.failed.len() == n);
    let to_parse = match cached {
        Some(_) => n,
        None => n + tok.references.all().len(),
    };
    let tally = Tally::start(ctx.opts, Stage::Spice, to_parse);
    let parsed = |k: usize| tally.add(k);
    let candidates: Vec<&str> = tok.candidates.iter().collect();
    let (cand_tuples, cand_failed) = sp.tuples_until(&candidates, stop, &parsed);
    let mut failed: Vec<bool> = cand_failed;
    let built;
    let graphs: &[SceneGraph] = match cached {
        Some(c) => {
            for (f, r) in failed.iter_mut().zip(&c.failed) {
                *f |= r;
            }
            &c.graphs
        }
        _ => {
            let lists: Vec<Vec<&str>> = (0..n).map(|i| tok.references.image(i).collect()).collect();
            let images: Vec<&[&str]> = lists.iter().map(Vec::as_slice).collect();
            let (g, ref_failed) = sp.caption_graphs_until(&images, stop, &parsed);
            for (f, r) in failed.iter_mut().zip(ref_failed) {
                *f |= r;
            }
            built = g;
            &built
        }
    };
    let keys: Vec<SortKey> = batch
        .items
        .iter()
        .map(|it| SortKey(it.image_id.key.clone()))
        .collect();
    let items: Vec<SpiceItem<'_>> = cand_tuples
        .iter()
        .zip(graphs)
        .map(|(c, g)| SpiceItem {
            candidate: c,
            references: g,
        })
        .collect();
    if ctx.opts.cancelled() {
        return Err(cancelled());
    }
    let corpus = sp.score(&keys, &items, ctx.opts.explain);
    out.aggregate.spice = Some(corpus.score);
    for (row, (_, im)) in out.rows().zip(&corpus.images) {
        row.spice = Some(im.all.f_or_nan());
    }
    let images: Vec<&SpiceImage> = corpus.images.iter().map(|(_, im)| im).collect();
    let tuples = |v: &[crate::metrics::spice::ScoredTuple]| -> Vec<SpiceTuple> {
        v.iter().map(SpiceTuple::from).collect()
    };
    let per_image = batch
        .output_order
        .iter()
        .map(|&i| {
            let im = images[i];
            SpiceImageReport {
                image_id: batch.items[i].image_id.raw.clone(),
                categories: SpiceCategories::of(im),
                candidate_tuples: ctx.opts.explain.then(|| tuples(&im.candidate_tuples)),
                reference_tuples: ctx.opts.explain.then(|| tuples(&im.reference_tuples)),
            }
        })
        .collect();
    out.spice = Some(SpiceReport {
        aggregate: SpiceMeans::of(corpus.score, &images),
        per_image,
    });
    let failed_ids: Vec<Value> = (0..n)
        .filter(|&i| failed[i])
        .map(|i| batch.items[i].image_id.raw.clone())
        .collect();
    if !failed_ids.is_empty() {
        out.late_warnings
            .push(Warning::new(WarningCode::SpiceConversionFailed, failed_ids));
    }
    out.signature(
        Metric::Spice,
        "spice:1.0-scoring,parser=en_core_web_sm-3.8.0-native,convert=2,synsets".into(),
    );
    Ok(())
}

/// Python's `sorted()` order of image ids: numbers numerically, then strings.
#[derive(Debug, Clone, PartialEq)]
struct SortKey(ImageKey);

impl Eq for SortKey {}

impl PartialOrd for SortKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for SortKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        let num = |k: &ImageKey| match k {
            ImageKey::Int(i) => Some(*i as f64),
            ImageKey::Float(b) => Some(f64::from_bits(*b)),
            ImageKey::Str(_) => None,
        };
        match (&self.0, &other.0) {
            (ImageKey::Int(a), ImageKey::Int(b)) => a.cmp(b),
            (ImageKey::Str(a), ImageKey::Str(b)) => a.cmp(b),
            (a, b) => match (num(a), num(b)) {
                (Some(x), Some(y)) => x.total_cmp(&y),
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (None, None) => Ordering::Equal,
            },
        }
    }
}
