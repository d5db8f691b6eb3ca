//! METEOR against the reference jar's outputs (fixtures in `tests/fixtures/meteor/`, copied from the
//! project's golden data).
//!
//! Tests marked "needs resources" load the METEOR cache from `$CAPSCORE_CACHE_DIR` (or the default
//! cache dir) and FAIL when it is missing: run `capscore fetch` first.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use capscore::metrics::meteor::{pooled_score, Meteor, MeteorError, SegmentStats};
use capscore::resources;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/meteor")
        .join(name)
}

/// Reads a fixture (gunzipping `.gz`), split on `\n` only (some lines hold U+000B, U+2028, ...).
fn lines(name: &str) -> Vec<String> {
    let bytes = std::fs::read(fixture(name)).unwrap_or_else(|e| panic!("fixture {name}: {e}"));
    let text = if name.ends_with(".gz") {
        let mut s = String::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_string(&mut s)
            .expect("gzip fixture");
        s
    } else {
        String::from_utf8(bytes).expect("UTF-8 fixture")
    };
    let mut v: Vec<String> = text.split('\n').map(str::to_string).collect();
    if v.last().is_some_and(|l| l.is_empty()) {
        v.pop();
    }
    v
}

fn meteor() -> &'static Meteor {
    static M: OnceLock<Meteor> = OnceLock::new();
    M.get_or_init(|| {
        let dir = resources::default_cache_dir();
        if !resources::load::meteor_ready(&dir) {
            panic!(
                "METEOR resources are missing in {}: run `capscore fetch` (or set \
                 CAPSCORE_CACHE_DIR to a cache that has them)",
                dir.display()
            );
        }
        resources::load::meteor(&dir).unwrap_or_else(|e| panic!("loading METEOR resources: {e}"))
    })
}

/// Java trim.
fn jtrim(s: &str) -> &str {
    s.trim_matches(|c: char| c <= '\u{20}')
}

/// Scores every `.in` line (`ref1 ||| … ||| hyp`) and compares with the `.stats` lines.
fn check_stats(input: &str, expected: &[String]) -> Vec<SegmentStats> {
    let m = meteor();
    let inp = lines(input);
    assert_eq!(inp.len(), expected.len(), "{input}: line counts");
    let mut out = Vec::new();
    let mut bad = 0;
    for (k, (line, exp)) in inp.iter().zip(expected).enumerate() {
        let mut fields: Vec<&str> = line.split("|||").map(jtrim).collect();
        let hyp = fields.pop().expect("hypothesis");
        let st = m.segment_fields(hyp, &fields).expect("scorable");
        let got = st.to_line();
        if &got != exp {
            bad += 1;
            if bad <= 5 {
                eprintln!("{input}:{}: {line}\n  jar:  {exp}\n  port: {got}", k + 1);
            }
        }
        out.push(st);
    }
    assert_eq!(bad, 0, "{input}: {bad} of {} stats lines differ", inp.len());
    out
}

/// Scores parsed `.stats` lines and pools them; compares with `.eval` (N scores + pooled) bitwise.
fn check_eval(stats_lines: &[String], eval: &[String], what: &str) {
    let stats: Vec<SegmentStats> = stats_lines
        .iter()
        .map(|l| SegmentStats::parse_line(l).expect("stats line"))
        .collect();
    assert_eq!(eval.len(), stats.len() + 1, "{what}: eval line count");
    let mut bad = 0;
    for (k, st) in stats.iter().enumerate() {
        let exp: f64 = eval[k].parse().expect("eval number");
        if st.score().to_bits() != exp.to_bits() {
            bad += 1;
            eprintln!("{what}:{}: jar {exp:?} port {:?}", k + 1, st.score());
        }
        assert_eq!(
            &st.to_line(),
            &stats_lines[k],
            "{what}: stats line round trip"
        );
    }
    assert_eq!(bad, 0, "{what}: {bad} segment scores differ");
    let exp: f64 = eval[stats.len()].parse().expect("pooled");
    let got = pooled_score(&stats);
    assert_eq!(
        got.to_bits(),
        exp.to_bits(),
        "{what}: pooled {got:?} vs jar {exp:?}"
    );
}

// ---------------------------------------------------------------- resource-free

