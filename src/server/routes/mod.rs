//! The HTTP routes, one file per area: [`score`] (`POST /v1/score`), [`compare`]
//! (`POST /v1/compare`), [`datasets`]
//! (`/v1/datasets`), [`ops`] (health, readiness, Prometheus). Every handler carries a
//! `utoipa::path` annotation listing its error responses; the router is built from these
//! annotations (utoipa-axum), so the served routes and `openapi.json` cannot diverge. The
//! response schemas are the engine's own report types.
//!
//! Request bodies are read as bytes and parsed on the compute pool together with the work, so
//! no JSON parsing or metric work runs on a tokio worker.
//!
//! Must not: compute metrics or assemble batches (the engine does); read resources.

pub mod compare;
pub mod datasets;
pub mod ops;
pub mod score;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::Value;

use super::error::ApiError;
use super::state::{App, AppState, Fate};
use crate::input::{ErrorCode, InputError};

/// A route's computation: the request body in, the response's JSON bytes out.
pub(crate) type Compute = fn(&App, &[u8], &Fate) -> Result<Vec<u8>, ApiError>;

/// Runs a JSON computation on the compute pool with its [`Fate`] (abandoned on timeout or when
/// the client goes away: the engine stops within a caption); small bodies take the light lane.
pub(crate) async fn compute_json(
    s: &AppState,
    body: axum::body::Bytes,
    f: Compute,
) -> Result<Response, ApiError> {
    let app = s.0.clone();
    let fate = Fate::default();
    let cancel = fate.clone();
    let light = body.len() <= super::state::LIGHT_BODY_BYTES;
    let bytes =
        s.0.compute
            .run_on(fate, light, move || f(&app, &body, &cancel))
            .await??;
    Ok(json_response(StatusCode::OK, bytes))
}

pub(crate) fn json_response(status: StatusCode, bytes: Vec<u8>) -> Response {
    let mut res = (status, bytes).into_response();
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}

pub(crate) fn to_json_bytes<T: Serialize>(v: &T) -> Result<Vec<u8>, ApiError> {
    serde_json::to_vec(v).map_err(ApiError::internal)
}

/// Parses a JSON body: syntax errors are 400 `invalid_json`, shape errors 422 `invalid_format`.
pub(crate) fn parse_body<T: serde::de::DeserializeOwned>(
    body: &[u8],
    what: &str,
) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| {
        // A value that parses into a typed field with a code of its own (a metric name).
        if let Some(coded) = crate::engine::coded_error(&e.to_string()) {
            return coded.into();
        }
        let code = match e.classify() {
            serde_json::error::Category::Data => ErrorCode::InvalidFormat,
            _ => ErrorCode::InvalidJson,
        };
        InputError::new(code, format!("{what}: {e}")).into()
    })
}

pub(crate) use super::error::limit;

pub(crate) fn check_caption(
    app: &App,
    caption: &str,
    at: &dyn Fn() -> String,
) -> Result<(), ApiError> {
    let max = app.limits.max_caption_chars;
    if caption.len() > max && caption.chars().count() > max {
        return Err(limit(format!(
            "{}: caption longer than {max} characters (--max-caption-chars)",
            at()
        )));
    }
    let max = app.limits.max_caption_tokens;
    let n = crate::engine::caption_tokens_at_most(caption, max);
    if n > max {
        return Err(limit(format!(
            "{}: caption of {n} tokens; at most {max} per caption (--max-caption-tokens)",
            at()
        )));
    }
    Ok(())
}

pub(crate) fn caption_of(v: &Value, at: &dyn Fn() -> String) -> Result<String, ApiError> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Null => Err(InputError::new(
            ErrorCode::InvalidCaption,
            format!("{}: caption must be a string, got null", at()),
        )
        .into()),
        _ => Err(InputError::new(
            ErrorCode::InvalidCaption,
            format!("{}: caption must be a string", at()),
        )
        .into()),
    }
}

/// Unknown route: a problem document.
pub async fn not_found() -> ApiError {
    ApiError::new(ErrorCode::NotFound, "no such route; see /docs")
}

/// Known route, wrong method.
pub async fn method_not_allowed() -> ApiError {
    ApiError::new(
        ErrorCode::MethodNotAllowed,
        "method not allowed on this route",
    )
}
