//! `capscore._capscore`: the native half of the Python package. Thin: it converts Python
//! values, releases the GIL and calls the capscore library ([`capscore_core::engine::score`], the
//! tokenizer, [`capscore_core::reward`], the resource cache). The Python modules in `capscore/`
//! give it pycocoevalcap's shape.
//!
//! Must not: compute anything the library does not (no second implementation of a metric).

mod texts;
mod workers;

use std::path::PathBuf;
use std::time::Duration;

/// mimalloc for the extension's own (Rust) allocations, as the CLI uses it: the engine
/// allocates many vectors per call, and glibc malloc hands large ones back to the system
/// after every call.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::sync::{Arc, Mutex};

use numpy::{PyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rayon::prelude::*;

use capscore_core::dataset::Dataset;
use capscore_core::engine::bootstrap::BootstrapSpec;
use capscore_core::engine::{
    self, tokenize_reference_texts_until, BleuTotals, DfChoice, DfTableRef, Metric, Options,
    PrepareRequest, PreparedRefs, ReferenceSource, Report, Tokenizer,
};
use capscore_core::input::{self, Batch, Candidate, ErrorCode, ImageId, InputError, Item};
use capscore_core::metrics::meteor::Meteor;
use capscore_core::metrics::spice::Spice;
use capscore_core::metrics::{bleu, numpy_mean};
use capscore_core::pretokenized;
use capscore_core::resources::{ResourceArgs, ResourceError};
use capscore_core::reward::{DfCounts, Reward, RewardError, RewardScorer};

/// The Python exception for a coded error: `capscore.CapscoreError(message, code)` (defined
/// in Python, so that Python code can raise it too).
fn coded(code: &str, message: impl Into<String>) -> PyErr {
    let message = message.into();
    Python::with_gil(|py| {
        let made = py
            .import("capscore._errors")
            .and_then(|m| m.getattr("CapscoreError"))
            .and_then(|cls| cls.call1((message.as_str(), code)));
        match made {
            Ok(err) => PyErr::from_value(err),
            Err(e) => e,
        }
    })
}

fn input_err(e: InputError) -> PyErr {
    coded(e.code.as_str(), e.message)
}

fn resource_err(e: ResourceError) -> PyErr {
    coded(ErrorCode::MetricUnavailable.as_str(), e.to_string())
}

fn reward_err(e: RewardError) -> PyErr {
    coded(ErrorCode::InvalidFormat.as_str(), e.0)
}

/// Loaded resources, kept per cache folder for the life of the process.
#[derive(Default)]
struct Loaded {
    dir: Option<PathBuf>,
    meteor: Option<Arc<Meteor>>,
    spice: Option<Arc<Spice>>,
}

static LOADED: Mutex<Option<Loaded>> = Mutex::new(None);

fn resource_args(cache_dir: Option<String>, offline: bool) -> ResourceArgs {
    ResourceArgs {
        cache_dir: cache_dir.map(PathBuf::from),
        offline,
        on_step: None,
    }
}

/// METEOR's and SPICE's loaded resources, each when asked for.
type LoadedPair = (Option<Arc<Meteor>>, Option<Arc<Spice>>);

/// METEOR and SPICE as `metrics` needs them (loaded once per cache folder; fetched first
/// unless offline).
fn resources(metrics: &[Metric], args: &ResourceArgs) -> PyResult<LoadedPair> {
    let want_meteor = metrics.contains(&Metric::Meteor);
    let want_spice = metrics.contains(&Metric::Spice);
    if !want_meteor && !want_spice {
        return Ok((None, None));
    }
    let dir = args.dir();
    // The lock is held only to look and to store, never while loading: a fork from another
    // thread during a load (0.1 s and more) would leave it held in the child for good.
    let (mut meteor, mut spice) = match LOADED.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
        Some(l) if l.dir.as_ref() == Some(&dir) => (l.meteor.clone(), l.spice.clone()),
        _ => (None, None),
    };
    if (want_meteor || want_spice) && meteor.is_none() {
        match args.load_meteor().map_err(resource_err)? {
            Some(m) => meteor = Some(Arc::new(m)),
            None if want_meteor => {
                return Err(coded(
                    ErrorCode::MetricUnavailable.as_str(),
                    format!(
                        "METEOR's resources are missing from {} (offline): run capscore.fetch()",
                        dir.display()
                    ),
                ))
            }
            None => {}
        }
    }
    if want_spice && spice.is_none() {
        let s = args.load_spice(meteor.clone()).map_err(resource_err)?;
        spice = Some(Arc::new(s));
    }
    {
        let mut guard = LOADED.lock().unwrap_or_else(|e| e.into_inner());
        let loaded = guard.get_or_insert_with(Loaded::default);
        if loaded.dir.as_ref() != Some(&dir) {
            *loaded = Loaded {
                dir: Some(dir.clone()),
                ..Loaded::default()
            };
        }
        // A thread that loaded the same folder meanwhile keeps its copy (the same data).
        if loaded.meteor.is_none() {
            loaded.meteor = meteor.clone();
        }
        if loaded.spice.is_none() {
            loaded.spice = spice.clone();
        }
    }
    Ok((
        meteor.filter(|_| want_meteor || want_spice),
        spice.filter(|_| want_spice),
    ))
}

