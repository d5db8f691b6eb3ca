//! Leaderboard features from the CLI: bootstrap intervals and CIDEr document frequencies from
//! another references file (`--df-from`).

mod common;

use common::{existing, run_score as run};
use serde_json::Value;

/// `capscore score` on the fakecap set.
fn score(args: &[&str]) -> (bool, Vec<u8>, String) {
    run(
        &existing("coco/fakecap_val2017/refs.json"),
        &existing("coco/fakecap_val2017/cands.json"),
        args,
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

/// [`common::nocaps_shaped`], written to `dir`.
fn nocaps_shaped(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf, Value, Value) {
    let (refs, cands) = common::nocaps_shaped();
    let (r, c) = (dir.join("refs.json"), dir.join("cands.json"));
    std::fs::write(&r, refs.to_string()).expect("write");
    std::fs::write(&c, cands.to_string()).expect("write");
    (r, c, refs, cands)
}

const SPLIT_METRICS: &str = "bleu,meteor,rouge_l,cider_d";

/// Each split of `--split-by domain` equals scoring that split's images alone (its own
/// references file and results), bit for bit; `aggregate` and `per_image` are the entire set's
/// as without splits; the EvalAI shape carries the same numbers.
#[test]
fn split_tables_equal_scoring_each_split_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (r, c, refs, cands) = nocaps_shaped(dir.path());
    let (ok, out, err) = run(
        &r,
        &c,
        &["--metrics", SPLIT_METRICS, "--split-by", "domain"],
    );
    assert!(ok, "{err}");
    let v = json(&out);
    let (ok, plain, err) = run(&r, &c, &["--metrics", SPLIT_METRICS]);
    assert!(ok, "{err}");
    let plain = json(&plain);
    assert_eq!(v["aggregate"], plain["aggregate"]);
    assert_eq!(v["per_image"], plain["per_image"]);
    assert!(v["signature"]
        .as_str()
        .unwrap()
        .ends_with("|splits:domain(each split scored as its own corpus)"));
    let splits = v["splits"].as_object().expect("splits");
    assert_eq!(
        splits.keys().collect::<Vec<_>>(),
        ["in-domain", "near-domain", "out-domain"]
    );
    let mut total = 0;
    for (name, s) in splits {
        let ids: Vec<&Value> = refs["images"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["domain"] == *name)
            .map(|i| &i["id"])
            .collect();
        let sub_refs = serde_json::json!({
            "images": refs["images"].as_array().unwrap().iter().filter(|i| ids.contains(&&i["id"])).collect::<Vec<_>>(),
            "annotations": refs["annotations"].as_array().unwrap().iter().filter(|a| ids.contains(&&a["image_id"])).collect::<Vec<_>>(),
        });
        let sub_cands: Vec<&Value> = cands
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| ids.contains(&&c["image_id"]))
            .collect();
        let (sr, sc) = (dir.path().join("sr.json"), dir.path().join("sc.json"));
        std::fs::write(&sr, sub_refs.to_string()).unwrap();
        std::fs::write(&sc, serde_json::to_string(&sub_cands).unwrap()).unwrap();
        let (ok, alone, err) = run(&sr, &sc, &["--metrics", SPLIT_METRICS]);
        assert!(ok, "{err}");
        let alone = json(&alone);
        assert_eq!(s["aggregate"], alone["aggregate"], "split {name}");
        assert_eq!(s["bleu_totals"], alone["bleu_totals"], "split {name}");
        assert_eq!(s["images"], sub_cands.len());
        assert_ne!(s["aggregate"], v["aggregate"], "a split is not the whole");
        total += sub_cands.len();
    }
    assert_eq!(total, cands.as_array().unwrap().len());
    // EvalAI's shape: the splits by name, then the entire set, same numbers.
    let (ok, e, err) = run(
        &r,
        &c,
        &[
            "--metrics",
            SPLIT_METRICS,
            "--split-by",
            "domain",
            "--format",
            "evalai",
        ],
    );
    assert!(ok, "{err}");
    let e = json(&e);
    let result = e["result"].as_array().expect("result");
    assert_eq!(result.len(), 4);
    for (k, name) in ["in-domain", "near-domain", "out-domain"]
        .iter()
        .enumerate()
    {
        assert_eq!(result[k][*name], splits[*name]["aggregate"]);
    }
    assert_eq!(result[3]["entire"], v["aggregate"]);
}

