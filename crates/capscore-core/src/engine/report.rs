//! The report: ONE set of types that both serialize the result (CLI output, API response,
//! Python) and document it (`ToSchema`: the OpenAPI schemas are derived from these very types,
//! and a test validates real responses against them).
//!
//! Key order is the output contract: `aggregate`, `per_image` (candidate order), `bleu_totals`,
//! `spice`, `signature`, `warnings`, `bootstrap`, `splits`, `tokenized`; inside a score object the metric keys come in
//! [`Metric`](super::Metric) order. Non-finite numbers (never produced by the metrics) are
//! written as `null`.
//!
//! Must not: compute scores (the steps do), or know about HTTP.

use rayon::prelude::*;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use crate::metrics::bleu::BleuStats;
use crate::metrics::meteor::SegmentStats;
use crate::metrics::spice::{Prf, ScoredTuple, SpiceImage};

/// Writes a finite number, or `null`.
fn finite<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(x) if x.is_finite() => s.serialize_f64(*x),
        _ => s.serialize_none(),
    }
}

/// An image id: an integer or a string (`1` and `1.0` are the same id; `"1"` is another). It
/// is echoed exactly as given.
// A schema only: ids are carried as the JSON value the caller sent.
#[cfg(feature = "openapi")]
#[derive(utoipa::ToSchema)]
#[serde(untagged)]
pub enum ImageIdSchema {
    /// A number.
    Int(i64),
    /// A string.
    Str(String),
}

/// Declares [`Scores`] from one list: field, output key, description.
macro_rules! score_keys {
    ($($f:ident => $k:tt, $doc:tt;)*) => {
        /// Scores by output key (pycocoevalcap's names), only the metrics computed.
        #[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
        #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
        pub struct Scores {
            $(
                #[doc = $doc]
                #[serde(rename = $k, skip_serializing_if = "Option::is_none", serialize_with = "finite")]
                pub $f: Option<f64>,
            )*
        }

        impl Scores {
            /// Every output key, in output order.
            pub const KEYS: &'static [&'static str] = &[$($k,)*];

            /// The computed scores in output order.
            pub fn entries(&self) -> impl Iterator<Item = (&'static str, f64)> {
                [$(($k, self.$f),)*]
                    .into_iter()
                    .filter_map(|(k, v)| v.map(|v| (k, v)))
            }

            /// The score under an output key.
            pub fn get(&self, key: &str) -> Option<f64> {
                match key {
                    $($k => self.$f,)*
                    _ => None,
                }
            }

            /// Sets the score under an output key (unknown keys are ignored).
            pub fn set(&mut self, key: &str, v: f64) {
                match key {
                    $($k => self.$f = Some(v),)*
                    _ => {}
                }
            }
        }
    };
}

score_keys! {
    bleu_1 => "Bleu_1", "BLEU-1.";
    bleu_2 => "Bleu_2", "BLEU-2.";
    bleu_3 => "Bleu_3", "BLEU-3.";
    bleu_4 => "Bleu_4", "BLEU-4.";
    meteor => "METEOR", "METEOR 1.5 (pycocoevalcap's jar settings).";
    rouge_l => "ROUGE_L", "ROUGE-L (beta 1.2).";
    cider => "CIDEr", "CIDEr-D (pycocoevalcap's `CIDEr`).";
    cider_original => "CIDEr_original", "The original CIDEr of Vedantam et al.";
    spice => "SPICE", "SPICE (All F; capscore's native parser).";
    spider => "SPIDEr", "SPIDEr: (CIDEr-D + SPICE) / 2.";
}

impl Scores {
    /// Sets Bleu_1..Bleu_4.
    pub fn set_bleu(&mut self, v: [f64; 4]) {
        self.bleu_1 = Some(v[0]);
        self.bleu_2 = Some(v[1]);
        self.bleu_3 = Some(v[2]);
        self.bleu_4 = Some(v[3]);
    }
}

/// One image's scores: `image_id` as given, then the scores.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ImageScores {
    /// The image id, as given.
    #[cfg_attr(feature = "openapi", schema(value_type = ImageIdSchema))]
    pub image_id: Value,
    /// The scores.
    #[serde(flatten)]
    pub scores: Scores,
}

