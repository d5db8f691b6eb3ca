//! Image ids (compared as Python compares them, spec §2.2), reference sets and candidates: the
//! values every other part of `input` passes around.

use std::fmt;

use rustc_hash::FxHashMap;
use serde_json::Value;

/// How an image id compares with other ids.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ImageKey {
    /// An integral number (`1` and `1.0` are both `Int(1)`).
    Int(i128),
    /// A non-integral number, by its bits.
    Float(u64),
    /// A string id.
    Str(String),
}

impl ImageKey {
    /// The bytes its heap allocation takes ([`crate::heap`]): a string id's text.
    pub fn heap_bytes(&self) -> u64 {
        match self {
            ImageKey::Str(s) => crate::heap::string(s),
            _ => 0,
        }
    }
}

/// An image id: the value as given, and the key it compares by.
#[derive(Debug, Clone)]
pub struct ImageId {
    /// The id exactly as the caller wrote it (echoed in outputs).
    pub raw: Value,
    /// Comparison key.
    pub key: ImageKey,
}

impl PartialEq for ImageId {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl fmt::Display for ImageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.raw {
            Value::String(s) => write!(f, "{s:?}"),
            v => write!(f, "{v}"),
        }
    }
}

impl ImageKey {
    /// The key of an id given as a JSON value (a number or a string).
    pub fn of(v: &Value) -> Option<ImageKey> {
        Some(match v {
            Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    ImageKey::Int(i128::from(i))
                } else if let Some(u) = n.as_u64() {
                    ImageKey::Int(i128::from(u))
                } else {
                    let f = n.as_f64()?;
                    // Beyond 2^53 a float stands for many integers (2^64 and 2^64 + 1 parse
                    // to the same one): such an id could collide, so it is refused.
                    if f.abs() >= 9_007_199_254_740_992.0 {
                        return None;
                    }
                    if f.fract() == 0.0 {
                        ImageKey::Int(f as i128)
                    } else {
                        ImageKey::Float(f.to_bits())
                    }
                }
            }
            Value::String(s) => ImageKey::Str(s.clone()),
            _ => return None,
        })
    }
}

impl ImageId {
    /// An id from a JSON value (a number or a string).
    pub fn from_value(v: &Value) -> Option<ImageId> {
        Some(ImageId {
            key: ImageKey::of(v)?,
            raw: v.clone(),
        })
    }

    /// An id from a key of a plain JSON map: all-digit keys are integers.
    pub fn from_map_key(k: &str) -> ImageId {
        let key = if !k.is_empty() && k.len() <= 30 && k.bytes().all(|b| b.is_ascii_digit()) {
            k.parse::<i128>()
                .map(ImageKey::Int)
                .unwrap_or_else(|_| ImageKey::Str(k.to_owned()))
        } else {
            ImageKey::Str(k.to_owned())
        };
        ImageId {
            raw: Value::String(k.to_owned()),
            key,
        }
    }
}

/// The first ten ids, comma-separated (`... (N in all)` when there are more), for messages.
pub(crate) fn list_ids<'a>(ids: impl IntoIterator<Item = &'a ImageId>) -> String {
    let ids: Vec<&ImageId> = ids.into_iter().collect();
    let mut s: Vec<String> = ids.iter().take(10).map(|i| i.to_string()).collect();
    if ids.len() > 10 {
        s.push(format!("... ({} in all)", ids.len()));
    }
    s.join(", ")
}

/// The references: images in evaluation order with their captions in file order.
#[derive(Debug, Clone, Default)]
pub struct References {
    /// Images in file order, each with its reference captions in file order.
    pub images: Vec<(ImageId, Vec<String>)>,
    pub(super) index: IdIndex,
}

/// The positions of image ids. Small non-negative integer ids (COCO's) sit in a table indexed
/// by the id, kept within a few times the number of images (4 bytes a slot); any other id is
/// hashed. Looking 2.5 million annotations up in a hash table of 500,000 ids was a tenth of
/// the parse (issue 27).
#[derive(Debug, Clone, Default)]
pub(super) struct IdIndex {
    /// `dense[i]`: 1 + the position of the integer id `i`; 0 when it is not there.
    dense: Vec<u32>,
    /// Every other id.
    map: FxHashMap<ImageKey, usize>,
}

impl IdIndex {
    /// The table's size is at most this many slots per image, or [`IdIndex::DENSE_MIN`].
    const DENSE_PER_IMAGE: usize = 8;
    /// See [`IdIndex::DENSE_PER_IMAGE`].
    const DENSE_MIN: usize = 1 << 10;

