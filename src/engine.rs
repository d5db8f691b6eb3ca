//! Scores a batch: tokenize every caption once, fan the requested metrics out on rayon, pool
//! the statistics into aggregates, and report per-image results in the order the candidates
//! were given.
//!
//! Determinism: per-image work runs in parallel, but every aggregate is reduced sequentially in
//! evaluation order after the parallel part, so the output bytes do not depend on the number of
//! threads. Callers choose the thread pool (`pool.install(|| engine::score(..))`).

use std::borrow::Cow;

use rayon::prelude::*;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

use crate::corpus::{
    BatchWords, Caption, DocFreq, GramBuf, GramIndex, IdfSource, Interner, Matches,
};
use crate::input::{Batch, ErrorCode, ImageId, ImageKey, InputError};
use crate::metrics::bleu::{self, BleuStats};
use crate::metrics::cider::{self, SentenceVec, Variant};
use crate::metrics::meteor::{self, Meteor, MeteorError, SegmentStats};
use crate::metrics::spice::SceneGraph;
use crate::metrics::{numpy_mean, rouge};
use crate::text::{ptb, split_py_whitespace};

/// Development aid: with `CAPSCORE_PHASES` set, prints the wall time since the previous call
/// (or the first call) to stderr, labelled. Used for the phase breakdown in the README.
#[doc(hidden)]
pub fn phase(label: &str) {
    use std::sync::{Mutex, OnceLock};
    use std::time::Instant;
    static LAST: OnceLock<Option<Mutex<Instant>>> = OnceLock::new();
    let last = LAST
        .get_or_init(|| std::env::var_os("CAPSCORE_PHASES").map(|_| Mutex::new(Instant::now())));
    if let Some(m) = last {
        let mut t = m.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        eprintln!("{label:>12} {:7.2} ms", (now - *t).as_secs_f64() * 1e3);
        *t = now;
    }
}

/// A metric capscore can compute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Metric {
    /// BLEU-1..4 (`Bleu_1`..`Bleu_4`).
    Bleu,
    /// METEOR 1.5 as pycocoevalcap's jar computes it (`METEOR`; needs fetched resources).
    Meteor,
    /// ROUGE-L (`ROUGE_L`).
    RougeL,
    /// CIDEr-D, pycocoevalcap's `CIDEr`.
    CiderD,
    /// The original CIDEr of Vedantam et al. (`CIDEr_original`), never reported as `CIDEr`.
    CiderOriginal,
    /// SPICE 1.0 with capscore's native parser front end (`SPICE`; needs fetched resources).
    Spice,
}

impl Metric {
    /// Every metric, in output order.
    pub const ALL: [Metric; 6] = [
        Metric::Bleu,
        Metric::Meteor,
        Metric::RougeL,
        Metric::CiderD,
        Metric::CiderOriginal,
        Metric::Spice,
    ];

    /// The metrics computed when none are requested (pycocoevalcap's set, SPICE aside).
    pub const DEFAULT: [Metric; 4] = [Metric::Bleu, Metric::Meteor, Metric::RougeL, Metric::CiderD];

