//! The command line: `capscore score`, `capscore tokenize`, `capscore serve`.
//!
//! Exit codes: 0 success; 2 bad input or usage (one line on stderr naming what is wrong, and no
//! output file written); 1 anything else (I/O failure writing the output, ...).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand};

use crate::engine::{self, DfSource, Metric, Options};
use crate::input::{self, ErrorCode, InputError};
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
    /// Run the HTTP service.
    Serve(crate::server::ServeArgs),
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
    /// Comma-separated metrics: bleu, rouge_l, cider_d, cider_original. Default: bleu,rouge_l,cider_d.
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
        Command::Serve(a) => crate::server::run(a).map_err(CliError::Other),
    }
}

fn score(a: ScoreArgs, stdout: &mut dyn Write) -> Result<(), CliError> {
    let metrics = match &a.metrics {
        Some(list) => Metric::parse_list(list)?,
        None => Metric::DEFAULT.to_vec(),
    };
    let refs_text = read_input_file(&a.refs, "--refs")?;
    let cands_text = read_input_file(&a.cands, "--cands")?;
    let refs = input::parse_references(&input::parse_json(&refs_text, "--refs")?)
        .map_err(|e| InputError::new(e.code, format!("--refs: {}", e.message)))?;
    let cands = input::parse_candidates(&input::parse_json(&cands_text, "--cands")?)
        .map_err(|e| InputError::new(e.code, format!("--cands: {}", e.message)))?;
    let batch = input::assemble(&refs, cands)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(a.threads.unwrap_or(0))
        .build()
        .map_err(|e| CliError::Other(format!("cannot start worker threads: {e}")))?;
    let opts = Options {
        metrics: &metrics,
        df: DfSource::Batch,
    };
    let report = pool.install(|| engine::score(&batch, &opts))?;
    let mut json = report.to_json();
    if a.tokenized {
        let tok: Vec<serde_json::Value> = batch
            .items
            .iter()
            .zip(&report.tokenized)
            .map(|(item, (c, r))| serde_json::json!({"image_id": item.image_id.raw, "candidate": c, "references": r}))
            .collect();
        if let serde_json::Value::Object(o) = &mut json {
            o.insert("tokenized".into(), tok.into());
        }
    }
    let mut text =
        serde_json::to_string_pretty(&json).map_err(|e| CliError::Other(e.to_string()))?;
    text.push('\n');
    match &a.out {
        Some(path) => write_atomically(path, text.as_bytes())
            .map_err(|e| CliError::Other(format!("cannot write {}: {e}", path.display()))),
        None => stdout
            .write_all(text.as_bytes())
            .map_err(|e| CliError::Other(e.to_string())),
    }
}

/// Writes `bytes` to `path` through a temporary file in the same folder and a rename, so a
/// reader never sees a partial file.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

fn tokenize(a: TokenizeArgs, stdout: &mut dyn Write) -> Result<(), CliError> {
    let text = match &a.input {
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
    };
    let body = text.strip_suffix('\n').unwrap_or(&text);
    let lines: Vec<&str> = if text.is_empty() {
        Vec::new()
    } else {
        body.split('\n').collect()
    };
    let out = ptb::tokenize_stream(&lines);
    let mut w = std::io::BufWriter::new(stdout);
    for line in out {
        writeln!(w, "{line}").map_err(|e| CliError::Other(e.to_string()))?;
    }
    w.flush().map_err(|e| CliError::Other(e.to_string()))
}
