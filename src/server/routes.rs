//! Handlers and their request/response schemas. Every handler carries a `utoipa::path`
//! annotation listing its error responses; the router is built from these annotations
//! (utoipa-axum), so the served routes and `openapi.json` cannot diverge.
//!
//! Request bodies are read as bytes and parsed on the compute pool together with the scoring,
//! so no JSON parsing or metric work runs on a tokio worker.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::auth::{AdminRole, ScoreRole};
use super::error::{ApiError, Code, Problem};
use super::state::{App, AppState};
use super::telemetry;
use crate::dataset::{self, Dataset, PutOutcome};
use crate::engine::{self, DfSource, Metric, Options, Tokenized};
use crate::input::{self, Batch, Candidate, ErrorCode, ImageId, InputError, Item};
use crate::text::ptb;

/// An image id: an integer or a string (`1` and `1.0` are the same id; `"1"` is another).
#[derive(ToSchema)]
#[allow(dead_code)]
#[serde(untagged)]
pub enum ImageIdSchema {
    /// A number.
    Int(i64),
    /// A string.
    Str(String),
}

/// Where CIDEr's document frequencies come from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum CiderDf {
    /// The request's own references (pycocoevalcap's behaviour).
    #[default]
    Batch,
    /// The registered dataset's table: a subset is scored with the whole set's frequencies.
    Dataset,
}

/// One image to score.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ItemIn {
    /// The image id.
    #[schema(value_type = ImageIdSchema)]
    pub image_id: Value,
    /// The candidate caption.
    #[schema(value_type = String)]
    pub candidate: Value,
    /// Reference captions, in order. May be omitted when `dataset` is given (then they come
    /// from the dataset).
    #[serde(default)]
    #[schema(value_type = Option<Vec<String>>)]
    pub references: Option<Value>,
}

/// One COCO result (`results` format).
#[derive(Debug, Deserialize, ToSchema)]
#[allow(dead_code)]
pub struct ResultIn {
    /// The image id (must be in the dataset).
    #[schema(value_type = ImageIdSchema)]
    pub image_id: Value,
    /// The candidate caption.
    pub caption: String,
}

/// `POST /v1/score` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScoreRequest {
    /// Metrics: `bleu`, `meteor`, `rouge_l`, `cider_d`, `cider_original`, `spice` (default: bleu, meteor, rouge_l, cider_d, less any metric whose resources are not loaded; `spice` only when asked for).
    #[serde(default)]
    pub metrics: Option<Vec<String>>,
    /// Images to score, with their references (or without, given `dataset`).
    #[serde(default)]
    pub items: Option<Vec<ItemIn>>,
    /// COCO results `[{"image_id", "caption"}]` (needs `dataset`), instead of `items`.
    #[serde(default)]
    #[schema(value_type = Option<Vec<ResultIn>>)]
    pub results: Option<Vec<Value>>,
    /// A registered dataset supplying references and/or document frequencies.
    #[serde(default)]
    pub dataset: Option<String>,
    /// Document-frequency source for CIDEr (default `batch`).
    #[serde(default)]
    pub cider_df: Option<CiderDf>,
    /// With `spice`: list each image's candidate tuples and merged reference tuples with their
    /// match flags (`spice.per_image[].candidate_tuples` / `reference_tuples`). Default false;
    /// no other output changes.
    #[serde(default)]
    pub explain: Option<bool>,
}

/// BLEU's pooled statistics.
#[derive(Serialize, ToSchema)]
pub struct BleuTotals {
    /// Candidate words.
    pub testlen: u64,
    /// Closest reference lengths.
    pub reflen: u64,
    /// Candidate n-grams per order.
    pub guess: Vec<u64>,
    /// Clipped matches per order.
    pub correct: Vec<u64>,
    /// testlen / reflen (with the reference's smoothing).
    pub ratio: f64,
}

/// A warning about the input (`empty_candidate`, `empty_reference`, `single_image_corpus`).
#[derive(Serialize, ToSchema)]
pub struct WarningOut {
    /// Stable code.
    pub code: String,
    /// Explanation.
    pub message: String,
    /// Images concerned.
    #[schema(value_type = Vec<ImageIdSchema>)]
    pub image_ids: Vec<Value>,
}

