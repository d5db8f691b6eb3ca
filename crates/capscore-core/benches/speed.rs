//! Criterion benchmarks of the paths whose speed is a promise (issue 24): `cargo bench -p
//! capscore-core` (one group: `cargo bench -p capscore-core -- corpus_5k`). What each group
//! measures, and the figures, are in docs/performance.md ("Criterion benchmarks").
//!
//! Data: the raw val2014 captions of the repository's tokenizer fixture
//! (`tests/fixtures/tokenizer/val2014_captions_ptb.jsonl.gz`), built into a 5,000-image set as
//! `scripts/bench` and `scripts/bench-python` build theirs: the first 5,000 images (file order)
//! with at least two captions; each image's LAST raw caption is held out as its candidate, the
//! others are its references (20,009 in all: 4 per image, 5 for nine images). Everything is
//! loaded, built and (where a group needs pre-tokenized text) tokenized once, outside the timed
//! closures. Deterministic: no random input, the same set on every run.
//!
//! Threads: the engine, the pre-tokenized scorers and the reward scorer run on rayon's global
//! pool (as many threads as cores), as a front end with its default pool does.

use std::hint::black_box;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::time::Duration;

use capscore_core::engine::{self, Job, Kind, Metric, Options, Outcome, Refs};
use capscore_core::input::{Candidate, ImageId, References};
use capscore_core::metrics::{bleu, numpy_mean};
use capscore_core::pretokenized::{self, Captions};
use capscore_core::reward::{DfCounts, RewardScorer};
use capscore_core::text::ptb;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use rayon::prelude::*;
use serde_json::Value;

/// Images in the corpus.
const IMAGES: usize = 5_000;
/// The SCST step: images in the batch, samples per image.
const SCST_IMAGES: usize = 60;
const SCST_SAMPLES: usize = 5;
/// BLEU, ROUGE-L and CIDEr-D: the metrics of every engine group.
const METRICS: [Metric; 3] = [Metric::Bleu, Metric::RougeL, Metric::CiderD];

/// One image of the set: its id, its references (raw) and its held-out candidate (raw).
struct Image {
    id: u64,
    references: Vec<String>,
    candidate: String,
}

/// The first `n` images of the fixture with at least two captions, the last one held out.
fn load_images(n: usize) -> Vec<Image> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/tokenizer/val2014_captions_ptb.jsonl.gz");
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let reader = BufReader::new(flate2::read::GzDecoder::new(file));
    let mut images = Vec::with_capacity(n);
    for line in reader.lines() {
        let rec: Value = serde_json::from_str(&line.expect("fixture line")).expect("JSON line");
        let mut raw: Vec<String> = rec["raw"]
            .as_array()
            .expect("raw")
            .iter()
            .map(|c| c.as_str().expect("caption").to_owned())
            .collect();
        if raw.len() < 2 {
            continue;
        }
        let candidate = raw.pop().expect("two captions");
        images.push(Image {
            id: rec["image_id"].as_u64().expect("image_id"),
            references: raw,
            candidate,
        });
        if images.len() == n {
            break;
        }
    }
    assert_eq!(images.len(), n, "the fixture has fewer than {n} images");
    images
}

/// The engine's inputs: candidates and references, as a front end parses them.
fn engine_inputs(images: &[Image]) -> (Vec<Candidate>, References) {
    let id = |i: &Image| ImageId::from_value(&Value::from(i.id)).expect("id");
    let candidates = images
        .iter()
        .map(|i| Candidate {
            image_id: id(i),
            caption: i.candidate.clone(),
        })
        .collect();
    let references = References::from_pairs(images.iter().map(|i| (id(i), i.references.clone())));
    (candidates, references)
}

/// Scores a plain job with owned inputs, as the CLI does.
fn run_plain(candidates: Vec<Candidate>, references: References) -> Outcome {
    engine::run(Job {
        candidates,
        references: Refs::Owned(references),
        kind: Kind::Plain,
        options: Options::new(&METRICS),
    })
    .expect("score")
}

/// Pre-tokenized text, as pycocoevalcap's scorers receive it after its PTBTokenizer step:
/// references tokenized as one stream, candidates as another.
struct Tokenized {
    candidates: Vec<String>,
    references: Vec<Vec<String>>,
}

fn tokenize(images: &[Image]) -> Tokenized {
    let refs: Vec<&[String]> = images.iter().map(|i| i.references.as_slice()).collect();
    let cands: Vec<&str> = images.iter().map(|i| i.candidate.as_str()).collect();
    Tokenized {
        candidates: ptb::tokenize_stream(&cands),
        references: engine::tokenize_references(&refs),
    }
}

/// The drop-in's borrowed captions (what `python/src/texts.rs` builds from `gts` / `res`).
fn captions(tok: &Tokenized) -> Captions<'_> {
    let mut caps = Captions::new();
    for (c, refs) in tok.candidates.iter().zip(&tok.references) {
        caps.push(c, refs.iter().map(String::as_str));
    }
    caps
}

