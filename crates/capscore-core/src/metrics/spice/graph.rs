//! Scene graphs built from tuples, with WordNet-synonym merging (spec SPICE §7), and their
//! tuple sets (§9.1).

use serde::{Deserialize, Serialize};

use super::synsets::SynsetLookup;
use super::Tuple;

/// A concept: a set of strings and the union of their synset ids (§7.1). Both sets are kept
/// sorted and without duplicates; two 64-bit signatures of them let most dissimilar pairs
/// be rejected without comparing the sets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "ConceptSets", into = "ConceptSets")]
pub struct Concept {
    // The signatures come first so that the derived `==` rejects most unequal pairs early.
    synset_sig: Sig,
    string_sig: u64,
    /// The strings merged into this concept, sorted.
    pub strings: Vec<String>,
    /// Their synset ids, sorted.
    pub synsets: Vec<u32>,
}

/// A 256-bit Bloom signature of a synset-id set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Sig([u64; 4]);

impl Sig {
    fn of(ids: &[u32]) -> Self {
        let mut s = Sig::default();
        for &id in ids {
            let h = u64::from(id).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56;
            s.0[(h >> 6) as usize] |= 1 << (h & 63);
        }
        s
    }
    fn meets(&self, o: &Sig) -> bool {
        (self.0[0] & o.0[0]) | (self.0[1] & o.0[1]) | (self.0[2] & o.0[2]) | (self.0[3] & o.0[3])
            != 0
    }
    fn absorb(&mut self, o: &Sig) {
        for i in 0..4 {
            self.0[i] |= o.0[i];
        }
    }
}

/// The serialized form of a [`Concept`]: its two sets.
#[derive(Serialize, Deserialize)]
struct ConceptSets {
    strings: Vec<String>,
    synsets: Vec<u32>,
}

impl From<ConceptSets> for Concept {
    fn from(c: ConceptSets) -> Self {
        let mut strings = c.strings;
        strings.sort_unstable();
        strings.dedup();
        let mut synsets = c.synsets;
        synsets.sort_unstable();
        synsets.dedup();
        Concept::from_sets(strings, synsets)
    }
}

impl From<Concept> for ConceptSets {
    fn from(c: Concept) -> Self {
        ConceptSets {
            strings: c.strings,
            synsets: c.synsets,
        }
    }
}

fn string_bit(s: &str) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    let h = BuildHasherDefault::<rustc_hash::FxHasher>::default().hash_one(s);
    1u64 << (h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58)
}

fn sorted_intersect(a: &[u32], b: &[u32]) -> usize {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                n += 1;
                i += 1;
                j += 1;
            }
        }
    }
    n
}

fn sorted_union<T: Ord + Clone>(a: &mut Vec<T>, b: &[T]) {
    if b.iter().all(|x| a.binary_search(x).is_ok()) {
        return;
    }
    a.extend_from_slice(b);
    a.sort_unstable();
    a.dedup();
}

impl Concept {
    /// The concept of one string: `{s}` and `syn(s)` (§8.2).
    pub fn new(text: &str, syn: &dyn SynsetLookup) -> Self {
        Concept::from_sets(vec![text.to_string()], syn.concept_synsets(text))
    }

    /// A concept from sorted, duplicate-free sets.
    fn from_sets(strings: Vec<String>, synsets: Vec<u32>) -> Self {
        let synset_sig = Sig::of(&synsets);
        let string_sig = strings.iter().fold(0, |m, s| m | string_bit(s));
        Concept {
            strings,
            synsets,
            synset_sig,
            string_sig,
        }
    }

    fn shares_string(&self, other: &Concept) -> bool {
        self.string_sig & other.string_sig != 0
            && crate::metrics::sorted_intersect(&self.strings, &other.strings)
    }

    fn shares_synset(&self, other: &Concept) -> bool {
        self.synset_sig.meets(&other.synset_sig)
            && crate::metrics::sorted_intersect(&self.synsets, &other.synsets)
    }

    /// Similar: shares a synset id or a string (§7.1).
    pub fn similar(&self, other: &Concept) -> bool {
        self.shares_synset(other) || self.shares_string(other)
    }

    /// Node-merging similarity: 1.0 on a shared string, else the synset Jaccard index in
    /// 32-bit float (NaN when both synset sets are empty).
    pub fn similarity(&self, other: &Concept) -> f32 {
        if self.shares_string(other) {
            return 1.0;
        }
        let inter = if !self.synset_sig.meets(&other.synset_sig) {
            0
        } else {
            sorted_intersect(&self.synsets, &other.synsets)
        };
        let union = self.synsets.len() + other.synsets.len() - inter;
        inter as f32 / union as f32
    }

