//! Every response the server sends validates against the schema `/openapi.json` publishes
//! for that route, method and status: the report types that serialize the responses are the
//! ones that document them, and this test keeps it so (it fails when a field is renamed,
//! retyped or added on one side only).

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use capscore::server::auth::Keys;
use capscore::server::state::Resources;
use capscore::server::{self, ServeArgs};
use serde_json::{json, Value};

/// METEOR and SPICE with the fetched data; fails (never skips) when the data is missing.
fn resources() -> Resources {
    let dir = capscore::resources::default_cache_dir();
    let meteor = Arc::new(
        capscore::resources::load::meteor(&dir)
            .unwrap_or_else(|e| panic!("METEOR data missing ({e}): run scripts/test")),
    );
    let spice = capscore::resources::load::spice(
        &dir,
        capscore::metrics::spice::SynonymSource::Meteor(meteor.clone()),
    )
    .unwrap_or_else(|e| panic!("SPICE data missing ({e}): run scripts/test"));
    Resources::with_meteor(Some(meteor)).with_spice(Some(Arc::new(spice)))
}

struct App {
    base: String,
    client: reqwest::Client,
    spec: Value,
    checked: HashMap<String, usize>,
}

impl App {
    /// Sends a request and validates the response body against the published schema.
    async fn check(&mut self, method: &str, path: &str, route: &str, body: Option<Value>) -> u16 {
        let url = format!("{}{path}", self.base);
        let rb = match method {
            "post" => self.client.post(&url),
            "put" => self.client.put(&url),
            "delete" => self.client.delete(&url),
            _ => self.client.get(&url),
        };
        let rb = match body {
            Some(b) => rb.json(&b),
            None => rb,
        };
        let res = rb.send().await.expect("request");
        let status = res.status().as_u16();
        let ct = res
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let bytes = res.bytes().await.expect("body");
        let op = &self.spec["paths"][route][method];
        assert!(op.is_object(), "{method} {route} is not in the spec");
        let resp = &op["responses"][status.to_string()];
        assert!(
            resp.is_object(),
            "{method} {path}: status {status} is not documented"
        );
        if bytes.is_empty() {
            assert!(resp.get("content").is_none(), "{method} {path}: empty body");
            return status;
        }
        let media = ct.split(';').next().unwrap_or("").trim();
        let schema = &resp["content"][media]["schema"];
        assert!(
            schema.is_object(),
            "{method} {path} {status}: no schema for {media}: {resp}"
        );
        let instance: Value = serde_json::from_slice(&bytes).expect("json body");
        let mut root = schema.clone();
        root["$schema"] = json!("https://json-schema.org/draft/2020-12/schema");
        root["components"] = self.spec["components"].clone();
        let validator = jsonschema::validator_for(&root).expect("schema compiles");
        let errors: Vec<String> = validator
            .iter_errors(&instance)
            .map(|e| {
                format!("{:?} at {}", e.kind, e.instance_path)
                    .chars()
                    .take(400)
                    .collect()
            })
            .collect();
        assert!(
            errors.is_empty(),
            "{method} {path} {status}: response does not match its schema:\n{}\nbody: {}",
            errors
                .iter()
                .take(8)
                .cloned()
                .collect::<Vec<_>>()
                .join("\n"),
            String::from_utf8_lossy(&bytes)
                .chars()
                .take(300)
                .collect::<String>()
        );
        *self
            .checked
            .entry(format!("{method} {route} {status}"))
            .or_default() += 1;
        status
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_response_matches_the_published_schema() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cfg = ServeArgs::with_data_dir(dir.path().to_path_buf());
    cfg.threads = 2;
    cfg.max_items = 500;
    let state = server::build_state_full(&cfg, Keys::none(), resources()).expect("state");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(server::serve(listener, state, async move {
        let _ = stopped.await;
    }));
    let client = reqwest::Client::new();
    let base = format!("http://{addr}");
    let spec: Value = client
        .get(format!("{base}/openapi.json"))
        .send()
        .await
        .expect("spec")
        .json()
        .await
        .expect("spec json");
    let mut app = App {
        base,
        client,
        spec,
        checked: HashMap::new(),
    };

    let refs = common::read_json("coco/edge/combined/refs.json");
    let cands = common::read_json("coco/edge/combined/cands.json");
    let r = capscore::input::parse_references(&refs).expect("refs");
    let c = capscore::input::parse_candidates(&cands).expect("cands");
    let b = capscore::input::assemble(&r, c).expect("assemble");
    let items: Vec<Value> = b
        .items
        .iter()
        .map(|i| json!({"image_id": i.image_id.raw, "candidate": i.candidate, "references": i.references}))
        .collect();
    let all = json!([
        "bleu",
        "meteor",
        "rouge_l",
        "cider_d",
        "cider_original",
        "spice"
    ]);

    // Scores: every metric, with and without explain, default metrics, one image (warning).
    assert_eq!(
        app.check(
            "post",
            "/v1/score",
            "/v1/score",
            Some(json!({"items": items, "metrics": all, "bootstrap": {"samples": 50, "seed": 1}}))
        )
        .await,
        200
    );
    assert_eq!(
        app.check(
            "post",
            "/v1/score",
            "/v1/score",
            Some(json!({"items": items, "metrics": all, "explain": true}))
        )
        .await,
        200
    );
    assert_eq!(
        app.check(
            "post",
            "/v1/score",
            "/v1/score",
            Some(json!({"items": items, "metrics": all}))
        )
        .await,
        200
    );
    assert_eq!(
        app.check(
            "post",
            "/v1/score",
            "/v1/score",
            Some(json!({"items": items}))
        )
        .await,
        200
    );
    assert_eq!(
        app.check(
            "post",
            "/v1/score",
            "/v1/score",
            Some(json!({"items": [items[0]], "metrics": ["cider_d", "bleu"]}))
        )
        .await,
        200
    );
    assert_eq!(app.check("post", "/v1/score", "/v1/score", Some(json!({"items": [{"image_id": "x", "candidate": "", "references": ["", "a dog"]}], "metrics": ["bleu", "spice"]}))).await, 200);
    // Errors, each a problem document.
    assert_eq!(
        app.check(
            "post",
            "/v1/score",
            "/v1/score",
            Some(json!({"items": items, "metrics": ["cider"]}))
        )
        .await,
        422
    );
    assert_eq!(
        app.check("post", "/v1/score", "/v1/score", Some(json!({"items": []})))
            .await,
        422
    );
    assert_eq!(
        app.check(
            "post",
            "/v1/score",
            "/v1/score",
            Some(json!({"dataset": "nope", "results": []}))
        )
        .await,
        404
    );
    assert_eq!(
        app.check(
            "post",
            "/v1/score",
            "/v1/score",
            Some(json!({"items": vec![items[0].clone(); 501]}))
        )
        .await,
        422
    );
    // Datasets.
    assert_eq!(
        app.check(
            "put",
            "/v1/datasets/edge",
            "/v1/datasets/{name}",
            Some(refs.clone())
        )
        .await,
        201
    );
    assert_eq!(
        app.check(
            "put",
            "/v1/datasets/edge",
            "/v1/datasets/{name}",
            Some(refs.clone())
        )
        .await,
        200
    );
    assert_eq!(
        app.check(
            "put",
            "/v1/datasets/bad%20name",
            "/v1/datasets/{name}",
            Some(refs.clone())
        )
        .await,
        422
    );
    assert_eq!(
        app.check("get", "/v1/datasets/edge", "/v1/datasets/{name}", None)
            .await,
        200
    );
    assert_eq!(
        app.check("get", "/v1/datasets", "/v1/datasets", None).await,
        200
    );
    assert_eq!(
        app.check(
            "post",
            "/v1/score",
            "/v1/score",
            Some(
                json!({"dataset": "edge", "results": cands, "metrics": all, "cider_df": "dataset"})
            )
        )
        .await,
        200
    );
    // Leaderboard: split tables (items' own splits), EvalAI's shape, a comparison, errors.
    let split_items: Vec<Value> = items
        .iter()
        .enumerate()
        .map(|(k, it)| {
            let mut it = it.clone();
            it["split"] = json!(if k % 2 == 0 { "even" } else { "odd" });
            it
        })
        .collect();
    for format in ["json", "evalai"] {
        assert_eq!(
            app.check(
                "post",
                "/v1/score",
                "/v1/score",
                Some(json!({"items": split_items, "metrics": ["bleu", "meteor", "cider_d"], "format": format}))
            )
            .await,
            200
        );
    }
    assert_eq!(
        app.check(
            "post",
            "/v1/compare",
            "/v1/compare",
            Some(json!({"dataset": "edge", "a": cands, "b": cands, "metrics": ["bleu", "rouge_l"], "samples": 20, "trials": 20}))
        )
        .await,
        200
    );
    assert_eq!(
        app.check(
            "post",
            "/v1/compare",
            "/v1/compare",
            Some(json!({"dataset": "edge", "a": cands, "b": [], "metrics": ["bleu"]}))
        )
        .await,
        422
    );
    assert_eq!(
        app.check(
            "post",
            "/v1/score",
            "/v1/score",
            Some(json!({"dataset": "edge", "results": [cands[0]], "metrics": ["bleu"], "require_complete": true}))
        )
        .await,
        422
    );
    assert_eq!(
        app.check("delete", "/v1/datasets/edge", "/v1/datasets/{name}", None)
            .await,
        204
    );
    assert_eq!(
        app.check("get", "/v1/datasets/edge", "/v1/datasets/{name}", None)
            .await,
        404
    );
    // Operations.
    assert_eq!(app.check("get", "/healthz", "/healthz", None).await, 200);
    assert_eq!(app.check("get", "/readyz", "/readyz", None).await, 200);

    assert!(app.checked.len() >= 11, "{:?}", app.checked);
    let _ = stop.send(());
    task.await.expect("join").expect("serve");
}

/// The error table of the HTTP guide (docs/http.md, "Error codes") is the one the code table
/// generates (`ErrorCode::markdown_table`).
#[test]
fn the_http_guide_lists_every_error_code_as_the_table_says() {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/http.md"))
        .expect("docs/http.md");
    let table = capscore::input::ErrorCode::markdown_table();
    assert!(
        doc.contains(&table),
        "docs/http.md's error table differs from ErrorCode's; paste:\n{table}"
    );
}
