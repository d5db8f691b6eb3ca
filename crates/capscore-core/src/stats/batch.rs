//! A batch of borrowed captions, interned, counted and weighted in parallel: the word ids of
//! every caption, the ids of every n-gram, and each n-gram's document frequency and CIDEr
//! weight. The one partitioned document-frequency counter lives here
//! ([`document_frequencies`] reads it out as a table).

use rayon::prelude::*;

use super::df::{DfTable, DocFreq};
use super::grams::{count_into, GramIndex, Grams, Matches};
use super::ngram::{Ngram, MAX_ORDER};
use super::split;
use super::table::{GramKey, KeyTable};
use super::words::{Interner, WordTable};

// Scoring a batch interns every word and every n-gram once, in parallel, then scores each image
// from compact id lists:
//
// 1. words ([`Words`], the only stage that reads the text: the caller may free it after),
//    a group of chunks at a time ([`group_chunks`]: the whole batch up to [`ONE_GROUP`]
//    chunks, else [`GROUP_CHUNKS`]): each chunk of images interns its captions'
//    words into a chunk-local vocabulary (in parallel); the words the batch's [`Interner`]
//    knows keep their ids, and the new ones are numbered by hash part (in parallel over
//    [`WORD_PARTS`] parts), after those of the groups before; only a group's vocabularies are
//    held at once. Once every group is numbered, the parts' offsets after the interner's ids
//    are known, and each chunk's map of local ids to batch ids is resolved (in parallel);
// 2. batch word ids: each chunk maps its local ids in place, a group at a time, as the
//    n-grams are built;
// 3. n-gram ids, a group of chunks at a time (as the words): each chunk of the group lists
//    its n-gram windows of orders 2..=4, keyed by packed word ids, into [`PARTS`] hash
//    partitions (in parallel over chunks); each partition interns the group's windows into its
//    table, chunk after chunk, an image's reference windows (counting document frequencies)
//    then its chunk's candidate windows (in parallel over partitions); each chunk then keeps
//    one id per window, in window order (in parallel over chunks; 3 bytes an id while every id
//    of the batch so far is below 2^24, else 4), or, in a batch of one group, each window's id
//    and frequency in its key's place. Only a group's keys are held at once (issue 27: the
//    keys of a whole 500,000-image batch took about 1 GB).
//    Unigrams need no table: their id is the word id, and their document frequencies are
//    counted in an array indexed by word. An n-gram's id says where its frequency is: partition
//    `p`'s `i`-th n-gram is `gram_base + i * PARTS + p`.
//
// Chunking and partitioning are fixed (they do not depend on the number of threads), so the ids
// are deterministic; no output depends on them anyway (they are only compared for equality and
// used as sort keys for lookups). Document frequencies are integers.

/// log2 of the number of hash partitions of the n-gram table (orders 2..=4).
const PART_BITS: u32 = 4;
/// Number of hash partitions of the n-gram table.
const PARTS: usize = 1 << PART_BITS;
/// Images per chunk (fixed, so that ids do not depend on the number of threads).
const CHUNK_IMAGES: usize = 64;
/// A batch of at most this many chunks (16,384 images) is one group: its n-grams' ids and
/// frequencies stay in place (a 5,000-image batch stays as fast as it was).
const ONE_GROUP: usize = 256;
/// Chunks whose words, then whose n-gram keys, are interned together in a larger batch
/// (fixed, like the chunks): 8,192 images, some tens of MB of keys. The peak of a
/// 500,000-image build is the tables of distinct n-grams, the window ids so far and one
/// group's keys (issue 27, the build's peak RSS in KiB: groups of 16,384 images 546k, these
/// 529-539k with half-full tables; groups of 4,096 did no better, their tables growing late).
const GROUP_CHUNKS: usize = 128;

/// The chunks of a group in a batch of `count` chunks.
fn group_chunks(count: usize) -> usize {
    if count <= ONE_GROUP {
        ONE_GROUP
    } else {
        GROUP_CHUNKS
    }
}
/// A window's location (see [`ChunkWindows::loc`]): its side in the top bit, then its
/// partition, then its place in that partition's list in the low `POS_BITS` bits.
const SIDE_BIT: u32 = 31;
/// See [`SIDE_BIT`].
const POS_BITS: u32 = SIDE_BIT - PART_BITS;
/// See [`SIDE_BIT`].
const POS_MASK: u32 = (1 << POS_BITS) - 1;

/// The location of a window (see [`SIDE_BIT`]): side 0 the references, 1 the candidate.
#[inline]
fn loc(side: usize, p: usize, pos: usize) -> u32 {
    (side as u32) << SIDE_BIT | (p as u32) << POS_BITS | pos as u32
}

/// The (side, partition, position) of a location made by [`loc`].
#[inline]
fn unloc(l: u32) -> (usize, usize, usize) {
    (
        (l >> SIDE_BIT) as usize,
        (l >> POS_BITS) as usize & (PARTS - 1),
        (l & POS_MASK) as usize,
    )
}

/// The id of the n-gram numbered `local` in partition `p` (see the comment at the top).
#[inline]
fn gram_id(gram_base: u32, local: u32, p: usize) -> u32 {
    gram_base + (local << PART_BITS | p as u32)
}

/// Hash parts of a batch's new words, numbered in parallel.
const WORD_PARTS: usize = 16;
/// Marks a part-local number of a new word (before the parts' offsets are known): `NEW_WORD |
/// part << PART_SHIFT | number`.
const NEW_WORD: u32 = 1 << 31;
/// See [`NEW_WORD`].
const PART_SHIFT: u32 = 27;
/// See [`NEW_WORD`].
const PART_LOCAL: u32 = (1 << PART_SHIFT) - 1;

/// The hash part (of `parts`) of a word: bits of its hash that a word table's slots do not
/// use.
#[inline]
fn word_part(prefix: u64, len: usize, parts: usize) -> usize {
    (super::words::word_hash(prefix, len) >> 32) as usize % parts
}

/// The partition of an n-gram key (orders 2..=4): the top bits of its hash.
#[inline]
fn part<K: GramKey>(key: K) -> usize {
    (key.hash() >> (64 - PART_BITS)) as usize
}

/// One caption of a batch: its tokenized text and, when interned ahead of time (a registered
/// dataset's references), its word ids.
#[derive(Clone, Copy, Debug)]
pub struct Caption<'a> {
    /// The tokenized caption.
    pub text: &'a str,
    /// Its words (split as in spec COCO §3.4) as ids of the batch interner's base, if known.
    pub ids: Option<&'a [u32]>,
}

/// Number of n-gram windows of orders 2..=4 of a sentence of `len` words.
#[inline]
fn window_count(len: usize) -> usize {
    (2..=MAX_ORDER).map(|n| (len + 1).saturating_sub(n)).sum()
}

/// The interned words and n-gram windows of a chunk of images.
struct WordChunk {
    /// Batch index of the chunk's first image.
    first_img: usize,
    /// Per image, chunk-local index of its first caption (the candidate; references follow);
    /// one more entry at the end.
    img_cap: Vec<u32>,
    /// Per caption, offset of its words in `words`; one more entry at the end.
    word_off: Vec<u32>,
    /// Word ids.
    words: Vec<u32>,
    /// ROUGE-L words of the captions whose U+0020 split differs from their word split, by
    /// chunk-local caption index (ascending).
    rouge_words: Vec<(u32, Vec<u32>)>,
    /// The n-gram of each window of orders 2..=4 (captions in turn, each order-major). Empty
    /// when n-grams were not requested.
    grams: ChunkGramIds,
}