/// One SPICE category: tuple counts and precision, recall, F (null where undefined: the
/// image has no reference tuples of that category; `All` is never null).
#[derive(Serialize, ToSchema)]
#[allow(dead_code)]
pub struct SpicePrf {
    /// Candidate tuples matching some reference tuple.
    pub tp: i64,
    /// Candidate tuples minus `tp`.
    pub fp: i64,
    /// Reference tuples minus `tp` (can be negative).
    #[serde(rename = "fn")]
    pub fn_: i64,
    /// Precision.
    pub precision: Option<f64>,
    /// Recall (can exceed 1).
    pub recall: Option<f64>,
    /// F-measure.
    pub f: Option<f64>,
}

/// A scene-graph tuple with its match flag (`explain`).
#[derive(Serialize, ToSchema)]
#[allow(dead_code)]
pub struct SpiceTuple {
    /// Each concept's strings (synonyms merged), in (subject, relation, object) order for
    /// relations, (object, attribute) for attributes.
    pub concepts: Vec<Vec<String>>,
    /// Candidate tuple: matches some reference tuple. Reference tuple: some candidate tuple
    /// matches it.
    pub matched: bool,
}

/// One image's SPICE details.
#[derive(Serialize, ToSchema)]
#[allow(dead_code)]
pub struct SpiceImageOut {
    /// The image id.
    #[schema(value_type = ImageIdSchema)]
    pub image_id: Value,
    /// All tuples (its `f` is the image's `SPICE`).
    #[serde(rename = "All")]
    pub all: SpicePrf,
    /// Objects.
    #[serde(rename = "Object")]
    pub object: SpicePrf,
    /// Attributes.
    #[serde(rename = "Attribute")]
    pub attribute: SpicePrf,
    /// Relations.
    #[serde(rename = "Relation")]
    pub relation: SpicePrf,
    /// Counts (attributes `one`..`ten`).
    #[serde(rename = "Cardinality")]
    pub cardinality: SpicePrf,
    /// Colours.
    #[serde(rename = "Color")]
    pub color: SpicePrf,
    /// Sizes.
    #[serde(rename = "Size")]
    pub size: SpicePrf,
    /// The candidate's tuples (with `explain`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub candidate_tuples: Option<Vec<SpiceTuple>>,
    /// The merged references' tuples (with `explain`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference_tuples: Option<Vec<SpiceTuple>>,
}

/// SPICE's categories (when SPICE was computed).
#[derive(Serialize, ToSchema)]
#[allow(dead_code)]
pub struct SpiceOut {
    /// Mean F per category (`All`, `Object`, `Attribute`, `Relation`, `Cardinality`, `Color`,
    /// `Size`) over the images where it is defined (null when it is defined for none).
    #[schema(value_type = Object, example = json!({"All": 0.21, "Object": 0.39, "Attribute": 0.07, "Relation": 0.05, "Cardinality": 0.0, "Color": 0.11, "Size": 0.04}))]
    pub aggregate: Value,
    /// Per image, in the order given.
    pub per_image: Vec<SpiceImageOut>,
}

/// Scores: the same keys and numbers as `capscore score`.
#[derive(Serialize, ToSchema)]
pub struct ScoreResponse {
    /// Corpus scores by key (`Bleu_1`..`Bleu_4`, `METEOR`, `ROUGE_L`, `CIDEr`, `CIDEr_original`, `SPICE`).
    #[schema(value_type = Object, example = json!({"Bleu_4": 0.19, "ROUGE_L": 0.41, "CIDEr": 0.63}))]
    pub aggregate: Value,
    /// Per image, in the order given: `image_id` and the scores.
    #[schema(value_type = Vec<Object>)]
    pub per_image: Vec<Value>,
    /// BLEU statistics (when BLEU was computed).
    pub bleu_totals: Option<BleuTotals>,
    /// SPICE's categories per image and on average (when SPICE was computed).
    pub spice: Option<SpiceOut>,
    /// Everything that determines the numbers: version, tokenizer, metric variants and
    /// parameters, the document-frequency source (with the dataset's content hash).
    pub signature: String,
    /// Warnings.
    pub warnings: Vec<WarningOut>,
}

