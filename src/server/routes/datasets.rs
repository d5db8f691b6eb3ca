//! `/v1/datasets`: register, list, describe and delete reference sets.
//!
//! Must not: build datasets (the registry does) or score.

use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::Response;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::{check_caption, json_response, limit, parse_body, to_json_bytes};
use crate::dataset::{self, Dataset, PutOutcome};
use crate::engine::Metric;
use crate::input::{self, ErrorCode};
use crate::server::auth::{AdminRole, ScoreRole};
use crate::server::cost;
use crate::server::error::responses as R;
use crate::server::error::{ApiError, Problem};
use crate::server::state::{AppState, Fate};
use crate::server::telemetry;

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
    /// The per-image label fields kept from the file's `images[]` (for `split_by`, e.g.
    /// `domain`).
    pub labels: Vec<String>,
    /// Strict mode: every request must have exactly one result per image.
    pub require_complete: bool,
    /// About the bytes the dataset holds in memory (references, tokenization, interned words,
    /// document frequencies, SPICE graphs built so far): its share of `--memory-budget`.
    pub resident_bytes: u64,
    /// `resident_bytes` per image.
    pub resident_bytes_per_image: u64,
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

/// What the dataset routes answer about `ds` (`outcome`: what a PUT did).
pub(crate) fn info(ds: &Dataset, outcome: Option<PutOutcome>) -> DatasetInfo {
    DatasetInfo {
        name: ds.name.clone(),
        images: ds.image_count(),
        captions: ds.caption_count(),
        sha256: ds.sha256.clone(),
        created: rfc3339(ds.created),
        labels: ds
            .meta
            .labels
            .names()
            .into_iter()
            .map(str::to_owned)
            .collect(),
        require_complete: ds.meta.require_complete,
        resident_bytes: ds.resident_bytes(),
        resident_bytes_per_image: ds.resident_bytes() / ds.image_count().max(1) as u64,
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

/// Runs a registry operation on the compute pool (it reads and writes files).
async fn on_registry<T: Send + 'static>(
    s: &AppState,
    f: impl FnOnce(&dataset::Registry) -> Result<T, dataset::DatasetError> + Send + 'static,
) -> Result<T, ApiError> {
    let app = s.0.clone();
    Ok(s.0.compute.run(move || f(&app.datasets)).await??)
}

/// Extractor: the `{name}` path segment, a valid dataset name (else `invalid_dataset_name`).
pub struct DatasetName(pub String);

impl<S: Send + Sync> FromRequestParts<S> for DatasetName {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, s: &S) -> Result<Self, ApiError> {
        let Path(name) = Path::<String>::from_request_parts(parts, s)
            .await
            .map_err(|e| ApiError::new(ErrorCode::NotFound, e.body_text()))?;
        if dataset::valid_name(&name) {
            Ok(DatasetName(name))
        } else {
            Err(dataset::DatasetError::InvalidName(name).into())
        }
    }
}

/// `PUT /v1/datasets/{name}` query parameters.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct PutParams {
    /// Strict mode for every request against the dataset: each image must have exactly one
    /// result (else `incomplete_results`). Default false.
    pub require_complete: Option<bool>,
}