/// The n-grams of a chunk's windows (see the comment at the top).
enum ChunkGramIds {
    /// A batch of one group: each window's location (see [`ChunkWindows::loc`]) and, per side
    /// and partition, `id << 32 | df` in the place of each key. Nothing is copied after the
    /// interning (a 5,000-image batch stays as fast as it was).
    InPlace {
        loc: Vec<u32>,
        data: [Vec<Vec<u64>>; 2],
    },
    /// A larger batch: each window's id, its weight in [`BatchWords`]'s `gram_idf` (4 bytes a
    /// window instead of 12).
    Ids(Vec<u32>),
    /// As `Ids`, 3 bytes an id (little-endian): a chunk interned while every id of the batch
    /// so far was below 2^24 ([`narrow`]; the window ids are most of a large batch's memory,
    /// issue 27).
    Ids24(Vec<[u8; 3]>),
}

impl WordChunk {
    fn images(&self) -> usize {
        self.img_cap.len() - 1
    }

    fn words(&self, k: usize) -> &[u32] {
        &self.words[self.word_off[k] as usize..self.word_off[k + 1] as usize]
    }
}

/// The words (and, on request, the n-grams) of every caption of a batch, interned: the
/// captions of an image are its candidate then its references.
pub struct BatchWords {
    chunks: Vec<WordChunk>,
    /// Per word: the CIDEr weight `ln(N) - ln(max(1, df))` of its unigram (whose id is the
    /// word id).
    uni_idf: Vec<f64>,
    /// Per document frequency d: `ln(N) - ln(max(1, d))`, the weight of the other n-grams.
    idf_by_df: Vec<f64>,
    /// The CIDEr weight of n-gram `gram_base + i` (orders 2..=4) is `gram_idf[i]` (when the
    /// chunks keep [`ChunkGramIds::Ids`] or [`ChunkGramIds::Ids24`]).
    gram_idf: Vec<f64>,
    /// See `gram_idf`: one more than the largest word id.
    gram_base: u32,
    /// True when the n-grams were interned.
    grams: bool,
    /// Every reference n-gram with its document frequency (only for [`document_frequencies`]).
    table: Vec<(Ngram, u32)>,
}

/// Words of one chunk before the merge: chunk-local ids.
struct LocalWords<'a> {
    /// The chunk's distinct words (local id order) with their first 8 bytes.
    vocab: Vec<(&'a str, u64)>,
    /// Local ids by hash part ([`word_part`]).
    parts: Vec<Vec<u32>>,
    /// Word ids: chunk-local, or batch ids for the captions marked in `pre`.
    words: Vec<u32>,
    word_off: Vec<u32>,
    /// Per caption, true when it came interned (empty when none did).
    pre: Vec<bool>,
    /// Captions whose U+0020 split differs from their word split.
    special: Vec<u32>,
    /// One more than the largest pre-interned id.
    bound: u32,
}

/// A chunk's words after its group was numbered (see [`Words::intern_until`]).
struct LocalChunk {
    /// As in [`LocalWords`].
    words: Vec<u32>,
    word_off: Vec<u32>,
    pre: Vec<bool>,
    special: Vec<u32>,
    bound: u32,
    /// Per chunk-local word: its batch id (once resolved).
    map: Vec<u32>,
}

/// Where the CIDEr document frequencies of a batch come from.
#[derive(Clone, Copy)]
pub enum IdfSource<'a> {
    /// The batch's own references: `N` is the number of images.
    Batch,
    /// A table (a registered dataset's).
    Table(&'a dyn DocFreq),
}

