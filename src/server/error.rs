//! One error type for the whole API: [`ApiError`] renders `application/problem+json` (RFC 9457)
//! with a stable `code` from one table ([`Code`]). 5xx bodies never carry internals; the cause
//! is logged once, where the error is made.

use axum::extract::rejection::BytesRejection;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::dataset::DatasetError;
use crate::input::{ErrorCode, InputError};

/// Every error code the API returns, with its HTTP status. The `code` strings are stable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// Input errors of the library ([`ErrorCode`]): 400 for `invalid_json`, 422 otherwise.
    Input(ErrorCode),
    /// The request body exceeds the configured size.
    PayloadTooLarge,
    /// The dataset name is not `[A-Za-z0-9._-]{1,64}`.
    InvalidDatasetName,
    /// No dataset of that name.
    UnknownDataset,
    /// No such route.
    NotFound,
    /// The route exists, but not with this method.
    MethodNotAllowed,
    /// Missing or unknown API key.
    Unauthorized,
    /// The key's role may not do this.
    Forbidden,
    /// Too many computations in flight: retry later.
    Overloaded,
    /// The computation took longer than the configured timeout.
    Timeout,
    /// A requested metric's resources are not loaded.
    ResourcesNotLoaded,
    /// A bug (a panic in a metric, a failed write): details are in the server log.
    Internal,
}

/// All codes, for the documentation table.
pub const ALL_CODES: &[Code] = &[
    Code::Input(ErrorCode::InvalidJson),
    Code::Input(ErrorCode::InvalidFormat),
    Code::Input(ErrorCode::InvalidImageId),
    Code::Input(ErrorCode::InvalidCaption),
    Code::Input(ErrorCode::UnknownImageId),
    Code::Input(ErrorCode::DuplicateImageId),
    Code::Input(ErrorCode::MissingReferences),
    Code::Input(ErrorCode::EmptyResults),
    Code::Input(ErrorCode::NoReferenceNgrams),
    Code::Input(ErrorCode::UnknownMetric),
    Code::Input(ErrorCode::LimitExceeded),
    Code::PayloadTooLarge,
    Code::InvalidDatasetName,
    Code::UnknownDataset,
    Code::NotFound,
    Code::MethodNotAllowed,
    Code::Unauthorized,
    Code::Forbidden,
    Code::Overloaded,
    Code::Timeout,
    Code::ResourcesNotLoaded,
    Code::Internal,
];

impl Code {
    /// The stable string.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Input(c) => c.as_str(),
            Code::PayloadTooLarge => "payload_too_large",
            Code::InvalidDatasetName => "invalid_dataset_name",
            Code::UnknownDataset => "unknown_dataset",
            Code::NotFound => "not_found",
            Code::MethodNotAllowed => "method_not_allowed",
            Code::Unauthorized => "unauthorized",
            Code::Forbidden => "forbidden",
            Code::Overloaded => "overloaded",
            Code::Timeout => "timeout",
            Code::ResourcesNotLoaded => "resources_not_loaded",
            Code::Internal => "internal",
        }
    }

    /// The HTTP status.
    pub fn status(self) -> StatusCode {
        match self {
            Code::Input(ErrorCode::InvalidJson) => StatusCode::BAD_REQUEST,
            Code::Input(_) | Code::InvalidDatasetName => StatusCode::UNPROCESSABLE_ENTITY,
            Code::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Code::UnknownDataset | Code::NotFound => StatusCode::NOT_FOUND,
            Code::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Code::Unauthorized => StatusCode::UNAUTHORIZED,
            Code::Forbidden => StatusCode::FORBIDDEN,
            Code::Overloaded | Code::ResourcesNotLoaded => StatusCode::SERVICE_UNAVAILABLE,
            Code::Timeout => StatusCode::GATEWAY_TIMEOUT,
            Code::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The short title (RFC 9457 `title`).
    pub fn title(self) -> &'static str {
        match self {
            Code::Input(ErrorCode::InvalidJson) => "Malformed JSON",
            Code::Input(ErrorCode::InvalidFormat) => "Wrong shape or types",
            Code::Input(ErrorCode::InvalidImageId) => "Invalid image id",
            Code::Input(ErrorCode::InvalidCaption) => "Invalid caption",
            Code::Input(ErrorCode::UnknownImageId) => "Unknown image id",
            Code::Input(ErrorCode::DuplicateImageId) => "Duplicate image id",
            Code::Input(ErrorCode::MissingReferences) => "Missing references",
            Code::Input(ErrorCode::EmptyResults) => "Empty batch",
            Code::Input(ErrorCode::NoReferenceNgrams) => "No reference n-grams",
            Code::Input(ErrorCode::UnknownMetric) => "Unknown metric",
            Code::Input(ErrorCode::LimitExceeded) => "Limit exceeded",
            Code::Input(ErrorCode::MetricUnavailable) => "Metric unavailable",
            Code::PayloadTooLarge => "Payload too large",
            Code::InvalidDatasetName => "Invalid dataset name",
            Code::UnknownDataset => "Unknown dataset",
            Code::NotFound => "Not found",
            Code::MethodNotAllowed => "Method not allowed",
            Code::Unauthorized => "Unauthorized",
            Code::Forbidden => "Forbidden",
            Code::Overloaded => "Overloaded",
            Code::Timeout => "Timeout",
            Code::ResourcesNotLoaded => "Resources not loaded",
            Code::Internal => "Internal error",
        }
    }
}

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