#[test]
fn stems_match_the_jar_stemmer() {
    let st = rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English);
    for f in [
        "stem_caption_words.tsv.gz",
        "stem_edge.tsv.gz",
        "stem_wordlist.tsv.gz",
    ] {
        let mut n = 0;
        for l in lines(f) {
            let (w, s) = l.split_once('\t').expect("word<TAB>stem");
            assert_eq!(st.stem(w), s, "{f}: stem of {w:?}");
            n += 1;
        }
        assert!(n > 600, "{f}: only {n} rows");
    }
}

#[test]
fn eval_scores_and_pooled_examples5() {
    let out = lines("examples5.stdout");
    assert_eq!(out.len(), 11);
    check_eval(&out[..5], &out[5..], "examples5");
    assert_eq!(out[10], "0.3284795434441979");
}

#[test]
fn eval_scores_and_pooled_targeted() {
    check_eval(
        &lines("targeted.stats"),
        &lines("targeted.eval"),
        "targeted",
    );
}

#[test]
fn eval_scores_and_pooled_synthetic_20k() {
    check_eval(
        &lines("synthetic_20k.stats.gz"),
        &lines("synthetic_20k.eval.gz"),
        "synthetic_20k",
    );
}

#[test]
fn eval_scores_and_pooled_perturbed_5k() {
    check_eval(
        &lines("perturbed_5k.stats.gz"),
        &lines("perturbed_5k.eval.gz"),
        "perturbed_5k",
    );
}

/// Spec §13.2: with the table of the jar's `Math.pow` results, every per-segment score whose
/// `(chunks, matches)` lies in the table is the jar's; plain `f64::powf` is what
/// `pow_divergence.powf.eval` holds.
#[test]
fn pow_divergence_is_corrected_by_the_table() {
    let stats: Vec<SegmentStats> = lines("pow_divergence.stats")
        .iter()
        .map(|l| SegmentStats::parse_line(l).expect("stats"))
        .collect();
    let jar = lines("pow_divergence.eval");
    let powf = lines("pow_divergence.powf.eval");
    let mut jar_equal = 0;
    for (k, st) in stats.iter().enumerate() {
        let got = st.score();
        let j: f64 = jar[k].parse().expect("number");
        let p: f64 = powf[k].parse().expect("number");
        let v = st.values();
        let matches = v[21] + v[22];
        if matches <= 2000 {
            assert_eq!(
                got.to_bits(),
                j.to_bits(),
                "line {}: table must give the jar's",
                k + 1
            );
        } else {
            // Outside the table: f64::powf, the documented ≤ 2 ulp divergence.
            assert_eq!(got.to_bits(), p.to_bits(), "line {}", k + 1);
        }
        if got.to_bits() == j.to_bits() {
            jar_equal += 1;
        }
    }
    assert!(jar_equal >= 11, "{jar_equal} of 12 equal to the jar");
    let pooled = pooled_score(&stats);
    let exp: f64 = jar[stats.len()].parse().expect("pooled");
    assert_eq!(pooled.to_bits(), exp.to_bits());
}

#[test]
fn pow_table_covers_every_listed_pair() {
    // Every (c, S) of the jar-vs-glibc exception list: the segment score computed from a block with
    // that fragmentation must use the jar's pow. Checked through a synthetic stats block whose
    // score isolates pen: all words exact and content, c chunks, S/2 matches per side (S even), or
    // via the public score on the same ratio.
    for l in lines("pow_exceptions.tsv.gz") {
        let f: Vec<&str> = l.split('\t').collect();
        let c: u32 = f[0].parse().expect("c");
        let s: u32 = f[1].parse().expect("S");
        let java = f64::from_bits(u64::from_str_radix(f[2], 16).expect("bits"));
        let frag = c as f64 / (s as f64 / 2.0);
        assert_eq!(
            capscore::metrics::meteor::pow::pow_0_2(frag).to_bits(),
            java.to_bits(),
            "c={c} S={s}"
        );
    }
}

// ---------------------------------------------------------------- needs resources

#[test]
fn normaliser_vectors() {
    let m = meteor();
    for (i, o) in [
        ("norm_cases.in", "norm_cases.out"),
        ("norm_fuzz.in.gz", "norm_fuzz.out.gz"),
    ] {
        let ins = lines(i);
        let outs = lines(o);
        assert_eq!(ins.len(), outs.len());
        let mut bad = 0;
        for (k, (a, b)) in ins.iter().zip(&outs).enumerate() {
            let got = m.normalizer().normalize_lower(a);
            if &got != b {
                bad += 1;
                eprintln!("{i}:{}: {a:?}\n  jar:  {b:?}\n  port: {got:?}", k + 1);
            }
        }
        assert_eq!(bad, 0, "{i}: {bad} lines differ");
    }
}