/// A registered dataset.
#[derive(Serialize, ToSchema)]
pub struct DatasetInfo {
    /// Name.
    pub name: String,
    /// Number of images.
    pub images: usize,
    /// Number of reference captions.
    pub captions: usize,
    /// sha256 of the content (image ids and captions in order).
    pub sha256: String,
    /// Registration time (RFC 3339, UTC).
    pub created: String,
    /// What the registration did: `created`, `replaced` or `unchanged` (PUT only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
}

/// The list of datasets.
#[derive(Serialize, ToSchema)]
pub struct DatasetList {
    /// Datasets by name.
    pub datasets: Vec<DatasetInfo>,
}

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

fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// `secs` since the epoch as RFC 3339 UTC.
fn rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn info(ds: &Dataset, outcome: Option<PutOutcome>) -> DatasetInfo {
    DatasetInfo {
        name: ds.name.clone(),
        images: ds.image_count(),
        captions: ds.caption_count(),
        sha256: ds.sha256.clone(),
        created: rfc3339(ds.created),
        outcome: outcome.map(|o| {
            match o {
                PutOutcome::Created => "created",
                PutOutcome::Replaced => "replaced",
                PutOutcome::Unchanged => "unchanged",
            }
            .to_owned()
        }),
    }
}

fn json_response(status: StatusCode, bytes: Vec<u8>) -> Response {
    let mut res = (status, bytes).into_response();
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}

fn to_json_bytes<T: Serialize>(v: &T) -> Result<Vec<u8>, ApiError> {
    serde_json::to_vec(v).map_err(ApiError::internal)
}

/// Parses a JSON body: syntax errors are 400 `invalid_json`, shape errors 422 `invalid_format`.
fn parse_body<T: serde::de::DeserializeOwned>(body: &[u8], what: &str) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| {
        let code = match e.classify() {
            serde_json::error::Category::Data => ErrorCode::InvalidFormat,
            _ => ErrorCode::InvalidJson,
        };
        InputError::new(code, format!("{what}: {e}")).into()
    })
}

fn limit(msg: String) -> ApiError {
    InputError::new(ErrorCode::LimitExceeded, msg).into()
}

fn check_caption(app: &App, caption: &str, at: &dyn Fn() -> String) -> Result<(), ApiError> {
    let max = app.limits.max_caption_chars;
    if caption.len() > max && caption.chars().count() > max {
        return Err(limit(format!(
            "{}: caption longer than {max} characters (--max-caption-chars)",
            at()
        )));
    }
    Ok(())
}

