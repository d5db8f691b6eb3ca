//! The HTTP service (`capscore serve`): axum on tokio, metric work on a dedicated rayon pool
//! behind a bounded gate ([`state::Compute`]).
//!
//! - [`router`] builds the app from an [`AppState`] (tests call it directly);
//! - [`serve`] runs it on an already-bound listener until `shutdown` resolves, then finishes the
//!   requests in flight (tests bind port 0);
//! - [`run`] is `capscore serve`: configuration, logging, signals.

pub mod auth;
pub mod error;
pub mod openapi;
pub mod routes;
pub mod state;
pub mod telemetry;

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::error_handling::HandleErrorLayer;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderName, Request};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{BoxError, Json, Router};
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::compression::CompressionLayer;
use tower_http::request_id::{PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use utoipa_scalar::{Scalar, Servable};

pub use error::{ApiError, Code};
pub use state::{App, AppState};

use crate::dataset::Registry;

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
}

/// `capscore serve`: every flag is also a `CAPSCORE_*` environment variable.
#[derive(Debug, Clone, clap::Args)]
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
    /// Request timeout in seconds (computation; the whole request gets 5 s more).
    #[arg(long, env = "CAPSCORE_REQUEST_TIMEOUT", default_value_t = 60.0)]
    pub request_timeout: f64,
    /// Computations admitted at once (running or waiting for a worker); more are shed with 503.
    #[arg(long, env = "CAPSCORE_MAX_CONCURRENT", default_value_t = 64)]
    pub max_concurrent: usize,
    /// Requests in flight at once, all routes; more are shed with 503.
    #[arg(long, env = "CAPSCORE_MAX_REQUESTS", default_value_t = 4096)]
    pub max_requests: usize,
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
    #[arg(long, env = "CAPSCORE_ALLOW_OPEN", default_value_t = false)]
    pub allow_open: bool,
    /// Log JSON lines instead of text.
    #[arg(long, env = "CAPSCORE_LOG_JSON", default_value_t = false)]
    pub log_json: bool,
    /// Where METEOR's and SPICE's data live, and whether they may be fetched at start-up.
    #[command(flatten)]
    pub resources: crate::resources::ResourceArgs,
}

impl ServeArgs {
    /// The defaults (as `capscore serve` with no flags and no environment would use), with
    /// `data_dir`.
    pub fn with_data_dir(data_dir: PathBuf) -> ServeArgs {
        ServeArgs {
            addr: SocketAddr::from(([127, 0, 0, 1], 8080)),
            data_dir,
            max_body_bytes: 64 * 1024 * 1024,
            max_items: 100_000,
            max_references: 100,
            max_caption_chars: 10_000,
            request_timeout: 60.0,
            max_concurrent: 64,
            max_requests: 4096,
            threads: 0,
            io_threads: 0,
            api_keys_file: None,
            api_keys: None,
            allow_open: false,
            log_json: false,
            resources: crate::resources::ResourceArgs {
                cache_dir: None,
                offline: true,
            },
        }
    }

    /// The configured API keys.
    pub fn keys(&self) -> Result<auth::Keys, String> {
        let mut keys = auth::Keys::none();
        if let Some(p) = &self.api_keys_file {
            let text = std::fs::read_to_string(p)
                .map_err(|e| format!("cannot read {}: {e}", p.display()))?;
            keys.extend(auth::Keys::parse(&text, &p.display().to_string())?);
        }
        if let Some(s) = &self.api_keys {
            keys.extend(auth::Keys::parse(s, "CAPSCORE_API_KEYS")?);
        }
        Ok(keys)
    }
}

/// Builds the state: opens the data directory (loading every dataset), starts the compute pool.
pub fn build_state(cfg: &ServeArgs) -> Result<AppState, String> {
    let keys = cfg.keys()?;
    build_state_with(cfg, keys, Arc::new(|_| {}))
}

/// [`build_state`] with explicit keys and a test hook called with every batch before scoring.
pub fn build_state_with(
    cfg: &ServeArgs,
    keys: auth::Keys,
    hooks: routes::Hook,
) -> Result<AppState, String> {
    build_state_full(cfg, keys, hooks, state::Resources::default())
}

/// [`build_state_with`] with explicit resource readiness.
pub fn build_state_full(
    cfg: &ServeArgs,
    keys: auth::Keys,
    hooks: routes::Hook,
    resources: state::Resources,
) -> Result<AppState, String> {
    let compute = state::Compute::new(
        cfg.threads,
        cfg.max_concurrent,
        Duration::from_secs_f64(cfg.request_timeout.max(0.001)),
    )
    .map_err(|e| format!("cannot start the compute pool: {e}"))?;
    let (datasets, failed) = compute
        .install(|| Registry::open(Some(&cfg.data_dir)))
        .map_err(|e| format!("data directory {}: {e}", cfg.data_dir.display()))?;
    for (path, why) in failed {
        tracing::error!(file = %path.display(), error = %why, "dataset not loaded");
    }
    telemetry::prometheus();
    telemetry::datasets_loaded(datasets.len());
    Ok(AppState(Arc::new(App {
        datasets,
        keys,
        limits: Limits {
            max_body_bytes: cfg.max_body_bytes,
            max_items: cfg.max_items,
            max_references: cfg.max_references,
            max_caption_chars: cfg.max_caption_chars,
        },
        compute,
        resources,
        hooks,
        request_timeout: Duration::from_secs_f64(cfg.request_timeout.max(0.001) + 5.0),
        max_requests: cfg.max_requests.max(1),
    })))
}