    /// The name used in `--metrics` and in the API's `metrics` list.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Bleu => "bleu",
            Metric::Meteor => "meteor",
            Metric::RougeL => "rouge_l",
            Metric::CiderD => "cider_d",
            Metric::CiderOriginal => "cider_original",
            Metric::Spice => "spice",
        }
    }

    /// The output keys this metric adds (pycocoevalcap's names).
    pub fn keys(self) -> &'static [&'static str] {
        match self {
            Metric::Bleu => &["Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4"],
            Metric::Meteor => &["METEOR"],
            Metric::RougeL => &["ROUGE_L"],
            Metric::CiderD => &["CIDEr"],
            Metric::CiderOriginal => &["CIDEr_original"],
            Metric::Spice => &["SPICE"],
        }
    }

    /// Parses one metric name (case-insensitive; the output keys are accepted too).
    pub fn parse(s: &str) -> Result<Metric, InputError> {
        let t = s.trim().to_ascii_lowercase();
        let m = match t.as_str() {
            "bleu" | "bleu_1" | "bleu_2" | "bleu_3" | "bleu_4" => Metric::Bleu,
            "meteor" => Metric::Meteor,
            "rouge_l" | "rouge-l" | "rougel" => Metric::RougeL,
            "cider_d" | "cider-d" | "ciderd" => Metric::CiderD,
            "cider_original" => Metric::CiderOriginal,
            "spice" => Metric::Spice,
            "cider" => {
                return Err(InputError::new(
                    ErrorCode::UnknownMetric,
                    "metric \"cider\" is ambiguous: use \"cider_d\" (pycocoevalcap's CIDEr key) or \"cider_original\" (Vedantam et al.)",
                ))
            }
            _ => {
                let known: Vec<&str> = Metric::ALL.iter().map(|m| m.name()).collect();
                return Err(InputError::new(
                    ErrorCode::UnknownMetric,
                    format!("unknown metric {s:?}; known metrics: {}", known.join(", ")),
                ));
            }
        };
        Ok(m)
    }

    /// Parses a comma-separated list; duplicates are merged, order is the canonical one.
    pub fn parse_list(s: &str) -> Result<Vec<Metric>, InputError> {
        Metric::normalize(
            s.split(',')
                .filter(|p| !p.trim().is_empty())
                .map(Metric::parse),
        )
    }

    /// Sorts and deduplicates a list of parsed metrics; an empty list is an error.
    pub fn normalize(
        list: impl IntoIterator<Item = Result<Metric, InputError>>,
    ) -> Result<Vec<Metric>, InputError> {
        let mut v = list.into_iter().collect::<Result<Vec<_>, _>>()?;
        v.sort_unstable();
        v.dedup();
        if v.is_empty() {
            return Err(InputError::new(
                ErrorCode::UnknownMetric,
                "empty metric list",
            ));
        }
        Ok(v)
    }
}

/// Where CIDEr's document frequencies come from.
#[derive(Clone, Copy)]
pub enum DfSource<'a> {
    /// The batch's own references (pycocoevalcap's behaviour).
    Batch,
    /// A cached table (a registered dataset's), with a label for the signature.
    Table {
        /// The table.
        table: &'a dyn DocFreq,
        /// Interner whose ids the table uses.
        interner: &'a Interner,
        /// Describes the source in the signature (e.g. `dataset:coco-val@sha256:...`).
        label: &'a str,
    },
}

/// What to compute.
#[derive(Clone, Copy)]
pub struct Options<'a> {
    /// Metrics to compute (canonical order, no duplicates).
    pub metrics: &'a [Metric],
    /// Document-frequency source for CIDEr.
    pub df: DfSource<'a>,
    /// METEOR's loaded resources (required when METEOR is requested).
    pub meteor: Option<&'a Meteor>,
    /// SPICE's loaded resources (required when SPICE is requested).
    pub spice: Option<&'a crate::metrics::spice::Spice>,
    /// Merged SPICE reference graphs per item (evaluation order), prepared ahead of time (a
    /// registered dataset); `None` parses the references.
    pub spice_refs: Option<&'a [SceneGraph]>,
    /// List each image's SPICE tuples with their match flags.
    pub explain: bool,
}

/// A non-fatal observation about the input.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Warning {
    /// Stable code.
    pub code: &'static str,
    /// Explanation.
    pub message: String,
    /// The images concerned, as given.
    pub image_ids: Vec<Value>,
}

