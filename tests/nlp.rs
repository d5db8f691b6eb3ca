//! The native tagger/parser against the oracle: Python spaCy 3.8.18 with the same
//! en_core_web_sm 3.8.0 wheel, fed pre-tokenized words (`tests/fixtures/nlp/README.md`).
//!
//! Needs the converted model in the cache (`capscore fetch`; `$CAPSCORE_CACHE_DIR` or the
//! default cache folder). A missing model fails these tests: it is never skipped.

use std::io::BufRead;
use std::path::Path;

use capscore::nlp::Nlp;
use proptest::prelude::*;

fn nlp() -> &'static Nlp {
    static NLP: std::sync::OnceLock<Nlp> = std::sync::OnceLock::new();
    NLP.get_or_init(|| {
        let dir = capscore::resources::default_cache_dir();
        capscore::resources::load::nlp(&dir)
            .unwrap_or_else(|e| panic!("the parser model is required (run `capscore fetch`): {e}"))
    })
}

#[derive(serde::Deserialize)]
struct Oracle {
    words: Vec<String>,
    tags: Vec<String>,
    pos: Vec<String>,
    heads: Vec<usize>,
    deps: Vec<String>,
    sent_starts: Vec<usize>,
}

fn load(name: &str) -> Vec<Oracle> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/nlp")
        .join(name);
    let f = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    std::io::BufReader::new(flate2::read::GzDecoder::new(f))
        .lines()
        .map(|l| serde_json::from_str(&l.expect("line")).expect("json"))
        .collect()
}

#[derive(Default, Debug)]
struct Agreement {
    captions: usize,
    tokens: usize,
    tag: usize,
    pos: usize,
    head: usize,
    dep: usize,
    all: usize,
    captions_exact: usize,
    sent_starts: usize,
}

impl Agreement {
    fn pct(&self, n: usize) -> f64 {
        100.0 * n as f64 / self.tokens as f64
    }
}

fn agreement(name: &str) -> Agreement {
    let oracle = load(name);
    let docs: Vec<Vec<&str>> = oracle
        .iter()
        .map(|o| o.words.iter().map(String::as_str).collect())
        .collect();
    let parsed = nlp().parse_batch(&docs);
    let mut a = Agreement::default();
    let mut shown = 0;
    for (o, p) in oracle.iter().zip(&parsed) {
        assert_eq!(o.words.len(), p.len());
        a.captions += 1;
        let mut exact = true;
        for (i, t) in p.iter().enumerate() {
            a.tokens += 1;
            let (tg, ps, hd, dp) = (
                t.tag == o.tags[i],
                t.pos == o.pos[i],
                t.head == o.heads[i],
                t.dep == o.deps[i],
            );
            a.tag += tg as usize;
            a.pos += ps as usize;
            a.head += hd as usize;
            a.dep += dp as usize;
            a.all += (tg && ps && hd && dp) as usize;
            exact &= tg && ps && hd && dp;
        }
        let heads: Vec<usize> = p.iter().map(|t| t.head).collect();
        a.sent_starts += (capscore::nlp::parser::sentence_starts(&heads) == o.sent_starts) as usize;
        a.captions_exact += exact as usize;
        if !exact && shown < 5 {
            shown += 1;
            eprintln!("{name}: differs: {}", o.words.join(" "));
            for (i, t) in p.iter().enumerate() {
                eprintln!(
                    "  {:>2} {:<12} {:<5}{:<5} {:<6}{:<6} {:>2}/{:<2} {}/{}",
                    i,
                    t.text,
                    t.tag,
                    o.tags[i],
                    t.pos,
                    o.pos[i],
                    t.head,
                    o.heads[i],
                    t.dep,
                    o.deps[i]
                );
            }
        }
    }
    eprintln!(
        "{name}: {} captions, {} tokens: tag {:.3}%, pos {:.3}%, head {:.3}%, dep {:.3}%, all four {:.3}%; captions identical {}/{}; sentence starts {}/{}",
        a.captions,
        a.tokens,
        a.pct(a.tag),
        a.pct(a.pos),
        a.pct(a.head),
        a.pct(a.dep),
        a.pct(a.all),
        a.captions_exact,
        a.captions,
        a.sent_starts,
        a.captions
    );
    a
}

fn check(name: &str) {
    let a = agreement(name);
    assert!(a.captions > 0);
    for (what, n) in [
        ("tag", a.tag),
        ("pos", a.pos),
        ("head", a.head),
        ("dep", a.dep),
    ] {
        assert!(
            a.pct(n) >= 99.5,
            "{name}: {what} agreement {:.3}% is below 99.5%",
            a.pct(n)
        );
    }
}

#[test]
fn coco_5000_captions_match_spacy() {
    check("oracle_coco.jsonl.gz");
}

#[test]
fn flickr8k_pycocoevalcap_form_matches_spacy() {
    check("oracle_flickr8k_ptb.jsonl.gz");
}

#[test]
fn flickr8k_raw_form_matches_spacy() {
    check("oracle_flickr8k_raw.jsonl.gz");
}

#[test]
fn batching_and_threads_do_not_change_results() {
    let oracle = load("oracle_coco.jsonl.gz");
    let docs: Vec<Vec<&str>> = oracle
        .iter()
        .take(300)
        .map(|o| o.words.iter().map(String::as_str).collect())
        .collect();
    let all = nlp().parse_batch(&docs);
    let one: Vec<_> = docs.iter().map(|d| nlp().parse(d)).collect();
    assert_eq!(all, one);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let serial = pool.install(|| nlp().parse_batch(&docs));
    assert_eq!(all, serial);
}

#[test]
fn empty_and_long_inputs() {
    assert!(nlp().parse(&[]).is_empty());
    let long: Vec<&str> = ["a", "dog", "runs", "on", "the", "grass", "and"]
        .iter()
        .cycle()
        .take(500)
        .copied()
        .collect();
    let p = nlp().parse(&long);
    assert_eq!(p.len(), 500);
    for (i, t) in p.iter().enumerate() {
        assert!(t.head < 500, "token {i} head {}", t.head);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn any_token_sequence_parses_into_a_forest(words in proptest::collection::vec("\\PC{1,12}", 0..60)) {
        let docs: Vec<&str> = words.iter().map(String::as_str).collect();
        let p = nlp().parse(&docs);
        prop_assert_eq!(p.len(), docs.len());
        for t in &p {
            prop_assert!(t.head < docs.len());
            prop_assert!(!t.tag.is_empty());
            prop_assert!(!t.dep.is_empty());
        }
        // Every token reaches a root (no cycles).
        for start in 0..p.len() {
            let mut x = start;
            let mut steps = 0;
            while p[x].head != x {
                x = p[x].head;
                steps += 1;
                prop_assert!(steps <= p.len(), "cycle through token {}", start);
            }
        }
    }
}