#[test]
fn split_errors_are_clear() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (r, c, mut refs, _) = nocaps_shaped(dir.path());
    let (ok, _, err) = run(&r, &c, &["--metrics", "bleu", "--split-by", "nope"]);
    assert!(!ok);
    assert!(
        err.contains("invalid_format") && err.contains("\"nope\""),
        "{err}"
    );
    // An image without the field: named.
    refs["images"][0].as_object_mut().unwrap().remove("domain");
    let id = refs["images"][0]["id"].clone();
    std::fs::write(&r, refs.to_string()).unwrap();
    let (ok, _, err) = run(&r, &c, &["--metrics", "bleu", "--split-by", "domain"]);
    assert!(!ok);
    assert!(
        err.contains("missing_split") && err.contains(&id.to_string()),
        "{err}"
    );
}

/// A submission missing 5 images: a `partial_results` warning with the counts, or with
/// `--strict` exit 2 `incomplete_results` naming the first missing ids; the scores of the
/// images given do not change.
#[test]
fn strict_mode_rejects_a_partial_submission_and_the_default_warns() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (r, _, _, cands) = nocaps_shaped(dir.path());
    let all = cands.as_array().unwrap();
    let n = all.len();
    let kept: Vec<&Value> = all[5..].iter().collect();
    let c = dir.path().join("partial.json");
    std::fs::write(&c, serde_json::to_string(&kept).unwrap()).unwrap();
    let (ok, out, err) = run(&r, &c, &["--metrics", "bleu,cider_d"]);
    assert!(ok, "{err}");
    let v = json(&out);
    let w: Vec<&Value> = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["code"] == "partial_results")
        .collect();
    assert_eq!(w.len(), 1, "{v}");
    assert!(
        w[0]["message"]
            .as_str()
            .unwrap()
            .contains(&format!("5 of the {n} images")),
        "{}",
        w[0]["message"]
    );
    assert_eq!(w[0]["image_ids"].as_array().unwrap().len(), 5);
    let (ok, out, err) = run(&r, &c, &["--metrics", "bleu,cider_d", "--strict"]);
    assert!(!ok && out.is_empty());
    assert!(
        err.contains("incomplete_results") && err.contains(&format!("5 of the {n}")),
        "{err}"
    );
    assert!(err.contains(&all[0]["image_id"].to_string()), "{err}");
    // Complete: strict passes and nothing is said.
    let (ok, out, err) = run(
        &r,
        &dir.path().join("cands.json"),
        &["--metrics", "bleu", "--strict"],
    );
    assert!(ok, "{err}");
    assert!(!String::from_utf8_lossy(&out).contains("partial_results"));
}

