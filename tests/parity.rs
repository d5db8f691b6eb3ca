//! Golden parity with pycocoevalcap 1.2 (fixtures: tests/fixtures/coco, provenance in
//! PROVENANCE.md). Tolerance: none. BLEU, ROUGE-L and CIDEr-D are compared bit for bit (spec
//! COCO §7: exact on x86_64 glibc for every golden here, all <= 5000 images).

mod common;

use std::process::Command;

use capscore::engine::{self, Metric, Options, Tokenizer};
use capscore::input::{self, ImageId, Item};
use common::{compare_scores, existing, golden_sets, read_json, EXACT_KEYS};
use serde_json::Value;

const METRICS: [Metric; 3] = [Metric::Bleu, Metric::RougeL, Metric::CiderD];

/// Scores the golden's own tokenized captions: isolates the metrics from the tokenizer.
fn score_golden_tokens(golden: &Value) -> Value {
    let tok = golden["tokenized"].as_array().expect("tokenized");
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .expect("array")
            .iter()
            .map(|s| s.as_str().expect("str").to_owned())
            .collect()
    };
    let items: Vec<Item> = tok
        .iter()
        .map(|t| Item {
            image_id: ImageId::from_value(&t["image_id"]).expect("id"),
            candidate: strings(&t["candidate"]).join(" "),
            references: strings(&t["references"]),
        })
        .collect();
    let (cands, refs) = input::split_items(items).expect("items");
    let opts = Options {
        tokenizer: Tokenizer::Pretokenized,
        ..Options::new(&METRICS)
    };
    engine::score(cands, &refs, &opts)
        .expect("score")
        .to_json()
        .expect("json")
}

fn compare_report(name: &str, golden: &Value, ours: &Value) -> Vec<String> {
    let mut bad = compare_scores(
        &format!("{name} aggregate"),
        &golden["aggregate"],
        &ours["aggregate"],
        &EXACT_KEYS,
    );
    let ours_per: Vec<&Value> = ours["per_image"]
        .as_array()
        .expect("per_image")
        .iter()
        .collect();
    let golden_per = golden["per_image"].as_array().expect("per_image");
    if ours_per.len() != golden_per.len() {
        bad.push(format!(
            "{name}: {} per-image results, golden has {}",
            ours_per.len(),
            golden_per.len()
        ));
    }
    for g in golden_per {
        let id = ImageId::from_value(&g["image_id"]).expect("id");
        match ours_per
            .iter()
            .find(|o| ImageId::from_value(&o["image_id"]).as_ref() == Some(&id))
        {
            Some(o) => bad.extend(compare_scores(
                &format!("{name} image {id}"),
                g,
                o,
                &EXACT_KEYS,
            )),
            None => bad.push(format!("{name}: image {id} missing")),
        }
    }
    let (gt, ot) = (&golden["bleu_totals"], &ours["bleu_totals"]);
    for k in ["testlen", "reflen", "guess", "correct", "ratio"] {
        if gt[k] != ot[k] {
            bad.push(format!(
                "{name} bleu_totals.{k}: golden {} ours {}",
                gt[k], ot[k]
            ));
        }
    }
    bad
}

#[test]
fn metrics_are_bit_identical_on_every_golden_given_its_tokenization() {
    let sets = golden_sets();
    assert!(
        sets.len() >= 50,
        "expected the golden sets in tests/fixtures/coco, found {}",
        sets.len()
    );
    let mut bad = Vec::new();
    for set in &sets {
        let golden = read_json(&format!("{set}/golden.json"));
        bad.extend(compare_report(set, &golden, &score_golden_tokens(&golden)));
    }
    assert!(
        bad.is_empty(),
        "{} mismatches:\n{}",
        bad.len(),
        bad[..bad.len().min(30)].join("\n")
    );
}

#[test]
fn worked_example_cider_d_of_one_reference_case() {
    // spec COCO §6 worked example: 2.974745762724499 for image 1 of edge/cases/23_one_reference.
    let golden = read_json("coco/edge/cases/23_one_reference/golden.json");
    let ours = score_golden_tokens(&golden);
    let img1 = ours["per_image"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["image_id"] == 1)
        .unwrap();
    assert_eq!(img1["CIDEr"].as_f64(), Some(2.974745762724499));
}

