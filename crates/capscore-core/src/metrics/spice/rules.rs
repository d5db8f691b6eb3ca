//! Graph clean-up (spec SPICE §4) and the tuple rules R1–R12 (§5), with the official
//! enumeration order (Appendix A).

use super::sentence::ParsedSentence;
use super::synsets::java_trim;
use super::Tuple;

/// Quantifier nouns of pattern Q1 (Appendix B).
const Q1_WORDS: &[&str] = &[
    "lot",
    "assortment",
    "number",
    "couple",
    "bunch",
    "handful",
    "litany",
    "sheaf",
    "slew",
    "dozen",
    "series",
    "variety",
    "multitude",
    "wad",
    "clutch",
    "wave",
    "mountain",
    "array",
    "spate",
    "string",
    "ton",
    "range",
    "plethora",
    "heap",
    "sort",
    "form",
    "kind",
    "type",
    "version",
    "bit",
    "pair",
    "triple",
    "total",
];
/// Quantifier words of pattern Q2 (plus digit strings followed by "s").
const Q2_WORDS: &[&str] = &[
    "lots",
    "many",
    "several",
    "plenty",
    "tons",
    "dozens",
    "multitudes",
    "mountains",
    "loads",
    "pairs",
    "tens",
    "hundreds",
    "thousands",
    "millions",
    "billions",
    "trillions",
];
/// Quantifier words of pattern Q3 (plus digit strings).
const Q3_WORDS: &[&str] = &[
    "some", "all", "both", "neither", "everyone", "nobody", "one", "two", "three", "four", "five",
    "six", "seven", "eight", "nine", "ten", "hundred", "thousand", "million", "billion",
    "trillion",
];
/// Singular pronouns (§4.3), compared case-sensitively with the surface word.
const SINGULAR_PRONOUNS: &[&str] = &[
    "i", "me", "myself", "mine", "my", "yourself", "he", "him", "himself", "his", "she", "her",
    "herself", "hers", "it", "itself", "its", "one", "oneself", "one's",
];

fn is_nn(tag: &str) -> bool {
    matches!(tag, "NN" | "NNS" | "NNP" | "NNPS")
}
fn is_nns(tag: &str) -> bool {
    matches!(tag, "NNS" | "NNPS")
}
fn is_v(tag: &str) -> bool {
    tag.starts_with("VB")
}
fn is_j(tag: &str) -> bool {
    matches!(tag, "JJ" | "JJR" | "JJS")
}
fn is_prp(tag: &str) -> bool {
    tag.starts_with("PRP")
}
fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}
/// `dobj`, `iobj` or any `nmod:` relation (§5.0).
fn is_objrel(rel: &str) -> bool {
    rel == "dobj" || rel == "iobj" || rel.starts_with("nmod:")
}
/// `nmod:X` with X not `agent` (R9).
fn is_nmod_not_agent(rel: &str) -> bool {
    rel.starts_with("nmod:") && rel != "nmod:agent"
}
/// `suffix(r)` of §5.0.
fn suffix(rel: &str) -> String {
    match rel.strip_prefix("nmod:") {
        Some(x) if x != "poss" && x != "agent" => format!(" {}", x.replace('_', " ")),
        _ => String::new(),
    }
}

/// Smallest Java `HashMap` table size (power of two, at least 16) holding `n` entries
/// without a resize.
fn table_size(n: usize) -> u64 {
    let mut t: u64 = 16;
    while (n as u64) * 4 > t * 3 {
        t *= 2;
    }
    t
}

#[derive(Debug, Clone)]
struct Edge {
    gov: usize,
    dep: usize,
    rel: String,
    alive: bool,
}

/// The mutable sentence graph the clean-up rewrites. Node ids are 0-based token places.
struct Graph<'a> {
    s: &'a ParsedSentence,
    sentence: u64,
    edges: Vec<Edge>,
    roots: Vec<usize>,
    vertices: Vec<usize>,
}