/// `capscore compare`: B against itself is no difference (p = 1); against A the delta is the
/// difference of the two `score` aggregates, inside its bootstrap interval, the same bytes
/// whatever the thread count; different image sets are `image_sets_differ`.
#[test]
fn compare_gives_the_difference_of_the_scores_with_intervals_and_p_values() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (r, b_path, _, cands) = nocaps_shaped(dir.path());
    // System A: every candidate's words reversed (a worse system on the same images).
    let a: Vec<Value> = cands
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let words: Vec<&str> = c["caption"].as_str().unwrap().split(' ').rev().collect();
            serde_json::json!({"image_id": c["image_id"], "caption": words.join(" ")})
        })
        .collect();
    let a_path = dir.path().join("a.json");
    std::fs::write(&a_path, serde_json::to_string(&a).unwrap()).unwrap();
    let compare = |x: &std::path::Path, y: &std::path::Path, extra: &[&str]| {
        // Fewer resamples than the default, unless the case sets them.
        let fewer: &[&str] = if extra.contains(&"--samples") {
            &[]
        } else {
            &["--samples", "400", "--trials", "400"]
        };
        let mut args = vec![
            "compare".as_ref(),
            "--refs".as_ref(),
            r.as_os_str(),
            "--cands".as_ref(),
            x.as_os_str(),
            "--cands".as_ref(),
            y.as_os_str(),
            "--metrics".as_ref(),
            SPLIT_METRICS.as_ref(),
        ];
        args.extend(fewer.iter().chain(extra).map(std::ffi::OsStr::new));
        common::run_capscore(&args)
    };
    let (ok, one, err) = compare(&a_path, &b_path, &["--threads", "1"]);
    assert!(ok, "{err}");
    let (ok, two, err) = compare(&a_path, &b_path, &["--threads", "2"]);
    assert!(ok, "{err}");
    assert_eq!(one, two, "thread count changed the bytes");
    let v = json(&one);
    let (_, sa, _) = run(&r, &a_path, &["--metrics", SPLIT_METRICS]);
    let (_, sb, _) = run(&r, &b_path, &["--metrics", SPLIT_METRICS]);
    let (sa, sb) = (json(&sa), json(&sb));
    assert_eq!(v["a"], sa["aggregate"]);
    assert_eq!(v["b"], sb["aggregate"]);
    for key in ["Bleu_4", "METEOR", "ROUGE_L", "CIDEr"] {
        let d = v["delta"][key].as_f64().unwrap();
        let want = sb["aggregate"][key].as_f64().unwrap() - sa["aggregate"][key].as_f64().unwrap();
        assert_eq!(d, want, "{key}");
        let (lo, hi) = (
            v["paired_bootstrap"]["low"][key].as_f64().unwrap(),
            v["paired_bootstrap"]["high"][key].as_f64().unwrap(),
        );
        assert!(lo <= d && d <= hi, "{key}: {lo} {d} {hi}");
        for p in [
            &v["paired_bootstrap"]["p_value"][key],
            &v["randomization"]["p_value"][key],
        ] {
            let p = p.as_f64().unwrap();
            assert!(p > 0.0 && p <= 1.0, "{key}: p {p}");
        }
    }
    // Reversed word order ruins the higher-order n-grams: BLEU-4 differs clearly.
    assert!(
        v["randomization"]["p_value"]["Bleu_4"].as_f64().unwrap() < 0.01,
        "{v}"
    );
    // A system against itself: no difference, p = 1.
    let (ok, same, err) = compare(&b_path, &b_path, &[]);
    assert!(ok, "{err}");
    let same = json(&same);
    assert_eq!(same["delta"]["CIDEr"], 0.0);
    assert_eq!(same["randomization"]["p_value"]["CIDEr"], 1.0);
    assert_eq!(same["paired_bootstrap"]["p_value"]["CIDEr"], 1.0);
    // Different images: a clear error.
    let fewer = dir.path().join("fewer.json");
    std::fs::write(&fewer, serde_json::to_string(&a[1..]).unwrap()).unwrap();
    let (ok, _, err) = compare(&fewer, &b_path, &[]);
    assert!(!ok);
    assert!(
        err.contains("image_sets_differ") && err.contains("1 only in B"),
        "{err}"
    );
    let (ok, _, err) = compare(&a_path, &b_path, &["--samples", "0"]);
    assert!(!ok && err.contains("samples must be 1 to 10000"), "{err}");
}

