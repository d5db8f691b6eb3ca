//! Registered datasets: named reference sets that are parsed, tokenized and vectorised once,
//! kept in memory, and persisted in a data directory.
//!
//! On registration the references are tokenized as ONE stream in file order (as pycocoevalcap
//! would tokenize the whole set), interned against a dataset vocabulary, and the CIDEr
//! document-frequency table (over the images that have references) and every reference's CIDEr
//! vector under that table are built. Later metrics add their own per-dataset caches here:
//! SPICE's merged reference graph of an image is built the first time a SPICE request needs
//! it ([`Dataset::spice_refs`]) and kept with the dataset (images whose references a subset
//! re-tokenizes get graphs of their own, per request).
//!
//! Tokenizer lookahead (spec COCO §3.6): a caption's tokenization can depend on the captions
//! that follow it in the stream. Within an image, a reference followed by a reference that
//! starts with an ASCII letter or digit is settled: nothing after that can change it. The
//! remaining "tail" references of an image look into the next image's references, which in a
//! subset of the dataset are not the same as in the whole file. [`Dataset::prepare`] therefore
//! re-tokenizes each tail reference whose following context in the subset stream differs from
//! the one it had in the dataset stream, so a subset scores exactly as if its references had
//! been sent inline.
//!
//! Persistence: one file per dataset, `<data-dir>/datasets/<name>.json`, written through a
//! temporary file, `fsync` and `rename` (and an `fsync` of the folder), so a crash during a
//! registration leaves the old or the new dataset, never a broken one. Files that fail to load
//! at start are skipped with an error in the log, never half-loaded.
//!
//! No HTTP here: the server calls in from its own thread pool.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use rayon::prelude::*;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::engine::{
    CachedGraphs, DfTableRef, Interned, PrepareRequest, PreparedRefs, ReferenceSource,
};
use crate::input::{self, Batch, Candidate, ErrorCode, ImageId, ImageKey, InputError, References};
use crate::metrics::spice::SceneGraph;
use crate::metrics::spice::Spice;
use crate::stats::split::py_whitespace;
use crate::stats::{DfTable, Interner, Vocab};
use crate::text::{ptb, ImageTexts};

/// Version of the on-disk format.
const FORMAT: u64 = 1;

/// True when `name` is a valid dataset name: `[A-Za-z0-9._-]{1,64}`, except `.` and `..`
/// (they name folders, not files).
pub fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// A caption that starts with an ASCII letter or digit settles the tokenization of the caption
/// before it (spec COCO §3.6: every lookahead class decides on the next line's first character).
fn settles(caption: &str) -> bool {
    caption
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphanumeric())
}

/// Tokenizes `caption` as the tokenizer would inside a stream where `following` comes after it
/// (only the captions up to the first settling one matter).
pub fn tokenize_in_context(caption: &str, following: &[&str]) -> String {
    let mut stream: Vec<&str> = Vec::with_capacity(following.len() + 1);
    stream.push(caption);
    for f in following {
        stream.push(f);
        if settles(f) {
            break;
        }
    }
    ptb::tokenize_stream(&stream).swap_remove(0)
}

/// What a built SPICE reference graph takes in memory per reference token (an estimate, set
/// against the server's RSS growth by `scripts/attack`, phase 6).
const GRAPH_BYTES_PER_TOKEN: u64 = 600;

/// A process-wide clock of cache uses.
static TICK: AtomicU64 = AtomicU64::new(0);

fn next_tick() -> u64 {
    TICK.fetch_add(1, Ordering::Relaxed) + 1
}

/// A registered dataset with its caches.
#[derive(Debug)]
pub struct Dataset {
    /// Its name.
    pub name: String,
    /// sha256 of the canonical content (image ids with their kind, captions in order).
    pub sha256: String,
    /// Registration time, seconds since the Unix epoch.
    pub created: u64,
    /// The references, images in file order.
    pub references: References,
    /// Per image, per reference: the tokenization in the whole-dataset stream.
    pub tokenized: ImageTexts,
    /// Vocabulary of `ids`.
    pub vocab: Arc<Vocab>,
    /// Per image, per reference: interned words.
    pub ids: RefIds,
    /// CIDEr document frequencies over the images that have references.
    pub df: DfTable,
    /// The document-frequency label used in signatures: `dataset:<name>@sha256:<hex>(N=..)`.
    pub df_label: String,
    /// An interner over `vocab` (ids agree with `ids` and `df`).
    pub interner: Interner,
    /// SPICE's merged reference graph per image (dataset order), from `tokenized`, with
    /// whether a reference's tuples could not be built; each built when a request first needs
    /// it ([`Dataset::spice_refs`]).
    spice_graphs: Vec<RwLock<Option<(SceneGraph, bool)>>>,
    /// Per-image labels and the submission policy.
    pub meta: DatasetMeta,
    /// Per image (dataset order): what its references cost a request (the server's cost
    /// model reads it instead of assuming a reference count).
    profiles: Vec<RefProfile>,
    /// [`Dataset::resident_bytes`] without SPICE graphs (fixed at build).
    base_bytes: u64,
    /// Reference tokens of the SPICE graphs built so far.
    graph_tokens: AtomicU64,
    /// When SPICE last read the graphs (a server-wide tick, [`Dataset::last_used`]).
    last_used: AtomicU64,
}

/// What one image's references amount to, from their tokenization in the dataset stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RefProfile {
    /// Reference captions.
    pub captions: u32,
    /// Tokens of all of them.
    pub tokens: u64,
    /// Sum over them of tokens squared.
    pub tokens_sq: u64,
    /// Tokens of the longest.
    pub max_tokens: u32,
}

impl RefProfile {
    /// From an image's interned references (the words BLEU and CIDEr count).
    fn of<'a>(ids: impl ExactSizeIterator<Item = &'a [u32]>) -> RefProfile {
        let mut p = RefProfile {
            captions: ids.len() as u32,
            ..RefProfile::default()
        };
        for words in ids {
            let n = words.len() as u64;
            p.tokens += n;
            p.tokens_sq += n * n;
            p.max_tokens = p.max_tokens.max(n as u32);
        }
        p
    }
}

/// Per image, per reference: interned words (one buffer for all, not a vector per reference:
/// issue 27).
#[derive(Debug, Clone)]
pub struct RefIds {
    words: Vec<u32>,
    /// Reference `k`'s words are `words[ends[k - 1]..ends[k]]` (from 0 for the first).
    ends: Vec<usize>,
    /// Image `i`'s references are `starts[i]..starts[i + 1]`.
    starts: Vec<usize>,
}

impl Default for RefIds {
    fn default() -> RefIds {
        RefIds {
            words: Vec::new(),
            ends: Vec::new(),
            starts: vec![0],
        }
    }
}

impl RefIds {
    /// The words of `tokenized` (split as BLEU and CIDEr split them, spec COCO §3.4) interned
    /// with `interner`; `None` once `stop()` is true (checked per 1,024 images).
    pub fn intern_until(
        interner: &mut Interner,
        tokenized: &ImageTexts,
        stop: &dyn Fn() -> bool,
    ) -> Option<RefIds> {
        let mut ids = RefIds {
            words: Vec::new(),
            ends: Vec::with_capacity(tokenized.all().len()),
            starts: Vec::with_capacity(tokenized.images() + 1),
        };
        ids.starts.push(0);
        for i in 0..tokenized.images() {
            if i % 1024 == 0 && stop() {
                return None;
            }
            for r in tokenized.image(i) {
                ids.words
                    .extend(py_whitespace(r).map(|w| interner.intern(w)));
                ids.ends.push(ids.words.len());
            }
            ids.starts.push(ids.ends.len());
        }
        ids.words.shrink_to_fit();
        Some(ids)
    }