    fn get(&self, key: &ImageKey) -> Option<usize> {
        if let ImageKey::Int(i) = key {
            let slot = usize::try_from(*i).ok().and_then(|i| self.dense.get(i));
            if let Some(&p) = slot.filter(|&&p| p != 0) {
                return Some(p as usize - 1);
            }
        }
        self.map.get(key).copied()
    }

    /// Records the new id `key` at position `pos` (the number of images before it).
    fn insert(&mut self, key: &ImageKey, pos: usize) {
        if let ImageKey::Int(i) = key {
            let bound = Self::DENSE_MIN.max(Self::DENSE_PER_IMAGE * (pos + 1));
            match (usize::try_from(*i), u32::try_from(pos + 1)) {
                (Ok(i), Ok(p)) if i < bound => {
                    if i >= self.dense.len() {
                        self.dense.resize(i + 1, 0);
                    }
                    self.dense[i] = p;
                    return;
                }
                _ => {}
            }
        }
        self.map.insert(key.clone(), pos);
    }
}

impl References {
    /// Builds references from `(id, captions)` pairs; a repeated id keeps its first position
    /// and gathers all captions.
    pub fn from_pairs(pairs: impl IntoIterator<Item = (ImageId, Vec<String>)>) -> References {
        let mut r = References::default();
        for (id, caps) in pairs {
            r.push(id, caps);
        }
        r
    }

    pub(super) fn push(&mut self, id: ImageId, caps: Vec<String>) {
        match self.index.get(&id.key) {
            Some(i) => self.images[i].1.extend(caps),
            None => {
                self.index.insert(&id.key, self.images.len());
                self.images.push((id, caps));
            }
        }
    }

    /// Position of an image in file order.
    pub fn position(&self, key: &ImageKey) -> Option<usize> {
        self.index.get(key)
    }

    /// Number of images.
    pub fn len(&self) -> usize {
        self.images.len()
    }

    /// True when there is no image.
    pub fn is_empty(&self) -> bool {
        self.images.is_empty()
    }

    /// Total number of reference captions.
    pub fn caption_count(&self) -> usize {
        self.images.iter().map(|(_, c)| c.len()).sum()
    }

    /// The bytes its heap allocations take ([`crate::heap`]): the images, their ids' and
    /// captions' text, and the id index.
    pub fn heap_bytes(&self) -> u64 {
        use crate::heap;
        let images: u64 = self
            .images
            .iter()
            .map(|(id, caps)| {
                let raw = match &id.raw {
                    Value::String(s) => heap::string(s),
                    _ => 0,
                };
                let caps_text: u64 = caps.iter().map(heap::string).sum();
                raw + id.key.heap_bytes() + heap::vec(caps) + caps_text
            })
            .sum();
        let map = &self.index.map;
        let entry = std::mem::size_of::<(ImageKey, usize)>();
        let keys: u64 = map.keys().map(ImageKey::heap_bytes).sum();
        images
            + heap::vec(&self.images)
            + heap::vec(&self.index.dense)
            + heap::hash_table(map.capacity(), entry)
            + keys
    }
}

/// One candidate caption.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Its image.
    pub image_id: ImageId,
    /// The caption text.
    pub caption: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Positions come back as a plain map gives them, for ids in the table, out of it (too
    /// large for the images so far, negative, beyond any table), floats, strings and repeats;
    /// a huge id never grows the table.
    #[test]
    fn id_index_finds_what_a_map_finds() {
        let mut ids: Vec<ImageKey> = Vec::new();
        for k in 0..3000i128 {
            ids.push(ImageKey::Int(match k % 7 {
                0 => k * 3,
                1 => 70_000 + k,
                2 => -k - 1,
                3 => 1 << 40,
                4 => i128::MAX - k,
                _ => k * 11 + 5,
            }));
            ids.push(ImageKey::Float((k as f64 + 0.5).to_bits()));
            ids.push(ImageKey::Str(format!("{}", k * 3)));
        }
        let mut index = IdIndex::default();
        let mut want: FxHashMap<ImageKey, usize> = FxHashMap::default();
        for key in &ids {
            if !want.contains_key(key) {
                index.insert(key, want.len());
                want.insert(key.clone(), want.len());
            }
        }
        for key in ids
            .iter()
            .chain(&[ImageKey::Int(1), ImageKey::Int(5 << 20)])
        {
            assert_eq!(index.get(key), want.get(key).copied(), "{key:?}");
        }
        assert!(!index.dense.is_empty());
        assert!(index.dense.len() <= IdIndex::DENSE_MIN.max(8 * want.len()));
    }
}