/// Calibration: two systems whose outputs are exchangeable (each image's two held-out
/// references, assigned to A or B by a fair coin per seed) differ only by chance, so the
/// p-values over many seeds must be uniform: a Kolmogorov-Smirnov check at the 1% level.
#[test]
fn compare_p_values_are_uniform_under_the_null() {
    use capscore::engine::compare::CompareSpec;
    use capscore::engine::{self, Job, Kind, Metric, Options, Refs, Tokenizer};
    use capscore::input::{self, Candidate, ImageId, Item};
    let text = common::read_text("tokenizer/val2014_captions_ptb.jsonl");
    let images: Vec<(Value, Vec<String>)> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["tokenized"].as_array().unwrap().len() >= 5)
        .take(150)
        .map(|v| {
            let t: Vec<String> = v["tokenized"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_owned())
                .collect();
            (v["image_id"].clone(), t)
        })
        .collect();
    let metrics = [Metric::Bleu, Metric::RougeL, Metric::CiderD];
    let opts = Options {
        tokenizer: Tokenizer::Pretokenized,
        ..Options::new(&metrics)
    };
    let seeds = 200u64;
    let keys = ["Bleu_4", "ROUGE_L", "CIDEr"];
    let mut p_ar: Vec<Vec<f64>> = vec![Vec::new(); keys.len()];
    let mut p_bs: Vec<Vec<f64>> = vec![Vec::new(); keys.len()];
    for seed in 0..seeds {
        let (mut a, mut b, mut items) = (Vec::new(), Vec::new(), Vec::new());
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x1234_5678;
        for (id, t) in &images {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let flip = state & 1 == 1;
            let image_id = ImageId::from_value(id).unwrap();
            let (x, y) = if flip { (&t[1], &t[0]) } else { (&t[0], &t[1]) };
            a.push(Candidate {
                image_id: image_id.clone(),
                caption: x.clone(),
            });
            b.push(Candidate {
                image_id: image_id.clone(),
                caption: y.clone(),
            });
            items.push(Item {
                image_id,
                candidate: String::new(),
                references: t[2..].to_vec(),
            });
        }
        let (_, refs) = input::split_items(items).unwrap();
        let spec = CompareSpec {
            samples: 300,
            trials: 300,
            seed,
            level: 0.95,
        };
        let job = Job {
            candidates: a,
            references: Refs::Owned(refs),
            kind: Kind::Compare { b, spec },
            options: opts,
        };
        let r = engine::run(job)
            .and_then(engine::Outcome::into_comparison)
            .expect("compare");
        for (j, k) in keys.iter().enumerate() {
            p_ar[j].push(r.randomization.p_value.get(k).unwrap());
            p_bs[j].push(r.paired_bootstrap.p_value.get(k).unwrap());
        }
    }
    // D_crit at alpha = 0.01 for n = 200: 1.628 / sqrt(n).
    let crit = 1.628 / (seeds as f64).sqrt();
    for (j, k) in keys.iter().enumerate() {
        for (test, ps) in [
            ("randomization", &mut p_ar[j]),
            ("paired bootstrap", &mut p_bs[j]),
        ] {
            ps.sort_by(f64::total_cmp);
            let n = ps.len() as f64;
            let d = ps
                .iter()
                .enumerate()
                .map(|(i, &p)| (p - i as f64 / n).abs().max(((i + 1) as f64 / n - p).abs()))
                .fold(0.0, f64::max);
            eprintln!("KS {test} {k}: D = {d:.4} (critical {crit:.4}, n = {seeds})");
            assert!(d < crit, "{test} {k}: p-values not uniform, D = {d}");
        }
    }
}

/// SPIDEr (aac-metrics): (CIDEr-D + SPICE) / 2 per image and for the corpus; asking for it
/// reports CIDEr-D and SPICE too, with the numbers of `--metrics cider_d,spice`.
#[test]
fn spider_is_the_mean_of_cider_d_and_spice() {
    let (ok, out, err) = score(&["--metrics", "spider"]);
    assert!(ok, "{err}");
    let v = json(&out);
    let (ok, base, err) = score(&["--metrics", "cider_d,spice"]);
    assert!(ok, "{err}");
    let base = json(&base);
    let agg = &v["aggregate"];
    assert_eq!(agg["CIDEr"], base["aggregate"]["CIDEr"]);
    assert_eq!(agg["SPICE"], base["aggregate"]["SPICE"]);
    let mean = |s: &Value| (s["CIDEr"].as_f64().unwrap() + s["SPICE"].as_f64().unwrap()) / 2.0;
    assert_eq!(agg["SPIDEr"].as_f64().unwrap(), mean(agg));
    for (row, b) in v["per_image"]
        .as_array()
        .unwrap()
        .iter()
        .zip(base["per_image"].as_array().unwrap())
    {
        assert_eq!(row["image_id"], b["image_id"]);
        assert_eq!(row["SPIDEr"].as_f64().unwrap(), mean(b));
    }
    assert!(v["signature"]
        .as_str()
        .unwrap()
        .contains("spider:(cider_d+spice)/2"));
    let keys: Vec<&String> = agg.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["CIDEr", "SPICE", "SPIDEr"]);
}