    /// Number of images.
    pub fn images(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }

    /// Image `i`'s references, each as its word ids.
    ///
    /// # Panics
    /// When `i >= images()`.
    pub fn image(&self, i: usize) -> impl ExactSizeIterator<Item = &[u32]> + Clone + '_ {
        (self.starts[i]..self.starts[i + 1]).map(move |k| {
            let start = if k == 0 { 0 } else { self.ends[k - 1] };
            &self.words[start..self.ends[k]]
        })
    }

    /// The bytes its heap allocations take ([`crate::heap`]).
    pub fn heap_bytes(&self) -> u64 {
        crate::heap::vec(&self.words)
            + crate::heap::vec(&self.ends)
            + crate::heap::vec(&self.starts)
    }
}

/// What a dataset keeps besides its references (persisted with it; not part of its sha256).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DatasetMeta {
    /// Per-image labels from the registered file's `images[]` (split keys such as nocaps'
    /// `domain`; see [`input::ImageFields::labels_of`]).
    pub labels: input::ImageFields,
    /// Every request against the dataset must have exactly one result per image (strict mode).
    pub require_complete: bool,
}

/// Canonical content hash of a reference set.
///
/// Each image is one line, the compact JSON array `[key kind, raw id, captions]` and a newline.
pub fn content_sha256(refs: &References) -> String {
    content_sha256_until(refs, &|| false).expect("a hash that is never stopped")
}

