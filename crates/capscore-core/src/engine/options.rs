//! What a run computes and how: [`Options`], where CIDEr's document frequencies come from
//! ([`DfChoice`]), how captions become words ([`Tokenizer`]), cooperative cancellation, and
//! progress reports ([`Progress`]).

use std::sync::atomic::{AtomicUsize, Ordering};

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
    /// Progress of the long stages (n-gram metrics, METEOR, SPICE), for a front end that draws
    /// it: called from the worker threads, so it must be cheap. Without it nothing is counted.
    pub progress: Option<&'a (dyn Fn(Progress) + Sync)>,
    /// Called on the computing thread at a stage boundary of a plain run, once the stage has
    /// dropped its large temporaries (the candidates' list after the assembly, the raw and
    /// then the tokenized text, the n-gram build's tables, its words and n-grams), before the
    /// next stage allocates: a program whose allocator keeps freed pages for the threads that
    /// freed them returns them to the system here, so that the stages' peaks do not add up
    /// (issue 27; the core knows no allocator). Not called in the runs of splits and of
    /// several candidates per image. It may wait for every worker of the pool: set it only
    /// where no worker can be busy with another caller's work (the CLI, not a server).
    pub release_memory: Option<&'a (dyn Fn() + Sync)>,
}

/// A stage of a run that reports its progress ([`Options::progress`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stage {
    /// BLEU, ROUGE-L and CIDEr: images scored.
    Ngrams,
    /// METEOR: images aligned.
    Meteor,
    /// SPICE: captions parsed, candidates and then the references whose graphs are not
    /// cached.
    Spice,
}

impl Stage {
    /// What the stage counts, for a person: `images scored (BLEU, ROUGE-L, CIDEr)`, ...
    pub fn label(self) -> &'static str {
        match self {
            Stage::Ngrams => "images scored (BLEU, ROUGE-L, CIDEr)",
            Stage::Meteor => "images aligned (METEOR)",
            Stage::Spice => "captions parsed (SPICE)",
        }
    }
}

/// How far a stage is: `done` of `total` units. Each stage reports `done == 0` first (before
/// any work, from the calling thread), then once per unit or batch of units done, from the
/// worker threads: every call's `done` is distinct, and the largest is `total` when the stage
/// completes (not when it is cancelled). Calls from different threads may arrive out of order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// The stage.
    pub stage: Stage,
    /// Units done so far.
    pub done: usize,
    /// Units of the stage.
    pub total: usize,
}

/// A stage's counter: reports [`Progress`] to the options' hook (a no-op without one).
pub(crate) struct Tally<'a> {
    hook: Option<&'a (dyn Fn(Progress) + Sync)>,
    stage: Stage,
    total: usize,
    done: AtomicUsize,
}

impl<'a> Tally<'a> {
    /// Starts `stage` of `total` units (reports 0 done).
    pub(crate) fn start(opts: &Options<'a>, stage: Stage, total: usize) -> Tally<'a> {
        if let Some(h) = opts.progress {
            h(Progress {
                stage,
                done: 0,
                total,
            });
        }
        Tally {
            hook: opts.progress,
            stage,
            total,
            done: AtomicUsize::new(0),
        }
    }

    /// `n` more units done.
    #[inline]
    pub(crate) fn add(&self, n: usize) {
        if let Some(h) = self.hook {
            if n > 0 {
                let done = self.done.fetch_add(n, Ordering::Relaxed) + n;
                h(Progress {
                    stage: self.stage,
                    done,
                    total: self.total,
                });
            }
        }
    }
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
            progress: None,
            release_memory: None,
        }
    }

    /// Calls [`Options::release_memory`], if set.
    pub(crate) fn release_memory(&self) {
        if let Some(release) = self.release_memory {
            release();
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

/// The error of a cancelled computation (the caller asked to stop).
pub fn cancelled() -> InputError {
    InputError::new(
        ErrorCode::Timeout,
        "the computation was cancelled (its request timed out or its client went away)",
    )
}
