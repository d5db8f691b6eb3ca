//! The engine: ONE entry point, [`score`]. A job (candidates) is joined with its references
//! through a [`ReferenceSource`] (inline references or a registered dataset), every caption is
//! tokenized once, and the requested metrics run as steps, each dispatched from the [`Metric`]
//! enum ([`Metric::step`]): `ngram.rs` (BLEU, ROUGE-L, CIDEr-D, CIDEr; they share one pass over
//! n-grams), `meteor.rs`, `spice.rs`. Each step computes per-image statistics on the rayon
//! pool, pools them in evaluation order, and adds its keys, signature part and warnings to the
//! [`Report`] (`report.rs`: the one set of output types, serialized and documented).
//! `leaderboard.rs` (split tables), `compare.rs` (paired comparison) and `multi.rs` (several
//! candidates per image) build on [`score`] and never score by themselves.
//!
//! Determinism: per-image work runs in parallel, but every aggregate is reduced sequentially in
//! evaluation order after the parallel part, so the output bytes do not depend on the number of
//! threads. Callers choose the thread pool (`pool.install(|| engine::score(..))`).
//!
//! Must not: read files, know about HTTP or the CLI, or hold global state. Phases are
//! `tracing` spans (`RUST_LOG=capscore=debug` shows their timings).

pub mod bootstrap;
pub mod compare;
mod job;
pub mod leaderboard;
mod meteor;
mod metric;
pub mod multi;
mod ngram;
pub mod report;
pub mod source;
mod spice;

use std::collections::BTreeMap;

use serde_json::Value;

pub use job::{run, Job, Kind, Outcome, Refs};
pub use metric::{coded_error, Metric};
pub use report::{
    BleuTotals, ImageScores, Report, RunStats, Scores, SpiceReport, TokenizedItem, Warning,
    WarningCode,
};
pub use source::{
    tokenize_references, CachedGraphs, DfTableRef, Interned, OwnedReferences, PrepareRequest,
    PreparedRefs, ReferenceSource,
};

use crate::input::{Batch, Candidate, ErrorCode, InputError};
use crate::metrics::meteor::Meteor;
use crate::metrics::spice::Spice;
use crate::text::ptb;

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
    pub bootstrap: Option<bootstrap::BootstrapSpec>,
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
fn cancelled() -> InputError {
    InputError::new(
        ErrorCode::Timeout,
        "the computation was cancelled (its request timed out or its client went away)",
    )
}

/// The tokenized batch: candidates and references in evaluation order.
pub struct Tokenized {
    /// Tokenized candidate per item.
    pub candidates: Vec<String>,
    /// Tokenized references per item.
    pub references: Vec<Vec<String>>,
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
enum DfUse<'a> {
    /// From the batch's references.
    Batch,
    /// From a table, with the signature label to use.
    Table(DfTableRef<'a>, &'a str),
}

/// What every step reads.
struct Ctx<'a> {
    batch: &'a Batch,
    tok: &'a Tokenized,
    refs: &'a PreparedRefs<'a>,
    opts: &'a Options<'a>,
    df: DfUse<'a>,
}

impl Ctx<'_> {
    fn wants(&self, m: Metric) -> bool {
        self.opts.metrics.contains(&m)
    }

    /// The loaded resource a step needs, or `metric_unavailable` naming the metric.
    fn loaded<'r, T>(&self, m: Metric, r: Option<&'r T>) -> Result<&'r T, InputError> {
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
struct Out {
    aggregate: Scores,
    per_image: Vec<Scores>,
    bleu_totals: Option<BleuTotals>,
    spice: Option<SpiceReport>,
    signature: BTreeMap<Metric, String>,
    warnings: Vec<Warning>,
    /// Warnings listed after the input warnings (internal failures).
    late_warnings: Vec<Warning>,
    /// Per-image BLEU counts and METEOR statistics, kept for the bootstrap.
    bleu_stats: Option<Vec<crate::metrics::bleu::BleuStats>>,
    meteor_stats: Option<Vec<crate::metrics::meteor::SegmentStats>>,
}

impl Out {
    fn signature(&mut self, m: Metric, part: String) {
        self.signature.insert(m, part);
    }
}

/// Tokenizes captions as one stream, as pycocoevalcap does (or takes them as given).
fn tokenize_candidates(batch: &Batch, tokenizer: Tokenizer) -> Vec<String> {
    let _span = tracing::debug_span!("tokenize").entered();
    let cands: Vec<&str> = batch.items.iter().map(|i| i.candidate.as_str()).collect();
    match tokenizer {
        Tokenizer::Ptb => ptb::tokenize_stream(&cands),
        Tokenizer::Pretokenized => cands.into_iter().map(str::to_owned).collect(),
    }
}

