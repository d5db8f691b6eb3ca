//! The input of the exact half: one dependency-parsed sentence, in the representation of
//! spec SPICE §3.2 (UD v1 "collapsed + CC-processed": `nsubj`, `dobj`, `amod`, `nmod:on`,
//! `nmod:on_top_of`, `conj:and`, `nummod`, `compound`, `case`, `cop`, ...), after the
//! converter's own passes (multi-word prepositions, case and conjunction suffixes, CC
//! propagation) and before SPICE's clean-up (§4), which [`super::tuples_of`] performs.

use serde::{Deserialize, Serialize};

/// One token of a parsed sentence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Token {
    /// Surface word as tokenized (used for word lists, case markers, particles).
    pub word: String,
    /// Lemma (Morpha behaviour, spec §6); every tuple string comes from it.
    pub lemma: String,
    /// Penn Treebank tag (NN, NNS, VBG, JJ, PRP$, ...).
    pub tag: String,
    /// 1-based position in the sentence. Defaults to the token's place in
    /// [`ParsedSentence::tokens`]; set it explicitly only for copy nodes (PP coordination,
    /// spec §3.2), which share their original's position.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u32>,
}

/// A dependency edge `rel(governor, dependent)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dependency {
    /// Relation name, e.g. `nsubj`, `nmod:in_front_of`, `det:qmod`.
    pub rel: String,
    /// Governor: 1-based place of the token in [`ParsedSentence::tokens`].
    pub gov: usize,
    /// Dependent: 1-based place of the token in [`ParsedSentence::tokens`].
    pub dep: usize,
}

/// A dependency-parsed sentence: tokens, edges (in the parser's insertion order) and roots.
///
/// The graph's vertices are the roots and every token that is an end of some edge;
/// tokens outside the graph (punctuation) are ignored.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ParsedSentence {
    /// Tokens in sentence order.
    pub tokens: Vec<Token>,
    /// Dependency edges.
    #[serde(default)]
    pub edges: Vec<Dependency>,
    /// Root tokens (1-based places in `tokens`); the first one starts the pronoun search.
    #[serde(default)]
    pub roots: Vec<usize>,
}

/// A malformed parsed sentence.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SentenceError {
    /// An edge or root names a token that does not exist.
    #[error("sentence {sentence}: token {token} out of range (sentence has {len} tokens)")]
    TokenOutOfRange {
        /// 0-based sentence number within the caption.
        sentence: usize,
        /// The offending 1-based token number.
        token: usize,
        /// Number of tokens.
        len: usize,
    },
}

impl ParsedSentence {
    /// Checks that every edge and root names an existing token.
    pub fn validate(&self, sentence: usize) -> Result<(), SentenceError> {
        let len = self.tokens.len();
        let bad = |token: usize| SentenceError::TokenOutOfRange {
            sentence,
            token,
            len,
        };
        for e in &self.edges {
            for t in [e.gov, e.dep] {
                if t == 0 || t > len {
                    return Err(bad(t));
                }
            }
        }
        for &r in &self.roots {
            if r == 0 || r > len {
                return Err(bad(r));
            }
        }
        Ok(())
    }

    /// Position (1-based) of token `i` (0-based place).
    pub(crate) fn position(&self, i: usize) -> u32 {
        self.tokens[i].index.unwrap_or((i + 1) as u32)
    }
}