/// The API routes with their OpenAPI description.
pub fn api() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(<openapi::ApiDoc as utoipa::OpenApi>::openapi())
        .routes(routes!(routes::score))
        .routes(routes!(routes::list_datasets))
        .routes(routes!(
            routes::put_dataset,
            routes::get_dataset,
            routes::delete_dataset
        ))
        .routes(routes!(routes::healthz))
        .routes(routes!(routes::readyz))
        .routes(routes!(routes::prometheus))
}

/// The generated OpenAPI document.
pub fn openapi_spec() -> utoipa::openapi::OpenApi {
    api().split_for_parts().1
}

async fn handle_layer_error(err: BoxError) -> ApiError {
    if err.is::<tower::timeout::error::Elapsed>() {
        ApiError::new(Code::Timeout, "request timed out")
    } else if err.is::<tower::load_shed::error::Overloaded>() {
        ApiError::overloaded()
    } else {
        ApiError::internal(err)
    }
}

fn panic_response(err: Box<dyn std::any::Any + Send + 'static>) -> axum::response::Response {
    let msg = err
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| err.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    ApiError::internal(format!("panic in handler: {msg}")).into_response()
}

/// The application: API routes, `/openapi.json`, the docs page at `/docs`, and the layers
/// (request ids, tracing, metrics, panics, timeouts, load shedding, body limit, compression).
pub fn router(state: AppState) -> Router {
    let (api, spec) = api().split_for_parts();
    let spec_json = Arc::new(spec.clone());
    let x_request_id = HeaderName::from_static("x-request-id");
    let app = state.0.clone();
    api.route(
        "/openapi.json",
        get(move || {
            let s = spec_json.clone();
            async move { Json((*s).clone()) }
        }),
    )
    .merge(Scalar::with_url("/docs", spec))
    .fallback(routes::not_found)
    .method_not_allowed_fallback(routes::method_not_allowed)
    .layer(axum::middleware::from_fn(telemetry::track))
    .layer(DefaultBodyLimit::max(app.limits.max_body_bytes))
    .with_state(state)
    .layer(
        ServiceBuilder::new()
            .layer(SetRequestIdLayer::new(
                x_request_id.clone(),
                telemetry::MakeId::new(),
            ))
            .layer(
                TraceLayer::new_for_http().make_span_with(|req: &Request<_>| {
                    let id = req
                        .headers()
                        .get("x-request-id")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("-");
                    tracing::info_span!("request", method = %req.method(), uri = %req.uri(), request_id = %id)
                }),
            )
            .layer(PropagateRequestIdLayer::new(x_request_id))
            .layer(CatchPanicLayer::custom(panic_response))
            .layer(HandleErrorLayer::new(handle_layer_error))
            .load_shed()
            .concurrency_limit(app.max_requests)
            .timeout(app.request_timeout)
            .layer(CompressionLayer::new()),
    )
}

/// Serves `router(state)` on `listener` until `shutdown` resolves; requests in flight are
/// finished before this returns.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown)
        .await
}

/// Resolves on SIGTERM or Ctrl-C.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    tracing::info!("shutting down: finishing requests in flight");
}

/// `capscore serve`.
pub fn run(cfg: ServeArgs) -> Result<(), String> {
    telemetry::init_logging(cfg.log_json);
    let keys = cfg.keys()?;
    if keys.is_open() {
        if !cfg.addr.ip().is_loopback() && !cfg.allow_open {
            return Err(format!(
                "refusing to serve without API keys on {} (not loopback): configure keys (--api-keys-file, CAPSCORE_API_KEYS) or pass --allow-open",
                cfg.addr
            ));
        }
        tracing::warn!(addr = %cfg.addr, "no API keys configured: the server is OPEN to anyone who can reach it");
    }
    // METEOR's data: fetched on first use unless --offline; without it METEOR answers 503.
    let meteor = match cfg.resources.load_meteor() {
        Ok(m) => m.map(Arc::new),
        Err(e) => {
            tracing::error!(error = %e, "METEOR unavailable");
            None
        }
    };
    if meteor.is_none() {
        tracing::warn!(cache = %cfg.resources.dir().display(), "METEOR's data is not loaded: METEOR requests get 503");
    }
    // SPICE (parser model, lemma exceptions, METEOR's synonyms, shared when METEOR is
    // loaded): fetched on first use unless --offline; without it SPICE answers 503.
    let dir = cfg.resources.dir();
    let mut resources = state::Resources::with_meteor(meteor.clone());
    if cfg.resources.offline && !cfg.resources.spice_ready() {
        tracing::warn!(cache = %dir.display(), "SPICE's data is not loaded (offline): SPICE requests get 503");
    } else {
        match cfg.resources.load_spice(meteor) {
            Ok(sp) => {
                tracing::info!(cache = %dir.display(), "SPICE loaded");
                resources = resources.with_spice(Some(Arc::new(sp)));
            }
            Err(e) => {
                let why = e.to_string();
                tracing::error!(error = %why, "SPICE unavailable: SPICE requests get 503");
                resources = resources.mark_missing(crate::engine::Metric::Spice, why);
            }
        }
    }
    let state = build_state_full(&cfg, keys, Arc::new(|_| {}), resources)?;
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    if cfg.io_threads > 0 {
        rt.worker_threads(cfg.io_threads);
    }
    let rt = rt
        .enable_all()
        .thread_name("capscore-io")
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(cfg.addr)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", cfg.addr))?;
        tracing::info!(addr = %cfg.addr, datasets = state.0.datasets.len(), "capscore listening");
        serve(listener, state, shutdown_signal())
            .await
            .map_err(|e| format!("server error: {e}"))
    })
}
