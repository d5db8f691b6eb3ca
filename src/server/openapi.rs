//! The OpenAPI document's static part (info, security, tags). Paths and schemas are added by
//! utoipa-axum from the handlers' annotations as the router is built ([`super::api`]).

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

/// The API description.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "capscore",
        description = "Caption metrics (BLEU, ROUGE-L, CIDEr-D, ...) computed exactly as pycocoevalcap 1.2 does.\n\nErrors are `application/problem+json` (RFC 9457) with a stable `code`: `invalid_json` (400), `invalid_format`, `invalid_image_id`, `invalid_caption`, `unknown_metric`, `unknown_image_id`, `duplicate_image_id`, `missing_references`, `empty_results`, `no_reference_ngrams`, `limit_exceeded`, `invalid_dataset_name` (422), `payload_too_large` (413), `unknown_dataset`, `not_found` (404), `method_not_allowed` (405), `unauthorized` (401), `forbidden` (403), `overloaded` (503, Retry-After), `resources_not_loaded` (503, names the metric), `timeout` (504), `internal` (500).",
        license(name = "MIT OR Apache-2.0")
    ),
    modifiers(&Security),
    tags(
        (name = "scoring", description = "Score captions"),
        (name = "datasets", description = "Registered reference sets with cached document frequencies"),
        (name = "operations", description = "Health, readiness, metrics")
    )
)]
pub struct ApiDoc;

struct Security;

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