#[test]
fn stats_examples5() {
    let out = lines("examples5.stdout");
    let stats = check_stats("examples5.in", &out[..5]);
    let pooled: f64 = out[10].parse().expect("pooled");
    assert_eq!(pooled_score(&stats).to_bits(), pooled.to_bits());
}

#[test]
fn stats_targeted() {
    let stats = check_stats("targeted.in", &lines("targeted.stats"));
    let eval = lines("targeted.eval");
    for (st, e) in stats.iter().zip(&eval) {
        assert_eq!(
            st.score().to_bits(),
            e.parse::<f64>().expect("num").to_bits()
        );
    }
    let p: f64 = eval[stats.len()].parse().expect("pooled");
    assert_eq!(pooled_score(&stats).to_bits(), p.to_bits());
}

#[test]
fn stats_synthetic_20k() {
    let stats = check_stats("synthetic_20k.in.gz", &lines("synthetic_20k.stats.gz"));
    let eval = lines("synthetic_20k.eval.gz");
    let p: f64 = eval[stats.len()].parse().expect("pooled");
    assert_eq!(pooled_score(&stats).to_bits(), p.to_bits());
    assert_eq!(pooled_score(&stats), 0.15615328585575333);
}

#[test]
fn stats_perturbed_5k() {
    let stats = check_stats("perturbed_5k.in.gz", &lines("perturbed_5k.stats.gz"));
    let eval = lines("perturbed_5k.eval.gz");
    let p: f64 = eval[stats.len()].parse().expect("pooled");
    assert_eq!(pooled_score(&stats).to_bits(), p.to_bits());
}

#[test]
fn stats_long_captions() {
    let stats = check_stats("long.in.gz", &lines("long.stats.gz"));
    let eval = lines("long.eval.gz");
    for (st, e) in stats.iter().zip(&eval) {
        assert_eq!(
            st.score().to_bits(),
            e.parse::<f64>().expect("num").to_bits()
        );
    }
    let p: f64 = eval[stats.len()].parse().expect("pooled");
    assert_eq!(pooled_score(&stats).to_bits(), p.to_bits());
}

#[test]
fn segment_api_sanitises_like_pycocoevalcap() {
    let m = meteor();
    // The hypothesis loses its `|||`; a reference with `|||` becomes two references.
    let a = m
        .segment("a cat ||| on a mat", &["a cat on a mat"])
        .expect("ok");
    let b = m
        .segment("a cat  on a mat", &["a cat on a mat"])
        .expect("ok");
    assert_eq!(a, b);
    assert_eq!(a.score(), 1.0);
    let two = m.segment("a dog", &["a cat ||| a dog"]).expect("ok");
    assert_eq!(two.score(), 1.0);
    // Newlines, carriage returns and any Unicode just score.
    let nl = m
        .segment("a cat\non a\rmat", &["a cat on a mat"])
        .expect("ok");
    assert_eq!(nl.score(), 1.0);
    let uni = m
        .segment("\u{1F600} caf\u{e9} \u{2028} \u{0}", &["ΟΔΟΣ x"])
        .expect("ok");
    assert_eq!(uni.values()[1], 5);
    // Errors instead of panics.
    assert_eq!(m.segment_fields("a", &[]), Err(MeteorError::NoReferences));
    // pycocoevalcap with no reference sends `SCORE |||  ||| a`: one empty reference.
    let none = m.segment("a", &[]).expect("ok");
    assert_eq!(none, m.segment_fields("a", &[""]).expect("ok"));
    assert_eq!(none.score(), 0.0);
    let long = "a ".repeat(600);
    assert!(matches!(
        m.segment(&long, &["a"]),
        Err(MeteorError::TooLong { .. })
    ));
    let huge = "x".repeat(70_000);
    assert!(matches!(
        m.segment("a", &[&huge]),
        Err(MeteorError::TooLong { .. })
    ));
    // Empty everything.
    let e = m.segment("", &[""]).expect("ok");
    assert_eq!(e.score(), 0.0);
    assert_eq!(
        e.to_line(),
        "0.0 0.0 0.0 0.0 0.0 0.0 0.0 0.0 0.0 0.0 0.0 0.0 0.0 0.0 0.0 0.0 0.0 0.0 0.0 0.0 0.0 0.0 0.0"
    );
}

