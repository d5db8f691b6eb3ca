//! The HTTP service, end to end: a real server on port 0 per test (`spawn_app`), a real client.
//! Numbers are compared with the CLI's output exactly (same JSON values; the engine is
//! deterministic and the API adds nothing to the scores).

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use capscore::engine::Metric;
use capscore::input::{self, Batch};

/// True when a request body contains `marker` (fault-injection hooks).
fn has(body: &[u8], marker: &str) -> bool {
    String::from_utf8_lossy(body).contains(marker)
}
use capscore::server::{self, auth::Keys, state::Resources, ServeArgs};
use common::{existing, read_json};
use serde_json::{json, Value};

const ADMIN: &str = "admin-key-0123456789";
const SCORER: &str = "score-key-0123456789";

struct TestApp {
    base: String,
    client: reqwest::Client,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    _dir: Option<tempfile::TempDir>,
}

impl TestApp {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn post(&self, path: &str, body: &Value) -> (u16, HashMap<String, String>, Value) {
        self.send(self.client.post(self.url(path)).json(body)).await
    }

    async fn put(&self, path: &str, body: &Value) -> (u16, HashMap<String, String>, Value) {
        self.send(self.client.put(self.url(path)).json(body)).await
    }

    /// The Prometheus text of `/metrics`.
    async fn metrics_text(&self) -> String {
        self.client
            .get(self.url("/metrics"))
            .send()
            .await
            .expect("metrics")
            .text()
            .await
            .expect("text")
    }

    async fn get(&self, path: &str) -> (u16, HashMap<String, String>, Value) {
        self.send(self.client.get(self.url(path))).await
    }

    async fn send(&self, rb: reqwest::RequestBuilder) -> (u16, HashMap<String, String>, Value) {
        let res = rb.send().await.expect("request");
        let status = res.status().as_u16();
        let headers = res
            .headers()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_owned()))
            .collect();
        let bytes = res.bytes().await.expect("body");
        let v = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        (status, headers, v)
    }

    /// Stops the server gracefully and waits for it.
    async fn stop(mut self) -> Option<tempfile::TempDir> {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.task.take() {
            t.await.expect("join").expect("serve");
        }
        self._dir.take()
    }
}

struct Opts {
    cfg: ServeArgs,
    keys: Keys,
    hook: server::state::Hook,
    resources: Resources,
}

fn opts(dir: &Path) -> Opts {
    let mut cfg = ServeArgs::with_data_dir(dir.to_path_buf());
    cfg.threads = 2;
    Opts {
        cfg,
        keys: Keys::none(),
        hook: Arc::new(|_: &[u8]| {}),
        resources: Resources::with_meteor(Some(meteor())).with_spice(Some(spice())),
    }
}

/// SPICE with the fetched parser model and lemma exceptions, sharing METEOR's synonyms (as
/// `capscore serve` loads it). Fails (never skips) when the data is missing.
fn spice() -> Arc<capscore::metrics::spice::Spice> {
    static S: std::sync::OnceLock<Arc<capscore::metrics::spice::Spice>> =
        std::sync::OnceLock::new();
    S.get_or_init(|| {
        let dir = capscore::resources::default_cache_dir();
        Arc::new(
            capscore::resources::load::spice(
                &dir,
                capscore::metrics::spice::SynonymSource::Meteor(meteor()),
            )
            .unwrap_or_else(|e| {
                panic!(
                    "SPICE data missing in {} ({e}): run `capscore fetch` or scripts/test",
                    dir.display()
                )
            }),
        )
    })
    .clone()
}

/// METEOR with the fetched data (`capscore fetch`; scripts/test does it), shared by the tests.
/// Fails (never skips) when the data is missing.
fn meteor() -> Arc<capscore::metrics::meteor::Meteor> {
    static M: std::sync::OnceLock<Arc<capscore::metrics::meteor::Meteor>> =
        std::sync::OnceLock::new();
    M.get_or_init(|| {
        let dir = capscore::resources::default_cache_dir();
        Arc::new(capscore::resources::load::meteor(&dir).unwrap_or_else(|e| {
            panic!(
                "METEOR data missing in {} ({e}): run `capscore fetch` or scripts/test",
                dir.display()
            )
        }))
    })
    .clone()
}

async fn spawn_with(o: Opts, dir: Option<tempfile::TempDir>) -> TestApp {
    let state = server::build_state_with_hook(&o.cfg, o.keys, o.hook, o.resources).expect("state");
    serve_state(state, dir).await
}

/// Serves `state` on a loopback port.
async fn serve_state(state: server::AppState, dir: Option<tempfile::TempDir>) -> TestApp {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(server::serve(listener, state, async {
        let _ = rx.await;
    }));
    TestApp {
        base: format!("http://{addr}"),
        client: reqwest::Client::new(),
        stop: Some(tx),
        task: Some(task),
        _dir: dir,
    }
}

/// A server with default settings, no keys, a fresh data directory.
async fn spawn_app() -> TestApp {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = opts(dir.path());
    spawn_with(o, Some(dir)).await
}

fn cli(refs: &Path, cands: &Path, metrics: Option<&str>) -> Value {
    let mut c = Command::new(env!("CARGO_BIN_EXE_capscore"));
    c.arg("score")
        .arg("--refs")
        .arg(refs)
        .arg("--cands")
        .arg(cands);
    if let Some(m) = metrics {
        c.arg("--metrics").arg(m);
    }
    let out = c.output().expect("run capscore");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cli json")
}

/// A batch's items as a job: candidates and the references they carry.
fn batch_items(b: &Batch) -> (Vec<input::Candidate>, input::References) {
    input::split_items(b.items.clone()).expect("items")
}

/// Items in evaluation order with inline references (what the CLI scores).
fn inline_items(refs: &Value, cands: &Value) -> (Batch, Value) {
    let r = input::parse_references(refs).expect("refs");
    let c = input::parse_candidates(cands).expect("cands");
    let b = input::assemble(&r, c).expect("assemble");
    let items: Vec<Value> = b
        .items
        .iter()
        .map(|i| json!({"image_id": i.image_id.raw, "candidate": i.candidate, "references": i.references}))
        .collect();
    (b, Value::Array(items))
}

fn per_image_by_id(v: &Value) -> HashMap<String, Value> {
    v["per_image"]
        .as_array()
        .expect("per_image")
        .iter()
        .map(|p| (p["image_id"].to_string(), p.clone()))
        .collect()
}

