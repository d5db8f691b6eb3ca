//! The HTTP service (`capscore serve`): axum on tokio, metric work on a dedicated rayon pool
//! behind a bounded gate ([`state::Compute`]).
//!
//! - [`router`] builds the app from an [`AppState`] (tests call it directly);
//! - [`serve`] runs it on an already-bound listener until `shutdown` resolves, then finishes the
//!   requests in flight (tests bind port 0);
//! - [`run`] is `capscore serve`: configuration, logging, signals.

pub mod auth;
pub mod config;
pub mod conn;
pub mod cost;
pub mod error;
pub mod openapi;
pub mod routes;
pub mod state;
pub mod telemetry;

use std::future::Future;
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
use utoipa_swagger_ui::{Config, SwaggerUi};

pub use config::{ConnLimits, Limits, ServeArgs};
pub use error::{ApiError, HttpStatus};
pub use state::{App, AppState};

use crate::dataset::Registry;
use crate::input::ErrorCode;

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// A configuration problem (keys, addresses, limits).
    #[error("{0}")]
    Config(String),
    /// The API keys could not be read or parsed.
    #[error(transparent)]
    Keys(#[from] auth::KeysError),
    /// A resource failed to load.
    #[error(transparent)]
    Resources(#[from] crate::resources::ResourceError),
    /// An I/O failure (binding, the data directory, the runtime).
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The failure.
        source: std::io::Error,
    },
}

impl ServerError {
    fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> ServerError {
        let what = what.into();
        move |source| ServerError::Io { what, source }
    }
}

/// Builds the state: opens the data directory (loading every dataset), starts the compute pool.
pub fn build_state(cfg: &ServeArgs) -> Result<AppState, ServerError> {
    let keys = cfg.keys()?;
    build_state_full(cfg, keys, state::Resources::default())
}

/// [`build_state_full`] with a fault-injection hook called with every score request's body
/// (tests only).
#[cfg(feature = "test-support")]
pub fn build_state_with_hook(
    cfg: &ServeArgs,
    keys: auth::Keys,
    hook: state::Hook,
    resources: state::Resources,
) -> Result<AppState, ServerError> {
    build_state_inner(cfg, keys, resources, hook)
}

/// [`build_state`] with explicit keys and resource readiness.
pub fn build_state_full(
    cfg: &ServeArgs,
    keys: auth::Keys,
    resources: state::Resources,
) -> Result<AppState, ServerError> {
    #[cfg(feature = "test-support")]
    {
        build_state_inner(cfg, keys, resources, Arc::new(|_: &[u8]| {}))
    }
    #[cfg(not(feature = "test-support"))]
    {
        build_state_inner(cfg, keys, resources)
    }
}

fn build_state_inner(
    cfg: &ServeArgs,
    keys: auth::Keys,
    resources: state::Resources,
    #[cfg(feature = "test-support")] hook: state::Hook,
) -> Result<AppState, ServerError> {
    let compute = state::Compute::new(
        cfg.threads,
        cfg.max_concurrent,
        Duration::from_secs_f64(cfg.request_timeout.max(0.001)),
    )
    .map_err(ServerError::io("cannot start the compute pool"))?;
    let (datasets, failed) = compute
        .install(|| Registry::open(Some(&cfg.data_dir)))
        .map_err(ServerError::io(format!(
            "data directory {}",
            cfg.data_dir.display()
        )))?;
    for (path, why) in failed {
        tracing::error!(file = %path.display(), error = %why, "dataset not loaded");
    }
    compute.return_freed_memory();
    telemetry::prometheus();
    telemetry::register_counters();
    telemetry::datasets_loaded(datasets.len());
    let app = App {
        datasets,
        keys,
        limits: Limits {
            max_body_bytes: cfg.max_body_bytes,
            max_items: cfg.max_items,
            max_references: cfg.max_references,
            max_caption_chars: cfg.max_caption_chars,
            max_caption_tokens: cfg.max_caption_tokens,
            max_spice_caption_tokens: cfg.max_spice_caption_tokens,
        },
        compute,
        resources,
        #[cfg(feature = "test-support")]
        hook,
        request_timeout: Duration::from_secs_f64(cfg.request_timeout.max(0.001) + 5.0),
        requests: Arc::new(tokio::sync::Semaphore::new(cfg.max_requests.max(1))),
        conn: cfg.conn_limits(),
        budget: cfg.budget(),
    };
    // The datasets found at start hold their share of the memory budget.
    for ds in app.datasets.list() {
        app.hold_loaded(&ds);
    }
    let app = Arc::new(app);
    // A full budget first evicts cold caches (the evictor holds the app weakly: no cycle).
    let weak = Arc::downgrade(&app);
    let _ = app.budget.evictor.set(cost::Evictor(Box::new(move |need| {
        weak.upgrade().map_or(0, |app| app.evict_cold(need))
    })));
    Ok(AppState(app))
}

/// The API routes with their OpenAPI description.
pub fn api() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(<openapi::ApiDoc as utoipa::OpenApi>::openapi())
        .routes(routes!(routes::score::score))
        .routes(routes!(routes::compare::compare))
        .routes(routes!(routes::datasets::list_datasets))
        .routes(routes!(
            routes::datasets::put_dataset,
            routes::datasets::get_dataset,
            routes::datasets::delete_dataset
        ))
        .routes(routes!(routes::ops::healthz))
        .routes(routes!(routes::ops::readyz))
        .routes(routes!(routes::ops::prometheus))
}