/// The result of scoring a batch.
#[derive(Debug, Clone)]
pub struct Report {
    /// Aggregate scores by output key, in output order.
    pub aggregate: Vec<(&'static str, f64)>,
    /// Per-image scores, in the order the candidates were given.
    pub per_image: Vec<(ImageId, Vec<(&'static str, f64)>)>,
    /// Pooled BLEU statistics, when BLEU was computed.
    pub bleu_totals: Option<BleuStats>,
    /// Everything that determines the numbers.
    pub signature: String,
    /// Warnings about the input.
    pub warnings: Vec<Warning>,
    /// SPICE's subsets and (with `explain`) tuples, when SPICE was computed.
    pub spice: Option<SpiceReport>,
}

/// SPICE details: per image (output order) the seven categories of spec SPICE §10, and the
/// mean F of each category over the images where it is defined.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SpiceReport {
    /// Mean F per category (`All`, `Object`, ...), over the images where F is defined.
    pub aggregate: serde_json::Map<String, Value>,
    /// Per image, in output order.
    pub per_image: Vec<SpiceImageReport>,
}

/// One image's SPICE details.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SpiceImageReport {
    /// The image id as given.
    pub image_id: Value,
    /// Category -> counts and P/R/F.
    #[serde(flatten)]
    pub categories: SpiceCategories,
    /// Candidate tuples with match flags (with `explain`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub candidate_tuples: Option<Vec<crate::metrics::spice::ScoredTuple>>,
    /// Merged reference tuples with match flags (with `explain`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference_tuples: Option<Vec<crate::metrics::spice::ScoredTuple>>,
}

/// The seven categories, under SPICE's names.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SpiceCategories {
    /// All tuples.
    #[serde(rename = "All")]
    pub all: crate::metrics::spice::Prf,
    /// Objects.
    #[serde(rename = "Object")]
    pub object: crate::metrics::spice::Prf,
    /// Attributes.
    #[serde(rename = "Attribute")]
    pub attribute: crate::metrics::spice::Prf,
    /// Relations.
    #[serde(rename = "Relation")]
    pub relation: crate::metrics::spice::Prf,
    /// Counts.
    #[serde(rename = "Cardinality")]
    pub cardinality: crate::metrics::spice::Prf,
    /// Colours.
    #[serde(rename = "Color")]
    pub color: crate::metrics::spice::Prf,
    /// Sizes.
    #[serde(rename = "Size")]
    pub size: crate::metrics::spice::Prf,
}

impl Report {
    /// The report as a JSON value (same content as its `Serialize` form).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// A list of (key, score) pairs serialized as a JSON object in order.
struct Scores<'a>(&'a [(&'static str, f64)]);

impl Serialize for Scores<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0 {
            m.serialize_entry(k, &finite(*v))?;
        }
        m.end()
    }
}

/// One per-image record: `image_id` first, then the scores.
struct PerImage<'a>(&'a ImageId, &'a [(&'static str, f64)]);

impl Serialize for PerImage<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.1.len() + 1))?;
        m.serialize_entry("image_id", &self.0.raw)?;
        for (k, v) in self.1 {
            m.serialize_entry(k, &finite(*v))?;
        }
        m.end()
    }
}

/// Non-finite numbers (never produced by the metrics) would be invalid JSON: write null.
fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

impl Serialize for Report {
    /// `aggregate`, `per_image` (in candidate order), `bleu_totals` (when BLEU ran),
    /// `signature`, `warnings`.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ReportView(self, &self.per_image).serialize(s)
    }
}

/// A report with the given per-image records in place of its own.
struct ReportView<'a>(&'a Report, &'a [(ImageId, Vec<(&'static str, f64)>)]);

impl Serialize for ReportView<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct PerImages<'a>(&'a [(ImageId, Vec<(&'static str, f64)>)]);
        impl Serialize for PerImages<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_seq(self.0.iter().map(|(id, sc)| PerImage(id, sc)))
            }
        }
        struct Totals<'a>(&'a BleuStats);
        impl Serialize for Totals<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut m = s.serialize_map(Some(5))?;
                m.serialize_entry("testlen", &self.0.testlen)?;
                m.serialize_entry("reflen", &self.0.reflen)?;
                m.serialize_entry("guess", &self.0.guess)?;
                m.serialize_entry("correct", &self.0.correct)?;
                m.serialize_entry("ratio", &self.0.ratio())?;
                m.end()
            }
        }
        let r = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("aggregate", &Scores(&r.aggregate))?;
        m.serialize_entry("per_image", &PerImages(self.1))?;
        if let Some(t) = &r.bleu_totals {
            m.serialize_entry("bleu_totals", &Totals(t))?;
        }
        if let Some(sp) = &r.spice {
            m.serialize_entry("spice", sp)?;
        }
        m.serialize_entry("signature", &r.signature)?;
        m.serialize_entry("warnings", &r.warnings)?;
        m.end()
    }
}

