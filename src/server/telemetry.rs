//! Logs, request ids and Prometheus metrics.
//!
//! Metrics (all prefixed `capscore_`): `http_requests_total` and
//! `http_request_duration_seconds` by route, method and status; `items_scored_total` by
//! metric; `queue_depth` (computations in flight); `datasets_loaded`; `shed_total`;
//! `panics_total`. The recorder is process-wide (the `metrics` facade is global); every app in
//! the process shares it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tower_http::request_id::{MakeRequestId, RequestId};

static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// Installs the Prometheus recorder (once per process) and returns its handle.
pub fn prometheus() -> Option<&'static PrometheusHandle> {
    HANDLE
        .get_or_init(|| {
            let buckets = [
                0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                10.0, 30.0,
            ];
            PrometheusBuilder::new()
                .set_buckets_for_metric(
                    Matcher::Full("capscore_http_request_duration_seconds".into()),
                    &buckets,
                )
                .ok()?
                .install_recorder()
                .ok()
        })
        .as_ref()
}

/// Registers the counters that may stay at zero for a long time (panics, shedding, refused
/// connections), so they are exported from the start.
pub fn register_counters() {
    for name in [
        "capscore_panics_total",
        "capscore_shed_total",
        "capscore_connections_refused_total",
    ] {
        metrics::counter!(name).increment(0);
    }
}

/// Sets the queue-depth gauge.
pub fn queue_depth(n: usize) {
    metrics::gauge!("capscore_queue_depth").set(n as f64);
}

/// Sets the datasets gauge.
pub fn datasets_loaded(n: usize) {
    metrics::gauge!("capscore_datasets_loaded").set(n as f64);
}

/// Counts items scored per metric.
pub fn items_scored(metric: &'static str, n: usize) {
    metrics::counter!("capscore_items_scored_total", "metric" => metric).increment(n as u64);
}

/// Counts a scored report: images per metric, SPICE graphs taken from a dataset's cache.
pub fn report_scored(metrics: &[crate::engine::Metric], report: &crate::engine::Report) {
    for m in metrics {
        items_scored(m.name(), report.stats.images);
    }
    if metrics.contains(&crate::engine::Metric::Spice) {
        spice_cached_refs(report.stats.spice_cached_graphs);
    }
}

/// Counts SPICE reference graphs served from a dataset's cache.
pub fn spice_cached_refs(n: usize) {
    metrics::counter!("capscore_spice_cached_reference_graphs_total").increment(n as u64);
}

/// Middleware: request count and latency per matched route, method and status.
pub async fn track(req: Request, next: Next) -> Response {
    let start = Instant::now();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| "unmatched".to_owned());
    let method = req.method().as_str().to_owned();
    let res = next.run(req).await;
    let status = res.status().as_u16().to_string();
    let labels = [("route", route), ("method", method), ("status", status)];
    metrics::counter!("capscore_http_requests_total", &labels).increment(1);
    metrics::histogram!("capscore_http_request_duration_seconds", &labels)
        .record(start.elapsed().as_secs_f64());
    res
}

/// Request ids: a per-process random prefix and a counter (`x-request-id` when the client
/// sends none).
#[derive(Clone)]
pub struct MakeId {
    prefix: u32,
}

impl MakeId {
    /// A new generator.
    pub fn new() -> MakeId {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos() ^ (d.as_secs() as u32))
            .unwrap_or(0);
        MakeId {
            prefix: t ^ std::process::id().rotate_left(16),
        }
    }
}

impl Default for MakeId {
    fn default() -> Self {
        MakeId::new()
    }
}

impl MakeRequestId for MakeId {
    fn make_request_id<B>(&mut self, _: &axum::http::Request<B>) -> Option<RequestId> {
        static N: AtomicU64 = AtomicU64::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        HeaderValue::from_str(&format!("{:08x}-{n:x}", self.prefix))
            .ok()
            .map(RequestId::new)
    }
}

/// Initialises logging to stderr (`RUST_LOG`, default `info`; JSON lines with `json`).
/// Idempotent. Never stdout: `main` holds the stdout lock for the command's output, so a
/// worker thread logging to stdout would block forever.
pub fn init_logging(json: bool) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    // Colour codes only on a terminal, never into a file or a pipe.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}