    fn merge(&mut self, other: &Concept) {
        sorted_union(&mut self.strings, &other.strings);
        sorted_union(&mut self.synsets, &other.synsets);
        self.synset_sig.absorb(&other.synset_sig);
        self.string_sig |= other.string_sig;
    }

    /// The concept as SPICE prints it in a single-string case (strings joined with `/`).
    pub fn printed(&self) -> String {
        self.strings.join("/")
    }

    /// True when the concept is exactly one string from `list` (how the subset filters of
    /// §10.2 read a printed concept: a merged concept contains `/` and never qualifies).
    pub(crate) fn is_one_of(&self, list: &[&str]) -> bool {
        self.strings.len() == 1 && list.contains(&self.strings[0].as_str())
    }
}

/// A node: an object concept and its attribute concepts (in the order added).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Node {
    /// The object.
    pub object: Concept,
    /// Attributes, earliest first.
    pub attributes: Vec<Concept>,
}

/// A directed, labelled edge between two nodes (indices into [`SceneGraph::nodes`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Edge {
    /// Source node.
    pub source: usize,
    /// Target node.
    pub target: usize,
    /// Relation concept.
    pub relation: Concept,
}

/// A scene graph (§7.2). Nodes are kept in creation order and edges in insertion order;
/// where the official tool breaks ties by Java identity-hash order, this one takes the
/// earliest node or attribute (§7.3, §7.4) and counts the occasion in [`Self::ties`].
///
/// A reference graph depends only on the reference tuples and the synonym data, so it can
/// be built once per dataset and reused (it is `Clone` and serde-serializable).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "SceneGraphRepr")]
pub struct SceneGraph {
    /// Nodes in creation order.
    pub nodes: Vec<Node>,
    /// Edges in insertion order.
    pub edges: Vec<Edge>,
    /// Whether synonym merging was on (off reproduces `-noSynsets`).
    pub use_synsets: bool,
    /// How many times a node or attribute merge had more than one equally good target, i.e.
    /// where the official tool's choice is run-dependent.
    pub ties: u32,
}

/// The serialized form of a [`SceneGraph`], checked on the way in.
#[derive(Deserialize)]
struct SceneGraphRepr {
    nodes: Vec<Node>,
    edges: Vec<Edge>,
    use_synsets: bool,
    #[serde(default)]
    ties: u32,
}

impl TryFrom<SceneGraphRepr> for SceneGraph {
    type Error = String;
    fn try_from(g: SceneGraphRepr) -> Result<Self, String> {
        let n = g.nodes.len();
        if let Some(e) = g.edges.iter().find(|e| e.source >= n || e.target >= n) {
            return Err(format!(
                "scene graph edge {} -> {} names a node out of range ({n} nodes)",
                e.source, e.target
            ));
        }
        Ok(SceneGraph {
            nodes: g.nodes,
            edges: g.edges,
            use_synsets: g.use_synsets,
            ties: g.ties,
        })
    }
}

impl SceneGraph {
    /// An empty graph.
    pub fn new(use_synsets: bool) -> Self {
        SceneGraph {
            nodes: Vec::new(),
            edges: Vec::new(),
            use_synsets,
            ties: 0,
        }
    }

    /// A graph from tuple lists added in order (one list per caption; a reference graph
    /// takes all references of an image, §7.5).
    pub fn from_tuples<'a, I>(lists: I, syn: &dyn SynsetLookup, use_synsets: bool) -> Self
    where
        I: IntoIterator<Item = &'a [Tuple]>,
    {
        let mut g = SceneGraph::new(use_synsets);
        for list in lists {
            for t in list {
                g.add_tuple(t, syn);
            }
        }
        g
    }

    /// Adds one tuple: `(o)`, `(o, a)` or `(s, t, r)`; other lengths are ignored.
    pub fn add_tuple(&mut self, t: &Tuple, syn: &dyn SynsetLookup) {
        match t.0.as_slice() {
            [o] => {
                self.node(o, syn);
            }
            [o, a] => {
                let n = self.node(o, syn);
                self.add_attribute(n, a, syn);
            }
            [s, o, r] => {
                let source = self.node(s, syn);
                let target = self.node(o, syn);
                self.add_relation(source, target, r, syn);
            }
            _ => {}
        }
    }

    /// `node(x)` of §7.3: the node whose object equals the concept of `x`, else (merging on)
    /// the most similar node with similarity > 0 (earliest on ties), else a new node.
    pub fn node(&mut self, text: &str, syn: &dyn SynsetLookup) -> usize {
        let c = Concept::new(text, syn);
        if let Some(i) = self.nodes.iter().position(|n| n.object == c) {
            return i;
        }
        if self.use_synsets {
            let mut best: Option<usize> = None;
            let mut best_sim = 0.0f32;
            let mut tied = false;
            for (i, n) in self.nodes.iter().enumerate() {
                if !n.object.synset_sig.meets(&c.synset_sig)
                    && n.object.string_sig & c.string_sig == 0
                {
                    continue; // similarity 0 or NaN: never chosen
                }
                let s = n.object.similarity(&c);
                if s > best_sim {
                    best = Some(i);
                    best_sim = s;
                    tied = false;
                } else if best.is_some() && s == best_sim {
                    tied = true;
                }
            }
            if let Some(i) = best {
                if tied {
                    self.ties += 1;
                }
                self.nodes[i].object.merge(&c);
                return i;
            }
        }
        self.nodes.push(Node {
            object: c,
            attributes: Vec::new(),
        });
        self.nodes.len() - 1
    }