impl BatchWords {
    /// Interns the words of every caption: a word `interner` knows has its id there, new words
    /// get ids after the interner's (which is not changed). `img_start[i]..img_start[i + 1]` are the captions of
    /// image `i` in `captions` (its candidate first). With `rouge`, the U+0020 split of the
    /// captions where it differs from the word split is interned too. With `grams`, every
    /// n-gram (orders 1..=4) is interned as well and gets its CIDEr weight
    /// `ln(N) - ln(max(1, df))`, with document frequencies from the given source.
    pub fn build(
        interner: &Interner,
        captions: &[Caption<'_>],
        img_start: &[usize],
        rouge: bool,
        grams: Option<IdfSource<'_>>,
    ) -> BatchWords {
        BatchWords::build_with(interner, captions, img_start, rouge, grams, false, &|| {
            false
        })
        .expect("a build that is never stopped")
    }

    /// [`BatchWords::build`] that gives up once `stop()` is true (see [`Words`]); with
    /// `export`, the batch document frequencies (`grams`
    /// must be [`IdfSource::Batch`]) are kept as a list of every reference n-gram with its
    /// frequency.
    ///
    /// A stage skips its remaining pieces once `stop()` is true and the build returns `None`
    /// after that stage, before anything reads the skipped pieces.
    fn build_with(
        interner: &Interner,
        captions: &[Caption<'_>],
        img_start: &[usize],
        rouge: bool,
        grams: Option<IdfSource<'_>>,
        export: bool,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Option<BatchWords> {
        Words::intern_until(interner, captions, img_start, rouge, stop)?.finish(grams, export, stop)
    }
}

/// The words of every caption of a batch, interned: the first half of a [`BatchWords`]
/// build. It borrows nothing, so the captions' text can be freed before the n-grams are built
/// (issue 27: at 500,000 images the text is about a quarter of the peak).
///
/// Both halves give up once `stop()` is true (checked per chunk of images and per n-gram
/// partition, so within a few milliseconds): `None` then. `stop` must stay true once it was (a
/// flag or a deadline).
pub struct Words {
    /// Per chunk: its words and the map of its local ids to batch ids, and its ROUGE-L words.
    inputs: Vec<ChunkInput>,
    /// Number of images.
    images: usize,
    /// One more than the largest word id.
    bound: u32,
}

impl Words {
    /// The second half of [`BatchWords::build`]: n-grams and their weights (`grams`).
    pub fn build_until(
        self,
        grams: Option<IdfSource<'_>>,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Option<BatchWords> {
        self.finish(grams, false, stop)
    }

    /// The first half of [`BatchWords::build`] (same arguments but `grams`).
    pub fn intern_until<'c>(
        interner: &Interner,
        captions: &[Caption<'c>],
        img_start: &[usize],
        rouge: bool,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Option<Words> {
        let images = img_start.len().saturating_sub(1);
        let bounds: Vec<(usize, usize)> = (0..images)
            .step_by(CHUNK_IMAGES)
            .map(|a| (a, (a + CHUNK_IMAGES).min(images)))
            .collect();
        // A batch of one chunk numbers its words in one part: the parts' tables and the pool's
        // hand-over would cost more than they save.
        let nparts = if bounds.len() > 1 { WORD_PARTS } else { 1 };
        let known = interner.len();
        assert!(known < NEW_WORD, "fewer than 2^31 known words");
        // Chunk-local interning of a chunk's captions.
        let local = |&(a, b): &(usize, usize)| -> LocalWords<'c> {
            let caps = &captions[img_start[a]..img_start[if stop() { a } else { b }]];
            let mut vocab: WordTable<&str> = WordTable::new();
            // A chunk's captions have some hundreds of distinct words (a word takes two
            // bytes at least, with its separator); a table sized for a thousand never grows
            // on COCO-like captions (grown, it cost a 5,000-image batch 10% of its words).
            let bytes: usize = caps.iter().map(|c| c.text.len()).sum();
            vocab.reset((bytes / 2).min(1024));
            let mut lw = LocalWords {
                vocab: Vec::new(),
                parts: vec![Vec::new(); nparts],
                // About one word per five bytes of English captions (grown as needed).
                words: Vec::with_capacity(bytes / 5 + 16),
                word_off: Vec::with_capacity(caps.len() + 1),
                pre: Vec::new(),
                special: Vec::new(),
                bound: 0,
            };
            if caps.iter().any(|c| c.ids.is_some()) {
                lw.pre = caps.iter().map(|c| c.ids.is_some()).collect();
            }
            for (k, c) in caps.iter().enumerate() {
                lw.word_off.push(lw.words.len() as u32);
                let same = match c.ids {
                    None => split::words(c.text, |w, prefix| {
                        lw.words.push(vocab.id(w, prefix));
                    }),
                    Some(ids) => {
                        let max = ids.iter().max().map_or(0, |&m| m.saturating_add(1));
                        lw.bound = lw.bound.max(max);
                        lw.words.extend_from_slice(ids);
                        !rouge || split::space_split_is_word_split(c.text)
                    }
                };
                if rouge && !same {
                    lw.special.push(k as u32);
                }
            }
            lw.vocab = vocab
                .into_words()
                .into_iter()
                .map(|w| (w, split::prefix(w)))
                .collect();
            for (l, &(w, p)) in lw.vocab.iter().enumerate() {
                lw.parts[word_part(p, w.len(), nparts)].push(l as u32);
            }
            lw.word_off.push(lw.words.len() as u32);
            lw
        };
        // A group of chunks at a time (only a group's local vocabularies are held at once):
        // each chunk interns its words locally (in parallel); each hash part numbers the
        // group's new words after those of the groups before (in parallel over parts); each
        // chunk keeps, per local word, its known id or `NEW_WORD | part << PART_SHIFT |
        // number`. Once every group is numbered, the parts' offsets are known and the numbers
        // become batch ids (in parallel over chunks).
        let mut tables: Vec<WordTable<&'c str>> = (0..nparts).map(|_| WordTable::new()).collect();
        let mut chunks: Vec<LocalChunk> = Vec::with_capacity(bounds.len());
        for group in bounds.chunks(group_chunks(bounds.len())) {
            let locals: Vec<LocalWords<'c>> = group.par_iter().map(local).collect();
            if stop() {
                return None;
            }
            let number = |(part, table): (usize, &mut WordTable<&'c str>)| -> Vec<Vec<u32>> {
                locals
                    .iter()
                    .map(|l| {
                        l.parts[part]
                            .iter()
                            .map(|&i| {
                                let (w, p) = l.vocab[i as usize];
                                match interner.get_with(w, p) {
                                    Some(id) => id,
                                    None => NEW_WORD | (part as u32) << PART_SHIFT | table.id(w, p),
                                }
                            })
                            .collect()
                    })
                    .collect()
            };
            // One chunk (a small batch): the hand-over to the pool would cost more.
            let numbered: Vec<Vec<Vec<u32>>> = if nparts > 1 {
                tables.par_iter_mut().enumerate().map(number).collect()
            } else {
                tables.iter_mut().enumerate().map(number).collect()
            };
            let map_of = |(c, l): (usize, LocalWords<'_>)| {
                let mut map = vec![0u32; l.vocab.len()];
                for (part, locals) in l.parts.iter().enumerate() {
                    for (&i, &v) in locals.iter().zip(&numbered[part][c]) {
                        map[i as usize] = v;
                    }
                }
                LocalChunk {
                    words: l.words,
                    word_off: l.word_off,
                    pre: l.pre,
                    special: l.special,
                    bound: l.bound,
                    map,
                }
            };
            if nparts > 1 {
                chunks.par_extend(locals.into_par_iter().enumerate().map(map_of));
            } else {
                chunks.extend(locals.into_iter().enumerate().map(map_of));
            }
            assert!(
                tables.iter().all(|t| t.len() <= PART_LOCAL as usize),
                "fewer than 2^27 new words per part"
            );
        }
        if stop() {
            return None;
        }
        let mut offsets = vec![0u32; nparts];
        let mut end = u64::from(known);
        for (o, table) in offsets.iter_mut().zip(&tables) {
            *o = end as u32;
            end += table.len() as u64;
        }
        assert!(end < u64::from(Ngram::PAD), "fewer than 2^32 - 1 words");
        let end = end as u32;
        let batch_id = |v: u32| {
            if v & NEW_WORD != 0 {
                offsets[((v & !NEW_WORD) >> PART_SHIFT) as usize] + (v & PART_LOCAL)
            } else {
                v
            }
        };
        let resolve = |c: &mut LocalChunk| c.map.iter_mut().for_each(|v| *v = batch_id(*v));
        if nparts > 1 {
            chunks.par_iter_mut().for_each(resolve);
        } else {
            chunks.iter_mut().for_each(resolve);
        }
        // ROUGE-L's words of the captions whose U+0020 split differs (rare): the same ids, and
        // words no caption's word split has after all the others.
        let mut extra: WordTable<&str> = WordTable::new();
        let rouge_words: Vec<Vec<(u32, Vec<u32>)>> = chunks
            .iter()
            .zip(&bounds)
            .map(|(l, &(a, _))| {
                let base = img_start[a];
                l.special
                    .iter()
                    .map(|&k| {
                        let text = captions[base + k as usize].text;
                        let ids = split::space(text).map(|w| {
                            let p = split::prefix(w);
                            if let Some(id) = interner.get_with(w, p) {
                                return id;
                            }
                            let part = word_part(p, w.len(), nparts);
                            match tables[part].find(w, p) {
                                Some(id) => offsets[part] + id,
                                None => end + extra.id(w, p),
                            }
                        });
                        (k, ids.collect())
                    })
                    .collect()
            })
            .collect();
        let words_end = end.saturating_add(extra.len() as u32);
        let bound = chunks.iter().fold(words_end, |m, l| m.max(l.bound));
        if stop() {
            return None;
        }
        let inputs = chunks
            .into_iter()
            .zip(rouge_words)
            .zip(bounds)
            .map(|((l, rouge_words), (a, b))| ChunkInput {
                first_img: a,
                img_cap: img_start[a..=b]
                    .iter()
                    .map(|&s| (s - img_start[a]) as u32)
                    .collect(),
                words: l.words,
                word_off: l.word_off,
                pre: l.pre,
                map: l.map,
                rouge_words,
            })
            .collect();
        Some(Words {
            inputs,
            images,
            bound,
        })
    }

    /// Batch word ids and, with `grams`, n-gram ids and weights.
    fn finish(
        self,
        grams: Option<IdfSource<'_>>,
        export: bool,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Option<BatchWords> {
        let parts = Parts {
            images: self.images,
            export,
            stop,
        };
        let (inputs, bound) = (self.inputs, self.bound);
        match grams {
            Some(idf) if u64::fits(bound) => parts.finish::<u64>(inputs, Some((idf, bound))),
            Some(idf) => parts.finish::<u128>(inputs, Some((idf, bound))),
            None => parts.finish::<u64>(inputs, None),
        }
    }
}

impl BatchWords {
    /// True when some reference caption has at least one word.
    pub fn any_reference_word(&self) -> bool {
        self.chunks.iter().any(|ch| {
            (0..ch.images()).any(|j| {
                let (c0, c1) = (ch.img_cap[j] as usize, ch.img_cap[j + 1] as usize);
                ch.word_off[c0 + 1] < ch.word_off[c1]
            })
        })
    }

    /// Number of chunks (see [`BatchWords::chunk_images`]).
    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// Number of images of chunk `c` (the batch indices of its images follow those of the
    /// chunks before it).
    pub fn chunk_images(&self, c: usize) -> usize {
        self.chunks[c].images()
    }

    /// The ROUGE-L words (U+0020 split; requires `rouge` at build) of the candidate (first)
    /// and references of image `j` of chunk `c`.
    pub fn rouge_words(&self, c: usize, j: usize) -> impl Iterator<Item = &[u32]> {
        let ch = &self.chunks[c];
        (ch.img_cap[j] as usize..ch.img_cap[j + 1] as usize).map(move |k| {
            match ch.rouge_words.binary_search_by_key(&(k as u32), |e| e.0) {
                Ok(i) => &ch.rouge_words[i].1[..],
                Err(_) => ch.words(k),
            }
        })
    }

    /// `f(scratch, image)` for every image, in batch order, in parallel over chunks (one
    /// `S` per chunk), each result written in its image's place (no second copy of the
    /// results). `None` once `stop()` is true: no further chunk is started.
    pub fn map_images<S: Default, T: Default + Send>(
        &self,
        stop: &(dyn Fn() -> bool + Sync),
        f: impl Fn(&mut S, ImageRef<'_>) -> T + Sync + Send,
    ) -> Option<Vec<T>> {
        let f = &f;
        let mut out: Vec<T> = Vec::new();
        out.resize_with(self.chunks.iter().map(WordChunk::images).sum(), T::default);
        // Chunks are consecutive runs of CHUNK_IMAGES images (the last may be shorter).
        out.par_chunks_mut(CHUNK_IMAGES)
            .enumerate()
            .try_for_each(|(c, slots)| {
                if stop() {
                    return None;
                }
                // Cheap (once a chunk), and a wrong layout would misplace results.
                assert_eq!(slots.len(), self.chunk_images(c), "chunk layout");
                let mut buf = GramBuf::default();
                let mut index = GramIndex::default();
                let mut matches = Matches::default();
                let mut scratch = S::default();
                let mut grams = self.grams.then(|| self.chunk_grams(c));
                for (j, slot) in slots.iter_mut().enumerate() {
                    *slot = match grams.as_mut() {
                        Some(g) => {
                            let image = g.next_image(&mut buf);
                            // Every image has its candidate first.
                            let (cand, refs) = image.split_first().expect("a candidate");
                            index.rebuild(cand.all().ids);
                            matches.build(&index, refs.iter().map(|r| r.all().ids));
                            let grams = Some((&image[..], &matches));
                            f(
                                &mut scratch,
                                ImageRef {
                                    chunk: c,
                                    index: j,
                                    grams,
                                },
                            )
                        }
                        None => f(
                            &mut scratch,
                            ImageRef {
                                chunk: c,
                                index: j,
                                grams: None,
                            },
                        ),
                    };
                }
                Some(())
            })?;
        Some(out)
    }

    /// Reads the n-gram counts of the images of chunk `c`, in order (requires `grams` at
    /// build).
    pub fn chunk_grams(&self, c: usize) -> ChunkGrams<'_> {
        ChunkGrams {
            ch: &self.chunks[c],
            uni_idf: &self.uni_idf,
            idf_by_df: &self.idf_by_df,
            gram_idf: &self.gram_idf,
            gram_base: self.gram_base,
            j: 0,
            win: 0,
        }
    }
}

/// One image of a batch, as [`BatchWords::map_images`] hands it over.
pub struct ImageRef<'b> {
    /// Its chunk and its index in the chunk (see [`BatchWords::rouge_words`]).
    pub chunk: usize,
    /// See `chunk`.
    pub index: usize,
    /// The n-gram counts of its candidate (first) and its references, and the n-grams the
    /// candidate shares with each reference; `None` when the batch was built without n-grams.
    pub grams: Option<(&'b [Grams<'b>], &'b Matches)>,
}

/// The document frequencies of the references of `images` (each image: its references' word
/// ids): every n-gram of order 1..=4 counted once per image in which some reference has it;
/// `N` is the number of images. The batch pipeline's partitioned counter, read out as a table.
pub fn document_frequencies<'a>(images: impl IntoIterator<Item = &'a [Vec<u32>]>) -> DfTable {
    document_frequencies_until(images, &|| false).expect("a count that is never stopped")
}

/// [`document_frequencies`] that gives up once `stop()` is true (see [`Words`]): `None`
/// then.
pub fn document_frequencies_until<'a, I, R>(
    images: impl IntoIterator<Item = I>,
    stop: &(dyn Fn() -> bool + Sync),
) -> Option<DfTable>
where
    I: IntoIterator<Item = &'a R>,
    R: AsRef<[u32]> + ?Sized + 'a,
{
    let mut captions = Vec::new();
    let mut img_start = Vec::new();
    for refs in images {
        img_start.push(captions.len());
        // No candidate: its n-grams would not count anyway.
        captions.push(Caption {
            text: "",
            ids: Some(&[]),
        });
        captions.extend(refs.into_iter().map(|r| Caption {
            text: "",
            ids: Some(r.as_ref()),
        }));
    }
    let docs = img_start.len();
    img_start.push(captions.len());
    let words = BatchWords::build_with(
        &Interner::new(),
        &captions,
        &img_start,
        false,
        Some(IdfSource::Batch),
        true,
        stop,
    )?;
    Some(DfTable::new(docs, words.table.into_iter().collect()))
}

/// Reads the n-gram counts of the images of a chunk, in order.
pub struct ChunkGrams<'w> {
    ch: &'w WordChunk,
    uni_idf: &'w [f64],
    idf_by_df: &'w [f64],
    gram_idf: &'w [f64],
    gram_base: u32,
    j: usize,
    win: usize,
}

