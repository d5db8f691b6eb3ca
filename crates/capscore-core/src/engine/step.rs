//! What the metric steps share: the tokenized batch, the step of each metric, what every step
//! reads ([`Ctx`]) and what it writes ([`Out`]). The steps are `ngram.rs`, `meteor.rs` and
//! `spice.rs`; `score.rs` runs them.

use std::collections::BTreeMap;

use super::metric::Metric;
use super::options::Options;
use super::report::{BleuTotals, ImageScores, Scores, SpiceReport, Warning};
use super::source::{DfTableRef, PreparedRefs};
use crate::input::{Batch, InputError};
use crate::text::{ImageTexts, Texts};

/// The tokenized batch: candidates and references in evaluation order (empty once freed, see
/// [`super::score`]).
#[derive(Default)]
pub struct Tokenized {
    /// Tokenized candidate per item.
    pub candidates: Texts,
    /// Tokenized references per item.
    pub references: ImageTexts,
}

/// The step that computes a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Step {
    /// METEOR (`meteor.rs`).
    Meteor,
    /// BLEU, ROUGE-L and the CIDEr variants (`ngram.rs`).
    Ngram,
    /// SPICE (`spice.rs`).
    Spice,
    /// SPIDEr, from CIDEr-D and SPICE (after both ran).
    Spider,
}

impl Metric {
    /// The step that computes this metric. Steps run in [`Step`] order.
    pub fn step(self) -> Step {
        match self {
            Metric::Bleu | Metric::RougeL | Metric::CiderD | Metric::CiderOriginal => Step::Ngram,
            Metric::Meteor => Step::Meteor,
            Metric::Spice => Step::Spice,
            Metric::Spider => Step::Spider,
        }
    }
}

/// How the n-gram step reads document frequencies.
#[derive(Clone, Copy)]
pub(super) enum DfUse<'a> {
    /// From the batch's references.
    Batch,
    /// From a table, with the signature label to use.
    Table(DfTableRef<'a>, &'a str),
}

/// What every step reads.
pub(super) struct Ctx<'a> {
    pub(super) batch: &'a Batch,
    pub(super) tok: &'a Tokenized,
    pub(super) refs: &'a PreparedRefs<'a>,
    pub(super) opts: &'a Options<'a>,
    pub(super) df: DfUse<'a>,
}

impl Ctx<'_> {
    pub(super) fn wants(&self, m: Metric) -> bool {
        self.opts.metrics.contains(&m)
    }

    /// The loaded resource a step needs, or `metric_unavailable` naming the metric.
    pub(super) fn loaded<'r, T>(&self, m: Metric, r: Option<&'r T>) -> Result<&'r T, InputError> {
        r.ok_or_else(|| {
            InputError::new(
                crate::input::ErrorCode::MetricUnavailable,
                format!(
                    "{} is not available: its resources are not loaded (run `capscore fetch`)",
                    m.keys()[0]
                ),
            )
        })
    }
}

/// What the steps write: scores per image in evaluation order.
pub(super) struct Out {
    pub(super) aggregate: Scores,
    /// The number of images (the rows' length once made).
    pub(super) images: usize,
    /// Per-image rows, in evaluation order until the report puts them in output order (their
    /// ids are set then): empty until a step writes its first scores (see [`Out::rows`]).
    pub(super) per_image: Vec<ImageScores>,
    pub(super) bleu_totals: Option<BleuTotals>,
    pub(super) spice: Option<SpiceReport>,
    pub(super) signature: BTreeMap<Metric, String>,
    pub(super) warnings: Vec<Warning>,
    /// Warnings listed after the input warnings (internal failures).
    pub(super) late_warnings: Vec<Warning>,
    /// Per-image BLEU counts and METEOR statistics, kept for the bootstrap.
    pub(super) bleu_stats: Option<Vec<crate::metrics::bleu::BleuStats>>,
    pub(super) meteor_stats: Option<Vec<crate::metrics::meteor::SegmentStats>>,
}

impl Out {
    /// The per-image rows, made on first use: a step's own working memory (the n-gram step's
    /// words and n-grams) goes back before they are made.
    pub(super) fn rows(&mut self) -> impl Iterator<Item = &mut Scores> {
        if self.per_image.len() != self.images {
            let row = ImageScores {
                image_id: serde_json::Value::Null,
                scores: Scores::default(),
            };
            self.per_image = vec![row; self.images];
        }
        self.per_image.iter_mut().map(|r| &mut r.scores)
    }

    pub(super) fn signature(&mut self, m: Metric, part: String) {
        self.signature.insert(m, part);
    }
}