/// [`content_sha256`] that gives up once `stop()` is true (checked per 1,024 images).
fn content_sha256_until(refs: &References, stop: &dyn Fn() -> bool) -> Option<String> {
    // The hasher is an `io::Write`: each line is serialized straight into it.
    let mut h = Sha256::new();
    for (i, (id, caps)) in refs.images.iter().enumerate() {
        if i % 1024 == 0 && stop() {
            return None;
        }
        // A tuple is written as the JSON array, compact, like `Value`'s `to_string`.
        serde_json::to_writer(&mut h, &(key_kind(id), &id.raw, caps))
            .expect("strings and JSON values always serialize");
        h.update(b"\n");
    }
    Some(hex(&h.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// How to rebuild an id's comparison key from its raw value: `"map"` for a map key read as an
/// integer, `"value"` otherwise.
fn key_kind(id: &ImageId) -> &'static str {
    match (&id.raw, &id.key) {
        (Value::String(_), ImageKey::Int(_)) => "map",
        _ => "value",
    }
}

impl Dataset {
    /// Builds a dataset (tokenize, intern, document frequencies, vectors). Runs on the current
    /// rayon pool.
    pub fn build(name: &str, refs: References, created: u64) -> Result<Dataset, InputError> {
        Dataset::build_with(name, refs, created, DatasetMeta::default())
    }

    /// [`Dataset::build`] with labels and a submission policy.
    pub fn build_with(
        name: &str,
        refs: References,
        created: u64,
        meta: DatasetMeta,
    ) -> Result<Dataset, InputError> {
        Dataset::build_until(name, refs, created, meta, &|| false)
    }

    /// [`Dataset::build_with`] that stops once `stop()` is true (checked per caption while
    /// tokenizing, per 1,024 images while interning, per chunk of images and per n-gram
    /// partition while counting document frequencies, and between the stages), with the
    /// cancellation error. `stop` must stay true once it was.
    pub fn build_until(
        name: &str,
        refs: References,
        created: u64,
        meta: DatasetMeta,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Result<Dataset, InputError> {
        let check = || {
            if stop() {
                Err(crate::engine::cancelled())
            } else {
                Ok(())
            }
        };
        if refs.is_empty() {
            return Err(InputError::new(
                ErrorCode::EmptyResults,
                "dataset has no images",
            ));
        }
        let sha256 = content_sha256_until(&refs, stop).ok_or_else(crate::engine::cancelled)?;
        let image_count = refs.len();
        let flat: Vec<&str> = refs
            .images
            .iter()
            .flat_map(|(_, c)| c.iter().map(String::as_str))
            .collect();
        let texts =
            ptb::tokenize_stream_texts_until(&flat, stop).ok_or_else(crate::engine::cancelled)?;
        drop(flat);
        let tokenized = ImageTexts::from_counts(texts, refs.images.iter().map(|(_, c)| c.len()));
        check()?;
        let mut interner = Interner::new();
        let ids = RefIds::intern_until(&mut interner, &tokenized, stop)
            .ok_or_else(crate::engine::cancelled)?;
        let profiles: Vec<RefProfile> = (0..image_count)
            .map(|i| RefProfile::of(ids.image(i)))
            .collect();
        let vocab = Arc::new(interner.into_vocab());
        let base_interner = Interner::with_base(vocab.clone());
        let df = crate::stats::document_frequencies_until(
            (0..image_count)
                .map(|i| ids.image(i))
                .filter(|r| r.len() > 0),
            stop,
        )
        .ok_or_else(crate::engine::cancelled)?;
        let spice_graphs: Vec<RwLock<Option<(SceneGraph, bool)>>> =
            std::iter::repeat_with(|| RwLock::new(None))
                .take(image_count)
                .collect();
        // What it holds, counted on what was built (issue 27: an estimate from counts was 7
        // times that at 500,000 images), and an eighth more for the allocator's part-filled
        // pages (at 500,000 images the count alone was 5% below the memory the dataset held).
        let held = refs.heap_bytes()
            + tokenized.heap_bytes()
            + ids.heap_bytes()
            + vocab.heap_bytes()
            + df.heap_bytes()
            + crate::heap::vec(&profiles)
            + crate::heap::vec(&spice_graphs)
            + meta.labels.heap_bytes();
        let base_bytes = held + held / 8;
        let df_label = format!(
            "dataset:{name}@sha256:{sha256}(N={})",
            crate::stats::DocFreq::doc_count(&df)
        );
        Ok(Dataset {
            name: name.to_owned(),
            sha256,
            created,
            references: refs,
            tokenized,
            vocab,
            ids,
            df,
            df_label,
            interner: base_interner,
            spice_graphs,
            meta,
            base_bytes,
            profiles,
            graph_tokens: AtomicU64::new(0),
            last_used: AtomicU64::new(0),
        })
    }

    /// SPICE's merged reference graphs for `batch` (assembled against this dataset: items in
    /// dataset order), in evaluation order. `refs_tok` are the batch's tokenized references
    /// from [`Dataset::prepare`].
    ///
    /// An image whose references are tokenized as in the dataset stream (`tokenized`) gets the
    /// cached graph, built with `sp` the first time a request needs it and kept: a later
    /// submission only parses its candidates. An image with a reference re-tokenized for this
    /// subset's context gets a graph of its own, built from `refs_tok` and not cached. Either
    /// way the graph is the one the engine would build from `refs_tok`. A server has one
    /// [`Spice`]; the cache assumes every call passes that one. `None` when an item's image is
    /// not in the dataset or `refs_tok` does not match the batch.
    ///
    /// No lock is held while building (callers run on the rayon pool, where a thread waiting
    /// for a parallel build can pick up another request's job): concurrent requests may build
    /// the same image's graph; the first stored is kept (they are equal).
    fn spice_refs(
        &self,
        sp: &Spice,
        positions: &[usize],
        refs_tok: &ImageTexts,
        cancel: &(dyn Fn() -> bool + Sync),
    ) -> Result<Option<CachedGraphs>, InputError> {
        if refs_tok.images() != positions.len() {
            return Ok(None);
        }
        // Items to parse: (item, whether its graph is the cached kind).
        let todo: Vec<(usize, bool)> = positions
            .iter()
            .enumerate()
            .filter_map(|(i, &p)| {
                let cacheable = refs_tok.image(i).eq(self.tokenized.image(p));
                (!cacheable || !self.has_graph(p)).then_some((i, cacheable))
            })
            .collect();
        let mut own: Vec<Option<(SceneGraph, bool)>> = vec![None; positions.len()];
        let mut cached = positions.len();
        if !todo.is_empty() {
            let lists: Vec<Vec<&str>> = todo
                .iter()
                .map(|&(i, _)| refs_tok.image(i).collect())
                .collect();
            let images: Vec<&[&str]> = lists.iter().map(Vec::as_slice).collect();
            let (graphs, failed) = sp.caption_graphs_until(&images, cancel, &|_| {});
            if cancel() {
                // Possibly half-built: nothing of it is kept.
                return Err(crate::engine::cancelled());
            }
            for ((&(i, cacheable), g), f) in todo.iter().zip(graphs).zip(failed) {
                if cacheable {
                    let p = positions[i];
                    self.store_graph(p, (g, f));
                } else {
                    own[i] = Some((g, f));
                }
            }
            cached -= todo.len();
        }
        let Some(pairs) = own
            .into_par_iter()
            .zip(positions.par_iter())
            .map(|(g, &p)| g.or_else(|| self.graph(p)))
            .collect::<Option<Vec<_>>>()
        else {
            return Ok(None);
        };
        self.last_used.store(next_tick(), Ordering::Relaxed);
        let (graphs, failed) = pairs.into_iter().unzip();
        Ok(Some(CachedGraphs {
            graphs,
            failed,
            cached,
        }))
    }

    /// True when `batch` (assembled against this dataset) holds every image that has
    /// references: its own document frequencies are then exactly the dataset's.
    pub fn covers_all(&self, batch: &Batch) -> bool {
        batch.items.len() == crate::stats::DocFreq::doc_count(&self.df)
    }

    /// The references of image `key` as a request's cost sees them: their profile, and
    /// whether SPICE's merged graph of the image is built already (a request then parses only
    /// its candidate). `None` when the image is not in the dataset.
    pub fn reference_profile(&self, key: &ImageKey) -> Option<(RefProfile, bool)> {
        let p = self.references.position(key)?;
        Some((self.profiles[p], self.has_graph(p)))
    }

    /// The cached SPICE graph of image `p`, if built.
    fn graph(&self, p: usize) -> Option<(SceneGraph, bool)> {
        self.spice_graphs[p]
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn has_graph(&self, p: usize) -> bool {
        self.spice_graphs[p]
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// Keeps `g` as image `p`'s graph unless one is kept already (they are equal).
    fn store_graph(&self, p: usize, g: (SceneGraph, bool)) {
        let mut slot = self.spice_graphs[p]
            .write()
            .unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            *slot = Some(g);
            self.graph_tokens
                .fetch_add(self.profiles[p].tokens, Ordering::Relaxed);
        }
        self.last_used.store(next_tick(), Ordering::Relaxed);
    }

    /// Drops every cached SPICE graph (a later request builds what it needs again) and returns
    /// the bytes [`Dataset::resident_bytes`] counted for them.
    pub fn evict_graphs(&self) -> u64 {
        let mut tokens = 0;
        for (p, slot) in self.spice_graphs.iter().enumerate() {
            let mut slot = slot.write().unwrap_or_else(|e| e.into_inner());
            if slot.take().is_some() {
                tokens += self.profiles[p].tokens;
            }
        }
        self.graph_tokens.fetch_sub(tokens, Ordering::Relaxed);
        GRAPH_BYTES_PER_TOKEN * tokens
    }

    /// Bytes of [`Dataset::resident_bytes`] that [`Dataset::evict_graphs`] would free.
    pub fn graph_bytes(&self) -> u64 {
        GRAPH_BYTES_PER_TOKEN * self.graph_tokens.load(Ordering::Relaxed)
    }

    /// When SPICE last used this dataset's cached graphs: a tick that grows with every use in
    /// the process (0: never), for evicting the coldest first.
    pub fn last_used(&self) -> u64 {
        self.last_used.load(Ordering::Relaxed)
    }

    /// About the bytes this dataset holds in memory (captions, their tokenization, interned
    /// words, document frequencies and vectors, built SPICE graphs), for the server's memory
    /// budget. An estimate from counts, set against the server's RSS growth by
    /// `scripts/attack` (phase 6).
    pub fn resident_bytes(&self) -> u64 {
        self.base_bytes + self.graph_bytes()
    }

    /// Number of images.
    pub fn image_count(&self) -> usize {
        self.references.len()
    }

    /// Number of reference captions.
    pub fn caption_count(&self) -> usize {
        self.references.caption_count()
    }

    /// The dataset positions of a batch's items; `None` when one is not in the dataset.
    fn positions(&self, batch: &Batch) -> Option<Vec<usize>> {
        batch
            .items
            .iter()
            .map(|i| self.references.position(&i.image_id.key))
            .collect()
    }

    /// Tokenized and interned references for `batch`, a batch assembled against this dataset's
    /// references (items in dataset order), with the number of references that had to be
    /// re-tokenized for their subset context.
    fn tokenized_for(&self, positions: &[usize]) -> (ImageTexts, Interned<'_>, usize) {
        let mut interner = self.interner.clone();
        let mut tok_refs = ImageTexts::default();
        let mut ids = Vec::with_capacity(positions.len());
        let mut retokenized = 0;
        for (i, &p) in positions.iter().enumerate() {
            let caps = &self.references.images[p].1;
            let mut toks: Vec<Cow<'_, str>> = self.tokenized.image(p).map(Cow::Borrowed).collect();
            let mut image_ids: Vec<Cow<'_, [u32]>> = self.ids.image(p).map(Cow::Borrowed).collect();
            // Tail references: no settling reference after them in the same image.
            let tail_start = caps.iter().rposition(|c| settles(c)).unwrap_or(0);
            for k in tail_start..caps.len() {
                let subset_next = caps[k + 1..].iter().map(String::as_str).chain(
                    positions[i + 1..]
                        .iter()
                        .flat_map(|&q| self.references.images[q].1.iter().map(String::as_str)),
                );
                let dataset_next = caps[k + 1..].iter().map(String::as_str).chain(
                    self.references.images[p + 1..]
                        .iter()
                        .flat_map(|(_, c)| c.iter().map(String::as_str)),
                );
                let subset_ctx = context(subset_next);
                if subset_ctx == context(dataset_next) {
                    continue;
                }
                let t = tokenize_in_context(&caps[k], &subset_ctx);
                if t != toks[k] {
                    image_ids[k] = Cow::Owned(interner.intern_all(py_whitespace(&t)));
                    toks[k] = Cow::Owned(t);
                    retokenized += 1;
                }
            }
            tok_refs.push_image(&toks);
            ids.push(image_ids);
        }
        (tok_refs, Interned { interner, ids }, retokenized)
    }

    /// The dataset's document-frequency table, for `cider_df: "dataset"`.
    fn table(&self) -> DfTableRef<'_> {
        DfTableRef {
            table: &self.df,
            interner: &self.interner,
            label: &self.df_label,
        }
    }

    /// Writes the dataset's file (see [`DatasetFile`]) as it is serialized, through a 1 MiB
    /// buffer: neither a JSON tree of its captions nor its whole text is held (issue 27:
    /// registering 500,000 images built a tree of about 1.2 GB, then 250 MB of text, beside
    /// the dataset).
    fn write_file(&self, w: &mut dyn Write) -> std::io::Result<()> {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, w);
        serde_json::to_writer(&mut w, &DatasetFile(self))?;
        w.flush()
    }
}

/// A dataset's file: `{"format", "name", "sha256", "created", "require_complete", "images":
/// [{"image_id", "kind", "captions", "labels"?}, ...]}`, members in that order, each image's
/// labels by field name.
struct DatasetFile<'a>(&'a Dataset);

impl serde::Serialize for DatasetFile<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        struct Images<'a>(&'a Dataset);
        struct Image<'a>(&'a Dataset, &'a ImageId, &'a [String]);
        impl serde::Serialize for Images<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let images = &self.0.references.images;
                let mut seq = s.serialize_seq(Some(images.len()))?;
                for (id, caps) in images {
                    seq.serialize_element(&Image(self.0, id, caps))?;
                }
                seq.end()
            }
        }
        impl serde::Serialize for Image<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let Image(ds, id, caps) = *self;
                let labels: BTreeMap<&str, &str> = ds
                    .meta
                    .labels
                    .0
                    .iter()
                    .filter_map(|(f, m)| m.get(&id.key).map(|l| (f.as_str(), l.as_str())))
                    .collect();
                let mut o = s.serialize_map(None)?;
                o.serialize_entry("image_id", &id.raw)?;
                o.serialize_entry("kind", key_kind(id))?;
                o.serialize_entry("captions", caps)?;
                if !labels.is_empty() {
                    o.serialize_entry("labels", &labels)?;
                }
                o.end()
            }
        }
        let ds = self.0;
        let mut o = s.serialize_map(None)?;
        o.serialize_entry("format", &FORMAT)?;
        o.serialize_entry("name", &ds.name)?;
        o.serialize_entry("sha256", &ds.sha256)?;
        o.serialize_entry("created", &ds.created)?;
        o.serialize_entry("require_complete", &ds.meta.require_complete)?;
        o.serialize_entry("images", &Images(ds))?;
        o.end()
    }
}

