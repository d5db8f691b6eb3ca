//! The stable error codes: ONE table ([`error_codes!`]) from which the [`ErrorCode`] enum, its
//! string, HTTP status and title, and [`ErrorCode::ALL`] derive. The API's problem documents,
//! the CLI's `error[code]` prefix, the OpenAPI description and the table in docs/http.md all read it.
//!
//! Must not: depend on HTTP crates (statuses are plain numbers here; the server converts).

/// Defines [`ErrorCode`] from one table: `Variant => ("code", status, "Title", "when")`.
macro_rules! error_codes {
    ($($(#[$doc:meta])* $v:ident => ($s:literal, $status:literal, $title:literal, $when:literal),)*) => {
        /// Every stable error code capscore reports (the API's `code`, the CLI's `error[code]`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $($(#[$doc])* $v,)*
        }

        impl ErrorCode {
            /// Every code, in table order.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$v,)*];

            /// The code as a stable string.
            pub fn as_str(self) -> &'static str {
                match self { $(ErrorCode::$v => $s,)* }
            }

            /// The HTTP status the API answers with.
            pub fn status(self) -> u16 {
                match self { $(ErrorCode::$v => $status,)* }
            }

            /// The short title (RFC 9457 `title`).
            pub fn title(self) -> &'static str {
                match self { $(ErrorCode::$v => $title,)* }
            }

            /// When the code is given (the documentation table).
            pub fn when(self) -> &'static str {
                match self { $(ErrorCode::$v => $when,)* }
            }
        }
    };
}