fn parse_metrics(metrics: Option<Vec<String>>) -> PyResult<Vec<Metric>> {
    match metrics {
        None => Ok(Metric::DEFAULT.to_vec()),
        Some(list) => Metric::normalize(list.iter().map(|m| Metric::parse(m))).map_err(input_err),
    }
}

/// Runs `f` without the GIL: on the calling thread (its parallel steps on rayon's global pool),
/// or in a process forked after its parent's first call, on that process's own pool
/// ([`workers`]). `Internal` when such a pool's threads cannot be started.
fn detached<T: Send>(py: Python<'_>, f: impl FnOnce() -> T + Send) -> PyResult<T> {
    py.allow_threads(|| workers::run(f)).map_err(input_err)
}

/// [`detached`] for the engine's long calls, which Ctrl-C can stop: `f` runs on a thread of
/// its own (its parallel steps on the pool, as [`detached`]'s) while the calling thread waits
/// with the GIL released and, every 50 ms, lets Python run its signal handlers. When one raises
/// (`KeyboardInterrupt`), the stop flag `f` receives turns true, the engine's long steps give
/// up within milliseconds, and the handler's exception is raised once `f` has returned. Before
/// this, Ctrl-C was seen only when the whole computation had finished.
fn interruptible<T: Send>(
    py: Python<'_>,
    f: impl FnOnce(&(dyn Fn() -> bool + Sync)) -> T + Send,
) -> PyResult<T> {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Condvar;
    let stop = AtomicBool::new(false);
    let stopped = || stop.load(Ordering::Relaxed);
    // Set (and signalled) when `f` has returned, or unwound.
    let finished = (Mutex::new(false), Condvar::new());
    struct Done<'d>(&'d (Mutex<bool>, Condvar));
    impl Drop for Done<'_> {
        fn drop(&mut self) {
            *self.0 .0.lock().unwrap_or_else(|e| e.into_inner()) = true;
            self.0 .1.notify_all();
        }
    }
    std::thread::scope(|scope| {
        let stopped = &stopped;
        let finished = &finished;
        let worker = std::thread::Builder::new()
            .name("capscore-call".into())
            // The stack of a main thread (the caller's usual one), not a spawned thread's 2 MiB.
            .stack_size(8 << 20)
            .spawn_scoped(scope, move || {
                let _done = Done(finished);
                workers::run(|| f(stopped))
            })
            .map_err(|e| coded(ErrorCode::Internal.as_str(), format!("a thread: {e}")))?;
        let mut raised = None;
        loop {
            let done = py.allow_threads(|| {
                let (flag, signal) = finished;
                let guard = flag.lock().unwrap_or_else(|e| e.into_inner());
                let (guard, _) = signal
                    .wait_timeout_while(guard, Duration::from_millis(50), |done| !*done)
                    .unwrap_or_else(|e| e.into_inner());
                *guard
            });
            if done {
                break;
            }
            if raised.is_none() {
                if let Err(e) = py.check_signals() {
                    stop.store(true, Ordering::Relaxed);
                    raised = Some(e);
                }
            }
        }
        let out = match worker.join() {
            Ok(out) => out,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        match raised {
            Some(e) => Err(e),
            None => out.map_err(input_err),
        }
    })
}

/// Runs `f` on a pool of `threads` threads (the global pool when `None`).
fn on_pool<T: Send>(threads: Option<usize>, f: impl FnOnce() -> T + Send) -> PyResult<T> {
    match threads {
        None => Ok(f()),
        Some(n) => Ok(engine::thread_pool(Some(n)).map_err(input_err)?.install(f)),
    }
}

struct Job<'a> {
    metrics: Vec<Metric>,
    meteor: Option<Arc<Meteor>>,
    spice: Option<Arc<Spice>>,
    explain: bool,
    tokenized: bool,
    pretokenized: bool,
    bootstrap: Option<BootstrapSpec>,
    df: Option<DfTableRef<'a>>,
    /// True once the caller asked to stop (see [`interruptible`]).
    cancel: &'a (dyn Fn() -> bool + Sync),
}

