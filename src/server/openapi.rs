//! The OpenAPI document's static part (info, security, tags). Paths and schemas are added by
//! utoipa-axum from the handlers' annotations as the router is built ([`super::api`]).

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

/// The API description.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "capscore",
        description = "Caption metrics computed as pycocoevalcap 1.2 does: BLEU-1..4, METEOR 1.5, ROUGE-L and CIDEr-D exactly; SPICE with a native parser (its scoring exact, its parses measured against official SPICE). Per-image and corpus scores, registered datasets with cached document frequencies, paired significance tests.",
        license(name = "MIT OR Apache-2.0")
    ),
    modifiers(&Security, &ErrorTable),
    tags(
        (name = "scoring", description = "Score captions"),
        (name = "datasets", description = "Registered reference sets with cached document frequencies"),
        (name = "operations", description = "Health, readiness, metrics")
    )
)]
pub struct ApiDoc;

struct Security;

/// Appends the error-code table (from the one table in `input/error.rs`) to the description.
struct ErrorTable;

impl Modify for ErrorTable {
    fn modify(&self, api: &mut utoipa::openapi::OpenApi) {
        let codes: Vec<String> = crate::input::ErrorCode::ALL
            .iter()
            .map(|c| format!("`{}` ({})", c.as_str(), c.status()))
            .collect();
        let d = api.info.description.get_or_insert_with(String::new);
        d.push_str(&format!(
            "\n\nErrors are `application/problem+json` (RFC 9457) with a stable `code`: {}. Warnings (`warnings[].code`): {}.",
            codes.join(", "),
            crate::engine::WarningCode::ALL
                .iter()
                .map(|w| format!("`{}`", w.as_str()))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
}

impl Modify for Security {
    fn modify(&self, api: &mut utoipa::openapi::OpenApi) {
        let comps = api.components.get_or_insert_with(Default::default);
        comps.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "API key (role `score` or `admin`); not needed when the server has no keys",
                    ))
                    .build(),
            ),
        );
    }
}

/// Adds the examples of every request body and response to `spec`, so that "Try it out" on
/// `/docs` sends working requests and every answer shows what the server really says:
/// - `POST /v1/score` and `POST /v1/compare`: the 200 examples are what the engine answers for
///   the request examples, computed here (`tests/api.rs` posts the request examples and
///   compares byte for byte); the request examples are copied onto the request bodies;
/// - the datasets' routes: the dataset the `PUT` request example registers, built here as the
///   registry builds it (`tests/api.rs` registers it on a fresh server and compares);
/// - the probes and `/metrics`: what a server with and without its data loaded answers;
/// - every `application/problem+json` response: one problem document per code its description
///   names (`ApiError::problem`, so type, title and status come from the one table of codes).
pub fn add_response_examples(spec: &mut utoipa::openapi::OpenApi) {
    for (path, example) in [
        ("/v1/score", score_example()),
        ("/v1/compare", compare_example()),
    ] {
        if let Some(example) = example {
            set_example(spec, path, "post", "200", "application/json", example);
        }
    }
    for (path, schema) in [
        (
            "/v1/score",
            request_example::<super::routes::score::ScoreRequest>(),
        ),
        (
            "/v1/compare",
            request_example::<super::routes::compare::CompareRequest>(),
        ),
    ] {
        let body = operation(spec, path, "post").and_then(|op| op.request_body.as_mut());
        if let (Some(body), Some(example)) = (body, schema) {
            for c in body.content.values_mut() {
                c.example.get_or_insert_with(|| example.clone());
            }
        }
    }
    dataset_examples(spec);
    ops_examples(spec);
    problem_examples(spec);
}

/// The dataset name the examples use (the `{name}` parameter's example).
pub const EXAMPLE_DATASET: &str = "tiny-val";

/// The registration time the dataset examples show (2026-12-05T00:00:00Z); a server shows
/// its own clock's.
const EXAMPLE_CREATED: u64 = 1_796_428_800;

/// The operation `method` of `path`.
fn operation<'a>(
    spec: &'a mut utoipa::openapi::OpenApi,
    path: &str,
    method: &str,
) -> Option<&'a mut utoipa::openapi::path::Operation> {
    let item = spec.paths.paths.get_mut(path)?;
    match method {
        "get" => item.get.as_mut(),
        "put" => item.put.as_mut(),
        "post" => item.post.as_mut(),
        "delete" => item.delete.as_mut(),
        _ => None,
    }
}

