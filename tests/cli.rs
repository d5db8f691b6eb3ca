//! The `capscore score` / `capscore tokenize` contract: output shape, ids echoed as given,
//! candidate order, and exit code 2 with a one-line message (no output file) on bad input.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::existing;
use serde_json::{json, Value};

fn capscore() -> Command {
    Command::new(env!("CARGO_BIN_EXE_capscore"))
}

fn write(dir: &Path, name: &str, v: &Value) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_vec(v).unwrap()).unwrap();
    p
}

fn score(refs: &Path, cands: &Path, extra: &[&str]) -> Output {
    capscore()
        .arg("score")
        .arg("--refs")
        .arg(refs)
        .arg("--cands")
        .arg(cands)
        .args(extra)
        .output()
        .unwrap()
}

fn refs_map() -> Value {
    json!({
        "7": ["a man riding a wave on top of a surfboard", "a surfer rides a large wave"],
        "3": ["a dog runs on the grass", "a brown dog running"],
        "5": ["two people sitting on a bench", "a couple on a park bench"]
    })
}

#[test]
fn output_has_aggregate_and_per_image_in_candidate_order_with_ids_as_given() {
    let d = tempfile::tempdir().unwrap();
    let refs = write(d.path(), "refs.json", &refs_map());
    let cands = write(
        d.path(),
        "cands.json",
        &json!([{"image_id": 5, "caption": "people on a bench"}, {"image_id": 7, "caption": "a man surfing"},
                 {"image_id": 3, "caption": "a dog on grass"}]),
    );
    // Default metrics: pycocoevalcap's set, METEOR included (its data comes from the cache,
    // offline: the suite fetches it first).
    let out = score(&refs, &cands, &["--offline"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let keys: Vec<&String> = v["aggregate"].as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "METEOR", "ROUGE_L", "CIDEr"]
    );
    let ids: Vec<&Value> = v["per_image"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["image_id"])
        .collect();
    assert_eq!(ids, [&json!(5), &json!(7), &json!(3)]);
    assert!(v["signature"].as_str().unwrap().contains("cider_d"));
    assert_eq!(v["bleu_totals"]["testlen"], json!(11));
}

#[test]
fn metrics_flag_selects_keys_and_map_candidates_keep_string_ids() {
    let d = tempfile::tempdir().unwrap();
    let refs = write(d.path(), "refs.json", &refs_map());
    let cands = write(
        d.path(),
        "cands.json",
        &json!({"3": "a dog", "7": "a surfer"}),
    );
    let out = score(&refs, &cands, &["--metrics", "rouge_l"]);
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["aggregate"].as_object().unwrap().len(), 1);
    assert_eq!(v["per_image"][0]["image_id"], json!("3"));
    assert!(v["per_image"][0]["ROUGE_L"].is_f64());
}

#[test]
fn out_file_is_written_and_gzip_inputs_are_read() {
    let d = tempfile::tempdir().unwrap();
    let outp = d.path().join("result.json");
    let set = "coco/fakecap_val2017";
    let out = score(
        &existing(&format!("{set}/refs.json")),
        &existing(&format!("{set}/cands.json")),
        &["--out", outp.to_str().unwrap()],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty());
    let v: Value = serde_json::from_slice(&std::fs::read(&outp).unwrap()).unwrap();
    assert_eq!(v["per_image"].as_array().unwrap().len(), 126);
}

#[test]
fn same_bytes_whatever_the_thread_count() {
    let set = "coco/edge/combined";
    let (r, c) = (
        existing(&format!("{set}/refs.json")),
        existing(&format!("{set}/cands.json")),
    );
    let one = score(&r, &c, &["--threads", "1"]);
    let four = score(&r, &c, &["--threads", "4"]);
    assert!(one.status.success() && four.status.success());
    assert_eq!(one.stdout, four.stdout);
}

