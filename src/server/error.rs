//! One error type for the whole API: [`ApiError`] renders `application/problem+json` (RFC 9457)
//! with a stable `code` from the one table of codes ([`ErrorCode`], `input/error.rs`). 5xx bodies never carry internals; the cause
//! is logged once, where the error is made.

use axum::extract::rejection::BytesRejection;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::dataset::DatasetError;
use crate::input::{ErrorCode, InputError};

/// The problem document (RFC 9457) every error response carries.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Problem {
    /// `urn:capscore:problem:<code>`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Short, fixed per code.
    pub title: String,
    /// The HTTP status.
    pub status: u16,
    /// What is wrong, naming the offending ids, entries or limits.
    pub detail: String,
    /// Stable machine-readable code (see the table in the API description).
    pub code: String,
    /// For `resources_not_loaded`: the metric whose resources are missing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metric: Option<String>,
}

/// Declares the problem responses routes share, for their OpenAPI `responses(...)` lists: one
/// type per (status, meaning), so that each route names the ones it can give.
macro_rules! problem_responses {
    ($($name:ident => $status:literal, $desc:literal;)*) => {
        $(
            #[doc = $desc]
            #[derive(utoipa::IntoResponses)]
            #[response(status = $status, description = $desc, content_type = "application/problem+json")]
            pub struct $name(pub Problem);
        )*
    };
}

/// Problem responses (OpenAPI only).
pub mod responses {
    use super::Problem;

    problem_responses! {
        InvalidJson => 400, "Malformed JSON (`invalid_json`)";
        Unauthorized => 401, "Missing or unknown API key (`unauthorized`)";
        AdminOnly => 403, "Needs the admin role (`forbidden`)";
        UnknownDataset => 404, "Unknown dataset (`unknown_dataset`)";
        TooLarge => 413, "Body too large (`payload_too_large`)";
        BadName => 422, "Bad name (`invalid_dataset_name`)";
        StorageFailure => 500, "Storage failure (`internal`)";
        Internal => 500, "Internal error (`internal`)";
        Overloaded => 503, "Overloaded (`overloaded`)";
        Unavailable => 503, "Overloaded (`overloaded`, with Retry-After: computations or the memory budget) or a metric's resources are not loaded (`resources_not_loaded`, names the metric)";
        TimedOut => 504, "Computation timed out (`timeout`)";
    }
}

/// An API error.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// The code.
    pub code: ErrorCode,
    /// The detail message (already safe to show).
    pub detail: String,
    /// The metric, for `resources_not_loaded`.
    pub metric: Option<String>,
    /// Seconds, for `Retry-After`.
    pub retry_after: Option<u32>,
}

impl ApiError {
    /// An error with a detail message.
    pub fn new(code: ErrorCode, detail: impl Into<String>) -> ApiError {
        ApiError {
            code,
            detail: detail.into(),
            metric: None,
            retry_after: None,
        }
    }

    /// A 500 whose cause is logged here and not shown to the client.
    pub fn internal(cause: impl std::fmt::Display) -> ApiError {
        tracing::error!(error = %cause, "internal error");
        ApiError::new(
            ErrorCode::Internal,
            "internal error; the server log has the details",
        )
    }

    /// 503 with `Retry-After`.
    pub fn overloaded() -> ApiError {
        ApiError {
            retry_after: Some(1),
            ..ApiError::new(
                ErrorCode::Overloaded,
                "too many computations in flight; retry later",
            )
        }
    }

    /// The problem document.
    pub fn problem(&self) -> Problem {
        Problem {
            kind: format!("urn:capscore:problem:{}", self.code.as_str()),
            title: self.code.title().to_owned(),
            status: self.code.status(),
            detail: self.detail.clone(),
            code: self.code.as_str().to_owned(),
            metric: self.metric.clone(),
        }
    }
}

impl From<InputError> for ApiError {
    fn from(e: InputError) -> ApiError {
        ApiError::new(e.code, e.message)
    }
}

impl From<DatasetError> for ApiError {
    fn from(e: DatasetError) -> ApiError {
        match e {
            DatasetError::InvalidName(_) => {
                ApiError::new(ErrorCode::InvalidDatasetName, e.to_string())
            }
            DatasetError::NotFound(_) => ApiError::new(ErrorCode::UnknownDataset, e.to_string()),
            DatasetError::Input(i) => i.into(),
            DatasetError::Io(io) => ApiError::internal(format!("dataset storage: {io}")),
            // Only ever seen by a request that is no longer waiting: its answer is a 504.
            DatasetError::Abandoned(_) => ApiError::new(ErrorCode::Timeout, e.to_string()),
        }
    }
}

impl From<BytesRejection> for ApiError {
    fn from(r: BytesRejection) -> ApiError {
        if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                ErrorCode::PayloadTooLarge,
                "request body exceeds the configured limit (--max-body-bytes)",
            )
        } else {
            ApiError::new(
                ErrorCode::InvalidJson,
                format!("cannot read the request body: {}", r.body_text()),
            )
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.code.http_status();
        let body = serde_json::to_vec(&self.problem()).unwrap_or_default();
        let mut res = (status, body).into_response();
        let h = res.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        if let Some(s) = self.retry_after {
            h.insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
        if self.code == ErrorCode::Unauthorized {
            h.insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"capscore\""),
            );
        }
        res
    }
}

/// The HTTP status of a code.
pub trait HttpStatus {
    /// The code's status as an `http` status.
    fn http_status(self) -> StatusCode;
}

impl HttpStatus for ErrorCode {
    fn http_status(self) -> StatusCode {
        StatusCode::from_u16(self.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }
}

/// A request over one of the configured limits (`limit_exceeded`, 422).
pub(crate) fn limit(msg: String) -> ApiError {
    crate::input::InputError::new(crate::input::ErrorCode::LimitExceeded, msg).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_statuses_are_errors() {
        let mut seen = std::collections::HashSet::new();
        for c in ErrorCode::ALL {
            assert!(seen.insert(c.as_str()), "duplicate {}", c.as_str());
            let st = c.http_status();
            assert!(st.is_client_error() || st.is_server_error());
            assert_eq!(st.as_u16(), c.status());
        }
    }
}