/// BLEU's pooled statistics.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BleuTotals {
    /// Candidate words.
    pub testlen: u64,
    /// Closest reference lengths.
    pub reflen: u64,
    /// Candidate n-grams per order.
    pub guess: [u64; 4],
    /// Clipped matches per order.
    pub correct: [u64; 4],
    /// testlen / reflen (with the reference's smoothing).
    pub ratio: f64,
}

impl From<&BleuStats> for BleuTotals {
    fn from(s: &BleuStats) -> BleuTotals {
        BleuTotals {
            testlen: s.testlen,
            reflen: s.reflen,
            guess: s.guess,
            correct: s.correct,
            ratio: s.ratio(),
        }
    }
}

/// Declares [`WarningCode`] from one table: variant, code, meaning.
macro_rules! warning_codes {
    ($($(#[$doc:meta])* $v:ident => ($s:tt, $when:tt),)*) => {
        /// Every stable warning code (`warnings[].code`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
        pub enum WarningCode {
            $($(#[$doc])* #[cfg_attr(feature = "openapi", schema(rename = $s))] $v,)*
        }

        impl WarningCode {
            /// Every code, in table order.
            pub const ALL: &'static [WarningCode] = &[$(WarningCode::$v,)*];

            /// The stable string.
            pub fn as_str(self) -> &'static str {
                match self { $(WarningCode::$v => $s,)* }
            }

            /// What it means (the documentation table).
            pub fn when(self) -> &'static str {
                match self { $(WarningCode::$v => $when,)* }
            }
        }
    };
}

warning_codes! {
    /// Images of the references (or dataset) have no candidate; they are not scored.
    PartialResults => ("partial_results", "images of the references or dataset have no result and are not scored (the message gives the counts; `image_ids` lists the first missing); strict mode makes this an error"),
    /// The candidate is empty after tokenization.
    EmptyCandidate => ("empty_candidate", "candidate is empty after tokenization (scores are mostly 0; ROUGE-L is 1.0 against an empty reference)"),
    /// A reference is empty after tokenization.
    EmptyReference => ("empty_reference", "a reference is empty after tokenization"),
    /// CIDEr over one image is 0 by construction.
    SingleImageCorpus => ("single_image_corpus", "CIDEr over a one-image corpus is 0 by construction (every n-gram has df = N = 1)"),
    /// A metric of the default set was left out: its data is missing and could not be fetched
    /// (the message says how to get it).
    MetricSkipped => ("metric_skipped", "a default metric was left out because its data is missing and could not be fetched; the message says how to get it"),
    /// SPICE could not build tuples for an image's caption (an internal failure, scored 0).
    SpiceConversionFailed => ("spice_conversion_failed", "SPICE could not build the tuples of a caption of these images (internal failure; the caption contributes no tuples)"),
}

impl Serialize for WarningCode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// A non-fatal observation about the input.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Warning {
    /// Stable code.
    pub code: WarningCode,
    /// Explanation.
    pub message: String,
    /// The images concerned, as given.
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<ImageIdSchema>))]
    pub image_ids: Vec<Value>,
}

impl Warning {
    /// A warning with its code's standard message.
    pub fn new(code: WarningCode, image_ids: Vec<Value>) -> Warning {
        Warning {
            code,
            message: code.when().to_owned(),
            image_ids,
        }
    }
}

/// One SPICE category as sent: the metric's own [`Prf`] (serialized by it), documented for
/// the API schema here because `metrics/` stays free of utoipa.
pub type SpicePrf = Prf;

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for Prf {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, SchemaType, Type};
        let count = |d: &str| {
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
                .description(Some(d))
        };
        let ratio = |d: &str| {
            ObjectBuilder::new()
                .schema_type(SchemaType::from_iter([Type::Number, Type::Null]))
                .format(Some(SchemaFormat::KnownFormat(KnownFormat::Double)))
                .description(Some(d))
        };
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .description(Some(
                "One SPICE category: tuple counts and precision, recall, F (null where undefined: \
                 the image\nhas no reference tuples of that category; `All` is never null).",
            ))
            .property(
                "tp",
                count("Candidate tuples matching some reference tuple."),
            )
            .required("tp")
            .property("fp", count("Candidate tuples minus `tp`."))
            .required("fp")
            .property(
                "fn",
                count("Reference tuples minus `tp` (can be negative)."),
            )
            .required("fn")
            .property("precision", ratio("Precision."))
            .property("recall", ratio("Recall (can exceed 1)."))
            .property("f", ratio("F-measure."))
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for Prf {
    fn name() -> std::borrow::Cow<'static, str> {
        "SpicePrf".into()
    }
}

