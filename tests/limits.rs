//! Issue 18: what bounds a shared server. Registered datasets (names that look like temporary
//! files, limits, abandoned registrations, replicas on one data folder) and connection limits.
//! Every server here listens on 127.0.0.1 only; every loop is bounded.

use std::path::Path;
use std::time::Duration;

use capscore::server::{self, state::Resources, ServeArgs};
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
        let keys = cfg.keys().expect("keys");
        let state = server::build_state_full(&cfg, keys, Resources::default()).expect("state");
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

    async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> (u16, Value) {
        let client = reqwest::Client::new();
        let mut rb = client.request(method, format!("{}{path}", self.base));
        if let Some(b) = body {
            rb = rb.json(b);
        }
        let res = rb.send().await.expect("request");
        let status = res.status().as_u16();
        let bytes = res.bytes().await.expect("body");
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
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
    assert!(s1["signature"]
        .as_str()
        .unwrap()
        .contains(d1["sha256"].as_str().unwrap()));
    // Replaced through A: B answers with the new content.
    let (st, d2) = a.put("/v1/datasets/shared", &v2).await;
    assert_eq!(st, 200, "{d2}");
    assert_ne!(d1["sha256"], d2["sha256"]);
    let (st, s2) = b.post("/v1/score", &score_against("shared")).await;
    assert_eq!(st, 200, "{s2}");
    assert!(
        s2["signature"]
            .as_str()
            .unwrap()
            .contains(d2["sha256"].as_str().unwrap()),
        "{s2}"
    );
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
    let (st, p) = s
        .put("/v1/datasets/big", &json!({"references": {"1": many}}))
        .await;
    assert_eq!(
        (st, p["code"].as_str()),
        (422, Some("limit_exceeded")),
        "{p}"
    );
    assert!(p["detail"].as_str().unwrap().contains("--max-references"));
    let (st, _) = s.get("/v1/datasets/big").await;
    assert_eq!(st, 404);
    let (st, p) = s
        .put(
            "/v1/datasets/coco.json.tmp-1",
            &json!({"references": {"1": ["a dog"]}}),
        )
        .await;
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
    let (st, p) = slow
        .put("/v1/datasets/late", &json!({"references": refs}))
        .await;
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

use std::io::{Read, Write};
use std::net::TcpStream;

/// A blocking client connection (the test thread is not one of the server's workers).
fn connect(addr: std::net::SocketAddr) -> TcpStream {
    TcpStream::connect(addr).unwrap()
}

/// Reads until the server closes the connection (or `within` passes: then `None`); the bytes
/// read.
fn read_until_closed(s: &mut TcpStream, within: Duration) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let end = std::time::Instant::now() + within;
    loop {
        let left = end.checked_duration_since(std::time::Instant::now())?;
        s.set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .unwrap();
        match s.read(&mut buf) {
            Ok(0) => return Some(out),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return None
            }
            Err(_) => return Some(out),
        }
    }
}

/// A connection that sends nothing, one that sends part of its headers, and a kept-alive one
/// that idles after a request are all closed after `--header-timeout`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_partial_and_idle_connections_are_closed() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), |c| c.header_timeout = 0.5).await;
    let mut silent = connect(s.addr);
    let mut partial = connect(s.addr);
    partial
        .write_all(b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Ty")
        .unwrap();
    let mut idle = connect(s.addr);
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut buf = [0u8; 1024];
    let n = idle.read(&mut buf).unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    let t = std::time::Instant::now();
    for c in [&mut silent, &mut partial, &mut idle] {
        assert!(
            read_until_closed(c, Duration::from_secs(5)).is_some(),
            "still open after 5 s"
        );
    }
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    s.stop().await;
}

