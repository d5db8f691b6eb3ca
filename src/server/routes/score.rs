//! `POST /v1/score`: turns a request into a job (candidates, a reference source, options) and
//! hands it to [`engine::score`] on the compute pool. The response is the engine's [`Report`].
//!
//! Must not: tokenize, assemble or score (the engine does).

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::response::Response;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::{caption_of, check_caption, compute_json, limit, parse_body};

use crate::engine::bootstrap::BootstrapSpec;
use crate::engine::report::ImageIdSchema;
use crate::engine::{self, DfChoice, Metric, Options, ReferenceSource, Report};
use crate::input::{self, Candidate, ErrorCode, ImageId, ImageKey, InputError, Item, References};
use crate::server::auth::ScoreRole;
use crate::server::cost;
use crate::server::error::responses as R;
use crate::server::error::{ApiError, Problem};
use crate::server::state::{App, AppState, Fate};
use crate::server::telemetry;
use rustc_hash::FxHashMap;

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

/// `cider_df` as a request gives it: a source name, or another dataset.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum CiderDfIn {
    /// `"batch"` or `"dataset"`.
    Named(CiderDf),
    /// `{"dataset": "<name>"}`: that registered dataset's table.
    From {
        /// The dataset whose references give the document frequencies.
        dataset: String,
    },
}

/// One image to score.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ItemIn {
    /// The image id.
    #[schema(value_type = ImageIdSchema)]
    pub image_id: Value,
    /// The candidate caption (or `candidates`).
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub candidate: Option<Value>,
    /// Several candidate captions (instead of `candidate`): each is scored and one value per
    /// image selected (see `multi_candidate`); every item must have the same number.
    #[serde(default)]
    #[schema(value_type = Option<Vec<String>>)]
    pub candidates: Option<Vec<Value>>,
    /// Reference captions, in order. May be omitted when `dataset` is given (then they come
    /// from the dataset).
    #[serde(default)]
    #[schema(value_type = Option<Vec<String>>)]
    pub references: Option<Value>,
    /// The image's split (a split table: each split is also scored as its own corpus, output
    /// `splits`). Given on one item, it must be given on every item.
    #[serde(default)]
    pub split: Option<String>,
}

/// The response shape.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ResponseFormat {
    /// capscore's report.
    #[default]
    Json,
    /// EvalAI's result shape: `{"result": [{"<split>": {"<metric>": value}}, ..., {"entire": {...}}]}`.
    Evalai,
}

/// One COCO result (`results` format).
// Documents the shape only: requests are read by `input::parse_candidates_text`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ResultIn {
    /// The image id (must be in the dataset).
    #[schema(value_type = ImageIdSchema)]
    pub image_id: Value,
    /// The candidate caption.
    pub caption: String,
}

/// The response: the report, or (`"format": "evalai"`) EvalAI's result shape.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum ScoreOutput {
    /// capscore's report (`"format": "json"`, the default).
    Report(Box<Report>),
    /// EvalAI's result shape (`"format": "evalai"`).
    EvalAi(engine::leaderboard::EvalAi),
}