fn caption_of(v: &Value, at: &dyn Fn() -> String) -> Result<String, ApiError> {
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

/// The scoring itself (runs on the compute pool).
fn score_blocking(app: &App, body: &[u8]) -> Result<Vec<u8>, ApiError> {
    let req: ScoreRequest = parse_body(body, "request body")?;
    let metrics = match &req.metrics {
        Some(list) => Metric::normalize(list.iter().map(|s| Metric::parse(s)))?,
        None => app.resources.default_metrics(),
    };
    app.resources.check(&metrics)?;
    let cider_df = req.cider_df.unwrap_or_default();
    let ds = match &req.dataset {
        Some(name) => {
            if !dataset::valid_name(name) {
                return Err(dataset::DatasetError::InvalidName(name.clone()).into());
            }
            Some(
                app.datasets
                    .get_or_load(name)
                    .ok_or_else(|| dataset::DatasetError::NotFound(name.clone()))?,
            )
        }
        None => None,
    };
    let bad = |m: &str| -> ApiError { InputError::new(ErrorCode::InvalidFormat, m).into() };
    if cider_df == CiderDf::Dataset && ds.is_none() {
        return Err(bad("cider_df \"dataset\" needs a \"dataset\""));
    }

    // Candidates (and inline references) with their limits.
    let lim = &app.limits;
    let mut inline: Vec<Item> = Vec::new();
    let mut cands: Vec<Candidate> = Vec::new();
    match (req.items, req.results) {
        (Some(_), Some(_)) => return Err(bad("give either \"items\" or \"results\", not both")),
        (None, None) => return Err(bad("missing \"items\" (or \"results\" with a \"dataset\")")),
        (None, Some(results)) => {
            if ds.is_none() {
                return Err(bad("\"results\" need a \"dataset\" holding the references"));
            }
            if results.len() > lim.max_items {
                return Err(limit(format!(
                    "{} results; at most {} per request (--max-items)",
                    results.len(),
                    lim.max_items
                )));
            }
            cands = input::parse_candidates(&Value::Array(results))?;
            for (i, c) in cands.iter().enumerate() {
                check_caption(app, &c.caption, &|| format!("results[{i}]"))?;
            }
        }
        (Some(items), None) => {
            if items.len() > lim.max_items {
                return Err(limit(format!(
                    "{} items; at most {} per request (--max-items)",
                    items.len(),
                    lim.max_items
                )));
            }
            let with_refs = items.iter().filter(|i| i.references.is_some()).count();
            if with_refs != 0 && with_refs != items.len() && ds.is_some() {
                return Err(bad(
                    "with a \"dataset\", either every item carries \"references\" or none does",
                ));
            }
            for (i, it) in items.into_iter().enumerate() {
                let image_id = ImageId::from_value(&it.image_id).ok_or_else(|| {
                    ApiError::from(InputError::new(
                        ErrorCode::InvalidImageId,
                        format!("items[{i}].image_id must be a number or a string"),
                    ))
                })?;
                let at = || format!("items[{i}] (image_id {image_id})");
                let candidate = caption_of(&it.candidate, &at)?;
                check_caption(app, &candidate, &at)?;
                match it.references {
                    None if ds.is_some() => cands.push(Candidate {
                        image_id,
                        caption: candidate,
                    }),
                    None => inline.push(Item {
                        image_id,
                        candidate,
                        references: Vec::new(),
                    }),
                    Some(Value::Array(refs)) => {
                        if refs.len() > lim.max_references {
                            return Err(limit(format!(
                                "{}: {} references; at most {} per item (--max-references)",
                                at(),
                                refs.len(),
                                lim.max_references
                            )));
                        }
                        let references = refs
                            .iter()
                            .enumerate()
                            .map(|(j, r)| {
                                let at = || format!("items[{i}].references[{j}]");
                                let s = caption_of(r, &at)?;
                                check_caption(app, &s, &at)?;
                                Ok(s)
                            })
                            .collect::<Result<Vec<_>, ApiError>>()?;
                        inline.push(Item {
                            image_id,
                            candidate,
                            references,
                        });
                    }
                    Some(_) => {
                        return Err(bad(&format!(
                            "{}: \"references\" must be a list of strings",
                            at()
                        )))
                    }
                }
            }
        }
    }

    let df_table = match (&ds, cider_df) {
        (Some(d), CiderDf::Dataset) => d.df_source(),
        _ => DfSource::Batch,
    };
    let want_spice = metrics.contains(&Metric::Spice);
    let opts = Options {
        metrics: &metrics,
        df: df_table,
        meteor: app.resources.meteor(),
        spice: app.resources.spice(),
        spice_refs: None,
        explain: req.explain.unwrap_or(false),
    };
    let (batch, report) = if cands.is_empty() {
        let batch = Batch::from_items(inline)?;
        (app.hooks)(&batch);
        let report = engine::score(&batch, &opts)?;
        (batch, report)
    } else {
        let Some(d) = &ds else {
            return Err(ApiError::internal("candidates without a dataset"));
        };
        let batch = input::assemble(&d.references, cands)?;
        (app.hooks)(&batch);
        // The whole dataset with batch document frequencies: the batch's table IS the dataset's
        // (same references, same tokenization), so the cached table and vectors serve, under the
        // batch label (the signature stays the CLI's).
        let full = cider_df == CiderDf::Batch && d.covers_all(&batch);
        let (refs_tok, prepared, retokenized) = d
            .prepare(&batch, cider_df == CiderDf::Dataset || full)
            .ok_or_else(|| ApiError::internal("batch does not match its dataset"))?;
        let batch_label = format!("batch(N={})", batch.items.len());
        // SPICE's reference graphs from the dataset's cache (built per image on first use; an
        // image with a reference re-tokenized for this subset gets its own graph).
        let spice_refs = match app.resources.spice() {
            Some(sp) if want_spice => d.spice_refs(sp, &batch, &refs_tok),
            _ => None,
        };
        let mut opts = if full && retokenized == 0 {
            Options {
                df: DfSource::Table {
                    table: &d.df,
                    interner: &d.interner,
                    label: &batch_label,
                },
                ..opts
            }
        } else {
            opts
        };
        if let Some((graphs, reused)) = &spice_refs {
            opts.spice_refs = Some(graphs);
            telemetry::spice_cached_refs(*reused);
        }
        let cand_text: Vec<&str> = batch.items.iter().map(|i| i.candidate.as_str()).collect();
        let tok = Tokenized {
            candidates: ptb::tokenize_stream(&cand_text),
            references: refs_tok,
        };
        let report = engine::score_prepared(&batch, &tok, &prepared, &opts)?;
        (batch, report)
    };
    for m in &metrics {
        telemetry::items_scored(m.name(), batch.items.len());
    }
    // The report's own `Serialize` (the same bytes as through `to_json`, key order preserved),
    // without building a JSON tree first.
    serde_json::to_vec(&report).map_err(ApiError::internal)
}

/// Score candidate captions.
#[utoipa::path(
    post,
    path = "/v1/score",
    tag = "scoring",
    request_body = ScoreRequest,
    security((), ("bearer" = [])),
    responses(
        (status = 200, description = "Scores (same numbers as the CLI)", body = ScoreResponse),
        (status = 400, description = "Malformed JSON (`invalid_json`)", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or unknown API key (`unauthorized`)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "Unknown dataset (`unknown_dataset`)", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body too large (`payload_too_large`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Bad input: `invalid_format`, `invalid_image_id`, `invalid_caption`, `unknown_metric`, `unknown_image_id`, `duplicate_image_id`, `missing_references`, `empty_results`, `no_reference_ngrams`, `limit_exceeded`, `invalid_dataset_name`", body = Problem, content_type = "application/problem+json"),
        (status = 500, description = "Internal error (`internal`)", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "Overloaded (`overloaded`, with Retry-After) or a metric's resources are not loaded (`resources_not_loaded`, names the metric)", body = Problem, content_type = "application/problem+json"),
        (status = 504, description = "Computation timed out (`timeout`)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn score(
    State(s): State<AppState>,
    _role: ScoreRole,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = body?;
    let app = s.0.clone();
    let bytes =
        s.0.compute
            .run(move || score_blocking(&app, &body))
            .await??;
    Ok(json_response(StatusCode::OK, bytes))
}

fn check_name(name: &str) -> Result<(), ApiError> {
    if dataset::valid_name(name) {
        Ok(())
    } else {
        Err(dataset::DatasetError::InvalidName(name.to_owned()).into())
    }
}

/// Register (or replace) a dataset of references.
///
/// Body: a COCO captions annotation file, or `{"references": {"<image_id>": ["...", ...]}}`.
/// The references are tokenized once and the CIDEr document-frequency table and reference
/// vectors are kept in memory; the dataset is written atomically to the data directory.
/// Re-registering identical content is a no-op (`outcome: unchanged`).
#[utoipa::path(
    put,
    path = "/v1/datasets/{name}",
    tag = "datasets",
    params(("name" = String, Path, description = "Dataset name, `[A-Za-z0-9._-]{1,64}`")),
    request_body(content = Object, description = "COCO captions annotation file or {\"references\": {...}}"),
    security((), ("bearer" = [])),
    responses(
        (status = 201, description = "Created", body = DatasetInfo),
        (status = 200, description = "Replaced, or unchanged (identical content)", body = DatasetInfo),
        (status = 400, description = "Malformed JSON (`invalid_json`)", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or unknown API key (`unauthorized`)", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Needs the admin role (`forbidden`)", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body too large (`payload_too_large`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Bad name (`invalid_dataset_name`) or content (`invalid_format`, `invalid_caption`, `invalid_image_id`, `empty_results`, `limit_exceeded`)", body = Problem, content_type = "application/problem+json"),
        (status = 500, description = "Storage failure (`internal`)", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "Overloaded (`overloaded`)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn put_dataset(
    State(s): State<AppState>,
    _role: AdminRole,
    Path(name): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    check_name(&name)?;
    let body = body?;
    let app = s.0.clone();
    let (outcome, ds) =
        s.0.compute
            .run(move || -> Result<_, ApiError> {
                let v: Value = parse_body(&body, "dataset body")?;
                let refs = input::parse_references(&v)?;
                for (id, caps) in &refs.images {
                    for (j, c) in caps.iter().enumerate() {
                        check_caption(&app, c, &|| format!("references of image_id {id}, #{j}"))?;
                    }
                }
                Ok(app.datasets.put(&name, refs, now_unix())?)
            })
            .await??;
    telemetry::datasets_loaded(s.0.datasets.len());
    tracing::info!(dataset = %ds.name, sha256 = %ds.sha256, images = ds.image_count(), ?outcome, "dataset registered");
    let status = if outcome == PutOutcome::Created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(json_response(
        status,
        to_json_bytes(&info(&ds, Some(outcome)))?,
    ))
}

/// List the registered datasets.
#[utoipa::path(
    get,
    path = "/v1/datasets",
    tag = "datasets",
    security((), ("bearer" = [])),
    responses(
        (status = 200, description = "Datasets", body = DatasetList),
        (status = 401, description = "Missing or unknown API key (`unauthorized`)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn list_datasets(
    State(s): State<AppState>,
    _role: ScoreRole,
) -> Result<Response, ApiError> {
    let list = DatasetList {
        datasets: s.0.datasets.list().iter().map(|d| info(d, None)).collect(),
    };
    Ok(json_response(StatusCode::OK, to_json_bytes(&list)?))
}

/// Describe one dataset.
#[utoipa::path(
    get,
    path = "/v1/datasets/{name}",
    tag = "datasets",
    params(("name" = String, Path, description = "Dataset name")),
    security((), ("bearer" = [])),
    responses(
        (status = 200, description = "The dataset", body = DatasetInfo),
        (status = 401, description = "Missing or unknown API key (`unauthorized`)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "Unknown dataset (`unknown_dataset`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Bad name (`invalid_dataset_name`)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn get_dataset(
    State(s): State<AppState>,
    _role: ScoreRole,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    check_name(&name)?;
    let ds =
        s.0.datasets
            .get(&name)
            .ok_or(dataset::DatasetError::NotFound(name))?;
    Ok(json_response(
        StatusCode::OK,
        to_json_bytes(&info(&ds, None))?,
    ))
}

/// Delete a dataset (memory and disk).
#[utoipa::path(
    delete,
    path = "/v1/datasets/{name}",
    tag = "datasets",
    params(("name" = String, Path, description = "Dataset name")),
    security((), ("bearer" = [])),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "Missing or unknown API key (`unauthorized`)", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Needs the admin role (`forbidden`)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "Unknown dataset (`unknown_dataset`)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Bad name (`invalid_dataset_name`)", body = Problem, content_type = "application/problem+json"),
        (status = 500, description = "Storage failure (`internal`)", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "Overloaded (`overloaded`)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn delete_dataset(
    State(s): State<AppState>,
    _role: AdminRole,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    check_name(&name)?;
    let app = s.0.clone();
    s.0.compute
        .run(move || app.datasets.delete(&name))
        .await??;
    telemetry::datasets_loaded(s.0.datasets.len());
    Ok(StatusCode::NO_CONTENT)
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

/// Unknown route: a problem document.
pub async fn not_found() -> ApiError {
    ApiError::new(Code::NotFound, "no such route; see /docs")
}

/// Known route, wrong method.
pub async fn method_not_allowed() -> ApiError {
    ApiError::new(Code::MethodNotAllowed, "method not allowed on this route")
}

/// A test hook called with every batch before scoring (fault injection in tests).
pub type Hook = Arc<dyn Fn(&Batch) + Send + Sync>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_formats_known_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_798_761_599), "2026-12-31T23:59:59Z");
    }
}
