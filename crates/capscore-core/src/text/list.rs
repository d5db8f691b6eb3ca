//! Lists of captions kept in blocks of one buffer each, not one heap string per caption (issue
//! 27: at 500,000 images the 2.5 million tokenized captions took about 215 MB as strings, and
//! their allocations, interleaved with the raw captions', kept the freed raw text resident).
//!
//! [`Texts`] is a list of captions; [`ImageTexts`] is a list of captions per image (an image's
//! references).

use std::ops::Range;

/// Captions per block: caption `k` is caption `k % BLOCK` of block `k / BLOCK`.
pub(crate) const BLOCK: usize = 1024;

/// Up to [`BLOCK`] captions in one buffer: caption `j` is `text[ends[j - 1]..ends[j]]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Block {
    text: String,
    ends: Vec<usize>,
}

impl Block {
    fn get(&self, j: usize) -> &str {
        let start = if j == 0 { 0 } else { self.ends[j - 1] };
        &self.text[start..self.ends[j]]
    }
}

/// A list of captions, stored in blocks.
#[derive(Clone, Debug, Default)]
pub struct Texts {
    blocks: Vec<Block>,
    len: usize,
}

impl Texts {
    /// An empty list.
    pub fn new() -> Texts {
        Texts::default()
    }

    /// An empty list whose first block has room for `bytes` of text (up to [`BLOCK`]
    /// captions: a buffer that grows by doubling can leave half of it unused).
    pub fn with_text_capacity(bytes: usize) -> Texts {
        Texts {
            blocks: vec![Block {
                text: String::with_capacity(bytes),
                ends: Vec::with_capacity(BLOCK),
            }],
            len: 0,
        }
    }

    /// Number of captions.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when there is no caption.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends a caption.
    pub fn push(&mut self, s: &str) {
        if self.len % BLOCK == 0 && (self.len > 0 || self.blocks.is_empty()) {
            self.blocks.push(Block {
                text: String::new(),
                ends: Vec::with_capacity(BLOCK),
            });
        }
        let b = self.blocks.last_mut().expect("a block");
        b.text.push_str(s);
        b.ends.push(b.text.len());
        self.len += 1;
    }

    /// Caption `k`.
    ///
    /// # Panics
    /// When `k >= len()`.
    pub fn get(&self, k: usize) -> &str {
        assert!(k < self.len, "caption {k} of {}", self.len);
        self.blocks[k / BLOCK].get(k % BLOCK)
    }

    /// The captions in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &str> + Clone + '_ {
        self.range(0..self.len)
    }

    /// Captions `r` in order.
    ///
    /// # Panics
    /// When `r` goes past `len()`.
    pub fn range(&self, r: Range<usize>) -> impl ExactSizeIterator<Item = &str> + Clone + '_ {
        assert!(
            r.start <= r.end && r.end <= self.len,
            "captions {r:?} of {}",
            self.len
        );
        r.map(move |k| self.blocks[k / BLOCK].get(k % BLOCK))
    }

    /// Appends every caption of `other` (whole blocks move when this list ends on a block
    /// boundary).
    pub fn append(&mut self, other: Texts) {
        if self.len % BLOCK == 0 {
            // An empty list may hold an empty first block (see `with_text_capacity`).
            self.blocks.truncate(self.len / BLOCK);
            self.len += other.len;
            self.blocks.extend(other.blocks);
        } else {
            other.iter().for_each(|s| self.push(s));
        }
    }

    /// The captions as strings.
    pub fn to_strings(&self) -> Vec<String> {
        self.iter().map(str::to_owned).collect()
    }

    /// The bytes its heap allocations take ([`crate::heap`]).
    pub fn heap_bytes(&self) -> u64 {
        let blocks: u64 = self
            .blocks
            .iter()
            .map(|b| crate::heap::string(&b.text) + crate::heap::vec(&b.ends))
            .sum();
        blocks + crate::heap::vec(&self.blocks)
    }
}

/// Lists are equal when their captions are (however their storage was made).
impl PartialEq for Texts {
    fn eq(&self, other: &Texts) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl Eq for Texts {}

impl<S: AsRef<str>> FromIterator<S> for Texts {
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> Texts {
        let mut t = Texts::new();
        iter.into_iter().for_each(|s| t.push(s.as_ref()));
        t
    }
}

/// Captions per image: image `i`'s captions are `texts[starts[i]..starts[i + 1]]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageTexts {
    texts: Texts,
    starts: Vec<usize>,
}

