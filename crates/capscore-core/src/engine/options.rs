//! What a run computes and how: [`Options`], where CIDEr's document frequencies come from
//! ([`DfChoice`]), how captions become words ([`Tokenizer`]), and cooperative cancellation.

use super::bootstrap::BootstrapSpec;
use super::metric::Metric;
use super::source::DfTableRef;
use crate::input::{ErrorCode, InputError};
use crate::metrics::meteor::Meteor;
use crate::metrics::spice::Spice;

/// Where CIDEr's document frequencies come from.
#[derive(Clone, Copy, Default)]
pub enum DfChoice<'a> {
    /// The batch's own references (pycocoevalcap's behaviour).
    #[default]
    Batch,
    /// The reference source's own table (a registered dataset's: a subset is scored with the
    /// whole set's frequencies).
    Source,
    /// A given table (another dataset's: e.g. inline references scored with a registered
    /// set's frequencies).
    Table(DfTableRef<'a>),
}

/// How captions become words.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Tokenizer {
    /// pycocoevalcap's PTB tokenizer and punctuation filter (the default).
    #[default]
    Ptb,
    /// The captions are already tokenized (words separated by spaces): used as given.
    Pretokenized,
}

/// What to compute.
#[derive(Clone, Copy)]
pub struct Options<'a> {
    /// Metrics to compute (canonical order, no duplicates).
    pub metrics: &'a [Metric],
    /// Document-frequency source for CIDEr.
    pub df: DfChoice<'a>,
    /// How captions are tokenized.
    pub tokenizer: Tokenizer,
    /// METEOR's loaded resources (required when METEOR is requested).
    pub meteor: Option<&'a Meteor>,
    /// SPICE's loaded resources (required when SPICE is requested).
    pub spice: Option<&'a Spice>,
    /// List each image's SPICE tuples with their match flags.
    pub explain: bool,
    /// Add the tokenized captions to the report (`tokenized`).
    pub include_tokenized: bool,
    /// Bootstrap intervals of the aggregates.
    pub bootstrap: Option<BootstrapSpec>,
    /// Strict mode: every image of the reference source must have a candidate (else
    /// `incomplete_results`); without it, a partial submission gets a `partial_results`
    /// warning.
    pub require_complete: bool,
    /// Keep the per-image pooling statistics in the report ([`Report::pool`], not serialized):
    /// paired comparisons recompute aggregates from them.
    pub keep_pool: bool,
    /// Cooperative cancellation: once it returns true, the long per-image and per-caption
    /// loops stop and [`score`] answers `timeout` (a server's request timed out or its client
    /// went away; nobody reads the result).
    pub cancel: Option<&'a (dyn Fn() -> bool + Sync)>,
}

impl<'a> Options<'a> {
    /// Options for `metrics` with every other choice at its default.
    pub fn new(metrics: &'a [Metric]) -> Options<'a> {
        Options {
            metrics,
            df: DfChoice::Batch,
            tokenizer: Tokenizer::Ptb,
            meteor: None,
            spice: None,
            explain: false,
            include_tokenized: false,
            bootstrap: None,
            require_complete: false,
            keep_pool: false,
            cancel: None,
        }
    }

    /// True once the caller cancelled the computation.
    pub fn cancelled(&self) -> bool {
        self.cancel.is_some_and(|c| c())
    }

    /// The cancellation check as a function (never true without one).
    pub fn stop(&self) -> &(dyn Fn() -> bool + Sync) {
        self.cancel.unwrap_or(&|| false)
    }
}

/// The error of a cancelled computation.
pub(crate) fn cancelled() -> InputError {
    InputError::new(
        ErrorCode::Timeout,
        "the computation was cancelled (its request timed out or its client went away)",
    )
}