/// The number of tokens the default tokenizer makes of `caption` on its own (in a stream the
/// last token can depend on the next caption: the count may differ by one). Cheap for short
/// captions: a caption of at most `bound` bytes has at most `bound` tokens and is not
/// tokenized (the count returned is then its byte length). Servers bound per-caption work with
/// it before scoring.
pub fn caption_tokens_at_most(caption: &str, bound: usize) -> usize {
    if caption.len() <= bound {
        return caption.len();
    }
    ptb::tokenize_stream(&[caption])
        .first()
        .map_or(0, |t| t.split_whitespace().count())
}

/// Scores `candidates` against the references of `refs`: THE entry point of the library (the
/// CLI, the server and the Python package all call it).
pub fn score(
    candidates: Vec<Candidate>,
    refs: &dyn ReferenceSource,
    opts: &Options<'_>,
) -> Result<Report, InputError> {
    let batch = refs.assemble(candidates)?;
    let partial = coverage(&batch, opts.require_complete)?;
    let req = PrepareRequest {
        tokenize: opts.tokenizer == Tokenizer::Ptb,
        spice: opts.spice.filter(|_| opts.metrics.contains(&Metric::Spice)),
    };
    let (prepared, cand_tok) = rayon::join(
        || {
            let _span = tracing::debug_span!("prepare_references").entered();
            refs.prepare(&batch, &req)
        },
        || tokenize_candidates(&batch, opts.tokenizer),
    );
    let mut prepared = prepared?;
    let tok = Tokenized {
        candidates: cand_tok,
        references: std::mem::take(&mut prepared.tokenized),
    };
    let df_label = format!("batch(N={})", batch.items.len());
    let df = match opts.df {
        DfChoice::Batch => match prepared.batch_table {
            // The source's table IS the batch's (same references, same tokenization): it
            // serves under the batch label (the signature stays the inline one).
            Some(t) => DfUse::Table(t, &df_label),
            None => DfUse::Batch,
        },
        DfChoice::Source => {
            let t = refs.df_table().ok_or_else(|| {
                InputError::new(
                    ErrorCode::InvalidFormat,
                    "cider_df \"dataset\" needs a \"dataset\"",
                )
            })?;
            DfUse::Table(t, t.label)
        }
        DfChoice::Table(t) => {
            // References interned by the source use the source's ids: only the source's own
            // table shares them; any other table needs the words interned with its interner.
            let same_ids = refs
                .df_table()
                .is_some_and(|own| std::ptr::eq(own.interner, t.interner));
            if !same_ids {
                prepared.interned = None;
            }
            DfUse::Table(t, t.label)
        }
    };
    let ctx = Ctx {
        batch: &batch,
        tok: &tok,
        refs: &prepared,
        opts,
        df,
    };
    let n = batch.items.len();
    let mut out = Out {
        aggregate: Scores::default(),
        per_image: vec![Scores::default(); n],
        bleu_totals: None,
        spice: None,
        signature: BTreeMap::new(),
        warnings: partial.into_iter().collect(),
        late_warnings: Vec::new(),
        bleu_stats: None,
        meteor_stats: None,
    };
    let mut steps: Vec<Step> = opts.metrics.iter().map(|m| m.step()).collect();
    steps.sort_unstable();
    steps.dedup();
    for step in steps {
        if opts.cancelled() {
            return Err(cancelled());
        }
        match step {
            Step::Meteor => meteor::run(&ctx, &mut out)?,
            Step::Ngram => ngram::run(&ctx, &mut out)?,
            Step::Spice => spice::run(&ctx, &mut out)?,
            Step::Spider => spider(&mut out),
        }
    }
    if opts.cancelled() {
        return Err(cancelled());
    }
    Ok(finish(&batch, &tok, &prepared, opts, out))
}

/// SPIDEr (aac-metrics): the mean of CIDEr-D and SPICE, per image and for the corpus (both
/// corpus scores are means over the images, so the corpus SPIDEr is the mean of the per-image
/// values up to rounding).
fn spider(out: &mut Out) {
    let mean = |s: &Scores| match (s.cider, s.spice) {
        (Some(c), Some(p)) => Some((c + p) / 2.0),
        _ => None,
    };
    out.aggregate.spider = mean(&out.aggregate);
    for row in &mut out.per_image {
        row.spider = mean(row);
    }
    out.signature(Metric::Spider, "spider:(cider_d+spice)/2".into());
}

/// Strict mode's check: an error when images of the source have no candidate; otherwise the
/// `partial_results` warning, if any is missing.
fn coverage(batch: &Batch, strict: bool) -> Result<Option<Warning>, InputError> {
    let m = &batch.missing;
    if m.count == 0 {
        return Ok(None);
    }
    let first: Vec<String> = m.first.iter().map(ToString::to_string).collect();
    let more = if m.count > first.len() { ", ..." } else { "" };
    let counts = format!(
        "{} of the {} images of the references have no result ({} scored); first missing: {}{more}",
        m.count,
        m.of,
        batch.items.len(),
        first.join(", ")
    );
    if strict {
        return Err(InputError::new(
            ErrorCode::IncompleteResults,
            format!("incomplete submission: {counts}"),
        ));
    }
    Ok(Some(Warning {
        code: WarningCode::PartialResults,
        message: format!("partial submission: {counts}"),
        image_ids: m.first.iter().map(|i| i.raw.clone()).collect(),
    }))
}