impl Report {
    /// The same text as `serde_json::to_string_pretty(&report)`, with the per-image records
    /// formatted in parallel.
    pub fn to_string_pretty(&self) -> String {
        const PLACEHOLDER: &str = "\"per_image\": []";
        let outer = serde_json::to_string_pretty(&ReportView(self, &[])).unwrap_or_default();
        if self.per_image.is_empty() {
            return outer;
        }
        // `aggregate` (fixed metric keys) comes first, so the first match is the real one.
        let Some(at) = outer.find(PLACEHOLDER) else {
            return serde_json::to_string_pretty(self).unwrap_or_default();
        };
        // Each record sits at depth 2, written as serde_json's pretty printer writes it there
        // (checked by a test): scalars are formatted by serde_json itself.
        let parts: Vec<String> = self
            .per_image
            .par_chunks(256)
            .map(|chunk| {
                let mut out = Vec::with_capacity(chunk.len() * 224);
                for (id, scores) in chunk {
                    out.extend_from_slice(b",\n    {\n      \"image_id\": ");
                    let _ = serde_json::to_writer(&mut out, &id.raw);
                    for (k, v) in scores {
                        // Output keys are plain ASCII names: nothing to escape.
                        debug_assert!(k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'));
                        out.extend_from_slice(b",\n      \"");
                        out.extend_from_slice(k.as_bytes());
                        out.extend_from_slice(b"\": ");
                        let _ = serde_json::to_writer(&mut out, &finite(*v));
                    }
                    out.extend_from_slice(b"\n    }");
                }
                String::from_utf8(out)
                    .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
            })
            .collect();
        let body_len: usize = parts.iter().map(String::len).sum();
        let mut text = String::with_capacity(outer.len() + body_len + 8);
        text.push_str(&outer[..at]);
        text.push_str("\"per_image\": [");
        for (k, p) in parts.iter().enumerate() {
            // Every part starts with ",": the very first record starts the array instead.
            text.push_str(if k == 0 { &p[1..] } else { p });
        }
        text.push_str("\n  ]");
        text.push_str(&outer[at + PLACEHOLDER.len()..]);
        text
    }
}

/// The tokenized batch: candidates and references in evaluation order.
pub struct Tokenized {
    /// Tokenized candidate per item.
    pub candidates: Vec<String>,
    /// Tokenized references per item.
    pub references: Vec<Vec<String>>,
}

/// Tokenizes a batch as pycocoevalcap does: one stream of all references (images in
/// evaluation order, references in file order), one stream of all candidates.
pub fn tokenize(batch: &Batch) -> Tokenized {
    let refs_flat: Vec<&str> = batch
        .items
        .iter()
        .flat_map(|i| i.references.iter().map(String::as_str))
        .collect();
    let cands: Vec<&str> = batch.items.iter().map(|i| i.candidate.as_str()).collect();
    let (mut refs_tok, cands_tok) = rayon::join(
        || ptb::tokenize_stream(&refs_flat),
        || ptb::tokenize_stream(&cands),
    );
    let mut references = Vec::with_capacity(batch.items.len());
    let mut rest = refs_tok.drain(..);
    for item in &batch.items {
        references.push(rest.by_ref().take(item.references.len()).collect());
    }
    Tokenized {
        candidates: cands_tok,
        references,
    }
}

/// Scores a batch.
pub fn score(batch: &Batch, opts: &Options<'_>) -> Result<Report, InputError> {
    let tok = tokenize(batch);
    score_tokenized(batch, &tok, opts)
}

/// Scores an already tokenized batch (`tok` must come from [`tokenize`] on the same batch, or
/// from an equivalent cache).
pub fn score_tokenized(
    batch: &Batch,
    tok: &Tokenized,
    opts: &Options<'_>,
) -> Result<Report, InputError> {
    score_inner(batch, tok, None, opts)
}

/// Interns tokenized references (each split into words as BLEU and CIDEr split them, spec
/// COCO §3.4): per image, per reference, the word ids.
pub fn intern_references(
    interner: &mut Interner,
    references: &[Vec<String>],
) -> Vec<Vec<Vec<u32>>> {
    references
        .iter()
        .map(|refs| {
            refs.iter()
                .map(|s| interner.intern_all(split_py_whitespace(s)))
                .collect()
        })
        .collect()
}

/// References prepared ahead of time (a registered dataset's cache) for [`score_prepared`]:
/// their interned words.
pub struct PreparedRefs<'a> {
    /// The interner that produced `ids`; candidates are interned with a clone of it, so their
    /// ids agree with the references' and with the table's.
    pub interner: Interner,
    /// Per item, per reference: the words of the tokenized reference (split as in spec §3.4),
    /// interned.
    pub ids: Vec<Vec<Cow<'a, [u32]>>>,
}