error_codes! {
    /// The body or file is not valid JSON (including invalid Unicode escapes).
    InvalidJson => ("invalid_json", 400, "Malformed JSON", "body is not JSON (or has invalid Unicode, e.g. an unpaired surrogate)"),
    /// Valid JSON of the wrong shape.
    InvalidFormat => ("invalid_format", 422, "Wrong shape or types", "wrong shape or types, unknown field, `results` without `dataset`, ..."),
    /// An image id that is not a number or a string.
    InvalidImageId => ("invalid_image_id", 422, "Invalid image id", "an id that is not a number or a string"),
    /// A caption that is not a string.
    InvalidCaption => ("invalid_caption", 422, "Invalid caption", "a caption that is not a string"),
    /// A candidate for an image that has no entry among the references.
    UnknownImageId => ("unknown_image_id", 422, "Unknown image id", "a result for an image not in the references or dataset"),
    /// Two candidates for one image.
    DuplicateImageId => ("duplicate_image_id", 422, "Duplicate image id", "two candidates for one image"),
    /// A candidate whose image has zero references.
    MissingReferences => ("missing_references", 422, "Missing references", "an item without references (and no dataset)"),
    /// Strict mode: images of the dataset (or references) without a candidate.
    IncompleteResults => ("incomplete_results", 422, "Incomplete submission", "strict mode (`require_complete`, `--strict`): images of the dataset without a result (counts and the first ids missing)"),
    /// Splits: a scored image without a split label.
    MissingSplit => ("missing_split", 422, "Missing split", "splitting by a field that a scored image does not have"),
    /// A comparison of two result sets on different images.
    ImageSetsDiffer => ("image_sets_differ", 422, "Image sets differ", "a comparison of two result sets that do not cover the same images"),
    /// No candidates at all.
    EmptyResults => ("empty_results", 422, "Empty batch", "nothing to score"),
    /// Every reference of every evaluated image is empty: CIDEr has no document frequencies.
    NoReferenceNgrams => ("no_reference_ngrams", 422, "No reference n-grams", "every reference is empty: CIDEr is undefined"),
    /// An input file (CLI) that does not exist.
    FileNotFound => ("file_not_found", 422, "File not found", "an input file that does not exist (CLI: `--refs`, `--cands`, `--input`)"),
    /// An unknown metric name.
    UnknownMetric => ("unknown_metric", 422, "Unknown metric", "a metric name capscore does not know (`cider` is ambiguous on purpose)"),
    /// A limit (caption length, item count, ...) was exceeded.
    LimitExceeded => ("limit_exceeded", 422, "Limit exceeded", "too many items, references per item, or a caption too long (for SPICE: `--max-spice-caption-tokens`)"),
    /// The request's estimated CPU time or memory is over the server's per-request maximum.
    CostExceeded => ("cost_exceeded", 422, "Cost exceeded", "the request's estimated CPU time or memory is over `--max-request-cost` / `--max-request-memory` (split it)"),
    /// A requested metric whose resources are not loaded (library and CLI; the server answers
    /// `resources_not_loaded` before it gets here).
    MetricUnavailable => ("metric_unavailable", 422, "Metric unavailable", "a metric whose resources are not loaded (library, CLI)"),
    /// The dataset name is not `[A-Za-z0-9._-]{1,64}`.
    InvalidDatasetName => ("invalid_dataset_name", 422, "Invalid dataset name", "name outside `[A-Za-z0-9._-]{1,64}`"),
    /// The request body did not arrive in time.
    BodyTimeout => ("body_timeout", 408, "Request body too slow", "the body did not arrive within `--body-timeout`, or slower than `--min-body-rate`"),
    /// The request body exceeds the configured size.
    PayloadTooLarge => ("payload_too_large", 413, "Payload too large", "body (or its declared `Content-Length`) over `--max-body-bytes`, answered before reading it"),
    /// The request target (path and query) is longer than the server takes.
    UriTooLong => ("uri_too_long", 414, "URI too long", "request target over 8 KiB (the connection closes)"),
    /// The request's header fields are too many or too large.
    HeadersTooLarge => ("headers_too_large", 431, "Header fields too large", "more than 100 header fields, or over 32 KiB of them (the connection closes)"),
    /// No dataset of that name.
    UnknownDataset => ("unknown_dataset", 404, "Unknown dataset", "no such dataset"),
    /// No such route.
    NotFound => ("not_found", 404, "Not found", "no such route"),
    /// The route exists, but not with this method.
    MethodNotAllowed => ("method_not_allowed", 405, "Method not allowed", "known route, wrong method"),
    /// Missing or unknown API key.
    Unauthorized => ("unauthorized", 401, "Unauthorized", "missing or unknown API key"),
    /// The key's role may not do this.
    Forbidden => ("forbidden", 403, "Forbidden", "the key's role may not do this"),
    /// Too many computations in flight: retry later.
    Overloaded => ("overloaded", 503, "Overloaded", "too many computations in flight, or the memory budget (`--memory-budget`) is held by the requests in flight (with `Retry-After`)"),
    /// The registered datasets would hold more memory than the server's budget.
    MemoryBudgetFull => ("memory_budget_full", 507, "Memory budget full", "the registered datasets with this one would hold more than `--memory-budget` leaves (figures in the message): delete a dataset or raise the budget"),
    /// A requested metric's resources are not loaded.
    ResourcesNotLoaded => ("resources_not_loaded", 503, "Resources not loaded", "a requested metric's data is not loaded (names the metric)"),
    /// The computation took longer than the configured timeout.
    Timeout => ("timeout", 504, "Timeout", "computation over `--request-timeout`"),
    /// A bug (a panic in a metric, a failed write): details are in the server log.
    Internal => ("internal", 500, "Internal error", "a bug or a storage failure; details only in the server log"),
}

impl ErrorCode {
    /// The Markdown table of every code (docs/http.md, "Error codes"; a test keeps them equal).
    pub fn markdown_table() -> String {
        let mut s = String::from("| code | status | when |\n| --- | --- | --- |\n");
        for c in ErrorCode::ALL {
            s.push_str(&format!(
                "| `{}` | {} | {} |\n",
                c.as_str(),
                c.status(),
                c.when()
            ));
        }
        s
    }
}

/// Bad input: a stable code and a one-line message that names the offending ids or entries.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct InputError {
    /// Stable code.
    pub code: ErrorCode,
    /// Human-readable, one line.
    pub message: String,
}

impl InputError {
    /// A new error.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> InputError {
        let message: String = message.into();
        // One line, always: messages quote user data, which may contain line breaks.
        let message = message.replace(['\n', '\r'], " ");
        InputError { code, message }
    }
}