/// Sets the example of one response's content.
fn set_example(
    spec: &mut utoipa::openapi::OpenApi,
    path: &str,
    method: &str,
    status: &str,
    content_type: &str,
    example: serde_json::Value,
) {
    let Some(op) = operation(spec, path, method) else {
        return;
    };
    if let Some(utoipa::openapi::RefOr::T(res)) = op.responses.responses.get_mut(status) {
        if let Some(c) = res.content.get_mut(content_type) {
            c.example = Some(example);
        }
    }
}

/// The `GET`/`PUT` answers about the dataset the `PUT` request example registers.
fn dataset_examples(spec: &mut utoipa::openapi::OpenApi) {
    use super::routes::datasets::info;
    let request = operation(spec, "/v1/datasets/{name}", "put")
        .and_then(|op| op.request_body.as_ref())
        .and_then(|b| b.content.get("application/json"))
        .and_then(|c| c.example.clone());
    let Some(refs) = request.and_then(|r| crate::input::parse_references(&r).ok()) else {
        return;
    };
    let Ok(ds) = crate::dataset::Dataset::build(EXAMPLE_DATASET, refs, EXAMPLE_CREATED) else {
        return;
    };
    let json = |v: &super::routes::datasets::DatasetInfo| serde_json::to_value(v).ok();
    let path = "/v1/datasets/{name}";
    let examples = [
        (
            path,
            "put",
            "201",
            json(&info(&ds, Some(crate::dataset::PutOutcome::Created))),
        ),
        (
            path,
            "put",
            "200",
            json(&info(&ds, Some(crate::dataset::PutOutcome::Unchanged))),
        ),
        (path, "get", "200", json(&info(&ds, None))),
        (
            "/v1/datasets",
            "get",
            "200",
            json(&info(&ds, None)).map(|d| serde_json::json!({ "datasets": [d] })),
        ),
    ];
    for (path, method, status, example) in examples {
        if let Some(example) = example {
            set_example(spec, path, method, status, "application/json", example);
        }
    }
}

/// `/healthz`, `/readyz` (ready, and a server started `--offline` without its data) and
/// `/metrics`.
fn ops_examples(spec: &mut utoipa::openapi::OpenApi) {
    use serde_json::{json, Map, Value};
    let missing = super::state::Resources::with_meteor(None).with_spice(None);
    let mut ready = Map::new();
    let mut not_ready = Map::new();
    for (m, status) in missing.all() {
        ready.insert(m.name().to_owned(), Value::from("ready"));
        not_ready.insert(
            m.name().to_owned(),
            Value::from(status.err().unwrap_or_else(|| "ready".to_owned())),
        );
    }
    let json = "application/json";
    set_example(
        spec,
        "/healthz",
        "get",
        "200",
        json,
        json!({"status": "ok"}),
    );
    set_example(
        spec,
        "/readyz",
        "get",
        "200",
        json,
        json!({"status": "ready", "metrics": ready, "datasets": 1}),
    );
    set_example(
        spec,
        "/readyz",
        "get",
        "503",
        json,
        json!({"status": "not_ready", "metrics": not_ready, "datasets": 0}),
    );
    set_example(
        spec,
        "/metrics",
        "get",
        "200",
        "text/plain",
        Value::from(concat!(
            "# TYPE capscore_http_requests_total counter\n",
            "capscore_http_requests_total{route=\"/v1/score\",method=\"POST\",status=\"200\"} 12\n",
            "# TYPE capscore_items_scored_total counter\n",
            "capscore_items_scored_total 24\n",
            "# TYPE capscore_datasets_loaded gauge\n",
            "capscore_datasets_loaded 1\n",
            "# TYPE capscore_queue_depth gauge\n",
            "capscore_queue_depth 0\n",
        )),
    );
}