/// A scene-graph tuple with its match flag (`explain`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SpiceTuple {
    /// Each concept's strings (synonyms merged), in (subject, relation, object) order for
    /// relations, (object, attribute) for attributes.
    pub concepts: Vec<Vec<String>>,
    /// Candidate tuple: matches some reference tuple. Reference tuple: some candidate tuple
    /// matches it.
    pub matched: bool,
}

impl From<&ScoredTuple> for SpiceTuple {
    fn from(t: &ScoredTuple) -> SpiceTuple {
        SpiceTuple {
            concepts: t.concepts.clone(),
            matched: t.matched,
        }
    }
}

/// Declares the two SPICE category records from one list of SPICE's category names.
macro_rules! spice_categories {
    ($($f:ident => $k:tt, $doc:tt;)*) => {
        /// The seven categories of one image, under SPICE's names.
        #[derive(Debug, Clone, Copy, PartialEq, Serialize)]
        #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
        pub struct SpiceCategories {
            $(#[doc = $doc] #[serde(rename = $k)] pub $f: SpicePrf,)*
        }

        /// Mean F per category over the images where it is defined (null when defined for
        /// none).
        #[derive(Debug, Clone, Copy, PartialEq, Serialize)]
        #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
        pub struct SpiceMeans {
            $(#[doc = $doc] #[serde(rename = $k, serialize_with = "finite")] pub $f: Option<f64>,)*
        }

        impl SpiceCategories {
            /// An image's categories.
            pub fn of(im: &SpiceImage) -> SpiceCategories {
                SpiceCategories { $($f: im.$f,)* }
            }
        }

        impl SpiceMeans {
            /// Means over `images`; `all` is the corpus score.
            pub fn of(all: f64, images: &[&SpiceImage]) -> SpiceMeans {
                let mean = |f: &dyn Fn(&SpiceImage) -> Option<f64>| {
                    let v: Vec<f64> = images.iter().filter_map(|im| f(im)).collect();
                    (!v.is_empty()).then(|| crate::metrics::numpy_mean(&v))
                };
                let mut out = SpiceMeans { $($f: mean(&|im| im.$f.f),)* };
                out.all = Some(all).filter(|v| v.is_finite());
                out
            }
        }
    };
}

spice_categories! {
    all => "All", "All tuples (its F is the image's `SPICE`).";
    object => "Object", "Objects.";
    attribute => "Attribute", "Attributes.";
    relation => "Relation", "Relations.";
    cardinality => "Cardinality", "Counts (attributes `one`..`ten`).";
    color => "Color", "Colours.";
    size => "Size", "Sizes.";
}

/// One image's SPICE details.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SpiceImageReport {
    /// The image id as given.
    #[cfg_attr(feature = "openapi", schema(value_type = ImageIdSchema))]
    pub image_id: Value,
    /// Category -> counts and P/R/F.
    #[serde(flatten)]
    pub categories: SpiceCategories,
    /// The candidate's tuples with match flags (with `explain`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub candidate_tuples: Option<Vec<SpiceTuple>>,
    /// The merged references' tuples with match flags (with `explain`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference_tuples: Option<Vec<SpiceTuple>>,
}

/// SPICE details: per image (output order) the seven categories of spec SPICE §10, and the
/// mean F of each category over the images where it is defined.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SpiceReport {
    /// Mean F per category.
    pub aggregate: SpiceMeans,
    /// Per image, in the order given.
    pub per_image: Vec<SpiceImageReport>,
}

/// One image's tokenized captions (`--tokenized`), evaluation order.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TokenizedItem {
    /// The image id as given.
    #[cfg_attr(feature = "openapi", schema(value_type = ImageIdSchema))]
    pub image_id: Value,
    /// The tokenized candidate.
    pub candidate: String,
    /// The tokenized references.
    pub references: Vec<String>,
}