fn corpus_5k(c: &mut Criterion, images: &[Image]) {
    let (candidates, references) = engine_inputs(images);
    let report = run_plain(candidates.clone(), references.clone())
        .into_report()
        .expect("report");
    assert_eq!(report.per_image.len(), IMAGES);
    assert!(report.aggregate.cider.is_some_and(f64::is_finite));
    let mut g = c.benchmark_group("corpus_5k");
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(6))
        .throughput(Throughput::Elements(IMAGES as u64));
    g.bench_function("bleu_rouge_cider_d_ptb", |b| {
        b.iter_batched(
            || (candidates.clone(), references.clone()),
            |(cands, refs)| run_plain(cands, refs),
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

fn dropin_inputs(c: &mut Criterion, tok: &Tokenized) {
    let mut g = c.benchmark_group("dropin_inputs");
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .throughput(Throughput::Elements(tok.candidates.len() as u64));
    // `Cider().compute_score`: CIDEr-D with the references' own document frequencies.
    g.bench_function("cider", |b| {
        b.iter(|| {
            let caps = captions(black_box(tok));
            pretokenized::cider_d(&caps).expect("cider")
        })
    });
    // `Bleu(4).compute_score`: per-image statistics, per-image scores, pooled totals (the
    // per-image scores in parallel from 1,024 images on, as `bleu_dicts` computes them).
    g.bench_function("bleu", |b| {
        b.iter(|| {
            let caps = captions(black_box(tok));
            let stats = pretokenized::bleu(&caps);
            let per_image: Vec<[f64; 4]> = stats
                .par_iter()
                .with_min_len(256)
                .map(|s| s.scores())
                .collect();
            (bleu::pool(&stats).scores(), per_image)
        })
    });
    // `Rouge().compute_score`: per-image ROUGE-L and numpy's mean.
    g.bench_function("rouge", |b| {
        b.iter(|| {
            let caps = captions(black_box(tok));
            let scores = pretokenized::rouge_l(&caps);
            (numpy_mean(&scores), scores)
        })
    });
    g.finish();
}

fn scst_step(c: &mut Criterion, tok: &Tokenized) {
    // Built once: the table from every reference of the corpus, the batch's references.
    let table = DfCounts::from_references(&tok.references).expect("table");
    let mut scorer = RewardScorer::new(table);
    scorer
        .set_references(&tok.references[..SCST_IMAGES])
        .expect("references");
    // Image k's samples: its held-out candidate, then the first reference of four other
    // images of the corpus (poorer samples), as scripts/bench-python draws them.
    let n = tok.references.len();
    let mut candidates = Vec::with_capacity(SCST_IMAGES * SCST_SAMPLES);
    let mut index = Vec::with_capacity(SCST_IMAGES * SCST_SAMPLES);
    for k in 0..SCST_IMAGES {
        candidates.push(tok.candidates[k].clone());
        for j in 0..SCST_SAMPLES - 1 {
            candidates.push(tok.references[(k * 7 + j) % n][0].clone());
        }
        index.extend(std::iter::repeat_n(k, SCST_SAMPLES));
    }
    let mut g = c.benchmark_group("scst_step");
    g.sample_size(50)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Elements(candidates.len() as u64));
    g.bench_function("cider_d_300", |b| {
        b.iter(|| {
            scorer
                .score(black_box(&candidates), &index, false)
                .expect("rewards")
        })
    });
    g.bench_function("cider_d_bleu4_300", |b| {
        b.iter(|| {
            scorer
                .score(black_box(&candidates), &index, true)
                .expect("rewards")
        })
    });
    g.finish();
}

fn tokenizer(c: &mut Criterion, images: &[Image]) {
    let captions: Vec<&str> = images
        .iter()
        .flat_map(|i| i.references.iter().map(String::as_str))
        .collect();
    let mut g = c.benchmark_group("tokenizer");
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .throughput(Throughput::Elements(captions.len() as u64));
    g.bench_function("ptb_reference_captions", |b| {
        b.iter(|| ptb::tokenize_stream(black_box(&captions)))
    });
    // Captions of the service's longest (10,000 characters) made of one repeated piece: the
    // rules that looked at a whole word (or run) again at every join made these quadratic
    // (up to 0.3 s a caption); each should take about as long as 10,000 characters of text.
    let pieces = [
        "a.",
        "1,",
        "a-",
        "-1",
        "'",
        "a@b.",
        "a@.b",
        "\u{ad}",
        "a\u{2010}",
        "www.a.",
        "a.1",
        "x_;",
        "?x<",
        "é‐",
    ];
    let long: Vec<String> = pieces
        .iter()
        .map(|p| p.repeat(10_000 / p.chars().count()))
        .collect();
    g.sample_size(10)
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Elements(long.len() as u64));
    g.bench_function("ptb_long_repeated_pieces", |b| {
        b.iter(|| {
            for caption in &long {
                black_box(ptb::tokenize_stream(std::slice::from_ref(caption)));
            }
        })
    });
    g.finish();
}

fn single_image(c: &mut Criterion, images: &[Image]) {
    // The first image with exactly 5 references (6 captions, the last held out).
    let one = images
        .iter()
        .find(|i| i.references.len() == 5)
        .expect("an image with 5 references");
    let (candidates, references) = engine_inputs(std::slice::from_ref(one));
    let mut g = c.benchmark_group("single_image");
    g.sample_size(100)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    g.bench_function("bleu_rouge_cider_d_ptb", |b| {
        b.iter_batched(
            || (candidates.clone(), references.clone()),
            |(cands, refs)| run_plain(cands, refs),
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

fn benches(c: &mut Criterion) {
    let images = load_images(IMAGES);
    let tok = tokenize(&images);
    corpus_5k(c, &images);
    dropin_inputs(c, &tok);
    scst_step(c, &tok);
    tokenizer(c, &images);
    single_image(c, &images);
}

criterion_group! {
    name = speed;
    config = Criterion::default().without_plots();
    targets = benches
}
criterion_main!(speed);