impl<'a> Graph<'a> {
    fn new(s: &'a ParsedSentence, sentence: usize) -> Self {
        let n = s.tokens.len();
        let mut is_vertex = vec![false; n];
        let edges: Vec<Edge> = s
            .edges
            .iter()
            .map(|e| {
                is_vertex[e.gov - 1] = true;
                is_vertex[e.dep - 1] = true;
                Edge {
                    gov: e.gov - 1,
                    dep: e.dep - 1,
                    rel: e.rel.clone(),
                    alive: true,
                }
            })
            .collect();
        let roots: Vec<usize> = s.roots.iter().map(|&r| r - 1).collect();
        for &r in &roots {
            is_vertex[r] = true;
        }
        let vertices = (0..n).filter(|&i| is_vertex[i]).collect();
        Graph {
            s,
            sentence: sentence as u64,
            edges,
            roots,
            vertices,
        }
    }

    fn pos(&self, n: usize) -> u32 {
        self.s.position(n)
    }
    fn word(&self, n: usize) -> &str {
        &self.s.tokens[n].word
    }
    fn tag(&self, n: usize) -> &str {
        &self.s.tokens[n].tag
    }
    /// `lowercase(trim(lemma))`.
    fn lem(&self, n: usize) -> String {
        java_trim(&self.s.tokens[n].lemma).to_lowercase()
    }
    /// True when `b` is immediately after `a` (adjacent positions).
    fn follows(&self, b: usize, a: usize) -> bool {
        u64::from(self.pos(b)) == u64::from(self.pos(a)) + 1
    }
    /// Java hash key of a vertex (Appendix A).
    fn key(&self, n: usize) -> u64 {
        29 * self.sentence + u64::from(self.pos(n))
    }

    fn add_edge(&mut self, gov: usize, dep: usize, rel: String) {
        self.edges.push(Edge {
            gov,
            dep,
            rel,
            alive: true,
        });
    }

    fn in_edges(&self, n: usize) -> Vec<usize> {
        (0..self.edges.len())
            .filter(|&i| self.edges[i].alive && self.edges[i].dep == n)
            .collect()
    }

    /// Alive outgoing edges of `n` in child order: children by hash bucket (key mod table
    /// size), ties by first insertion; a child's parallel edges in insertion order.
    fn out_edges(&self, n: usize) -> Vec<usize> {
        let mut children: Vec<(usize, usize)> = Vec::new(); // (child, first edge)
        for (i, e) in self.edges.iter().enumerate() {
            if e.alive && e.gov == n && !children.iter().any(|&(c, _)| c == e.dep) {
                children.push((e.dep, i));
            }
        }
        let t = table_size(children.len());
        children.sort_by_key(|&(c, first)| (self.key(c) % t, first));
        let mut out = Vec::new();
        for (c, _) in children {
            out.extend((0..self.edges.len()).filter(|&i| {
                self.edges[i].alive && self.edges[i].gov == n && self.edges[i].dep == c
            }));
        }
        out
    }

    /// Distinct children in child order.
    fn children(&self, n: usize) -> Vec<usize> {
        let mut out: Vec<usize> = Vec::new();
        for e in self.out_edges(n) {
            let d = self.edges[e].dep;
            if !out.contains(&d) {
                out.push(d);
            }
        }
        out
    }

    /// Vertices in the graph's hash order (key mod table size, ties by position).
    fn vertex_order(&self) -> Vec<usize> {
        let t = table_size(self.vertices.len());
        let mut v = self.vertices.clone();
        v.sort_by_key(|&n| (self.key(n) % t, n));
        v
    }