impl Default for ImageTexts {
    fn default() -> ImageTexts {
        ImageTexts {
            texts: Texts::new(),
            starts: vec![0],
        }
    }
}

impl ImageTexts {
    /// The captions of `texts`, `counts[i]` of them for image `i` in turn.
    ///
    /// # Panics
    /// When the counts do not add up to the number of captions.
    pub fn from_counts(texts: Texts, counts: impl IntoIterator<Item = usize>) -> ImageTexts {
        let mut starts = vec![0];
        let mut at = 0;
        for c in counts {
            at += c;
            starts.push(at);
        }
        assert_eq!(at, texts.len(), "counts that add up to the captions");
        ImageTexts { texts, starts }
    }

    /// Appends an image with its captions.
    pub fn push_image<S: AsRef<str>>(&mut self, captions: &[S]) {
        captions.iter().for_each(|s| self.texts.push(s.as_ref()));
        self.starts.push(self.texts.len());
    }

    /// Number of images.
    pub fn images(&self) -> usize {
        self.starts.len() - 1
    }

    /// The captions of image `i`.
    pub fn image(&self, i: usize) -> impl ExactSizeIterator<Item = &str> + Clone + '_ {
        self.texts.range(self.starts[i]..self.starts[i + 1])
    }

    /// Every caption, image after image.
    pub fn all(&self) -> &Texts {
        &self.texts
    }

    /// The bytes its heap allocations take ([`crate::heap`]).
    pub fn heap_bytes(&self) -> u64 {
        self.texts.heap_bytes() + crate::heap::vec(&self.starts)
    }

    /// The captions of each image as strings.
    pub fn to_lists(&self) -> Vec<Vec<String>> {
        (0..self.images())
            .map(|i| self.image(i).map(str::to_owned).collect())
            .collect()
    }
}

impl<L: AsRef<[String]>> FromIterator<L> for ImageTexts {
    fn from_iter<I: IntoIterator<Item = L>>(iter: I) -> ImageTexts {
        let mut out = ImageTexts::default();
        iter.into_iter()
            .for_each(|list| out.push_image(list.as_ref()));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every caption comes back as it went in, across block boundaries, empty ones included,
    /// whichever way the list was built.
    #[test]
    fn captions_come_back_as_given() {
        let caps: Vec<String> = (0..2 * BLOCK + 7)
            .map(|k| match k % 5 {
                0 => String::new(),
                1 => "é ü".repeat(k % 13),
                _ => format!("caption {k}"),
            })
            .collect();
        let t: Texts = caps.iter().collect();
        assert_eq!(t.len(), caps.len());
        assert_eq!(t.to_strings(), caps);
        for k in [0, 1, BLOCK - 1, BLOCK, BLOCK + 1, caps.len() - 1] {
            assert_eq!(t.get(k), caps[k]);
        }
        assert!(t
            .range(BLOCK - 2..BLOCK + 3)
            .eq(caps[BLOCK - 2..BLOCK + 3].iter()));
        // A list made with room for its text holds the same.
        let mut roomy = Texts::with_text_capacity(64);
        caps.iter().for_each(|c| roomy.push(c));
        assert_eq!(roomy.to_strings(), caps);
        let mut empty = Texts::with_text_capacity(8);
        empty.append(t.clone());
        assert_eq!(empty.to_strings(), caps);
        // Appending at a block boundary and elsewhere.
        for split in [BLOCK, BLOCK + 3, 0, caps.len()] {
            let mut a: Texts = caps[..split].iter().collect();
            a.append(caps[split..].iter().collect());
            assert_eq!(a, t, "split at {split}");
        }
        let counts = [3, 0, BLOCK, 1, caps.len() - BLOCK - 4];
        let mut lists = Vec::new();
        let mut at = 0;
        for c in counts {
            lists.push(caps[at..at + c].to_vec());
            at += c;
        }
        let by_counts = ImageTexts::from_counts(t.clone(), counts);
        let collected: ImageTexts = lists.iter().collect();
        assert_eq!(by_counts, collected);
        assert_eq!(by_counts.images(), counts.len());
        assert_eq!(by_counts.to_lists(), lists);
        assert_eq!(by_counts.image(1).len(), 0);
    }
}
