//! spaCy's arc-eager transition system (greedy, non-monotonic), reimplemented from its
//! documented behaviour: the parser state, the eight state features, action validity, the
//! transitions, and the final tree (with pseudo-projective labels undone).

use super::model::{Action, Move};

/// Parser state for one document.
pub struct State {
    n: usize,
    stack: Vec<usize>,
    rebuffer: Vec<usize>,
    b_i: usize,
    heads: Vec<Option<usize>>,
    labels: Vec<u16>,
    /// Left and right arcs per head, in insertion order (child, label).
    left: Vec<Vec<usize>>,
    right: Vec<Vec<usize>>,
    unshiftable: Vec<bool>,
    sent_start: Vec<bool>,
}

impl State {
    /// Initial state: everything in the buffer; the first word starts a sentence.
    pub fn new(n: usize) -> State {
        let mut sent_start = vec![false; n];
        if n > 0 {
            sent_start[0] = true;
        }
        State {
            n,
            stack: Vec::with_capacity(n),
            rebuffer: Vec::new(),
            b_i: 0,
            heads: vec![None; n],
            labels: vec![0; n],
            left: vec![Vec::new(); n],
            right: vec![Vec::new(); n],
            unshiftable: vec![false; n],
            sent_start,
        }
    }

    fn s(&self, i: usize) -> Option<usize> {
        let d = self.stack.len();
        (i < d).then(|| self.stack[d - 1 - i])
    }

    fn b(&self, i: usize) -> Option<usize> {
        let r = self.rebuffer.len();
        if i < r {
            Some(self.rebuffer[r - 1 - i])
        } else {
            let b = self.b_i + (i - r);
            (b < self.n).then_some(b)
        }
    }

    /// The `idx`-th most recently added left (or right) child of `head`.
    fn nth(arcs: &[Vec<usize>], head: Option<usize>, idx: usize) -> Option<usize> {
        let h = head?;
        let v = &arcs[h];
        (idx >= 1 && idx <= v.len()).then(|| v[v.len() - idx])
    }

    fn buffer_len(&self) -> usize {
        (self.n - self.b_i) + self.rebuffer.len()
    }

    /// Whether parsing is finished.
    pub fn is_final(&self) -> bool {
        self.stack.is_empty() && self.buffer_len() == 0
    }

    fn is_sent_start(&self, w: Option<usize>) -> bool {
        w.is_some_and(|w| self.sent_start[w])
    }

    /// The eight context tokens (`None`: missing): B0, B1, S0, S1, S2, L(B0), L(S0), R(S0).
    pub fn features(&self) -> [Option<usize>; 8] {
        let (b0, s0) = (self.b(0), self.s(0));
        [
            b0,
            self.b(1),
            s0,
            self.s(1),
            self.s(2),
            Self::nth(&self.left, b0, 1),
            Self::nth(&self.left, s0, 1),
            Self::nth(&self.right, s0, 1),
        ]
    }

    /// Validity of each transition type.
    pub fn valid(&self) -> [bool; 5] {
        let depth = self.stack.len();
        let blen = self.buffer_len();
        let b0 = self.b(0);
        let shift = if depth == 0 {
            true
        } else {
            !(blen < 2 || self.is_sent_start(b0) || b0.is_some_and(|b| self.unshiftable[b]))
        };
        // No word is ever marked "cannot start a sentence" here, so the depth-1 restriction
        // of REDUCE never applies.
        let reduce = depth > 0;
        let arc = depth > 0 && blen > 0 && !self.is_sent_start(b0);
        let brk = blen >= 2
            && match (b0, self.b(1)) {
                (Some(x), Some(y)) => y == x + 1 && !self.sent_start[y],
                _ => false,
            };
        [shift, reduce, arc, arc, brk]
    }

    fn add_arc(&mut self, head: usize, child: usize, label: u16) {
        if let Some(old) = self.heads[child] {
            // spaCy removes the old arc only when it is the last one of its head's list.
            let list = if old > child {
                &mut self.left[old]
            } else {
                &mut self.right[old]
            };
            if list.last() == Some(&child) {
                list.pop();
            }
        }
        if head > child {
            self.left[head].push(child);
        } else {
            self.right[head].push(child);
        }
        self.heads[child] = Some(head);
        self.labels[child] = label;
    }