impl Job<'_> {
    fn run(
        &self,
        candidates: Vec<Candidate>,
        refs: &dyn ReferenceSource,
        threads: Option<usize>,
    ) -> PyResult<Report> {
        let job = engine::Job {
            candidates,
            references: engine::Refs::Source(refs),
            kind: engine::Kind::Plain,
            options: self.options(),
        };
        on_pool(threads, || {
            engine::run(job).and_then(engine::Outcome::into_report)
        })?
        .map_err(input_err)
    }

    fn options(&self) -> Options<'_> {
        Options {
            meteor: self.meteor.as_deref(),
            spice: self.spice.as_deref(),
            explain: self.explain,
            include_tokenized: self.tokenized,
            tokenizer: if self.pretokenized {
                Tokenizer::Pretokenized
            } else {
                Tokenizer::Ptb
            },
            bootstrap: self.bootstrap,
            df: self.df.map_or(DfChoice::Batch, DfChoice::Table),
            cancel: Some(self.cancel),
            ..Options::new(&self.metrics)
        }
    }
}

/// The leaderboard options of [`score_json`].
#[derive(Default)]
struct Board {
    /// `split_by`: a label field of the references' `images[]`.
    split_by: Option<String>,
    /// `strict`: every image of the references needs a result.
    strict: bool,
    /// `multi_candidate`: (select, by).
    multi: Option<(String, Option<String>)>,
    /// `format="evalai"`.
    evalai: bool,
}

impl Board {
    /// Scores `cands` against `refs` (whose JSON text is `text`, for split labels: kept when
    /// `split_by` is set).
    fn score(
        &self,
        job: &Job<'_>,
        text: Option<&str>,
        refs: &input::References,
        cands: Vec<Candidate>,
        threads: Option<usize>,
    ) -> PyResult<Report> {
        let bad = |m: String| input_err(InputError::new(ErrorCode::InvalidFormat, m));
        let opts = Options {
            require_complete: self.strict,
            ..job.options()
        };
        let multi = match &self.multi {
            None => None,
            Some((select, by)) => Some(engine::multi::MultiSpec {
                select: match select.as_str() {
                    "max" => engine::multi::Selection::Max,
                    "mean" => engine::multi::Selection::Mean,
                    other => {
                        return Err(bad(format!(
                            "multi_candidate: select {other:?}; expected \"max\" or \"mean\""
                        )))
                    }
                },
                by: by.clone(),
            }),
        };
        let labels = match &self.split_by {
            None => None,
            Some(field) => {
                let text = text.ok_or_else(|| {
                    coded(
                        ErrorCode::Internal.as_str(),
                        "split_by: the references' text was not kept",
                    )
                })?;
                let v = input::parse_json(text, "references").map_err(input_err)?;
                let fields = input::ImageFields::field_of(&v, field).map_err(input_err)?;
                let labels = fields
                    .get(field)
                    .cloned()
                    .ok_or_else(|| bad(format!("split_by {field:?}")))?;
                Some((field.as_str(), labels))
            }
        };
        let splits = labels
            .as_ref()
            .map(|(field, labels)| engine::leaderboard::SplitBy { field, labels });
        let job = engine::Job {
            candidates: cands,
            references: engine::Refs::Source(refs),
            kind: engine::Kind::of(splits, multi).map_err(input_err)?,
            options: opts,
        };
        on_pool(threads, || {
            engine::run(job).and_then(engine::Outcome::into_report)
        })?
        .map_err(input_err)
    }
}

/// Aligned lists as a reference source: image `i` is `candidates[i]` against `references[i]`,
/// in that order (evaluation order = output order), ids `0..n`. Its references move into the
/// job instead of being copied (one job per source).
struct Aligned(Mutex<Option<Vec<Vec<String>>>>);

impl Aligned {
    /// The source and the candidates of aligned lists (of equal lengths).
    fn new(candidates: Vec<String>, references: Vec<Vec<String>>) -> (Aligned, Vec<Candidate>) {
        let cands = candidates
            .into_iter()
            .enumerate()
            .map(|(i, caption)| Candidate {
                image_id: ImageId::from_value(&serde_json::Value::from(i)).expect("an integer id"),
                caption,
            })
            .collect();
        (Aligned(Mutex::new(Some(references))), cands)
    }

    fn taken() -> InputError {
        InputError::new(ErrorCode::Internal, "aligned references were already used")
    }
}

