//! Input: image ids, reference sets, candidates and batches ([`Batch`]: items in evaluation
//! order with their output order), and the joins between them ([`assemble`]). The file formats
//! live in [`formats`], the stable error codes in [`error`].
//!
//! Image ids compare as Python compares them (spec §2.2): the integer `1` and the float `1.0`
//! are the same id, the string `"1"` is another. In the plain map formats every key is a JSON
//! string; a key made only of ASCII digits is read as that integer (as the golden tooling
//! does), so a map of references matches a COCO results file and vice versa. The id is always
//! reported back exactly as the caller wrote it.
//!
//! Must not: read files, know about HTTP or the CLI, or compute metrics.

pub mod blocks;
pub mod fields;
pub mod formats;
mod ids;

pub use crate::error::{ErrorCode, InputError};
pub use blocks::CocoBlocks;
pub use fields::ImageFields;
pub use formats::{
    coco_references_and_labels, parse_candidates, parse_candidates_text, parse_json,
    parse_references, parse_references_text, parse_references_text_with, parse_references_with,
    KarpathySplit, CANDIDATE_FORMATS, REFERENCE_FORMATS,
};
pub(crate) use ids::list_ids;
pub use ids::{Candidate, ImageId, ImageKey, References};

use rustc_hash::FxHashSet;

/// One image to score.
#[derive(Debug, Clone)]
pub struct Item {
    /// Its id, as given.
    pub image_id: ImageId,
    /// Candidate caption (raw text).
    pub candidate: String,
    /// Reference captions (raw text, file order).
    pub references: Vec<String>,
}

/// A batch to score: items in evaluation order (the order of the reference file, restricted
/// to images with a candidate, spec §2.3) and, for each output position, the item index (the
/// order the candidates were given in).
#[derive(Debug, Clone, Default)]
pub struct Batch {
    /// Items in evaluation order.
    pub items: Vec<Item>,
    /// `items[output_order[k]]` is the k-th candidate as given.
    pub output_order: Vec<usize>,
    /// The source's images that have no candidate (a partial submission).
    pub missing: Missing,
}

/// The images of a reference source left without a candidate.
#[derive(Debug, Clone, Default)]
pub struct Missing {
    /// Images in the source.
    pub of: usize,
    /// How many have no candidate.
    pub count: usize,
    /// The first of them, in source order (at most [`Missing::LISTED`]).
    pub first: Vec<ImageId>,
}

impl Missing {
    /// How many missing ids are kept for messages.
    pub const LISTED: usize = 20;

    /// The images of `images` without an item in `batch` (assembled from them).
    fn after(images: &[(ImageId, Vec<String>)], batch: &Batch) -> Missing {
        let mut m = Missing {
            of: images.len(),
            ..Missing::default()
        };
        // Items are distinct images of the source (checked by assemble).
        if batch.items.len() >= images.len() {
            return m;
        }
        let named: FxHashSet<&ImageKey> = batch.items.iter().map(|i| &i.image_id.key).collect();
        for (id, _) in images {
            if !named.contains(&id.key) {
                m.count += 1;
                if m.first.len() < Missing::LISTED {
                    m.first.push(id.clone());
                }
            }
        }
        m
    }
}

/// Splits self-contained items (a request's `items`, a test's images) into candidates and the
/// references they carry, in the order given: scored against those references, the evaluation
/// order is the order given. Empty batches, duplicate ids and items without references are
/// errors (the same as [`assemble`]'s).
pub fn split_items(items: Vec<Item>) -> Result<(Vec<Candidate>, References), InputError> {
    if items.is_empty() {
        return Err(InputError::new(
            ErrorCode::EmptyResults,
            "no items to score (empty batch)",
        ));
    }
    check_duplicates(items.iter().map(|i| &i.image_id))?;
    check_references(&items)?;
    let mut cands = Vec::with_capacity(items.len());
    let refs = References::from_pairs(items.into_iter().map(|it| {
        cands.push(Candidate {
            image_id: it.image_id.clone(),
            caption: it.candidate,
        });
        (it.image_id, it.references)
    }));
    Ok((cands, refs))
}

