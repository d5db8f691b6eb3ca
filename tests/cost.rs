//! Issue 18: every score request's cost is bounded before work starts. The estimate against
//! `--max-request-cost` / `--max-request-memory` (422 `cost_exceeded`), the memory budget
//! shared by the requests in flight (503 `overloaded`), SPICE's per-caption token limit,
//! cooperative cancellation, and ids that floats cannot tell apart. Servers listen on
//! 127.0.0.1 only.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use capscore::engine::{self, Metric, Options, OwnedReferences};
use capscore::input::{Candidate, ErrorCode, ImageId, References};
use capscore::server::{self, auth::Keys, cost, state::Resources, ServeArgs};
use serde_json::{json, Value};

struct Server {
    base: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Server {
    async fn start(
        dir: &Path,
        hook: server::state::Hook,
        tweak: impl FnOnce(&mut ServeArgs),
    ) -> Server {
        let mut cfg = ServeArgs::with_data_dir(dir.to_path_buf());
        cfg.threads = 2;
        tweak(&mut cfg);
        let state = server::build_state_with_hook(&cfg, Keys::none(), hook, Resources::default())
            .expect("state");
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
            stop: Some(tx),
            task,
        }
    }

    async fn score(&self, body: &Value) -> (u16, Value) {
        let res = reqwest::Client::new()
            .post(format!("{}/v1/score", self.base))
            .json(body)
            .send()
            .await
            .expect("request");
        let status = res.status().as_u16();
        let v = res.json().await.unwrap_or(Value::Null);
        (status, v)
    }

    async fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        let _ = tokio::time::timeout(Duration::from_secs(10), self.task).await;
    }
}

fn no_hook() -> server::state::Hook {
    Arc::new(|_: &[u8]| {})
}