impl ChunkGrams<'_> {
    /// The n-gram counts of the next image: its candidate (index 0) and references (1..),
    /// built in `buf`.
    pub fn next_image<'b>(&mut self, buf: &'b mut GramBuf) -> Vec<Grams<'b>> {
        let ch = self.ch;
        let j = self.j;
        self.j += 1;
        let caps = ch.img_cap[j] as usize..ch.img_cap[j + 1] as usize;
        // Room for every word and window being distinct; written by index, then viewed.
        let room: usize = caps
            .clone()
            .map(|k| {
                let len = ch.words(k).len();
                len + window_count(len)
            })
            .sum();
        if buf.ids.len() < room {
            buf.ids.resize(room, 0);
            buf.counts.resize(room, 0);
            buf.idfs.resize(room, 0.0);
        }
        let (ids, counts, idfs) = (&mut buf.ids[..], &mut buf.counts[..], &mut buf.idfs[..]);
        buf.spans.clear();
        let mut n = 0usize;
        let (idf_by_df, gram_idf, gram_base) = (self.idf_by_df, self.gram_idf, self.gram_base);
        for k in caps {
            let words = ch.words(k);
            let begin = n;
            let mut ends = [0u32; MAX_ORDER];
            let uni_idf = self.uni_idf;
            n = count_into(
                words.iter().map(|&w| (w, uni_idf[w as usize])),
                words.len(),
                (ids, counts, idfs),
                n,
            );
            ends[0] = n as u32;
            for order in 2..=MAX_ORDER {
                let len = (words.len() + 1).saturating_sub(order);
                let at = self.win..self.win + len;
                self.win += len;
                n = match &ch.grams {
                    ChunkGramIds::Ids(grams) => {
                        let windows = grams[at]
                            .iter()
                            .map(|&g| (g, gram_idf[(g - gram_base) as usize]));
                        count_into(windows, len, (ids, counts, idfs), n)
                    }
                    ChunkGramIds::Ids24(grams) => {
                        let windows = grams[at].iter().map(|&[a, b, c]| {
                            let g = u32::from_le_bytes([a, b, c, 0]);
                            (g, gram_idf[(g - gram_base) as usize])
                        });
                        count_into(windows, len, (ids, counts, idfs), n)
                    }
                    ChunkGramIds::InPlace { loc, data } => {
                        let windows = loc[at].iter().map(|&l| {
                            let (side, p, pos) = unloc(l);
                            let v = data[side][p][pos];
                            ((v >> 32) as u32, idf_by_df[v as u32 as usize])
                        });
                        count_into(windows, len, (ids, counts, idfs), n)
                    }
                };
                ends[order - 1] = n as u32;
            }
            buf.spans.push((begin as u32, ends, words.len() as u32));
        }
        let (ids, counts, idfs) = (&buf.ids, &buf.counts, &buf.idfs);
        buf.spans
            .iter()
            .map(|&(b, ends, words)| {
                let (b, e) = (b as usize, ends[MAX_ORDER - 1] as usize);
                Grams::from_parts(
                    &ids[b..e],
                    &counts[b..e],
                    &idfs[b..e],
                    ends.map(|x| x - b as u32),
                    words,
                )
            })
            .collect()
    }
}

