//! Per-image labels from an annotation file's `images[]`: the split keys of leaderboard tables
//! (nocaps' `domain`, a Karpathy file's `split`, ...).
//!
//! An image's id is read as the references parser reads it (`id` in a COCO annotation file,
//! `cocoid`, else `imgid`, in a Karpathy split file), so the labels join the references by id.
//! A label is a string, an integer or a boolean (written as JSON writes it).
//!
//! Must not: read files (callers hand over the parsed JSON).

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use serde_json::Value;

use super::ids::{ImageId, ImageKey};
use crate::error::{ErrorCode, InputError};

/// Fields of `images[]` that are never split keys (ids, file names, sizes, dates, URLs).
const NOT_LABELS: &[&str] = &[
    "id",
    "cocoid",
    "imgid",
    "file_name",
    "filename",
    "filepath",
    "coco_url",
    "flickr_url",
    "open_images_id",
    "date_captured",
    "height",
    "width",
    "sentences",
    "sentids",
];

/// Most distinct values a field may have to be kept as a label by [`ImageFields::labels_of`].
pub const MAX_LABEL_VALUES: usize = 64;

/// Labels by field, then by image.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImageFields(pub BTreeMap<String, FxHashMap<ImageKey, String>>);

/// The label text of a scalar JSON value.
fn label(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The id of an `images[]` entry, read as the references parser reads it.
fn entry_id(img: &Value) -> Option<ImageId> {
    let raw = img
        .get("id")
        .or_else(|| img.get("cocoid"))
        .or_else(|| img.get("imgid"))?;
    ImageId::from_value(raw)
}

impl ImageFields {
    /// The bytes its heap allocations take ([`crate::heap`]): per field, the hash table of
    /// labels (a control byte per bucket) and their text; field names.
    pub fn heap_bytes(&self) -> u64 {
        use crate::heap;
        self.0
            .iter()
            .map(|(name, labels)| {
                let entry = std::mem::size_of::<(ImageKey, String)>();
                let table = heap::hash_table(labels.capacity(), entry);
                let text: u64 = labels
                    .iter()
                    .map(|(k, l)| k.heap_bytes() + heap::string(l))
                    .sum();
                // A B-tree node's share per field.
                heap::string(name) + table + text + 64
            })
            .sum()
    }

    /// One field of every `images[]` entry of an annotation file (`v`), e.g. `domain`: an error
    /// when the file has no `images` list or no entry has the field.
    pub fn field_of(v: &Value, field: &str) -> Result<ImageFields, InputError> {
        let images = images_of(v)?;
        let mut values = FxHashMap::default();
        for img in images {
            if let (Some(id), Some(l)) = (entry_id(img), img.get(field).and_then(label)) {
                values.insert(id.key, l);
            }
        }
        if values.is_empty() {
            return Err(InputError::new(
                ErrorCode::InvalidFormat,
                format!("no entry of \"images\" has a field {field:?} (a string, integer or boolean) to split by"),
            ));
        }
        let mut f = ImageFields::default();
        f.0.insert(field.to_owned(), values);
        Ok(f)
    }

    /// Every field of `images[]` that looks like a label (scalar values, at most
    /// [`MAX_LABEL_VALUES`] distinct ones, not an id, a file name, a size, a date or a URL):
    /// what a registered dataset keeps. A file without `images` has no labels.
    pub fn labels_of(v: &Value) -> ImageFields {
        let Ok(images) = images_of(v) else {
            return ImageFields::default();
        };
        let mut fields: BTreeMap<String, FxHashMap<ImageKey, String>> = BTreeMap::new();
        let mut dropped: Vec<String> = Vec::new();
        for img in images {
            let (Some(id), Some(o)) = (entry_id(img), img.as_object()) else {
                continue;
            };
            for (k, v) in o {
                if NOT_LABELS.contains(&k.as_str()) || dropped.contains(k) {
                    continue;
                }
                let Some(l) = label(v) else {
                    fields.remove(k);
                    dropped.push(k.clone());
                    continue;
                };
                fields
                    .entry(k.clone())
                    .or_default()
                    .insert(id.key.clone(), l);
            }
        }
        fields.retain(|_, m| {
            let mut distinct: Vec<&String> = m.values().collect();
            distinct.sort_unstable();
            distinct.dedup();
            distinct.len() <= MAX_LABEL_VALUES
        });
        ImageFields(fields)
    }

    /// The labels of `field`, if kept.
    pub fn get(&self, field: &str) -> Option<&FxHashMap<ImageKey, String>> {
        self.0.get(field)
    }

    /// The names of the fields kept.
    pub fn names(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

fn images_of(v: &Value) -> Result<&[Value], InputError> {
    v.get("images")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .ok_or_else(|| {
            InputError::new(
                ErrorCode::InvalidFormat,
                "splitting by an image field needs a COCO annotation file (or a Karpathy split file) with an \"images\" list",
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn labels_keep_split_like_fields_only() {
        let v = json!({"images": [
            {"id": 1, "domain": "in-domain", "file_name": "a.jpg", "license": 3, "meta": {"x": 1}},
            {"id": 2, "domain": "out-domain", "file_name": "b.jpg", "license": 4, "meta": 2},
        ], "annotations": []});
        let f = ImageFields::labels_of(&v);
        assert_eq!(f.names(), vec!["domain", "license"]);
        assert_eq!(f.get("domain").unwrap()[&ImageKey::Int(2)], "out-domain");
        assert_eq!(f.get("license").unwrap()[&ImageKey::Int(1)], "3");
    }

    #[test]
    fn a_named_field_is_read_whatever_its_count_and_missing_is_an_error() {
        let images: Vec<Value> = (0..100)
            .map(|i| json!({"id": i, "k": format!("v{i}")}))
            .collect();
        let v = json!({"images": images});
        assert!(ImageFields::labels_of(&v).get("k").is_none());
        assert_eq!(
            ImageFields::field_of(&v, "k")
                .unwrap()
                .get("k")
                .unwrap()
                .len(),
            100
        );
        assert_eq!(
            ImageFields::field_of(&v, "domain").unwrap_err().code,
            ErrorCode::InvalidFormat
        );
        assert!(ImageFields::field_of(&json!({"1": ["a"]}), "k").is_err());
    }

    #[test]
    fn karpathy_ids_are_cocoids() {
        let v = json!({"images": [{"cocoid": 7, "imgid": 0, "split": "test", "sentences": []}]});
        let f = ImageFields::field_of(&v, "split").unwrap();
        assert_eq!(f.get("split").unwrap()[&ImageKey::Int(7)], "test");
    }
}