/// The warnings other than `partial_results` (which a subset of a dataset gets and the same
/// images sent inline do not).
fn warnings_but_partial(v: &Value) -> Vec<Value> {
    v["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .filter(|w| w["code"] != "partial_results")
        .cloned()
        .collect()
}

/// Equal reports, whatever the order of `per_image`.
fn same_report(a: &Value, b: &Value, what: &str) {
    for key in ["aggregate", "bleu_totals", "signature"] {
        assert!(
            a[key] == b[key],
            "{what}: {key} differs: {} vs {}",
            a[key],
            b[key]
        );
    }
    assert_eq!(
        warnings_but_partial(a),
        warnings_but_partial(b),
        "{what}: warnings differ"
    );
    assert!(
        per_image_by_id(a) == per_image_by_id(b),
        "{what}: per-image scores differ"
    );
}

/// The `spice` section's per-image records by image id.
fn spice_by_id(v: &Value) -> HashMap<String, Value> {
    v["spice"]["per_image"]
        .as_array()
        .expect("spice.per_image")
        .iter()
        .map(|p| (p["image_id"].to_string(), p.clone()))
        .collect()
}

/// Equal reports including the `spice` section, whatever the order of the per-image lists.
fn same_spice_report(a: &Value, b: &Value, what: &str) {
    same_report(a, b, what);
    assert!(
        a["spice"]["aggregate"] == b["spice"]["aggregate"],
        "{what}: spice.aggregate differs: {} vs {}",
        a["spice"]["aggregate"],
        b["spice"]["aggregate"]
    );
    assert!(
        spice_by_id(a) == spice_by_id(b),
        "{what}: spice.per_image differs"
    );
}

const GOLDEN_SETS: [&str; 3] = [
    "coco/fakecap_val2017",
    "coco/edge/combined",
    "coco/edge_extra/combined",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_numbers_equal_cli_numbers_on_golden_sets() {
    let app = spawn_app().await;
    for (k, set) in GOLDEN_SETS.iter().enumerate() {
        let refs = read_json(&format!("{set}/refs.json"));
        let cands = read_json(&format!("{set}/cands.json"));
        let want = cli(
            &existing(&format!("{set}/refs.json")),
            &existing(&format!("{set}/cands.json")),
            None,
        );
        // Inline items, in evaluation order: the CLI's batch exactly.
        let (_, items) = inline_items(&refs, &cands);
        let (st, _, got) = app.post("/v1/score", &json!({"items": items})).await;
        assert_eq!(st, 200, "{set}");
        // Items are in evaluation order, the CLI reports in the results file's order.
        same_report(&got, &want, &format!("{set} inline"));
        // A registered dataset plus COCO results, in the results file's order.
        let name = format!("golden{k}");
        let (st, _, info) = app.put(&format!("/v1/datasets/{name}"), &refs).await;
        assert_eq!(st, 201, "{info}");
        let (st, _, got) = app
            .post(
                "/v1/score",
                &json!({"dataset": name, "results": cands.clone()}),
            )
            .await;
        assert_eq!(st, 200, "{set}");
        // Results in the file's order: byte-for-byte the CLI's JSON value.
        assert!(got == want, "{set} via dataset differs from the CLI");
    }
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dataset_subset_with_batch_df_equals_inline_references() {
    let app = spawn_app().await;
    let refs = read_json("coco/edge/combined/refs.json");
    let cands = read_json("coco/edge/combined/cands.json");
    let (st, _, _) = app.put("/v1/datasets/edge", &refs).await;
    assert_eq!(st, 201);
    let all = cands.as_array().expect("list").clone();
    let subsets: Vec<Vec<Value>> = vec![
        all.iter().step_by(3).cloned().collect(),
        all.iter().skip(1).step_by(2).cloned().collect(),
        vec![all[4].clone()],
        vec![all[all.len() - 1].clone(), all[0].clone()],
        all.iter().rev().take(7).cloned().collect(),
    ];
    for (k, sub) in subsets.iter().enumerate() {
        let sub = Value::Array(sub.clone());
        let (_, items) = inline_items(&refs, &sub);
        let (st, _, inline) = app.post("/v1/score", &json!({"items": items})).await;
        assert_eq!(st, 200, "{inline}");
        let (st, _, via) = app
            .post(
                "/v1/score",
                &json!({"dataset": "edge", "results": sub, "cider_df": "batch"}),
            )
            .await;
        assert_eq!(st, 200, "{via}");
        // Items without references, given the dataset.
        let items_noref: Vec<Value> = sub
            .as_array()
            .expect("list")
            .iter()
            .map(|r| json!({"image_id": r["image_id"], "candidate": r["caption"]}))
            .collect();
        let (st, _, via_items) = app
            .post(
                "/v1/score",
                &json!({"dataset": "edge", "items": items_noref}),
            )
            .await;
        assert_eq!(st, 200, "{via_items}");
        same_report(&inline, &via, &format!("subset {k} (results)"));
        same_report(&inline, &via_items, &format!("subset {k} (items)"));
    }
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cider_df_dataset_uses_the_whole_set_and_says_so_in_the_signature() {
    let app = spawn_app().await;
    let refs = read_json("coco/fakecap_val2017/refs.json");
    let cands = read_json("coco/fakecap_val2017/cands.json");
    let (_, _, info) = app.put("/v1/datasets/fakecap", &refs).await;
    let sha = info["sha256"].as_str().expect("sha").to_owned();
    // Whole set: dataset df equals batch df.
    let (_, _, batch) = app
        .post(
            "/v1/score",
            &json!({"dataset": "fakecap", "results": cands}),
        )
        .await;
    let (_, _, ds) = app
        .post(
            "/v1/score",
            &json!({"dataset": "fakecap", "results": cands, "cider_df": "dataset"}),
        )
        .await;
    assert_eq!(batch["aggregate"], ds["aggregate"]);
    let sig = ds["signature"].as_str().expect("signature");
    assert!(
        sig.contains(&format!("dataset:fakecap@sha256:{sha}")),
        "{sig}"
    );
    // A subset: dataset df differs from batch df, and equals the library's table path.
    let sub: Vec<Value> = cands.as_array().expect("list")[..10].to_vec();
    let (_, _, b) = app
        .post("/v1/score", &json!({"dataset": "fakecap", "results": sub}))
        .await;
    let (_, _, d) = app
        .post(
            "/v1/score",
            &json!({"dataset": "fakecap", "results": sub, "cider_df": "dataset"}),
        )
        .await;
    assert_ne!(b["aggregate"]["CIDEr"], d["aggregate"]["CIDEr"]);
    assert_eq!(b["aggregate"]["Bleu_4"], d["aggregate"]["Bleu_4"]);
    // Inline references with the dataset's df: the same numbers as the cached vectors.
    let (_, items) = inline_items(&refs, &Value::Array(sub.clone()));
    let (st, _, inl) = app
        .post(
            "/v1/score",
            &json!({"dataset": "fakecap", "items": items, "cider_df": "dataset"}),
        )
        .await;
    assert_eq!(st, 200, "{inl}");
    assert_eq!(inl["aggregate"], d["aggregate"]);
    app.stop().await;
}

async fn expect_problem(
    app: &TestApp,
    res: (u16, HashMap<String, String>, Value),
    status: u16,
    code: &str,
) -> Value {
    let _ = app;
    let (st, headers, body) = res;
    assert_eq!(st, status, "expected {status} {code}, got {body}");
    assert_eq!(
        headers.get("content-type").map(String::as_str),
        Some("application/problem+json")
    );
    assert_eq!(body["code"], code, "{body}");
    assert_eq!(body["status"], status);
    assert!(body["detail"].as_str().is_some_and(|d| !d.is_empty()));
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_error_path_is_a_problem_document_with_a_stable_code() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut o = opts(dir.path());
    o.cfg.max_body_bytes = 200_000;
    o.cfg.max_items = 5;
    o.cfg.max_references = 3;
    o.cfg.max_caption_chars = 50;
    let app = spawn_with(o, Some(dir)).await;
    let item = |id: Value, c: &str| json!({"image_id": id, "candidate": c, "references": ["a dog", "a cat"]});

    let raw = app
        .send(
            app.client
                .post(app.url("/v1/score"))
                .body("{\"items\": [")
                .header("content-type", "application/json"),
        )
        .await;
    expect_problem(&app, raw, 400, "invalid_json").await;
    let surrogate = app
        .send(
            app.client.post(app.url("/v1/score")).body(
                r#"{"items": [{"image_id": 1, "candidate": "\ud800", "references": ["a"]}]}"#,
            ),
        )
        .await;
    expect_problem(&app, surrogate, 400, "invalid_json").await;
    let r = app.post("/v1/score", &json!({"items": "nope"})).await;
    expect_problem(&app, r, 422, "invalid_format").await;
    let r = app.post("/v1/score", &json!({"itemz": []})).await;
    expect_problem(&app, r, 422, "invalid_format").await;
    let r = app
        .post(
            "/v1/score",
            &json!({"metrics": ["spice"], "explain": "yes", "items": [item(json!(1), "a dog")]}),
        )
        .await;
    expect_problem(&app, r, 422, "invalid_format").await;
    let r = app
        .post(
            "/v1/score",
            &json!({"items": [{"image_id": 1, "candidate": 5, "references": ["a"]}]}),
        )
        .await;
    expect_problem(&app, r, 422, "invalid_caption").await;
    let r = app
        .post(
            "/v1/score",
            &json!({"items": [{"image_id": [1], "candidate": "a", "references": ["a"]}]}),
        )
        .await;
    expect_problem(&app, r, 422, "invalid_image_id").await;
    let r = app
        .post(
            "/v1/score",
            &json!({"metrics": ["bleu", "spicy"], "items": [item(json!(1), "a dog")]}),
        )
        .await;
    let p = expect_problem(&app, r, 422, "unknown_metric").await;
    assert!(p["detail"].as_str().unwrap_or("").contains("spicy"));
    let r = app
        .post(
            "/v1/score",
            &json!({"dataset": "nope", "items": [item(json!(1), "a dog")]}),
        )
        .await;
    expect_problem(&app, r, 404, "unknown_dataset").await;
    let r = app
        .post(
            "/v1/score",
            &json!({"dataset": "../etc", "items": [item(json!(1), "a dog")]}),
        )
        .await;
    expect_problem(&app, r, 422, "invalid_dataset_name").await;
    let r = app
        .post(
            "/v1/score",
            &json!({"items": [{"image_id": 1, "candidate": "a dog"}]}),
        )
        .await;
    expect_problem(&app, r, 422, "missing_references").await;
    let r = app
        .post(
            "/v1/score",
            &json!({"items": [{"image_id": 1, "candidate": "a dog", "references": []}]}),
        )
        .await;
    expect_problem(&app, r, 422, "missing_references").await;
    let r = app
        .post(
            "/v1/score",
            &json!({"items": [item(json!(1), "a"), item(json!(1.0), "b")]}),
        )
        .await;
    expect_problem(&app, r, 422, "duplicate_image_id").await;
    let r = app.post("/v1/score", &json!({"items": []})).await;
    expect_problem(&app, r, 422, "empty_results").await;
    let r = app
        .post(
            "/v1/score",
            &json!({"items": [{"image_id": 1, "candidate": "a", "references": ["...", "!"]},
                              {"image_id": 2, "candidate": "b", "references": [""]}]}),
        )
        .await;
    expect_problem(&app, r, 422, "no_reference_ngrams").await;
    // Limits.
    let many: Vec<Value> = (0..6).map(|i| item(json!(i), "a dog")).collect();
    let r = app.post("/v1/score", &json!({"items": many})).await;
    expect_problem(&app, r, 422, "limit_exceeded").await;
    let r = app
        .post(
            "/v1/score",
            &json!({"items": [{"image_id": 1, "candidate": "a", "references": ["a", "b", "c", "d"]}]}),
        )
        .await;
    expect_problem(&app, r, 422, "limit_exceeded").await;
    let r = app
        .post(
            "/v1/score",
            &json!({"items": [item(json!(1), &"long ".repeat(20))]}),
        )
        .await;
    expect_problem(&app, r, 422, "limit_exceeded").await;
    let big = json!({"items": [item(json!(1), &"x".repeat(300_000))]});
    let r = app.post("/v1/score", &big).await;
    expect_problem(&app, r, 413, "payload_too_large").await;
    // Datasets.
    let refs = json!({"references": {"1": ["a dog runs"], "2": ["a cat sleeps"]}});
    let r = app.put("/v1/datasets/bad%20name", &refs).await;
    expect_problem(&app, r, 422, "invalid_dataset_name").await;
    let r = app
        .put(&format!("/v1/datasets/{}", "x".repeat(65)), &refs)
        .await;
    expect_problem(&app, r, 422, "invalid_dataset_name").await;
    let r = app.get("/v1/datasets/missing").await;
    expect_problem(&app, r, 404, "unknown_dataset").await;
    let r = app
        .send(app.client.delete(app.url("/v1/datasets/missing")))
        .await;
    expect_problem(&app, r, 404, "unknown_dataset").await;
    assert_eq!(app.put("/v1/datasets/small", &refs).await.0, 201);
    let r = app
        .post(
            "/v1/score",
            &json!({"dataset": "small", "results": [{"image_id": 3, "caption": "x"}]}),
        )
        .await;
    expect_problem(&app, r, 422, "unknown_image_id").await;
    let r = app
        .post(
            "/v1/score",
            &json!({"results": [{"image_id": 1, "caption": "x"}]}),
        )
        .await;
    expect_problem(&app, r, 422, "invalid_format").await;
    let r = app
        .post(
            "/v1/score",
            &json!({"dataset": "small", "results": [{"image_id": 1, "caption": null}]}),
        )
        .await;
    expect_problem(&app, r, 422, "invalid_caption").await;
    let r = app
        .post(
            "/v1/score",
            &json!({"items": [item(json!(1), "a")], "cider_df": "dataset"}),
        )
        .await;
    expect_problem(&app, r, 422, "invalid_format").await;
    // Routing.
    let r = app.get("/v2/nothing").await;
    expect_problem(&app, r, 404, "not_found").await;
    let r = app.send(app.client.delete(app.url("/v1/score"))).await;
    expect_problem(&app, r, 405, "method_not_allowed").await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_without_resources_are_503_naming_the_metric_and_not_ready() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut o = opts(dir.path());
    o.resources = Resources::with_missing([(Metric::CiderD, "test: not loaded".to_owned())]);
    let app = spawn_with(o, Some(dir)).await;
    let body = json!({"metrics": ["bleu", "cider_d"], "items": [{"image_id": 1, "candidate": "a", "references": ["a"]}]});
    let r = app.post("/v1/score", &body).await;
    let p = expect_problem(&app, r, 503, "resources_not_loaded").await;
    assert_eq!(p["metric"], "cider_d");
    // METEOR is not loaded here either: named when asked for, left out of the default set.
    let mut meteor = body.clone();
    meteor["metrics"] = json!(["meteor"]);
    let p = expect_problem(
        &app,
        app.post("/v1/score", &meteor).await,
        503,
        "resources_not_loaded",
    )
    .await;
    assert_eq!(p["metric"], "meteor");
    // SPICE likewise (never in the default set).
    let mut spice = body.clone();
    spice["metrics"] = json!(["bleu", "spice"]);
    spice["explain"] = json!(true);
    let p = expect_problem(
        &app,
        app.post("/v1/score", &spice).await,
        503,
        "resources_not_loaded",
    )
    .await;
    assert_eq!(p["metric"], "spice");
    let mut default = body.clone();
    default.as_object_mut().unwrap().remove("metrics");
    let (st, _, d) = app.post("/v1/score", &default).await;
    assert_eq!(st, 200, "{d}");
    assert!(
        d["aggregate"].get("METEOR").is_none() && d["aggregate"].get("CIDEr").is_none(),
        "{d}"
    );
    let mut only_bleu = body.clone();
    only_bleu["metrics"] = json!(["bleu"]);
    assert_eq!(app.post("/v1/score", &only_bleu).await.0, 200);
    let (st, _, ready) = app.get("/readyz").await;
    assert_eq!(st, 503);
    assert_eq!(ready["metrics"]["bleu"], "ready");
    assert_ne!(ready["metrics"]["meteor"], "ready", "{ready}");
    assert_ne!(ready["metrics"]["spice"], "ready", "{ready}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_roles_and_constant_time_keys() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut o = opts(dir.path());
    o.keys = Keys::parse(&format!("admin:{ADMIN}\nscore:{SCORER}"), "test").expect("keys");
    let app = spawn_with(o, Some(dir)).await;
    let refs = json!({"references": {"1": ["a dog runs"], "2": ["a cat sleeps"]}});
    let score = json!({"dataset": "d", "results": [{"image_id": 1, "caption": "a dog"}]});

    let r = app.put("/v1/datasets/d", &refs).await;
    expect_problem(&app, r, 401, "unauthorized").await;
    let r = app
        .send(
            app.client
                .put(app.url("/v1/datasets/d"))
                .bearer_auth("wrong-key-0123456789")
                .json(&refs),
        )
        .await;
    expect_problem(&app, r, 401, "unauthorized").await;
    let r = app
        .send(
            app.client
                .put(app.url("/v1/datasets/d"))
                .bearer_auth(SCORER)
                .json(&refs),
        )
        .await;
    expect_problem(&app, r, 403, "forbidden").await;
    let r = app
        .send(
            app.client
                .put(app.url("/v1/datasets/d"))
                .bearer_auth(ADMIN)
                .json(&refs),
        )
        .await;
    assert_eq!(r.0, 201, "{}", r.2);
    let r = app.post("/v1/score", &score).await;
    expect_problem(&app, r, 401, "unauthorized").await;
    for key in [SCORER, ADMIN] {
        let r = app
            .send(
                app.client
                    .post(app.url("/v1/score"))
                    .bearer_auth(key)
                    .json(&score),
            )
            .await;
        assert_eq!(r.0, 200, "{}", r.2);
        let r = app
            .send(app.client.get(app.url("/v1/datasets")).bearer_auth(key))
            .await;
        assert_eq!(r.0, 200);
    }
    let r = app
        .send(
            app.client
                .delete(app.url("/v1/datasets/d"))
                .bearer_auth(SCORER),
        )
        .await;
    expect_problem(&app, r, 403, "forbidden").await;
    // Operations routes stay open for probes and scrapers.
    assert_eq!(app.get("/healthz").await.0, 200);
    assert_eq!(app.get("/readyz").await.0, 200);
    assert_eq!(app.get("/openapi.json").await.0, 200);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn datasets_persist_across_a_restart_and_identical_reput_is_a_noop() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_path_buf();
    let app = spawn_with(opts(&path), Some(dir)).await;
    let refs = read_json("coco/fakecap_val2017/refs.json");
    let cands = read_json("coco/fakecap_val2017/cands.json");
    let (st, _, first) = app.put("/v1/datasets/fakecap", &refs).await;
    assert_eq!(st, 201);
    assert_eq!(first["images"], 126);
    assert_eq!(first["outcome"], "created");
    let (st, _, again) = app.put("/v1/datasets/fakecap", &refs).await;
    assert_eq!(st, 200);
    assert_eq!(again["outcome"], "unchanged");
    assert_eq!(again["created"], first["created"]);
    let body = json!({"dataset": "fakecap", "results": cands, "cider_df": "dataset"});
    let (_, _, before) = app.post("/v1/score", &body).await;
    // A leftover temporary file from a crashed write is ignored and cleaned.
    let tmp = path.join("datasets/fakecap.json.tmp-1-1");
    std::fs::write(&tmp, b"{\"truncated").expect("write tmp");
    let dir = app.stop().await;

    let app = spawn_with(opts(&path), dir).await;
    assert!(!tmp.exists());
    let (st, _, info) = app.get("/v1/datasets/fakecap").await;
    assert_eq!(st, 200);
    assert_eq!(info["sha256"], first["sha256"]);
    assert_eq!(info["captions"], first["captions"]);
    let (_, _, list) = app.get("/v1/datasets").await;
    assert_eq!(list["datasets"].as_array().map(Vec::len), Some(1));
    let (_, _, after) = app.post("/v1/score", &body).await;
    assert_eq!(before, after);
    // Delete removes it from disk too.
    let r = app
        .send(app.client.delete(app.url("/v1/datasets/fakecap")))
        .await;
    assert_eq!(r.0, 204);
    let dir = app.stop().await;
    let app = spawn_with(opts(&path), dir).await;
    assert_eq!(app.get("/v1/datasets/fakecap").await.0, 404);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_requests_give_the_same_bytes_as_sequential_ones() {
    let app = spawn_app().await;
    let refs = read_json("coco/fakecap_val2017/refs.json");
    let cands = read_json("coco/fakecap_val2017/cands.json");
    app.put("/v1/datasets/fakecap", &refs).await;
    let all = cands.as_array().expect("list").clone();
    let bodies: Vec<Value> = (0..32)
        .map(|i| {
            let sub: Vec<Value> = all.iter().skip(i % 7).step_by(1 + i % 5).cloned().collect();
            let df = if i % 2 == 0 { "batch" } else { "dataset" };
            json!({"dataset": "fakecap", "results": sub, "cider_df": df})
        })
        .collect();
    let fetch = |client: reqwest::Client, url: String, body: Value| async move {
        let res = client.post(url).json(&body).send().await.expect("send");
        assert_eq!(res.status(), 200);
        res.bytes().await.expect("bytes").to_vec()
    };
    let mut sequential = Vec::new();
    for b in &bodies {
        sequential.push(fetch(app.client.clone(), app.url("/v1/score"), b.clone()).await);
    }
    let handles: Vec<_> = bodies
        .iter()
        .map(|b| tokio::spawn(fetch(app.client.clone(), app.url("/v1/score"), b.clone())))
        .collect();
    for (i, h) in handles.into_iter().enumerate() {
        assert_eq!(h.await.expect("join"), sequential[i], "request {i}");
    }
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overload_is_shed_with_503_and_retry_after() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut o = opts(dir.path());
    o.cfg.max_concurrent = 1;
    o.hook = Arc::new(|b: &[u8]| {
        if has(b, "\"SLOW\"") {
            std::thread::sleep(Duration::from_millis(800));
        }
    });
    let app = spawn_with(o, Some(dir)).await;
    let slow = json!({"items": [{"image_id": 1, "candidate": "SLOW", "references": ["a"]}]});
    let fast = json!({"items": [{"image_id": 1, "candidate": "a", "references": ["a"]}]});
    let client = app.client.clone();
    let url = app.url("/v1/score");
    let s = slow.clone();
    let first = tokio::spawn(async move { client.post(url).json(&s).send().await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let r = app.post("/v1/score", &fast).await;
    let retry = r.1.get("retry-after").cloned();
    expect_problem(&app, r, 503, "overloaded").await;
    assert!(retry.is_some());
    assert_eq!(first.await.expect("join").expect("send").status(), 200);
    assert_eq!(app.post("/v1/score", &fast).await.0, 200);
    let (_, _, _) = app.get("/metrics").await;
    let text = app.metrics_text().await;
    assert!(text.contains("capscore_shed_total"), "{text}");
    assert!(text.contains("capscore_http_requests_total"));
    assert!(text.contains("route=\"/v1/score\""));
    assert!(text.contains("capscore_http_request_duration_seconds_bucket"));
    assert!(text.contains("capscore_items_scored_total"));
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_inside_a_metric_is_a_500_and_the_server_stays_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut o = opts(dir.path());
    o.hook = Arc::new(|b: &[u8]| {
        if has(b, "\"PANIC\"") {
            panic!("injected failure");
        }
    });
    let app = spawn_with(o, Some(dir)).await;
    let bad = json!({"items": [{"image_id": 1, "candidate": "PANIC", "references": ["a"]}]});
    let r = app.post("/v1/score", &bad).await;
    let p = expect_problem(&app, r, 500, "internal").await;
    assert!(!p["detail"].as_str().unwrap_or("").contains("injected"));
    let ok = json!({"items": [{"image_id": 1, "candidate": "a", "references": ["a"]}]});
    assert_eq!(app.post("/v1/score", &ok).await.0, 200);
    assert_eq!(app.get("/healthz").await.0, 200);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_finishes_requests_in_flight() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut o = opts(dir.path());
    o.hook = Arc::new(|b: &[u8]| {
        if has(b, "\"SLOW\"") {
            std::thread::sleep(Duration::from_millis(500));
        }
    });
    let app = spawn_with(o, Some(dir)).await;
    let client = app.client.clone();
    let url = app.url("/v1/score");
    let inflight = tokio::spawn(async move {
        client
            .post(url)
            .json(&json!({"items": [{"image_id": 1, "candidate": "SLOW", "references": ["a"]}]}))
            .send()
            .await
    });
    tokio::time::sleep(Duration::from_millis(150)).await;
    app.stop().await;
    let res = inflight.await.expect("join").expect("response");
    assert_eq!(res.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ops_routes_docs_and_request_ids() {
    let app = spawn_app().await;
    let (st, h, v) = app.get("/healthz").await;
    assert_eq!((st, v), (200, json!({"status": "ok"})));
    assert!(h.contains_key("x-request-id"));
    let (st, _, v) = app.get("/readyz").await;
    assert_eq!(st, 200);
    assert_eq!(v["status"], "ready");
    let res = app.client.get(app.url("/docs")).send().await.expect("docs");
    assert_eq!(res.status(), 200);
    assert!(res.text().await.expect("html").contains("<html"));
    let (_, _, spec) = app.get("/openapi.json").await;
    assert!(spec["paths"]["/v1/score"]["post"].is_object());
    app.stop().await;
}

#[test]
fn openapi_json_matches_the_code() {
    let spec = serde_json::to_value(server::openapi_spec()).expect("spec");
    let mut text = serde_json::to_string_pretty(&spec).expect("json");
    text.push('\n');
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("openapi/openapi.json");
    if std::env::var_os("UPDATE_OPENAPI").is_some() {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, &text).expect("write");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == text,
        "openapi/openapi.json is out of date: run `UPDATE_OPENAPI=1 cargo test --test api openapi` and commit it"
    );
}

/// Regression: `capscore serve` logged to stdout while `main` held the stdout lock, so the first
/// INFO line from a worker thread (after a dataset registration) blocked that request forever.
/// Runs the real binary as the quick start does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_serve_binary_answers_requests_that_log() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_capscore"))
        .arg("serve")
        .arg("--addr")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--data-dir")
        .arg(dir.path())
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn capscore serve");
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .expect("client");
    let mut up = false;
    for _ in 0..100 {
        if client.get(format!("{base}/healthz")).send().await.is_ok() {
            up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(up, "server did not come up");
    let res = client
        .put(format!("{base}/v1/datasets/demo"))
        .json(&json!({"references": {"1": ["a dog runs"], "2": ["a cat sleeps"]}}))
        .send()
        .await
        .expect("PUT answered");
    assert_eq!(res.status(), 201);
    let res = client
        .post(format!("{base}/v1/score"))
        .json(&json!({"dataset": "demo", "results": [{"image_id": 1, "caption": "a dog"}]}))
        .send()
        .await
        .expect("POST answered");
    assert_eq!(res.status(), 200);
    // SIGTERM: graceful shutdown, exit 0.
    let pid = child.id().expect("pid");
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(pid.to_string())
        .status();
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("exits after SIGTERM")
        .expect("wait");
    assert!(status.success(), "{status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_computation_over_the_timeout_is_a_504_problem() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut o = opts(dir.path());
    o.cfg.request_timeout = 0.2;
    o.hook = Arc::new(|b: &[u8]| {
        if has(b, "\"SLOW\"") {
            std::thread::sleep(Duration::from_millis(600));
        }
    });
    let app = spawn_with(o, Some(dir)).await;
    let slow = json!({"items": [{"image_id": 1, "candidate": "SLOW", "references": ["a"]}]});
    let r = app.post("/v1/score", &slow).await;
    expect_problem(&app, r, 504, "timeout").await;
    // The hook's sleep cannot be cancelled (a real computation stops within a caption once
    // abandoned: tests/cost.rs) and holds the light lane it runs on until it ends.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let ok = json!({"items": [{"image_id": 1, "candidate": "a", "references": ["a"]}]});
    assert_eq!(app.post("/v1/score", &ok).await.0, 200);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spice_over_inline_references_equals_the_cli_with_its_section() {
    let app = spawn_app().await;
    let set = "coco/fakecap_val2017";
    let refs = read_json(&format!("{set}/refs.json"));
    let cands = read_json(&format!("{set}/cands.json"));
    let want = cli(
        &existing(&format!("{set}/refs.json")),
        &existing(&format!("{set}/cands.json")),
        Some("bleu,spice"),
    );
    let (b, items) = inline_items(&refs, &cands);
    let (st, _, got) = app
        .post(
            "/v1/score",
            &json!({"metrics": ["bleu", "spice"], "items": items}),
        )
        .await;
    assert_eq!(st, 200, "{got}");
    assert!(got["aggregate"]["SPICE"].as_f64().is_some(), "{got}");
    let per = got["per_image"].as_array().expect("per_image");
    assert_eq!(per.len(), b.items.len());
    assert!(per.iter().all(|p| p["SPICE"].as_f64().is_some()));
    let sp = got["spice"]["per_image"].as_array().expect("spice section");
    assert_eq!(sp.len(), b.items.len());
    for cat in [
        "All",
        "Object",
        "Attribute",
        "Relation",
        "Cardinality",
        "Color",
        "Size",
    ] {
        assert!(got["spice"]["aggregate"].get(cat).is_some(), "{cat}");
        assert!(sp[0][cat]["tp"].is_i64(), "{cat}: {}", sp[0]);
    }
    // Mean of All F over the images = the aggregate; per image All.f = SPICE.
    assert_eq!(got["spice"]["aggregate"]["All"], got["aggregate"]["SPICE"]);
    assert_eq!(sp[0]["All"]["f"], per[0]["SPICE"]);
    // Without `explain`, no tuples.
    assert!(sp.iter().all(|p| p.get("candidate_tuples").is_none()));
    same_spice_report(&got, &want, "inline spice vs CLI");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spice_explain_lists_tuples_and_changes_nothing_else() {
    let app = spawn_app().await;
    let items = json!([
        {"image_id": 7, "candidate": "A black dog runs on the green grass.",
         "references": ["A black dog running in a field.", "Two dogs play on the grass."]},
        {"image_id": "x", "candidate": "a red bus on a street",
         "references": ["A large red bus parked on the street.", "a bus"]}
    ]);
    let (st, _, plain) = app
        .post("/v1/score", &json!({"metrics": ["spice"], "items": items}))
        .await;
    assert_eq!(st, 200, "{plain}");
    let (st, _, off) = app
        .post(
            "/v1/score",
            &json!({"metrics": ["spice"], "items": items, "explain": false}),
        )
        .await;
    assert_eq!(st, 200, "{off}");
    assert_eq!(plain, off);
    let (st, _, ex) = app
        .post(
            "/v1/score",
            &json!({"metrics": ["spice"], "items": items, "explain": true}),
        )
        .await;
    assert_eq!(st, 200, "{ex}");
    for key in ["aggregate", "per_image", "signature", "warnings"] {
        assert_eq!(ex[key], plain[key], "{key}");
    }
    assert_eq!(ex["spice"]["aggregate"], plain["spice"]["aggregate"]);
    let per = ex["spice"]["per_image"].as_array().expect("per_image");
    assert_eq!(per[0]["image_id"], 7);
    for p in per {
        for key in ["candidate_tuples", "reference_tuples"] {
            let t = p[key].as_array().unwrap_or_else(|| panic!("{key}: {p}"));
            assert!(!t.is_empty(), "{key}: {p}");
            assert!(t
                .iter()
                .all(|x| x["concepts"].is_array() && x["matched"].is_boolean()));
        }
        // Matched candidate tuples are the All category's true positives.
        let matched = p["candidate_tuples"]
            .as_array()
            .expect("tuples")
            .iter()
            .filter(|x| x["matched"] == true)
            .count();
        assert_eq!(Some(matched as i64), p["All"]["tp"].as_i64(), "{p}");
    }
    let dog = &per[0]["candidate_tuples"];
    assert!(
        dog.as_array()
            .expect("tuples")
            .iter()
            .any(|x| x["concepts"] == json!([["dog"]]) && x["matched"] == true),
        "{dog}"
    );
    // `explain` without SPICE: no spice section, nothing else changes.
    let (st, _, b) = app
        .post(
            "/v1/score",
            &json!({"metrics": ["bleu"], "items": items, "explain": true}),
        )
        .await;
    assert_eq!(st, 200, "{b}");
    assert!(b.get("spice").is_none(), "{b}");
    app.stop().await;
}

/// `capscore_dataset_evictions_total` in a `/metrics` text (0 when absent).
fn evictions(text: &str) -> f64 {
    text.lines()
        .find(|l| l.starts_with("capscore_dataset_evictions_total"))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

/// Issue 29: a registered dataset's cached SPICE graphs count in its resident size, and a full
/// budget evicts them, coldest dataset first: the size falls back to the dataset's base, the
/// other dataset keeps its graphs, and a later request rebuilds them and scores the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cold_spice_graphs_are_evicted_and_rebuilt() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = opts(dir.path());
    let state = server::build_state_with_hook(&o.cfg, o.keys, o.hook, o.resources).expect("state");
    let handle = state.clone();
    let app = serve_state(state, Some(dir)).await;
    let refs = read_json("coco/fakecap_val2017/refs.json");
    let cands = read_json("coco/fakecap_val2017/cands.json");
    let mut base = HashMap::new();
    for name in ["a", "b"] {
        let (st, _, info) = app.put(&format!("/v1/datasets/{name}"), &refs).await;
        assert_eq!(st, 201, "{info}");
        base.insert(name, info["resident_bytes"].as_u64().expect("bytes"));
    }
    let spice = |name: &str| json!({"metrics": ["spice"], "dataset": name, "results": cands});
    let resident = |info: &Value| info["resident_bytes"].as_u64().expect("bytes");
    // `a` is used first, so it is the colder one.
    let (st, _, first) = app.post("/v1/score", &spice("a")).await;
    assert_eq!(st, 200, "{first}");
    assert_eq!(app.post("/v1/score", &spice("b")).await.0, 200);
    for name in ["a", "b"] {
        let (_, _, info) = app.get(&format!("/v1/datasets/{name}")).await;
        assert!(resident(&info) > base[name], "{info}");
    }
    let freed = handle.0.evict_cold(1);
    assert!(freed > 0);
    let (_, _, a) = app.get("/v1/datasets/a").await;
    assert_eq!(resident(&a), base["a"], "{a}");
    let (_, _, b) = app.get("/v1/datasets/b").await;
    assert!(resident(&b) > base["b"], "{b}");
    assert_eq!(handle.0.budget.holds.total(), base["a"] + resident(&b));
    let (st, _, again) = app.post("/v1/score", &spice("a")).await;
    assert_eq!(st, 200, "{again}");
    same_spice_report(&first, &again, "rebuilt after eviction");
    let (_, _, a) = app.get("/v1/datasets/a").await;
    assert!(resident(&a) > base["a"], "{a}");
    // The counter is the process's (tests run at once): at least this eviction.
    assert!(evictions(&app.metrics_text().await) >= 1.0);
    app.stop().await;
}

/// Issue 29, over HTTP: with a memory budget that holds the datasets, one request and one
/// dataset's cached SPICE graphs, SPICE on each dataset in turn evicts the other's graphs
/// (the server never answers 507 and never holds both), and a rebuilt cache scores the same.
/// The budget is set from the datasets' sizes and the request's estimate, as the server
/// reports them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_budget_evicts_the_colder_datasets_graphs_over_http() {
    const MIB: u64 = 1 << 20;
    let dir = tempfile::tempdir().expect("tempdir");
    let words = "man woman dog cat red blue big small riding holding on in with near the a of \
                 street table bike ball tree grass white black sitting standing two three"
        .split_whitespace()
        .collect::<Vec<_>>();
    let mut k = 0usize;
    let mut sentence = |n: usize| -> String {
        (0..n)
            .map(|_| {
                k = k
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                words[(k >> 33) % words.len()]
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut sets = Vec::new();
    for name in ["a", "b"] {
        let refs: serde_json::Map<String, Value> = (0..300)
            .map(|i| {
                (
                    i.to_string(),
                    json!((0..5).map(|_| sentence(12)).collect::<Vec<_>>()),
                )
            })
            .collect();
        let results: Vec<Value> = (0..300)
            .map(|i| json!({"image_id": i, "caption": sentence(10)}))
            .collect();
        sets.push((name, Value::Object(refs), results));
    }
    let spice = |name: &str, results: &[Value]| json!({"metrics": ["spice"], "dataset": name, "results": results});
    let resident = |info: &Value| info["resident_bytes"].as_u64().expect("bytes");
    // 1. Default budget: the datasets' sizes without their graphs, then each dataset's graphs
    // (its size with them less its size without).
    let (mut base, mut g) = (0u64, 0u64);
    {
        let app = spawn_with(opts(dir.path()), None).await;
        for (name, refs, results) in &sets {
            let (st, _, before) = app.put(&format!("/v1/datasets/{name}"), refs).await;
            assert_eq!(st, 201, "{before}");
            base += resident(&before);
            let (st, _, out) = app.post("/v1/score", &spice(name, results)).await;
            assert_eq!(st, 200, "{out}");
            let (_, _, after) = app.get(&format!("/v1/datasets/{name}")).await;
            g = g.max(resident(&after) - resident(&before));
        }
        app.stop().await;
    }
    // 2. The request's estimate, from the refusal of a server that admits 1 MiB per request.
    let request_mib: u64 = {
        let mut o = opts(dir.path());
        o.cfg.max_request_memory = 1;
        o.cfg.memory_budget = 4096;
        let app = spawn_with(o, None).await;
        let (st, _, p) = app.post("/v1/score", &spice("a", &sets[0].2)).await;
        app.stop().await;
        assert_eq!(
            (st, p["code"].as_str()),
            (422, Some("cost_exceeded")),
            "{p}"
        );
        let detail = p["detail"].as_str().expect("detail");
        let at = detail.find("about ").expect("an estimate") + 6;
        detail[at..]
            .split(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .expect("MiB")
    };
    assert!(
        g >= 8 * MIB && request_mib >= 4,
        "graphs {g} B, request {request_mib} MiB"
    );
    // 3. Room for both datasets, one request and one dataset's graphs, not two.
    let budget = base.div_ceil(MIB) + request_mib.max(g.div_ceil(MIB)) + 1;
    let mut o = opts(dir.path());
    o.cfg.memory_budget = budget;
    let state = server::build_state_with_hook(&o.cfg, o.keys, o.hook, o.resources).expect("state");
    let handle = state.clone();
    let app = serve_state(state, Some(dir)).await;
    let mut first = Vec::new();
    for (name, _, results) in &sets {
        let (st, _, report) = app.post("/v1/score", &spice(name, results)).await;
        assert_eq!(st, 200, "{name}: {report}");
        first.push(report);
        assert!(
            handle.0.budget.holds.total() <= budget * MIB,
            "held {} of {budget} MiB",
            handle.0.budget.holds.total()
        );
    }
    let (_, _, a) = app.get("/v1/datasets/a").await;
    assert!(
        resident(&a) < resident(&app.get("/v1/datasets/b").await.2),
        "{a}"
    );
    let (st, _, again) = app.post("/v1/score", &spice("a", &sets[0].2)).await;
    assert_eq!(st, 200, "{again}");
    same_spice_report(&first[0], &again, "rebuilt after an eviction over HTTP");
    // The counter is the process's (tests run at once): at least these two evictions.
    assert!(evictions(&app.metrics_text().await) >= 2.0);
    assert!(handle.0.budget.holds.total() <= budget * MIB);
    app.stop().await;
}

/// A registered dataset serves SPICE from its cached reference graphs: the same numbers as the
/// references sent inline, on the whole set (the first request builds the graphs, later ones
/// reuse them) and on subsets, including subsets whose tail references are re-tokenized for
/// their context (those images get graphs of their own).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spice_via_a_registered_dataset_equals_inline_references() {
    let app = spawn_app().await;
    let counter = |text: &str| -> f64 {
        text.lines()
            .find(|l| l.starts_with("capscore_spice_cached_reference_graphs_total"))
            .and_then(|l| l.split_whitespace().last())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0)
    };
    let before = counter(&app.metrics_text().await);
    let subsets_of = |all: &[Value]| -> Vec<Vec<Value>> {
        vec![
            all.to_vec(),
            all.to_vec(),
            all.iter().step_by(3).cloned().collect(),
            all.iter().skip(1).step_by(2).cloned().collect(),
            vec![all[4].clone()],
            vec![all[all.len() - 1].clone(), all[0].clone()],
            all.iter().rev().take(7).cloned().collect(),
        ]
    };
    let mut sets: Vec<(&str, Value, Vec<Vec<Value>>)> = Vec::new();
    for (name, set) in [
        ("edge", "coco/edge/combined"),
        ("fakecap", "coco/fakecap_val2017"),
    ] {
        let cands = read_json(&format!("{set}/cands.json"));
        let subsets = subsets_of(cands.as_array().expect("list"));
        sets.push((name, read_json(&format!("{set}/refs.json")), subsets));
    }
    // Tail references on the tokenizer's lookahead classes (as in the dataset unit tests):
    // every subset, e.g. {1, 3} re-tokenizes "Street sign CTH D.".
    let refs = json!({
        "1": ["A sign at 8th Ave/CTH D.", "Street sign CTH D."],
        "2": ["a wax head on a shelf", "Cakes, cookies etc."],
        "3": ["", " A tan dog runs.", "Mr. Smith at the U.S."],
        "4": ["A tan dog sits", "   ", "art."],
        "5": ["(a) dog K.", "\"quoted\" dog"]
    });
    let cands = [
        "a street sign at the corner",
        "cakes and cookies on a shelf",
        "a brown dog running",
        "a dog sitting on the floor",
        "a dog with a sign",
    ];
    let subsets = (1u32..32)
        .map(|mask| {
            (0..5)
                .filter(|i| mask & (1 << i) != 0)
                .map(|i| json!({"image_id": i + 1, "caption": cands[i]}))
                .collect()
        })
        .collect();
    sets.push(("lookahead", refs, subsets));
    for (name, refs, subsets) in &sets {
        let (st, _, info) = app.put(&format!("/v1/datasets/{name}"), refs).await;
        assert_eq!(st, 201, "{info}");
        for (k, sub) in subsets.iter().enumerate() {
            let sub = Value::Array(sub.clone());
            for metrics in [json!(["spice"]), json!(["bleu", "cider_d", "spice"])] {
                let (_, items) = inline_items(refs, &sub);
                let (st, _, inline) = app
                    .post("/v1/score", &json!({"metrics": metrics, "items": items}))
                    .await;
                assert_eq!(st, 200, "{inline}");
                let (st, _, via) = app
                    .post(
                        "/v1/score",
                        &json!({"metrics": metrics, "dataset": name, "results": sub}),
                    )
                    .await;
                assert_eq!(st, 200, "{via}");
                assert!(via["aggregate"]["SPICE"].as_f64().is_some(), "{via}");
                same_spice_report(&inline, &via, &format!("{name} subset {k} {metrics}"));
            }
        }
    }
    let after = counter(&app.metrics_text().await);
    assert!(
        after > before,
        "the dataset's cached graphs were never used"
    );
    app.stop().await;
}

/// The response body is byte for byte the engine's report through `Report::to_json` (the
/// route serializes the report directly), SPICE section and `explain` tuples included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn response_bytes_are_the_reports_json() {
    let app = spawn_app().await;
    let refs = read_json("coco/edge/combined/refs.json");
    let cands = read_json("coco/edge/combined/cands.json");
    let (batch, items) = inline_items(&refs, &cands);
    let metrics = [
        Metric::Bleu,
        Metric::Meteor,
        Metric::RougeL,
        Metric::CiderD,
        Metric::Spice,
    ];
    let (meteor, spice) = (meteor(), spice());
    let opts = capscore::engine::Options {
        meteor: Some(&meteor),
        spice: Some(&spice),
        explain: true,
        ..capscore::engine::Options::new(&metrics)
    };
    let (cands, inline) = batch_items(&batch);
    let want = serde_json::to_vec(
        &capscore::engine::score(cands, &inline, &opts)
            .expect("score")
            .to_json()
            .expect("json"),
    )
    .expect("json");
    let body = json!({"metrics": ["bleu", "meteor", "rouge_l", "cider_d", "spice"], "items": items, "explain": true});
    let res = app
        .client
        .post(app.url("/v1/score"))
        .json(&body)
        .send()
        .await
        .expect("request");
    assert_eq!(res.status(), 200);
    let got = res.bytes().await.expect("body");
    assert!(
        got[..] == want[..],
        "response bytes differ from the report's JSON"
    );
    app.stop().await;
}

/// `cider_df: {"dataset": NAME}`: another registered dataset's table, for inline references
/// and for a dataset's results alike; the same numbers as the CLI's `--df-from` with that file;
/// the signature names the table's dataset and content hash.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cider_df_from_another_dataset_equals_cli_df_from() {
    let app = spawn_app().await;
    let refs = read_json("coco/fakecap_val2017/refs.json");
    let cands = read_json("coco/fakecap_val2017/cands.json");
    let (_, _, info) = app.put("/v1/datasets/fakecap", &refs).await;
    let sha = info["sha256"].as_str().expect("sha").to_owned();
    // The scored subset: 20 images as their own references file (CLI) / inline items (API).
    let sub: Vec<Value> = cands.as_array().expect("list")[..20].to_vec();
    let (batch, items) = inline_items(&refs, &Value::Array(sub.clone()));
    let (st, _, api) = app
        .post(
            "/v1/score",
            &json!({"items": items, "metrics": ["cider_d"], "cider_df": {"dataset": "fakecap"}}),
        )
        .await;
    assert_eq!(st, 200, "{api}");
    let sig = api["signature"].as_str().expect("signature");
    assert!(
        sig.contains(&format!("dataset:fakecap@sha256:{sha}(N=")),
        "{sig}"
    );
    // Against the dataset's own results path with its own table: the same CIDEr.
    let (_, _, ds) = app
        .post(
            "/v1/score",
            &json!({"dataset": "fakecap", "results": sub, "metrics": ["cider_d"], "cider_df": "dataset"}),
        )
        .await;
    assert_eq!(api["aggregate"], ds["aggregate"]);
    // The CLI with --df-from the full references file gives the same numbers.
    let dir = tempfile::tempdir().expect("tempdir");
    let sub_refs = json!({
        "images": batch.items.iter().map(|i| json!({"id": i.image_id.raw})).collect::<Vec<_>>(),
        "annotations": batch.items.iter().enumerate().flat_map(|(k, i)| i.references.iter().enumerate()
            .map(move |(j, r)| json!({"image_id": i.image_id.raw, "id": k * 100 + j, "caption": r}))).collect::<Vec<_>>(),
    });
    let (r, c, full) = (
        dir.path().join("r.json"),
        dir.path().join("c.json"),
        dir.path().join("fakecap.json"),
    );
    std::fs::write(&r, sub_refs.to_string()).expect("write");
    std::fs::write(&c, Value::Array(sub).to_string()).expect("write");
    std::fs::write(&full, refs.to_string()).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_capscore"))
        .args(["score", "--metrics", "cider_d", "--refs"])
        .arg(&r)
        .arg("--cands")
        .arg(&c)
        .arg("--df-from")
        .arg(&full)
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cli: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(cli["aggregate"], api["aggregate"]);
    assert_eq!(per_image_by_id(&cli), per_image_by_id(&api));
    // Without the option the subset's own table gives another number.
    let plain = cli_score(&r, &c, &["--metrics", "cider_d"]);
    assert_ne!(plain["aggregate"]["CIDEr"], api["aggregate"]["CIDEr"]);
    // An unknown table dataset is a 404 like any unknown dataset.
    let res = app
        .post(
            "/v1/score",
            &json!({"items": [{"image_id": 1, "candidate": "a", "references": ["a"]}], "cider_df": {"dataset": "nope"}}),
        )
        .await;
    expect_problem(&app, res, 404, "unknown_dataset").await;
    app.stop().await;
}

fn cli_score(refs: &Path, cands: &Path, extra: &[&str]) -> Value {
    let (ok, out, err) = common::run_score(refs, cands, extra);
    assert!(ok, "{err}");
    serde_json::from_slice(&out).expect("cli json")
}

/// `bootstrap` over HTTP: the CLI's intervals for the same seed; limits are coded errors.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bootstrap_over_http_equals_the_cli() {
    let app = spawn_app().await;
    let refs = existing("coco/fakecap_val2017/refs.json");
    let cands = existing("coco/fakecap_val2017/cands.json");
    let (_, items) = inline_items(
        &read_json("coco/fakecap_val2017/refs.json"),
        &read_json("coco/fakecap_val2017/cands.json"),
    );
    let (st, _, api) = app
        .post(
            "/v1/score",
            &json!({"items": items, "metrics": ["bleu", "meteor", "rouge_l", "cider_d"],
                    "bootstrap": {"samples": 300, "seed": 11, "level": 0.9}}),
        )
        .await;
    assert_eq!(st, 200, "{api}");
    let cli = cli_score(
        &refs,
        &cands,
        &[
            "--bootstrap",
            "300",
            "--bootstrap-seed",
            "11",
            "--bootstrap-level",
            "0.9",
        ],
    );
    assert_eq!(api["bootstrap"], cli["bootstrap"]);
    for bad in [
        json!({"samples": 0}),
        json!({"samples": 20000}),
        json!({"samples": 10, "level": 1.5}),
        json!({"samples": 10, "x": 1}),
    ] {
        let res = app
            .post("/v1/score", &json!({"items": items, "bootstrap": bad}))
            .await;
        expect_problem(&app, res, 422, "invalid_format").await;
    }
    app.stop().await;
}

/// Split tables over HTTP: by a registered dataset's `domain` labels and by `items[].split`,
/// both equal to the CLI's `--split-by domain`; EvalAI's shape; strict datasets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn split_tables_and_strict_datasets_over_http_equal_the_cli() {
    let app = spawn_app().await;
    let (refs, cands) = common::nocaps_shaped();
    let (st, _, info) = app
        .put("/v1/datasets/nocaps?require_complete=true", &refs)
        .await;
    assert_eq!(st, 201, "{info}");
    // COCO's `license` is a label field too (few values); `file_name`, sizes and URLs are not.
    assert_eq!(info["labels"], json!(["domain", "license"]));
    assert_eq!(info["require_complete"], true);
    let metrics = ["bleu", "meteor", "rouge_l", "cider_d"];
    let (st, _, ds) = app
        .post(
            "/v1/score",
            &json!({"dataset": "nocaps", "results": cands, "metrics": metrics, "split_by": "domain"}),
        )
        .await;
    assert_eq!(st, 200, "{ds}");
    let dir = tempfile::tempdir().expect("tempdir");
    let (r, c) = (dir.path().join("r.json"), dir.path().join("c.json"));
    std::fs::write(&r, refs.to_string()).unwrap();
    std::fs::write(&c, cands.to_string()).unwrap();
    let cli = cli_score(
        &r,
        &c,
        &[
            "--metrics",
            "bleu,meteor,rouge_l,cider_d",
            "--split-by",
            "domain",
        ],
    );
    assert_eq!(ds["splits"], cli["splits"]);
    assert_eq!(ds["aggregate"], cli["aggregate"]);
    // Labels given by the items: the same tables.
    let labels: HashMap<String, Value> = refs["images"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["id"].to_string(), i["domain"].clone()))
        .collect();
    let (_, items) = inline_items(&refs, &cands);
    let items: Vec<Value> = items
        .as_array()
        .unwrap()
        .iter()
        .map(|it| {
            let mut it = it.clone();
            it["split"] = labels[&it["image_id"].to_string()].clone();
            it
        })
        .collect();
    let (st, _, inline) = app
        .post(
            "/v1/score",
            &json!({"items": items, "metrics": metrics, "format": "evalai"}),
        )
        .await;
    assert_eq!(st, 200, "{inline}");
    let result = inline["result"].as_array().expect("evalai result");
    assert_eq!(
        result[0]["in-domain"],
        cli["splits"]["in-domain"]["aggregate"]
    );
    assert_eq!(result[3]["entire"], cli["aggregate"]);
    // The dataset is strict: 5 results fewer is an error naming the counts.
    let partial: Vec<Value> = cands.as_array().unwrap()[5..].to_vec();
    let (st, h, p) = app
        .post(
            "/v1/score",
            &json!({"dataset": "nocaps", "results": partial, "metrics": ["bleu"]}),
        )
        .await;
    assert_eq!(st, 422, "{p}");
    assert_eq!(h["content-type"], "application/problem+json");
    assert_eq!(p["code"], "incomplete_results");
    assert!(p["detail"].as_str().unwrap().contains("5 of the"), "{p}");
    // A lenient dataset warns instead.
    let (st, _, _) = app.put("/v1/datasets/lenient", &refs).await;
    assert_eq!(st, 201);
    let (st, _, v) = app
        .post(
            "/v1/score",
            &json!({"dataset": "lenient", "results": partial, "metrics": ["bleu"]}),
        )
        .await;
    assert_eq!(st, 200, "{v}");
    assert!(
        v["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["code"] == "partial_results"),
        "{v}"
    );
    let (st, _, p) = app
        .post(
            "/v1/score",
            &json!({"dataset": "lenient", "results": partial, "metrics": ["bleu"], "require_complete": true}),
        )
        .await;
    assert_eq!((st, p["code"].as_str()), (422, Some("incomplete_results")));
    let (st, _, p) = app
        .post(
            "/v1/score",
            &json!({"dataset": "lenient", "results": cands, "metrics": ["bleu"], "split_by": "nope"}),
        )
        .await;
    assert_eq!(
        (st, p["code"].as_str()),
        (422, Some("invalid_format")),
        "{p}"
    );
}

/// `POST /v1/compare` equals `capscore compare` on the same inputs; different image sets are
/// `image_sets_differ`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_over_http_equals_the_cli() {
    let app = spawn_app().await;
    let (refs, cands) = common::nocaps_shaped();
    let a: Vec<Value> = cands
        .as_array()
        .unwrap()
        .iter()
        .map(|c| json!({"image_id": c["image_id"], "caption": format!("a photo of {}", c["caption"].as_str().unwrap())}))
        .collect();
    let (st, _, api) = app
        .post(
            "/v1/compare",
            &json!({"references": refs, "a": a, "b": cands, "metrics": ["bleu", "cider_d"],
                    "samples": 200, "trials": 200, "seed": 3}),
        )
        .await;
    assert_eq!(st, 200, "{api}");
    let dir = tempfile::tempdir().expect("tempdir");
    let (r, pa, pb) = (
        dir.path().join("r.json"),
        dir.path().join("a.json"),
        dir.path().join("b.json"),
    );
    std::fs::write(&r, refs.to_string()).unwrap();
    std::fs::write(&pa, serde_json::to_string(&a).unwrap()).unwrap();
    std::fs::write(&pb, cands.to_string()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_capscore"))
        .args([
            "compare",
            "--metrics",
            "bleu,cider_d",
            "--samples",
            "200",
            "--trials",
            "200",
            "--seed",
            "3",
            "--refs",
        ])
        .arg(&r)
        .arg("--cands")
        .arg(&pa)
        .arg("--cands")
        .arg(&pb)
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cli: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(api, cli);
    let (st, _, p) = app
        .post(
            "/v1/compare",
            &json!({"references": refs, "a": &a[1..], "b": cands, "metrics": ["bleu"]}),
        )
        .await;
    assert_eq!(
        (st, p["code"].as_str()),
        (422, Some("image_sets_differ")),
        "{p}"
    );
}

/// Several candidates per image over HTTP: `results` repeating ids against a dataset with
/// `multi_candidate`, and inline `items[].candidates`, both equal to the CLI's
/// `--multi-candidate`; the errors are coded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_candidate_over_http_equals_the_cli() {
    let app = spawn_app().await;
    let refs = read_json("coco/fakecap_val2017/refs.json");
    let cands = read_json("coco/fakecap_val2017/cands.json");
    let second = |c: &Value| format!("a photo of {}", c["caption"].as_str().unwrap());
    let mut multi = Vec::new();
    for c in cands.as_array().unwrap() {
        multi.push(c.clone());
        multi.push(json!({"image_id": c["image_id"], "caption": second(c)}));
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let (r, m) = (dir.path().join("r.json"), dir.path().join("m.json"));
    std::fs::write(&r, refs.to_string()).unwrap();
    std::fs::write(&m, Value::Array(multi.clone()).to_string()).unwrap();
    let cli = cli_score(
        &r,
        &m,
        &[
            "--metrics",
            "bleu,cider_d",
            "--multi-candidate",
            "--select-by",
            "CIDEr",
        ],
    );
    assert_eq!(cli["multi_candidate"]["candidates"], 2);
    let (st, _, _) = app.put("/v1/datasets/fc", &refs).await;
    assert!(st == 200 || st == 201, "{st}");
    let (st, _, api) = app
        .post(
            "/v1/score",
            &json!({"dataset": "fc", "results": multi, "metrics": ["bleu", "cider_d"],
                    "multi_candidate": {"select": "max", "by": "CIDEr"}}),
        )
        .await;
    assert_eq!(st, 200, "{api}");
    for key in ["aggregate", "per_image", "multi_candidate"] {
        assert_eq!(api[key], cli[key], "{key}");
    }
    // Inline items with `candidates` (select max by default: CIDEr without SPIDEr).
    let (_, items) = inline_items(&refs, &cands);
    let items: Vec<Value> = items
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let c = i["candidate"].as_str().unwrap();
            json!({"image_id": i["image_id"], "references": i["references"],
                   "candidates": [c, format!("a photo of {c}")]})
        })
        .collect();
    let (st, _, inline) = app
        .post(
            "/v1/score",
            &json!({"items": items, "metrics": ["bleu", "cider_d"]}),
        )
        .await;
    assert_eq!(st, 200, "{inline}");
    // Items in evaluation order, the CLI's in results order: the same mean, summed in another
    // order.
    let (a, b) = (
        inline["aggregate"]["CIDEr"].as_f64().unwrap(),
        cli["aggregate"]["CIDEr"].as_f64().unwrap(),
    );
    assert!((a - b).abs() <= 1e-12, "{a} {b}");
    assert_eq!(per_image_by_id(&inline), per_image_by_id(&cli));
    // Errors.
    let first = &items[0];
    for (body, code) in [
        (
            json!({"items": [{"image_id": 1, "candidate": "a", "candidates": ["b"], "references": ["c"]}]}),
            "invalid_format",
        ),
        (
            json!({"items": [{"image_id": 1, "candidates": [], "references": ["c"]}]}),
            "invalid_format",
        ),
        (
            json!({"items": [first, {"image_id": -5, "candidates": ["x"], "references": ["y z"]}]}),
            "invalid_format",
        ),
        (
            json!({"dataset": "fc", "results": [multi[0], multi[1]]}),
            "duplicate_image_id",
        ),
        (
            json!({"items": [first], "multi_candidate": {"select": "max", "by": "SPICE"}}),
            "invalid_format",
        ),
        (
            json!({"items": [first], "bootstrap": {"samples": 10}}),
            "invalid_format",
        ),
    ] {
        let res = app.post("/v1/score", &body).await;
        expect_problem(&app, res, 422, code).await;
    }
    app.stop().await;
}

/// Issue 25: "Try it out" on /docs shows real answers: the 200 examples of `POST /v1/score`
/// and `POST /v1/compare` in the served OpenAPI document are exactly what the server returns
/// for the documents' own request examples.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openapi_response_examples_are_what_the_server_answers() {
    let app = spawn_app().await;
    let (status, _, spec) = app.get("/openapi.json").await;
    assert_eq!(status, 200);
    for (path, schema) in [
        ("/v1/score", "ScoreRequest"),
        ("/v1/compare", "CompareRequest"),
    ] {
        let request = &spec["components"]["schemas"][schema]["example"];
        assert!(request.is_object(), "{schema} has no example");
        let shown = &spec["paths"][path]["post"]["responses"]["200"]["content"]["application/json"]
            ["example"];
        assert!(shown.is_object(), "{path}: no response example");
        let (status, _, got) = app.post(path, request).await;
        assert_eq!(status, 200, "{path}: {got}");
        assert_eq!(&got, shown, "{path}: the example differs from the answer");
    }
    app.stop().await;
}

/// The examples a content of the OpenAPI document shows: `example`, or each of `examples`.
fn content_examples(content: &Value) -> Vec<&Value> {
    let mut all: Vec<&Value> = content.get("example").into_iter().collect();
    if let Some(named) = content.get("examples").and_then(Value::as_object) {
        all.extend(named.values().map(|e| &e["value"]));
    }
    all
}

/// Issue 25: every request body and every response content of the committed
/// `openapi/openapi.json` carries an example (so "Try it out" sends a working request and every
/// answer shows what the server says); every problem example has its response's status and a
/// code of that status from the table.
#[test]
fn openapi_every_body_and_response_has_an_example() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("openapi/openapi.json");
    let spec: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("openapi.json")).expect("json");
    let mut missing = Vec::new();
    let mut checked = 0;
    for (route, item) in spec["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("path item") {
            let at = format!("{} {route}", method.to_uppercase());
            if let Some(body) = op.get("requestBody") {
                for (ct, c) in body["content"].as_object().expect("content") {
                    checked += 1;
                    if content_examples(c).is_empty() {
                        missing.push(format!("{at}: request body {ct}"));
                    }
                }
            }
            for (status, res) in op["responses"].as_object().expect("responses") {
                let Some(contents) = res.get("content").and_then(Value::as_object) else {
                    continue;
                };
                for (ct, c) in contents {
                    checked += 1;
                    let examples = content_examples(c);
                    if examples.is_empty() {
                        missing.push(format!("{at}: response {status} {ct}"));
                    }
                    if ct != "application/problem+json" {
                        continue;
                    }
                    for e in examples {
                        let code = e["code"].as_str().unwrap_or_default();
                        let known = capscore::input::ErrorCode::ALL
                            .iter()
                            .find(|c| c.as_str() == code)
                            .unwrap_or_else(|| panic!("{at} {status}: unknown code {code:?}"));
                        assert_eq!(known.status().to_string(), *status, "{at}: {e}");
                        assert_eq!(e["status"].to_string(), *status, "{at}: {e}");
                        assert_eq!(e["type"], format!("urn:capscore:problem:{code}"));
                        assert!(e["detail"].as_str().is_some_and(|d| !d.is_empty()));
                    }
                }
            }
        }
    }
    assert!(checked >= 50, "only {checked} contents walked");
    assert!(missing.is_empty(), "no example: {missing:#?}");
}

/// Issue 25: the dataset `PUT` example, sent to a fresh server, registers the dataset the
/// documented 201 example shows (every value but the registration time, which is the server's
/// clock); the `GET`s and the repeated `PUT` answer their examples too, and `/healthz` its.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openapi_dataset_put_example_registers_the_documented_dataset() {
    let app = spawn_app().await;
    let (status, _, spec) = app.get("/openapi.json").await;
    assert_eq!(status, 200);
    let item = &spec["paths"]["/v1/datasets/{name}"];
    let name = item["put"]["parameters"]
        .as_array()
        .expect("parameters")
        .iter()
        .find(|p| p["name"] == "name")
        .and_then(|p| p["example"].as_str())
        .expect("the name parameter's example");
    let request = &item["put"]["requestBody"]["content"]["application/json"]["example"];
    assert!(request.is_object(), "no PUT request example");
    let shown = |method: &str, route: &str, status: &str| -> Value {
        spec["paths"][route][method]["responses"][status]["content"]["application/json"]["example"]
            .clone()
    };
    // Equal but for `created`, which must be an RFC 3339 UTC time in both.
    let same = |got: &Value, example: &Value, what: &str| {
        let (mut got, mut example) = (got.clone(), example.clone());
        for v in [&mut got, &mut example] {
            let created = v["created"].take();
            let c = created.as_str().unwrap_or_default();
            assert!(
                c.len() == 20 && c.ends_with('Z') && c.as_bytes()[10] == b'T',
                "{what}: created {created}"
            );
        }
        assert_eq!(got, example, "{what}: the answer differs from the example");
    };
    let route = "/v1/datasets/{name}";
    let url = format!("/v1/datasets/{name}");
    let (status, _, got) = app.put(&url, request).await;
    assert_eq!(status, 201, "{got}");
    same(&got, &shown("put", route, "201"), "PUT 201");
    let (status, _, got) = app.get(&url).await;
    assert_eq!(status, 200, "{got}");
    same(&got, &shown("get", route, "200"), "GET");
    let (status, _, got) = app.get("/v1/datasets").await;
    assert_eq!(status, 200, "{got}");
    let listed = shown("get", "/v1/datasets", "200");
    same(&got["datasets"][0], &listed["datasets"][0], "GET list");
    assert_eq!(got["datasets"].as_array().map(Vec::len), Some(1));
    let (status, _, got) = app.put(&url, request).await;
    assert_eq!(status, 200, "{got}");
    same(&got, &shown("put", route, "200"), "PUT 200");
    let (status, _, got) = app.get("/healthz").await;
    assert_eq!((status, got), (200, shown("get", "/healthz", "200")));
    let (status, _, got) = app.get("/readyz").await;
    assert_eq!(status, 200);
    let ready = shown("get", "/readyz", "200");
    assert_eq!(got["metrics"], ready["metrics"], "readyz");
    let res = app
        .client
        .delete(app.url(&url))
        .send()
        .await
        .expect("delete");
    assert_eq!(res.status(), 204);
    app.stop().await;
}