/// True when every n-gram id is below 2^24 while each partition holds at most `longest`
/// n-grams (partition p's i-th n-gram is `gram_base + i * PARTS + p`): window ids then fit
/// in 3 bytes ([`ChunkGramIds::Ids24`]).
fn narrow(gram_base: u32, longest: usize) -> bool {
    u64::from(gram_base) + longest as u64 * PARTS as u64 <= 1 << 24
}

/// How [`Words::finish`] builds the rest.
struct Parts<'p> {
    /// Number of images.
    images: usize,
    /// Keep the reference n-grams with their document frequencies.
    export: bool,
    /// See [`BatchWords::build_with`].
    stop: &'p (dyn Fn() -> bool + Sync),
}

/// What one chunk's batch word ids are made from (see [`Words`]).
struct ChunkInput {
    /// Batch index of the chunk's first image.
    first_img: usize,
    /// As in [`WordChunk`].
    img_cap: Vec<u32>,
    /// Word ids: chunk-local, or batch ids for the captions marked in `pre`.
    words: Vec<u32>,
    word_off: Vec<u32>,
    /// See [`LocalWords`].
    pre: Vec<bool>,
    /// Chunk-local id -> batch id.
    map: Vec<u32>,
    /// As in [`WordChunk`].
    rouge_words: Vec<(u32, Vec<u32>)>,
}

impl Parts<'_> {
    /// The batch word ids of one chunk: its local ids mapped in place.
    fn chunk(&self, c: ChunkInput) -> WordChunk {
        let mut words = c.words;
        for k in 0..c.word_off.len() - 1 {
            if c.pre.get(k) == Some(&true) {
                continue;
            }
            let span = c.word_off[k] as usize..c.word_off[k + 1] as usize;
            for w in &mut words[span] {
                *w = c.map[*w as usize];
            }
        }
        WordChunk {
            first_img: c.first_img,
            img_cap: c.img_cap,
            word_off: c.word_off,
            words,
            rouge_words: c.rouge_words,
            grams: ChunkGramIds::Ids(Vec::new()),
        }
    }

    /// Batch word ids, n-gram windows and n-gram ids.
    fn finish<K: GramKey>(
        &self,
        inputs: Vec<ChunkInput>,
        grams: Option<(IdfSource<'_>, u32)>,
    ) -> Option<BatchWords> {
        let stop = self.stop;
        let count = inputs.len();
        let Some((idf, bound)) = grams else {
            // Batch word ids, in parallel over chunks.
            let chunks: Vec<WordChunk> = inputs.into_par_iter().map(|i| self.chunk(i)).collect();
            if stop() {
                return None;
            }
            return Some(BatchWords {
                chunks,
                uni_idf: Vec::new(),
                idf_by_df: Vec::new(),
                gram_idf: Vec::new(),
                gram_base: 0,
                grams: false,
                table: Vec::new(),
            });
        };
        let images = self.images;
        let (ref_len, ln): (f64, Vec<f64>) = match idf {
            IdfSource::Batch => (
                (images as f64).ln(),
                (0..=images).map(|d| (d.max(1) as f64).ln()).collect(),
            ),
            IdfSource::Table(t) => ((t.doc_count() as f64).ln(), Vec::new()),
        };
        let (chunks, (uni_idf, uni_df), interned) = intern_grams::<K, _>(
            inputs.into_iter(),
            count,
            &|i| self.chunk(i),
            &|chunks| unigram_idf(chunks, bound, idf, ref_len, &ln),
            idf,
            bound,
            self.export,
            stop,
        )?;
        if stop() {
            return None;
        }
        let GramIds {
            dfs,
            max_df,
            in_place,
            mut table,
        } = interned;
        // `ln(N) - ln(max(1, d))`, with `ln` computed as the batch table does (the dataset
        // table computes its `ln_df` the same way).
        let idf_by_df: Vec<f64> = (0..=max_df as usize)
            .map(|d| match idf {
                IdfSource::Batch => ref_len - ln[d],
                IdfSource::Table(_) => ref_len - (d.max(1) as f64).ln(),
            })
            .collect();
        // Partition p's i-th n-gram is `gram_base + i * PARTS + p`.
        let longest = dfs.iter().map(Vec::len).max().unwrap_or(0);
        let mut gram_idf = vec![0.0; if in_place { 0 } else { longest * PARTS }];
        for (p, df) in dfs.iter().enumerate().filter(|_| !in_place) {
            for (i, &d) in df.iter().enumerate() {
                gram_idf[i * PARTS + p] = idf_by_df[d as usize];
            }
        }
        if self.export {
            table.extend(
                uni_df
                    .iter()
                    .enumerate()
                    .filter(|e| *e.1 > 0)
                    .map(|(w, &d)| (Ngram::new(&[w as u32]), d)),
            );
        }
        Some(BatchWords {
            chunks,
            uni_idf,
            idf_by_df,
            gram_idf,
            gram_base: bound,
            grams: true,
            table,
        })
    }
}

/// The n-grams (orders 2..=4) of a batch, interned: see [`intern_grams`].
struct GramIds {
    /// Per partition, the document frequency of each of its n-grams (by local number).
    dfs: Vec<Vec<u32>>,
    /// The chunks keep [`ChunkGramIds::InPlace`] (a batch of one group).
    in_place: bool,
    /// The largest document frequency.
    max_df: u32,
    /// With `export`: every reference n-gram with its document frequency.
    table: Vec<(Ngram, u32)>,
}

/// One hash partition's n-grams while the groups are interned.
struct Partition<K> {
    /// Key -> its n-gram (see [`GramSlot`]), kept from group to group (a batch of one group
    /// uses a table and frequencies of its worker instead, see [`intern_grams`]).
    map: KeyTable<K, GramSlot>,
    /// Per local number: the document frequency.
    df: Vec<u32>,
}

/// What an n-gram table holds for a key: its partition-local number and the last image (batch
/// index) that counted it, `u32::MAX` before; the image is read and written in the key's slot,
/// on the cache line the look-up loaded.
#[derive(Clone, Copy, Default)]
struct GramSlot {
    local: u32,
    last: u32,
}

/// The slot of `key` in `map` (a new key gets the next local number, with frequency 0).
#[inline(always)]
fn intern<'m, K: GramKey>(
    map: &'m mut KeyTable<K, GramSlot>,
    df: &mut Vec<u32>,
    key: K,
) -> &'m mut GramSlot {
    map.entry(key, || {
        df.push(0);
        GramSlot {
            local: (df.len() - 1) as u32,
            last: u32::MAX,
        }
    })
}