/// A registered dataset as a reference source: its cached tokenization (corrected for the
/// subset's lookahead context), interned words, document-frequency table and SPICE graphs.
impl ReferenceSource for Dataset {
    fn assemble(&self, candidates: Vec<Candidate>) -> Result<Batch, InputError> {
        input::assemble(&self.references, candidates)
    }

    fn prepare(
        &self,
        batch: &Batch,
        req: &PrepareRequest<'_>,
    ) -> Result<PreparedRefs<'_>, InputError> {
        let not_ours = || {
            InputError::new(
                ErrorCode::Internal,
                format!("batch was not assembled against dataset {:?}", self.name),
            )
        };
        if !req.tokenize {
            return Err(InputError::new(
                ErrorCode::InvalidFormat,
                "a registered dataset keeps its references tokenized: pre-tokenized scoring needs inline references",
            ));
        }
        let positions = self.positions(batch).ok_or_else(not_ours)?;
        let (tokenized, interned, retokenized) = self.tokenized_for(&positions);
        // The whole dataset, nothing re-tokenized: the batch's own table IS the dataset's.
        let whole = self.covers_all(batch);
        let batch_table = (whole && retokenized == 0).then(|| self.table());
        let spice = match req.spice {
            Some(sp) => Some(
                self.spice_refs(sp, &positions, &tokenized, req.cancel)?
                    .ok_or_else(not_ours)?,
            ),
            None => None,
        };
        Ok(PreparedRefs {
            tokenized,
            interned: Some(interned),
            batch_table,
            spice,
        })
    }

    fn df_table(&self) -> Option<DfTableRef<'_>> {
        Some(self.table())
    }
}

/// The following captions up to and including the first settling one.
fn context<'a>(following: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut out = Vec::new();
    for f in following {
        out.push(f);
        if settles(f) {
            break;
        }
    }
    out
}

/// Reads references back from a dataset file.
fn parse_file(v: &Value) -> Result<(String, String, u64, References, DatasetMeta), String> {
    if v.get("format").and_then(Value::as_u64) != Some(FORMAT) {
        return Err("unknown format".into());
    }
    let name = v
        .get("name")
        .and_then(Value::as_str)
        .ok_or("missing name")?
        .to_owned();
    let sha = v
        .get("sha256")
        .and_then(Value::as_str)
        .ok_or("missing sha256")?
        .to_owned();
    let created = v.get("created").and_then(Value::as_u64).unwrap_or(0);
    let images = v
        .get("images")
        .and_then(Value::as_array)
        .ok_or("missing images")?;
    let mut pairs = Vec::with_capacity(images.len());
    let mut meta = DatasetMeta {
        require_complete: v.get("require_complete").and_then(Value::as_bool) == Some(true),
        ..DatasetMeta::default()
    };
    for img in images {
        let raw = img.get("image_id").ok_or("missing image_id")?;
        let id = match (img.get("kind").and_then(Value::as_str), raw) {
            (Some("map"), Value::String(s)) => ImageId::from_map_key(s),
            _ => ImageId::from_value(raw).ok_or("bad image_id")?,
        };
        for (f, l) in img
            .get("labels")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let l = l.as_str().ok_or("label not a string")?;
            meta.labels
                .0
                .entry(f.clone())
                .or_default()
                .insert(id.key.clone(), l.to_owned());
        }
        let caps = img
            .get("captions")
            .and_then(Value::as_array)
            .ok_or("missing captions")?
            .iter()
            .map(|c| c.as_str().map(str::to_owned).ok_or("caption not a string"))
            .collect::<Result<Vec<_>, _>>()?;
        pairs.push((id, caps));
    }
    Ok((name, sha, created, References::from_pairs(pairs), meta))
}

/// The marker of temporary files: `~` is outside the dataset name alphabet, so no dataset's
/// file can carry it.
const TMP_MARKER: &str = "~tmp-";

/// True for a temporary file left by an interrupted write: this version's (`~tmp-`) or an
/// earlier version's (`<name>.json.tmp-<pid>-<n>`, which never ends in `.json`, unlike the file
/// of a dataset whose name merely contains `.json.tmp-`).
fn is_temporary(fname: &str) -> bool {
    fname.contains(TMP_MARKER) || (fname.contains(".json.tmp-") && !fname.ends_with(".json"))
}

/// Writes `bytes` to `path` atomically: a uniquely named temporary file in the same folder
/// (`.<name>~tmp-<pid>-<n>`, a name no dataset file can have), `fsync`, `rename`, then an
/// `fsync` of the folder so the rename itself is durable.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_stamped(path, &mut |f| write_in_pieces(f, bytes)).map(|_| ())
}