/// `n` images, each with `refs` references of `words` words.
fn request(n: usize, refs: usize, words: usize) -> Value {
    let cap = |i: usize| {
        (0..words)
            .map(|w| ["a", "dog", "runs", "on", "the", "green", "grass"][(i + w) % 7])
            .collect::<Vec<_>>()
            .join(" ")
    };
    let items: Vec<Value> = (0..n)
        .map(|i| {
            json!({"image_id": i, "candidate": cap(i),
                   "references": (0..refs).map(|j| cap(i + j + 1)).collect::<Vec<_>>()})
        })
        .collect();
    json!({"metrics": ["bleu", "rouge_l", "cider_d"], "items": items})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_over_the_cost_or_memory_limit_are_refused_up_front() {
    let dir = tempfile::tempdir().expect("tmp");
    let s = Server::start(dir.path(), no_hook(), |c| {
        c.max_request_cost = 0.05;
        c.max_request_memory = 4;
    })
    .await;
    let (st, v) = s.score(&request(2, 2, 8)).await;
    assert_eq!(st, 200, "{v}");
    // Estimated CPU over 0.05 s: ROUGE-L's 1,000 x 1,000 tables for 100 references.
    let (st, v) = s.score(&request(1, 100, 1000)).await;
    assert_eq!(
        (st, v["code"].as_str()),
        (422, Some("cost_exceeded")),
        "{v}"
    );
    assert!(
        v["detail"].as_str().unwrap().contains("--max-request-cost"),
        "{v}"
    );
    // Memory over 4 MiB: 6,000 short captions.
    let (st, v) = s.score(&request(2000, 2, 6)).await;
    assert_eq!(
        (st, v["code"].as_str()),
        (422, Some("cost_exceeded")),
        "{v}"
    );
    assert!(
        v["detail"]
            .as_str()
            .unwrap()
            .contains("--max-request-memory"),
        "{v}"
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_memory_budget_sheds_with_overloaded_and_is_returned() {
    let dir = tempfile::tempdir().expect("tmp");
    let (gate_tx, gate_rx) = std::sync::mpsc::channel::<()>();
    let gate = Arc::new(std::sync::Mutex::new(gate_rx));
    // The first request with a "hold" marker waits until the test lets it go.
    let hook: server::state::Hook = Arc::new(move |body: &[u8]| {
        if body.windows(4).any(|w| w == b"hold") {
            let _ = gate
                .lock()
                .expect("gate")
                .recv_timeout(Duration::from_secs(20));
        }
    });
    let s = Server::start(dir.path(), hook, |c| {
        c.max_request_memory = 3;
        c.memory_budget = 3;
    })
    .await;
    // Its parse (64 KiB + 2 bytes per byte of a 1.2 MB body) reserves the whole 3 MiB budget
    // while it is held.
    let mut held = request(1, 1, 3);
    held["items"][0]["candidate"] = json!(format!("hold {}", "x ".repeat(600_000)));
    let base = s.base.clone();
    let first = tokio::spawn(async move {
        reqwest::Client::new()
            .post(format!("{base}/v1/score"))
            .json(&held)
            .send()
            .await
            .map(|r| r.status().as_u16())
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut second = request(1, 1, 3);
    second["items"][0]["candidate"] = json!("y ".repeat(200_000));
    let (st, v) = s.score(&second).await;
    assert_eq!((st, v["code"].as_str()), (503, Some("overloaded")), "{v}");
    assert!(
        v["detail"].as_str().unwrap().contains("--memory-budget"),
        "{v}"
    );
    // A dataset registration draws on the same budget: refused while it is held.
    let refs: serde_json::Map<String, Value> = (0..200)
        .map(|i| {
            (
                i.to_string(),
                json!([format!("a dog number {i} runs on the green grass")]),
            )
        })
        .collect();
    let put = |refs: serde_json::Map<String, Value>| {
        let url = format!("{}/v1/datasets/budget", s.base);
        async move {
            let res = reqwest::Client::new()
                .put(url)
                .json(&Value::Object(refs))
                .send()
                .await
                .expect("put");
            let st = res.status().as_u16();
            (st, res.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    let (st, v) = put(refs.clone()).await;
    assert_eq!((st, v["code"].as_str()), (503, Some("overloaded")), "{v}");
    gate_tx.send(()).expect("release");
    let st = first.await.expect("join").expect("first");
    assert_eq!(
        st, 422,
        "the held request: its caption is over the token limit"
    );
    // The budget is back: the same request is admitted (and refused for its caption only),
    // and the dataset registers.
    let (st, v) = s.score(&second).await;
    assert_eq!(
        (st, v["code"].as_str()),
        (422, Some("limit_exceeded")),
        "{v}"
    );
    let (st, v) = put(refs).await;
    assert_eq!(st, 201, "{v}");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_that_floats_cannot_tell_apart_are_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let s = Server::start(dir.path(), no_hook(), |_| {}).await;
    // 2^64 and 2^64 + 1 parse to one float: refused, not "duplicates".
    let body: Value = serde_json::from_str(
        r#"{"metrics": ["bleu"], "items": [
            {"image_id": 18446744073709551616, "candidate": "a dog", "references": ["a dog"]},
            {"image_id": 18446744073709551617, "candidate": "a cat", "references": ["a cat"]}]}"#,
    )
    .expect("json");
    let (st, v) = s.score(&body).await;
    assert_eq!(
        (st, v["code"].as_str()),
        (422, Some("invalid_image_id")),
        "{v}"
    );
    assert!(v["detail"].as_str().unwrap().contains("as strings"), "{v}");
    // Up to 2^64 - 1 integers are exact: neighbours stay apart.
    let body: Value = serde_json::from_str(
        r#"{"metrics": ["bleu"], "items": [
            {"image_id": 18446744073709551614, "candidate": "a dog", "references": ["a dog"]},
            {"image_id": 18446744073709551615, "candidate": "a cat", "references": ["a cat"]}]}"#,
    )
    .expect("json");
    let (st, v) = s.score(&body).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["per_image"].as_array().map(Vec::len), Some(2));
    s.stop().await;
}

#[test]
fn a_cancelled_computation_stops_with_timeout() {
    let metrics = [Metric::Bleu, Metric::RougeL, Metric::CiderD];
    let cands = vec![Candidate {
        image_id: ImageId::from_value(&json!(1)).expect("id"),
        caption: "a dog on the grass".into(),
    }];
    let refs = || {
        References::from_pairs([(
            ImageId::from_value(&json!(1)).expect("id"),
            vec!["a dog runs on the grass".to_owned()],
        )])
    };
    let never = Options::new(&metrics);
    assert!(engine::score(cands.clone(), &OwnedReferences::new(refs()), &never).is_ok());
    let opts = Options {
        cancel: Some(&|| true),
        ..Options::new(&metrics)
    };
    let e = engine::score(cands, &OwnedReferences::new(refs()), &opts).expect_err("cancelled");
    assert_eq!(e.code, ErrorCode::Timeout);
}

/// Work that scores its images more than once is costed with every run: several candidates
/// per image (`items[].candidates`) and `/v1/compare` (two systems) count the candidates of
/// every run and the references once per run, so a request whose single run fits can be
/// refused when doubled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_candidates_and_comparisons_are_costed_with_every_run() {
    let dir = tempfile::tempdir().expect("tmp");
    // One image, a 1,000-word candidate, 10 references of 1,000 words: about 0.05 CPU-s
    // estimated for one run, about 0.1 for two.
    let s = Server::start(dir.path(), no_hook(), |c| c.max_request_cost = 0.08).await;
    let one = request(1, 10, 1000);
    let (st, v) = s.score(&one).await;
    assert_eq!(st, 200, "{v}");
    let item = &one["items"][0];
    let mut two = one.clone();
    two["items"][0] = json!({"image_id": 0, "references": item["references"],
                             "candidates": [item["candidate"], item["candidate"]]});
    let (st, v) = s.score(&two).await;
    assert_eq!(
        (st, v["code"].as_str()),
        (422, Some("cost_exceeded")),
        "{v}"
    );
    let compare = json!({"metrics": one["metrics"],
        "references": {"0": item["references"]},
        "a": [{"image_id": 0, "caption": item["candidate"]}],
        "b": [{"image_id": 0, "caption": item["candidate"]}]});
    let res = reqwest::Client::new()
        .post(format!("{}/v1/compare", s.base))
        .json(&compare)
        .send()
        .await
        .expect("request");
    let st = res.status().as_u16();
    let v: Value = res.json().await.unwrap_or(Value::Null);
    assert_eq!(
        (st, v["code"].as_str()),
        (422, Some("cost_exceeded")),
        "{v}"
    );
    s.stop().await;
}

/// A counting allocator for the parse-memory test: the heap held by the current thread and
/// its peak (thread-local, so tests running in parallel do not disturb each other).
mod probe {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    thread_local! {
        static HELD: Cell<i64> = const { Cell::new(0) };
        static PEAK: Cell<i64> = const { Cell::new(0) };
    }

    struct Counting;

    fn add(d: i64) {
        let _ = HELD.try_with(|h| {
            let v = h.get() + d;
            h.set(v);
            let _ = PEAK.try_with(|p| p.set(p.get().max(v)));
        });
    }

    // SAFETY: every call is forwarded to the system allocator unchanged.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, l: Layout) -> *mut u8 {
            add(l.size() as i64);
            System.alloc(l)
        }
        unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
            add(-(l.size() as i64));
            System.dealloc(p, l)
        }
        unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
            add(n as i64 - l.size() as i64);
            System.realloc(p, l, n)
        }
    }

    #[global_allocator]
    static A: Counting = Counting;

    /// The peak heap `f` adds on this thread above what was held when it started.
    pub fn peak_of<T>(f: impl FnOnce() -> T) -> (T, u64) {
        let base = HELD.with(Cell::get);
        PEAK.with(|p| p.set(base));
        let out = f();
        let peak = PEAK.with(Cell::get);
        (out, (peak - base).max(0) as u64)
    }
}

