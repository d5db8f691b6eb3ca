//! `capscore serve`'s configuration: one clap struct, every flag also a `CAPSCORE_*`
//! environment variable, each default defined once (in the clap attributes).
//!
//! Must not: start anything.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, CommandFactory, FromArgMatches};

use super::auth;
use crate::flags::ResourceFlags;

/// Request limits.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Request body size in bytes.
    pub max_body_bytes: usize,
    /// Items (or results) per score request.
    pub max_items: usize,
    /// References per item.
    pub max_references: usize,
    /// Characters per caption.
    pub max_caption_chars: usize,
    /// Tokens per caption (pycocoevalcap's tokenizer, the caption on its own).
    pub max_caption_tokens: usize,
    /// Tokens per caption in a request that asks for SPICE.
    pub max_spice_caption_tokens: usize,
}

/// Connection limits (see [`super::conn`]).
#[derive(Debug, Clone)]
pub struct ConnLimits {
    /// Connections served at once with keep-alive (beyond them, up to `probe_headroom` more are
    /// served one request each with a short header timeout; beyond that, closed at once).
    pub max_connections: usize,
    /// Extra connections kept for probes and new clients when `max_connections` are open.
    pub probe_headroom: usize,
    /// Time to receive a request's headers, and the most a kept-alive connection may idle.
    pub header_timeout: std::time::Duration,
    /// Time to receive a request's whole body.
    pub body_timeout: std::time::Duration,
    /// Minimum average body rate in bytes per second, after the first seconds.
    pub min_body_rate: u64,
    /// The longest a response write may wait for the client to read: a client that stops
    /// reading has its connection closed then (and its buffers freed).
    pub write_timeout: std::time::Duration,
}

/// `capscore serve`: every flag is also a `CAPSCORE_*` environment variable.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "CAPSCORE_ADDR", default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,
    /// Data directory (registered datasets live in DIR/datasets).
    #[arg(long, env = "CAPSCORE_DATA_DIR", default_value = "./capscore-data")]
    pub data_dir: PathBuf,
    /// Maximum request body size in bytes.
    #[arg(long, env = "CAPSCORE_MAX_BODY_BYTES", default_value_t = 64 * 1024 * 1024)]
    pub max_body_bytes: usize,
    /// Maximum items (or results) per score request.
    #[arg(long, env = "CAPSCORE_MAX_ITEMS", default_value_t = 100_000)]
    pub max_items: usize,
    /// Maximum references per item.
    #[arg(long, env = "CAPSCORE_MAX_REFERENCES", default_value_t = 100)]
    pub max_references: usize,
    /// Maximum characters per caption.
    #[arg(long, env = "CAPSCORE_MAX_CAPTION_CHARS", default_value_t = 10_000)]
    pub max_caption_chars: usize,
    /// Maximum tokens per caption (pycocoevalcap's tokenization of the caption on its own):
    /// bounds every metric's per-caption work (SPICE's parse and rules grow faster than
    /// linearly with length).
    #[arg(long, env = "CAPSCORE_MAX_CAPTION_TOKENS", default_value_t = 1024)]
    pub max_caption_tokens: usize,
    /// Maximum tokens per caption in a request that asks for SPICE (its dependency conversion
    /// grows with the square of a sentence's length).
    #[arg(long, env = "CAPSCORE_MAX_SPICE_CAPTION_TOKENS", default_value_t = 512)]
    pub max_spice_caption_tokens: usize,
    /// Most estimated CPU seconds one score request may cost (422 `cost_exceeded` beyond).
    #[arg(long, env = "CAPSCORE_MAX_REQUEST_COST", default_value_t = 10.0)]
    pub max_request_cost: f64,
    /// Most estimated memory one score request may take, in MiB (422 `cost_exceeded` beyond).
    #[arg(long, env = "CAPSCORE_MAX_REQUEST_MEMORY", default_value_t = 320)]
    pub max_request_memory: u64,
    /// Memory all score requests in flight may take together, in MiB (503 `overloaded`
    /// beyond; 0: 8 x --max-request-memory). Add about 400 MiB for the loaded resources to
    /// get the process's peak.
    #[arg(long, env = "CAPSCORE_MEMORY_BUDGET", default_value_t = 0)]
    pub memory_budget: u64,
    /// Request timeout in seconds (computation; the whole request gets 5 s more).
    #[arg(long, env = "CAPSCORE_REQUEST_TIMEOUT", default_value_t = 60.0)]
    pub request_timeout: f64,
    /// Computations admitted at once (running or waiting for a worker); more are shed with 503.
    #[arg(long, env = "CAPSCORE_MAX_CONCURRENT", default_value_t = 64)]
    pub max_concurrent: usize,
    /// Requests in flight at once, all routes; more are shed with 503.
    #[arg(long, env = "CAPSCORE_MAX_REQUESTS", default_value_t = 4096)]
    pub max_requests: usize,
    /// Open connections served with keep-alive (0: the open-file limit less 256, at least 16).
    /// 64 more are served one request each (probes); beyond that, connections are closed.
    #[arg(long, env = "CAPSCORE_MAX_CONNECTIONS", default_value_t = 0)]
    pub max_connections: usize,
    /// Seconds to receive a request's headers; also the longest idle time of a kept-alive
    /// connection.
    #[arg(long, env = "CAPSCORE_HEADER_TIMEOUT", default_value_t = 10.0)]
    pub header_timeout: f64,
    /// Seconds to receive a request's whole body (408 `body_timeout`).
    #[arg(long, env = "CAPSCORE_BODY_TIMEOUT", default_value_t = 120.0)]
    pub body_timeout: f64,
    /// Minimum average body rate in bytes per second after the first 5 s (408 `body_timeout`).
    #[arg(long, env = "CAPSCORE_MIN_BODY_RATE", default_value_t = 32 * 1024)]
    pub min_body_rate: u64,
    /// Seconds a response write may wait for the client to read; a client that stops reading
    /// has its connection closed then.
    #[arg(long, env = "CAPSCORE_WRITE_TIMEOUT", default_value_t = 30.0)]
    pub write_timeout: f64,
    /// Compute threads (0: one per core).
    #[arg(long, env = "CAPSCORE_THREADS", default_value_t = 0)]
    pub threads: usize,
    /// Tokio I/O worker threads (0: one per core).
    #[arg(long, env = "CAPSCORE_IO_THREADS", default_value_t = 0)]
    pub io_threads: usize,
    /// File of API keys, one `ROLE:KEY` per line (roles: score, admin).
    #[arg(long, env = "CAPSCORE_API_KEYS_FILE")]
    pub api_keys_file: Option<PathBuf>,
    /// API keys as comma-separated `ROLE:KEY` entries.
    #[arg(long, env = "CAPSCORE_API_KEYS", hide_env_values = true)]
    pub api_keys: Option<String>,
    /// Serve without API keys on a non-loopback address (otherwise refused).
    #[arg(long, env = "CAPSCORE_ALLOW_OPEN", default_value_t = false, value_parser = clap::builder::BoolishValueParser::new())]
    pub allow_open: bool,
    /// Log JSON lines instead of text.
    #[arg(long, env = "CAPSCORE_LOG_JSON", default_value_t = false, value_parser = clap::builder::BoolishValueParser::new())]
    pub log_json: bool,
    /// Where METEOR's and SPICE's data live, and whether they may be fetched at start-up.
    #[command(flatten)]
    pub resources: ResourceFlags,
}