/// A declared `Content-Length` over `--max-body-bytes` is answered 413 at once, without
/// waiting for the body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declared_oversize_body_is_413_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), |c| c.max_body_bytes = 1000).await;
    let mut c = connect(s.addr);
    c.write_all(b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 10000000\r\n\r\n{").unwrap();
    let t = std::time::Instant::now();
    let mut buf = vec![0u8; 4096];
    c.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let n = c.read(&mut buf).expect("answered within 2 s");
    let text = String::from_utf8_lossy(&buf[..n]);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert!(text.contains("payload_too_large"), "{text}");
    assert!(t.elapsed() < Duration::from_secs(1));
    s.stop().await;
}

/// Slow uploads neither hold request permits (others are served meanwhile) nor last: they get
/// 408 `body_timeout`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_uploads_hold_no_permits_and_time_out() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), |c| {
        c.max_requests = 2;
        c.body_timeout = 1.5;
    })
    .await;
    let mut slow = Vec::new();
    for _ in 0..6 {
        let mut c = connect(s.addr);
        c.write_all(b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"items\":").unwrap();
        slow.push(c);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let body = json!({"metrics": ["bleu"], "items": [{"image_id": 1, "candidate": "a dog", "references": ["a dog runs"]}]});
    for _ in 0..3 {
        let t = std::time::Instant::now();
        let (st, p) = s.post("/v1/score", &body).await;
        assert_eq!(st, 200, "{p}");
        assert!(
            t.elapsed() < Duration::from_millis(500),
            "{:?}",
            t.elapsed()
        );
    }
    for c in &mut slow {
        let got = read_until_closed(c, Duration::from_secs(5)).expect("closed");
        let text = String::from_utf8_lossy(&got);
        assert!(
            text.starts_with("HTTP/1.1 408") && text.contains("body_timeout"),
            "{text}"
        );
    }
    s.stop().await;
}

/// With every keep-alive slot held by idle connections, up to 64 more are served one request
/// each with a 1 s header timeout, and connections beyond those are closed at once: a probe
/// gets through as soon as the idle extras are gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_cap_keeps_room_for_probes() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), |c| {
        c.max_connections = 20;
        c.header_timeout = 30.0;
    })
    .await;
    let mut idle = Vec::new();
    for _ in 0..(20 + 64) {
        idle.push(connect(s.addr));
        // Let the server accept it before the next.
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut refused = connect(s.addr);
    assert!(
        read_until_closed(&mut refused, Duration::from_secs(1)).is_some(),
        "a connection beyond the cap and the headroom stays open"
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let t = std::time::Instant::now();
    let (st, _) = s.get("/healthz").await;
    assert_eq!(st, 200);
    assert!(
        t.elapsed() < Duration::from_millis(100),
        "{:?}",
        t.elapsed()
    );
    // The keep-alive slots are still held (30 s header timeout): the first idle connection is
    // still open and can still send a request.
    idle[0]
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let got = read_until_closed(&mut idle[0], Duration::from_secs(2)).expect("answered");
    assert!(String::from_utf8_lossy(&got).starts_with("HTTP/1.1 200"));
    drop(idle);
    s.stop().await;
}

/// Every caption's tokens are bounded (`--max-caption-tokens`), inline and in dataset PUTs: a
/// long `a & b & c ...` caption (SPICE's worst shape) is refused before any work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn captions_over_the_token_limit_are_refused_inline_and_in_datasets() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), |c| c.max_caption_tokens = 40).await;
    let long: String = (0..30).map(|i| format!("w{i} & ")).collect();
    let ok: String = (0..20).map(|i| format!("w{i} ")).collect();
    let (st, p) = s
        .post("/v1/score", &json!({"metrics": ["bleu"], "items": [{"image_id": 1, "candidate": ok, "references": [long]}]}))
        .await;
    assert_eq!(
        (st, p["code"].as_str()),
        (422, Some("limit_exceeded")),
        "{p}"
    );
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains("--max-caption-tokens"),
        "{p}"
    );
    let (st, _) = s
        .post("/v1/score", &json!({"metrics": ["bleu"], "items": [{"image_id": 1, "candidate": ok, "references": [ok]}]}))
        .await;
    assert_eq!(st, 200);
    let (st, p) = s
        .put("/v1/datasets/long", &json!({"references": {"1": [long]}}))
        .await;
    assert_eq!(
        (st, p["code"].as_str()),
        (422, Some("limit_exceeded")),
        "{p}"
    );
    s.stop().await;
}

