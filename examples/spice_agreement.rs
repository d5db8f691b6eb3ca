//! Agreement of capscore's SPICE front end (spaCy parse -> [`convert`] -> tuples) with the
//! official SPICE 1.0 parser output, on the golden data of `shared/golden/spice/`.
//!
//! ```text
//! spice_agreement PARSES.jsonl raw|ptb [SHARED_DIR] [--show-vg N] [--show-items N] [--show-cands N] [--debug TEXT] [--lemma-check TSV]
//! ```
//!
//! `PARSES.jsonl` comes from `scripts/spice-frontend-dev.py` (spaCy parses keyed by the
//! space-joined words); the form says how a golden text becomes words: `raw` splits on
//! whitespace, `ptb` runs capscore's pycocoevalcap tokenizer (lowercased, punctuation
//! removed; spec SPICE §2). Lemma exceptions and synonym data are read from
//! `$CAPSCORE_CACHE_DIR` (`nlp/lemma_exc.tsv`, METEOR's `english.synsets`/`.exceptions`).
//!
//! Reports, for the Visual Genome phrases, precision/recall of our relation and attribute
//! tuples against the official ones (after within-phrase scene-graph merging, as the
//! golden rendering shows them); for Flickr8k-Expert, the full scoring half per item
//! (references merged), compared with the official per-item scores and the expert ratings.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use capscore::metrics::meteor::synonyms::Synonyms;
use capscore::metrics::spice::convert::{convert, SpacyToken};
use capscore::metrics::spice::lemma::Lemmatizer;
use capscore::metrics::spice::{image_score_tuples, tuples_of, GraphTuple, SceneGraph, Tuple};
use serde_json::Value;

struct Ctx {
    parses: HashMap<String, Vec<SpacyToken>>,
    lemmas: Lemmatizer,
    ptb: bool,
    missing: std::cell::Cell<usize>,
}

impl Ctx {
    fn words(&self, text: &str) -> Vec<String> {
        if self.ptb {
            capscore::text::ptb::tokenize_one(text, None)
                .split(' ')
                .filter(|w| !w.is_empty())
                .map(str::to_string)
                .collect()
        } else {
            text.split_whitespace().map(str::to_string).collect()
        }
    }

    fn tuples(&self, text: &str) -> Vec<Tuple> {
        let words = self.words(text);
        if words.is_empty() {
            return Vec::new();
        }
        let Some(parse) = self.parses.get(&words.join(" ")) else {
            if self.missing.get() < 5 {
                eprintln!("no parse for: {}", words.join(" "));
            }
            self.missing.set(self.missing.get() + 1);
            return Vec::new();
        };
        tuples_of(&convert(parse, &self.lemmas)).expect("valid sentences")
    }
}

fn load_parses(path: &str) -> HashMap<String, Vec<SpacyToken>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut out = HashMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).expect("json");
        let arr = |k: &str| v[k].as_array().unwrap_or_else(|| panic!("{k}")).clone();
        let (words, tags, heads, deps) = (arr("words"), arr("tags"), arr("heads"), arr("deps"));
        let toks: Vec<SpacyToken> = (0..words.len())
            .map(|i| SpacyToken {
                word: words[i].as_str().unwrap().to_string(),
                tag: tags[i].as_str().unwrap().to_string(),
                head: heads[i].as_u64().unwrap() as usize,
                dep: deps[i].as_str().unwrap().to_string(),
            })
            .collect();
        let key = toks
            .iter()
            .map(|t| t.word.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        out.insert(key, toks);
    }
    out
}

fn read_jsonl(path: PathBuf) -> Vec<Value> {
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect()
}

/// A concept as a `/`-joined sorted string set (the golden rendering's order is arbitrary).
fn norm(s: &str) -> String {
    let mut v: Vec<&str> = s.split('/').collect();
    v.sort_unstable();
    v.join("/")
}

#[derive(Default)]
struct Pr {
    tp: usize,
    ours: usize,
    gold: usize,
}

impl Pr {
    fn line(&self, name: &str) -> String {
        let p = self.tp as f64 / self.ours.max(1) as f64;
        let r = self.tp as f64 / self.gold.max(1) as f64;
        let f = if p + r > 0.0 {
            2.0 * p * r / (p + r)
        } else {
            0.0
        };
        format!(
            "{name:<11} ours {:>5}  official {:>5}  matched {:>5}  P {p:.3}  R {r:.3}  F {f:.3}",
            self.ours, self.gold, self.tp
        )
    }
}

