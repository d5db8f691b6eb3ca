//! Issue 18: what bounds a shared server. Registered datasets (names that look like temporary
//! files, limits, abandoned registrations, replicas on one data folder) and connection limits.
//! Every server here listens on 127.0.0.1 only; every loop is bounded.

use std::path::Path;
use std::time::Duration;

use capscore::server::{self, auth::Keys, state::Resources, ServeArgs};
use serde_json::{json, Value};

struct Server {
    base: String,
    addr: std::net::SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Server {
    async fn start(dir: &Path, tweak: impl FnOnce(&mut ServeArgs)) -> Server {
        let mut cfg = ServeArgs::with_data_dir(dir.to_path_buf());
        cfg.threads = 2;
        tweak(&mut cfg);
        let state =
            server::build_state_full(&cfg, Keys::none(), Resources::default()).expect("state");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(server::serve(listener, state, async move {
            let _ = rx.await;
        }));
        Server {
            base: format!("http://{addr}"),
            addr,
            stop: Some(tx),
            task,
        }
    }

    async fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        let _ = tokio::time::timeout(Duration::from_secs(10), self.task).await;
    }

    async fn send(&self, method: reqwest::Method, path: &str, body: Option<&Value>) -> (u16, Value) {
        let client = reqwest::Client::new();
        let mut rb = client.request(method, format!("{}{path}", self.base));
        if let Some(b) = body {
            rb = rb.json(b);
        }
        let res = rb.send().await.expect("request");
        let status = res.status().as_u16();
        let bytes = res.bytes().await.expect("body");
        (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    }

    async fn put(&self, path: &str, body: &Value) -> (u16, Value) {
        self.send(reqwest::Method::PUT, path, Some(body)).await
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        self.send(reqwest::Method::GET, path, None).await
    }

    async fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        self.send(reqwest::Method::POST, path, Some(body)).await
    }

    async fn delete(&self, path: &str) -> (u16, Value) {
        self.send(reqwest::Method::DELETE, path, None).await
    }
}

fn score_against(dataset: &str) -> Value {
    json!({"dataset": dataset, "metrics": ["bleu", "cider_d"], "cider_df": "dataset",
           "items": [{"image_id": 1, "candidate": "a dog runs on the grass"}]})
}

/// Two servers on one data folder (replicas on a shared volume): a dataset registered,
/// replaced or deleted through one is seen by the other on its next request naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_on_one_data_folder_see_replacements_and_deletions() {
    let dir = tempfile::tempdir().unwrap();
    let a = Server::start(dir.path(), |_| {}).await;
    let b = Server::start(dir.path(), |_| {}).await;
    let v1 = json!({"references": {"1": ["a dog runs on the grass", "a brown dog"], "2": ["a cat sleeps"]}});
    let v2 = json!({"references": {"1": ["a cat on a sofa", "a grey cat"], "2": ["a dog barks"], "3": ["a bird"]}});
    let (st, d1) = a.put("/v1/datasets/shared", &v1).await;
    assert_eq!(st, 201, "{d1}");
    let (st, got) = b.get("/v1/datasets/shared").await;
    assert_eq!((st, &got["sha256"]), (200, &d1["sha256"]));
    let (st, s1) = b.post("/v1/score", &score_against("shared")).await;
    assert_eq!(st, 200, "{s1}");
    assert!(s1["signature"].as_str().unwrap().contains(d1["sha256"].as_str().unwrap()));
    // Replaced through A: B answers with the new content.
    let (st, d2) = a.put("/v1/datasets/shared", &v2).await;
    assert_eq!(st, 200, "{d2}");
    assert_ne!(d1["sha256"], d2["sha256"]);
    let (st, s2) = b.post("/v1/score", &score_against("shared")).await;
    assert_eq!(st, 200, "{s2}");
    assert!(s2["signature"].as_str().unwrap().contains(d2["sha256"].as_str().unwrap()), "{s2}");
    let (_, got) = b.get("/v1/datasets/shared").await;
    assert_eq!(got["images"], 3);
    // Deleted through B: A no longer has it.
    let (st, _) = b.delete("/v1/datasets/shared").await;
    assert_eq!(st, 204);
    let (st, p) = a.get("/v1/datasets/shared").await;
    assert_eq!((st, p["code"].as_str()), (404, Some("unknown_dataset")));
    let (st, p) = a.post("/v1/score", &score_against("shared")).await;
    assert_eq!((st, p["code"].as_str()), (404, Some("unknown_dataset")));
    a.stop().await;
    b.stop().await;
}

/// A dataset PUT obeys the limits of inline references, and a name that looks like a
/// temporary file is a dataset like any other (kept across a restart).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dataset_puts_obey_reference_limits_and_any_valid_name_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), |c| c.max_references = 3).await;
    let many: Vec<String> = (0..4).map(|i| format!("reference {i}")).collect();
    let (st, p) = s.put("/v1/datasets/big", &json!({"references": {"1": many}})).await;
    assert_eq!((st, p["code"].as_str()), (422, Some("limit_exceeded")), "{p}");
    assert!(p["detail"].as_str().unwrap().contains("--max-references"));
    let (st, _) = s.get("/v1/datasets/big").await;
    assert_eq!(st, 404);
    let (st, p) = s.put("/v1/datasets/coco.json.tmp-1", &json!({"references": {"1": ["a dog"]}})).await;
    assert_eq!(st, 201, "{p}");
    s.stop().await;
    let s = Server::start(dir.path(), |_| {}).await;
    let (st, p) = s.get("/v1/datasets/coco.json.tmp-1").await;
    assert_eq!(st, 200, "{p}");
    s.stop().await;
}

/// A registration that outlives its timeout answers 504 and leaves nothing registered, in
/// memory or on disk, even after its work has finished in the background.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dataset_put_that_times_out_registers_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let slow = Server::start(dir.path(), |c| c.request_timeout = 0.001).await;
    let refs: serde_json::Map<String, Value> = (0..4000)
        .map(|i| {
            let caps: Vec<String> = (0..5)
                .map(|j| format!("A person number {i} rides horse {j} on a sunny beach."))
                .collect();
            (i.to_string(), json!(caps))
        })
        .collect();
    let (st, p) = slow.put("/v1/datasets/late", &json!({"references": refs})).await;
    assert_eq!((st, p["code"].as_str()), (504, Some("timeout")), "{p}");
    // Let the background work run to its end (bounded), then look from a normal server.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let check = Server::start(dir.path(), |_| {}).await;
    let (st, _) = check.get("/v1/datasets/late").await;
    assert_eq!(st, 404);
    let (_, list) = slow.get("/v1/datasets").await;
    assert_eq!(list["datasets"], json!([]));
    let files: Vec<_> = std::fs::read_dir(dir.path().join("datasets"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(files.is_empty(), "{files:?}");
    slow.stop().await;
    check.stop().await;
}
