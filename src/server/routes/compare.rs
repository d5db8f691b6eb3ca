//! `POST /v1/compare`: two result sets on the same images, scored against inline references
//! or a registered dataset, compared by [`engine::compare::compare`] on the compute pool.
//!
//! Must not: tokenize, assemble or score (the engine does).

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::response::Response;
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::score::MAX_BOOTSTRAP_WORK;
use super::{check_caption, compute_json, limit, parse_body};
use crate::engine::compare::{CompareReport, CompareSpec};
use crate::engine::{self, Metric, Options};
use crate::input::{self, Candidate, ErrorCode, InputError};
use crate::server::auth::ScoreRole;
use crate::server::cost;
use crate::server::error::responses as R;
use crate::server::error::{ApiError, Problem};
use crate::server::state::{App, AppState, Fate};

/// `POST /v1/compare` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({
    "metrics": ["bleu", "cider_d"],
    "references": {
        "1": ["A dog runs on the grass.", "A brown dog running in a park."],
        "2": ["A cat sleeps on a sofa.", "A grey cat lying on a couch."],
        "3": ["A surfer rides a large wave.", "A man surfing on a wave."]
    },
    "a": {"1": "a dog", "2": "a cat", "3": "a man"},
    "b": {"1": "a dog running on the grass", "2": "a cat sleeping on a sofa", "3": "a man surfing on a wave"},
    "samples": 200,
    "trials": 200
}))]
pub struct CompareRequest {
    /// Metrics (as for `/v1/score`; default: bleu, meteor, rouge_l, cider_d less any metric
    /// whose resources are not loaded).
    #[serde(default)]
    pub metrics: Option<Vec<Metric>>,
    /// A registered dataset holding the references (or give `references`).
    #[serde(default)]
    pub dataset: Option<String>,
    /// Inline references: a COCO captions annotation object or `{"<image_id>": ["ref", ...]}`.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub references: Option<Value>,
    /// System A (the baseline): COCO results `[{"image_id", "caption"}]` or
    /// `{"<image_id>": "caption"}`.
    #[schema(value_type = Object)]
    pub a: Value,
    /// System B, on the same images.
    #[schema(value_type = Object)]
    pub b: Value,
    /// Paired bootstrap resamples (default 1,000; `samples x images` at most 50,000,000).
    #[serde(default)]
    pub samples: Option<u32>,
    /// Approximate-randomization trials (default 1,000; `trials x images` at most 50,000,000).
    #[serde(default)]
    pub trials: Option<u32>,
    /// Seed of both tests (default 0).
    #[serde(default)]
    pub seed: Option<u64>,
    /// Confidence level of the interval (default 0.95).
    #[serde(default)]
    pub level: Option<f64>,
}

fn bad(m: impl Into<String>) -> ApiError {
    InputError::new(ErrorCode::InvalidFormat, m).into()
}

/// One system's results, checked against the limits.
fn results(app: &App, v: &Value, side: &str) -> Result<Vec<Candidate>, ApiError> {
    let cands = input::parse_candidates(v)
        .map_err(|e| ApiError::from(InputError::new(e.code, format!("{side}: {}", e.message))))?;
    if cands.len() > app.limits.max_items {
        return Err(limit(format!(
            "{side}: {} results; at most {} per request (--max-items)",
            cands.len(),
            app.limits.max_items
        )));
    }
    for (i, c) in cands.iter().enumerate() {
        check_caption(app, &c.caption, &|| format!("{side}[{i}]"))?;
    }
    Ok(cands)
}

