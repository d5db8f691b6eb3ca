//! Issue 18: a bounded, seeded mutation fuzz over `POST /v1/score` (request JSON and captions,
//! every metric including METEOR and SPICE) against a server on 127.0.0.1: no 5xx, no panic,
//! no hang. Runs a fixed number of requests (4,000 by default, about 10 s in release); `FUZZ_SEED` and
//! `FUZZ_CASES` replay or widen it. Fails (never skips) when METEOR's or SPICE's data is
//! missing.

use std::sync::Arc;
use std::time::Duration;

use capscore::server::{self, auth::Keys, state::Resources, ServeArgs};
use serde_json::{json, Value};

/// xorshift64*: a small seeded generator (the cases are reproducible from the seed).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}

const WORDS: &[&str] = &[
    "a", "dog", "cat", "man", "riding", "red", "on", "the", "of", "and", "&", ",", ".", "'s",
    "n't", "two", "big", "sitting", "x-ray", "gonna", "cannot", "(", ")", "--", "\"", "...", "é",
    "日本", "\u{200b}", "\t", "\n", "\u{0}", "🙂", "1.5", "-", "%", "$", "@", "ﬁ",
];

fn caption(r: &mut Rng) -> String {
    let n = match r.below(10) {
        0 => 0,
        1 => 200 + r.below(300),
        _ => 1 + r.below(20),
    };
    let sep = if r.below(8) == 0 { "" } else { " " };
    (0..n).map(|_| *r.pick(WORDS)).collect::<Vec<_>>().join(sep)
}

fn metrics(r: &mut Rng) -> Value {
    let all = [
        "bleu",
        "meteor",
        "rouge_l",
        "cider_d",
        "cider_original",
        "spice",
    ];
    let n = r.below(4);
    json!((0..n).map(|_| *r.pick(&all)).collect::<Vec<_>>())
}

fn base(r: &mut Rng) -> Value {
    let n = 1 + r.below(4);
    let items: Vec<Value> = (0..n)
        .map(|i| {
            let refs: Vec<String> = (0..1 + r.below(4)).map(|_| caption(r)).collect();
            json!({"image_id": if r.below(3) == 0 { json!(format!("img{i}")) } else { json!(i) },
                   "candidate": caption(r), "references": refs})
        })
        .collect();
    let mut v = json!({"metrics": metrics(r), "items": items});
    match r.below(6) {
        0 => v["bootstrap"] = json!({"samples": r.below(50), "seed": r.below(5)}),
        1 => v["explain"] = json!(true),
        2 => v["cider_df"] = json!("batch"),
        _ => {}
    }
    v
}

fn random_value(r: &mut Rng, depth: usize) -> Value {
    match r.below(if depth > 3 { 8 } else { 10 }) {
        0 => Value::Null,
        1 => json!(r.below(2) == 0),
        2 => json!(r.next() as i64),
        3 => json!(*r.pick(&[0.5, -0.0, 1e300, -1e-300, 9007199254740993.0])),
        4 => serde_json::from_str("18446744073709551616").unwrap_or(Value::Null),
        5 | 6 => json!(caption(r)),
        7 => json!(*r.pick(&["bleu", "spice", "cider", "", "BLEU", "dataset", "batch"])),
        8 => Value::Array(
            (0..r.below(4))
                .map(|_| random_value(r, depth + 1))
                .collect(),
        ),
        _ => {
            let keys = [
                "image_id",
                "candidate",
                "references",
                "metrics",
                "items",
                "results",
                "dataset",
                "cider_df",
                "bootstrap",
                "explain",
                "caption",
                "samples",
                "x",
            ];
            let mut m = serde_json::Map::new();
            for _ in 0..r.below(4) {
                m.insert((*r.pick(&keys)).to_owned(), random_value(r, depth + 1));
            }
            Value::Object(m)
        }
    }
}

/// Replaces one node of `v` (walked at random) with a random value, or drops or adds a key.
fn mutate(r: &mut Rng, v: &mut Value) {
    let depth = r.below(5);
    mutate_at(r, v, depth);
}