#[test]
fn meteor_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Meteor>();
    assert_send_sync::<SegmentStats>();
}

#[test]
fn fetch_refuses_a_corrupted_wheel() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let wheels = tmp.path().join("wheels");
    std::fs::create_dir_all(&wheels).expect("mkdir");
    std::fs::write(wheels.join(resources::WHEEL_NAME), b"not the wheel").expect("write");
    let opts = resources::fetch::FetchOptions {
        wheel_dir: Some(wheels),
        python: PathBuf::from("python3"),
        allow_download: false,
        on_step: None,
    };
    let cache = tmp.path().join("cache");
    match resources::fetch::meteor_with(&cache, &opts) {
        Err(resources::ResourceError::Verify { expected, .. }) => {
            assert_eq!(expected, resources::WHEEL_SHA256)
        }
        other => panic!("expected a verification error, got {other:?}"),
    }
    assert!(!resources::load::meteor_ready(&cache));
    // Nothing to load: the error names what is missing.
    let err = resources::load::meteor(&cache).expect_err("must fail");
    assert!(err.to_string().contains("capscore fetch"), "{err}");
}

#[test]
fn fetch_is_idempotent_on_a_ready_cache() {
    let dir = resources::default_cache_dir();
    assert!(
        resources::load::meteor_ready(&dir),
        "METEOR resources are missing in {}: run `capscore fetch`",
        dir.display()
    );
    let opts = resources::fetch::FetchOptions {
        wheel_dir: None,
        python: PathBuf::from("/nonexistent/python"),
        allow_download: false,
        on_step: None,
    };
    let rep = resources::fetch::meteor_with(&dir, &opts).expect("ready cache needs no work");
    assert!(rep.already_present);
    assert_eq!(rep.files.len(), resources::JAR_FILES.len() + 1);
}

#[test]
fn a_cache_with_a_damaged_file_is_not_ready() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join(resources::METEOR_SUBDIR);
    std::fs::create_dir_all(&dir).expect("mkdir");
    let mut files = Vec::new();
    for (_, name, sha) in resources::JAR_FILES {
        std::fs::write(dir.join(name), b"x").expect("write");
        files.push(resources::ManifestEntry {
            file: name.into(),
            bytes: 1,
            sha256: sha.into(),
            source: "test".into(),
        });
    }
    std::fs::write(dir.join("paraphrase-en.bin"), b"CSMPARA1").expect("write");
    files.push(resources::ManifestEntry {
        file: "paraphrase-en.bin".into(),
        bytes: 8,
        sha256: "0".repeat(64),
        source: "test".into(),
    });
    let manifest = resources::Manifest {
        version: 1,
        wheel_sha256: resources::WHEEL_SHA256.into(),
        files,
    };
    std::fs::write(
        dir.join(resources::MANIFEST_FILE),
        serde_json::to_string(&manifest).expect("json"),
    )
    .expect("write");
    assert!(resources::load::meteor_ready(tmp.path()));
    // Full verification catches the wrong content ...
    assert!(matches!(
        resources::load::verify_meteor(tmp.path()),
        Err(resources::ResourceError::Verify { .. })
    ));
    // ... and a truncated file is not even "ready".
    std::fs::write(dir.join("english.words"), b"").expect("write");
    assert!(!resources::load::meteor_ready(tmp.path()));
    // A malformed table is reported, not a panic.
    std::fs::write(dir.join("english.words"), b"x").expect("write");
    let err = resources::load::meteor(tmp.path()).expect_err("malformed");
    assert!(
        matches!(err, resources::ResourceError::Format { .. }),
        "{err}"
    );
}