/// The report: input warnings, per-image rows in output order, the signature.
fn finish(
    batch: &Batch,
    tok: &Tokenized,
    prepared: &PreparedRefs<'_>,
    opts: &Options<'_>,
    out: Out,
) -> Report {
    let _span = tracing::debug_span!("report").entered();
    let n = batch.items.len();
    let pool = bootstrap::PoolStats {
        bleu: out.bleu_stats,
        meteor: out.meteor_stats,
        per_image: out.per_image.clone(),
        keys: out.aggregate.entries().map(|(k, _)| k).collect(),
        ids: batch.items.iter().map(|i| i.image_id.key.clone()).collect(),
    };
    let bootstrap = opts
        .bootstrap
        .map(|spec| bootstrap::intervals(&spec, &pool));
    let mut warnings = out.warnings;
    let ids = |f: &dyn Fn(usize) -> bool| -> Vec<Value> {
        (0..n)
            .filter(|&i| f(i))
            .map(|i| batch.items[i].image_id.raw.clone())
            .collect()
    };
    let empty = ids(&|i| tok.candidates[i].is_empty());
    if !empty.is_empty() {
        warnings.push(Warning::new(WarningCode::EmptyCandidate, empty));
    }
    let empty_refs = ids(&|i| tok.references[i].iter().any(String::is_empty));
    if !empty_refs.is_empty() {
        warnings.push(Warning::new(WarningCode::EmptyReference, empty_refs));
    }
    warnings.extend(out.late_warnings);
    let tokenizer = match opts.tokenizer {
        Tokenizer::Ptb => "tok:ptb-corenlp3.4.1-pycocoevalcap1.2",
        Tokenizer::Pretokenized => "tok:none(pre-tokenized)",
    };
    let mut sig = vec![
        format!("capscore:{}", env!("CARGO_PKG_VERSION")),
        tokenizer.to_owned(),
    ];
    sig.extend(out.signature.into_values());
    let per_image = batch
        .output_order
        .iter()
        .map(|&i| ImageScores {
            image_id: batch.items[i].image_id.raw.clone(),
            scores: out.per_image[i],
        })
        .collect();
    let tokenized = opts.include_tokenized.then(|| {
        batch
            .items
            .iter()
            .zip(tok.candidates.iter().zip(&tok.references))
            .map(|(item, (c, r))| TokenizedItem {
                image_id: item.image_id.raw.clone(),
                candidate: c.clone(),
                references: r.clone(),
            })
            .collect()
    });
    Report {
        aggregate: out.aggregate,
        per_image,
        bleu_totals: out.bleu_totals,
        spice: out.spice,
        signature: sig.join("|"),
        warnings,
        bootstrap,
        splits: None,
        multi_candidate: None,
        tokenized,
        pool: opts.keep_pool.then_some(pool),
        stats: RunStats {
            spice_cached_graphs: prepared.spice.as_ref().map_or(0, |c| c.cached),
            images: n,
        },
    }
}

/// Interns tokenized references (each split into words as BLEU and CIDEr split them, spec
/// COCO §3.4): per image, per reference, the word ids.
pub fn intern_references(
    interner: &mut crate::corpus::Interner,
    references: &[Vec<String>],
) -> Vec<Vec<Vec<u32>>> {
    references
        .iter()
        .map(|refs| {
            refs.iter()
                .map(|s| interner.intern_all(crate::text::split_py_whitespace(s)))
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_names_parse_and_cider_is_not_ambiguous() {
        assert_eq!(
            Metric::parse_list("bleu,cider_d,bleu").unwrap(),
            vec![Metric::Bleu, Metric::CiderD]
        );
        assert_eq!(
            Metric::parse("cider").unwrap_err().code,
            ErrorCode::UnknownMetric
        );
        assert_eq!(
            Metric::parse("spicy").unwrap_err().code,
            ErrorCode::UnknownMetric
        );
        assert!(Metric::parse_list(" , ").is_err());
    }

    /// Regression: METEOR was missing from `Metric::ALL`, so `/readyz` did not list it.
    #[test]
    fn every_metric_is_listed_and_parses_from_its_name() {
        for m in Metric::ALL {
            assert_eq!(Metric::parse(m.name()).unwrap(), m);
            let json = serde_json::to_string(&m).unwrap();
            assert_eq!(serde_json::from_str::<Metric>(&json).unwrap(), m);
        }
    }

    #[test]
    fn an_unknown_metric_keeps_its_code_through_serde() {
        let e = serde_json::from_str::<Vec<Metric>>(r#"["bleu", "spicy"]"#).unwrap_err();
        let coded = coded_error(&e.to_string()).expect("coded");
        assert_eq!(coded.code, ErrorCode::UnknownMetric);
        assert!(coded.message.contains("spicy"), "{}", coded.message);
    }
}
