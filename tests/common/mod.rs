//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// `tests/fixtures/<rel>`.
pub fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

/// Reads a fixture file, transparently gunzipping `*.gz` (tries `<rel>.gz` when `<rel>` is absent).
pub fn read_text(rel: &str) -> String {
    let mut p = fixture(rel);
    if !p.exists() {
        p = fixture(&format!("{rel}.gz"));
    }
    let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()));
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut s = String::new();
        flate2::read::GzDecoder::new(bytes.as_slice())
            .read_to_string(&mut s)
            .expect("gunzip");
        s
    } else {
        String::from_utf8(bytes).expect("utf-8")
    }
}

/// Reads and parses a JSON fixture.
pub fn read_json(rel: &str) -> Value {
    serde_json::from_str(&read_text(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The fixture path as it exists on disk (`rel` or `rel.gz`).
pub fn existing(rel: &str) -> PathBuf {
    let p = fixture(rel);
    if p.exists() {
        p
    } else {
        fixture(&format!("{rel}.gz"))
    }
}

/// Every golden set folder (relative to fixtures) that has a `golden.json`.
pub fn golden_sets() -> Vec<String> {
    let mut out = Vec::new();
    let root = fixture("coco");
    let mut stack = vec![root.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if matches!(
                p.file_name().and_then(|n| n.to_str()),
                Some("golden.json" | "golden.json.gz")
            ) {
                let rel = d
                    .strip_prefix(fixture(""))
                    .expect("prefix")
                    .to_string_lossy()
                    .into_owned();
                out.push(rel);
            }
        }
    }
    out.sort();
    out
}

/// The metric keys the n-gram goldens give exact values for.
pub const EXACT_KEYS: [&str; 6] = ["Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "ROUGE_L", "CIDEr"];

/// Compares scores bit for bit; returns a list of mismatch descriptions.
pub fn compare_scores(what: &str, golden: &Value, ours: &Value, keys: &[&str]) -> Vec<String> {
    let mut bad = Vec::new();
    for k in keys {
        let g = golden.get(*k).and_then(Value::as_f64);
        let o = ours.get(*k).and_then(Value::as_f64);
        match (g, o) {
            (Some(g), Some(o)) if g.to_bits() == o.to_bits() => {}
            _ => bad.push(format!("{what} {k}: golden {g:?} ours {o:?}")),
        }
    }
    bad
}

/// The fakecap references with a nocaps-style `domain` on every image (by position: in-domain,
/// near-domain, out-domain in turn), and the candidates.
pub fn nocaps_shaped() -> (Value, Value) {
    let mut refs = read_json("coco/fakecap_val2017/refs.json");
    let domains = ["in-domain", "near-domain", "out-domain"];
    for (k, img) in refs["images"]
        .as_array_mut()
        .expect("images")
        .iter_mut()
        .enumerate()
    {
        img["domain"] = Value::from(domains[k % 3]);
    }
    (refs, read_json("coco/fakecap_val2017/cands.json"))
}

/// Runs the `capscore` binary with `args`: (success, stdout, stderr).
pub fn run_capscore<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> (bool, Vec<u8>, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_capscore"))
        .args(args)
        .output()
        .expect("run capscore");
    (
        out.status.success(),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `capscore score --refs REFS --cands CANDS ARGS...`: (success, stdout, stderr).
pub fn run_score(refs: &Path, cands: &Path, args: &[&str]) -> (bool, Vec<u8>, String) {
    let mut all = vec![
        "score".as_ref(),
        "--refs".as_ref(),
        refs.as_os_str(),
        "--cands".as_ref(),
        cands.as_os_str(),
    ];
    all.extend(args.iter().map(std::ffi::OsStr::new));
    run_capscore(&all)
}