fn vg_report(ctx: &Ctx, shared: &str, syn: &Synonyms, show: usize) {
    let rows = read_jsonl(PathBuf::from(shared).join("golden/spice/vg_phrases_spice_tuples.jsonl"));
    let (mut rel, mut att, mut obj) = (Pr::default(), Pr::default(), Pr::default());
    let mut exact = 0usize;
    let mut missed_rel: BTreeMap<String, usize> = BTreeMap::new();
    let mut extra_rel: BTreeMap<String, usize> = BTreeMap::new();
    let mut shown = 0;
    for row in &rows {
        let phrase = row["phrase"].as_str().unwrap();
        let g = SceneGraph::from_tuples([ctx.tuples(phrase).as_slice()], syn, true);
        let mut ours_r: Vec<String> = Vec::new();
        let mut ours_a: Vec<String> = Vec::new();
        let mut ours_o: Vec<String> = Vec::new();
        for t in g.tuples() {
            let c: Vec<String> = t.concepts().iter().map(|c| c.printed()).collect();
            match t {
                GraphTuple::Relation(..) => ours_r.push(c.join(" , ")),
                GraphTuple::Attribute(..) => ours_a.push(c.join(" , ")),
                GraphTuple::Object(..) => ours_o.push(c[0].clone()),
            }
        }
        let gold = |k: &str| -> Vec<String> {
            row[k]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| match t {
                    Value::Array(a) => a
                        .iter()
                        .map(|x| norm(x.as_str().unwrap()))
                        .collect::<Vec<_>>()
                        .join(" , "),
                    x => norm(x.as_str().unwrap()),
                })
                .collect()
        };
        let (gr, ga, go) = (gold("relations"), gold("attributes"), gold("objects"));
        let mut same = true;
        for (ours, gold, pr) in [(&ours_r, &gr, &mut rel), (&ours_a, &ga, &mut att)] {
            pr.ours += ours.len();
            pr.gold += gold.len();
            pr.tp += ours.iter().filter(|x| gold.contains(x)).count();
            same &= ours.len() == gold.len() && ours.iter().all(|x| gold.contains(x));
        }
        for x in gr.iter().filter(|x| !ours_r.contains(x)) {
            *missed_rel
                .entry(x.split(" , ").nth(1).unwrap().to_string())
                .or_default() += 1;
        }
        for x in ours_r.iter().filter(|x| !gr.contains(x)) {
            *extra_rel
                .entry(x.split(" , ").nth(1).unwrap().to_string())
                .or_default() += 1;
        }
        if gr.is_empty() && ga.is_empty() {
            // Objects are listed only when the official graph has no relation/attribute.
            obj.gold += go.len();
            obj.ours += ours_o.len();
            obj.tp += ours_o.iter().filter(|x| go.contains(x)).count();
            same &= ours_r.is_empty() && ours_a.is_empty();
        }
        if same {
            exact += 1;
        } else if shown < show {
            shown += 1;
            println!("  VG  {phrase}");
            println!("      official: {}", row["rendered"].as_str().unwrap());
            println!("      ours:     rel {ours_r:?} att {ours_a:?}");
        }
    }
    println!("Visual Genome phrases ({} phrases)", rows.len());
    println!("  {}", rel.line("relations"));
    println!("  {}", att.line("attributes"));
    println!("  {}", obj.line("objects*"));
    println!("  (* only phrases whose official graph has no relation and no attribute)");
    println!(
        "  phrases with identical relations and attributes: {exact} ({:.1}%)",
        100.0 * exact as f64 / rows.len() as f64
    );
    let top = |m: &BTreeMap<String, usize>| {
        let mut v: Vec<(&String, &usize)> = m.iter().collect();
        v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        v.iter()
            .take(15)
            .map(|(k, n)| format!("{k}:{n}"))
            .collect::<Vec<_>>()
            .join("  ")
    };
    println!(
        "  official relations we miss, by label: {}",
        top(&missed_rel)
    );
    println!(
        "  our relations not official, by label: {}",
        top(&extra_rel)
    );
}

fn pearson(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    sxy / (sxx * syy).sqrt()
}

/// Kendall tau-b and tau-c (scipy's definitions).
fn kendall(x: &[f64], y: &[f64]) -> (f64, f64) {
    let n = x.len();
    let (mut c, mut d, mut tx, mut ty) = (0f64, 0f64, 0f64, 0f64);
    for i in 0..n {
        for j in i + 1..n {
            let dx = x[i].partial_cmp(&x[j]).unwrap();
            let dy = y[i].partial_cmp(&y[j]).unwrap();
            use std::cmp::Ordering::Equal;
            match (dx, dy) {
                (Equal, Equal) => {
                    tx += 1.0;
                    ty += 1.0;
                }
                (Equal, _) => tx += 1.0,
                (_, Equal) => ty += 1.0,
                (a, b) if a == b => c += 1.0,
                _ => d += 1.0,
            }
        }
    }
    let n0 = (n * (n - 1) / 2) as f64;
    let tau_b = (c - d) / ((n0 - tx) * (n0 - ty)).sqrt();
    let distinct = |v: &[f64]| {
        let mut s: Vec<f64> = v.to_vec();
        s.sort_by(|a, b| a.partial_cmp(b).unwrap());
        s.dedup();
        s.len() as f64
    };
    let m = distinct(x).min(distinct(y));
    let nf = n as f64;
    let tau_c = 2.0 * (c - d) / (nf * nf * (m - 1.0) / m);
    (tau_b, tau_c)
}