fn check_duplicates<'a>(ids: impl Iterator<Item = &'a ImageId>) -> Result<(), InputError> {
    let mut seen: FxHashSet<&ImageKey> = FxHashSet::default();
    let mut dups: Vec<&ImageId> = Vec::new();
    for id in ids {
        if !seen.insert(&id.key) && !dups.iter().any(|d| d.key == id.key) {
            dups.push(id);
        }
    }
    none_of(
        dups,
        ErrorCode::DuplicateImageId,
        "more than one candidate for",
    )
    .map_err(|mut e| {
        e.message.push_str(
            " (to score several candidates per image: --multi-candidate, or \"multi_candidate\" / \"items[].candidates\" in a request)",
        );
        e
    })
}

fn check_references(items: &[Item]) -> Result<(), InputError> {
    let missing: Vec<&ImageId> = items
        .iter()
        .filter(|i| i.references.is_empty())
        .map(|i| &i.image_id)
        .collect();
    none_of(
        missing,
        ErrorCode::MissingReferences,
        "no reference captions for",
    )
}

/// `Ok` when `ids` is empty, else the error `code`: "<what> image_id <the ids>".
fn none_of(ids: Vec<&ImageId>, code: ErrorCode, what: &str) -> Result<(), InputError> {
    if ids.is_empty() {
        return Ok(());
    }
    Err(InputError::new(
        code,
        format!("{what} image_id {}", list_ids(ids)),
    ))
}

/// Joins candidates with their references, as COCOEvalCap does with `params['image_id']` set to
/// the images that have a result.
pub fn assemble(refs: &References, cands: Vec<Candidate>) -> Result<Batch, InputError> {
    let mut batch = assemble_with(refs, cands, |pos| refs.images[pos].1.clone())?;
    batch.missing = Missing::after(&refs.images, &batch);
    Ok(batch)
}

/// [`assemble`], consuming the references (their captions move into the batch).
pub fn assemble_owned(refs: References, cands: Vec<Candidate>) -> Result<Batch, InputError> {
    let References { mut images, index } = refs;
    let lookup = References {
        images: Vec::new(),
        index,
    };
    // Candidates are distinct images (checked first), so each image's captions move once.
    let mut batch = assemble_with(&lookup, cands, |pos| std::mem::take(&mut images[pos].1))?;
    batch.missing = Missing::after(&images, &batch);
    Ok(batch)
}