/// Register (or replace) a dataset of references.
///
/// Body: a COCO captions annotation file, or `{"references": {"<image_id>": ["...", ...]}}`.
/// The label fields of a COCO file's `images[]` (string, integer or boolean values, at most 64
/// distinct ones, e.g. nocaps' `domain`) are kept for `split_by`.
/// The references are tokenized once and the CIDEr document-frequency table and reference
/// vectors are kept in memory; the dataset is written atomically to the data directory.
/// Re-registering identical content is a no-op (`outcome: unchanged`).
#[utoipa::path(
    put,
    path = "/v1/datasets/{name}",
    tag = "datasets",
    params(("name" = String, Path, description = "Dataset name, `[A-Za-z0-9._-]{1,64}`", example = "tiny-val"), PutParams),
    request_body(content = Object, description = "COCO captions annotation file or {\"references\": {...}}",
        example = json!({"references": {
            "1": ["A dog runs on the grass.", "A brown dog running in a park."],
            "2": ["A cat sleeps on a sofa.", "A grey cat lying on a couch."],
            "3": ["A surfer rides a large wave.", "A man surfing on a wave."]
        }})),
    security((), ("bearer" = [])),
    responses(
        (status = 201, description = "Created", body = DatasetInfo),
        (status = 200, description = "Replaced, or unchanged (identical content)", body = DatasetInfo),
        R::InvalidJson, R::Unauthorized, R::AdminOnly, R::TooLarge,
        (status = 422, description = "Bad name (`invalid_dataset_name`) or content (`invalid_format`, `invalid_caption`, `invalid_image_id`, `empty_results`, `limit_exceeded`)", body = Problem, content_type = "application/problem+json"),
        R::StorageFailure, R::Overloaded,
        (status = 504, description = "Timed out before the registration was committed: nothing was registered (`timeout`)", body = Problem, content_type = "application/problem+json"),
        (status = 507, description = "The registered datasets with this one would hold more than the memory budget leaves (`memory_budget_full`): nothing was registered", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn put_dataset(
    State(s): State<AppState>,
    _role: AdminRole,
    DatasetName(name): DatasetName,
    params: Result<Query<PutParams>, QueryRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = body?;
    let Query(params) = params.map_err(|e| {
        ApiError::from(input::InputError::new(
            ErrorCode::InvalidFormat,
            format!("query: {}", e.body_text()),
        ))
    })?;
    let app = s.0.clone();
    let fate = Fate::default();
    let gate = fate.clone();
    let (outcome, ds) =
        s.0.compute
            .run_with(fate, move || -> Result<_, ApiError> {
                // The registration holds memory from the budget like a score request: its
                // parse what the body's JSON structure will take, bounded by the whole budget
                // (a body whose tree could never fit is refused before it is parsed), the build
                // at most --max-request-memory (an admin's large reference set waits for room,
                // 503 `overloaded`, rather than being refused for its size).
                let mut reserved = cost::Reservation::default();
                let most = app.budget.max_request;
                let parse = cost::parse_memory(&body);
                app.budget
                    .reserve_admin(&mut reserved, parse, "parsing the dataset")?;
                // The stages before the build check that the request is still waiting (a
                // timed-out registration stops within a stage: the parse of a body at the
                // size limit takes some tenths of a second).
                let gone = || -> Result<(), ApiError> {
                    if gate.is_abandoned() {
                        Err(dataset::DatasetError::Abandoned(name.clone()).into())
                    } else {
                        Ok(())
                    }
                };
                // A COCO file by the typed paths (no JSON tree: about 1.2 GB at 500,000
                // images, beside the references made from it), any other body by its tree; the
                // body's bytes go before the build.
                let typed = std::str::from_utf8(&body)
                    .ok()
                    .and_then(input::coco_references_and_labels);
                let (refs, labels) = match typed {
                    Some(parsed) => parsed,
                    None => {
                        let v: Value = parse_body(&body, "dataset body")?;
                        gone()?;
                        let refs = input::parse_references(&v)?;
                        (refs, input::ImageFields::labels_of(&v))
                    }
                };
                drop(body);
                gone()?;
                let build = cost::estimate(
                    &[Metric::CiderD],
                    parse,
                    &cost::Size::of(&[], Some(cost::RefSize::Inline(&refs)), false),
                );
                gone()?;
                app.budget
                    .reserve(&mut reserved, build.memory.min(most), "registering a dataset")?;
                let meta = dataset::DatasetMeta {
                    labels,
                    require_complete: params.require_complete.unwrap_or(false),
                };
                // The limits of inline references apply here too.
                let max = app.limits.max_references;
                for (i, (id, caps)) in refs.images.iter().enumerate() {
                    if i % 1024 == 0 {
                        gone()?;
                    }
                    if caps.len() > max {
                        return Err(limit(format!(
                            "references of image_id {id}: {} references; at most {max} per image (--max-references)",
                            caps.len()
                        )));
                    }
                    for (j, c) in caps.iter().enumerate() {
                        check_caption(&app, c, &|| format!("references of image_id {id}, #{j}"))?;
                    }
                }
                // Registered only if the request is still waiting for the answer and the
                // memory budget can hold the dataset for as long as it stays registered: the
                // parse's and build's reservation is returned first (what the parse made is
                // gone, the build is what stays), then the dataset's share is taken, and kept
                // only if the registration commits.
                let reserved = std::sync::Mutex::new(Some(reserved));
                let refused: std::sync::Mutex<Option<ApiError>> = Default::default();
                let share: std::sync::Mutex<Option<(cost::Reservation, u64)>> = Default::default();
                let commit = |ds: &Dataset| {
                    drop(reserved.lock().unwrap_or_else(|e| e.into_inner()).take());
                    let bytes = ds.resident_bytes();
                    match app.budget.prepare_hold(&ds.name, &ds.sha256, bytes) {
                        Ok(r) => {
                            *share.lock().unwrap_or_else(|e| e.into_inner()) =
                                r.map(|r| (r, bytes));
                            gate.commit()
                        }
                        Err(e) => {
                            *refused.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
                            false
                        }
                    }
                };
                let put = app
                    .datasets
                    .put_unless_abandoned(&name, refs, meta, now_unix(), &commit, &|| {
                        gate.is_abandoned()
                    });
                if let Some(e) = refused.lock().unwrap_or_else(|e| e.into_inner()).take() {
                    return Err(e);
                }
                if let (Ok((_, ds)), Some((r, bytes))) =
                    (&put, share.lock().unwrap_or_else(|e| e.into_inner()).take())
                {
                    app.budget.holds.set(&ds.name, &ds.sha256, r, bytes);
                }
                let put = put?;
                metrics::gauge!("capscore_datasets_resident_bytes").set(app.budget.holds.total() as f64);
                // Once the dataset's share is held: the build's freed memory goes back.
                app.compute.return_freed_memory();
                Ok(put)
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
        R::Unauthorized,
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
    params(("name" = String, Path, description = "Dataset name", example = "tiny-val")),
    security((), ("bearer" = [])),
    responses(
        (status = 200, description = "The dataset", body = DatasetInfo),
        R::Unauthorized, R::UnknownDataset, R::BadName, R::StorageFailure, R::Overloaded, R::TimedOut,
    )
)]
pub async fn get_dataset(
    State(s): State<AppState>,
    _role: ScoreRole,
    DatasetName(name): DatasetName,
) -> Result<Response, ApiError> {
    // Checked against the data directory (a replica may have replaced or deleted it).
    let ds = on_registry(&s, move |d| d.named(&name)).await?;
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
    responses(
        (status = 204, description = "Deleted"),
        R::Unauthorized, R::AdminOnly, R::UnknownDataset, R::BadName, R::StorageFailure, R::Overloaded,
    ),
    params(("name" = String, Path, description = "Dataset name", example = "tiny-val")),
    security((), ("bearer" = [])),
)]
pub async fn delete_dataset(
    State(s): State<AppState>,
    _role: AdminRole,
    DatasetName(name): DatasetName,
) -> Result<StatusCode, ApiError> {
    let held = name.clone();
    on_registry(&s, move |d| d.delete(&name)).await?;
    s.0.budget.holds.release(&held);
    metrics::gauge!("capscore_datasets_resident_bytes").set(s.0.budget.holds.total() as f64);
    telemetry::datasets_loaded(s.0.datasets.len());
    Ok(StatusCode::NO_CONTENT)
}

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