/// The document `/openapi.json` serves: the generated one, without its security requirements
/// when the server has no keys (every route is open; the docs page then shows no locks).
fn served_spec(spec: utoipa::openapi::OpenApi, open: bool) -> serde_json::Value {
    let mut v = serde_json::to_value(&spec).unwrap_or_default();
    if open {
        if let Some(o) = v.as_object_mut() {
            o.remove("security");
        }
        if let Some(paths) = v.get_mut("paths").and_then(|p| p.as_object_mut()) {
            for item in paths.values_mut().filter_map(|i| i.as_object_mut()) {
                for op in item.values_mut().filter_map(|o| o.as_object_mut()) {
                    op.remove("security");
                }
            }
        }
        if let Some(c) = v.get_mut("components").and_then(|c| c.as_object_mut()) {
            c.remove("securitySchemes");
        }
    }
    v
}

/// The generated OpenAPI document.
pub fn openapi_spec() -> utoipa::openapi::OpenApi {
    let mut spec = api().split_for_parts().1;
    openapi::add_response_examples(&mut spec);
    spec
}

async fn handle_layer_error(err: BoxError) -> ApiError {
    if err.is::<tower::timeout::error::Elapsed>() {
        ApiError::new(ErrorCode::Timeout, "request timed out")
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

/// The application: API routes, `/openapi.json`, the docs page at `/docs` (Swagger UI, served
/// from the binary), and the layers
/// (request ids, tracing, metrics, panics, timeouts, load shedding, body limit, compression).
pub fn router(state: AppState) -> Router {
    let (api, mut spec) = api().split_for_parts();
    openapi::add_response_examples(&mut spec);
    let spec_json = Arc::new(served_spec(spec, state.0.keys.is_open()));
    let x_request_id = HeaderName::from_static("x-request-id");
    let app = state.0.clone();
    api.route(
        "/openapi.json",
        get(move || {
            let s = spec_json.clone();
            async move { Json((*s).clone()) }
        }),
    )
    // Swagger UI's files are vendored in the binary: the page works offline. No validator
    // badge (it would load from the network).
    .merge(SwaggerUi::new("/docs").config(Config::new(["/openapi.json"]).validator_url("none")))
    .fallback(routes::not_found)
    .method_not_allowed_fallback(routes::method_not_allowed)
    .layer(axum::middleware::from_fn(telemetry::track))
    .layer(DefaultBodyLimit::max(app.limits.max_body_bytes))
    .with_state(state.clone())
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
            // The body is read (with its own limits) before a request permit is taken and
            // before the request's timeout starts.
            .layer(axum::middleware::from_fn_with_state(state, conn::admit))
            .layer(HandleErrorLayer::new(handle_layer_error))
            .timeout(app.request_timeout)
            .layer(CompressionLayer::new()),
    )
}

/// Serves `router(state)` on `listener` until `shutdown` resolves, with the connection limits
/// of [`conn`]; requests in flight are finished before this returns.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let limits = state.0.conn.clone();
    conn::serve(listener, router(state), limits, shutdown).await
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
pub fn run(cfg: ServeArgs) -> Result<(), ServerError> {
    telemetry::init_logging(cfg.log_json);
    let keys = cfg.keys()?;
    if keys.is_open() {
        if !cfg.addr.ip().is_loopback() && !cfg.allow_open {
            return Err(ServerError::Config(format!(
                "refusing to serve without API keys on {} (not loopback): configure keys (--api-keys-file, CAPSCORE_API_KEYS) or pass --allow-open",
                cfg.addr
            )));
        }
        tracing::warn!(addr = %cfg.addr, "no API keys configured: the server is OPEN to anyone who can reach it");
    }
    let res = cfg.resources.get();
    // METEOR's data: fetched on first use unless --offline; without it METEOR answers 503.
    let meteor = match res.load_meteor() {
        Ok(m) => m.map(Arc::new),
        Err(e) => {
            tracing::error!(error = %e, "METEOR unavailable");
            None
        }
    };
    if meteor.is_none() {
        tracing::warn!(cache = %res.dir().display(), "METEOR's data is not loaded: METEOR requests get 503");
    }
    // SPICE (parser model, lemma exceptions, METEOR's synonyms, shared when METEOR is
    // loaded): fetched on first use unless --offline; without it SPICE answers 503.
    let dir = res.dir();
    let mut resources = state::Resources::with_meteor(meteor.clone());
    if res.offline && !res.spice_ready() {
        tracing::warn!(cache = %dir.display(), "SPICE's data is not loaded (offline): SPICE requests get 503");
    } else {
        match res.load_spice(meteor) {
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
    let state = build_state_full(&cfg, keys, resources)?;
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    if cfg.io_threads > 0 {
        rt.worker_threads(cfg.io_threads);
    }
    let rt = rt
        .enable_all()
        .thread_name("capscore-io")
        .build()
        .map_err(ServerError::io("cannot start the runtime"))?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(cfg.addr)
            .await
            .map_err(ServerError::io(format!("cannot listen on {}", cfg.addr)))?;
        tracing::info!(addr = %cfg.addr, datasets = state.0.datasets.len(), "capscore listening");
        serve(listener, state, shutdown_signal())
            .await
            .map_err(ServerError::io("server error"))
    })
}
