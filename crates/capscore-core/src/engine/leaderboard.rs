//! Leaderboard tables on top of [`score`](super::score): split tables (nocaps' in-domain,
//! near-domain, out-domain and entire) and EvalAI's result shape.
//!
//! A split table scores the entire set once and then each split's images as their own corpus,
//! exactly as running the scorer (pycocoevalcap) on that split's images alone would: the
//! candidates and references are tokenized as the split's own stream, CIDEr-D's document
//! frequencies come from the split's references (unless a fixed table is chosen), BLEU and
//! METEOR pool over the split. Per-image scores are the entire set's.
//!
//! Must not: read files or know about HTTP.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use serde::Serialize;

use super::options::Options;
pub use super::report::SplitScores;
use super::report::{Report, Scores, WarningCode};
use super::score::score;
use super::source::ReferenceSource;
use crate::input::{Candidate, ErrorCode, ImageKey, InputError};

/// The name of the whole set in split tables and EvalAI results (no split may have it).
pub const ENTIRE: &str = "entire";

/// How images are assigned to splits.
pub struct SplitBy<'a> {
    /// What the labels are (a field name, or `request` for labels given in a request); named
    /// in the signature.
    pub field: &'a str,
    /// The split of each image.
    pub labels: &'a FxHashMap<ImageKey, String>,
}

/// Scores the entire set and each split as its own corpus: the report of the entire set with
/// `splits` filled in and the signature saying how the splits were scored.
pub(crate) fn score_splits(
    candidates: Vec<Candidate>,
    refs: &dyn ReferenceSource,
    opts: &Options<'_>,
    by: &SplitBy<'_>,
) -> Result<Report, InputError> {
    let mut groups: BTreeMap<&str, Vec<Candidate>> = BTreeMap::new();
    let mut unlabelled = Vec::new();
    for c in &candidates {
        match by.labels.get(&c.image_id.key) {
            Some(l) if l == ENTIRE => {
                return Err(InputError::new(
                    ErrorCode::InvalidFormat,
                    format!(
                        "image_id {}: the split name {ENTIRE:?} is reserved for the whole set",
                        c.image_id
                    ),
                ))
            }
            Some(l) => groups.entry(l.as_str()).or_default().push(c.clone()),
            None => unlabelled.push(c.image_id.to_string()),
        }
    }
    if !unlabelled.is_empty() {
        let n = unlabelled.len();
        unlabelled.truncate(10);
        return Err(InputError::new(
            ErrorCode::MissingSplit,
            format!(
                "{n} scored image(s) have no {:?} to split by: image_id {}{}",
                by.field,
                unlabelled.join(", "),
                if n > 10 { ", ..." } else { "" }
            ),
        ));
    }
    let mut report = score(candidates, refs, opts)?;
    let split_opts = Options {
        explain: false,
        include_tokenized: false,
        require_complete: false,
        // The splits' runs borrow the references and are small: nothing to return.
        release_memory: None,
        ..*opts
    };
    let mut splits = BTreeMap::new();
    for (name, cands) in groups {
        let images = cands.len();
        let r = score(cands, refs, &split_opts)?;
        splits.insert(
            name.to_owned(),
            SplitScores {
                images,
                aggregate: r.aggregate,
                bleu_totals: r.bleu_totals,
                bootstrap: r.bootstrap,
                // A split is a part of the submission by design: not a partial one.
                warnings: r
                    .warnings
                    .into_iter()
                    .filter(|w| w.code != WarningCode::PartialResults)
                    .collect(),
            },
        );
    }
    report.signature.push_str(&format!(
        "|splits:{}(each split scored as its own corpus)",
        by.field
    ));
    report.splits = Some(splits);
    Ok(report)
}

/// EvalAI's result shape: `{"result": [{"<split>": {"<metric>": value, ...}}, ...,
/// {"entire": {...}}]}`, splits by name, then the entire set.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EvalAi {
    /// One single-key object per split, by name, then `entire`.
    pub result: Vec<BTreeMap<String, Scores>>,
}

/// The report's aggregates in EvalAI's result shape.
pub fn evalai(report: &Report) -> EvalAi {
    let mut result: Vec<BTreeMap<String, Scores>> = report
        .splits
        .iter()
        .flatten()
        .map(|(name, s)| BTreeMap::from([(name.clone(), s.aggregate)]))
        .collect();
    result.push(BTreeMap::from([(ENTIRE.to_owned(), report.aggregate)]));
    EvalAi { result }
}