impl ReferenceSource for Aligned {
    fn assemble(&self, candidates: Vec<Candidate>) -> Result<Batch, InputError> {
        if candidates.is_empty() {
            return Err(InputError::new(
                ErrorCode::EmptyResults,
                "results: no candidate captions (empty results)",
            ));
        }
        let guard = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let refs = guard.as_ref().ok_or_else(Aligned::taken)?;
        let missing: Vec<String> = refs
            .iter()
            .enumerate()
            .filter(|(_, r)| r.is_empty())
            .map(|(i, _)| i.to_string())
            .collect();
        if !missing.is_empty() {
            return Err(InputError::new(
                ErrorCode::MissingReferences,
                format!("no reference captions for image_id {}", missing.join(", ")),
            ));
        }
        let n = candidates.len();
        Ok(Batch {
            items: candidates
                .into_iter()
                .map(|c| Item {
                    image_id: c.image_id,
                    candidate: c.caption,
                    references: Vec::new(),
                })
                .collect(),
            output_order: (0..n).collect(),
            // Every image of aligned lists has its candidate.
            missing: Default::default(),
        })
    }

    fn prepare(
        &self,
        _batch: &Batch,
        req: &PrepareRequest<'_>,
    ) -> Result<PreparedRefs<'_>, InputError> {
        let refs = self
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .ok_or_else(Aligned::taken)?;
        Ok(PreparedRefs::plain(if req.tokenize {
            let images: Vec<&[String]> = refs.iter().map(Vec::as_slice).collect();
            tokenize_reference_texts_until(&images, req.cancel).ok_or_else(engine::cancelled)?
        } else {
            refs.iter().collect()
        }))
    }
}

/// Scores a batch given as JSON texts in any format the CLI reads (COCO annotation file or
/// `{id: [captions]}` references; COCO results or `{id: caption}` candidates). Returns the
/// report as JSON text: the same structure as `capscore score`.
#[pyfunction]
#[pyo3(signature = (references, candidates, metrics=None, threads=None, explain=false, tokenized=false, cache_dir=None, offline=false, bootstrap=None, df_from=None, split_by=None, strict=false, multi_candidate=None, evalai=false, references_path=None))]
#[allow(clippy::too_many_arguments)]
fn score_json(
    py: Python<'_>,
    references: Option<String>,
    candidates: String,
    metrics: Option<Vec<String>>,
    threads: Option<usize>,
    explain: bool,
    tokenized: bool,
    cache_dir: Option<String>,
    offline: bool,
    bootstrap: Option<(u32, u64, f64)>,
    df_from: Option<(String, String)>,
    split_by: Option<String>,
    strict: bool,
    multi_candidate: Option<(String, Option<String>)>,
    evalai: bool,
    references_path: Option<String>,
) -> PyResult<String> {
    let board = Board {
        split_by,
        strict,
        multi: multi_candidate,
        evalai,
    };
    // A thread count over the cap is refused before anything is loaded or fetched.
    engine::check_threads(threads).map_err(input_err)?;
    let metrics = parse_metrics(metrics)?;
    let args = resource_args(cache_dir, offline);
    // Checked with the rest of the job (engine::Job::check).
    let bootstrap = bootstrap.map(|(samples, seed, level)| BootstrapSpec {
        samples,
        seed,
        level,
    });
    interruptible(py, |cancel| {
        // A references file is read as the CLI reads it: a COCO annotation file block by
        // block, its text never held whole (issue 27), unless `split_by` reads its labels. The
        // text is kept only for that.
        let keep_text = board.split_by.is_some();
        let (refs, text) = match (references_path, references) {
            (Some(path), _) if !keep_text => {
                let path = std::path::Path::new(&path);
                let refs = capscore_core::files::read_references(path, "references", None)
                    .map_err(input_err)?;
                (refs, None)
            }
            (Some(path), _) => {
                let path = std::path::Path::new(&path);
                let text =
                    capscore_core::files::read_text(path, "references").map_err(input_err)?;
                let refs = input::parse_references_text(&text, "references").map_err(input_err)?;
                (refs, Some(text))
            }
            (None, text) => {
                let text = text.unwrap_or_default();
                let refs = input::parse_references_text(&text, "references").map_err(input_err)?;
                (refs, keep_text.then_some(text))
            }
        };
        let cands = input::parse_candidates_text(&candidates, "candidates").map_err(input_err)?;
        drop(candidates);
        let df_source = match df_from {
            Some((name, text)) => {
                let r = input::parse_references_text(&text, "df_from").map_err(input_err)?;
                Some(on_pool(threads, || Dataset::build(&name, r, 0))?.map_err(input_err)?)
            }
            None => None,
        };
        let (meteor, spice) = resources(&metrics, &args)?;
        let job = Job {
            metrics,
            meteor,
            spice,
            explain,
            tokenized,
            pretokenized: false,
            bootstrap,
            df: df_source.as_ref().and_then(|d| d.df_table()),
            cancel,
        };
        let report = board.score(&job, text.as_deref(), &refs, cands, threads)?;
        let text = if board.evalai {
            serde_json::to_string_pretty(&engine::leaderboard::evalai(&report))
        } else {
            report.to_string_pretty()
        };
        text.map_err(|e| coded(ErrorCode::Internal.as_str(), e.to_string()))
    })?
}

