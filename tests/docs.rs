//! Issue 18: the docs page works offline. `/docs` and every asset it references are served by
//! the binary (Swagger UI, vendored), and nothing in them points at another host.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use capscore::server::{self, auth::Keys, state::Resources, ServeArgs};
use http_body_util::BodyExt;
use tower::ServiceExt;

async fn get(app: &axum::Router, path: &str) -> (StatusCode, String) {
    let res = app
        .clone()
        .oneshot(Request::get(path).body(Body::empty()).expect("request"))
        .await
        .expect("response");
    let status = res.status();
    let bytes = res.into_body().collect().await.expect("body").to_bytes();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

#[tokio::test]
async fn the_docs_page_and_its_assets_come_from_the_binary() {
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = ServeArgs::with_data_dir(dir.path().to_path_buf());
    let state = server::build_state_full(&cfg, Keys::none(), Resources::default()).expect("state");
    let app = server::router(state);
    let (st, _) = get(&app, "/docs").await;
    assert!(st.is_redirection(), "/docs: {st}");
    let (st, html) = get(&app, "/docs/").await;
    assert_eq!(st, StatusCode::OK);
    assert!(html.contains("swagger-ui"), "{html}");
    assert!(
        !html.contains("http://") && !html.contains("https://") && !html.contains("//cdn"),
        "external URL in the docs page: {html}"
    );
    // Every script and stylesheet it names is served here.
    let mut assets = Vec::new();
    for attr in ["src=\"", "href=\""] {
        for part in html.split(attr).skip(1) {
            let url = part.split('"').next().unwrap_or("");
            if !url.is_empty() && !url.starts_with('#') {
                assets.push(url.trim_start_matches("./").to_owned());
            }
        }
    }
    assert!(assets.iter().any(|a| a.ends_with(".js")), "{assets:?}");
    for a in &assets {
        let path = if a.starts_with('/') {
            a.clone()
        } else {
            format!("/docs/{a}")
        };
        let (st, body) = get(&app, &path).await;
        assert_eq!(st, StatusCode::OK, "{path}");
        assert!(!body.is_empty(), "{path}");
    }
    // The initializer points at the spec this server serves, and at no validator.
    let (st, init) = get(&app, "/docs/swagger-initializer.js").await;
    assert_eq!(st, StatusCode::OK);
    assert!(init.contains("/openapi.json"), "{init}");
    assert!(!init.contains("https://"), "{init}");
    let (st, spec) = get(&app, "/openapi.json").await;
    assert_eq!(st, StatusCode::OK);
    assert!(spec.contains("/v1/score"));
}

/// Issue 25: a server without keys serves its description without security requirements (no
/// lock icons on the docs page, nothing to fill in); with keys, every scoring and dataset
/// operation requires the bearer key.
#[tokio::test]
async fn security_appears_in_the_served_description_only_when_keys_are_configured() {
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = ServeArgs::with_data_dir(dir.path().to_path_buf());
    let open = server::router(
        server::build_state_full(&cfg, Keys::none(), Resources::default()).expect("state"),
    );
    let (_, text) = get(&open, "/openapi.json").await;
    let spec: serde_json::Value = serde_json::from_str(&text).expect("json");
    assert!(!text.contains("\"security\""), "{text}");
    assert!(spec["components"].get("securitySchemes").is_none());
    let keys = Keys::parse("score:0123456789abcdef0123", "test").expect("keys");
    let keyed =
        server::router(server::build_state_full(&cfg, keys, Resources::default()).expect("state"));
    let (_, text) = get(&keyed, "/openapi.json").await;
    let spec: serde_json::Value = serde_json::from_str(&text).expect("json");
    assert!(
        spec["paths"]["/v1/score"]["post"]["security"].is_array(),
        "{text}"
    );
    assert!(
        spec["components"]["securitySchemes"]["bearer"].is_object(),
        "{text}"
    );
}