/// One problem document per code each `application/problem+json` response names in its
/// description (in backquotes); a response naming none gets its status's usual code.
fn problem_examples(spec: &mut utoipa::openapi::OpenApi) {
    use crate::input::ErrorCode;
    use utoipa::openapi::example::ExampleBuilder;
    for item in spec.paths.paths.values_mut() {
        for op in [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
        ]
        .into_iter()
        .flatten()
        {
            for (status, res) in op.responses.responses.iter_mut() {
                let utoipa::openapi::RefOr::T(res) = res else {
                    continue;
                };
                let Some(content) = res.content.get_mut("application/problem+json") else {
                    continue;
                };
                let mut codes: Vec<ErrorCode> = ErrorCode::ALL
                    .iter()
                    .copied()
                    .filter(|c| res.description.contains(&format!("`{}`", c.as_str())))
                    .filter(|c| c.status().to_string() == *status)
                    .collect();
                if codes.is_empty() {
                    codes.extend(
                        ErrorCode::ALL
                            .iter()
                            .find(|c| c.status().to_string() == *status),
                    );
                }
                let problems: Vec<(ErrorCode, serde_json::Value)> = codes
                    .into_iter()
                    .filter_map(|c| {
                        Some((c, serde_json::to_value(example_problem(c).problem()).ok()?))
                    })
                    .collect();
                match problems.as_slice() {
                    [] => {}
                    [(_, one)] => content.example = Some(one.clone()),
                    many => {
                        for (code, value) in many {
                            content.examples.insert(
                                code.as_str().to_owned(),
                                utoipa::openapi::RefOr::T(
                                    ExampleBuilder::new()
                                        .summary(code.title())
                                        .value(Some(value.clone()))
                                        .build(),
                                ),
                            );
                        }
                    }
                }
            }
        }
    }
}

/// A realistic error of each code: the detail the server gives for a typical cause (the
/// examples' own dataset and ids where one is named).
fn example_problem(code: crate::input::ErrorCode) -> super::error::ApiError {
    use super::error::ApiError;
    use crate::input::ErrorCode as C;
    let detail = match code {
        C::InvalidJson => "request body: expected `,` or `}` at line 1 column 42",
        C::InvalidFormat => "request body: unknown field `item`, expected one of `items`, `dataset`, `results`, `metrics`, ...",
        C::InvalidImageId => "items[0].image_id must be a number or a string (numbers beyond 64-bit integers, or beyond 2^53 with a fraction or exponent, cannot be told apart: send them as strings)",
        C::InvalidCaption => "items[0].candidate: caption must be a string, got null",
        C::UnknownImageId => "candidates for image_id 999 not in the references",
        C::DuplicateImageId => "more than one candidate for image_id 1 (to score several candidates per image: --multi-candidate, or \"multi_candidate\" / \"items[].candidates\" in a request)",
        C::MissingReferences => "no reference captions for image_id 2",
        C::IncompleteResults => "incomplete submission: 1 of the 3 images of the references have no result (2 scored); first missing: 3",
        C::MissingSplit => "1 scored image(s) have no \"domain\" to split by: image_id 3",
        C::ImageSetsDiffer => "the two result sets must cover the same images: 1 only in A (image_id 3), 0 only in B ()",
        C::EmptyResults => "no items to score (empty batch)",
        C::NoReferenceNgrams => "every reference caption of the evaluated images is empty after tokenization: CIDEr has no document frequencies",
        C::FileNotFound => "--refs: no such file: captions_val2017.json",
        C::UnknownMetric => "metric \"cider\" is ambiguous: use \"cider_d\" (pycocoevalcap's CIDEr key) or \"cider_original\" (Vedantam et al.)",
        C::LimitExceeded => "items[0].candidate: caption longer than 10000 characters (--max-caption-chars)",
        C::CostExceeded => "the request would take about 14.2 CPU seconds; at most 10 per request (--max-request-cost): split it, or register its references as a dataset",
        C::MetricUnavailable => "METEOR is not available: its resources are not loaded (run `capscore fetch`)",
        C::InvalidDatasetName => "invalid dataset name \"tiny val\": use 1 to 64 characters from A-Z a-z 0-9 . _ -",
        C::BodyTimeout => "the request body did not arrive in time: 65536 bytes in 120.0 s (--body-timeout 120 s, --min-body-rate 32768 bytes/s)",
        C::PayloadTooLarge => "request body exceeds the configured limit (--max-body-bytes)",
        C::UriTooLong => "request target of 9000 bytes; at most 8192",
        C::HeadersTooLarge => "101 header fields of 4040 bytes; at most 100 fields and 32768 bytes",
        C::UnknownDataset => "unknown dataset \"tiny-val\"",
        C::NotFound => "no such route; see /docs",
        C::MethodNotAllowed => "method not allowed on this route",
        C::Unauthorized => "missing API key: send Authorization: Bearer <key>",
        C::Forbidden => "this API key's role may not do this (dataset writes need the admin role)",
        C::Overloaded => return ApiError::overloaded(),
        C::MemoryBudgetFull => "dataset \"tiny-val\" takes about 12 MiB in memory; the other registered datasets hold 2540 MiB of the 2560 MiB budget (--memory-budget): delete a dataset or raise the budget",
        C::ResourcesNotLoaded => {
            let none = super::state::Resources::with_meteor(None).with_spice(None);
            return none
                .check(&[crate::engine::Metric::Meteor])
                .err()
                .unwrap_or_else(|| ApiError::new(code, "metric meteor is not available"));
        }
        C::Timeout => "the computation was cancelled (its request timed out or its client went away)",
        C::Internal => "internal error; the server log has the details",
    };
    ApiError::new(code, detail)
}