/// Compares two result sets on the same images (`capscore compare`): JSON texts in, the
/// comparison's JSON text out.
#[pyfunction]
#[pyo3(signature = (references, a, b, metrics=None, samples=1000, trials=1000, seed=0, level=0.95, threads=None, cache_dir=None, offline=false))]
#[allow(clippy::too_many_arguments)]
fn compare_json(
    py: Python<'_>,
    references: String,
    a: String,
    b: String,
    metrics: Option<Vec<String>>,
    samples: u32,
    trials: u32,
    seed: u64,
    level: f64,
    threads: Option<usize>,
    cache_dir: Option<String>,
    offline: bool,
) -> PyResult<String> {
    // A thread count over the cap is refused before anything is loaded or fetched.
    engine::check_threads(threads).map_err(input_err)?;
    let metrics = parse_metrics(metrics)?;
    let args = resource_args(cache_dir, offline);
    let spec = engine::compare::CompareSpec {
        samples,
        trials,
        seed,
        level,
    };
    interruptible(py, |cancel| {
        let refs = input::parse_references_text(&references, "references").map_err(input_err)?;
        let a = input::parse_candidates_text(&a, "a").map_err(input_err)?;
        let b = input::parse_candidates_text(&b, "b").map_err(input_err)?;
        let (meteor, spice) = resources(&metrics, &args)?;
        let opts = Options {
            meteor: meteor.as_deref(),
            spice: spice.as_deref(),
            cancel: Some(cancel),
            ..Options::new(&metrics)
        };
        let job = engine::Job {
            candidates: a,
            references: engine::Refs::Owned(refs),
            kind: engine::Kind::Compare { b, spec },
            options: opts,
        };
        let report = on_pool(threads, || {
            engine::run(job).and_then(engine::Outcome::into_comparison)
        })?
        .map_err(input_err)?;
        serde_json::to_string_pretty(&report)
            .map_err(|e| coded(ErrorCode::Internal.as_str(), e.to_string()))
    })?
}

/// Scores aligned lists (image `i`: `candidates[i]` against `references[i]`). Returns
/// `(aggregate, columns, extras)`: the aggregate scores by pycocoevalcap key, each key's
/// per-image values as a float64 array in input order, and a dict with `bleu_totals` (when
/// BLEU ran: testlen, reflen, guess, correct, ratio) and `report` (when `full`: the whole report
/// as JSON text).
#[pyfunction]
#[pyo3(signature = (candidates, references, metrics=None, pretokenized=false, threads=None, full=false, cache_dir=None, offline=false))]
#[allow(clippy::too_many_arguments)]
fn score_lists<'py>(
    py: Python<'py>,
    candidates: Vec<String>,
    references: Vec<Vec<String>>,
    metrics: Option<Vec<String>>,
    pretokenized: bool,
    threads: Option<usize>,
    full: bool,
    cache_dir: Option<String>,
    offline: bool,
) -> PyResult<(Bound<'py, PyDict>, Bound<'py, PyDict>, Bound<'py, PyDict>)> {
    if candidates.len() != references.len() {
        return Err(coded(
            ErrorCode::InvalidFormat.as_str(),
            format!(
                "{} candidates but {} reference lists",
                candidates.len(),
                references.len()
            ),
        ));
    }
    // A thread count over the cap is refused before anything is loaded or fetched.
    engine::check_threads(threads).map_err(input_err)?;
    let metrics = parse_metrics(metrics)?;
    let args = resource_args(cache_dir, offline);
    let (report, json) = interruptible(py, |cancel| -> PyResult<(Report, Option<String>)> {
        let (meteor, spice) = resources(&metrics, &args)?;
        let (refs, cands) = Aligned::new(candidates, references);
        let job = Job {
            metrics,
            meteor,
            spice,
            explain: false,
            tokenized: false,
            pretokenized,
            bootstrap: None,
            df: None,
            cancel,
        };
        let report = job.run(cands, &refs, threads)?;
        let json = if full {
            Some(
                report
                    .to_string_pretty()
                    .map_err(|e| coded(ErrorCode::Internal.as_str(), e.to_string()))?,
            )
        } else {
            None
        };
        Ok((report, json))
    })??;
    let aggregate = PyDict::new(py);
    for (k, v) in report.aggregate.entries() {
        aggregate.set_item(k, v)?;
    }
    let columns = PyDict::new(py);
    if let Some(first) = report.per_image.first() {
        for (k, _) in first.scores.entries() {
            let col: Vec<f64> = report
                .per_image
                .iter()
                .map(|r| r.scores.get(k).unwrap_or(f64::NAN))
                .collect();
            columns.set_item(k, PyArray1::from_vec(py, col))?;
        }
    }
    let extras = PyDict::new(py);
    if let Some(t) = &report.bleu_totals {
        extras.set_item("bleu_totals", bleu_totals(py, t)?)?;
    }
    if let Some(json) = json {
        extras.set_item("report", json)?;
    }
    Ok((aggregate, columns, extras))
}