fn assemble_with(
    refs: &References,
    cands: Vec<Candidate>,
    mut captions: impl FnMut(usize) -> Vec<String>,
) -> Result<Batch, InputError> {
    if cands.is_empty() {
        return Err(InputError::new(
            ErrorCode::EmptyResults,
            "results: no candidate captions (empty results)",
        ));
    }
    check_duplicates(cands.iter().map(|c| &c.image_id))?;
    let unknown: Vec<&ImageId> = cands
        .iter()
        .filter(|c| refs.position(&c.image_id.key).is_none())
        .map(|c| &c.image_id)
        .collect();
    if !unknown.is_empty() {
        return Err(InputError::new(
            ErrorCode::UnknownImageId,
            format!(
                "candidates for image_id {} not in the references",
                list_ids(unknown)
            ),
        ));
    }
    // Evaluation order: reference-file order of the images that have a candidate.
    let mut by_pos: Vec<(usize, usize)> = cands
        .iter()
        .enumerate()
        .filter_map(|(k, c)| refs.position(&c.image_id.key).map(|p| (p, k)))
        .collect();
    by_pos.sort_unstable();
    let mut output_order = vec![0usize; cands.len()];
    let mut slots: Vec<Option<Candidate>> = cands.into_iter().map(Some).collect();
    let mut items = Vec::with_capacity(by_pos.len());
    for (eval_idx, &(pos, k)) in by_pos.iter().enumerate() {
        output_order[k] = eval_idx;
        if let Some(c) = slots[k].take() {
            items.push(Item {
                image_id: c.image_id,
                candidate: c.caption,
                references: captions(pos),
            });
        }
    }
    check_references(&items)?;
    Ok(Batch {
        items,
        output_order,
        missing: Missing::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The typed path of a results list (issue 27: entries become candidates as they are
    /// parsed) gives what the general path gives, in order; a list it does not take (an id
    /// that is not one, an entry without a caption, text after the list) goes the general way
    /// and gets its error or its candidates from there.
    #[test]
    fn results_lists_parse_the_same_on_both_paths() {
        let shown = |r: Result<Vec<Candidate>, InputError>| match r {
            Ok(v) => format!(
                "{:?}",
                v.iter()
                    .map(|c| (&c.image_id, &c.caption))
                    .collect::<Vec<_>>()
            ),
            Err(e) => format!("{:?} {}", e.code, e.message),
        };
        for text in [
            r#"[{"image_id": 3, "caption": "a b"}, {"image_id": "x", "caption": "c \"caption\" d"}]"#,
            r#"[{"caption": "first", "image_id": 7, "score": 0.5}, {"image_id": 2, "caption": ""}]"#,
            r#"[{"image_id": 1.5, "caption": "a"}]"#,
            r#"[{"image_id": null, "caption": "a"}]"#,
            r#"[{"image_id": 1}]"#,
            r#"[]"#,
            r#"[{"image_id": 1, "caption": "a", "caption": "b"}]"#,
            r#"[{"image_id": 1, "caption": 5}]"#,
            r#"[{"image_id": 1, "\u0063aption": "escaped key"}, {"image_id": 2, "caption": "b"}]"#,
        ] {
            let general = parse_json(text, "c").and_then(|v| parse_candidates(&v));
            assert_eq!(
                shown(parse_candidates_text(text, "c")),
                shown(general),
                "{text}"
            );
        }
        let fast = formats::fast_candidates(
            r#"[{"image_id": 3, "caption": "a"}, {"image_id": "3", "caption": "b"}]"#,
        )
        .expect("the typed path takes it");
        assert_eq!(fast.len(), 2);
        assert!(
            fast.capacity() < 4,
            "reserved for the entries the text holds"
        );
        // A text padded with the keys' strings reserves at most one entry per 27 bytes.
        let padded = format!(
            r#"[{{"image_id": 1, "caption": "a", "pad": [{}"caption", "image_id"]}}]"#,
            r#""caption", "image_id", "#.repeat(10_000)
        );
        let fast = formats::fast_candidates(&padded).expect("the typed path takes it");
        assert_eq!(fast.len(), 1);
        assert!(
            fast.capacity() <= padded.len() / 27 + 1,
            "{}",
            fast.capacity()
        );
        assert!(formats::fast_candidates(r#"[{"image_id": 3, "caption": "a"}] x"#).is_none());
        assert!(formats::fast_candidates(r#"[{"image_id": [3], "caption": "a"}]"#).is_none());
    }

    /// A COCO file read without its tree (a registration, issue 27) gives the references and
    /// labels its tree gives; a file the typed paths do not take is left to the tree.
    #[test]
    fn coco_files_read_without_a_tree_as_with_one() {
        let taken = [
            r#"{"images": [{"id": 2, "domain": "in"}, {"id": 1, "domain": "out", "file_name": "a.jpg"}],
                "annotations": [{"image_id": 1, "id": 10, "caption": "one"},
                                {"image_id": 2, "id": 11, "caption": "two"},
                                {"image_id": 1, "id": 12, "caption": "three"}]}"#,
            r#"{"info": {"year": 2014}, "images": [{"id": "a", "split": "test"}],
                "annotations": [{"image_id": "a", "caption": "x"}], "licenses": []}"#,
            r#"{"annotations": [{"image_id": 3, "caption": "no images list"}]}"#,
        ];
        for text in taken {
            let (refs, labels) = coco_references_and_labels(text).expect("typed");
            let v = parse_json(text, "r").unwrap();
            let tree = parse_references(&v).unwrap();
            assert_eq!(
                format!("{:?}", refs.images),
                format!("{:?}", tree.images),
                "{text}"
            );
            assert_eq!(labels, ImageFields::labels_of(&v), "{text}");
        }
        let (_, labels) = coco_references_and_labels(taken[0]).unwrap();
        assert_eq!(labels.names(), ["domain"]);
        for text in [
            r#"{"references": {"1": ["a"]}}"#,
            r#"{"images": [], "images": [{"id": 1}], "annotations": [{"image_id": 1, "caption": "a"}]}"#,
            r#"[{"image_id": 1, "caption": "a"}]"#,
            r#"{"images": [{"id": 1}], "annotations": [{"image_id": 1, "caption": "a"}]"#,
        ] {
            assert!(coco_references_and_labels(text).is_none(), "{text}");
        }
    }

    #[test]
    fn coco_files_evaluate_in_annotation_image_order() {
        let refs = parse_references(&json!({
            "images": [{"id": 2}, {"id": 1}, {"id": 3}],
            "annotations": [
                {"image_id": 1, "id": 10, "caption": "one"},
                {"image_id": 2, "id": 11, "caption": "two"},
                {"image_id": 9, "id": 12, "caption": "not listed"}
            ]
        }))
        .unwrap();
        let cands = parse_candidates(&json!([
            {"image_id": 1, "caption": "c1"}, {"image_id": 2.0, "caption": "c2"}
        ]))
        .unwrap();
        let b = assemble(&refs, cands).unwrap();
        assert_eq!(b.items[0].candidate, "c2");
        assert_eq!(b.items[1].candidate, "c1");
        assert_eq!(b.output_order, vec![1, 0]);
        assert_eq!(b.items[0].image_id.raw, json!(2.0));
    }

    #[test]
    fn string_and_integer_ids_differ_in_coco_files_but_map_keys_match_integers() {
        let refs = parse_references(&json!({"images": [{"id": 1}], "annotations": [
            {"image_id": 1, "caption": "a"}]}))
        .unwrap();
        let e = assemble(
            &refs,
            parse_candidates(&json!([{"image_id": "1", "caption": "x"}])).unwrap(),
        )
        .unwrap_err();
        assert_eq!(e.code, ErrorCode::UnknownImageId);
        let b = assemble(&refs, parse_candidates(&json!({"1": "x"})).unwrap()).unwrap();
        assert_eq!(b.items[0].image_id.raw, json!("1"));
    }

    /// The parallel fast path for COCO files gives what the general path gives, whatever the
    /// captions contain and wherever the pieces are cut; when it cannot apply, it steps aside.
    #[test]
    fn fast_coco_path_equals_the_general_path() {
        // JSON string contents (escapes included).
        let captions = [
            "a man on a bike",
            r#"tricky }, {\"image_id\": 5, \"caption\": \"x"#,
            r#"quote \" },  x"#,
            r#"brace } , and \\ backslash"#,
            r#"caf\u00e9 }\n,"#,
        ];
        let anns = |n: usize, extra: &str| -> String {
            (0..n)
                .map(|i| {
                    format!(
                        "{{\"image_id\": {}, \"id\": {i}{extra}, \"caption\": \"{}\"}}",
                        i % 997,
                        captions[i % captions.len()]
                    )
                })
                .collect::<Vec<_>>()
                .join(if n % 2 == 0 { ", " } else { ",\n " })
        };
        let images = (0..997)
            .map(|i| format!("{{\"id\": {i}, \"f\": \"x}},{{\"}}"))
            .collect::<Vec<_>>()
            .join(",");
        let docs = [
            format!("{{\"info\": {{\"a\": [1, {{\"b\": \"}},\"}}]}}, \"images\": [{images}], \"annotations\": [{}]}}", anns(20000, "")),
            format!("{{\"annotations\": [{}], \"images\": [{images}]}}", anns(20001, "")),
            format!("{{\"images\": [{images}], \"annotations\": [{}]}}", anns(12000, ", \"m\": {\"k\": [1, {\"z\": 1}]}")),
            format!("{{\"annotations\": [{}]}}", anns(15000, "")),
            format!("{{\"annotations\" : [ {} ] , \"type\": \"captions\"}}", anns(15000, "")),
            format!("{{\"images\": [{images}], \"annotations\": []}}"),
            format!(
                "{{\"images\": [{}], \"x\": {{\"images\": [1]}}, \"annotations\": [{}]}}",
                (0..400).map(|i| format!("{{\"id\": {}}}", i * 2)).collect::<Vec<_>>().join(","),
                anns(20000, "")
            ),
            format!("{{\"images\": [{images}], \"annot\\u0061tions\": [{}]}}", anns(9000, "")),
        ];
        for (k, doc) in docs.iter().enumerate() {
            let fast = formats::fast_coco_references(doc).expect("fast path");
            let slow = parse_references(&parse_json(doc, "x").unwrap()).unwrap();
            assert_eq!(fast.images.len(), slow.images.len(), "doc {k}");
            for (a, b) in fast.images.iter().zip(&slow.images) {
                assert_eq!((&a.0.raw, &a.1), (&b.0.raw, &b.1), "doc {k}");
            }
        }
        // Not COCO-shaped, or invalid: the fast path steps aside.
        for doc in [
            format!(
                "{{\"images\": [{images}], \"annotations\": [{}]}} x",
                anns(9000, "")
            ),
            format!(
                "{{\"annotations\": [{}], \"annotations\": []}}",
                anns(9000, "")
            ),
            format!(
                "{{\"annotations\": [{}, {{\"image_id\": 1, \"caption\": 5}}]}}",
                anns(9000, "")
            ),
        ] {
            assert!(formats::fast_coco_references(&doc).is_none());
        }
        // Not JSON, or not a COCO file, for the general path: the fast path does not accept
        // them either.
        for doc in [
            // A trailing comma after a last element long enough to be a piece of its own.
            format!(
                "{{\"images\": [{images}], \"annotations\": [{}, {{\"image_id\": 1, \"caption\": \"{}\"}},]}}",
                anns(9000, ""),
                "x".repeat(600_000)
            ),
            format!(
                "{{\"images\": null, \"annotations\": [{}]}}",
                anns(9000, "")
            ),
        ] {
            assert!(parse_json(&doc, "x").and_then(|v| parse_references(&v)).is_err());
            assert!(formats::fast_coco_references(&doc).is_none());
        }
    }

    #[test]
    fn bad_inputs_have_codes() {
        let refs = parse_references(&json!({"1": ["a"], "2": []})).unwrap();
        let dup = json!([{"image_id": 1, "caption": "x"}, {"image_id": 1, "caption": "y"}]);
        assert_eq!(
            assemble(&refs, parse_candidates(&dup).unwrap())
                .unwrap_err()
                .code,
            ErrorCode::DuplicateImageId
        );
        let zero = json!([{"image_id": 2, "caption": "x"}]);
        assert_eq!(
            assemble(&refs, parse_candidates(&zero).unwrap())
                .unwrap_err()
                .code,
            ErrorCode::MissingReferences
        );
        assert_eq!(
            parse_candidates(&json!([])).unwrap_err().code,
            ErrorCode::EmptyResults
        );
        assert_eq!(
            parse_candidates(&json!([{"image_id": 1, "caption": 5}]))
                .unwrap_err()
                .code,
            ErrorCode::InvalidCaption
        );
        assert_eq!(
            parse_candidates(&json!([{"image_id": 1, "caption": null}]))
                .unwrap_err()
                .code,
            ErrorCode::InvalidCaption
        );
        assert_eq!(
            parse_candidates(&json!([{"image_id": true, "caption": "x"}]))
                .unwrap_err()
                .code,
            ErrorCode::InvalidImageId
        );
        assert_eq!(
            parse_json("{\"a\": \"\\ud800\"}", "x").unwrap_err().code,
            ErrorCode::InvalidJson
        );
    }
}