/// Each scoring thread empties its token cache when it would exceed 65,536 tokens, which can
/// happen between two sentences of one segment; token indices are then reused, and the
/// per-segment word-match memo (keyed by them) must not be used. Scores must not depend on where
/// that happens: each segment is scored once on a fresh thread (its words get the first cache
/// indices), then the cache is filled with other words up to a level that makes it empty itself
/// before one of the segment's sentences, and the segment is scored again.
#[test]
fn token_cache_clearing_inside_a_segment_changes_nothing() {
    const CACHE_MAX: usize = 1 << 16;
    let m = meteor();
    let tokens = |s: &str| -> Vec<String> {
        m.normalizer()
            .normalize(jtrim(s))
            .to_lowercase()
            .split_ascii_whitespace()
            .map(str::to_string)
            .collect()
    };
    let mut cleared_between_references = 0;
    for line in lines("synthetic_20k.in.gz").iter().take(12) {
        let mut fields: Vec<&str> = line.split("|||").map(jtrim).collect();
        let hyp = fields.pop().expect("hypothesis");
        let refs = fields;
        let sentences: Vec<Vec<String>> = std::iter::once(hyp)
            .chain(refs.iter().copied())
            .map(tokens)
            .collect();
        let distinct: std::collections::BTreeSet<&String> = sentences.iter().flatten().collect();
        let lengths: std::collections::BTreeSet<usize> = sentences.iter().map(Vec::len).collect();
        // With `room` free places, the first sentence longer than `room` empties the cache.
        for &room in &lengths {
            let Some(k) = sentences.iter().position(|s| s.len() > room) else {
                continue;
            };
            if k >= 2 {
                cleared_between_references += 1;
            }
            // The filler segment adds "zq0" and the words zq1..zq{fill}.
            let fill = CACHE_MAX - room - distinct.len() - 1;
            let (cold, again) = std::thread::scope(|s| {
                s.spawn(|| {
                    let cold = m.segment_fields(hyp, &refs).expect("scorable");
                    let words: Vec<String> = (1..=fill).map(|k| format!("zq{k}")).collect();
                    let filler: Vec<String> = words.chunks(500).map(|c| c.join(" ")).collect();
                    let filler: Vec<&str> = filler.iter().map(String::as_str).collect();
                    m.segment_fields("zq0", &filler).expect("filler scorable");
                    (cold, m.segment_fields(hyp, &refs).expect("scorable"))
                })
                .join()
                .expect("no panic")
            });
            assert_eq!(again, cold, "cleared before sentence {k}: {line:?}");
        }
    }
    assert!(
        cleared_between_references >= 6,
        "{cleared_between_references}"
    );
}

/// The first reference (by index) with the highest score, from every reference searched: the
/// jar's rule.
fn first_best(all: &[(f64, SegmentStats)]) -> SegmentStats {
    let mut best: Option<(f64, SegmentStats)> = None;
    for &(_, st) in all {
        if best.is_none_or(|(b, _)| st.score() > b) {
            best = Some((st.score(), st));
        }
    }
    best.expect("at least one reference").1
}

/// The score bound that lets a segment skip the search of a reference that cannot win is never
/// below the reference's real score, on every fixture segment; the skipping result is the
/// first best reference of the full computation; and most searches are in fact skipped (else
/// the bound would be dead weight).
#[test]
fn score_bounds_hold_and_skip_searches() {
    let m = meteor();
    let (mut refs_seen, mut searched) = (0u64, 0u64);
    for input in [
        "targeted.in",
        "examples5.in",
        "long.in.gz",
        "perturbed_5k.in.gz",
        "synthetic_20k.in.gz",
    ] {
        for (k, line) in lines(input).iter().enumerate() {
            let mut fields: Vec<&str> = line.split("|||").map(jtrim).collect();
            let hyp = fields.pop().expect("hypothesis");
            let all = m.reference_bounds(hyp, &fields).expect("scorable");
            for (r, &(bound, st)) in all.iter().enumerate() {
                let score = st.score();
                assert!(
                    bound >= score,
                    "{input}:{}: reference {r}: bound {bound:?} < score {score:?}",
                    k + 1
                );
            }
            let before = Meteor::searches_on_this_thread();
            let got = m.segment_fields(hyp, &fields).expect("scorable");
            searched += Meteor::searches_on_this_thread() - before;
            refs_seen += all.len() as u64;
            assert_eq!(got, first_best(&all), "{input}:{}", k + 1);
        }
    }
    assert!(
        searched * 2 < refs_seen,
        "{searched} searches for {refs_seen} references"
    );
}