/// `POST /v1/score` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({
    "metrics": ["bleu", "rouge_l", "cider_d"],
    "items": [
        {"image_id": 1, "candidate": "a dog running on the grass",
         "references": ["A dog runs on the grass.", "A brown dog running in a park."]},
        {"image_id": 2, "candidate": "a cat sleeping on a sofa",
         "references": ["A cat sleeps on a sofa.", "A grey cat lying on a couch."]},
        {"image_id": 3, "candidate": "a man riding a wave on a surfboard",
         "references": ["A surfer rides a large wave.", "A man surfing on a wave."]}
    ]
}))]
pub struct ScoreRequest {
    /// Metrics: `bleu`, `meteor`, `rouge_l`, `cider_d`, `cider_original`, `spice` (default: bleu, meteor, rouge_l, cider_d, less any metric whose resources are not loaded; `spice` only when asked for).
    #[serde(default)]
    pub metrics: Option<Vec<Metric>>,
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
    /// Document-frequency source for CIDEr: `"batch"` (default), `"dataset"` (the `dataset`'s
    /// table), or `{"dataset": "<name>"}` (another registered dataset's table, e.g. COCO
    /// train's for a val subset; the signature names it with its content hash).
    #[serde(default)]
    pub cider_df: Option<CiderDfIn>,
    /// Percentile bootstrap intervals of every aggregate (`{"samples": 1000, "seed": 0,
    /// "level": 0.95}`): images resampled with replacement, aggregates recomputed from per-image
    /// statistics (CIDEr-D's document frequencies held fixed). At most 10,000 samples and
    /// `samples x images` at most 50,000,000.
    #[serde(default)]
    pub bootstrap: Option<BootstrapSpec>,
    /// Split table by a label field of the `dataset` (from its file's `images[]`, e.g. nocaps'
    /// `domain`; `GET /v1/datasets/{name}` lists them): each split's images are also scored
    /// as their own corpus (output `splits`), as running pycocoevalcap on them alone would.
    /// Items may give their split instead (`items[].split`).
    #[serde(default)]
    pub split_by: Option<String>,
    /// Strict mode: every image of the `dataset` must have exactly one result (else
    /// `incomplete_results` with the counts and the first ids missing). A dataset registered
    /// with `require_complete=true` is always strict. Without it, missing images give a
    /// `partial_results` warning.
    #[serde(default)]
    pub require_complete: Option<bool>,
    /// Response shape: `json` (the report, default) or `evalai` (EvalAI's result shape).
    #[serde(default)]
    pub format: Option<ResponseFormat>,
    /// With `spice`: list each image's candidate tuples and merged reference tuples with their
    /// match flags (`spice.per_image[].candidate_tuples` / `reference_tuples`). Default false;
    /// no other output changes.
    #[serde(default)]
    pub explain: Option<bool>,
    /// Several candidates per image (`items[].candidates`, or `results` repeating an image id):
    /// how one value per image is selected. Given, or implied by `items[].candidates` (then
    /// `{"select": "max"}`). The `aggregate` is the mean over images of the selected values
    /// (aac-metrics' definition; SPIDEr-max with `"metrics": ["spider"]`).
    #[serde(default)]
    pub multi_candidate: Option<MultiCandidateIn>,
}

/// `multi_candidate`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MultiCandidateIn {
    /// `max` (default: the candidate with the highest `by` score; every metric takes that
    /// candidate's value) or `mean` (each metric's mean over the candidates).
    #[serde(default)]
    pub select: engine::multi::Selection,
    /// With `max`: the output key that picks the candidate (`SPIDEr`, `CIDEr`, `Bleu_4`, ...).
    /// Default: `SPIDEr` when computed, else `CIDEr`, else the first key computed. With
    /// `mean`: refused (422 `invalid_format`).
    #[serde(default)]
    pub by: Option<String>,
}

/// Most image draws (`samples x images`) one request's bootstrap may cost (about 1 s of CPU).
pub(crate) const MAX_BOOTSTRAP_WORK: u64 = 50_000_000;

/// What a request asks for, as a job for the engine.
struct Job {
    candidates: Vec<Candidate>,
    /// Inline references (from `items`), when the request carries them.
    inline: Option<References>,
    /// Split labels given by the items (`items[].split`).
    labels: Option<FxHashMap<ImageKey, String>>,
    /// Some item gave `candidates`.
    multi: bool,
}