/// BLEU's pooled statistics as pycocoevalcap prints them (`testlen`, `reflen`, `guess`,
/// `correct`) and `ratio`.
fn bleu_totals<'py>(py: Python<'py>, t: &BleuTotals) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("testlen", t.testlen)?;
    d.set_item("reflen", t.reflen)?;
    d.set_item("guess", t.guess.to_vec())?;
    d.set_item("correct", t.correct.to_vec())?;
    d.set_item("ratio", t.ratio)?;
    Ok(d)
}

/// pycocoevalcap's `Bleu(n).compute_score(gts, res)` (tokenized captions): `(score, scores,
/// totals)`, `score[k]` the corpus BLEU-(k+1), `scores[k]` the per-image values in `gts`
/// order, `totals` the pooled statistics. `None` when `gts` / `res` are not plain dicts of
/// lists of `str` in pycocoevalcap's shape (the caller then takes the general path, which
/// raises the errors).
#[pyfunction]
#[allow(clippy::type_complexity)]
fn bleu_dicts<'py>(
    py: Python<'py>,
    gts: &Bound<'py, PyAny>,
    res: &Bound<'py, PyAny>,
    n: usize,
) -> PyResult<Option<(Vec<f64>, Vec<Vec<f64>>, Bound<'py, PyDict>)>> {
    let Some(texts) = texts::GtsRes::read(py, gts, res)? else {
        return Ok(None);
    };
    let n = n.clamp(1, 4);
    let caps = texts.captions();
    let (total, per_image) = detached(py, || {
        let stats = pretokenized::bleu(&caps);
        let per_image: Vec<[f64; 4]> = if stats.len() < 1024 {
            stats.iter().map(|s| s.scores()).collect()
        } else {
            stats
                .par_iter()
                .with_min_len(256)
                .map(|s| s.scores())
                .collect()
        };
        (bleu::pool(&stats), per_image)
    })?;
    let scores = (0..n)
        .map(|k| per_image.iter().map(|s| s[k]).collect())
        .collect();
    let totals = bleu_totals(py, &(&total).into())?;
    Ok(Some((total.scores()[..n].to_vec(), scores, totals)))
}

/// pycocoevalcap's `Rouge().compute_score(gts, res)` (tokenized captions): `(mean, scores)`
/// with numpy's mean and the per-image float64 array in `gts` order; `None` as for
/// [`bleu_dicts`].
#[pyfunction]
fn rouge_dicts<'py>(
    py: Python<'py>,
    gts: &Bound<'py, PyAny>,
    res: &Bound<'py, PyAny>,
) -> PyResult<Option<(f64, Bound<'py, PyArray1<f64>>)>> {
    let Some(texts) = texts::GtsRes::read(py, gts, res)? else {
        return Ok(None);
    };
    let caps = texts.captions();
    let scores = detached(py, || pretokenized::rouge_l(&caps))?;
    Ok(Some((numpy_mean(&scores), PyArray1::from_vec(py, scores))))
}

/// pycocoevalcap's `Cider().compute_score(gts, res)` (tokenized captions; document
/// frequencies over these references), by [`pretokenized::cider_d`] on the borrowed text:
/// `(mean, scores)` as for [`rouge_dicts`]; `None` as for [`bleu_dicts`], and when no
/// reference has a word.
#[pyfunction]
fn cider_dicts<'py>(
    py: Python<'py>,
    gts: &Bound<'py, PyAny>,
    res: &Bound<'py, PyAny>,
) -> PyResult<Option<(f64, Bound<'py, PyArray1<f64>>)>> {
    let Some(texts) = texts::GtsRes::read(py, gts, res)? else {
        return Ok(None);
    };
    let caps = texts.captions();
    // `None` (no reference has a word): the general path raises the engine's error.
    let Some((mean, scores)) = detached(py, || pretokenized::cider_d(&caps))? else {
        return Ok(None);
    };
    Ok(Some((mean, PyArray1::from_vec(py, scores))))
}

/// The text of an input file, read as the CLI reads it: plain or gzip-compressed (with the
/// CLI's bound on expansion), UTF-8; errors carry the CLI's codes.
#[pyfunction]
fn read_text(py: Python<'_>, path: String, what: String) -> PyResult<String> {
    py.allow_threads(|| capscore_core::files::read_text(std::path::Path::new(&path), &what))
        .map_err(input_err)
}