/// An API error.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// The code.
    pub code: Code,
    /// The detail message (already safe to show).
    pub detail: String,
    /// The metric, for `resources_not_loaded`.
    pub metric: Option<String>,
    /// Seconds, for `Retry-After`.
    pub retry_after: Option<u32>,
}

impl ApiError {
    /// An error with a detail message.
    pub fn new(code: Code, detail: impl Into<String>) -> ApiError {
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
            Code::Internal,
            "internal error; the server log has the details",
        )
    }

    /// 503 with `Retry-After`.
    pub fn overloaded() -> ApiError {
        ApiError {
            retry_after: Some(1),
            ..ApiError::new(
                Code::Overloaded,
                "too many computations in flight; retry later",
            )
        }
    }

    /// The problem document.
    pub fn problem(&self) -> Problem {
        Problem {
            kind: format!("urn:capscore:problem:{}", self.code.as_str()),
            title: self.code.title().to_owned(),
            status: self.code.status().as_u16(),
            detail: self.detail.clone(),
            code: self.code.as_str().to_owned(),
            metric: self.metric.clone(),
        }
    }
}

impl From<InputError> for ApiError {
    fn from(e: InputError) -> ApiError {
        ApiError::new(Code::Input(e.code), e.message)
    }
}

impl From<DatasetError> for ApiError {
    fn from(e: DatasetError) -> ApiError {
        match e {
            DatasetError::InvalidName(_) => ApiError::new(Code::InvalidDatasetName, e.to_string()),
            DatasetError::NotFound(_) => ApiError::new(Code::UnknownDataset, e.to_string()),
            DatasetError::Input(i) => i.into(),
            DatasetError::Io(io) => ApiError::internal(format!("dataset storage: {io}")),
        }
    }
}

impl From<BytesRejection> for ApiError {
    fn from(r: BytesRejection) -> ApiError {
        if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                Code::PayloadTooLarge,
                "request body exceeds the configured limit (--max-body-bytes)",
            )
        } else {
            ApiError::new(
                Code::Input(ErrorCode::InvalidJson),
                format!("cannot read the request body: {}", r.body_text()),
            )
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.code.status();
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
        if self.code == Code::Unauthorized {
            h.insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"capscore\""),
            );
        }
        res
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_statuses_are_errors() {
        let mut seen = std::collections::HashSet::new();
        for c in ALL_CODES {
            assert!(seen.insert(c.as_str()), "duplicate {}", c.as_str());
            assert!(c.status().is_client_error() || c.status().is_server_error());
        }
    }
}