/// Interns the n-gram windows (orders 2..=4) of the chunks a group at a time (see the
/// comment at the top): partition `p`'s `i`-th n-gram gets id `gram_base + i * PARTS + p`.
/// `None` once `stop()` is true (checked per chunk, per partition and per group).
///
/// A batch of one group (up to 16,384 images) interns each partition in a table of its
/// worker, reused from partition to partition (sixteen tables of their own cost a 5,000-image
/// batch some megabytes of fresh memory, a quarter of its time), and its chunks keep
/// [`ChunkGramIds::InPlace`]. A larger batch keeps each partition's table (filled to three
/// quarters: [`KeyTable::dense`]) from group to group,
/// frees it after the last, and its chunks keep [`ChunkGramIds::Ids24`] or
/// [`ChunkGramIds::Ids`].
#[allow(clippy::too_many_arguments)]
fn intern_grams<K: GramKey, U: Send>(
    mut inputs: impl Iterator<Item = ChunkInput>,
    count: usize,
    chunk: &(dyn Fn(ChunkInput) -> WordChunk + Sync),
    unigrams: &(dyn Fn(&[WordChunk]) -> U + Sync),
    idf: IdfSource<'_>,
    gram_base: u32,
    export: bool,
    stop: &(dyn Fn() -> bool + Sync),
) -> Option<(Vec<WordChunk>, U, GramIds)> {
    let mut parts: Vec<Partition<K>> = (0..PARTS)
        .map(|_| Partition {
            map: KeyTable::dense(PART_BITS),
            df: Vec::new(),
        })
        .collect();
    // Ids stay below u32::MAX (the empty key of the id tables).
    let room = (u64::from(u32::MAX) - 1)
        .checked_sub(u64::from(gram_base))
        .expect("fewer than 2^32 - 1 words")
        >> PART_BITS;
    let group_size = group_chunks(count);
    let groups = count.div_ceil(group_size);
    let mut chunks: Vec<WordChunk> = Vec::with_capacity(count);
    let mut uni: Option<U> = None;
    let mut table: Vec<(Ngram, u32)> = Vec::new();
    let mut max_df = 0;
    for g in 0..groups {
        let last_group = g + 1 == groups;
        // The group's word ids and windows, in parallel over its chunks (one pass over each
        // chunk's words while they are in cache).
        let group_inputs: Vec<ChunkInput> = inputs.by_ref().take(group_size).collect();
        let built: Vec<(WordChunk, ChunkWindows<K>)> = group_inputs
            .into_par_iter()
            .map(|i| {
                let ch = chunk(i);
                let w = if stop() {
                    ChunkWindows {
                        refs: Vec::new(),
                        cands: Vec::new(),
                        ref_end: Vec::new(),
                        loc: Vec::new(),
                    }
                } else {
                    windows::<K>(&ch)
                };
                (ch, w)
            })
            .collect();
        if stop() {
            return None;
        }
        type SideKeys<K> = [Vec<Vec<K>>; 2];
        let first = chunks.len();
        let mut keys: Vec<SideKeys<K>> = Vec::with_capacity(built.len());
        let mut ref_ends = Vec::with_capacity(built.len());
        let mut locs = Vec::with_capacity(built.len());
        for (ch, w) in built {
            chunks.push(ch);
            keys.push([w.refs, w.cands]);
            ref_ends.push(w.ref_end);
            locs.push(w.loc);
        }
        let group = &chunks[first..];
        let mut lists: Vec<Vec<[&mut Vec<K>; 2]>> = (0..PARTS)
            .map(|_| Vec::with_capacity(group.len()))
            .collect();
        for [refs, cands] in keys.iter_mut() {
            for ((r, c), list) in refs.iter_mut().zip(cands.iter_mut()).zip(&mut lists) {
                list.push([r, c]);
            }
        }
        // Each partition interns the group's windows in chunk order: an image's references
        // (counting each n-gram once per image), then the chunk's candidates. A key's place
        // takes its local number. After the last group, the partition's frequencies are
        // final: a table source's replace them, and with `export` they are listed.
        // Per partition: its exported n-grams and its largest document frequency.
        let intern_group = || -> Vec<(Vec<(Ngram, u32)>, u32)> {
            parts
                .par_iter_mut()
                .zip(lists)
                .enumerate()
                .map_init(
                    || (KeyTable::<K, GramSlot>::new(PART_BITS), Vec::new()),
                    |scratch, (p, (part, mut list))| {
                        if stop() {
                            return (Vec::new(), 0);
                        }
                        // About half the windows of a group are distinct n-grams; the table grows
                        // from there. A worker's table (and frequencies) start afresh for each
                        // partition.
                        let windows: usize = list.iter().map(|[r, c]| r.len() + c.len()).sum();
                        let (map, df) = if groups == 1 {
                            scratch.1.clear();
                            (&mut scratch.0, &mut scratch.1)
                        } else {
                            (&mut part.map, &mut part.df)
                        };
                        if groups == 1 || map.is_empty() {
                            map.reset(windows * 9 / 16);
                        }
                        for ((ch, ends), [refs, cands]) in
                            group.iter().zip(&ref_ends).zip(list.iter_mut())
                        {
                            let mut at = 0usize;
                            for (j, e) in ends.iter().enumerate() {
                                let img = (ch.first_img + j) as u32;
                                let end = e[p] as usize;
                                for slot in refs[at..end].iter_mut() {
                                    let g = intern(map, df, *slot);
                                    *slot = K::from_value(u64::from(g.local));
                                    if g.last != img {
                                        g.last = img;
                                        df[g.local as usize] += 1;
                                    }
                                }
                                at = end;
                            }
                            for slot in cands.iter_mut() {
                                *slot = K::from_value(u64::from(intern(map, df, *slot).local));
                            }
                        }
                        assert!((df.len() as u64) < room, "fewer than 2^32 n-grams");
                        if !last_group {
                            return (Vec::new(), 0);
                        }
                        if let IdfSource::Table(t) = idf {
                            // The table's frequencies (0 when absent), as its `ln_df` uses.
                            for (key, g) in map.iter() {
                                df[g.local as usize] = t.df(&key.ngram());
                            }
                        }
                        let out = if export {
                            map.iter()
                                .map(|(key, g)| (key.ngram(), df[g.local as usize]))
                                .filter(|e| e.1 > 0)
                                .collect()
                        } else {
                            Vec::new()
                        };
                        if groups == 1 {
                            // `id << 32 | df` in each key's place (see [`ChunkGramIds::InPlace`]).
                            let slots = list
                                .iter_mut()
                                .flat_map(|[r, c]| r.iter_mut().chain(c.iter_mut()));
                            for slot in slots {
                                let local = slot.value() as u32;
                                let id = gram_id(gram_base, local, p);
                                *slot = K::from_value(
                                    u64::from(id) << 32 | u64::from(df[local as usize]),
                                );
                            }
                        }
                        let max = df.iter().copied().max().unwrap_or(0);
                        // A worker's storage is reset for its next partition; a partition's own
                        // table is done with.
                        if groups > 1 {
                            *map = KeyTable::dense(PART_BITS);
                        }
                        (out, max)
                    },
                )
                .collect()
        };
        // The unigrams' weights (over every chunk) while the last group is interned.
        let exported = if last_group {
            let (u, e) = rayon::join(|| unigrams(&chunks), intern_group);
            uni = Some(u);
            e
        } else {
            intern_group()
        };
        if stop() {
            return None;
        }
        for (entries, max) in exported {
            table.extend(entries);
            max_df = max_df.max(max);
        }
        if groups == 1 {
            chunks
                .par_iter_mut()
                .zip(keys)
                .zip(locs)
                .for_each(|((ch, sides), loc)| {
                    let data = sides.map(|parts| {
                        parts
                            .into_iter()
                            .map(|v| v.into_iter().map(K::value).collect())
                            .collect()
                    });
                    ch.grams = ChunkGramIds::InPlace { loc, data };
                });
            continue;
        }
        // Each chunk keeps its windows' ids in window order.
        // In 3 bytes when every id so far fits.
        let narrow = narrow(
            gram_base,
            parts.iter().map(|p| p.df.len()).max().unwrap_or(0),
        );
        let ids: Vec<ChunkGramIds> = keys
            .par_iter()
            .zip(&locs)
            .map(|(sides, loc)| {
                let ids = loc.iter().map(|&l| {
                    let (side, p, pos) = unloc(l);
                    gram_id(gram_base, sides[side][p][pos].value() as u32, p)
                });
                if narrow {
                    ChunkGramIds::Ids24(
                        ids.map(|g| {
                            let [a, b, c, _] = g.to_le_bytes();
                            [a, b, c]
                        })
                        .collect(),
                    )
                } else {
                    ChunkGramIds::Ids(ids.collect())
                }
            })
            .collect();
        for (ch, ids) in chunks[first..].iter_mut().zip(ids) {
            ch.grams = ids;
        }
    }
    let uni = match uni {
        Some(u) => u,
        None => unigrams(&chunks),
    };
    Some((
        chunks,
        uni,
        GramIds {
            dfs: parts.into_iter().map(|p| p.df).collect(),
            in_place: groups == 1,
            max_df,
            table,
        },
    ))
}