/// Tokenizes captions as ONE stream, exactly as pycocoevalcap's PTBTokenizer step does
/// (punctuation filter included); one output per input, same order.
#[pyfunction]
fn tokenize(py: Python<'_>, captions: Vec<String>) -> PyResult<Vec<String>> {
    detached(py, || capscore_core::text::ptb::tokenize_stream(&captions))
}

/// Fetches (downloads, verifies, converts) METEOR's and SPICE's data into the cache; returns
/// the cache folder.
#[pyfunction]
#[pyo3(signature = (cache_dir=None))]
fn fetch(py: Python<'_>, cache_dir: Option<String>) -> PyResult<String> {
    let args = resource_args(cache_dir, false);
    detached(py, || {
        let dir = args.dir();
        capscore_core::resources::fetch::meteor(&dir).map_err(resource_err)?;
        capscore_core::resources::fetch::nlp(&dir).map_err(resource_err)?;
        Ok(dir.display().to_string())
    })?
}

/// The SCST reward scorer (see `capscore.CiderD` for the Python-facing documentation).
#[pyclass(module = "capscore._capscore", name = "RewardScorer")]
struct PyRewardScorer {
    inner: RewardScorer,
    tokenize: bool,
}

/// CIDEr-D rewards, and BLEU-4 rewards when asked for.
type Rewards<'py> = (Bound<'py, PyArray1<f64>>, Option<Bound<'py, PyArray1<f64>>>);

fn rewards_out<'py>(py: Python<'py>, r: Vec<Reward>, bleu4: bool) -> PyResult<Rewards<'py>> {
    let cider: Vec<f64> = r.iter().map(|x| x.cider_d).collect();
    let bleu = bleu4.then(|| {
        let b: Vec<f64> = r.iter().map(|x| x.bleu4.unwrap_or(f64::NAN)).collect();
        PyArray1::from_vec(py, b)
    });
    Ok((PyArray1::from_vec(py, cider), bleu))
}

fn maybe_tokenize(tokenize: bool, texts: Vec<String>) -> Vec<String> {
    if tokenize {
        capscore_core::text::ptb::tokenize_stream(&texts)
    } else {
        texts
    }
}

#[pymethods]
impl PyRewardScorer {
    /// A scorer from a table given as counts (`ngrams`: list of (tuple of words, count),
    /// `ref_len`: the count whose log is used), or from reference lists (`references`).
    #[new]
    #[pyo3(signature = (ngrams=None, ref_len=None, references=None, tokenize=true))]
    fn new(
        py: Python<'_>,
        ngrams: Option<Vec<(Vec<String>, f64)>>,
        ref_len: Option<f64>,
        references: Option<Vec<Vec<String>>>,
        tokenize: bool,
    ) -> PyResult<Self> {
        let table = detached(py, || match (ngrams, ref_len, references) {
            (Some(ngrams), Some(ref_len), None) => DfCounts::from_counts(
                ngrams
                    .iter()
                    .map(|(g, c)| (g.iter().map(String::as_str).collect(), *c)),
                ref_len,
            ),
            (None, None, Some(images)) => {
                let flat: Vec<usize> = images.iter().map(Vec::len).collect();
                let texts = maybe_tokenize(tokenize, images.into_iter().flatten().collect());
                let mut it = texts.into_iter();
                let images: Vec<Vec<String>> = flat
                    .iter()
                    .map(|&n| it.by_ref().take(n).collect())
                    .collect();
                DfCounts::from_references(&images)
            }
            _ => Err(RewardError(
                "give either ngrams and ref_len, or references".into(),
            )),
        })?;
        Ok(PyRewardScorer {
            inner: RewardScorer::new(table.map_err(reward_err)?),
            tokenize,
        })
    }

    /// Prepares the references (a list of reference lists; image `k` is index `k`).
    fn set_references(&mut self, py: Python<'_>, references: Vec<Vec<String>>) -> PyResult<()> {
        let tokenize = self.tokenize;
        let inner = &mut self.inner;
        detached(py, || {
            let sizes: Vec<usize> = references.iter().map(Vec::len).collect();
            let texts = maybe_tokenize(tokenize, references.into_iter().flatten().collect());
            let mut it = texts.into_iter();
            let images: Vec<Vec<String>> = sizes
                .iter()
                .map(|&n| it.by_ref().take(n).collect())
                .collect();
            inner.set_references(&images)
        })?
        .map_err(reward_err)
    }

    /// Number of prepared images.
    #[getter]
    fn image_count(&self) -> usize {
        self.inner.image_count()
    }