fn compare_blocking(app: &App, body: &[u8], fate: &Fate) -> Result<Vec<u8>, ApiError> {
    // Memory is reserved before the body is parsed, the rest once its captions are counted
    // (as for `/v1/score`).
    let mut reserved = cost::Reservation::default();
    let parse = cost::parse_memory(body);
    app.budget
        .reserve(&mut reserved, parse, "parsing the request")?;
    let req: CompareRequest = parse_body(body, "request body")?;
    let metrics = match &req.metrics {
        Some(list) => Metric::normalize(list.iter().copied().map(Ok))?,
        None => app.resources.default_metrics(),
    };
    app.resources.check(&metrics)?;
    let defaults = CompareSpec::default();
    let spec = CompareSpec {
        samples: req.samples.unwrap_or(defaults.samples),
        trials: req.trials.unwrap_or(defaults.trials),
        seed: req.seed.unwrap_or(defaults.seed),
        level: req.level.unwrap_or(defaults.level),
    };
    spec.check().map_err(bad)?;
    let (a, b) = (results(app, &req.a, "a")?, results(app, &req.b, "b")?);
    let n = a.len().max(b.len()) as u64;
    let work = u64::from(spec.samples.max(spec.trials)) * n;
    if work > MAX_BOOTSTRAP_WORK {
        return Err(limit(format!(
            "{} samples / {} trials x {n} images = {work} image draws; at most {MAX_BOOTSTRAP_WORK} per request",
            spec.samples, spec.trials
        )));
    }
    let (dataset, inline) = match (&req.dataset, &req.references) {
        (Some(_), Some(_)) => {
            return Err(bad("give either \"dataset\" or \"references\", not both"))
        }
        (None, None) => return Err(bad("missing \"references\" (or a \"dataset\")")),
        (Some(name), None) => (Some(app.datasets.named(name)?), None),
        (None, Some(v)) => {
            let refs = input::parse_references(v).map_err(|e| {
                ApiError::from(InputError::new(
                    e.code,
                    format!("references: {}", e.message),
                ))
            })?;
            for (id, caps) in &refs.images {
                if caps.len() > app.limits.max_references {
                    return Err(limit(format!(
                        "references of image_id {id}: {} references; at most {} per image (--max-references)",
                        caps.len(),
                        app.limits.max_references
                    )));
                }
                for (j, c) in caps.iter().enumerate() {
                    check_caption(app, c, &|| format!("references of image_id {id}, #{j}"))?;
                }
            }
            (None, Some(refs))
        }
    };
    // Both systems are scored, the references once per system.
    cost::admit_job(
        (&app.budget, app.limits.max_spice_caption_tokens),
        &metrics,
        parse,
        (&[&a, &b], 2),
        match (&dataset, &inline) {
            (Some(d), _) => cost::RefSize::Dataset(d),
            (None, Some(r)) => cost::RefSize::Inline(r),
            (None, None) => return Err(ApiError::internal("a comparison without references")),
        },
        &mut reserved,
    )?;
    let opts = Options {
        meteor: app.resources.meteor(),
        spice: app.resources.spice(),
        cancel: Some(&|| fate.is_abandoned()),
        ..Options::new(&metrics)
    };
    let references = match (&dataset, inline) {
        (Some(d), _) => engine::Refs::Source(&**d),
        (None, Some(refs)) => engine::Refs::Owned(refs),
        (None, None) => return Err(ApiError::internal("a comparison without references")),
    };
    let job = engine::Job {
        candidates: a,
        references,
        kind: engine::Kind::Compare { b, spec },
        options: opts,
    };
    let report: CompareReport = engine::run(job)?.into_comparison()?;
    let bytes = serde_json::to_vec(&report).map_err(ApiError::internal)?;
    drop(report);
    app.settle(dataset.as_deref(), reserved);
    Ok(bytes)
}

/// Compare two systems' captions on the same images: per metric B - A, its paired bootstrap
/// interval and p-value, and an approximate-randomization p-value.
#[utoipa::path(
    post,
    path = "/v1/compare",
    tag = "scoring",
    request_body = CompareRequest,
    security((), ("bearer" = [])),
    responses(
        (status = 200, description = "The comparison", body = CompareReport),
        R::InvalidJson, R::Unauthorized, R::UnknownDataset, R::TooLarge,
        (status = 422, description = "Bad input: `invalid_format`, `image_sets_differ`, `unknown_image_id`, `duplicate_image_id`, `invalid_caption`, `unknown_metric`, `limit_exceeded`, `cost_exceeded`", body = Problem, content_type = "application/problem+json"),
        R::Internal,
        R::Unavailable,
        R::TimedOut,
    )
)]
pub async fn compare(
    State(s): State<AppState>,
    _role: ScoreRole,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    compute_json(&s, body?, compare_blocking).await
}