/// A chunk's n-gram windows (orders 2..=4) by partition.
struct ChunkWindows<K> {
    /// Per partition, the keys of the reference windows, in window order.
    refs: Vec<Vec<K>>,
    /// Per partition, the keys of the candidate windows, in window order.
    cands: Vec<Vec<K>>,
    /// Per image, where its reference windows end in each partition.
    ref_end: Vec<[u32; PARTS]>,
    /// Per window (captions in turn, each order-major), where its key is: `side << SIDE_BIT |
    /// partition << POS_BITS | position` (side 0: `refs`, 1: `cands`).
    loc: Vec<u32>,
}

/// Lists the windows (orders 2..=4) of a chunk's captions by partition, and where each
/// window's key is.
fn windows<K: GramKey>(ch: &WordChunk) -> ChunkWindows<K> {
    let caps = ch.word_off.len() - 1;
    let (mut total, mut cand_total) = (0usize, 0usize);
    let mut is_cand = ch.img_cap.iter().peekable();
    for k in 0..caps {
        let count = window_count((ch.word_off[k + 1] - ch.word_off[k]) as usize);
        if is_cand.next_if(|&&c| c as usize == k).is_some() {
            cand_total += count;
        }
        total += count;
    }
    // Room for an even spread over the partitions, plus a margin.
    let room = |t: usize| t / PARTS + t / (4 * PARTS) + 4;
    let mut w = ChunkWindows {
        refs: (0..PARTS)
            .map(|_| Vec::with_capacity(room(total - cand_total)))
            .collect(),
        cands: (0..PARTS)
            .map(|_| Vec::with_capacity(room(cand_total)))
            .collect(),
        ref_end: Vec::with_capacity(ch.images()),
        loc: Vec::with_capacity(total),
    };
    let mut keys: Vec<K> = Vec::new();
    for j in 0..ch.images() {
        let first = ch.img_cap[j] as usize;
        for k in first..ch.img_cap[j + 1] as usize {
            let (out, side) = if k == first {
                (&mut w.cands, 1)
            } else {
                (&mut w.refs, 0)
            };
            let words = ch.words(k);
            // keys[i]: the window of the current order starting at word i.
            keys.clear();
            keys.extend(words.iter().map(|&x| K::unigram(x)));
            for n in 1..MAX_ORDER {
                for i in 0..words.len().saturating_sub(n) {
                    let key = keys[i].extend(n, words[i + n]);
                    keys[i] = key;
                    let p = part(key);
                    w.loc.push(loc(side, p, out[p].len()));
                    out[p].push(key);
                }
            }
        }
        let mut ends = [0u32; PARTS];
        for (e, r) in ends.iter_mut().zip(&w.refs) {
            *e = r.len() as u32;
        }
        w.ref_end.push(ends);
    }
    assert!(
        w.refs
            .iter()
            .chain(&w.cands)
            .all(|l| l.len() <= POS_MASK as usize),
        "fewer than 2^27 windows per partition in a chunk"
    );
    w
}

/// CIDEr weights of the unigrams, indexed by word id (`bound` words), and with the batch's
/// references as the source, their document frequencies.
fn unigram_idf(
    chunks: &[WordChunk],
    bound: u32,
    idf: IdfSource<'_>,
    ref_len: f64,
    ln: &[f64],
) -> (Vec<f64>, Vec<u32>) {
    let bound = bound as usize;
    let mut out = vec![0.0; bound];
    match idf {
        IdfSource::Batch => {
            let mut df = vec![0u32; bound];
            let mut last = vec![u32::MAX; bound];
            for ch in chunks {
                for j in 0..ch.images() {
                    let img = (ch.first_img + j) as u32;
                    for k in ch.img_cap[j] as usize + 1..ch.img_cap[j + 1] as usize {
                        for &w in ch.words(k) {
                            let w = w as usize;
                            if last[w] != img {
                                last[w] = img;
                                df[w] += 1;
                            }
                        }
                    }
                }
            }
            for (o, &d) in out.iter_mut().zip(&df) {
                *o = ref_len - ln[d as usize];
            }
            (out, df)
        }
        IdfSource::Table(t) => {
            let mut done = vec![false; bound];
            for ch in chunks {
                for &w in &ch.words {
                    if !std::mem::replace(&mut done[w as usize], true) {
                        out[w as usize] = ref_len - t.ln_df(&Ngram::new(&[w]));
                    }
                }
            }
            (out, Vec::new())
        }
    }
}

/// Reusable storage for [`ChunkGrams::next_image`].
#[derive(Default)]
pub struct GramBuf {
    ids: Vec<u32>,
    counts: Vec<u32>,
    idfs: Vec<f64>,
    spans: Vec<(u32, [u32; MAX_ORDER], u32)>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustc_hash::FxHashMap;

    #[test]
    fn df_counts_each_image_once() {
        let a: Vec<Vec<u32>> = vec![vec![1, 2], vec![1, 2, 1]];
        let b: Vec<Vec<u32>> = vec![vec![2]];
        let t = document_frequencies([a.as_slice(), b.as_slice()]);
        assert_eq!(t.ln_df(&Ngram::new(&[2])), 2f64.ln());
        assert_eq!(t.ln_df(&Ngram::new(&[1])), 0.0);
        assert_eq!(t.doc_count(), 2);
        assert_eq!(t.df(&Ngram::new(&[1])), 1);
        assert_eq!(t.df(&Ngram::new(&[2])), 2);
        assert_eq!(t.df(&Ngram::new(&[1, 2])), 1);
        assert_eq!(t.df(&Ngram::new(&[2, 1])), 1);
        assert_eq!(t.df(&Ngram::new(&[1, 2, 1])), 1);
        assert_eq!(t.df(&Ngram::new(&[9])), 0);
        assert_eq!(t.len(), 5);
        let none = document_frequencies(std::iter::empty());
        assert_eq!((none.doc_count(), none.len()), (0, 0));
    }