    /// Number of n-grams in the document-frequency table.
    #[getter]
    fn table_size(&self) -> usize {
        self.inner.table().len()
    }

    /// `ln(ref_len)`.
    #[getter]
    fn ln_ref_len(&self) -> f64 {
        self.inner.table().ln_ref_len()
    }

    /// Rewards of candidate texts; returns (cider_d array, bleu4 array or None).
    #[pyo3(signature = (candidates, image_index, bleu4=false))]
    fn score<'py>(
        &self,
        py: Python<'py>,
        candidates: Vec<String>,
        image_index: Vec<usize>,
        bleu4: bool,
    ) -> PyResult<Rewards<'py>> {
        let tokenize = self.tokenize;
        let inner = &self.inner;
        let r = detached(py, || {
            let cands = maybe_tokenize(tokenize, candidates);
            inner.score(&cands, &image_index, bleu4)
        })?
        .map_err(reward_err)?;
        rewards_out(py, r, bleu4)
    }

    /// Rewards of token-id rows (a C-contiguous int64 B x T array).
    #[pyo3(signature = (ids, image_index, eos_id=0, bleu4=false))]
    fn score_ids<'py>(
        &self,
        py: Python<'py>,
        ids: PyReadonlyArray2<'py, i64>,
        image_index: Vec<usize>,
        eos_id: i64,
        bleu4: bool,
    ) -> PyResult<Rewards<'py>> {
        let width = ids.shape()[1];
        let flat = ids.as_slice().map_err(|_| {
            coded(
                ErrorCode::InvalidFormat.as_str(),
                "ids must be a C-contiguous array",
            )
        })?;
        let inner = &self.inner;
        let r = detached(py, || {
            inner.score_ids(flat, width, &image_index, eos_id, bleu4)
        })?
        .map_err(reward_err)?;
        rewards_out(py, r, bleu4)
    }
}

/// The error codes (name -> HTTP status), as the CLI and the API use them.
#[pyfunction]
fn error_codes() -> Vec<(&'static str, u16)> {
    ErrorCode::ALL
        .iter()
        .map(|c| (c.as_str(), c.status()))
        .collect()
}

/// mimalloc 2.2's `mi_option_allow_thp` and the option before it, `mi_option_generic_collect`
/// (`libmimalloc-sys` names neither).
const MI_OPTION_ALLOW_THP: libmimalloc_sys::mi_option_t = 37;
const MI_OPTION_GENERIC_COLLECT: libmimalloc_sys::mi_option_t = 36;

/// Keeps transparent huge pages out of the extension's own allocator (not the host process's):
/// mimalloc asks the kernel for them on its arenas, and a first call then waited for the kernel
/// to zero (and, under memory pressure, compact) 2 MiB pages: first `Bleu` + `Rouge` + `Cider`
/// calls of 46-170 ms instead of 46-58 ms (docs/performance.md, "Python package"). The option's
/// place in mimalloc's list is checked first by its neighbour's default (10,000), so a mimalloc
/// whose list differs is left alone. Returns mimalloc's `allow_thp` afterwards.
fn no_huge_pages() -> std::os::raw::c_long {
    // SAFETY: mimalloc's option getters and setters take and return integers; the module is
    // initialised once, under the GIL, before the extension starts any thread of its own.
    unsafe {
        if libmimalloc_sys::mi_option_get(MI_OPTION_GENERIC_COLLECT) == 10_000 {
            libmimalloc_sys::mi_option_set(MI_OPTION_ALLOW_THP, 0);
        }
        libmimalloc_sys::mi_option_get(MI_OPTION_ALLOW_THP)
    }
}

#[pymodule]
fn _capscore(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // Huge pages for the allocator's arenas: 0 once turned off (a test reads it).
    m.add("_allocator_huge_pages", no_huge_pages())?;
    workers::watch_forks();

    m.add_function(wrap_pyfunction!(score_json, m)?)?;
    m.add_function(wrap_pyfunction!(score_lists, m)?)?;
    m.add_function(wrap_pyfunction!(bleu_dicts, m)?)?;
    m.add_function(wrap_pyfunction!(rouge_dicts, m)?)?;
    m.add_function(wrap_pyfunction!(cider_dicts, m)?)?;
    m.add_function(wrap_pyfunction!(compare_json, m)?)?;
    m.add_function(wrap_pyfunction!(tokenize, m)?)?;
    m.add_function(wrap_pyfunction!(read_text, m)?)?;
    m.add_function(wrap_pyfunction!(fetch, m)?)?;
    m.add_function(wrap_pyfunction!(error_codes, m)?)?;
    m.add_class::<PyRewardScorer>()?;
    Ok(())
}
