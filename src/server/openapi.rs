//! The OpenAPI document's static part (info, security, tags). Paths and schemas are added by
//! utoipa-axum from the handlers' annotations as the router is built ([`super::api`]).

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

/// The API description.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "capscore",
        description = "Caption metrics (BLEU, ROUGE-L, CIDEr-D, ...) computed exactly as pycocoevalcap 1.2 does.",
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