    /// The partitioned counter against a plain one, with narrow and wide keys, images
    /// without references or words, and more images than one group of chunks holds (an
    /// n-gram first seen in one group and counted again in the next).
    #[test]
    fn df_is_the_plain_count() {
        let mut g = crate::engine::bootstrap::SplitMix::stream(5, 0);
        let beyond = ONE_GROUP * CHUNK_IMAGES + 3 * CHUNK_IMAGES + 5;
        for (vocab, count, len) in [(40u64, 700, 12), (70_000, 700, 12), (30, beyond, 5)] {
            let images: Vec<Vec<Vec<u32>>> = (0..count)
                .map(|i| {
                    (0..i % 4)
                        .map(|_| (0..g.below(len)).map(|_| g.below(vocab) as u32).collect())
                        .collect()
                })
                .collect();
            let mut want: FxHashMap<Ngram, u32> = FxHashMap::default();
            for refs in &images {
                let mut seen: Vec<Ngram> = refs
                    .iter()
                    .flat_map(|r| (1..=MAX_ORDER).flat_map(move |n| r.windows(n).map(Ngram::new)))
                    .collect();
                seen.sort_unstable();
                seen.dedup();
                for s in seen {
                    *want.entry(s).or_default() += 1;
                }
            }
            let t = document_frequencies(images.iter().map(Vec::as_slice));
            assert_eq!(t.doc_count(), images.len());
            assert_eq!(t.len(), want.len(), "vocabulary {vocab}");
            for (gram, d) in t.iter() {
                assert_eq!(want.get(gram), Some(&d), "{gram:?}");
            }
        }
    }

    /// Every image's n-gram lists (ids, counts, weights) against a plain count, in a batch of
    /// one group (ids and frequencies in place) and one of more images than a group holds (an
    /// id per window: an id names one n-gram across the whole batch, whichever group interned
    /// it), with the batch's own frequencies and with a table of them.
    #[test]
    fn grams_are_the_plain_count_in_both_layouts() {
        let beyond = ONE_GROUP * CHUNK_IMAGES + 2 * CHUNK_IMAGES + 9;
        for (count, table) in [(700, false), (700, true), (beyond, false), (beyond, true)] {
            grams_are_the_plain_count(count, table, 0);
        }
        // Word ids from 2^20 on: n-gram ids that use all 3 bytes; from 2^24 on: ids that do not
        // fit in 3 (4-byte ids). Both with u128 keys.
        grams_are_the_plain_count(beyond, false, 1 << 20);
        grams_are_the_plain_count(beyond, false, 1 << 24);
        grams_are_the_plain_count(beyond, true, 1 << 24);
    }

    /// 3-byte ids up to the last id below 2^24, and not one further.
    #[test]
    fn narrow_ids_end_at_two_to_the_24() {
        let top = 1u32 << 24;
        // The last n-gram of partition PARTS - 1 has id `gram_base + longest * PARTS - 1`.
        assert!(narrow(top - 16 * PARTS as u32, 16));
        assert!(!narrow(top - 16 * PARTS as u32 + 1, 16));
        assert!(narrow(0, (1 << 24) / PARTS));
        assert!(!narrow(0, (1 << 24) / PARTS + 1));
        assert!(narrow(top, 0) && !narrow(top + 1, 0));
        assert_eq!(gram_id(top - 16 * PARTS as u32, 15, PARTS - 1), top - 1);
    }

    fn grams_are_the_plain_count(count: usize, table: bool, first_word: u32) {
        let mut g = crate::engine::bootstrap::SplitMix::stream(11, 0);
        // Per image: its candidate, then its references.
        let images: Vec<Vec<Vec<u32>>> = (0..count)
            .map(|i| {
                (0..1 + i % 4)
                    .map(|_| {
                        (0..g.below(7))
                            .map(|_| first_word + g.below(25) as u32)
                            .collect()
                    })
                    .collect()
            })
            .collect();
        let mut captions = Vec::new();
        let mut img_start = Vec::new();
        for caps in &images {
            img_start.push(captions.len());
            captions.extend(caps.iter().map(|c| Caption {
                text: "",
                ids: Some(&c[..]),
            }));
        }
        img_start.push(captions.len());
        let refs: Vec<&[Vec<u32>]> = images.iter().map(|c| &c[1..]).collect();
        let df = document_frequencies(refs.iter().copied());
        let source = if table {
            IdfSource::Table(&df)
        } else {
            IdfSource::Batch
        };
        let words = BatchWords::build(&Interner::new(), &captions, &img_start, false, Some(source));
        let want = match (count <= ONE_GROUP * CHUNK_IMAGES, first_word) {
            (true, _) => "in place",
            (false, w) if w < 1 << 24 => "3-byte ids",
            (false, _) => "4-byte ids",
        };
        for ch in &words.chunks {
            let layout = match ch.grams {
                ChunkGramIds::InPlace { .. } => "in place",
                ChunkGramIds::Ids24(_) => "3-byte ids",
                ChunkGramIds::Ids(_) => "4-byte ids",
            };
            assert_eq!(layout, want);
        }
        let idf =
            |gram: &[u32]| (count as f64).ln() - f64::from(df.df(&Ngram::new(gram)).max(1)).ln();
        let mut names: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
        let mut buf = GramBuf::default();
        let mut img = 0;
        for c in 0..words.chunk_count() {
            let mut grams = words.chunk_grams(c);
            for _ in 0..words.chunk_images(c) {
                let got = grams.next_image(&mut buf);
                assert_eq!(got.len(), images[img].len());
                for (caption, gr) in images[img].iter().zip(&got) {
                    for n in 1..=MAX_ORDER {
                        // Distinct n-grams in first-occurrence order, with counts.
                        let mut want: Vec<(&[u32], u32)> = Vec::new();
                        for w in caption.windows(n) {
                            match want.iter_mut().find(|e| e.0 == w) {
                                Some(e) => e.1 += 1,
                                None => want.push((w, 1)),
                            }
                        }
                        let list = gr.order(n);
                        assert_eq!(list.len(), want.len(), "image {img}, order {n}");
                        for (k, &(w, cnt)) in want.iter().enumerate() {
                            assert_eq!(list.counts[k], cnt, "image {img}");
                            assert_eq!(list.idfs[k], idf(w), "image {img}, {w:?}");
                            let name = names.entry(list.ids[k]).or_insert_with(|| w.to_vec());
                            assert_eq!(name, w, "one id, two n-grams (image {img})");
                        }
                    }
                }
                img += 1;
            }
        }
        assert_eq!(img, count);
        // And one n-gram, one id.
        let distinct: std::collections::HashSet<&Vec<u32>> = names.values().collect();
        assert_eq!(distinct.len(), names.len());
    }

    /// A count stopped at any of its checks (per chunk, per partition, between stages) gives
    /// up without a panic; one never stopped is the plain count.
    #[test]
    fn a_stopped_count_gives_up_at_every_check() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let mut g = crate::engine::bootstrap::SplitMix::stream(9, 0);
        let images: Vec<Vec<Vec<u32>>> = (0..300)
            .map(|_| {
                (0..3)
                    .map(|_| (0..g.below(10)).map(|_| g.below(500) as u32).collect())
                    .collect()
            })
            .collect();
        let calls = AtomicUsize::new(0);
        let counted = || calls.fetch_add(1, Ordering::Relaxed) == usize::MAX;
        let whole = document_frequencies_until(images.iter().map(Vec::as_slice), &counted)
            .expect("never stopped");
        let checks = calls.load(Ordering::Relaxed);
        // Five chunks and every partition are checked, besides the stages.
        assert!(checks > 5 + PARTS, "{checks} checks");
        for k in 0..=checks {
            let n = AtomicUsize::new(0);
            let stop = || n.fetch_add(1, Ordering::Relaxed) >= k;
            let t = document_frequencies_until(images.iter().map(Vec::as_slice), &stop);
            match t {
                None => assert!(k < checks, "stopped at check {k} of {checks}"),
                Some(t) => {
                    assert_eq!(k, checks, "ran to the end although stopped at check {k}");
                    assert_eq!((t.doc_count(), t.len()), (whole.doc_count(), whole.len()));
                    for (gram, d) in t.iter() {
                        assert_eq!(whole.df(gram), d);
                    }
                }
            }
        }
    }
}