/// [`write_atomically`] of what `body` writes to the temporary file (a large output written
/// as it is made).
pub fn write_atomically_with(
    path: &Path,
    body: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    write_stamped(path, body).map(|_| ())
}

/// `w.write_all(bytes)` in pieces of 1 MiB: one write(2) of a 128 MB report took 0.4-1 s of
/// system time (about 0.03 s in pieces; issue 27).
pub fn write_in_pieces(w: &mut dyn Write, bytes: &[u8]) -> std::io::Result<()> {
    bytes
        .chunks(1 << 20)
        .try_for_each(|piece| w.write_all(piece))
}

/// [`write_atomically`], returning the stamp of the file it wrote, taken from the temporary
/// file's own handle before the rename (a rename keeps size, modification time and inode). A
/// stamp read from `path` after the rename could be another replica's file, renamed over ours
/// in between: the registry would then take that file for the version it holds in memory.
fn write_stamped(
    path: &Path,
    body: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<FileStamp> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(
        ".{name}{TMP_MARKER}{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        body(&mut f)?;
        f.sync_all()?;
        let stamp = FileStamp::of_metadata(&f.metadata()?);
        std::fs::rename(&tmp, path)?;
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(stamp)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Errors of the dataset registry.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    /// The name does not match `[A-Za-z0-9._-]{1,64}`.
    #[error("invalid dataset name {0:?}: use 1 to 64 characters from A-Z a-z 0-9 . _ -")]
    InvalidName(String),
    /// No such dataset.
    #[error("unknown dataset {0:?}")]
    NotFound(String),
    /// Bad content.
    #[error(transparent)]
    Input(#[from] InputError),
    /// Disk failure.
    #[error("dataset storage: {0}")]
    Io(#[from] std::io::Error),
    /// The registration was abandoned (its request timed out or its client left) before it
    /// was committed: nothing was registered.
    #[error("the registration of dataset {0:?} was abandoned before it was committed; nothing was registered")]
    Abandoned(String),
}

/// What a dataset file looked like when it was loaded or written: size, modification time and
/// (on Unix) inode, which an atomic replacement always changes. A replica compares it with the
/// file on each request naming the dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileStamp {
    len: u64,
    mtime_ns: i128,
    ino: u64,
}

impl FileStamp {
    /// The stamp of `path`; `Ok(None)` when there is no such file.
    fn of(path: &Path) -> std::io::Result<Option<FileStamp>> {
        match std::fs::metadata(path) {
            Ok(m) => Ok(Some(FileStamp::of_metadata(&m))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn of_metadata(m: &std::fs::Metadata) -> FileStamp {
        let mtime_ns = m
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as i128);
        #[cfg(unix)]
        let ino = std::os::unix::fs::MetadataExt::ino(m);
        #[cfg(not(unix))]
        let ino = 0;
        FileStamp {
            len: m.len(),
            mtime_ns,
            ino,
        }
    }
}

/// A dataset in memory with the stamp of the file it came from (none in memory-only
/// registries).
#[derive(Debug, Clone)]
struct Entry {
    ds: Arc<Dataset>,
    stamp: Option<FileStamp>,
}

/// What a registration did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutOutcome {
    /// A new dataset.
    Created,
    /// An existing dataset was replaced by different content.
    Replaced,
    /// The same content was already registered: nothing changed.
    Unchanged,
}

/// The registered datasets, in memory and in the data directory.
#[derive(Debug)]
pub struct Registry {
    dir: Option<PathBuf>,
    map: RwLock<BTreeMap<String, Entry>>,
    /// Serialises writers (disk then memory) so the two never disagree.
    write: Mutex<()>,
}

impl Registry {
    /// A registry persisted in `<data_dir>/datasets` (created if needed), with every dataset
    /// found there loaded; `None` keeps datasets in memory only. Returns the registry and the
    /// files that could not be loaded, with the reason.
    pub fn open(data_dir: Option<&Path>) -> std::io::Result<(Registry, Vec<(PathBuf, String)>)> {
        let mut map = BTreeMap::new();
        let mut failed = Vec::new();
        let dir = match data_dir {
            Some(d) => {
                let dir = d.join("datasets");
                std::fs::create_dir_all(&dir)?;
                let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)?
                    .flatten()
                    .map(|e| e.path())
                    .collect();
                files.sort();
                for path in files {
                    let fname = path
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    if is_temporary(&fname) {
                        // Left by a crash during a write: the old file (if any) is intact.
                        let _ = std::fs::remove_file(&path);
                        continue;
                    }
                    let Some(stem) = fname.strip_suffix(".json") else {
                        continue;
                    };
                    match load_file(&path, stem) {
                        Ok((ds, stamp)) => {
                            map.insert(
                                ds.name.clone(),
                                Entry {
                                    ds: Arc::new(ds),
                                    stamp: Some(stamp),
                                },
                            );
                        }
                        Err(e) => failed.push((path, e)),
                    }
                }
                Some(dir)
            }
            None => None,
        };
        Ok((
            Registry {
                dir,
                map: RwLock::new(map),
                write: Mutex::new(()),
            },
            failed,
        ))
    }

    /// The dataset called `name`, as this registry holds it in memory.
    pub fn get(&self, name: &str) -> Option<Arc<Dataset>> {
        Some(self.map.read().ok()?.get(name)?.ds.clone())
    }

    /// The dataset called `name` as the data directory has it now: loaded when another process
    /// (a replica sharing the volume) registered it after this one started, reloaded when its
    /// file was replaced, dropped when its file was deleted. The check is one `stat` of the file
    /// (size, modification time, inode); CPU-heavy only when it (re)loads: call it from a worker
    /// pool.
    pub fn get_or_load(&self, name: &str) -> Result<Option<Arc<Dataset>>, DatasetError> {
        let Some(dir) = self.dir.as_ref() else {
            return Ok(self.get(name));
        };
        if !valid_name(name) {
            return Ok(None);
        }
        let path = dir.join(format!("{name}.json"));
        let held = self.map.read().ok().and_then(|m| m.get(name).cloned());
        let stamp = FileStamp::of(&path)?;
        match (held, stamp) {
            (Some(e), Some(s)) if e.stamp == Some(s) => return Ok(Some(e.ds)),
            (held, None) => {
                if held.is_some() {
                    // Deleted by another process.
                    let _guard = self.write.lock().unwrap_or_else(|e| e.into_inner());
                    if FileStamp::of(&path)?.is_none() {
                        self.map
                            .write()
                            .unwrap_or_else(|e| e.into_inner())
                            .remove(name);
                    }
                }
                return Ok(None);
            }
            _ => {}
        }
        // New or replaced by another process: (re)load it, then keep it unless a writer of
        // this process changed the file meanwhile.
        let (ds, stamp) = match load_file(&path, name) {
            Ok((ds, stamp)) => (Arc::new(ds), Some(stamp)),
            Err(why) => {
                tracing::error!(file = %path.display(), error = %why, "dataset not loaded");
                return Err(DatasetError::Io(std::io::Error::other(format!(
                    "dataset file {} does not load: {why}",
                    path.display()
                ))));
            }
        };
        let _guard = self.write.lock().unwrap_or_else(|e| e.into_inner());
        let mut map = self.map.write().unwrap_or_else(|e| e.into_inner());
        if FileStamp::of(&path)? != stamp {
            // Changed again while loading: the next request sees the newest.
            return Ok(Some(ds));
        }
        map.insert(
            name.to_owned(),
            Entry {
                ds: ds.clone(),
                stamp,
            },
        );
        Ok(Some(ds))
    }

    /// The dataset called `name` ([`Registry::get_or_load`]), or why not: an invalid name or
    /// no such dataset.
    pub fn named(&self, name: &str) -> Result<Arc<Dataset>, DatasetError> {
        if !valid_name(name) {
            return Err(DatasetError::InvalidName(name.to_owned()));
        }
        self.get_or_load(name)?
            .ok_or_else(|| DatasetError::NotFound(name.to_owned()))
    }

    /// Every dataset, by name.
    pub fn list(&self) -> Vec<Arc<Dataset>> {
        self.map
            .read()
            .map(|m| m.values().map(|e| e.ds.clone()).collect())
            .unwrap_or_default()
    }

    /// Number of datasets.
    pub fn len(&self) -> usize {
        self.map.read().map(|m| m.len()).unwrap_or(0)
    }

    /// True when no dataset is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Registers `refs` as `name` (CPU-heavy: call it from a worker pool). Identical content
    /// is a no-op.
    pub fn put(
        &self,
        name: &str,
        refs: References,
        now: u64,
    ) -> Result<(PutOutcome, Arc<Dataset>), DatasetError> {
        self.put_unless_abandoned(name, refs, DatasetMeta::default(), now, &|_| true, &|| {
            false
        })
    }

    /// [`Registry::put`] that stops building once `stop()` is true and commits (writes the
    /// file and registers) only when `commit(&built)` returns true, called once, with the registry's write lock held, right
    /// before: a registration whose request was abandoned (or that the server's memory budget
    /// cannot hold) leaves nothing behind ([`DatasetError::Abandoned`]; the caller knows why).
    pub fn put_unless_abandoned(
        &self,
        name: &str,
        refs: References,
        meta: DatasetMeta,
        now: u64,
        commit: &dyn Fn(&Dataset) -> bool,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Result<(PutOutcome, Arc<Dataset>), DatasetError> {
        if !valid_name(name) {
            return Err(DatasetError::InvalidName(name.to_owned()));
        }
        if let Some(old) = self.get_or_load(name)? {
            if old.sha256 == content_sha256(&refs) && old.meta == meta {
                if !commit(&old) {
                    return Err(DatasetError::Abandoned(name.to_owned()));
                }
                return Ok((PutOutcome::Unchanged, old));
            }
        }
        let ds = match Dataset::build_until(name, refs, now, meta, stop) {
            Ok(ds) => Arc::new(ds),
            Err(_) if stop() => return Err(DatasetError::Abandoned(name.to_owned())),
            Err(e) => return Err(e.into()),
        };
        let _guard = self.write.lock().unwrap_or_else(|e| e.into_inner());
        if !commit(&ds) {
            return Err(DatasetError::Abandoned(name.to_owned()));
        }
        let mut stamp = None;
        let mut existed = self.get(name).is_some();
        if let Some(dir) = &self.dir {
            let path = dir.join(format!("{name}.json"));
            existed = path.exists();
            stamp = Some(write_stamped(&path, &mut |f| ds.write_file(f))?);
        }
        let mut map = self.map.write().unwrap_or_else(|e| e.into_inner());
        map.insert(
            name.to_owned(),
            Entry {
                ds: ds.clone(),
                stamp,
            },
        );
        let outcome = if existed {
            PutOutcome::Replaced
        } else {
            PutOutcome::Created
        };
        Ok((outcome, ds))
    }

    /// Removes `name` from disk and memory.
    pub fn delete(&self, name: &str) -> Result<(), DatasetError> {
        if !valid_name(name) {
            return Err(DatasetError::InvalidName(name.to_owned()));
        }
        let _guard = self.write.lock().unwrap_or_else(|e| e.into_inner());
        let on_disk = match &self.dir {
            Some(dir) => dir.join(format!("{name}.json")).exists(),
            None => false,
        };
        if self.get(name).is_none() && !on_disk {
            return Err(DatasetError::NotFound(name.to_owned()));
        }
        if let Some(dir) = &self.dir {
            match std::fs::remove_file(dir.join(format!("{name}.json"))) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e.into()),
            }
            if let Ok(d) = std::fs::File::open(dir) {
                let _ = d.sync_all();
            }
        }
        self.map
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(name);
        Ok(())
    }
}

/// Loads a dataset file with the stamp of the very file read (taken from the open handle, so a
/// replacement between the stamp and the read cannot pair one version's stamp with another's
/// content).
fn load_file(path: &Path, stem: &str) -> Result<(Dataset, FileStamp), String> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let stamp = FileStamp::of_metadata(&f.metadata().map_err(|e| e.to_string())?);
    let mut text = String::new();
    f.read_to_string(&mut text).map_err(|e| e.to_string())?;
    let v: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let (name, sha, created, refs, meta) = parse_file(&v)?;
    if name != stem || !valid_name(&name) {
        return Err(format!("name {name:?} does not match the file name"));
    }
    if content_sha256(&refs) != sha {
        return Err("content does not match its sha256".into());
    }
    let ds = Dataset::build_with(&name, refs, created, meta).map_err(|e| e.to_string())?;
    Ok((ds, stamp))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{assemble, parse_candidates, parse_references};
    use serde_json::json;

    /// The file as the tree it was built from before (issue 27).
    fn tree_file(ds: &Dataset) -> Value {
        let images: Vec<Value> = ds
            .references
            .images
            .iter()
            .map(|(id, caps)| {
                let mut o = json!({"image_id": id.raw, "kind": key_kind(id), "captions": caps});
                let labels: serde_json::Map<String, Value> = ds
                    .meta
                    .labels
                    .0
                    .iter()
                    .filter_map(|(f, m)| m.get(&id.key).map(|l| (f.clone(), json!(l))))
                    .collect();
                if !labels.is_empty() {
                    o["labels"] = Value::Object(labels);
                }
                o
            })
            .collect();
        json!({
            "format": FORMAT,
            "name": ds.name,
            "sha256": ds.sha256,
            "created": ds.created,
            "require_complete": ds.meta.require_complete,
            "images": images,
        })
    }

    /// The file is serialized as it is written (no tree of its captions), to the bytes the
    /// tree gave: integer, string and map-key ids, labels on some images, escapes.
    #[test]
    fn the_file_is_written_as_its_tree_was() {
        let refs = parse_references(&json!({
            "images": [{"id": 2, "domain": "in"}, {"id": "b"}, {"id": 3, "domain": "out", "split": "x"}],
            "annotations": [
                {"image_id": 2, "caption": "a \"quoted\" dog\n"},
                {"image_id": "b", "caption": "café"},
                {"image_id": 3, "caption": "one"},
                {"image_id": 3, "caption": "two"}
            ]
        }))
        .unwrap();
        let labels = input::ImageFields::labels_of(&json!({"images": [
            {"id": 2, "domain": "in"}, {"id": "b"}, {"id": 3, "domain": "out", "split": "x"}
        ]}));
        let meta = DatasetMeta {
            labels,
            require_complete: true,
        };
        let ds = Dataset::build_with("d", refs, 7, meta).unwrap();
        let written = |ds: &Dataset| {
            let mut out = Vec::new();
            ds.write_file(&mut out).unwrap();
            out
        };
        let tree = serde_json::to_vec(&tree_file(&ds)).unwrap();
        assert_eq!(
            String::from_utf8(written(&ds)).unwrap(),
            String::from_utf8(tree).unwrap()
        );
        let map = parse_references(&json!({"1": ["a"], "x": ["b"]})).unwrap();
        let ds = Dataset::build("m", map, 1).unwrap();
        let tree = serde_json::to_vec(&tree_file(&ds)).unwrap();
        assert_eq!(written(&ds), tree);
    }

    #[test]
    fn names_are_checked() {
        assert!(valid_name("coco-val_2014.v1"));
        assert!(!valid_name(""));
        assert!(!valid_name("a/b"));
        assert!(!valid_name(&"x".repeat(65)));
        // Issue 29: the folder names are not dataset names.
        assert!(!valid_name(".") && !valid_name(".."));
        assert!(valid_name("...") && valid_name(".a"));
        assert!(!valid_name("é"));
    }

    /// Issue 18: a dataset named like an old temporary file survives a restart; this version's
    /// temporary files (a `~`, outside the name alphabet) are removed.
    #[test]
    fn a_dataset_named_like_a_temporary_file_survives_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let (reg, _) = Registry::open(Some(dir.path())).unwrap();
        let refs = parse_references(&json!({"1": ["a dog runs"]})).unwrap();
        reg.put("coco.json.tmp-1", refs, 1).unwrap();
        let stray = dir.path().join("datasets").join(".x.json~tmp-1-0");
        std::fs::write(&stray, "partial").unwrap();
        let legacy = dir.path().join("datasets").join("y.json.tmp-12-0");
        std::fs::write(&legacy, "partial").unwrap();
        let (reg2, failed) = Registry::open(Some(dir.path())).unwrap();
        assert!(failed.is_empty(), "{failed:?}");
        assert!(reg2.get("coco.json.tmp-1").is_some());
        assert!(!stray.exists() && !legacy.exists());
    }

    /// Issue 29: cached SPICE graphs count in the resident size and are evicted whole; the
    /// dataset's last use moves forward with each use.
    #[test]
    fn cached_graphs_are_counted_and_evicted() {
        let (reg, _) = Registry::open(None).unwrap();
        let refs =
            parse_references(&json!({"1": ["a dog runs", "a dog"], "2": ["a cat sits"]})).unwrap();
        let (_, ds) = reg.put("d", refs, 1).unwrap();
        let base = ds.resident_bytes();
        assert_eq!((ds.graph_bytes(), ds.last_used()), (0, 0));
        let graph = || (crate::metrics::spice::SceneGraph::new(true), false);
        ds.store_graph(0, graph());
        let first = ds.last_used();
        assert!(first > 0 && ds.has_graph(0) && !ds.has_graph(1));
        // Image 1's references: "a dog runs", "a dog": 5 tokens.
        assert_eq!(ds.graph_bytes(), GRAPH_BYTES_PER_TOKEN * 5);
        ds.store_graph(0, graph());
        assert_eq!(ds.graph_bytes(), GRAPH_BYTES_PER_TOKEN * 5, "kept once");
        ds.store_graph(1, graph());
        assert!(ds.last_used() > first);
        assert_eq!(ds.resident_bytes(), base + GRAPH_BYTES_PER_TOKEN * 8);
        assert_eq!(ds.evict_graphs(), GRAPH_BYTES_PER_TOKEN * 8);
        assert!(!ds.has_graph(0) && !ds.has_graph(1));
        assert_eq!((ds.resident_bytes(), ds.evict_graphs()), (base, 0));
    }

    #[test]
    fn persists_and_reloads_with_the_same_hash_and_id_kinds() {
        let dir = tempfile::tempdir().unwrap();
        let (reg, failed) = Registry::open(Some(dir.path())).unwrap();
        assert!(failed.is_empty());
        let refs = parse_references(&json!({"1": ["a dog runs"], "x": ["a cat sits"]})).unwrap();
        let (o, ds) = reg.put("d", refs.clone(), 7).unwrap();
        assert_eq!(o, PutOutcome::Created);
        assert_eq!(reg.put("d", refs, 8).unwrap().0, PutOutcome::Unchanged);
        let (reg2, failed) = Registry::open(Some(dir.path())).unwrap();
        assert!(failed.is_empty());
        let ds2 = reg2.get("d").unwrap();
        assert_eq!(ds2.sha256, ds.sha256);
        assert_eq!(ds2.created, 7);
        assert_eq!(ds2.references.images[0].1, vec!["a dog runs".to_owned()]);
        // The map key "1" still matches the integer id 1.
        let b = assemble(
            &ds2.references,
            parse_candidates(&json!([{"image_id": 1, "caption": "a dog"}])).unwrap(),
        );
        assert!(b.is_ok());
        reg2.delete("d").unwrap();
        assert!(Registry::open(Some(dir.path())).unwrap().0.is_empty());
    }

    /// Issue 29: two replicas on one data folder register the same dataset at once, over and
    /// over. Whatever the interleaving, once both are done each replica serves the version the
    /// file holds (a stamp read after the rename could pair the other replica's file with this
    /// replica's dataset, which it then served as current).
    #[test]
    fn concurrent_replicas_never_keep_a_stale_version() {
        let dir = tempfile::tempdir().unwrap();
        let a = Registry::open(Some(dir.path())).unwrap().0;
        let b = Registry::open(Some(dir.path())).unwrap().0;
        let path = dir.path().join("datasets").join("d.json");
        for round in 0..40 {
            std::thread::scope(|s| {
                for (k, reg) in [&a, &b].into_iter().enumerate() {
                    s.spawn(move || {
                        let caption = format!("round {round} replica {k}");
                        let refs = parse_references(&json!({"1": [caption]})).unwrap();
                        reg.put("d", refs, 1).unwrap();
                    });
                }
            });
            let on_disk: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            let sha = on_disk["sha256"].as_str().unwrap();
            for reg in [&a, &b] {
                let served = reg.get_or_load("d").unwrap().unwrap();
                assert_eq!(
                    served.sha256, sha,
                    "round {round}: a replica serves a stale version"
                );
            }
        }
    }

    fn never() -> bool {
        false
    }

    /// Issue 29: a build whose request was abandoned stops with the cancellation error (the
    /// check runs per caption from the tokenizer on), and registers nothing.
    #[test]
    fn an_abandoned_build_stops_and_registers_nothing() {
        let refs = parse_references(&json!({"1": ["a dog runs"], "2": ["a cat sits"]})).unwrap();
        let calls = AtomicU64::new(0);
        let stop = || calls.fetch_add(1, Ordering::Relaxed) >= 1;
        let e =
            Dataset::build_until("d", refs.clone(), 0, DatasetMeta::default(), &stop).unwrap_err();
        assert_eq!(e.code, ErrorCode::Timeout);
        let reg = Registry::open(None).unwrap().0;
        let e = reg
            .put_unless_abandoned("d", refs, DatasetMeta::default(), 0, &|_| true, &|| true)
            .unwrap_err();
        assert!(matches!(e, DatasetError::Abandoned(_)), "{e}");
        assert!(reg.get("d").is_none());
    }

    /// The hash written without a tree per image is the one every stored dataset was
    /// registered with (`json!([kind, raw id, captions]).to_string()` per line).
    #[test]
    fn the_content_hash_is_the_one_of_the_json_lines() {
        let json_lines = |refs: &References| {
            let mut h = Sha256::new();
            for (id, caps) in &refs.images {
                h.update(json!([key_kind(id), id.raw, caps]).to_string().as_bytes());
                h.update(b"\n");
            }
            hex(&h.finalize())
        };
        let refs = parse_references(&json!({
            "1": ["a \"quoted\" dog", "caf\u{e9} \u{1F600}\n\t\\"],
            "x": ["a cat"],
            "22": ["\u{0} \u{7f} \u{2028}"]
        }))
        .unwrap();
        assert_eq!(content_sha256(&refs), json_lines(&refs));
        // Ids given as values (a COCO file), integer and string.
        let refs = parse_references(&json!({"annotations": [
            {"image_id": 7, "caption": "x"},
            {"image_id": "7", "caption": "y"}
        ]}))
        .unwrap();
        assert_eq!(content_sha256(&refs), json_lines(&refs));
    }

    /// A build stopped at any of its last checks (interning per 1,024 images, the document
    /// frequencies per chunk and partition) stops with the cancellation error; one stopped at
    /// none is the plain build.
    #[test]
    fn a_build_stops_within_interning_and_counting() {
        let refs: serde_json::Map<String, Value> = (0..3000)
            .map(|i| {
                (
                    i.to_string(),
                    json!([format!("a dog number {i} runs"), "a cat"]),
                )
            })
            .collect();
        let refs = parse_references(&Value::Object(refs)).unwrap();
        let calls = AtomicU64::new(0);
        let counted = || calls.fetch_add(1, Ordering::Relaxed) == u64::MAX;
        let whole =
            Dataset::build_until("d", refs.clone(), 0, DatasetMeta::default(), &counted).unwrap();
        let checks = calls.load(Ordering::Relaxed);
        for k in checks.saturating_sub(40)..=checks {
            let n = AtomicU64::new(0);
            let stop = || n.fetch_add(1, Ordering::Relaxed) >= k;
            match Dataset::build_until("d", refs.clone(), 0, DatasetMeta::default(), &stop) {
                Err(e) => {
                    assert_eq!(e.code, ErrorCode::Timeout);
                    assert!(k < checks);
                }
                Ok(ds) => {
                    assert_eq!(k, checks, "built although stopped at check {k} of {checks}");
                    assert_eq!(ds.df_label, whole.df_label);
                    assert_eq!(
                        crate::stats::DocFreq::len(&ds.df),
                        crate::stats::DocFreq::len(&whole.df)
                    );
                }
            }
        }
    }

    const REQ: PrepareRequest<'static> = PrepareRequest {
        tokenize: true,
        spice: None,
        cancel: &never,
    };

    /// Every reference's word ids are its tokenized words (split as BLEU and CIDEr split
    /// them) looked up in the vocabulary, in order, empty and blank references included; the
    /// profiles count them.
    #[test]
    fn word_ids_are_the_tokenized_words() {
        let refs = parse_references(&json!({
            "1": ["A man rides a horse.", "", "a man  on a horse"],
            "2": [],
            "3": ["   ", "Cakes, cookies etc.", "a horse"],
            "x": ["The U.S. flag"]
        }))
        .unwrap();
        let ds = Dataset::build("t", refs, 0).unwrap();
        assert_eq!((ds.ids.images(), ds.tokenized.images()), (4, 4));
        let mut words = 0;
        for i in 0..4 {
            let tok: Vec<&str> = ds.tokenized.image(i).collect();
            let ids: Vec<&[u32]> = ds.ids.image(i).collect();
            assert_eq!(ids.len(), tok.len());
            for (t, got) in tok.iter().zip(&ids) {
                let want: Vec<u32> = py_whitespace(t).map(|w| ds.vocab.get(w).unwrap()).collect();
                assert_eq!(*got, want.as_slice(), "{t:?}");
                words += want.len();
            }
            assert_eq!(ds.profiles[i].captions as usize, tok.len());
        }
        // 5 + 0 + 5, none, 0 + 3 + 2, 3: punctuation goes, "etc." is one word.
        assert_eq!(words, 18);
        assert_eq!(ds.profiles.iter().map(|p| p.tokens).sum::<u64>(), 18);
        assert_eq!(RefIds::default().images(), 0);
    }

    #[test]
    fn subset_retokenizes_tail_references_only_when_the_context_differs() {
        let refs =
            parse_references(&json!({"1": ["A b", "c d."], "2": ["E f"], "3": ["g h"]})).unwrap();
        let ds = Dataset::build("t", refs, 0).unwrap();
        let b = assemble(
            &ds.references,
            parse_candidates(&json!({"1": "x", "3": "y"})).unwrap(),
        )
        .unwrap();
        let prep = ds.prepare(&b, &REQ).unwrap();
        let tok = prep.tokenized.to_lists();
        assert_eq!(tok.len(), 2);
        assert_eq!(prep.interned.unwrap().ids.len(), 2);
        // Equals tokenizing the subset stream directly.
        let stream = ["A b", "c d.", "g h"];
        let direct = ptb::tokenize_stream(&stream);
        assert_eq!(tok[0], direct[..2].to_vec());
        assert_eq!(tok[1], direct[2..].to_vec());
    }

    /// Every subset of a dataset whose tail references sit on the lookahead classes of spec
    /// COCO §3.6 (single letters, `etc.`, blank and space-led next lines, end of stream):
    /// prepared references equal the subset stream tokenized directly. (Bites once the exact
    /// tokenizer replaces the context-free placeholder.)
    #[test]
    fn every_subset_matches_direct_tokenization_of_its_stream() {
        let refs = parse_references(&json!({
            "1": ["A sign at 8th Ave/CTH D.", "Street sign CTH D."],
            "2": ["a wax head on a shelf", "Cakes, cookies etc."],
            "3": ["", " A tan dog runs.", "Mr. Smith at the U.S."],
            "4": ["A tan dog sits", "   ", "art."],
            "5": ["(a) dog K.", "\"quoted\" dog"]
        }))
        .unwrap();
        let ds = Dataset::build("t", refs.clone(), 0).unwrap();
        let n = refs.len();
        for mask in 1u32..(1 << n) {
            let ids: Vec<String> = (0..n)
                .filter(|i| mask & (1 << i) != 0)
                .map(|i| (i + 1).to_string())
                .collect();
            let cands: serde_json::Map<String, Value> =
                ids.iter().map(|i| (i.clone(), json!("x"))).collect();
            let b = assemble(
                &ds.references,
                parse_candidates(&Value::Object(cands)).unwrap(),
            )
            .unwrap();
            let prep = ds.prepare(&b, &REQ).unwrap();
            let tok = prep.tokenized;
            let stream: Vec<&str> = b
                .items
                .iter()
                .flat_map(|i| i.references.iter().map(String::as_str))
                .collect();
            let direct = ptb::tokenize_stream(&stream);
            let got = tok.all().to_strings();
            assert_eq!(got, direct, "subset {ids:?}");
            assert_eq!(prep.interned.unwrap().ids.len(), b.items.len());
        }
    }
}