/// The request example of a schema.
fn request_example<T: utoipa::ToSchema>() -> Option<serde_json::Value> {
    match T::schema() {
        utoipa::openapi::RefOr::T(utoipa::openapi::schema::Schema::Object(o)) =>
        {
            #[allow(deprecated)]
            o.example.clone()
        }
        _ => None,
    }
}

fn score_example() -> Option<serde_json::Value> {
    use crate::engine::{self, Options};
    let req = request_example::<super::routes::score::ScoreRequest>()?;
    let metrics = example_metrics(&req)?;
    let items = req["items"].as_array()?;
    let cands: Vec<serde_json::Value> = items
        .iter()
        .map(|i| serde_json::json!({"image_id": i["image_id"], "caption": i["candidate"]}))
        .collect();
    let refs: serde_json::Map<String, serde_json::Value> = items
        .iter()
        .map(|i| (i["image_id"].to_string(), i["references"].clone()))
        .collect();
    let job = engine::Job {
        candidates: crate::input::parse_candidates(&serde_json::Value::Array(cands)).ok()?,
        references: engine::Refs::Owned(
            crate::input::parse_references(&serde_json::Value::Object(refs)).ok()?,
        ),
        kind: engine::Kind::Plain,
        options: Options::new(&metrics),
    };
    let report = engine::run(job).ok()?.into_report().ok()?;
    serde_json::to_value(super::routes::score::ScoreOutput::Report(Box::new(report))).ok()
}

fn compare_example() -> Option<serde_json::Value> {
    use crate::engine::compare::CompareSpec;
    use crate::engine::{self, Options};
    let req = request_example::<super::routes::compare::CompareRequest>()?;
    let metrics = example_metrics(&req)?;
    let defaults = CompareSpec::default();
    let spec = CompareSpec {
        samples: req["samples"]
            .as_u64()
            .map_or(defaults.samples, |n| n as u32),
        trials: req["trials"].as_u64().map_or(defaults.trials, |n| n as u32),
        ..defaults
    };
    let job = engine::Job {
        candidates: crate::input::parse_candidates(&req["a"]).ok()?,
        references: engine::Refs::Owned(crate::input::parse_references(&req["references"]).ok()?),
        kind: engine::Kind::Compare {
            b: crate::input::parse_candidates(&req["b"]).ok()?,
            spec,
        },
        options: Options::new(&metrics),
    };
    serde_json::to_value(engine::run(job).ok()?.into_comparison().ok()?).ok()
}

/// The metrics a request example names.
fn example_metrics(req: &serde_json::Value) -> Option<Vec<crate::engine::Metric>> {
    let names = req["metrics"].as_array()?;
    names
        .iter()
        .map(|m| serde_json::from_value(m.clone()).ok())
        .collect::<Option<Vec<_>>>()
        .and_then(|list| crate::engine::Metric::normalize(list.into_iter().map(Ok)).ok())
}
