//! The engine: [`run`] takes a [`Job`] and gives its [`Outcome`]; it is what every front end
//! calls (the CLI, the HTTP service, the Python extension only translate their input into a
//! `Job` and the outcome into their output).
//!
//! | file | owns |
//! | --- | --- |
//! | `job.rs` | [`run`], [`Job`], [`Kind`] (plain, split table, several candidates per image, comparison) and the one check that refuses what does not combine |
//! | `score.rs` | [`score`]: one plain run: join, tokenize once, run the steps, assemble the report |
//! | `options.rs` | [`Options`]: metrics, resources, document frequencies, tokenizer, extras, cancellation |
//! | `step.rs` | what the steps share: the tokenized batch, [`Step`], the context they read and the output they write |
//! | `ngram.rs`, `meteor.rs`, `spice.rs` | the steps: BLEU, ROUGE-L and the CIDEr variants share one pass over n-grams; METEOR; SPICE |
//! | `leaderboard.rs`, `multi.rs`, `compare.rs` | split tables, several candidates per image, paired comparison: built on [`score`] |
//! | `bootstrap.rs` | percentile intervals and the resampling helpers |
//! | `source.rs` | [`ReferenceSource`]: inline references or a registered dataset |
//! | `report.rs` | the one set of output types, serialized and documented |
//! | `metric.rs` | [`Metric`]: names, parsing, output keys |
//! | `pool.rs` | the worker pool a front end runs a job on, and the cap on threads |
//!
//! Imports point down this table's dependencies only: `job` -> `leaderboard`, `multi`,
//! `compare` -> `score` -> the steps -> `step`, `options`, `report`, `source`, `metric`; this
//! file only declares and re-exports.
//!
//! Determinism: per-image work runs in parallel, but every aggregate is reduced sequentially in
//! evaluation order after the parallel part, so the output bytes do not depend on the number of
//! threads. Callers choose the thread pool (`pool.install(|| engine::run(job))`).
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
mod options;
mod pool;
pub mod report;
mod score;
pub mod source;
mod spice;
mod step;

pub use job::{run, Job, Kind, Outcome, Refs};
pub use metric::{coded_error, Metric};
pub(crate) use options::cancelled;
pub use options::{DfChoice, Options, Tokenizer};
pub use pool::{check_threads, max_threads, thread_pool, THREADS_PER_CORE};
pub use report::{
    BleuTotals, ImageScores, Report, RunStats, Scores, SpiceReport, TokenizedItem, Warning,
    WarningCode,
};
pub use score::{caption_tokens_at_most, intern_references, score};
pub use source::{
    tokenize_references, CachedGraphs, DfTableRef, Interned, OwnedReferences, PrepareRequest,
    PreparedRefs, ReferenceSource,
};
pub use step::{Step, Tokenized};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::ErrorCode;

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