impl ServeArgs {
    /// The defaults (as `capscore serve` with no flags and no environment would use: the
    /// clap defaults, read from the one definition above), with `data_dir`, offline.
    pub fn with_data_dir(data_dir: PathBuf) -> ServeArgs {
        #[derive(clap::Parser)]
        struct Serve {
            #[command(flatten)]
            args: ServeArgs,
        }
        // Environment variables are ignored here: defaults only.
        let cmd = Serve::command().mut_args(|a| a.env(clap::builder::Resettable::Reset));
        let parsed = cmd
            .try_get_matches_from(["serve"])
            .and_then(|m| Serve::from_arg_matches(&m));
        // The defaults parse by construction (a test checks it).
        let mut args = match parsed {
            Ok(s) => s.args,
            Err(e) => unreachable!("the serve defaults do not parse: {e}"),
        };
        args.data_dir = data_dir;
        args.resources.offline = true;
        args
    }

    /// The memory budget and per-request cost limits these flags give.
    pub fn budget(&self) -> super::cost::Budget {
        let per = self.max_request_memory.max(1) << 20;
        let total = if self.memory_budget > 0 {
            self.memory_budget << 20
        } else {
            8 * per
        };
        super::cost::Budget::new(total, per, self.max_request_cost)
    }

    /// The connection limits these flags give (`--max-connections 0`: from the open-file
    /// limit).
    pub fn conn_limits(&self) -> ConnLimits {
        let max_connections = if self.max_connections > 0 {
            self.max_connections
        } else {
            open_file_limit().map_or(768, |n| n.saturating_sub(256).max(16) as usize)
        };
        ConnLimits {
            max_connections,
            probe_headroom: 64,
            header_timeout: std::time::Duration::from_secs_f64(self.header_timeout.max(0.05)),
            body_timeout: std::time::Duration::from_secs_f64(self.body_timeout.max(0.05)),
            min_body_rate: self.min_body_rate,
            write_timeout: std::time::Duration::from_secs_f64(self.write_timeout.max(0.05)),
        }
    }

    /// The configured API keys.
    pub fn keys(&self) -> Result<auth::Keys, auth::KeysError> {
        let mut keys = auth::Keys::none();
        if let Some(p) = &self.api_keys_file {
            let text = std::fs::read_to_string(p).map_err(|e| auth::KeysError::Read {
                file: p.display().to_string(),
                msg: e.to_string(),
            })?;
            keys.extend(auth::Keys::parse(&text, &p.display().to_string())?);
        }
        if let Some(s) = &self.api_keys {
            keys.extend(auth::Keys::parse(s, "CAPSCORE_API_KEYS")?);
        }
        keys.check_roles()?;
        Ok(keys)
    }
}

/// The soft limit of open files (Linux: `/proc/self/limits`).
fn open_file_limit() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = text.lines().find(|l| l.starts_with("Max open files"))?;
    line["Max open files".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_parse() {
        let a = ServeArgs::with_data_dir(PathBuf::from("/x"));
        assert_eq!(a.max_references, 100);
        assert_eq!(a.data_dir, PathBuf::from("/x"));
        assert!(a.resources.offline);
    }
}