    /// Appendix A: reversed post-order of a DFS from each unvisited vertex in vertex order;
    /// vertex order if the graph has a cycle.
    fn topo_order(&self) -> Vec<usize> {
        let vorder = self.vertex_order();
        let n = self.s.tokens.len();
        let kids: Vec<Vec<usize>> = (0..n)
            .map(|i| {
                if self.vertices.contains(&i) {
                    self.children(i)
                } else {
                    Vec::new()
                }
            })
            .collect();
        // 0 = new, 1 = on stack, 2 = done
        let mut state = vec![0u8; n];
        let mut post = Vec::with_capacity(vorder.len());
        for &start in &vorder {
            if state[start] != 0 {
                continue;
            }
            let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
            state[start] = 1;
            while let Some(&mut (node, ref mut next)) = stack.last_mut() {
                if *next < kids[node].len() {
                    let c = kids[node][*next];
                    *next += 1;
                    match state[c] {
                        0 => {
                            state[c] = 1;
                            stack.push((c, 0));
                        }
                        1 => return vorder, // cycle
                        _ => {}
                    }
                } else {
                    state[node] = 2;
                    post.push(node);
                    stack.pop();
                }
            }
        }
        post.reverse();
        post
    }

    /// Alive out-edges of `n` with relation `rel`, in child order, as (edge, child).
    fn children_by(&self, n: usize, pred: impl Fn(&str) -> bool) -> Vec<(usize, usize)> {
        self.out_edges(n)
            .into_iter()
            .filter(|&e| pred(&self.edges[e].rel))
            .map(|e| (e, self.edges[e].dep))
            .collect()
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum QPattern {
    Q1,
    Q2,
    Q3,
}

struct QMatch {
    q: usize,
    n: usize,
    of: usize,
    det: Option<usize>,
}

fn q_word(pattern: QPattern, w: &str) -> bool {
    match pattern {
        QPattern::Q1 => Q1_WORDS.contains(&w),
        QPattern::Q2 => Q2_WORDS.contains(&w) || w.strip_suffix('s').is_some_and(is_digits),
        QPattern::Q3 => Q3_WORDS.contains(&w) || is_digits(w),
    }
}

fn match_q(g: &Graph, pattern: QPattern, q: usize) -> Option<QMatch> {
    if !q_word(pattern, &g.word(q).to_lowercase()) {
        return None;
    }
    let dets: Vec<Option<usize>> = if pattern == QPattern::Q1 {
        g.children_by(q, |r| r == "det")
            .into_iter()
            .filter(|&(_, d)| matches!(g.word(d).to_lowercase().as_str(), "a" | "an"))
            .map(|(_, d)| Some(d))
            .collect()
    } else {
        vec![None]
    };
    for det in dets {
        for (_, n) in g.children_by(q, |r| r.starts_with("nmod")) {
            let (noun, pron) = (is_nn(g.tag(n)), is_prp(g.tag(n)));
            if !noun && !pron {
                continue;
            }
            for (_, of) in g.children_by(n, |r| r == "case") {
                if g.word(of).to_lowercase() != "of" || !g.follows(of, q) {
                    continue;
                }
                if pattern == QPattern::Q3
                    && !pron
                    && !g
                        .children_by(n, |r| r == "det")
                        .iter()
                        .any(|&(_, d)| g.follows(d, of))
                {
                    continue;
                }
                return Some(QMatch { q, n, of, det });
            }
        }
    }
    None
}

fn apply_q(g: &mut Graph, pattern: QPattern, m: &QMatch) {
    let QMatch { q, n, of, det } = *m;
    // 1. Q's incoming edges move to N; the root moves too; Q -> N goes.
    for e in g.in_edges(q) {
        g.edges[e].alive = false;
        let (gov, rel) = (g.edges[e].gov, g.edges[e].rel.clone());
        g.add_edge(gov, n, rel);
    }
    for r in g.roots.iter_mut() {
        if *r == q {
            *r = n;
        }
    }
    for e in g.edges.iter_mut() {
        if e.alive && e.gov == q && e.dep == n {
            e.alive = false;
        }
    }
    // 2. The quantifier phrase M.
    let mut members = vec![q, of];
    if let Some(d) = det {
        members.push(d);
    }
    let qpos = g.pos(q);
    for (_, c) in g.children_by(q, |r| pattern != QPattern::Q1 || r == "amod") {
        if g.pos(c) < qpos {
            members.push(c);
        }
    }
    members.sort_by_key(|&x| (g.pos(x), x));
    members.dedup();
    // 3. Re-attach M under N.
    for &x in &members {
        for e in g.in_edges(x) {
            g.edges[e].alive = false;
        }
    }
    let head = members[0];
    g.add_edge(n, head, "det:qmod".to_string());
    for &x in &members[1..] {
        g.add_edge(head, x, "mwe".to_string());
    }
}

fn quantifiers(g: &mut Graph) {
    for pattern in [QPattern::Q1, QPattern::Q2, QPattern::Q3] {
        let order = g.topo_order();
        let matches: Vec<QMatch> = order
            .into_iter()
            .filter_map(|q| match_q(g, pattern, q))
            .collect();
        for m in &matches {
            apply_q(g, pattern, m);
        }
    }
}

fn pronouns(g: &mut Graph) {
    let Some(&root) = g.roots.first() else {
        return;
    };
    let mut by_pos = g.vertices.clone();
    by_pos.sort_by_key(|&n| (g.pos(n), n));
    // Children by increasing position, computed once (the graph does not change until all
    // antecedents are found).
    let kids: Vec<Vec<usize>> = (0..g.s.tokens.len())
        .map(|x| {
            let mut k = g.children(x);
            k.sort_by_key(|&c| (g.pos(c), c));
            k
        })
        .collect();
    let mut resolved = Vec::new();
    for p in by_pos {
        if g.pos(p) <= 1 || !is_prp(g.tag(p)) || g.in_edges(p).is_empty() {
            continue;
        }
        let singular = SINGULAR_PRONOUNS.contains(&g.word(p));
        // Breadth-first from the first root, children by increasing position.
        let mut seen = vec![false; g.s.tokens.len()];
        let mut queue = std::collections::VecDeque::from([root]);
        seen[root] = true;
        let mut found = None;
        while let Some(x) = queue.pop_front() {
            let t = g.tag(x);
            if matches!(t, "NN" | "NNP") || (!singular && matches!(t, "NNS" | "NNPS")) {
                found = Some(x);
                break;
            }
            for &c in &kids[x] {
                if !seen[c] {
                    seen[c] = true;
                    queue.push_back(c);
                }
            }
        }
        if let Some(a) = found {
            if g.pos(a) < g.pos(p) {
                resolved.push((p, a));
            }
        }
    }
    for (p, a) in resolved {
        for e in g.in_edges(p) {
            g.edges[e].alive = false;
            let (gov, rel) = (g.edges[e].gov, g.edges[e].rel.clone());
            g.add_edge(gov, a, rel);
        }
        let outs: Vec<usize> = (0..g.edges.len())
            .filter(|&i| g.edges[i].alive && g.edges[i].gov == p)
            .collect();
        for e in outs {
            g.edges[e].alive = false;
            let (dep, rel) = (g.edges[e].dep, g.edges[e].rel.clone());
            g.add_edge(a, dep, rel);
        }
    }
}

/// Per node, its live outgoing (or incoming) edges as (relation, other end), in edge order.
fn edge_lists(g: &Graph<'_>, incoming: bool) -> Vec<Vec<(String, usize)>> {
    (0..g.s.tokens.len())
        .map(|n| {
            let edges = if incoming {
                g.in_edges(n)
            } else {
                g.out_edges(n)
            };
            edges
                .into_iter()
                .map(|e| {
                    let e = &g.edges[e];
                    (e.rel.clone(), if incoming { e.gov } else { e.dep })
                })
                .collect()
        })
        .collect()
}

/// Emits the tuples of one sentence (0-based `sentence` number within its caption) into
/// `out`, after the clean-up of §4.
pub(crate) fn sentence_tuples(s: &ParsedSentence, sentence: usize, out: &mut Vec<Tuple>) {
    let mut g = Graph::new(s, sentence);
    quantifiers(&mut g);
    pronouns(&mut g);
    let g = g;
    let order = g.topo_order();
    // Per-node child lists in child order, computed once.
    let outs = edge_lists(&g, false);
    let kids = |n: usize, rel: &str| -> Vec<usize> {
        outs[n]
            .iter()
            .filter(|(r, _)| r == rel)
            .map(|&(_, c)| c)
            .collect()
    };
    let has = |n: usize, rel: &str| outs[n].iter().any(|(r, _)| r == rel);
    let tag = |n: usize| g.tag(n);
    let lem = |n: usize| g.lem(n);
    let t1 = |a: String| Tuple(vec![a]);
    let t2 = |a: String, b: String| Tuple(vec![a, b]);
    let t3 = |a: String, b: String, c: String| Tuple(vec![a, b, c]);
    let pred = |v: usize| -> String {
        let lemma = &s.tokens[v].lemma;
        match kids(v, "compound:prt").first() {
            Some(&p) if lemma == "be" => format!(" {}", g.word(p)),
            Some(&p) => format!("{lemma} {}", g.word(p)),
            None => lemma.clone(),
        }
    };
    let objrels = |v: usize| -> Vec<(&str, usize)> {
        outs[v]
            .iter()
            .filter(|(r, c)| is_objrel(r) && is_nn(tag(*c)))
            .map(|(r, c)| (r.as_str(), *c))
            .collect()
    };

    // R1: subject, verb, object.
    for &v in &order {
        if has(v, "cop") {
            continue;
        }
        for s_ in kids(v, "nsubj") {
            if !is_nn(tag(s_)) {
                continue;
            }
            for (r, o) in objrels(v) {
                out.push(t3(lem(s_), lem(o), pred(v) + &suffix(r)));
            }
        }
    }
    // R2: noun modified by a verb phrase (exactly `acl`).
    for &n in &order {
        for v in kids(n, "acl") {
            if !is_v(tag(v)) {
                continue;
            }
            for (r, o) in objrels(v) {
                out.push(t3(lem(n), lem(o), pred(v) + &suffix(r)));
            }
        }
    }
    // R3a then R3b: subject with an intransitive or copular predicate.
    let r3_emit = |v: usize, subj: usize, out: &mut Vec<Tuple>| {
        if let Some(&c) = kids(v, "case").first() {
            let mut rel = g.word(c).to_string();
            let mut mwes = kids(c, "mwe");
            mwes.sort_by_key(|&m| (g.pos(m), m));
            for m in mwes {
                rel.push(' ');
                rel.push_str(g.word(m));
            }
            out.push(t3(lem(subj), lem(v), rel));
        } else if lem(v) != "be" {
            out.push(t2(lem(subj), lem(v)));
        }
    };
    for &v in &order {
        if has(v, "cop") || !objrels(v).is_empty() {
            continue;
        }
        for s_ in kids(v, "nsubj") {
            if is_nn(tag(s_)) {
                r3_emit(v, s_, out);
            }
        }
    }
    for &v in &order {
        if !has(v, "cop") {
            continue;
        }
        for s_ in kids(v, "nsubj") {
            if is_nn(tag(s_)) {
                r3_emit(v, s_, out);
            }
        }
    }
    // R4: adjectival modifier.
    for &n in &order {
        for a in kids(n, "amod") {
            out.push(t2(lem(n), lem(a)));
        }
    }
    // R5: predicative adjective.
    for &a in &order {
        if !is_j(tag(a)) {
            continue;
        }
        for n in kids(a, "nsubj") {
            out.push(t2(lem(n), lem(a)));
        }
    }
    // R6: prepositional modifier of a noun.
    for &gv in &order {
        if !is_nn(tag(gv)) {
            continue;
        }
        for (r, m) in &outs[gv] {
            if let Some(x) = r.strip_prefix("nmod:") {
                if x != "poss" && x != "agent" {
                    out.push(t3(lem(gv), lem(*m), x.replace('_', " ")));
                }
            }
        }
    }
    // R7: possession.
    for &gv in &order {
        if !is_nn(tag(gv)) {
            continue;
        }
        for m in kids(gv, "nmod:poss") {
            if is_nn(tag(m)) {
                out.push(t3(lem(m), lem(gv), "have".to_string()));
            }
        }
    }
    // R8: passive with agent.
    for &v in &order {
        if !is_v(tag(v)) {
            continue;
        }
        for a in kids(v, "nmod:agent") {
            if !is_nn(tag(a)) {
                continue;
            }
            for p in kids(v, "nsubjpass") {
                if is_nn(tag(p)) {
                    out.push(t3(lem(a), lem(p), pred(v)));
                }
            }
        }
    }
    // R9: counts on plural nouns.
    let count = |x: usize, out: &mut Vec<Tuple>| {
        if let Some(&k) = kids(x, "nummod").first() {
            if g.pos(k) < g.pos(x) {
                out.push(t2(lem(x), lem(k)));
            }
        } else if let Some(&q) = kids(x, "det:qmod").first() {
            out.push(t2(lem(x), lem(q)));
        }
    };
    let has_case = |n: usize| has(n, "case");
    // Plural objects of `v` in R9 order: dobj/iobj first, then nmod:X (X != agent) with case.
    let plural_objects = |v: usize| -> Vec<usize> {
        let mut objs: Vec<usize> = outs[v]
            .iter()
            .filter(|(r, c)| (r == "dobj" || r == "iobj") && is_nns(tag(*c)))
            .map(|&(_, c)| c)
            .collect();
        objs.extend(
            outs[v]
                .iter()
                .filter(|(r, c)| is_nmod_not_agent(r) && is_nns(tag(*c)) && has_case(*c))
                .map(|&(_, c)| c),
        );
        objs
    };
    for &v in &order {
        'anchor: for s_ in kids(v, "nsubj") {
            if !is_nns(tag(s_)) {
                continue;
            }
            if let Some(&o) = plural_objects(v).first() {
                count(s_, out);
                count(o, out);
                break 'anchor;
            }
        }
    }
    let in_edges = edge_lists(&g, true);
    for &x in &order {
        if !is_nns(tag(x)) {
            continue;
        }
        let qualifies = g.roots.contains(&x)
            || in_edges[x]
                .iter()
                .any(|(r, gv)| r == "nsubj" && plural_objects(*gv).is_empty());
        if qualifies {
            count(x, out);
        }
    }
    for &w in &order {
        if !is_nns(tag(w)) || g.roots.contains(&w) {
            continue;
        }
        if in_edges[w].iter().any(|(r, _)| r == "nsubj") {
            continue;
        }
        let blocked = in_edges[w].iter().any(|(r, gv)| {
            (r == "dobj" || r == "iobj" || r.starts_with("nmod"))
                && kids(*gv, "nsubj").iter().any(|&x| is_nns(tag(x)))
        });
        if !blocked {
            count(w, out);
        }
    }
    // R10: noun compounds.
    let mut in_c = vec![false; s.tokens.len()];
    for &h in &order {
        if !is_nn(tag(h)) {
            continue;
        }
        for d in kids(h, "compound") {
            if is_nn(tag(d)) {
                out.push(t2(lem(h), lem(d)));
                in_c[h] = true;
                in_c[d] = true;
            }
        }
    }
    // R11 never fires (spec §5.11). R12: every other noun is an object.
    for &n in &order {
        if is_nn(tag(n)) && !in_c[n] {
            out.push(t1(lem(n)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_table_sizes() {
        for (n, size) in [(0, 16), (12, 16), (13, 32), (24, 32), (25, 64)] {
            assert_eq!(table_size(n), size, "{n}");
        }
    }

    #[test]
    fn suffixes() {
        let cases = [
            ("nmod:on_top_of", " on top of"),
            ("nmod:tmod", " tmod"),
            ("nmod:poss", ""),
            ("dobj", ""),
        ];
        for (rel, want) in cases {
            assert_eq!(suffix(rel), want, "{rel}");
        }
    }
}