/// Ties go to the first reference whatever order the bounds put the searches in: empty and
/// all-zero cases, duplicated references, and the fixture's references followed by the same
/// references reversed (every score then ties with a later copy).
#[test]
fn ties_go_to_the_first_reference() {
    let m = meteor();
    let check = |hyp: &str, refs: &[&str]| {
        let all = m.reference_bounds(hyp, refs).expect("scorable");
        assert_eq!(
            m.segment_fields(hyp, refs).expect("scorable"),
            first_best(&all),
            "{hyp:?} vs {refs:?}"
        );
    };
    check("a", &["b", "a", "a"]);
    check("", &["", "a"]);
    check("a", &["b", "c"]);
    check("a", &["", "b", "a", "a"]);
    check(
        "a cat sits",
        &["a dog sits", "a cat sat", "a dog sits", "a cat sat"],
    );
    // The second reference has the higher bound (so it is searched first) and the same score
    // with other statistics: the first must still win.
    check(
        "several big guy standing",
        &[
            "some big children parked near many train on a city street!",
            "a group of big baby stands on the black pizza on a sunny day",
        ],
    );
    check(
        "A young cat",
        &[
            "a black person standing on the brown truck on the beach",
            "a couple of small giraffes throwing three big laptop",
        ],
    );
    for line in lines("synthetic_20k.in.gz").iter().take(500) {
        let mut refs: Vec<&str> = line.split("|||").map(jtrim).collect();
        let hyp = refs.pop().expect("hypothesis");
        let reversed: Vec<&str> = refs.iter().rev().copied().collect();
        refs.extend(reversed);
        check(hyp, &refs);
    }
}

/// The progress hook (issue 25): METEOR reports once per image and SPICE once per parser
/// batch, each stage first with 0 done, its counts distinct and the last the stage's total
/// (SPICE: candidates and reference captions, a repeated caption counted each time it
/// occurs); the report is the same without the hook.
#[test]
fn progress_counts_meteor_images_and_spice_captions() {
    use capscore::engine::{self, Metric, Options, Progress, Stage};
    let dir = resources::default_cache_dir();
    let spice = resources::load::spice_standalone(&dir)
        .unwrap_or_else(|e| panic!("SPICE data missing in {} ({e})", dir.display()));
    let refs = serde_json::json!({
        "1": ["A dog runs on the grass.", "A brown dog running in a park."],
        "2": ["A cat sleeps on a sofa.", "A grey cat lying on a couch."],
        "3": ["A man surfing on a wave.", "A cat sleeps on a sofa."],
    });
    let cands = serde_json::json!([
        {"image_id": 1, "caption": "a dog running on the grass"},
        {"image_id": 2, "caption": "a cat on a sofa"},
        {"image_id": 3, "caption": "a cat on a sofa"},
    ]);
    let metrics = [Metric::Meteor, Metric::Spice];
    let seen = std::sync::Mutex::new(Vec::new());
    let hook = |p: Progress| seen.lock().expect("lock").push(p);
    let score_with = |progress: Option<&(dyn Fn(Progress) + Sync)>| {
        let job = engine::Job {
            candidates: capscore::input::parse_candidates(&cands).expect("cands"),
            references: engine::Refs::Owned(
                capscore::input::parse_references(&refs).expect("refs"),
            ),
            kind: engine::Kind::Plain,
            options: Options {
                meteor: Some(meteor()),
                spice: Some(&spice),
                progress,
                ..Options::new(&metrics)
            },
        };
        let report = engine::run(job)
            .expect("run")
            .into_report()
            .expect("report");
        serde_json::to_string(&report).expect("json")
    };
    assert_eq!(score_with(Some(&hook)), score_with(None));
    let seen = seen.into_inner().expect("lock");
    for (stage, total) in [(Stage::Meteor, 3), (Stage::Spice, 3 + 6)] {
        let calls: Vec<&Progress> = seen.iter().filter(|p| p.stage == stage).collect();
        assert_eq!(
            calls.first().map(|p| p.done),
            Some(0),
            "{stage:?}: {seen:?}"
        );
        assert!(
            calls.iter().all(|p| p.total == total),
            "{stage:?}: {seen:?}"
        );
        let mut done: Vec<usize> = calls.iter().map(|p| p.done).collect();
        done.sort_unstable();
        done.dedup();
        assert_eq!(
            done.len(),
            calls.len(),
            "{stage:?}: repeated counts {seen:?}"
        );
        assert_eq!(done.last(), Some(&total), "{stage:?}: {seen:?}");
    }
    let meteor_calls = seen.iter().filter(|p| p.stage == Stage::Meteor).count();
    assert_eq!(
        meteor_calls, 4,
        "one call per image and the start: {seen:?}"
    );
}