/// Three candidate sets on the first 60 fakecap images (the candidates as given, their words
/// reversed, the next image's candidate), written to `dir`: the references file (only those
/// images), each set alone, and all three as one results file repeating every image id (set
/// order within an image).
fn three_candidate_sets(
    dir: &std::path::Path,
) -> (
    std::path::PathBuf,
    Vec<std::path::PathBuf>,
    std::path::PathBuf,
) {
    let refs = common::read_json("coco/fakecap_val2017/refs.json");
    let cands = common::read_json("coco/fakecap_val2017/cands.json");
    let cands: Vec<&Value> = cands.as_array().unwrap().iter().take(60).collect();
    let ids: Vec<&Value> = cands.iter().map(|c| &c["image_id"]).collect();
    let mut map = serde_json::Map::new();
    for a in refs["annotations"].as_array().unwrap() {
        if ids.contains(&&a["image_id"]) {
            map.entry(a["image_id"].to_string())
                .or_insert_with(|| Value::Array(Vec::new()))
                .as_array_mut()
                .unwrap()
                .push(a["caption"].clone());
        }
    }
    let r = dir.join("refs.json");
    std::fs::write(&r, Value::Object(map).to_string()).unwrap();
    let caption = |k: usize, i: usize| -> String {
        let c = cands[i]["caption"].as_str().unwrap();
        match k {
            0 => c.to_owned(),
            1 => c.split(' ').rev().collect::<Vec<_>>().join(" "),
            _ => cands[(i + 1) % cands.len()]["caption"]
                .as_str()
                .unwrap()
                .to_owned(),
        }
    };
    let mut sets = Vec::new();
    let mut all = Vec::new();
    for k in 0..3 {
        let set: Vec<Value> = (0..cands.len())
            .map(|i| serde_json::json!({"image_id": ids[i], "caption": caption(k, i)}))
            .collect();
        let p = dir.join(format!("set{k}.json"));
        std::fs::write(&p, Value::Array(set).to_string()).unwrap();
        sets.push(p);
    }
    for (i, id) in ids.iter().enumerate() {
        for k in 0..3 {
            all.push(serde_json::json!({"image_id": id, "caption": caption(k, i)}));
        }
    }
    let m = dir.join("multi.json");
    std::fs::write(&m, Value::Array(all).to_string()).unwrap();
    (r, sets, m)
}

/// Several candidates per image: each candidate's scores equal scoring its set alone (and each
/// run's corpus scores the set's aggregate); `max` takes, per image, every metric from the
/// candidate with the best `--select-by` value; `mean` averages; the aggregate is the mean of
/// the selected per-image values (aac-metrics); SPIDEr-max selects by SPIDEr.
#[test]
fn multi_candidate_scores_each_candidate_and_selects_per_image() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (refs, sets, multi) = three_candidate_sets(dir.path());
    let metrics = ["--metrics", "bleu,rouge_l,cider_d,spider"];
    let alone: Vec<Value> = sets
        .iter()
        .map(|s| {
            let (ok, out, err) = run(&refs, s, &metrics);
            assert!(ok, "{err}");
            json(&out)
        })
        .collect();
    let multi_run = |extra: &[&str]| -> Value {
        let mut args = metrics.to_vec();
        args.push("--multi-candidate");
        args.extend(extra);
        let (ok, out, err) = run(&refs, &multi, &args);
        assert!(ok, "{err}");
        json(&out)
    };
    let keys = ["Bleu_1", "Bleu_4", "ROUGE_L", "CIDEr", "SPICE", "SPIDEr"];
    for (select, by) in [("max", "SPIDEr"), ("max", "Bleu_4"), ("mean", "")] {
        let mut extra = vec!["--select", select];
        if select == "max" && by != "SPIDEr" {
            extra.extend(["--select-by", by]);
        }
        let v = multi_run(&extra);
        let m = &v["multi_candidate"];
        assert_eq!(m["candidates"], 3);
        assert_eq!(m["select"], select);
        for (k, a) in alone.iter().enumerate() {
            assert_eq!(m["per_candidate"][k], a["aggregate"], "run {k}");
        }
        let rows = v["per_image"].as_array().unwrap();
        assert_eq!(rows.len(), 60);
        let mut sums = [0.0f64; 6];
        for (i, row) in rows.iter().enumerate() {
            let mi = &m["per_image"][i];
            assert_eq!(mi["image_id"], row["image_id"]);
            let cand = |k: usize| -> &Value {
                let want = &alone[k]["per_image"][i];
                let got = &mi["candidates"][k];
                for key in keys {
                    assert_eq!(got[key], want[key], "image {i}, candidate {k}, {key}");
                }
                got
            };
            let all: Vec<&Value> = (0..3).map(cand).collect();
            if select == "max" {
                let score = |c: &Value| c[by].as_f64().unwrap();
                let mut best = 0;
                for k in 1..3 {
                    if score(all[k]) > score(all[best]) {
                        best = k;
                    }
                }
                assert_eq!(mi["selected"], best, "image {i}");
                for key in keys {
                    assert_eq!(row[key], all[best][key], "image {i} {key}");
                }
            } else {
                assert!(mi.get("selected").is_none());
                for key in keys {
                    let mean = all.iter().map(|c| c[key].as_f64().unwrap()).sum::<f64>() / 3.0;
                    assert_eq!(row[key].as_f64().unwrap(), mean, "image {i} {key}");
                }
            }
            for (s, key) in sums.iter_mut().zip(keys) {
                *s += row[key].as_f64().unwrap();
            }
        }
        for (s, key) in sums.iter().zip(keys) {
            let got = v["aggregate"][key].as_f64().unwrap();
            assert!(
                (got - s / 60.0).abs() <= 1e-12 * s.abs().max(1.0),
                "{select} {key}: {got} vs {}",
                s / 60.0
            );
        }
        let sig = v["signature"].as_str().unwrap();
        let want = match select {
            "max" => format!("|multi:k=3,select=max({by}),aggregate=mean"),
            _ => "|multi:k=3,select=mean,aggregate=mean".to_owned(),
        };
        assert!(sig.ends_with(&want), "{sig}");
    }
    // SPIDEr-max is at least every single set's per-image SPIDEr.
    let v = multi_run(&[]);
    for (i, row) in v["per_image"].as_array().unwrap().iter().enumerate() {
        for a in &alone {
            assert!(
                row["SPIDEr"].as_f64().unwrap() >= a["per_image"][i]["SPIDEr"].as_f64().unwrap()
            );
        }
    }
}