/// Scores a tokenized batch whose references were interned (and possibly vectorised) ahead
/// of time. Gives the same report as [`score_tokenized`] on the same tokenized captions.
pub fn score_prepared(
    batch: &Batch,
    tok: &Tokenized,
    prepared: &PreparedRefs<'_>,
    opts: &Options<'_>,
) -> Result<Report, InputError> {
    score_inner(batch, tok, Some(prepared), opts)
}

/// Per-image results of the n-gram and ROUGE-L metrics.
#[derive(Default)]
struct ImageScores {
    bleu: BleuStats,
    rouge: f64,
    cider: [f64; 2],
}

fn score_inner(
    batch: &Batch,
    tok: &Tokenized,
    prepared: Option<&PreparedRefs<'_>>,
    opts: &Options<'_>,
) -> Result<Report, InputError> {
    let n = batch.items.len();
    let wants = |m: Metric| opts.metrics.contains(&m);
    let want_bleu = wants(Metric::Bleu);
    let want_rouge = wants(Metric::RougeL);
    let variants: Vec<(Metric, Variant)> = [
        (Metric::CiderD, Variant::CiderD),
        (Metric::CiderOriginal, Variant::Original),
    ]
    .into_iter()
    .filter(|(m, _)| wants(*m))
    .collect();
    let ngram_metrics = want_bleu || !variants.is_empty();
    // CIDEr's document frequencies: the batch's references, or a table.
    let (idf_source, df_label, df_docs) = match opts.df {
        DfSource::Batch => (IdfSource::Batch, format!("batch(N={n})"), n),
        DfSource::Table { table, label, .. } => {
            (IdfSource::Table(table), label.to_owned(), table.doc_count())
        }
    };

    // Interned words (split on Unicode whitespace, spec §3.4) for BLEU, CIDEr and ROUGE-L.
    let words = (ngram_metrics || want_rouge).then(|| {
        let mut interner = match (prepared, opts.df) {
            (Some(p), _) => p.interner.clone(),
            (None, DfSource::Table { interner, .. }) => interner.clone(),
            (None, DfSource::Batch) => Interner::new(),
        };
        let total = n + tok.references.iter().map(Vec::len).sum::<usize>();
        let mut captions = Vec::with_capacity(total);
        let mut img_start = Vec::with_capacity(n + 1);
        for i in 0..n {
            img_start.push(captions.len());
            captions.push(Caption {
                text: &tok.candidates[i],
                ids: None,
            });
            let ids = prepared.and_then(|p| p.ids.get(i));
            for (j, r) in tok.references[i].iter().enumerate() {
                captions.push(Caption {
                    text: r,
                    ids: ids.and_then(|v| v.get(j)).map(|w| &**w),
                });
            }
        }
        img_start.push(captions.len());
        let grams = ngram_metrics.then_some(idf_source);
        BatchWords::build(&mut interner, &captions, &img_start, want_rouge, grams)
    });
    phase("words");

    let mut aggregate: Vec<(&'static str, f64)> = Vec::new();
    let mut bleu_totals = None;
    let mut sig = vec![
        format!("capscore:{}", env!("CARGO_PKG_VERSION")),
        "tok:ptb-corenlp3.4.1-pycocoevalcap1.2".to_owned(),
    ];
    let mut warnings = Vec::new();

    let meteor_stats = if wants(Metric::Meteor) {
        let m = opts.meteor.ok_or_else(|| {
            InputError::new(
                ErrorCode::MetricUnavailable,
                "METEOR is not available: its resources are not loaded (run `capscore fetch`)",
            )
        })?;
        let stats: Vec<Result<SegmentStats, MeteorError>> = (0..n)
            .into_par_iter()
            .map(|i| {
                let refs: Vec<&str> = tok.references[i].iter().map(String::as_str).collect();
                m.segment(&tok.candidates[i], &refs)
            })
            .collect();
        let mut ok = Vec::with_capacity(n);
        for (i, st) in stats.into_iter().enumerate() {
            match st {
                Ok(st) => ok.push(st),
                Err(e) => {
                    return Err(InputError::new(
                        ErrorCode::LimitExceeded,
                        format!("image_id {}: {e}", batch.items[i].image_id),
                    ))
                }
            }
        }
        Some(ok)
    } else {
        None
    };

    if !variants.is_empty() {
        let empty = match opts.df {
            DfSource::Batch => !words.as_ref().is_some_and(BatchWords::any_reference_word),
            DfSource::Table { table, .. } => table.is_empty(),
        };
        if empty {
            return Err(InputError::new(
                ErrorCode::NoReferenceNgrams,
                "every reference caption of the evaluated images is empty after tokenization: CIDEr has no document frequencies",
            ));
        }
    }

    // BLEU, ROUGE-L and CIDEr, image by image (in parallel over chunks of images); CIDEr
    // vectors are built and used per image, never all held at once.
    let variants_ref = variants.as_slice();
    let scores: Vec<ImageScores> = match &words {
        None => Vec::new(),
        Some(words) => (0..words.chunk_count())
            .into_par_iter()
            .flat_map_iter(|c| {
                let mut buf = GramBuf::default();
                let mut index = GramIndex::default();
                let mut matches = Matches::default();
                let (mut max_ref, mut wr) = (Vec::new(), Vec::new());
                let mut vecs: Vec<SentenceVec> = Vec::new();
                let mut rouge_scratch = rouge::Scratch::default();
                let mut grams = ngram_metrics.then(|| words.chunk_grams(c));
                (0..words.chunk_images(c))
                    .map(move |j| {
                        let mut out = ImageScores::default();
                        if let Some(grams) = grams.as_mut() {
                            let image = grams.next_image(&mut buf);
                            let (cand, refs) = image.split_first().expect("a candidate");
                            index.rebuild(cand.all().ids);
                            matches.build(&index, refs.iter().map(|r| r.all().ids));
                            if want_bleu {
                                out.bleu =
                                    BleuStats::of_image_matched(cand, refs, &matches, &mut max_ref);
                            }
                            if !variants_ref.is_empty() {
                                vecs.resize_with(image.len(), SentenceVec::default);
                                for (v, s) in vecs.iter_mut().zip(&image) {
                                    v.fill(s);
                                }
                                let (c, r) =
                                    vecs[..image.len()].split_first().expect("a candidate");
                                for (k, &(_, variant)) in variants_ref.iter().enumerate() {
                                    out.cider[k] = cider::image_score_matched(
                                        variant, c, r, &matches, &mut wr,
                                    );
                                }
                            }
                        }
                        if want_rouge {
                            let mut it = words.rouge_words(c, j);
                            let cand = it.next().expect("a candidate");
                            let refs: Vec<&[u32]> = it.collect();
                            out.rouge = rouge::score_ids(cand, &refs, &mut rouge_scratch);
                        }
                        out
                    })
                    .collect::<Vec<_>>()
            })
            .collect(),
    };
    drop(words);
    phase("score");

    if want_bleu {
        let total = bleu::pool(scores.iter().map(|s| &s.bleu));
        aggregate.extend(Metric::Bleu.keys().iter().copied().zip(total.scores()));
        bleu_totals = Some(total);
        sig.push("bleu:n4,ref=closest,smooth=1e-15/1e-9".into());
    }

    if let Some(ok) = &meteor_stats {
        aggregate.push(("METEOR", meteor::pooled_score(ok)));
        sig.push("meteor:1.5-pycocoevalcap,en,norm,pooled".into());
    }

    if want_rouge {
        let column: Vec<f64> = scores.iter().map(|s| s.rouge).collect();
        aggregate.push(("ROUGE_L", numpy_mean(&column)));
        sig.push("rouge_l:beta=1.2".into());
    }

    if !variants.is_empty() {
        for (k, (metric, variant)) in variants.iter().enumerate() {
            let key = metric.keys()[0];
            let column: Vec<f64> = scores.iter().map(|s| s.cider[k]).collect();
            aggregate.push((key, numpy_mean(&column)));
            sig.push(match variant {
                Variant::CiderD => format!("cider_d:n4,sigma=6,clip,df={df_label}"),
                Variant::Original => format!("cider_original:n4,df={df_label}"),
            });
        }
        if df_docs == 1 {
            warnings.push(Warning {
                code: "single_image_corpus",
                message: "CIDEr over a one-image corpus is 0 by construction (every n-gram has df = N = 1)".into(),
                image_ids: batch.items.iter().map(|i| i.image_id.raw.clone()).collect(),
            });
        }
    }

    let mut spice = None;
    let mut spice_f = None;
    if wants(Metric::Spice) {
        let (all_f, score, details) = spice_scores(batch, tok, opts)?;
        spice_f = Some(all_f);
        aggregate.push(("SPICE", score));
        sig.push("spice:1.0-scoring,parser=en_core_web_sm-3.8.0-native,synsets".into());
        spice = Some(details);
        phase("spice");
    }

    let empty: Vec<Value> = (0..n)
        .filter(|&i| tok.candidates[i].is_empty())
        .map(|i| batch.items[i].image_id.raw.clone())
        .collect();
    if !empty.is_empty() {
        warnings.push(Warning {
            code: "empty_candidate",
            message: "candidate is empty after tokenization (scores are mostly 0; ROUGE-L is 1.0 against an empty reference)".into(),
            image_ids: empty,
        });
    }
    let empty_refs: Vec<Value> = (0..n)
        .filter(|&i| tok.references[i].iter().any(String::is_empty))
        .map(|i| batch.items[i].image_id.raw.clone())
        .collect();
    if !empty_refs.is_empty() {
        warnings.push(Warning {
            code: "empty_reference",
            message: "a reference is empty after tokenization".into(),
            image_ids: empty_refs,
        });
    }

    // Per-image scores in output order (keys in `aggregate` order), built in parallel.
    let per_image = batch
        .output_order
        .par_iter()
        .map(|&i| {
            let mut v: Vec<(&'static str, f64)> = Vec::with_capacity(aggregate.len());
            if want_bleu {
                v.extend(
                    Metric::Bleu
                        .keys()
                        .iter()
                        .copied()
                        .zip(scores[i].bleu.scores()),
                );
            }
            if let Some(ok) = &meteor_stats {
                v.push(("METEOR", ok[i].score()));
            }
            if want_rouge {
                v.push(("ROUGE_L", scores[i].rouge));
            }
            for (k, (metric, _)) in variants.iter().enumerate() {
                v.push((metric.keys()[0], scores[i].cider[k]));
            }
            if let Some(f) = &spice_f {
                v.push(("SPICE", f[i]));
            }
            (batch.items[i].image_id.clone(), v)
        })
        .collect();
    phase("report");
    Ok(Report {
        aggregate,
        per_image,
        bleu_totals,
        signature: sig.join("|"),
        warnings,
        spice,
    })
}

/// Python's `sorted()` order of image ids: numbers numerically, then strings.
#[derive(Debug, Clone, PartialEq)]
struct SortKey(ImageKey);

impl Eq for SortKey {}

impl PartialOrd for SortKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for SortKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        let num = |k: &ImageKey| match k {
            ImageKey::Int(i) => Some(*i as f64),
            ImageKey::Float(b) => Some(f64::from_bits(*b)),
            ImageKey::Str(_) => None,
        };
        match (&self.0, &other.0) {
            (ImageKey::Int(a), ImageKey::Int(b)) => a.cmp(b),
            (ImageKey::Str(a), ImageKey::Str(b)) => a.cmp(b),
            (a, b) => match (num(a), num(b)) {
                (Some(x), Some(y)) => x.total_cmp(&y),
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (None, None) => Ordering::Equal,
            },
        }
    }
}

