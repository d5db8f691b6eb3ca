//! SPICE end to end: tokenized captions -> native tagger/parser ([`crate::nlp`]) -> conversion
//! to the UD v1 graph SPICE's rules read ([`crate::metrics::spice::convert`], with Morpha-style
//! lemmas) -> tuples -> scene graphs (references merged per image, synonyms from METEOR's
//! WordNet data) -> per-image and corpus scores ([`crate::metrics::spice`]).
//!
//! The scoring half is exact (spec SPICE §4–§11); the front end replaces CoreNLP 3.6.0's PCFG
//! parser with spaCy's `en_core_web_sm` network, so per-caption tuples can differ from the
//! official tool's (docs/fidelity.md, "SPICE": the agreement report).
//!
//! Must not touch the filesystem: the `resources` module loads the parser model, the lemma
//! exceptions and the synonyms and calls [`Spice::new`].

use std::sync::Arc;

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::metrics::meteor::{Meteor, Synonyms};
use crate::metrics::spice::convert::{convert, SpacyToken};
use crate::metrics::spice::{
    image_score, tuples_of, SceneGraph, SpiceCorpus, SpiceImage, SpiceInput, SynsetLookup, Tuple,
};
use crate::nlp::lemma::Lemmatizer;
use crate::nlp::{Nlp, ParsedToken};

/// Where the synonym data comes from: METEOR's loaded resources (shared) or a copy of its own.
pub enum SynonymSource {
    /// The synonyms inside a loaded METEOR.
    Meteor(Arc<Meteor>),
    /// A standalone copy.
    Own(Synonyms),
}

impl SynonymSource {
    fn get(&self) -> &Synonyms {
        match self {
            SynonymSource::Meteor(m) => m.synonyms(),
            SynonymSource::Own(s) => s,
        }
    }
}

/// Everything SPICE needs at run time: the parser, the lemma exceptions and the synonyms.
pub struct Spice {
    nlp: Nlp,
    lemmas: Lemmatizer,
    synonyms: SynonymSource,
}

/// One image to score: the candidate's tuples and the merged reference graph.
pub struct SpiceItem<'a> {
    /// The candidate caption's tuples.
    pub candidate: &'a [Tuple],
    /// The merged graph of the image's references.
    pub references: &'a SceneGraph,
}

impl Spice {
    /// SPICE from a loaded parser, lemmatizer and synonym data.
    pub fn new(nlp: Nlp, lemmas: Lemmatizer, synonyms: SynonymSource) -> Spice {
        Spice {
            nlp,
            lemmas,
            synonyms,
        }
    }

    /// The synonym look-up.
    pub fn synonyms(&self) -> &dyn SynsetLookup {
        self.synonyms.get()
    }

    /// The parser.
    pub fn nlp(&self) -> &Nlp {
        &self.nlp
    }

    /// SPICE tuples of tokenized captions (words separated by spaces, as pycocoevalcap's
    /// tokenizer writes them). Each distinct caption is parsed once. Runs on the current
    /// rayon pool; the result does not depend on it. Returns the tuples per caption and, per
    /// caption, whether its tuples could not be built (a converter failure: that caption
    /// contributes no tuples, and callers report it; never silently).
    pub fn tuples<S: AsRef<str> + Sync>(&self, captions: &[S]) -> (Vec<Vec<Tuple>>, Vec<bool>) {
        self.tuples_until(captions, &|| false, &|_| {})
    }

    /// [`Spice::tuples`] that stops early once `stop()` is true (checked per parser batch and
    /// per caption): the result is then incomplete and must be discarded. `parsed(n)` is
    /// called as the parser finishes a batch, with the number of `captions` it covered
    /// (duplicates included: the calls add up to `captions.len()`).
    pub fn tuples_until<S: AsRef<str> + Sync>(
        &self,
        captions: &[S],
        stop: &(dyn Fn() -> bool + Sync),
        parsed: &(dyn Fn(usize) + Sync),
    ) -> (Vec<Vec<Tuple>>, Vec<bool>) {
        let mut index: FxHashMap<&str, usize> = FxHashMap::default();
        let mut uniq: Vec<&str> = Vec::new();
        let slots: Vec<usize> = captions
            .iter()
            .map(|c| {
                let c = c.as_ref();
                *index.entry(c).or_insert_with(|| {
                    uniq.push(c);
                    uniq.len() - 1
                })
            })
            .collect();
        let docs: Vec<Vec<&str>> = uniq
            .iter()
            .map(|c| c.split_whitespace().collect())
            .collect();
        let mut copies = vec![0usize; uniq.len()];
        for &i in &slots {
            copies[i] += 1;
        }
        let docs_parsed = |r: std::ops::Range<usize>| parsed(copies[r].iter().sum());
        let parses = self.nlp.parse_batch_until(&docs, stop, &docs_parsed);
        let tuples: Vec<Option<Vec<Tuple>>> = parses
            .par_iter()
            .map(|tokens| {
                if stop() {
                    return None;
                }
                let toks: Vec<SpacyToken> = tokens.iter().map(SpacyToken::from).collect();
                let sentences = convert(&toks, &self.lemmas);
                // `convert` only yields in-range edges; an error is a converter bug.
                tuples_of(&sentences).ok()
            })
            .collect();
        let failed = slots.iter().map(|&i| tuples[i].is_none()).collect();
        let out = slots
            .into_iter()
            .map(|i| tuples[i].clone().unwrap_or_default())
            .collect();
        (out, failed)
    }