fn flickr_report(ctx: &Ctx, shared: &str, syn: &Synonyms, show: usize, show_cands: usize) {
    let rows = read_jsonl(PathBuf::from(shared).join("golden/spice/flickr8k_dev.jsonl"));
    let mut cache: HashMap<String, Vec<Tuple>> = HashMap::new();
    let mut tuples = |t: &str| -> Vec<Tuple> {
        cache
            .entry(t.to_string())
            .or_insert_with(|| ctx.tuples(t))
            .clone()
    };
    let (mut ours_f, mut off_f) = (Vec::new(), Vec::new());
    let (mut same_counts, mut same_sizes) = (0usize, 0usize);
    let (mut same_cand, mut same_ref) = (0usize, 0usize);
    let (mut cand_n, mut ref_n) = ((0i64, 0i64), (0i64, 0i64));
    let (mut rating_ours, mut rating_off, mut ratings) = (Vec::new(), Vec::new(), Vec::new());
    let mut diffs: Vec<(f64, String)> = Vec::new();
    let mut cand_shown = 0usize;
    for row in &rows {
        let cand = tuples(row["candidate"].as_str().unwrap());
        let refs: Vec<Vec<Tuple>> = row["refs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| tuples(r.as_str().unwrap()))
            .collect();
        let s = image_score_tuples(&cand, &refs, syn, true, false);
        let (tp, fp, fn_) = (
            row["tp"].as_i64().unwrap(),
            row["fp"].as_i64().unwrap(),
            row["fn"].as_i64().unwrap(),
        );
        let f = s.all.f.unwrap();
        let of = row["f"].as_f64().unwrap();
        ours_f.push(f);
        off_f.push(of);
        if (s.all.tp, s.all.fp, s.all.fn_) == (tp, fp, fn_) {
            same_counts += 1;
        }
        let (ct, rt) = (s.all.tp + s.all.fp, s.all.tp + s.all.fn_);
        if ct != tp + fp && cand_shown < show_cands {
            cand_shown += 1;
            let g = SceneGraph::from_tuples([cand.as_slice()], syn, true);
            let shown: Vec<String> = g
                .tuples()
                .iter()
                .map(|t| {
                    let c: Vec<String> = t.concepts().iter().map(|c| c.printed()).collect();
                    format!("({})", c.join(", "))
                })
                .collect();
            println!(
                "  CAND {}  ours {ct} official {}: {}",
                row["candidate"].as_str().unwrap(),
                tp + fp,
                shown.join(" ")
            );
        }
        if ct == tp + fp && rt == tp + fn_ {
            same_sizes += 1;
        }
        same_cand += usize::from(ct == tp + fp);
        same_ref += usize::from(rt == tp + fn_);
        cand_n.0 += ct;
        cand_n.1 += tp + fp;
        ref_n.0 += rt;
        ref_n.1 += tp + fn_;
        for r in row["expert_ratings"].as_array().unwrap() {
            ratings.push(r.as_f64().unwrap());
            rating_ours.push(f);
            rating_off.push(of);
        }
        diffs.push((
            (f - of).abs(),
            format!(
                "{}  ours tp/fp/fn {}/{}/{} F {f:.3}  official {tp}/{fp}/{fn_} F {of:.3}",
                row["candidate"].as_str().unwrap(),
                s.all.tp,
                s.all.fp,
                s.all.fn_
            ),
        ));
    }
    let n = rows.len() as f64;
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (tb, _) = kendall(&ours_f, &off_f);
    let (_, tc_ours) = kendall(&rating_ours, &ratings);
    let (_, tc_off) = kendall(&rating_off, &ratings);
    let mad = ours_f
        .iter()
        .zip(&off_f)
        .map(|(a, b)| (a - b).abs())
        .sum::<f64>()
        / n;
    println!(
        "Flickr8k-Expert ({} items, {} ratings)",
        rows.len(),
        ratings.len()
    );
    println!(
        "  Pearson(our F, official F)      {:.4}",
        pearson(&ours_f, &off_f)
    );
    println!("  Kendall tau-b(ours, official)   {tb:.4}");
    println!(
        "  mean F ours {:.6}  official {:.6}  (diff {:+.6}); mean |F diff| {mad:.4}",
        mean(&ours_f),
        mean(&off_f),
        mean(&ours_f) - mean(&off_f)
    );
    println!(
        "  items with identical tp/fp/fn    {same_counts} ({:.1}%)",
        100.0 * same_counts as f64 / n
    );
    println!(
        "  items with identical tuple counts {same_sizes} ({:.1}%)",
        100.0 * same_sizes as f64 / n
    );
    println!(
        "  items with the official candidate tuple count {same_cand} ({:.1}%), reference count {same_ref} ({:.1}%)",
        100.0 * same_cand as f64 / n,
        100.0 * same_ref as f64 / n
    );
    println!(
        "  candidate tuples ours {} official {}; reference tuples ours {} official {}",
        cand_n.0, cand_n.1, ref_n.0, ref_n.1
    );
    println!("  Kendall tau-c vs expert ratings: ours {tc_ours:.4}  official {tc_off:.4}");
    diffs.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap());
    for (_, d) in diffs.iter().take(show) {
        println!("  F8K {d}");
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut pos: Vec<&str> = Vec::new();
    let (mut show_vg, mut show_items, mut show_cands) = (0usize, 0usize, 0usize);
    let mut debug: Option<String> = None;
    let mut lemma_check: Option<String> = None;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--show-vg" => {
                show_vg = args[i + 1].parse().expect("number");
                i += 1;
            }
            "--lemma-check" => {
                lemma_check = Some(args[i + 1].clone());
                i += 1;
            }
            "--debug" => {
                debug = Some(args[i + 1].clone());
                i += 1;
            }
            "--show-cands" => {
                show_cands = args[i + 1].parse().expect("number");
                i += 1;
            }
            "--show-items" => {
                show_items = args[i + 1].parse().expect("number");
                i += 1;
            }
            a => pos.push(a),
        }
        i += 1;
    }
    if pos.len() < 2 || !matches!(pos[1], "raw" | "ptb") {
        eprintln!("usage: spice_agreement PARSES.jsonl raw|ptb [SHARED_DIR] [--show-vg N] [--show-items N] [--show-cands N] [--debug TEXT] [--lemma-check TSV]");
        std::process::exit(2);
    }
    let shared = pos.get(2).copied().unwrap_or("/work/shared");
    let cache = capscore::resources::default_cache_dir();
    let tsv_path = cache.join("nlp/lemma_exc.tsv");
    let tsv = std::fs::read_to_string(&tsv_path)
        .unwrap_or_else(|e| panic!("{}: {e}", tsv_path.display()));
    let ctx = Ctx {
        parses: load_parses(pos[0]),
        lemmas: Lemmatizer::from_tsv(&tsv).expect("lemma exceptions"),
        ptb: pos[1] == "ptb",
        missing: std::cell::Cell::new(0),
    };
    if let Some(path) = lemma_check {
        // Lines `word<TAB>tag<TAB>other lemma[<TAB>count]`: print where ours differs.
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let (mut n, mut diff) = (0usize, 0usize);
        for line in text.lines() {
            let f: Vec<&str> = line.split('\t').collect();
            if f.len() < 3 {
                continue;
            }
            let count: usize = f.get(3).and_then(|c| c.parse().ok()).unwrap_or(1);
            n += count;
            let ours = ctx.lemmas.lemma(f[0], f[1]);
            if ours != f[2] {
                diff += count;
                println!(
                    "{}\t{}\tours {}\tother {}\t{}",
                    f[0], f[1], ours, f[2], count
                );
            }
        }
        println!("{diff} of {n} tokens differ");
        return;
    }
    if let Some(text) = debug {
        let words = ctx.words(&text);
        let parse = ctx
            .parses
            .get(&words.join(" "))
            .expect("no parse for this text");
        for t in parse {
            print!("{}/{}/{}>{} ", t.word, t.tag, t.dep, t.head);
        }
        println!();
        for s in convert(parse, &ctx.lemmas) {
            for e in &s.edges {
                print!(
                    "{}({}-{}, {}-{}) ",
                    e.rel,
                    s.tokens[e.gov - 1].word,
                    e.gov,
                    s.tokens[e.dep - 1].word,
                    e.dep
                );
            }
            println!("roots {:?}", s.roots);
            for t in tuples_of(std::slice::from_ref(&s)).unwrap() {
                print!("({}) ", t.0.join(", "));
            }
            println!();
        }
        return;
    }
    let syn = Synonyms::load(&capscore::metrics::meteor::resource_dir(&cache))
        .unwrap_or_else(|e| panic!("synonym data under {}: {e}", cache.display()));
    println!("input form: {}", pos[1]);
    vg_report(&ctx, shared, &syn, show_vg);
    flickr_report(&ctx, shared, &syn, show_items, show_cands);
    println!("texts without a parse: {}", ctx.missing.get());
}