    /// `addAttribute` of §7.4.
    fn add_attribute(&mut self, n: usize, text: &str, syn: &dyn SynsetLookup) {
        let c = Concept::new(text, syn);
        let attrs = &mut self.nodes[n].attributes;
        if attrs.contains(&c) {
            return;
        }
        if self.use_synsets {
            let mut similar = attrs.iter().enumerate().filter(|(_, a)| a.similar(&c));
            if let Some((i, _)) = similar.next() {
                if similar.next().is_some() {
                    self.ties += 1;
                }
                attrs[i].merge(&c);
                return;
            }
        }
        attrs.push(c);
    }

    /// `addRelation` of §7.4 (a leading "be " is dropped from the relation).
    fn add_relation(&mut self, source: usize, target: usize, text: &str, syn: &dyn SynsetLookup) {
        let text = text.strip_prefix("be ").unwrap_or(text);
        let c = Concept::new(text, syn);
        let same_ends = |e: &&mut Edge| e.source == source && e.target == target;
        if self
            .edges
            .iter_mut()
            .filter(same_ends)
            .any(|e| e.relation == c)
        {
            return;
        }
        if self.use_synsets {
            if let Some(e) = self
                .edges
                .iter_mut()
                .filter(same_ends)
                .find(|e| e.relation.similar(&c))
            {
                e.relation.merge(&c);
                return;
            }
        }
        self.edges.push(Edge {
            source,
            target,
            relation: c,
        });
    }

    /// The tuple set of §9.1: one object tuple per node, one attribute tuple per attribute,
    /// one relation tuple per edge, in that order.
    pub fn tuples(&self) -> Vec<GraphTuple<'_>> {
        let mut out = Vec::new();
        for n in &self.nodes {
            out.push(GraphTuple::Object(&n.object));
            for a in &n.attributes {
                out.push(GraphTuple::Attribute(&n.object, a));
            }
        }
        for e in &self.edges {
            out.push(GraphTuple::Relation(
                &self.nodes[e.source].object,
                &e.relation,
                &self.nodes[e.target].object,
            ));
        }
        out
    }
}

/// A tuple of a graph's tuple set, borrowing the graph's concepts. Relations read
/// (subject, relation, object).
#[derive(Debug, Clone, Copy)]
pub enum GraphTuple<'a> {
    /// `(object)`.
    Object(&'a Concept),
    /// `(object, attribute)`.
    Attribute(&'a Concept, &'a Concept),
    /// `(subject, relation, object)`.
    Relation(&'a Concept, &'a Concept, &'a Concept),
}

impl GraphTuple<'_> {
    /// Similar (synonyms on) or equal (off) position by position (§9.2).
    pub fn matches(&self, other: &GraphTuple<'_>, use_synsets: bool) -> bool {
        let f = |a: &Concept, b: &Concept| {
            if use_synsets {
                a.similar(b)
            } else {
                a == b
            }
        };
        match (self, other) {
            (GraphTuple::Object(a), GraphTuple::Object(b)) => f(a, b),
            (GraphTuple::Attribute(a, x), GraphTuple::Attribute(b, y)) => f(a, b) && f(x, y),
            (GraphTuple::Relation(a, r, x), GraphTuple::Relation(b, s, y)) => {
                f(a, b) && f(r, s) && f(x, y)
            }
            _ => false,
        }
    }

    /// Number of concepts (1, 2 or 3).
    pub fn len(&self) -> usize {
        match self {
            GraphTuple::Object(_) => 1,
            GraphTuple::Attribute(..) => 2,
            GraphTuple::Relation(..) => 3,
        }
    }

    /// Never true: a tuple has at least one concept.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The concepts in (subject, relation, object) order.
    pub fn concepts(&self) -> Vec<&Concept> {
        match *self {
            GraphTuple::Object(a) => vec![a],
            GraphTuple::Attribute(a, b) => vec![a, b],
            GraphTuple::Relation(a, b, c) => vec![a, b, c],
        }
    }

    /// The attribute concept of an attribute tuple.
    pub fn attribute(&self) -> Option<&Concept> {
        match *self {
            GraphTuple::Attribute(_, a) => Some(a),
            _ => None,
        }
    }
}