fn mutate_at(r: &mut Rng, v: &mut Value, depth: usize) {
    if depth > 0 {
        match v {
            Value::Array(a) if !a.is_empty() => {
                let i = r.below(a.len());
                return mutate_at(r, &mut a[i], depth - 1);
            }
            Value::Object(m) if !m.is_empty() => {
                let k = m.keys().nth(r.below(m.len())).cloned().unwrap_or_default();
                if let Some(x) = m.get_mut(&k) {
                    return mutate_at(r, x, depth - 1);
                }
            }
            _ => {}
        }
    }
    match (r.below(4), &mut *v) {
        (0, Value::Object(m)) if !m.is_empty() => {
            let k = m.keys().nth(r.below(m.len())).cloned().unwrap_or_default();
            m.remove(&k);
        }
        (1, Value::Array(a)) => a.push(random_value(r, 0)),
        _ => *v = random_value(r, 0),
    }
}

/// Byte-level damage to serialized JSON: truncation, a flipped byte, an inserted byte.
fn damage(r: &mut Rng, bytes: &mut Vec<u8>) {
    if bytes.is_empty() {
        return;
    }
    let i = r.below(bytes.len());
    match r.below(4) {
        0 => bytes.truncate(i),
        1 => bytes[i] ^= 1 << r.below(8),
        2 => bytes.insert(i, *r.pick(b"{}[]\",:\\0e-\x00\xff")),
        _ => bytes
            .splice(i..i, b"\\ud800".iter().copied())
            .for_each(drop),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutated_score_requests_never_get_a_5xx() {
    let seed: u64 = std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x005e_ed18);
    let cases: usize = std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4000);
    let dir = tempfile::tempdir().expect("tmp");
    let mut cfg = ServeArgs::with_data_dir(dir.path().to_path_buf());
    cfg.threads = 2;
    let cache = capscore::resources::default_cache_dir();
    let meteor = Arc::new(
        capscore::resources::load::meteor(&cache).unwrap_or_else(|e| {
            panic!(
                "METEOR data missing in {} ({e}): run `capscore fetch`",
                cache.display()
            )
        }),
    );
    let spice = capscore::resources::load::spice(
        &cache,
        capscore::metrics::spice::SynonymSource::Meteor(meteor.clone()),
    )
    .unwrap_or_else(|e| panic!("SPICE data missing in {} ({e})", cache.display()));
    let resources = Resources::with_meteor(Some(meteor)).with_spice(Some(Arc::new(spice)));
    let state = server::build_state_full(&cfg, Keys::none(), resources).expect("state");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/v1/score", listener.local_addr().expect("addr"));
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(server::serve(listener, state, async move {
        let _ = rx.await;
    }));
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");
    let mut r = Rng(seed | 1);
    let mut statuses = std::collections::BTreeMap::<u16, usize>::new();
    for case in 0..cases {
        let mut v = base(&mut r);
        for _ in 0..r.below(3) {
            mutate(&mut r, &mut v);
        }
        let mut bytes = serde_json::to_vec(&v).expect("serialize");
        if r.below(5) == 0 {
            damage(&mut r, &mut bytes);
        }
        let res = client
            .post(&url)
            .header("content-type", "application/json")
            .body(bytes.clone())
            .send()
            .await
            .unwrap_or_else(|e| panic!("case {case} (seed {seed}): no answer: {e}"));
        let status = res.status().as_u16();
        let ctype = res
            .headers()
            .get("content-type")
            .and_then(|h| h.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let body = res.bytes().await.expect("body");
        *statuses.entry(status).or_default() += 1;
        assert!(
            status < 500,
            "case {case} (seed {seed}): {status} {}\nrequest: {}",
            String::from_utf8_lossy(&body),
            String::from_utf8_lossy(&bytes)
        );
        if status >= 400 {
            assert_eq!(ctype, "application/problem+json", "case {case}");
            let p: Value = serde_json::from_slice(&body).expect("problem json");
            assert!(p["code"].is_string(), "case {case}: {p}");
        }
    }
    eprintln!("fuzz: {cases} cases, statuses {statuses:?}");
    assert!(
        statuses.get(&200).copied().unwrap_or(0) > cases / 10,
        "{statuses:?}"
    );
    let _ = tx.send(());
    let _ = tokio::time::timeout(Duration::from_secs(10), task).await;
}
