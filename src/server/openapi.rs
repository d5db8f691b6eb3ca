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

/// Adds the 200 responses' examples to `spec`: what the engine answers for the request
/// examples of `POST /v1/score` and `POST /v1/compare`, computed here, so "Try it out" shows the
/// very numbers the server returns (`tests/api.rs` posts the request examples and compares).
pub fn add_response_examples(spec: &mut utoipa::openapi::OpenApi) {
    for (path, example) in [
        ("/v1/score", score_example()),
        ("/v1/compare", compare_example()),
    ] {
        let Some(example) = example else {
            continue;
        };
        let Some(op) = spec.paths.paths.get_mut(path).and_then(|p| p.post.as_mut()) else {
            continue;
        };
        if let Some(utoipa::openapi::RefOr::T(res)) = op.responses.responses.get_mut("200") {
            if let Some(c) = res.content.get_mut("application/json") {
                c.example = Some(example);
            }
        }
    }
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