/// Facts about a run that are not part of the result (telemetry).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RunStats {
    /// SPICE reference graphs taken from a dataset's cache.
    pub spice_cached_graphs: usize,
    /// Images scored.
    pub images: usize,
}

/// The result of scoring a batch: the same keys and numbers from the CLI, the API and Python.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Report {
    /// Corpus scores.
    pub aggregate: Scores,
    /// Per image, in the order the candidates were given.
    pub per_image: Vec<ImageScores>,
    /// BLEU's pooled statistics (when BLEU was computed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bleu_totals: Option<BleuTotals>,
    /// SPICE's categories per image and on average (when SPICE was computed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spice: Option<SpiceReport>,
    /// Everything that determines the numbers: version, tokenizer, metric variants and
    /// parameters, the document-frequency source (with a dataset's content hash).
    pub signature: String,
    /// Warnings about the input.
    pub warnings: Vec<Warning>,
    /// Percentile bootstrap intervals of the aggregates (when asked for).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bootstrap: Option<BootstrapReport>,
    /// Split tables (`split_by`): each split's images scored as their own corpus, by split
    /// name; `aggregate` is the entire set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub splits: Option<std::collections::BTreeMap<String, SplitScores>>,
    /// Several candidates per image: each candidate's scores and the selection
    /// (`per_image` and `aggregate` then hold the selected values).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub multi_candidate: Option<MultiReport>,
    /// The tokenized captions, evaluation order (CLI `--tokenized`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokenized: Option<Vec<TokenizedItem>>,
    /// Per-image pooling statistics, evaluation order (with `keep_pool`; not serialized).
    #[serde(skip)]
    #[cfg_attr(feature = "openapi", schema(ignore))]
    pub pool: Option<PoolStats>,
    /// Telemetry facts (not serialized).
    #[serde(skip)]
    #[cfg_attr(feature = "openapi", schema(ignore))]
    pub stats: RunStats,
}

impl Report {
    /// The report as a JSON value (same content as its `Serialize` form).
    pub fn to_json(&self) -> Result<Value, serde_json::Error> {
        serde_json::to_value(self)
    }

    /// The same text as `serde_json::to_string_pretty(&report)`, with the per-image records
    /// formatted in parallel (the bulk of a large report).
    pub fn to_string_pretty(&self) -> Result<String, serde_json::Error> {
        // About 40 bytes a record and 40 a score (one allocation for a large report).
        let keys = self.aggregate.entries().count();
        let mut out = Vec::with_capacity(4096 + self.per_image.len() * 40 * (1 + keys));
        self.write_pretty(&mut out, None)
            .map_err(serde_json::Error::io)?;
        // Only JSON text was written: valid UTF-8 (checked, not copied).
        String::from_utf8(out).map_err(|e| serde_json::Error::io(std::io::Error::other(e)))
    }

