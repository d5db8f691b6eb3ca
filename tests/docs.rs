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

/// Issue 25: every request body in the description has an example, and the examples work as
/// they stand on a fresh server ("Try it out" sends them unchanged): the dataset example
/// registers, the score and compare examples answer 200 with scores.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_request_examples_work_against_a_fresh_server() {
    use axum::http::Method;
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = ServeArgs::with_data_dir(dir.path().to_path_buf());
    let app = server::router(
        server::build_state_full(&cfg, Keys::none(), Resources::default()).expect("state"),
    );
    let (_, text) = get(&app, "/openapi.json").await;
    let spec: serde_json::Value = serde_json::from_str(&text).expect("json");
    let example = |path: &str, method: &str| -> serde_json::Value {
        let op = &spec["paths"][path][method]["requestBody"]["content"]["application/json"];
        let ex = op["example"].clone();
        let ex = if ex.is_null() {
            let schema = &op["schema"]["$ref"];
            let name = schema
                .as_str()
                .unwrap_or("")
                .rsplit('/')
                .next()
                .unwrap_or("");
            spec["components"]["schemas"][name]["example"].clone()
        } else {
            ex
        };
        assert!(ex.is_object(), "{method} {path}: no example in {op}");
        ex
    };
    let send = |method: Method, path: &str, body: serde_json::Value| {
        let app = app.clone();
        let path = path.to_owned();
        async move {
            let res = app
                .oneshot(
                    Request::builder()
                        .method(method)
                        .uri(path)
                        .header("content-type", "application/json")
                        .body(Body::from(body.to_string()))
                        .expect("request"),
                )
                .await
                .expect("response");
            let status = res.status();
            let bytes = res.into_body().collect().await.expect("body").to_bytes();
            (status, String::from_utf8_lossy(&bytes).into_owned())
        }
    };
    let (st, body) = send(
        Method::PUT,
        "/v1/datasets/example",
        example("/v1/datasets/{name}", "put"),
    )
    .await;
    assert!(st.is_success(), "{st}: {body}");
    let (st, body) = send(Method::POST, "/v1/score", example("/v1/score", "post")).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert!(body.contains("\"CIDEr\""), "{body}");
    let (st, body) = send(Method::POST, "/v1/compare", example("/v1/compare", "post")).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert!(body.contains("paired_bootstrap"), "{body}");
}
