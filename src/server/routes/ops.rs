//! Operations: `/healthz`, `/readyz`, `/metrics` (Prometheus).
//!
//! Must not: do work on the compute pool.

use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::{json_response, to_json_bytes};
use crate::server::error::ApiError;
use crate::server::state::AppState;
use crate::server::telemetry;

/// Liveness.
#[derive(Serialize, ToSchema)]
pub struct Health {
    /// `ok`.
    pub status: String,
}

/// Readiness: every metric's resources.
#[derive(Serialize, ToSchema)]
pub struct Readiness {
    /// `ready` or `not_ready`.
    pub status: String,
    /// Per metric: `ready` or why not.
    #[schema(value_type = Object)]
    pub metrics: serde_json::Map<String, Value>,
    /// Datasets loaded.
    pub datasets: usize,
}

/// Liveness: the process serves requests.
#[utoipa::path(get, path = "/healthz", tag = "operations",
    responses((status = 200, description = "Alive", body = Health)))]
pub async fn healthz() -> Response {
    json_response(StatusCode::OK, br#"{"status":"ok"}"#.to_vec())
}

/// Readiness: every metric's resources are loaded (503 otherwise, with the reasons).
#[utoipa::path(get, path = "/readyz", tag = "operations",
    responses(
        (status = 200, description = "Ready", body = Readiness),
        (status = 503, description = "Some metric's resources are not loaded", body = Readiness),
    ))]
pub async fn readyz(State(s): State<AppState>) -> Result<Response, ApiError> {
    let mut metrics = serde_json::Map::new();
    let mut ready = true;
    for (m, st) in s.0.resources.all() {
        let v = match st {
            Ok(()) => "ready".to_owned(),
            Err(why) => {
                ready = false;
                why
            }
        };
        metrics.insert(m.name().to_owned(), Value::String(v));
    }
    let r = Readiness {
        status: if ready { "ready" } else { "not_ready" }.to_owned(),
        metrics,
        datasets: s.0.datasets.len(),
    };
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    Ok(json_response(status, to_json_bytes(&r)?))
}

/// Prometheus metrics.
#[utoipa::path(get, path = "/metrics", tag = "operations",
    responses((status = 200, description = "Prometheus text format", body = String, content_type = "text/plain")))]
pub async fn prometheus(State(s): State<AppState>) -> Response {
    telemetry::datasets_loaded(s.0.datasets.len());
    telemetry::queue_depth(s.0.compute.in_flight());
    let text = telemetry::prometheus()
        .map(|h| h.render())
        .unwrap_or_default();
    let mut res = text.into_response();
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4"),
    );
    res
}