    /// Writes [`Report::to_string_pretty`]'s text to `w` as it is made: the per-image records
    /// are formatted in parallel, [`PRETTY_WINDOW`] images at a time, and written window after
    /// window (issue 27: the text of 500,000 rows is 128 MB, and was held twice). The records
    /// are formatted on `pool` (the current pool when `None`); `w` is only written from the
    /// calling thread.
    pub fn write_pretty(
        &self,
        w: &mut dyn std::io::Write,
        pool: Option<&rayon::ThreadPool>,
    ) -> std::io::Result<()> {
        const PLACEHOLDER: &str = "\"per_image\": []";
        let outer = serde_json::to_string_pretty(&ReportView(self))?;
        // `aggregate` (fixed metric keys) comes first, so the first match is the real one.
        if self.per_image.is_empty() {
            return w.write_all(outer.as_bytes());
        }
        let Some(at) = outer.find(PLACEHOLDER) else {
            return Ok(serde_json::to_writer_pretty(w, self)?);
        };
        w.write_all(&outer.as_bytes()[..at])?;
        w.write_all(b"\"per_image\": [")?;
        let mut first = true;
        for window in self.per_image.chunks(PRETTY_WINDOW) {
            // Each record sits at depth 2, written as serde_json's pretty printer writes it
            // there (checked by a test): scalars are formatted by serde_json itself.
            let format = || {
                window
                    .par_chunks(256)
                    .map(|chunk| -> Result<Vec<u8>, serde_json::Error> {
                        let mut out = Vec::with_capacity(chunk.len() * 224);
                        for im in chunk {
                            out.extend_from_slice(b",\n    {\n      \"image_id\": ");
                            serde_json::to_writer(&mut out, &im.image_id)?;
                            for (k, v) in im.scores.entries() {
                                // Output keys are plain ASCII names: nothing to escape.
                                out.extend_from_slice(b",\n      \"");
                                out.extend_from_slice(k.as_bytes());
                                out.extend_from_slice(b"\": ");
                                serde_json::to_writer(&mut out, &v.is_finite().then_some(v))?;
                            }
                            out.extend_from_slice(b"\n    }");
                        }
                        Ok(out)
                    })
                    .collect::<Result<Vec<Vec<u8>>, _>>()
            };
            let parts = match pool {
                Some(pool) => pool.install(format),
                None => format(),
            }?;
            for p in &parts {
                // Every part starts with ",": the very first record starts the array instead.
                w.write_all(if first { &p[1..] } else { p })?;
                first = false;
            }
        }
        w.write_all(b"\n  ]")?;
        w.write_all(&outer.as_bytes()[at + PLACEHOLDER.len()..])
    }
}

/// Per-image records formatted at once by [`Report::write_pretty`] (some MB of text).
pub const PRETTY_WINDOW: usize = 16_384;

/// A report serialized with an empty `per_image` (for [`Report::to_string_pretty`]).
struct ReportView<'a>(&'a Report);

impl Serialize for ReportView<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.0;
        // Same fields and attributes as `Report`, per_image empty: borrow everything else.
        #[derive(Serialize)]
        struct View<'a> {
            aggregate: &'a Scores,
            per_image: [(); 0],
            #[serde(skip_serializing_if = "Option::is_none")]
            bleu_totals: &'a Option<BleuTotals>,
            #[serde(skip_serializing_if = "Option::is_none")]
            spice: &'a Option<SpiceReport>,
            signature: &'a str,
            warnings: &'a [Warning],
            #[serde(skip_serializing_if = "Option::is_none")]
            bootstrap: &'a Option<BootstrapReport>,
            #[serde(skip_serializing_if = "Option::is_none")]
            splits: &'a Option<std::collections::BTreeMap<String, SplitScores>>,
            #[serde(skip_serializing_if = "Option::is_none")]
            multi_candidate: &'a Option<MultiReport>,
            #[serde(skip_serializing_if = "Option::is_none")]
            tokenized: &'a Option<Vec<TokenizedItem>>,
        }
        View {
            aggregate: &r.aggregate,
            per_image: [],
            bleu_totals: &r.bleu_totals,
            spice: &r.spice,
            signature: &r.signature,
            warnings: &r.warnings,
            bootstrap: &r.bootstrap,
            splits: &r.splits,
            multi_candidate: &r.multi_candidate,
            tokenized: &r.tokenized,
        }
        .serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parallel_pretty_text_equals_serde_json_pretty() {
        let ids = [
            json!(1),
            json!("a \"quoted\"\nid"),
            json!(2.5),
            json!(-7),
            json!("x"),
        ];
        for n in [0usize, 1, 2, 255, 256, 257, 600, PRETTY_WINDOW + 300] {
            for bleu in [false, true] {
                let per_image: Vec<ImageScores> = (0..n)
                    .map(|i| ImageScores {
                        image_id: ids[i % ids.len()].clone(),
                        scores: Scores {
                            bleu_1: Some(i as f64 / 7.0),
                            cider: Some(f64::NAN),
                            rouge_l: Some(1e-300),
                            ..Scores::default()
                        },
                    })
                    .collect();
                let report = Report {
                    aggregate: Scores {
                        bleu_1: Some(0.1),
                        cider: Some(1.0 / 3.0),
                        ..Scores::default()
                    },
                    per_image,
                    bleu_totals: bleu.then(|| BleuTotals::from(&BleuStats::default())),
                    spice: None,
                    signature: "sig\t\"x\"".into(),
                    warnings: vec![Warning::new(
                        WarningCode::EmptyCandidate,
                        vec![json!(1), json!("b")],
                    )],
                    bootstrap: None,
                    splits: None,
                    multi_candidate: None,
                    tokenized: bleu.then(Vec::new),
                    pool: None,
                    stats: RunStats::default(),
                };
                assert_eq!(
                    report.to_string_pretty().unwrap(),
                    serde_json::to_string_pretty(&report).unwrap()
                );
            }
        }
    }

    #[test]
    fn score_keys_are_in_metric_order_and_unique() {
        let mut keys: Vec<&str> = super::super::Metric::ALL
            .iter()
            .flat_map(|m| m.keys().iter().copied())
            .collect();
        assert_eq!(keys, Scores::KEYS);
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), Scores::KEYS.len());
    }

    #[test]
    fn warning_codes_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for c in WarningCode::ALL {
            assert!(seen.insert(c.as_str()));
            assert_eq!(
                serde_json::to_value(c).unwrap(),
                json!(c.as_str()),
                "serialized as its code"
            );
        }
    }
}