/// Each bad input: exit 2, one line on stderr containing the code and the offending id, and no
/// output file.
fn assert_rejected(refs: &Value, cands_text: &str, code: &str, mention: &str) {
    let d = tempfile::tempdir().unwrap();
    let r = write(d.path(), "refs.json", refs);
    let c = d.path().join("cands.json");
    std::fs::write(&c, cands_text).unwrap();
    let outp = d.path().join("out.json");
    let out = score(&r, &c, &["--out", outp.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "expected exit 2 for {code}, stderr: {err}"
    );
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "one line expected: {err}"
    );
    assert!(err.contains(code), "{err} should contain {code}");
    assert!(err.contains(mention), "{err} should mention {mention}");
    assert!(!outp.exists(), "no output file on error");
}

#[test]
fn bad_inputs_exit_2_with_one_line_naming_the_image() {
    let refs = json!({"images": [{"id": 1}, {"id": 2}], "annotations": [{"image_id": 1, "id": 1, "caption": "a cat"}]});
    assert_rejected(
        &refs,
        "[{\"image_id\": 1, \"caption\": \"a cat\"",
        "invalid_json",
        "--cands",
    );
    assert_rejected(
        &refs,
        r#"[{"image_id": 999999999, "caption": "x"}]"#,
        "unknown_image_id",
        "999999999",
    );
    assert_rejected(
        &refs,
        r#"[{"image_id": "1", "caption": "x"}]"#,
        "unknown_image_id",
        "\"1\"",
    );
    assert_rejected(
        &refs,
        r#"[{"image_id": 1, "caption": "x"}, {"image_id": 1, "caption": "y"}]"#,
        "duplicate_image_id",
        "1",
    );
    assert_rejected(
        &refs,
        r#"[{"image_id": 1, "caption": 42}]"#,
        "invalid_caption",
        "image_id 1",
    );
    assert_rejected(
        &refs,
        r#"[{"image_id": 1, "caption": null}]"#,
        "invalid_caption",
        "image_id 1",
    );
    assert_rejected(&refs, "[]", "empty_results", "empty");
    assert_rejected(
        &refs,
        r#"[{"image_id": 2, "caption": "x"}]"#,
        "missing_references",
        "2",
    );
    assert_rejected(
        &refs,
        r#"[{"image_id": 1, "caption": "a \ud800 cat"}]"#,
        "invalid_json",
        "not valid Unicode",
    );
    assert_rejected(&refs, r#"{"results": 5}"#, "invalid_caption", "results");
    let empty = json!({"1": ["", "..."]});
    assert_rejected(
        &empty,
        r#"[{"image_id": 1, "caption": "a cat"}]"#,
        "no_reference_ngrams",
        "empty",
    );
}

#[test]
fn unknown_metric_and_missing_file_exit_2() {
    let d = tempfile::tempdir().unwrap();
    let refs = write(d.path(), "refs.json", &refs_map());
    let cands = write(d.path(), "cands.json", &json!({"3": "a dog"}));
    let out = score(&refs, &cands, &["--metrics", "bleu,nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown_metric"));
    let out = score(&d.path().join("absent.json"), &cands, &[]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn tokenize_outputs_one_line_per_caption() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("caps.txt");
    std::fs::write(&p, "A man riding a WAVE.\n\nTwo dogs, playing!\n").unwrap();
    let out = capscore()
        .args(["tokenize", "--input"])
        .arg(&p)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "a man riding a wave\n\ntwo dogs playing\n"
    );
}

#[test]
fn offline_without_resources_skips_default_meteor_and_rejects_explicit_meteor() {
    let d = tempfile::tempdir().unwrap();
    let refs = write(d.path(), "refs.json", &refs_map());
    let cands = write(d.path(), "cands.json", &json!({"3": "a dog"}));
    let empty = d.path().join("empty-cache");
    let out = score(
        &refs,
        &cands,
        &["--offline", "--cache-dir", empty.to_str().unwrap()],
    );
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["aggregate"].get("METEOR").is_none());
    assert!(String::from_utf8_lossy(&out.stderr).contains("METEOR skipped"));
    let out = score(
        &refs,
        &cands,
        &[
            "--offline",
            "--metrics",
            "meteor",
            "--cache-dir",
            empty.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("capscore fetch") && err.contains("missing"),
        "{err}"
    );
}