/// Issue 18, smaller points: a key given both roles is refused (not silently admin);
/// `capscore_panics_total` is exported before the first panic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_with_both_roles_are_refused_and_zero_counters_are_exported() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = ServeArgs::with_data_dir(dir.path().to_path_buf());
    cfg.api_keys = Some("score:0123456789abcdef,admin:0123456789abcdef".into());
    let err = cfg.keys().expect_err("both roles");
    assert!(err.to_string().contains("both roles"), "{err}");
    cfg.api_keys = Some("score:0123456789abcdef,admin:0123456789ABCDEF".into());
    assert!(cfg.keys().is_ok());
    let s = Server::start(dir.path(), |_| {}).await;
    let text = reqwest::get(format!("{}/metrics", s.base))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(text.contains("capscore_panics_total"), "{text}");
    s.stop().await;
}

/// Issue 29: with keys configured, a request without a valid key is answered 401 before its
/// body is read: a client that declares 60 MB and sends none of it gets its answer at once
/// (without the fix it waited for the body until `--body-timeout`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthenticated_bodies_are_refused_before_they_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let key = "0123456789abcdef0123456789abcdef";
    let s = Server::start(dir.path(), |c| {
        c.api_keys = Some(format!("score:{key}"));
        c.body_timeout = 20.0;
    })
    .await;
    for auth in ["", "Authorization: Bearer wrong-key-wrong-key-wrong\r\n"] {
        let mut c = connect(s.addr);
        c.write_all(
            format!("POST /v1/score HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: application/json\r\nContent-Length: 60000000\r\n\r\n{{")
                .as_bytes(),
        )
        .unwrap();
        let t = std::time::Instant::now();
        let mut buf = vec![0u8; 4096];
        c.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
        let n = c.read(&mut buf).expect("answered within 3 s");
        let text = String::from_utf8_lossy(&buf[..n]);
        assert!(text.starts_with("HTTP/1.1 401"), "{text}");
        assert!(text.contains("application/problem+json"), "{text}");
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    }
    // A valid key is read and scored as before.
    let res = reqwest::Client::new()
        .post(format!("{}/v1/score", s.base))
        .bearer_auth(key)
        .json(&json!({"metrics": ["bleu"], "items": [{"image_id": 1, "candidate": "a dog", "references": ["a dog runs"]}]}))
        .send()
        .await
        .expect("request");
    assert_eq!(res.status().as_u16(), 200);
    s.stop().await;
}

/// Issue 29: a client that sends requests and never reads the answers has its connection
/// closed once a write has waited `--write-timeout` (here 1 s), not kept open with its
/// buffers. (Without it, this connection stayed open until the idle timeout, 60 s here.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_is_closed_after_the_write_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), |c| {
        c.write_timeout = 1.0;
        c.header_timeout = 60.0;
    })
    .await;
    let mut c = connect(s.addr);
    // 300 pipelined requests for the API description (tens of MB of answers: more than the
    // socket buffers hold), none read.
    let one = b"GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n";
    let mut all = Vec::new();
    for _ in 0..300 {
        all.extend_from_slice(one);
    }
    c.write_all(&all).unwrap();
    std::thread::sleep(Duration::from_millis(3000));
    let t = std::time::Instant::now();
    let got = read_until_closed(&mut c, Duration::from_secs(8));
    assert!(got.is_some(), "still open 8 s after the write timeout");
    let n = got.unwrap_or_default().len();
    assert!(n > 0 && n < 300 * 100_000, "{n} bytes");
    assert!(t.elapsed() < Duration::from_secs(8));
    s.stop().await;
}