/// Issue 29: the memory reserved before a body is parsed bounds what parsing it takes,
/// for the shapes that blow up most (measured with a counting allocator), and is not
/// far above it for a real request.
#[test]
fn the_parse_reservation_bounds_the_parse() {
    let n = 20_000;
    let rep = |unit: &str| format!("[{}]", vec![unit; n].join(","));
    let members = format!(
        "{{{}}}",
        (0..n)
            .map(|i| format!("\"{i}\":0"))
            .collect::<Vec<_>>()
            .join(",")
    );
    let nested = format!("{}{}", "[".repeat(120), "]".repeat(120));
    let real = format!(
        "{{\"metrics\":[\"CIDEr\"],\"results\":[{}],\"references\":{{{}}}}}",
        (0..n)
            .map(|i| format!("{{\"image_id\":{i},\"caption\":\"a man riding a wave on top of a surfboard\"}}"))
            .collect::<Vec<_>>()
            .join(","),
        (0..n)
            .map(|i| format!("\"{i}\":[\"a surfer rides a wave\",\"a person on a surfboard in the ocean\",\"a man surfing\"]"))
            .collect::<Vec<_>>()
            .join(",")
    );
    let strings = rep("\"\\u0041\\\"xyz\"");
    let (mut ratios, mut over) = (Vec::new(), Vec::new());
    for (what, body) in [
        ("zeros", rep("0")),
        ("empty arrays", rep("[]")),
        ("empty objects", rep("{}")),
        ("one-member objects", rep("{\"a\":0}")),
        ("two-member objects", rep("{\"a\":0,\"b\":0}")),
        ("one-element arrays", rep("[0]")),
        ("two-element arrays", rep("[0,0]")),
        ("strings", strings),
        ("members", members),
        ("nested", nested),
        ("real request", real.clone()),
    ] {
        let (v, peak) =
            probe::peak_of(|| serde_json::from_slice::<serde_json::Value>(body.as_bytes()));
        assert!(v.is_ok(), "{what}");
        drop(v);
        let reserved = cost::parse_memory(body.as_bytes());
        ratios.push(format!(
            "{what}: body {} B, parse peak {peak} B, reserved {reserved} B",
            body.len()
        ));
        over.extend(
            (peak > reserved)
                .then(|| format!("{what}: parsing took {peak} bytes, {reserved} reserved")),
        );
    }
    assert!(over.is_empty(), "{over:?}");
    // A real request is not refused for a bound far above its parse.
    let (_, peak) = probe::peak_of(|| serde_json::from_slice::<serde_json::Value>(real.as_bytes()));
    let reserved = cost::parse_memory(real.as_bytes());
    assert!(reserved < 4 * peak, "{ratios:?}");
    eprintln!("{ratios:#?}");
}