#[test]
fn multi_candidate_errors_are_clear() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (refs, sets, multi) = three_candidate_sets(dir.path());
    // Repeated ids without the flag: the duplicate error points to it.
    let (ok, _, err) = run(&refs, &multi, &["--metrics", "bleu"]);
    assert!(!ok);
    assert!(
        err.contains("duplicate_image_id") && err.contains("--multi-candidate"),
        "{err}"
    );
    // Unequal counts per image.
    let mut uneven: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(&multi).unwrap()).unwrap();
    uneven.pop();
    let p = dir.path().join("uneven.json");
    std::fs::write(&p, Value::Array(uneven).to_string()).unwrap();
    let (ok, _, err) = run(&refs, &p, &["--metrics", "bleu", "--multi-candidate"]);
    assert!(
        !ok && err.contains("invalid_format") && err.contains("same number of candidates"),
        "{err}"
    );
    // A key that is not computed; bootstrap; --select without the flag.
    for (args, want) in [
        (
            &["--multi-candidate", "--select-by", "METEOR"][..],
            "not a computed score",
        ),
        (
            &["--multi-candidate", "--bootstrap", "10"][..],
            "not available",
        ),
        (&["--select", "mean"][..], "--multi-candidate"),
        (
            &[
                "--multi-candidate",
                "--select",
                "mean",
                "--select-by",
                "CIDEr",
            ][..],
            "only `max` selects by a score",
        ),
    ] {
        let mut a = vec!["--metrics", "bleu,cider_d"];
        a.extend(args);
        let (ok, _, err) = run(&refs, &multi, &a);
        assert!(!ok && err.contains(want), "{args:?}: {err}");
    }
    // One candidate per image through --multi-candidate: the per-image scores are the plain
    // run's; the aggregate is their mean (CIDEr-D's is a mean anyway).
    let (ok, plain, err) = run(&refs, &sets[0], &["--metrics", "cider_d"]);
    assert!(ok, "{err}");
    let (ok, one, err) = run(
        &refs,
        &sets[0],
        &["--metrics", "cider_d", "--multi-candidate"],
    );
    assert!(ok, "{err}");
    let (plain, one) = (json(&plain), json(&one));
    assert_eq!(plain["per_image"], one["per_image"]);
    // The same mean, summed in output order rather than evaluation order: equal to the last
    // bits.
    let (p, o) = (
        plain["aggregate"]["CIDEr"].as_f64().unwrap(),
        one["aggregate"]["CIDEr"].as_f64().unwrap(),
    );
    assert!((p - o).abs() <= 1e-12, "{p} {o}");
}