/// SPICE for a tokenized batch: candidates parsed, references parsed and merged (or taken
/// from `opts.spice_refs`), scored; returns per-item All F (evaluation order), the corpus
/// score and the details in output order.
fn spice_scores(
    batch: &Batch,
    tok: &Tokenized,
    opts: &Options<'_>,
) -> Result<(Vec<f64>, f64, SpiceReport), InputError> {
    let sp = opts.spice.ok_or_else(|| {
        InputError::new(
            ErrorCode::MetricUnavailable,
            "SPICE is not available: its resources are not loaded (run `capscore fetch`)",
        )
    })?;
    let n = batch.items.len();
    let cand_tuples = sp.tuples(&tok.candidates);
    let built;
    let graphs: &[SceneGraph] = match opts.spice_refs {
        Some(g) if g.len() == n => g,
        _ => {
            let images: Vec<&[String]> = tok.references.iter().map(Vec::as_slice).collect();
            built = sp.caption_graphs(&images);
            &built
        }
    };
    let keys: Vec<SortKey> = batch
        .items
        .iter()
        .map(|it| SortKey(it.image_id.key.clone()))
        .collect();
    let items: Vec<crate::metrics::spice::SpiceItem<'_>> = cand_tuples
        .iter()
        .zip(graphs)
        .map(|(c, g)| crate::metrics::spice::SpiceItem {
            candidate: c,
            references: g,
        })
        .collect();
    let corpus = sp.score(&keys, &items, opts.explain);
    let all_f: Vec<f64> = corpus
        .images
        .iter()
        .map(|(_, im)| im.all.f_or_nan())
        .collect();
    let mean = |f: &dyn Fn(&crate::metrics::spice::SpiceImage) -> Option<f64>| {
        let v: Vec<f64> = corpus.images.iter().filter_map(|(_, im)| f(im)).collect();
        (!v.is_empty()).then(|| numpy_mean(&v))
    };
    let aggregate = [
        ("All", Some(corpus.score).filter(|v| v.is_finite())),
        ("Object", mean(&|im| im.object.f)),
        ("Attribute", mean(&|im| im.attribute.f)),
        ("Relation", mean(&|im| im.relation.f)),
        ("Cardinality", mean(&|im| im.cardinality.f)),
        ("Color", mean(&|im| im.color.f)),
        ("Size", mean(&|im| im.size.f)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.map(Value::from).unwrap_or(Value::Null)))
    .collect();
    let per_image = batch
        .output_order
        .iter()
        .map(|&i| {
            let im = &corpus.images[i].1;
            SpiceImageReport {
                image_id: batch.items[i].image_id.raw.clone(),
                categories: SpiceCategories {
                    all: im.all,
                    object: im.object,
                    attribute: im.attribute,
                    relation: im.relation,
                    cardinality: im.cardinality,
                    color: im.color,
                    size: im.size,
                },
                candidate_tuples: opts.explain.then(|| im.candidate_tuples.clone()),
                reference_tuples: opts.explain.then(|| im.reference_tuples.clone()),
            }
        })
        .collect();
    Ok((
        all_f,
        corpus.score,
        SpiceReport {
            aggregate,
            per_image,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_names_parse_and_cider_is_not_ambiguous() {
        assert_eq!(
            Metric::parse_list("bleu,cider_d,bleu").unwrap(),
            vec![Metric::Bleu, Metric::CiderD]
        );
        assert_eq!(
            Metric::parse("cider").unwrap_err().code,
            ErrorCode::UnknownMetric
        );
        assert_eq!(
            Metric::parse("spicy").unwrap_err().code,
            ErrorCode::UnknownMetric
        );
        assert!(Metric::parse_list(" , ").is_err());
    }

    #[test]
    fn parallel_pretty_text_equals_serde_json_pretty() {
        use serde_json::json;
        let ids = [
            json!(1),
            json!("a \"quoted\"\nid"),
            json!(2.5),
            json!(-7),
            json!("x"),
        ];
        for n in [1usize, 2, 255, 256, 257, 600] {
            for bleu in [false, true] {
                let per_image: Vec<(ImageId, Vec<(&'static str, f64)>)> = (0..n)
                    .map(|i| {
                        let id = ImageId::from_value(&ids[i % ids.len()]).unwrap();
                        let v = i as f64 / 7.0;
                        (
                            id,
                            vec![("Bleu_1", v), ("CIDEr", f64::NAN), ("ROUGE_L", 1e-300)],
                        )
                    })
                    .collect();
                let report = Report {
                    aggregate: vec![("Bleu_1", 0.1), ("CIDEr", 1.0 / 3.0)],
                    per_image,
                    bleu_totals: bleu.then(BleuStats::default),
                    signature: "sig\t\"x\"".into(),
                    warnings: vec![Warning {
                        code: "empty_candidate",
                        message: "m".into(),
                        image_ids: vec![json!(1), json!("b")],
                    }],
                    spice: None,
                };
                assert_eq!(
                    report.to_string_pretty(),
                    serde_json::to_string_pretty(&report).unwrap()
                );
            }
        }
    }

    /// Regression: METEOR was missing from `Metric::ALL`, so `/readyz` did not list it.
    #[test]
    fn every_metric_is_listed_and_parses_from_its_name() {
        for m in [
            Metric::Bleu,
            Metric::Meteor,
            Metric::RougeL,
            Metric::CiderD,
            Metric::CiderOriginal,
        ] {
            assert!(Metric::ALL.contains(&m), "{m:?}");
            assert_eq!(Metric::parse(m.name()).unwrap(), m);
        }
    }
}