pub fn capscore() -> Command {
    Command::new(env!("CARGO_BIN_EXE_capscore"))
}

fn run_cli(refs: &std::path::Path, cands: &std::path::Path) -> Value {
    let out = capscore()
        .args([
            "score",
            "--tokenized",
            "--metrics",
            "bleu,rouge_l,cider_d",
            "--refs",
        ])
        .arg(refs)
        .arg("--cands")
        .arg(cands)
        .output()
        .expect("run capscore");
    assert!(
        out.status.success(),
        "capscore failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json output")
}

/// End to end through the CLI (tokenizer included) on every golden set with clean inputs.
#[test]
fn cli_is_bit_identical_on_every_golden() {
    let mut bad = Vec::new();
    for set in golden_sets() {
        let golden = read_json(&format!("{set}/golden.json"));
        let ours = run_cli(
            &existing(&format!("{set}/refs.json")),
            &existing(&format!("{set}/cands.json")),
        );
        bad.extend(compare_report(&set, &golden, &ours));
        // Tokenization parity too (evaluation order).
        for (g, o) in golden["tokenized"]
            .as_array()
            .unwrap()
            .iter()
            .zip(ours["tokenized"].as_array().unwrap())
        {
            let gc = g["candidate"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap())
                .collect::<Vec<_>>()
                .join(" ");
            if ImageId::from_value(&g["image_id"]) != ImageId::from_value(&o["image_id"])
                || gc != o["candidate"]
                || g["references"] != o["references"]
            {
                bad.push(format!(
                    "{set}: tokenization of image {} differs: golden {} / {}, ours {} / {}",
                    g["image_id"], gc, g["references"], o["candidate"], o["references"]
                ));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} mismatches:\n{}",
        bad.len(),
        bad[..bad.len().min(30)].join("\n")
    );
}

/// pycocoevalcap misaligns every later caption when a caption holds CR, CR LF, U+2028 or FF/VT
/// (spec COCO §3.5). capscore treats them as spaces: cases 40, 41, 42, 44 must equal case 39.
#[test]
fn line_breaks_inside_captions_do_not_shift_later_captions() {
    let expected = read_json("coco/edge/cases/39_newline_in_candidate/golden.json");
    for case in [
        "40_cr_in_candidate",
        "41_crlf_in_candidate",
        "42_u2028_in_candidate",
        "44_formfeed_vt_in_candidate",
    ] {
        let dir = format!("coco/edge/cases/{case}");
        let ours = run_cli(
            &existing(&format!("{dir}/refs.json")),
            &existing(&format!("{dir}/cands.json")),
        );
        let bad = compare_report(case, &expected, &ours);
        assert!(bad.is_empty(), "{case}:\n{}", bad.join("\n"));
    }
    for probe in ["linebreak_in_last_caption", "linebreak_in_reference"] {
        let dir = format!("coco/edge_extra/probes/{probe}");
        let expected = read_json(&format!("{dir}/capscore_expected/golden.json"));
        let ours = run_cli(
            &existing(&format!("{dir}/refs.json")),
            &existing(&format!("{dir}/cands.json")),
        );
        let bad = compare_report(probe, &expected, &ours);
        assert!(bad.is_empty(), "{probe}:\n{}", bad.join("\n"));
    }
}

/// edge_extra/combined with the six line-break captions as a client sends them.
#[test]
fn edge_extra_linebreak_inputs_give_the_combined_golden() {
    let golden = read_json("coco/edge_extra/combined/golden.json");
    let mut cands = read_json("coco/edge_extra/combined/cands.json");
    let swaps = read_json("coco/edge_extra/combined/linebreak_inputs.json");
    let mut swapped = 0;
    for s in swaps.as_array().unwrap() {
        for c in cands.as_array_mut().unwrap() {
            if c["image_id"] == s["image_id"] {
                c["caption"] = s["caption"].clone();
                swapped += 1;
            }
        }
    }
    assert_eq!(swapped, 6);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cands.json");
    std::fs::write(&path, serde_json::to_vec(&cands).unwrap()).unwrap();
    let ours = run_cli(&existing("coco/edge_extra/combined/refs.json"), &path);
    let bad = compare_report("edge_extra/combined+linebreaks", &golden, &ours);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Every input pycocoevalcap crashes on (fixtures with `error.json`) is rejected with exit 2
/// and the stable code the spec assigns (COCO §9.1).
#[test]
fn pycocoevalcap_crashes_become_clear_errors() {
    let cases = [
        ("coco/edge/cases/47_lone_surrogate", "invalid_json"),
        ("coco/edge/cases/50_zero_references", "missing_references"),
        (
            "coco/edge/cases/51_duplicate_candidate",
            "duplicate_image_id",
        ),
        (
            "coco/edge/cases/52_candidate_unknown_image",
            "unknown_image_id",
        ),
        ("coco/edge/cases/53_caption_not_string", "invalid_caption"),
        ("coco/edge/cases/54_caption_null", "invalid_caption"),
        ("coco/edge/cases/56_empty_results_file", "empty_results"),
        (
            "coco/edge_extra/probes/all_refs_empty_in_corpus",
            "no_reference_ngrams",
        ),
        (
            "coco/edge_extra/probes/string_vs_int_image_id",
            "unknown_image_id",
        ),
    ];
    for (dir, code) in cases {
        assert!(
            common::fixture(&format!("{dir}/error.json")).exists(),
            "{dir}: not a crash case"
        );
        let out = capscore()
            .args(["score", "--refs"])
            .arg(existing(&format!("{dir}/refs.json")))
            .arg("--cands")
            .arg(existing(&format!("{dir}/cands.json")))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{dir}: {err}");
        assert!(err.contains(code), "{dir}: expected {code}, got {err}");
        assert!(out.stdout.is_empty(), "{dir}: no output on error");
    }
}

/// METEOR through the CLI on every golden COCO set: per image and pooled aggregate within 1e-12
/// of pycocoevalcap's (spec METEOR: bit-identical except rare last-bit `pow` cases). Needs the
/// fetched resources (`capscore fetch`; scripts/test does it first) and fails without them.
#[test]
fn meteor_matches_pycocoevalcap_on_every_golden() {
    let mut bad = Vec::new();
    let (mut compared, mut identical) = (0usize, 0usize);
    for set in golden_sets() {
        let golden = read_json(&format!("{set}/golden.json"));
        let out = capscore()
            .args(["score", "--offline", "--metrics", "meteor", "--refs"])
            .arg(existing(&format!("{set}/refs.json")))
            .arg("--cands")
            .arg(existing(&format!("{set}/cands.json")))
            .output()
            .expect("run capscore");
        assert!(
            out.status.success(),
            "{set}: {} (METEOR resources missing? run `capscore fetch` or scripts/test)",
            String::from_utf8_lossy(&out.stderr)
        );
        let ours: Value = serde_json::from_slice(&out.stdout).expect("json");
        let mut check = |what: String, g: &Value, o: &Value| {
            let (g, o) = (
                g.as_f64().expect("golden METEOR"),
                o.as_f64().unwrap_or(f64::NAN),
            );
            compared += 1;
            identical += usize::from(g.to_bits() == o.to_bits());
            if (g - o).abs() > 1e-12 || o.is_nan() {
                bad.push(format!("{what}: golden {g} ours {o}"));
            }
        };
        check(
            format!("{set} aggregate"),
            &golden["aggregate"]["METEOR"],
            &ours["aggregate"]["METEOR"],
        );
        for g in golden["per_image"].as_array().unwrap() {
            let id = ImageId::from_value(&g["image_id"]).unwrap();
            let o = ours["per_image"]
                .as_array()
                .unwrap()
                .iter()
                .find(|o| ImageId::from_value(&o["image_id"]).as_ref() == Some(&id))
                .map_or(Value::Null, |o| o["METEOR"].clone());
            check(format!("{set} image {id}"), &g["METEOR"], &o);
        }
    }
    eprintln!("METEOR: {identical}/{compared} values bit-identical");
    assert!(compared > 600, "too few METEOR values compared: {compared}");
    assert!(
        bad.is_empty(),
        "{} mismatches:\n{}",
        bad.len(),
        bad.join("\n")
    );
}
