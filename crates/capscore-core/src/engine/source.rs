//! Where references come from: [`ReferenceSource`], one trait for inline references
//! ([`References`]: a file, a request's items) and registered datasets
//! ([`crate::dataset::Dataset`], with its cached tokenization, document frequencies and SPICE
//! graphs). The engine asks a source to join candidates with their references and to hand over
//! the references ready to score; it never knows which kind it has.
//!
//! Must not: score anything, read files, or know about HTTP.

use std::borrow::Cow;

use crate::input::{self, Batch, Candidate, InputError, References};
use crate::metrics::spice::{SceneGraph, Spice};
use crate::stats::{DocFreq, Interner};
use crate::text::{ptb, ImageTexts};

/// A document-frequency table with the interner whose ids it uses and its signature label.
#[derive(Clone, Copy)]
pub struct DfTableRef<'a> {
    /// The table.
    pub table: &'a dyn DocFreq,
    /// Interner whose ids the table uses.
    pub interner: &'a Interner,
    /// Describes the source in the signature (e.g. `dataset:coco-val@sha256:...(N=..)`).
    pub label: &'a str,
}

/// References interned ahead of time (a registered dataset's cache).
pub struct Interned<'a> {
    /// The interner that produced `ids`; candidates are interned with a clone of it, so their
    /// ids agree with the references' and with the source's table.
    pub interner: Interner,
    /// Per item, per reference: the words of the tokenized reference (split as in spec COCO
    /// §3.4), interned.
    pub ids: Vec<Vec<Cow<'a, [u32]>>>,
}

/// What a source is asked to prepare.
#[derive(Clone, Copy)]
pub struct PrepareRequest<'a> {
    /// Tokenize the references (false: they are already tokenized and used as given).
    pub tokenize: bool,
    /// SPICE, when SPICE will be computed (a source with a graph cache hands graphs over).
    pub spice: Option<&'a Spice>,
    /// Cooperative cancellation of long preparation (a dataset's SPICE graph builds): once it
    /// returns true the source stops, keeps nothing half-built and answers with the
    /// cancellation error.
    pub cancel: &'a (dyn Fn() -> bool + Sync),
}

/// A batch's references, ready to score.
pub struct PreparedRefs<'a> {
    /// Per item (evaluation order), the tokenized references: exactly what tokenizing this
    /// batch's references as one stream gives.
    pub tokenized: ImageTexts,
    /// Interned references, when the source keeps them.
    pub interned: Option<Interned<'a>>,
    /// The source's table when it equals the batch's own document frequencies (the batch is
    /// the whole source, nothing re-tokenized): then it serves `cider_df: batch` unchanged.
    pub batch_table: Option<DfTableRef<'a>>,
    /// SPICE's merged reference graphs, when the source caches them.
    pub spice: Option<CachedGraphs>,
}

/// SPICE reference graphs handed over by a source with a graph cache.
pub struct CachedGraphs {
    /// The merged reference graph per item (evaluation order).
    pub graphs: Vec<SceneGraph>,
    /// Per item: a reference caption's tuples could not be built (see the SPICE step).
    pub failed: Vec<bool>,
    /// How many graphs came from the cache (the rest were built for this request).
    pub cached: usize,
}

impl PreparedRefs<'_> {
    /// Prepared references with nothing cached.
    pub fn plain(tokenized: ImageTexts) -> PreparedRefs<'static> {
        PreparedRefs {
            tokenized,
            interned: None,
            batch_table: None,
            spice: None,
        }
    }
}

/// Where a job's references come from.
pub trait ReferenceSource: Sync {
    /// Joins candidates with their references: the batch in evaluation order (the source's
    /// image order), with the candidates' own order as output order. Unknown, duplicate and
    /// reference-less images are errors.
    fn assemble(&self, candidates: Vec<Candidate>) -> Result<Batch, InputError>;

    /// The references of `batch` (assembled by [`ReferenceSource::assemble`]) ready to score.
    /// By default (inline sources) they are tokenized from the batch itself, nothing cached.
    fn prepare(
        &self,
        batch: &Batch,
        req: &PrepareRequest<'_>,
    ) -> Result<PreparedRefs<'_>, InputError> {
        inline_prepared(batch, req)
    }

    /// The source's own document-frequency table (`cider_df: "dataset"`), if it keeps one
    /// (inline sources keep none).
    fn df_table(&self) -> Option<DfTableRef<'_>> {
        None
    }
}

/// Tokenizes per-item reference lists as ONE stream (images in order, references in order),
/// as pycocoevalcap does.
pub fn tokenize_references(images: &[&[String]]) -> Vec<Vec<String>> {
    tokenize_reference_texts(images).to_lists()
}

/// [`tokenize_references`], kept compact.
pub fn tokenize_reference_texts(images: &[&[String]]) -> ImageTexts {
    tokenize_reference_texts_until(images, &|| false).unwrap_or_default()
}

/// [`tokenize_reference_texts`] that gives up once `stop()` is true (checked between blocks
/// of captions): `None` then.
pub fn tokenize_reference_texts_until(
    images: &[&[String]],
    stop: &(dyn Fn() -> bool + Sync),
) -> Option<ImageTexts> {
    let flat: Vec<&str> = images
        .iter()
        .flat_map(|r| r.iter().map(String::as_str))
        .collect();
    let texts = ptb::tokenize_stream_texts_until(&flat, stop)?;
    Some(ImageTexts::from_counts(
        texts,
        images.iter().map(|r| r.len()),
    ))
}

/// The references the batch's items carry, tokenized as one stream (or as given); the
/// cancellation error once `req.cancel` is true.
fn inline_prepared(
    batch: &Batch,
    req: &PrepareRequest<'_>,
) -> Result<PreparedRefs<'static>, InputError> {
    let tokenized = if req.tokenize {
        let images: Vec<&[String]> = batch
            .items
            .iter()
            .map(|i| i.references.as_slice())
            .collect();
        tokenize_reference_texts_until(&images, req.cancel).ok_or_else(super::cancelled)?
    } else {
        batch.items.iter().map(|i| &i.references).collect()
    };
    Ok(PreparedRefs::plain(tokenized))
}

/// Inline references: a references file, or a request's items.
impl ReferenceSource for References {
    fn assemble(&self, candidates: Vec<Candidate>) -> Result<Batch, InputError> {
        input::assemble(self, candidates)
    }
}

/// References handed over for ONE job: [`ReferenceSource::assemble`] moves their captions into
/// the batch instead of copying them (the CLI; a large file's captions are not duplicated).
/// Prepares like [`References`]; a second `assemble` is an error.
pub struct OwnedReferences(std::sync::Mutex<Option<References>>);

impl OwnedReferences {
    /// Wraps references for one job.
    pub fn new(refs: References) -> OwnedReferences {
        OwnedReferences(std::sync::Mutex::new(Some(refs)))
    }
}

impl ReferenceSource for OwnedReferences {
    fn assemble(&self, candidates: Vec<Candidate>) -> Result<Batch, InputError> {
        let refs = self
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .ok_or_else(|| {
                InputError::new(
                    crate::input::ErrorCode::Internal,
                    "owned references were already assembled into a batch",
                )
            })?;
        input::assemble_owned(refs, candidates)
    }
}
