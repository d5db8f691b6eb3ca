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
    let all = "bleu,meteor,rouge_l,cider_d,cider_original,spice";
    let one = score(&r, &c, &["--threads", "1", "--metrics", all, "--explain"]);
    let four = score(&r, &c, &["--threads", "4", "--metrics", all, "--explain"]);
    assert!(
        one.status.success(),
        "{}",
        String::from_utf8_lossy(&one.stderr)
    );
    assert!(four.status.success());
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

/// `capscore parse`: one JSON object per input line, heads in range, SPICE lemmas filled; the
/// model comes from the default cache (`capscore fetch`), and its absence fails the test.
#[test]
fn parse_outputs_one_object_per_line_with_tags_heads_and_lemmas() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("caps.txt");
    std::fs::write(&p, "two men are riding horses on the beach\n\nA dog .\n").unwrap();
    let out = capscore()
        .args(["parse", "--offline", "--input"])
        .arg(&p)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    let toks = lines[0]["tokens"].as_array().unwrap();
    assert_eq!(toks.len(), 8);
    let get = |i: usize, k: &str| toks[i][k].as_str().unwrap().to_string();
    assert_eq!(get(1, "text"), "men");
    assert_eq!(get(1, "tag"), "NNS");
    assert_eq!(get(1, "lemma"), "man");
    assert_eq!(get(3, "lemma"), "ride");
    assert_eq!(get(4, "lemma"), "horse");
    // The root points to itself; every head is in range.
    let roots: Vec<usize> = (0..toks.len())
        .filter(|&i| toks[i]["head"].as_u64() == Some(i as u64))
        .collect();
    assert_eq!(roots.len(), 1);
    assert_eq!(toks[roots[0]]["dep"], "ROOT");
    assert!(toks.iter().all(|t| t["head"].as_u64().unwrap() < 8));
    assert_eq!(lines[1]["tokens"].as_array().unwrap().len(), 0);
    assert_eq!(lines[2]["tokens"].as_array().unwrap().len(), 3);
    // --split ptb lowercases and drops punctuation, as pycocoevalcap's tokenizer does.
    let out = capscore()
        .args(["parse", "--offline", "--split", "ptb", "--input"])
        .arg(&p)
        .output()
        .unwrap();
    assert!(out.status.success());
    let last: Value = serde_json::from_str(
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .nth(2)
            .unwrap(),
    )
    .unwrap();
    let words: Vec<&str> = last["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["text"].as_str().unwrap())
        .collect();
    assert_eq!(words, ["a", "dog"]);
}

#[test]
fn parse_offline_without_the_model_fails_naming_it() {
    let d = tempfile::tempdir().unwrap();
    let empty = d.path().join("empty-cache");
    let out = capscore()
        .args(["parse", "--offline", "--cache-dir", empty.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("parser model"), "{err}");
}

/// `--metrics spice`: the SPICE key per image and in the aggregate, the spice section with the
/// seven categories, tuples with `--explain`; per-image SPICE is the All F of its own image.
#[test]
fn spice_metric_adds_key_subsets_and_explanations() {
    let d = tempfile::tempdir().unwrap();
    let refs = write(
        d.path(),
        "refs.json",
        &json!({
            "7": ["a man riding a brown horse on the beach .", "a person rides a horse along the shore"],
            "3": ["two dogs playing with a red frisbee", "two dogs chase a frisbee on the grass"]
        }),
    );
    let cands = write(
        d.path(),
        "cands.json",
        &json!([{"image_id": 7, "caption": "a man rides a brown horse ."}, {"image_id": 3, "caption": "two dogs with a frisbee"}]),
    );
    let out = score(
        &refs,
        &cands,
        &["--metrics", "spice", "--explain", "--offline"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let per = v["per_image"].as_array().unwrap();
    assert_eq!(per[0]["image_id"], 7);
    let sp = v["spice"]["per_image"].as_array().unwrap();
    for (p, s) in per.iter().zip(sp) {
        assert_eq!(p["image_id"], s["image_id"]);
        assert_eq!(p["SPICE"], s["All"]["f"]);
        let f = p["SPICE"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&f) && f > 0.0);
        assert!(s["candidate_tuples"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["matched"] == true));
        assert!(!s["reference_tuples"].as_array().unwrap().is_empty());
        for cat in [
            "Object",
            "Attribute",
            "Relation",
            "Cardinality",
            "Color",
            "Size",
        ] {
            assert!(s.get(cat).is_some(), "{cat}");
        }
    }
    let mean = (per[0]["SPICE"].as_f64().unwrap() + per[1]["SPICE"].as_f64().unwrap()) / 2.0;
    assert!((v["aggregate"]["SPICE"].as_f64().unwrap() - mean).abs() < 1e-15);
    assert_eq!(v["spice"]["aggregate"]["All"], v["aggregate"]["SPICE"]);
    // "brown horse" appears on both sides: a matched attribute tuple.
    let c7 = &sp[0]["candidate_tuples"];
    assert!(
        c7.as_array()
            .unwrap()
            .iter()
            .any(|t| t["concepts"] == json!([["horse"], ["brown"]]) && t["matched"] == true),
        "{c7}"
    );
}