/// Percentile intervals of every aggregate.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BootstrapReport {
    /// Number of resamples.
    pub samples: u32,
    /// Seed used.
    pub seed: u64,
    /// Confidence level.
    pub level: f64,
    /// `percentile`: the (1 - level) / 2 and (1 + level) / 2 quantiles of the resampled
    /// aggregates.
    pub method: &'static str,
    /// Lower bounds, by aggregate key.
    pub low: Scores,
    /// Upper bounds, by aggregate key.
    pub high: Scores,
}

/// Per-image statistics, evaluation order: what the aggregates are pooled from.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolStats {
    /// BLEU counts (when BLEU ran and the statistics were kept).
    pub bleu: Option<Vec<BleuStats>>,
    /// METEOR segment statistics (when METEOR ran and the statistics were kept).
    pub meteor: Option<Vec<SegmentStats>>,
    /// Per-image scores (the means' inputs).
    pub per_image: Vec<Scores>,
    /// The keys of the aggregate.
    pub keys: Vec<&'static str>,
    /// The images, evaluation order.
    pub ids: Vec<crate::input::ImageKey>,
}

/// One split's corpus scores.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SplitScores {
    /// Images scored in the split.
    pub images: usize,
    /// The split's corpus scores (as if only its images had been submitted).
    pub aggregate: Scores,
    /// BLEU's pooled statistics over the split.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bleu_totals: Option<BleuTotals>,
    /// Bootstrap intervals over the split's images (when asked for).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bootstrap: Option<BootstrapReport>,
    /// Warnings of the split's own run (e.g. `single_image_corpus`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Warning>,
}

/// How one value per image is chosen among its candidates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Selection {
    /// The candidate with the highest value of the `by` metric (SPIDEr-max with `by` SPIDEr).
    #[default]
    Max,
    /// The mean over the candidates, metric by metric.
    Mean,
}

impl Selection {
    /// The name used in the output and the signature.
    pub fn as_str(self) -> &'static str {
        match self {
            Selection::Max => "max",
            Selection::Mean => "mean",
        }
    }
}

/// One image's candidates.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MultiImage {
    /// The image id, as given.
    #[cfg_attr(feature = "openapi", schema(value_type = ImageIdSchema))]
    pub image_id: Value,
    /// With `max`: the index of the selected candidate (in the order given).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selected: Option<usize>,
    /// Each candidate's scores, in the order given.
    pub candidates: Vec<Scores>,
}

/// The multi-candidate section of a report.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MultiReport {
    /// Candidates per image.
    pub candidates: usize,
    /// `max` or `mean`.
    pub select: Selection,
    /// With `max`: the output key that picked the candidates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// Run `j`'s corpus scores: candidate `j` of every image scored as one ordinary submission
    /// (pooled BLEU and METEOR, as pycocoevalcap gives them).
    pub per_candidate: Vec<Scores>,
    /// Per image (the order of the top-level `per_image`): the selection and every candidate's
    /// scores.
    pub per_image: Vec<MultiImage>,
}
