//! Leaderboard features from the CLI: bootstrap intervals and CIDEr document frequencies from
//! another references file (`--df-from`).

mod common;

use std::process::Command;

use common::existing;
use serde_json::Value;

fn score(args: &[&str]) -> (bool, Vec<u8>, String) {
    let refs = existing("coco/fakecap_val2017/refs.json");
    let cands = existing("coco/fakecap_val2017/cands.json");
    let out = Command::new(env!("CARGO_BIN_EXE_capscore"))
        .arg("score")
        .arg("--refs")
        .arg(&refs)
        .arg("--cands")
        .arg(&cands)
        .args(args)
        .output()
        .expect("run capscore");
    (
        out.status.success(),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).expect("json")
}

#[test]
fn bootstrap_is_deterministic_whatever_the_thread_count_and_brackets_the_scores() {
    let (ok1, one, e1) = score(&[
        "--bootstrap",
        "500",
        "--bootstrap-seed",
        "7",
        "--threads",
        "1",
    ]);
    let (ok2, two, e2) = score(&[
        "--bootstrap",
        "500",
        "--bootstrap-seed",
        "7",
        "--threads",
        "2",
    ]);
    assert!(ok1 && ok2, "{e1}{e2}");
    assert_eq!(
        one, two,
        "same seed, different thread counts: different bytes"
    );
    let v = json(&one);
    let b = &v["bootstrap"];
    assert_eq!(b["samples"], 500);
    assert_eq!(b["method"], "percentile");
    let keys: Vec<&String> = v["aggregate"]
        .as_object()
        .expect("aggregate")
        .keys()
        .collect();
    assert_eq!(keys.len(), 7);
    for k in keys {
        let (lo, hi, x) = (
            b["low"][k].as_f64().expect("low"),
            b["high"][k].as_f64().expect("high"),
            v["aggregate"][k].as_f64().expect("score"),
        );
        assert!(lo < x && x < hi, "{k}: {lo} {x} {hi}");
        assert!(
            hi - lo < 0.5 * x.max(0.05),
            "{k}: interval too wide {lo}..{hi}"
        );
    }
    // Another seed moves the bounds a little; the scores stay the same bytes.
    let (_, other, _) = score(&["--bootstrap", "500", "--bootstrap-seed", "8"]);
    let o = json(&other);
    assert_ne!(o["bootstrap"]["low"], b["low"]);
    assert_eq!(o["aggregate"], v["aggregate"]);
    let (_, plain, _) = score(&[]);
    let p = json(&plain);
    assert_eq!(p["aggregate"], v["aggregate"]);
    assert!(p.get("bootstrap").is_none());
}

#[test]
fn a_narrower_level_gives_a_narrower_interval() {
    let (_, a, _) = score(&[
        "--metrics",
        "cider_d",
        "--bootstrap",
        "400",
        "--bootstrap-level",
        "0.5",
    ]);
    let (_, b, _) = score(&[
        "--metrics",
        "cider_d",
        "--bootstrap",
        "400",
        "--bootstrap-level",
        "0.99",
    ]);
    let (a, b) = (json(&a), json(&b));
    let w = |v: &Value| {
        v["bootstrap"]["high"]["CIDEr"].as_f64().unwrap()
            - v["bootstrap"]["low"]["CIDEr"].as_f64().unwrap()
    };
    assert!(w(&a) < w(&b), "{} {}", w(&a), w(&b));
}

#[test]
fn bad_bootstrap_options_are_clear_errors() {
    for args in [
        &["--bootstrap", "0"][..],
        &["--bootstrap", "10001"][..],
        &["--bootstrap", "10", "--bootstrap-level", "1"][..],
        &["--bootstrap-seed", "3"][..],
    ] {
        let (ok, _, err) = score(args);
        assert!(!ok, "{args:?} accepted");
        assert!(err.contains("bootstrap"), "{args:?}: {err}");
    }
}

#[test]
fn df_from_the_scored_references_changes_nothing_but_the_signature() {
    let refs = existing("coco/fakecap_val2017/refs.json");
    let refs = refs.to_str().expect("utf-8 path");
    let (ok, with, err) = score(&["--metrics", "bleu,cider_d", "--df-from", refs]);
    assert!(ok, "{err}");
    let (_, plain, _) = score(&["--metrics", "bleu,cider_d"]);
    let (w, p) = (json(&with), json(&plain));
    assert_eq!(w["aggregate"], p["aggregate"]);
    assert_eq!(w["per_image"], p["per_image"]);
    let sig = w["signature"].as_str().expect("signature");
    assert!(sig.contains("df=dataset:refs.json.gz@sha256:"), "{sig}");
    let (ok, _, err) = score(&["--df-from", "/nonexistent/refs.json"]);
    assert!(!ok && err.contains("--df-from"), "{err}");
}
