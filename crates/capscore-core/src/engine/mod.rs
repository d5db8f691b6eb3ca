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
pub use options::cancelled;
pub use options::{DfChoice, Options, Progress, Stage, Tokenizer};
pub use pool::{check_threads, max_threads, thread_pool, THREADS_PER_CORE};
pub use report::{
    BleuTotals, ImageScores, Report, RunStats, Scores, SpiceReport, TokenizedItem, Warning,
    WarningCode,
};
pub use score::{caption_tokens_at_most, score};
pub use source::{
    tokenize_reference_texts, tokenize_reference_texts_until, tokenize_references, CachedGraphs,
    DfTableRef, Interned, OwnedReferences, PrepareRequest, PreparedRefs, ReferenceSource,
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

    /// The progress hook (issue 25): the n-gram stage reports 0 first, then once per image
    /// with distinct counts up to the number of images; the report does not change.
    #[test]
    fn progress_counts_every_image_of_the_ngram_stage() {
        let refs = serde_json::json!({
            "1": ["a dog runs on the grass", "a brown dog"],
            "2": ["a cat sleeps on a sofa", "a grey cat"],
            "3": ["a man surfing on a wave", "a surfer"],
        });
        let cands = serde_json::json!([
            {"image_id": 1, "caption": "a dog on grass"},
            {"image_id": 2, "caption": "a cat on a sofa"},
            {"image_id": 3, "caption": "a man on a wave"},
        ]);
        let metrics = [Metric::Bleu, Metric::RougeL, Metric::CiderD];
        let seen = std::sync::Mutex::new(Vec::new());
        let hook = |p: Progress| seen.lock().unwrap().push(p);
        let score_with = |progress: Option<&(dyn Fn(Progress) + Sync)>| {
            let job = Job {
                candidates: crate::input::parse_candidates(&cands).unwrap(),
                references: Refs::Owned(crate::input::parse_references(&refs).unwrap()),
                kind: Kind::Plain,
                options: Options {
                    progress,
                    ..Options::new(&metrics)
                },
            };
            run(job).unwrap().into_report().unwrap()
        };
        let with = score_with(Some(&hook));
        let without = score_with(None);
        assert_eq!(
            serde_json::to_string(&with).unwrap(),
            serde_json::to_string(&without).unwrap()
        );
        let seen = seen.into_inner().unwrap();
        assert_eq!(seen.len(), 4, "{seen:?}");
        assert_eq!(seen[0].done, 0);
        let mut done: Vec<usize> = seen.iter().map(|p| p.done).collect();
        done.sort_unstable();
        assert_eq!(done, [0, 1, 2, 3]);
        assert!(seen
            .iter()
            .all(|p| p.stage == Stage::Ngrams && p.total == 3));
    }

    /// The memory hook (issue 27): called at each stage boundary of a run with the n-gram
    /// metrics (after the batch is assembled, after the raw text is freed, after the
    /// tokenized text is, after the n-gram build and after its scoring); the report does not
    /// change.
    #[test]
    fn release_memory_is_called_between_stages() {
        let refs = serde_json::json!({
            "1": ["a dog runs on the grass", "a brown dog"],
            "2": ["a cat sleeps on a sofa", "a grey cat"],
        });
        let cands = serde_json::json!([
            {"image_id": 2, "caption": "a cat on a sofa"},
            {"image_id": 1, "caption": "a dog on grass"},
        ]);
        let metrics = [Metric::Bleu, Metric::RougeL, Metric::CiderD];
        let calls = std::sync::atomic::AtomicUsize::new(0);
        let hook = || {
            calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        };
        let score_with = |keep_text: bool, release: Option<&(dyn Fn() + Sync)>| {
            let job = Job {
                candidates: crate::input::parse_candidates(&cands).unwrap(),
                references: Refs::Owned(crate::input::parse_references(&refs).unwrap()),
                kind: Kind::Plain,
                options: Options {
                    include_tokenized: keep_text,
                    release_memory: release,
                    ..Options::new(&metrics)
                },
            };
            serde_json::to_string(&run(job).unwrap().into_report().unwrap()).unwrap()
        };
        assert_eq!(score_with(false, Some(&hook)), score_with(false, None));
        assert_eq!(calls.swap(0, std::sync::atomic::Ordering::Relaxed), 5);
        // The report lists the tokenized captions: that text is kept, and not released.
        assert_eq!(score_with(true, Some(&hook)), score_with(true, None));
        assert_eq!(calls.load(std::sync::atomic::Ordering::Relaxed), 4);
    }

    #[test]
    fn an_unknown_metric_keeps_its_code_through_serde() {
        let e = serde_json::from_str::<Vec<Metric>>(r#"["bleu", "spicy"]"#).unwrap_err();
        let coded = coded_error(&e.to_string()).expect("coded");
        assert_eq!(coded.code, ErrorCode::UnknownMetric);
        assert!(coded.message.contains("spicy"), "{}", coded.message);
    }
}
