//! The one dispatcher: [`run`] takes a [`Job`] (candidates, references, what to compute and
//! how) and gives its [`Outcome`]. Every front end (the CLI, the HTTP service, the Python
//! extension) only translates its input into a `Job` and the `Outcome` into its output; the
//! choice between a plain run, a split table, several candidates per image and a paired
//! comparison is made here, and so is the refusal of the combinations that do not go together
//! ([`Job::check`], the one place that refuses them).
//!
//! | kind | computed by | what it gives |
//! | --- | --- | --- |
//! | [`Kind::Plain`] | [`super::score`] | per-image and corpus scores |
//! | [`Kind::Splits`] | `leaderboard.rs` | the whole set plus one corpus per split |
//! | [`Kind::Multi`] | `multi.rs` | one run per candidate index, one value selected per image |
//! | [`Kind::Compare`] | `compare.rs` | A and B on the same images, paired bootstrap and randomization |

use super::compare::{CompareReport, CompareSpec};
use super::leaderboard::SplitBy;
use super::multi::{MultiSpec, Selection};
use super::options::Options;
use super::report::Report;
use super::score::score;
use super::source::{OwnedReferences, ReferenceSource};
use crate::input::{Candidate, ErrorCode, InputError, References};

/// Where a job's references come from.
pub enum Refs<'a> {
    /// References the job owns: with a single run their captions move into the batch instead
    /// of being copied.
    Owned(References),
    /// A source the caller keeps (a registered dataset, or references it needs again).
    Source(&'a dyn ReferenceSource),
}

/// What a job computes.
pub enum Kind<'a> {
    /// Per-image and corpus scores of one result set.
    Plain,
    /// The whole set and each split as its own corpus (nocaps-style tables).
    Splits(SplitBy<'a>),
    /// Several candidates per image: one run per candidate index, one value selected per image.
    Multi(MultiSpec),
    /// The candidates (A, the baseline) against a second result set B on the same images.
    Compare {
        /// The second result set.
        b: Vec<Candidate>,
        /// Resampling settings.
        spec: CompareSpec,
    },
}

impl<'a> Kind<'a> {
    /// The kind that a request's leaderboard options ask for: split labels, several
    /// candidates per image, both or neither. Both together are refused (a split table of
    /// selected values is not defined).
    pub fn of(splits: Option<SplitBy<'a>>, multi: Option<MultiSpec>) -> Result<Self, InputError> {
        match (splits, multi) {
            (Some(_), Some(_)) => Err(invalid(
                "split tables do not combine with several candidates per image".to_owned(),
            )),
            (Some(by), None) => Ok(Kind::Splits(by)),
            (None, Some(spec)) => Ok(Kind::Multi(spec)),
            (None, None) => Ok(Kind::Plain),
        }
    }

    /// How many times the references are scored (the cost model multiplies by it): one run
    /// per candidate index with several candidates per image, two for a comparison.
    pub fn runs(&self, candidates: &[Candidate]) -> u64 {
        match self {
            Kind::Plain | Kind::Splits(_) => 1,
            Kind::Multi(_) => super::multi::candidates_per_image(candidates),
            Kind::Compare { .. } => 2,
        }
    }
}

/// One unit of work for [`run`].
pub struct Job<'a> {
    /// The candidates (for a comparison: system A's).
    pub candidates: Vec<Candidate>,
    /// Their references.
    pub references: Refs<'a>,
    /// What to compute.
    pub kind: Kind<'a>,
    /// Metrics, resources, document frequencies, tokenizer, extras.
    pub options: Options<'a>,
}

/// What a job gives.
#[derive(Debug)]
pub enum Outcome {
    /// A report (plain, split table or several candidates per image).
    Report(Box<Report>),
    /// A paired comparison.
    Comparison(Box<CompareReport>),
}

impl Job<'_> {
    /// Refuses what does not go together, before any work: bootstrap settings out of range;
    /// with several candidates per image, bootstrap intervals, SPICE's explanations and the
    /// tokenized captions (there is no single candidate per image to explain); comparison
    /// settings out of range.
    pub fn check(&self) -> Result<(), InputError> {
        if let Some(b) = &self.options.bootstrap {
            b.check().map_err(invalid)?;
        }
        match &self.kind {
            Kind::Multi(spec) => {
                let o = &self.options;
                let unavailable = [
                    (o.bootstrap.is_some() || o.keep_pool, "bootstrap intervals"),
                    (o.explain, "SPICE's explanations"),
                    (o.include_tokenized, "the tokenized captions"),
                ];
                if let Some((_, what)) = unavailable.iter().find(|(asked, _)| *asked) {
                    return Err(invalid(format!(
                        "{what} are not available with several candidates per image"
                    )));
                }
                if let (Selection::Mean, Some(b)) = (spec.select, &spec.by) {
                    return Err(invalid(format!(
                        "select by {b:?}: only `max` selects by a score (`mean` averages every candidate)"
                    )));
                }
                Ok(())
            }
            Kind::Compare { spec, .. } => spec.check().map_err(invalid),
            Kind::Plain | Kind::Splits(_) => Ok(()),
        }
    }
}

/// Runs a job: checks it ([`Job::check`]), then scores it as its kind says. Runs on the
/// caller's rayon pool (`pool.install(|| engine::run(job))`).
pub fn run(job: Job<'_>) -> Result<Outcome, InputError> {
    job.check()?;
    let Job {
        candidates,
        references,
        kind,
        options,
    } = job;
    match references {
        // One run: the captions move into the batch.
        Refs::Owned(refs) if matches!(kind, Kind::Plain) => {
            dispatch(candidates, &OwnedReferences::new(refs), kind, &options)
        }
        Refs::Owned(refs) => dispatch(candidates, &refs, kind, &options),
        Refs::Source(source) => dispatch(candidates, source, kind, &options),
    }
}

fn dispatch(
    candidates: Vec<Candidate>,
    source: &dyn ReferenceSource,
    kind: Kind<'_>,
    opts: &Options<'_>,
) -> Result<Outcome, InputError> {
    let report = match kind {
        Kind::Plain => score(candidates, source, opts)?,
        Kind::Splits(by) => super::leaderboard::score_splits(candidates, source, opts, &by)?,
        Kind::Multi(spec) => super::multi::score_multi(candidates, source, opts, &spec)?,
        Kind::Compare { b, spec } => {
            return super::compare::compare(candidates, b, source, opts, &spec)
                .map(|c| Outcome::Comparison(Box::new(c)))
        }
    };
    Ok(Outcome::Report(Box::new(report)))
}

fn invalid(message: String) -> InputError {
    InputError::new(ErrorCode::InvalidFormat, message)
}

impl Outcome {
    /// The report, or an internal error when the job was a comparison (a front end that built
    /// a scoring job asks for its report).
    pub fn into_report(self) -> Result<Report, InputError> {
        match self {
            Outcome::Report(r) => Ok(*r),
            Outcome::Comparison(_) => Err(InputError::new(
                ErrorCode::Internal,
                "a comparison where a report was expected",
            )),
        }
    }

    /// The comparison, or an internal error when the job was not one.
    pub fn into_comparison(self) -> Result<CompareReport, InputError> {
        match self {
            Outcome::Comparison(c) => Ok(*c),
            Outcome::Report(_) => Err(InputError::new(
                ErrorCode::Internal,
                "a report where a comparison was expected",
            )),
        }
    }
}