/// Reads `items` (with or without references) or `results`, checking the limits.
fn job_of(app: &App, req: ScoreRequest, with_dataset: bool) -> Result<Job, ApiError> {
    let bad = |m: &str| -> ApiError { InputError::new(ErrorCode::InvalidFormat, m).into() };
    let lim = &app.limits;
    let too_many = |n: usize, what: &str| -> Result<(), ApiError> {
        if n > lim.max_items {
            return Err(limit(format!(
                "{n} {what}; at most {} per request (--max-items)",
                lim.max_items
            )));
        }
        Ok(())
    };
    match (req.items, req.results) {
        (Some(_), Some(_)) => Err(bad("give either \"items\" or \"results\", not both")),
        (None, None) => Err(bad("missing \"items\" (or \"results\" with a \"dataset\")")),
        (None, Some(results)) => {
            if !with_dataset {
                return Err(bad("\"results\" need a \"dataset\" holding the references"));
            }
            too_many(results.len(), "results")?;
            let candidates = input::parse_candidates(&Value::Array(results))?;
            for (i, c) in candidates.iter().enumerate() {
                check_caption(app, &c.caption, &|| format!("results[{i}]"))?;
            }
            Ok(Job {
                candidates,
                inline: None,
                labels: None,
                multi: false,
            })
        }
        (Some(items), None) => {
            too_many(items.len(), "items")?;
            let with_refs = items.iter().filter(|i| i.references.is_some()).count();
            if with_refs != 0 && with_refs != items.len() && with_dataset {
                return Err(bad(
                    "with a \"dataset\", either every item carries \"references\" or none does",
                ));
            }
            let inline_refs = !with_dataset || with_refs != 0;
            let with_split = items.iter().filter(|i| i.split.is_some()).count();
            if with_split != 0 && with_split != items.len() {
                return Err(bad("either every item gives its \"split\" or none does"));
            }
            let mut labels = (with_split != 0).then(FxHashMap::default);
            let multi = items.iter().any(|i| i.candidates.is_some());
            let mut candidates = Vec::with_capacity(items.len());
            let mut inline = Vec::with_capacity(if inline_refs { items.len() } else { 0 });
            for (i, it) in items.into_iter().enumerate() {
                let image_id = ImageId::from_value(&it.image_id).ok_or_else(|| {
                    ApiError::from(InputError::new(
                        ErrorCode::InvalidImageId,
                        format!("items[{i}].image_id must be a number or a string (numbers beyond 64-bit integers, or beyond 2^53 with a fraction or exponent, cannot be told apart: send them as strings)"),
                    ))
                })?;
                let at = || format!("items[{i}] (image_id {image_id})");
                if let (Some(l), Some(split)) = (labels.as_mut(), it.split) {
                    l.insert(image_id.key.clone(), split);
                }
                let captions = match (&it.candidate, &it.candidates) {
                    (Some(c), None) => vec![caption_of(c, &at)?],
                    (None, Some(list)) if !list.is_empty() => list
                        .iter()
                        .enumerate()
                        .map(|(j, c)| caption_of(c, &|| format!("items[{i}].candidates[{j}]")))
                        .collect::<Result<Vec<_>, ApiError>>()?,
                    (None, Some(_)) => return Err(bad(&format!("{}: empty \"candidates\"", at()))),
                    (Some(_), Some(_)) => {
                        return Err(bad(&format!(
                            "{}: give either \"candidate\" or \"candidates\", not both",
                            at()
                        )))
                    }
                    (None, None) => return Err(bad(&format!("{}: missing \"candidate\"", at()))),
                };
                for c in &captions {
                    check_caption(app, c, &at)?;
                }
                too_many(candidates.len() + captions.len(), "candidates")?;
                let caption = captions[0].clone();
                candidates.extend(captions.into_iter().map(|caption| Candidate {
                    image_id: image_id.clone(),
                    caption,
                }));
                let references = match it.references {
                    None if with_dataset => continue,
                    None => Vec::new(),
                    Some(Value::Array(list)) => {
                        if list.len() > lim.max_references {
                            return Err(limit(format!(
                                "{}: {} references; at most {} per item (--max-references)",
                                at(),
                                list.len(),
                                lim.max_references
                            )));
                        }
                        list.iter()
                            .enumerate()
                            .map(|(j, r)| {
                                let at = || format!("items[{i}].references[{j}]");
                                let s = caption_of(r, &at)?;
                                check_caption(app, &s, &at)?;
                                Ok(s)
                            })
                            .collect::<Result<Vec<_>, ApiError>>()?
                    }
                    Some(_) => {
                        return Err(bad(&format!(
                            "{}: \"references\" must be a list of strings",
                            at()
                        )))
                    }
                };
                inline.push(Item {
                    image_id,
                    candidate: caption,
                    references,
                });
            }
            if inline_refs {
                // The items' checks (duplicates, references); one candidate per image unless
                // several were given.
                let (firsts, refs) = input::split_items(inline)?;
                Ok(Job {
                    candidates: if multi { candidates } else { firsts },
                    inline: Some(refs),
                    labels,
                    multi,
                })
            } else {
                Ok(Job {
                    candidates,
                    inline: None,
                    labels,
                    multi,
                })
            }
        }
    }
}