    fn push(&mut self) {
        let b0 = match self.rebuffer.pop() {
            Some(b) => b,
            None => {
                self.b_i += 1;
                self.b_i - 1
            }
        };
        self.stack.push(b0);
    }

    /// Applies a transition; `label` is the action's index in the label table.
    pub fn apply(&mut self, mv: Move, label: u16) {
        match mv {
            Move::Shift => self.push(),
            Move::Reduce => {
                let s0 = self.stack[self.stack.len() - 1];
                if self.heads[s0].is_some() || self.stack.len() == 1 {
                    self.stack.pop();
                } else {
                    self.unshiftable[s0] = true;
                    self.rebuffer.push(s0);
                    self.stack.pop();
                }
            }
            Move::Left => {
                let (b0, s0) = (self.b(0).expect("valid"), self.s(0).expect("valid"));
                self.add_arc(b0, s0, label);
                self.unshiftable[b0] = false;
                self.stack.pop();
            }
            Move::Right => {
                let (b0, s0) = (self.b(0).expect("valid"), self.s(0).expect("valid"));
                self.add_arc(s0, b0, label);
                self.push();
            }
            Move::Break => {
                let b1 = self.b(1).expect("valid");
                self.sent_start[b1] = true;
            }
        }
    }

    /// Ends parsing (used when no transition is valid, as spaCy does).
    pub fn force_final(&mut self) {
        self.stack.clear();
        self.rebuffer.clear();
        self.b_i = self.n;
    }

    /// Heads (roots point to themselves) and label indices (`None` for roots).
    pub fn tree(&self) -> (Vec<usize>, Vec<Option<u16>>) {
        let heads = (0..self.n).map(|i| self.heads[i].unwrap_or(i)).collect();
        let labels = (0..self.n)
            .map(|i| self.heads[i].map(|_| self.labels[i]))
            .collect();
        (heads, labels)
    }
}

/// Validity mask per class from the per-type validity.
pub fn class_valid(actions: &[Action], valid: &[bool; 5], out: &mut [bool]) {
    for (o, a) in out.iter_mut().zip(actions) {
        *o = valid[a.mv as usize];
    }
}

/// Undoes pseudo-projective labels (`label||headlabel`): the token is re-attached to the
/// nearest descendant of its head (breadth first, children in order) that carries
/// `headlabel`, and keeps `label`.
pub fn deprojectivize(heads: &mut [usize], labels: &mut [String]) {
    let n = heads.len();
    for i in 0..n {
        let Some((new_label, head_label)) = labels[i]
            .split_once("||")
            .map(|(a, b)| (a.to_string(), b.to_string()))
        else {
            continue;
        };
        let mut queue = vec![heads[i]];
        let mut found = None;
        let mut levels = 0;
        'search: while !queue.is_empty() && levels <= n {
            levels += 1;
            let mut next = Vec::new();
            for &q in &queue {
                for c in 0..n {
                    if heads[c] != q || c == q || c == i {
                        continue;
                    }
                    if labels[c] == head_label {
                        found = Some(c);
                        break 'search;
                    }
                    next.push(c);
                }
            }
            queue = next;
        }
        if let Some(h) = found {
            heads[i] = h;
        }
        labels[i] = new_label;
    }
}

/// Sentence starts from a tree: the leftmost descendant of every root.
pub fn sentence_starts(heads: &[usize]) -> Vec<usize> {
    let n = heads.len();
    let mut starts = Vec::new();
    for (r, &h) in heads.iter().enumerate() {
        if h != r {
            continue;
        }
        let mut left = r;
        for t in 0..n {
            // Walk up from t; if it reaches r, t is in r's subtree.
            let mut x = t;
            let mut steps = 0;
            while heads[x] != x && steps <= n {
                x = heads[x];
                steps += 1;
            }
            if x == r && t < left {
                left = t;
                break;
            }
        }
        starts.push(left);
    }
    starts.sort_unstable();
    starts.dedup();
    starts
}