    /// The merged scene graph of one image's references.
    pub fn reference_graph(&self, refs: &[Vec<Tuple>]) -> SceneGraph {
        SceneGraph::from_tuples(refs.iter().map(|v| v.as_slice()), self.synonyms(), true)
    }

    /// Merged reference graphs of many images (`refs[i]`: the tuples of image i's references).
    pub fn reference_graphs(&self, refs: &[Vec<Vec<Tuple>>]) -> Vec<SceneGraph> {
        self.reference_graphs_until(refs, &|| false)
    }

    /// [`Spice::reference_graphs`] that stops early once `stop()` is true (checked per image;
    /// the images left get empty graphs: discard the result).
    fn reference_graphs_until(
        &self,
        refs: &[Vec<Vec<Tuple>>],
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Vec<SceneGraph> {
        refs.par_iter()
            .map(|r| {
                if stop() {
                    self.reference_graph(&[])
                } else {
                    self.reference_graph(r)
                }
            })
            .collect()
    }

    /// Merged reference graphs of many images from their reference captions (`images[i]`:
    /// image i's references), every caption parsed in one batch; per image, whether a
    /// reference's tuples could not be built (see [`Spice::tuples`]).
    pub fn caption_graphs(&self, images: &[&[String]]) -> (Vec<SceneGraph>, Vec<bool>) {
        self.caption_graphs_until(images, &|| false, &|_| {})
    }

    /// [`Spice::caption_graphs`] that stops early once `stop()` is true (the result is then
    /// incomplete: discard it); `parsed(n)` as in [`Spice::tuples_until`] (the calls add up to
    /// the number of reference captions).
    pub fn caption_graphs_until<S: AsRef<str> + Sync>(
        &self,
        images: &[&[S]],
        stop: &(dyn Fn() -> bool + Sync),
        parsed: &(dyn Fn(usize) + Sync),
    ) -> (Vec<SceneGraph>, Vec<bool>) {
        let flat: Vec<&str> = images
            .iter()
            .flat_map(|r| r.iter().map(AsRef::as_ref))
            .collect();
        let (tuples, failed) = self.tuples_until(&flat, stop, parsed);
        let (mut tuples, mut failed) = (tuples.into_iter(), failed.into_iter());
        let grouped: Vec<Vec<Vec<Tuple>>> = images
            .iter()
            .map(|r| tuples.by_ref().take(r.len()).collect())
            .collect();
        let image_failed = images
            .iter()
            .map(|r| failed.by_ref().take(r.len()).fold(false, |a, f| a | f))
            .collect();
        (self.reference_graphs_until(&grouped, stop), image_failed)
    }

    /// Scores images; `order_keys` give pycocoevalcap's order for the corpus mean (sorted
    /// image ids). `detailed` lists every tuple with its match flag.
    pub fn score<K: Ord + Clone + Send + Sync>(
        &self,
        keys: &[K],
        items: &[SpiceItem<'_>],
        detailed: bool,
    ) -> SpiceCorpus<K> {
        let inputs: Vec<SpiceInput<'_, K>> = keys
            .iter()
            .zip(items)
            .map(|(k, it)| SpiceInput {
                id: k.clone(),
                candidate: it.candidate,
                references: it.references,
            })
            .collect();
        crate::metrics::spice::score_corpus(&inputs, self.synonyms(), detailed)
    }

    /// Scores one candidate against one merged reference graph.
    pub fn score_one(&self, candidate: &[Tuple], refs: &SceneGraph, detailed: bool) -> SpiceImage {
        let cg = SceneGraph::from_tuples([candidate], self.synonyms(), refs.use_synsets);
        image_score(&cg, refs, detailed)
    }
}

/// What the SPICE converter reads of a parsed token.
impl From<&ParsedToken> for SpacyToken {
    fn from(t: &ParsedToken) -> SpacyToken {
        SpacyToken {
            word: t.text.clone(),
            tag: t.tag.clone(),
            head: t.head,
            dep: t.dep.clone(),
        }
    }
}