/// Issue 29: a request target over 8 KiB is 414 `uri_too_long` and too many or too large
/// header fields are 431 `headers_too_large`, both as problem documents (not the HTTP parser's
/// bare answers), and the connection closes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uri_and_header_limits_are_problem_documents() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), |_| {}).await;
    let long_uri = format!(
        "GET /v1/datasets/{} HTTP/1.1\r\nHost: x\r\n\r\n",
        "a".repeat(20_000)
    );
    let many = format!(
        "GET /healthz HTTP/1.1\r\nHost: x\r\n{}\r\n",
        (0..150)
            .map(|i| format!("x-h{i}: v\r\n"))
            .collect::<String>()
    );
    let big = format!(
        "GET /healthz HTTP/1.1\r\nHost: x\r\nx-big: {}\r\n\r\n",
        "v".repeat(40_000)
    );
    for (raw, status, code) in [
        (long_uri, "414", "uri_too_long"),
        (many, "431", "headers_too_large"),
        (big, "431", "headers_too_large"),
    ] {
        let mut c = connect(s.addr);
        c.write_all(raw.as_bytes()).unwrap();
        let got = read_until_closed(&mut c, Duration::from_secs(5)).expect("closed");
        let text = String::from_utf8_lossy(&got);
        assert!(text.starts_with(&format!("HTTP/1.1 {status}")), "{text}");
        assert!(text.contains("application/problem+json"), "{text}");
        assert!(text.contains(&format!("\"code\":\"{code}\"")), "{text}");
    }
    // Under the limits: served.
    let (status, _) = s.get(&format!("/v1/datasets/{}", "a".repeat(60))).await;
    assert_eq!(status, 404);
    s.stop().await;
}

/// Issue 29: registered datasets hold their resident size against `--memory-budget`; work
/// that the budget cannot take next to what the datasets hold (here a third registration) is
/// 507 `memory_budget_full` with the figures and registers nothing, and deleting a dataset
/// returns its share.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn datasets_hold_their_memory_against_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), |c| c.memory_budget = 31).await;
    let refs = |tag: &str| {
        let m: serde_json::Map<String, Value> = (0..2000)
            .map(|i| {
                let caps: Vec<String> = (0..5)
                    .map(|j| format!("{tag} a man {i} rides a wave number {j} on a board"))
                    .collect();
                (i.to_string(), json!(caps))
            })
            .collect();
        json!({ "references": m })
    };
    let (status, a) = s.put("/v1/datasets/a", &refs("first")).await;
    assert_eq!(status, 201, "{a}");
    let held = a["resident_bytes"].as_u64().unwrap();
    // What its allocations take (about 2 KB per image), not an estimate from counts (12 KB).
    // A registration also reserves its build (about 6 times that) while it runs: with 31 MiB,
    // two datasets and a third's build do not fit, one dataset and a build do.
    assert!(held > 2 << 20 && held < 6 << 20, "{a}");
    assert_eq!(a["resident_bytes_per_image"].as_u64().unwrap(), held / 2000);
    // Unchanged content holds nothing more; a new version of the same size takes over the
    // old one's share.
    assert_eq!(s.put("/v1/datasets/a", &refs("first")).await.0, 200);
    assert_eq!(s.put("/v1/datasets/a", &refs("other")).await.0, 200);
    assert_eq!(s.put("/v1/datasets/b", &refs("second")).await.0, 201);
    let (status, c) = s.put("/v1/datasets/c", &refs("third")).await;
    assert_eq!(status, 507, "{c}");
    assert_eq!(c["code"], "memory_budget_full");
    assert!(
        c["detail"]
            .as_str()
            .unwrap()
            .contains("registered datasets hold"),
        "{c}"
    );
    assert_eq!(s.get("/v1/datasets/c").await.0, 404);
    assert_eq!(s.delete("/v1/datasets/a").await.0, 204);
    assert_eq!(s.put("/v1/datasets/c", &refs("third")).await.0, 201);
    s.stop().await;
}