/// The scoring itself (runs on the compute pool).
fn score_blocking(app: &App, body: &[u8], fate: &Fate) -> Result<Vec<u8>, ApiError> {
    // Memory is reserved before the body is parsed, the rest once its captions are counted.
    let mut reserved = cost::Reservation::default();
    let parse = cost::parse_memory(body);
    app.budget
        .reserve(&mut reserved, parse, "parsing the request")?;
    #[cfg(feature = "test-support")]
    (app.hook)(body);
    let req: ScoreRequest = parse_body(body, "request body")?;
    let metrics = match &req.metrics {
        Some(list) => Metric::normalize(list.iter().copied().map(Ok))?,
        None => app.resources.default_metrics(),
    };
    app.resources.check(&metrics)?;
    let (cider_df, df_from) = match req.cider_df.clone() {
        None => (CiderDf::Batch, None),
        Some(CiderDfIn::Named(c)) => (c, None),
        Some(CiderDfIn::From { dataset }) => (CiderDf::Batch, Some(app.datasets.named(&dataset)?)),
    };
    let ds = match &req.dataset {
        Some(name) => Some(app.datasets.named(name)?),
        None => None,
    };
    if cider_df == CiderDf::Dataset && ds.is_none() {
        return Err(InputError::new(
            ErrorCode::InvalidFormat,
            "cider_df \"dataset\" needs a \"dataset\"",
        )
        .into());
    }
    let explain = req.explain.unwrap_or(false);
    let bootstrap = req.bootstrap;
    let format = req.format.unwrap_or_default();
    let strict = req.require_complete.unwrap_or(false)
        || ds.as_ref().is_some_and(|d| d.meta.require_complete);
    let split_by = req.split_by.clone();
    let multi_in = req.multi_candidate.clone();
    let mut job = job_of(app, req, ds.is_some())?;
    let multi = match multi_in {
        Some(m) => Some(m),
        None if job.multi => Some(MultiCandidateIn::default()),
        None => None,
    };
    let labels: Option<(String, FxHashMap<ImageKey, String>)> = match (split_by, job.labels.take())
    {
        (Some(_), Some(_)) => {
            return Err(InputError::new(
                ErrorCode::InvalidFormat,
                "give either \"split_by\" or \"items[].split\", not both",
            )
            .into())
        }
        (None, Some(l)) => Some(("request".to_owned(), l)),
        (Some(field), None) => {
            let d = ds.as_ref().ok_or_else(|| {
                ApiError::from(InputError::new(
                    ErrorCode::InvalidFormat,
                    "\"split_by\" needs a \"dataset\" (or give \"items[].split\")",
                ))
            })?;
            let l = d.meta.labels.get(&field).ok_or_else(|| {
                ApiError::from(InputError::new(
                    ErrorCode::InvalidFormat,
                    format!(
                        "dataset {:?} has no label field {field:?} to split by (its label fields: {:?})",
                        d.name,
                        d.meta.labels.names()
                    ),
                ))
            })?;
            Some((field, l.clone()))
        }
        (None, None) => None,
    };
    let splits = labels
        .as_ref()
        .map(|(field, labels)| engine::leaderboard::SplitBy { field, labels });
    let multi = multi.map(|m| engine::multi::MultiSpec {
        select: m.select,
        by: m.by,
    });
    let kind = engine::Kind::of(splits, multi)?;
    let opts = Options {
        df: match (cider_df, &ds, &df_from) {
            (_, _, Some(from)) => from.df_table().map_or(DfChoice::Batch, DfChoice::Table),
            (CiderDf::Dataset, Some(d), None) => {
                d.df_table().map_or(DfChoice::Source, DfChoice::Table)
            }
            _ => DfChoice::Batch,
        },
        bootstrap,
        meteor: app.resources.meteor(),
        spice: app.resources.spice(),
        explain,
        require_complete: strict,
        cancel: Some(&|| fate.is_abandoned()),
        ..Options::new(&metrics)
    };
    let runs = kind.runs(&job.candidates);
    let references = match (job.inline, &ds) {
        (Some(refs), _) => engine::Refs::Owned(refs),
        (None, Some(d)) => engine::Refs::Source(&**d),
        (None, None) => return Err(ApiError::internal("a job without references")),
    };
    let work = engine::Job {
        candidates: job.candidates,
        references,
        kind,
        options: opts,
    };
    // What does not go together is refused before anything is reserved.
    work.check()?;
    if let Some(b) = &bootstrap {
        let images = work.candidates.len() as u64;
        let draws = u64::from(b.samples) * images;
        if draws > MAX_BOOTSTRAP_WORK {
            return Err(limit(format!(
                "bootstrap: {} samples x {images} images = {draws} image draws; at most {MAX_BOOTSTRAP_WORK} per request",
                b.samples,
            )));
        }
    }
    let refs_size = match (&work.references, &ds) {
        (engine::Refs::Owned(refs), _) => cost::RefSize::Inline(refs),
        (engine::Refs::Source(_), Some(d)) => cost::RefSize::Dataset(d),
        (engine::Refs::Source(_), None) => {
            return Err(ApiError::internal("a job without references"))
        }
    };
    let estimate = cost::admit_job(
        (&app.budget, app.limits.max_spice_caption_tokens),
        &metrics,
        parse,
        (&[&work.candidates], runs),
        refs_size,
        &mut reserved,
    )?;
    tracing::debug!(
        cpu_s = estimate.cpu_seconds,
        memory = estimate.memory,
        "admitted"
    );
    let report = engine::run(work)?.into_report()?;
    telemetry::report_scored(&metrics, &report);
    // The report's own `Serialize` (the same bytes as through `to_json`, key order preserved),
    // without building a JSON tree first.
    let out = match format {
        ResponseFormat::Json => ScoreOutput::Report(Box::new(report)),
        ResponseFormat::Evalai => ScoreOutput::EvalAi(engine::leaderboard::evalai(&report)),
    };
    let bytes = serde_json::to_vec(&out).map_err(ApiError::internal)?;
    drop(out);
    app.settle(ds.as_deref(), reserved);
    Ok(bytes)
}

/// Score candidate captions.
#[utoipa::path(
    post,
    path = "/v1/score",
    tag = "scoring",
    request_body = ScoreRequest,
    security((), ("bearer" = [])),
    responses(
        (status = 200, description = "Scores (same numbers as the CLI): the report, or EvalAI's result shape with `\"format\": \"evalai\"`", body = ScoreOutput),
        R::InvalidJson, R::Unauthorized, R::UnknownDataset, R::TooLarge,
        (status = 422, description = "Bad input: `invalid_format`, `invalid_image_id`, `invalid_caption`, `unknown_metric`, `unknown_image_id`, `duplicate_image_id`, `missing_references`, `empty_results`, `no_reference_ngrams`, `limit_exceeded`, `cost_exceeded`, `invalid_dataset_name`, `incomplete_results`, `missing_split`", body = Problem, content_type = "application/problem+json"),
        R::Internal,
        R::Unavailable,
        R::TimedOut,
    )
)]
pub async fn score(
    State(s): State<AppState>,
    _role: ScoreRole,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    compute_json(&s, body?, score_blocking).await
}
