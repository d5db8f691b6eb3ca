//! Input formats: COCO caption annotation files and results files, plain maps keyed by image id
//! (spec COCO §2), pycocoevalcap's own `{id: [caption]}` candidates, Karpathy's split files
//! (`dataset_coco.json`, with a split), aac-metrics' CSV (`caption_predicted`, `caption_1..N`)
//! and JSON lines; which one a text is, is detected from its content ([`REFERENCE_FORMATS`],
//! [`CANDIDATE_FORMATS`]). Parsing checks everything pycocoevalcap would crash on, or silently
//! misalign, and reports it as an [`InputError`] with a stable code; an unrecognised shape names
//! the formats accepted.
//!
//! Must not: read files (callers hand over text or JSON values) or score anything.

use std::fmt;

use serde_json::Value;

use super::ids::{Candidate, ImageId, ImageKey, References};
use crate::error::{ErrorCode, InputError};

/// Parses JSON text, mapping errors to `invalid_json` with the position.
pub fn parse_json(text: &str, what: &str) -> Result<Value, InputError> {
    serde_json::from_str(text).map_err(|e| {
        let hint = if e.to_string().contains("escape") {
            " (a \\u escape that is not valid Unicode, such as an unpaired surrogate)"
        } else {
            ""
        };
        InputError::new(
            ErrorCode::InvalidJson,
            format!("{what}: invalid JSON: {e}{hint}"),
        )
    })
}

fn caption_string(v: Option<&Value>, at: &str) -> Result<String, InputError> {
    match v {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(InputError::new(
            ErrorCode::InvalidCaption,
            format!("{at}: caption must be a string, got {}", json_type(other)),
        )),
        None => Err(InputError::new(
            ErrorCode::InvalidFormat,
            format!("{at}: missing \"caption\""),
        )),
    }
}

fn image_id_of(v: Option<&Value>, at: &str) -> Result<ImageId, InputError> {
    match v {
        Some(v) => ImageId::from_value(v).ok_or_else(|| {
            InputError::new(
                ErrorCode::InvalidImageId,
                format!(
                    "{at}: image_id must be a number or a string, got {} (numbers beyond 64-bit integers, or beyond 2^53 with a fraction or exponent, cannot be told apart: send them as strings)",
                    json_type(v)
                ),
            )
        }),
        None => Err(InputError::new(
            ErrorCode::InvalidFormat,
            format!("{at}: missing \"image_id\""),
        )),
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Parses references from any of the accepted shapes:
/// - a COCO captions annotation file `{"images": [{"id"}], "annotations": [{"image_id", "caption"}]}`
///   (without `images`, images are taken in order of first annotation);
/// - a map `{"<image_id>": ["ref", ...]}`;
/// - `{"references": {"<image_id>": [...]}}` (the dataset registration body);
/// - a list `[{"image_id", "captions": [...]}]`.
pub fn parse_references(v: &Value) -> Result<References, InputError> {
    parse_references_with(v, None)
}

/// [`parse_references`], taking only the images of `split` from a Karpathy split file (an error
/// for any other format).
pub fn parse_references_with(
    v: &Value,
    split: Option<KarpathySplit>,
) -> Result<References, InputError> {
    match v {
        Value::Object(o) if is_karpathy(o) => parse_karpathy(o, split),
        _ if split.is_some() => Err(InputError::new(
            ErrorCode::InvalidFormat,
            "references: a split (--split) applies to Karpathy split files (dataset_coco.json: \"images\" with \"sentences\") only",
        )),
        Value::Object(o) if o.contains_key("annotations") => parse_coco_annotations(o),
        Value::Object(o) if o.len() == 1 && o.get("references").is_some_and(Value::is_object) => {
            parse_reference_map(o.get("references").and_then(Value::as_object).into_iter().flatten())
        }
        Value::Object(o) => parse_reference_map(o.iter()),
        Value::Array(a) => reference_entries(a, &|i| format!("references[{i}]")),
        other => Err(InputError::new(
            ErrorCode::InvalidFormat,
            format!("references: got {}; accepted: {REFERENCE_FORMATS}", json_type(other)),
        )),
    }
}

/// The reference formats, as error messages name them.
pub const REFERENCE_FORMATS: &str = "a COCO captions annotation file {\"images\", \"annotations\"}, a map {\"<image_id>\": [\"ref\", ...]}, Karpathy's dataset_*.json (with a split), an aac-metrics CSV (caption_1, caption_2, ... columns), or JSON lines {\"image_id\", \"captions\": [...]}";

/// The candidate formats, as error messages name them.
pub const CANDIDATE_FORMATS: &str = "a COCO results file [{\"image_id\", \"caption\"}], a map {\"<image_id>\": \"caption\"} or {\"<image_id>\": [\"caption\"]}, an aac-metrics CSV (a caption_predicted column), or JSON lines {\"image_id\", \"caption\"}";

/// A split of a Karpathy split file (`"split"` of each image).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KarpathySplit {
    /// `train`.
    Train,
    /// `val`.
    Val,
    /// `test`.
    Test,
    /// `restval`.
    Restval,
}

impl KarpathySplit {
    /// The split's name in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            KarpathySplit::Train => "train",
            KarpathySplit::Val => "val",
            KarpathySplit::Test => "test",
            KarpathySplit::Restval => "restval",
        }
    }
}

/// Entry `at` as a JSON object, or an error naming the expected `shape`.
fn entry_object<'a>(
    e: &'a Value,
    at: &str,
    shape: &str,
) -> Result<&'a serde_json::Map<String, Value>, InputError> {
    e.as_object().ok_or_else(|| {
        InputError::new(
            ErrorCode::InvalidFormat,
            format!("{at}: expected an object {shape}, got {}", json_type(e)),
        )
    })
}

/// Reference entries `{"image_id", "captions": [...]}` (or aac-metrics' `caption_1..N` keys),
/// `at(i)` naming entry `i`.
fn reference_entries(a: &[Value], at: &dyn Fn(usize) -> String) -> Result<References, InputError> {
    let mut refs = References::default();
    for (i, e) in a.iter().enumerate() {
        let at = at(i);
        let o = entry_object(e, &at, "{\"image_id\", \"captions\": [...]}")?;
        let id = image_id_of(o.get("image_id"), &at)?;
        let caps = match o.get("captions") {
            Some(c) => caption_list(Some(c), &at)?,
            None => {
                let numbered = numbered_captions(o.iter().map(|(k, v)| (k.as_str(), v)));
                if numbered.is_empty() {
                    let hint = if o.contains_key("caption") {
                        " (one \"caption\" per entry is a results file of candidates, not references)"
                    } else {
                        ""
                    };
                    return Err(InputError::new(
                        ErrorCode::InvalidFormat,
                        format!("{at}: missing \"captions\" (a list of references){hint}"),
                    ));
                }
                numbered
                    .into_iter()
                    .map(|(n, v)| caption_string(Some(v), &format!("{at}.caption_{n}")))
                    .collect::<Result<Vec<_>, _>>()?
            }
        };
        refs.push(id, caps);
    }
    Ok(refs)
}

/// aac-metrics' reference columns `caption_1`, `caption_2`, ... in numeric order.
fn numbered_captions<'a, T>(cols: impl Iterator<Item = (&'a str, T)>) -> Vec<(u32, T)> {
    let mut out: Vec<(u32, T)> = cols
        .filter_map(|(k, v)| {
            let n = k.strip_prefix("caption_")?;
            (!n.is_empty() && n.len() < 6 && n.bytes().all(|b| b.is_ascii_digit()))
                .then(|| n.parse().ok())
                .flatten()
                .map(|n| (n, v))
        })
        .collect();
    out.sort_by_key(|(n, _)| *n);
    out
}

/// True for a Karpathy split file: `{"images": [{"sentences": [...], ...}]}` (no `annotations`).
fn is_karpathy(o: &serde_json::Map<String, Value>) -> bool {
    !o.contains_key("annotations")
        && o.get("images")
            .and_then(Value::as_array)
            .and_then(|a| a.first())
            .is_some_and(|i| i.get("sentences").is_some())
}

/// A Karpathy split file: each image's id is its `cocoid` (else `imgid`), its references the
/// `raw` text of its `sentences`; with `split`, only the images of that split.
fn parse_karpathy(
    o: &serde_json::Map<String, Value>,
    split: Option<KarpathySplit>,
) -> Result<References, InputError> {
    let images = o
        .get("images")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let mut refs = References::default();
    for (i, img) in images.iter().enumerate() {
        let at = format!("images[{i}]");
        if let Some(want) = split {
            match img.get("split").and_then(Value::as_str) {
                Some(s) if s == want.as_str() => {}
                Some(_) => continue,
                None => {
                    return Err(InputError::new(
                        ErrorCode::InvalidFormat,
                        format!("{at}: missing \"split\" (Karpathy split file)"),
                    ))
                }
            }
        }
        let id = match img.get("cocoid") {
            Some(c) => image_id_of(Some(c), &format!("{at}.cocoid"))?,
            None => image_id_of(img.get("imgid"), &format!("{at} (no cocoid)"))?,
        };
        let Some(sentences) = img.get("sentences").and_then(Value::as_array) else {
            return Err(InputError::new(
                ErrorCode::InvalidFormat,
                format!("{at}: \"sentences\" must be a list (Karpathy split file)"),
            ));
        };
        let caps = sentences
            .iter()
            .enumerate()
            .map(|(j, s)| match s.get("raw") {
                Some(r) => caption_string(Some(r), &format!("{at}.sentences[{j}].raw")),
                None => Err(InputError::new(
                    ErrorCode::InvalidFormat,
                    format!("{at}.sentences[{j}]: missing \"raw\" (Karpathy split file)"),
                )),
            })
            .collect::<Result<Vec<_>, _>>()?;
        refs.push(id, caps);
    }
    if refs.is_empty() {
        return Err(InputError::new(
            ErrorCode::EmptyResults,
            match split {
                Some(s) => format!(
                    "references: no image of split {:?} in the Karpathy split file",
                    s.as_str()
                ),
                None => "references: the Karpathy split file has no images".to_owned(),
            },
        ));
    }
    Ok(refs)
}

fn caption_list(v: Option<&Value>, at: &str) -> Result<Vec<String>, InputError> {
    match v {
        Some(Value::Array(a)) => a
            .iter()
            .enumerate()
            .map(|(j, c)| caption_string(Some(c), &format!("{at}[{j}]")))
            .collect(),
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        Some(other) => Err(InputError::new(
            ErrorCode::InvalidFormat,
            format!(
                "{at}: expected a list of reference captions, got {}",
                json_type(other)
            ),
        )),
        None => Err(InputError::new(
            ErrorCode::InvalidFormat,
            format!("{at}: missing captions"),
        )),
    }
}

fn parse_reference_map<'a>(
    entries: impl Iterator<Item = (&'a String, &'a Value)>,
) -> Result<References, InputError> {
    let mut refs = References::default();
    for (k, v) in entries {
        let caps = caption_list(Some(v), &format!("references[{k:?}]"))?;
        refs.push(ImageId::from_map_key(k), caps);
    }
    Ok(refs)
}

fn parse_coco_annotations(o: &serde_json::Map<String, Value>) -> Result<References, InputError> {
    let anns = o
        .get("annotations")
        .and_then(Value::as_array)
        .ok_or_else(|| {
            InputError::new(
                ErrorCode::InvalidFormat,
                "references: \"annotations\" must be a list",
            )
        })?;
    let images = match o.get("images") {
        Some(Value::Array(imgs)) => Some(
            imgs.iter()
                .enumerate()
                .map(|(i, img)| image_id_of(img.get("id"), &format!("images[{i}].id")))
                .collect::<Result<Vec<_>, _>>()?,
        ),
        Some(_) => {
            return Err(InputError::new(
                ErrorCode::InvalidFormat,
                "references: \"images\" must be a list",
            ))
        }
        None => None,
    };
    let anns = anns
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let at = format!("annotations[{i}]");
            if !a.is_object() {
                return Err(InputError::new(
                    ErrorCode::InvalidFormat,
                    format!("{at}: expected an object"),
                ));
            }
            Ok((
                image_id_of(a.get("image_id"), &at)?,
                caption_string(a.get("caption"), &at)?,
            ))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(coco_references(images, anns))
}

/// References of a COCO annotation file: images in `images` order (or, without `images`, in
/// order of first annotation), captions in annotation order. Annotations of images missing from
/// `images` are never evaluated (as in pycocotools).
fn coco_references(
    images: Option<Vec<ImageId>>,
    anns: impl IntoIterator<Item = (ImageId, String)>,
) -> References {
    let mut refs = References::default();
    let listed = images.is_some();
    for id in images.into_iter().flatten() {
        refs.push(id, Vec::new());
    }
    for (id, cap) in anns {
        match refs.position(&id.key) {
            Some(p) => refs.images[p].1.push(cap),
            None if listed => {}
            None => refs.push(id, vec![cap]),
        }
    }
    refs
}

fn first_char(text: &str) -> Option<char> {
    text.trim_start_matches(['\u{feff}', ' ', '\t', '\n', '\r'])
        .chars()
        .next()
}

/// Parses the text of a references file. COCO annotation files (the large ones) take a typed
/// fast path; anything else, and any file the fast path does not accept, goes through
/// [`parse_references`], which also produces the precise error messages. JSON lines and
/// aac-metrics CSV are recognised by their content.
pub fn parse_references_text(text: &str, what: &str) -> Result<References, InputError> {
    parse_references_text_with(text, what, None)
}

/// [`parse_references_text`] with a Karpathy split ([`parse_references_with`]).
pub fn parse_references_text_with(
    text: &str,
    what: &str,
    split: Option<KarpathySplit>,
) -> Result<References, InputError> {
    match text_kind(text) {
        TextKind::Json => {
            if split.is_none() && first_char(text) == Some('{') {
                if let Some(refs) = fast_coco_references(text) {
                    return Ok(refs);
                }
            }
            parse_references_with(&parse_json(text, what)?, split)
        }
        TextKind::JsonLines(lines) => {
            if split.is_some() {
                return parse_references_with(&Value::Null, split);
            }
            reference_entries(&lines, &|i| format!("{what}: JSON line {}", i + 1))
        }
        TextKind::Csv => {
            if split.is_some() {
                return parse_references_with(&Value::Null, split);
            }
            csv_references(text, what)
        }
        TextKind::Unknown(why) => Err(unknown_format(what, &why, REFERENCE_FORMATS)),
    }
}

/// A COCO annotation file's references and its images' labels
/// ([`super::ImageFields::labels_of`]) read by the typed paths, without the file's JSON tree
/// (issue 27: registering 500,000 images built a tree of about 1.2 GB). The same as
/// [`parse_references`] and `labels_of` on the parsed tree; `None` when the text is not such a
/// file or the typed paths do not take it (the caller then parses the tree, which also
/// reports what is wrong).
pub fn coco_references_and_labels(text: &str) -> Option<(References, super::ImageFields)> {
    /// The root object's `images`, every other member skipped (a duplicate `images` member
    /// is refused, and the tree path takes the file).
    #[derive(serde::Deserialize)]
    struct Images {
        images: Option<Value>,
    }
    if first_char(text) != Some('{') {
        return None;
    }
    let refs = fast_coco_references(text)?;
    let images = serde_json::from_str::<Images>(text).ok()?.images;
    let root = Value::Object(
        images
            .into_iter()
            .map(|v| ("images".to_owned(), v))
            .collect(),
    );
    Some((refs, super::ImageFields::labels_of(&root)))
}

/// What a text input is, by its content.
enum TextKind {
    /// One JSON value (or text that is meant to be one: its error is reported as JSON).
    Json,
    /// JSON lines: one object per non-blank line.
    JsonLines(Vec<Value>),
    /// A CSV table with a header row.
    Csv,
    /// None of these (why).
    Unknown(String),
}

fn text_kind(text: &str) -> TextKind {
    match first_char(text) {
        None => TextKind::Unknown("the file is empty".to_owned()),
        Some('{') => {
            // JSON lines parse as one JSON object followed by "trailing characters".
            match serde_json::from_str::<serde::de::IgnoredAny>(text) {
                Err(e) if e.to_string().starts_with("trailing characters") => {
                    json_lines(text).map_or(TextKind::Json, TextKind::JsonLines)
                }
                _ => TextKind::Json,
            }
        }
        Some('[') => TextKind::Json,
        Some(_) => {
            if serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok() {
                return TextKind::Json;
            }
            let header = text
                .trim_start_matches('\u{feff}')
                .lines()
                .next()
                .unwrap_or("");
            if header.contains("caption") && header.contains(',')
                || header.trim().starts_with("caption")
            {
                TextKind::Csv
            } else {
                TextKind::Unknown(
                    "not JSON, JSON lines, or a CSV table with caption columns".to_owned(),
                )
            }
        }
    }
}

/// Every non-blank line as a JSON object; `None` when one is not.
fn json_lines(text: &str) -> Option<Vec<Value>> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str::<Value>(l)
                .ok()
                .filter(Value::is_object)
        })
        .collect()
}

fn unknown_format(what: &str, why: &str, accepted: &str) -> InputError {
    InputError::new(
        ErrorCode::InvalidFormat,
        format!("{what}: {why}; accepted: {accepted}"),
    )
}

/// A CSV table (RFC 4180: `,` separated, `"` quoted with `""` escapes, `\n` or `\r\n` line
/// ends): the header and the rows, each row as long as the header.
fn csv_table(text: &str, what: &str) -> Result<(Vec<String>, Vec<Vec<String>>), InputError> {
    let text = text.trim_start_matches('\u{feff}');
    let bad = |m: String| InputError::new(ErrorCode::InvalidFormat, format!("{what}: CSV: {m}"));
    let mut records: Vec<Vec<String>> = Vec::new();
    let mut record: Vec<String> = Vec::new();
    let mut field = String::new();
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    let mut any = false;
    while let Some(c) = chars.next() {
        if quoted {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                '"' => quoted = false,
                _ => field.push(c),
            }
            continue;
        }
        match c {
            '"' if field.is_empty() => {
                quoted = true;
                any = true;
            }
            ',' => {
                record.push(std::mem::take(&mut field));
                any = true;
            }
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' => {
                if any || !field.is_empty() {
                    record.push(std::mem::take(&mut field));
                    records.push(std::mem::take(&mut record));
                }
                any = false;
            }
            _ => {
                field.push(c);
                any = true;
            }
        }
    }
    if quoted {
        return Err(bad(format!(
            "row {}: a quoted field is not closed",
            records.len()
        )));
    }
    if any || !field.is_empty() {
        record.push(field);
        records.push(record);
    }
    let mut rows = records.into_iter();
    let header = rows.next().ok_or_else(|| bad("no header row".to_owned()))?;
    let rows: Vec<Vec<String>> = rows.collect();
    for (i, r) in rows.iter().enumerate() {
        if r.len() != header.len() {
            return Err(bad(format!(
                "row {} has {} fields, the header {}",
                i + 1,
                r.len(),
                header.len()
            )));
        }
    }
    Ok((header, rows))
}

/// The image ids of a CSV table's rows: its `image_id` (else `fname`, `file_name`, `filename`,
/// `id`) column, read as map keys are (all digits: an integer); without one, the row's 0-based
/// index (aac-metrics' tables have no id: rows pair by position).
fn csv_ids(header: &[String], rows: &[Vec<String>]) -> Vec<ImageId> {
    let col = ["image_id", "fname", "file_name", "filename", "id"]
        .iter()
        .find_map(|name| header.iter().position(|h| h.trim() == *name));
    rows.iter()
        .enumerate()
        .map(|(i, r)| match col {
            Some(c) => ImageId::from_map_key(&r[c]),
            None => ImageId::from_value(&Value::from(i))
                .unwrap_or_else(|| ImageId::from_map_key(&i.to_string())),
        })
        .collect()
}

/// References of an aac-metrics CSV table: columns `caption_1`, `caption_2`, ... per row.
fn csv_references(text: &str, what: &str) -> Result<References, InputError> {
    let (header, rows) = csv_table(text, what)?;
    let cols = numbered_captions(header.iter().enumerate().map(|(i, h)| (h.trim(), i)));
    if cols.is_empty() {
        return Err(InputError::new(
            ErrorCode::InvalidFormat,
            format!(
                "{what}: CSV without reference columns caption_1, caption_2, ... (columns: {}){}",
                header.join(", "),
                if header.iter().any(|h| h.trim() == "caption_predicted") {
                    "; a caption_predicted column holds candidates"
                } else {
                    ""
                }
            ),
        ));
    }
    if rows.is_empty() {
        return Err(InputError::new(
            ErrorCode::EmptyResults,
            format!("{what}: CSV without rows"),
        ));
    }
    let ids = csv_ids(&header, &rows);
    let mut refs = References::default();
    // A blank cell is not a reference: rows with fewer references than the widest row leave
    // their last `caption_N` cells empty (aac-metrics' lists of unequal lengths).
    for (id, row) in ids.into_iter().zip(&rows) {
        refs.push(
            id,
            cols.iter()
                .map(|&(_, c)| &row[c])
                .filter(|cell| !cell.trim().is_empty())
                .cloned()
                .collect(),
        );
    }
    Ok(refs)
}

/// Candidates of an aac-metrics CSV table: its `caption_predicted` column.
fn csv_candidates(text: &str, what: &str) -> Result<Vec<Candidate>, InputError> {
    let (header, rows) = csv_table(text, what)?;
    let Some(col) = header.iter().position(|h| h.trim() == "caption_predicted") else {
        let refs = !numbered_captions(header.iter().map(|h| (h.trim(), ()))).is_empty();
        return Err(InputError::new(
            ErrorCode::InvalidFormat,
            format!(
                "{what}: CSV without a caption_predicted column (columns: {}){}",
                header.join(", "),
                if refs {
                    "; caption_1, caption_2, ... hold references"
                } else {
                    ""
                }
            ),
        ));
    };
    let ids = csv_ids(&header, &rows);
    let out: Vec<Candidate> = ids
        .into_iter()
        .zip(rows)
        .map(|(image_id, mut row)| Candidate {
            image_id,
            caption: std::mem::take(&mut row[col]),
        })
        .collect();
    if out.is_empty() {
        return Err(InputError::new(
            ErrorCode::EmptyResults,
            format!("{what}: CSV without rows (empty results)"),
        ));
    }
    Ok(out)
}

#[derive(serde::Deserialize)]
struct FastImage {
    id: Value,
}

/// A member that may be absent but, when present, is a list: `null` is not one (the typed
/// fast path then steps aside and the general path reports it).
fn present_list<'de, D, T>(d: D) -> Result<Option<Vec<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    <Vec<T> as serde::Deserialize>::deserialize(d).map(Some)
}

#[derive(serde::Deserialize)]
struct FastAnn {
    image_id: Value,
    caption: String,
}

/// Image ids of a COCO `images` list; `None` when one has the wrong type (the general path
/// reports it).
fn fast_image_ids(images: Option<Vec<FastImage>>) -> Option<Option<Vec<ImageId>>> {
    match images {
        None => Some(None),
        Some(v) => v
            .iter()
            .map(|i| ImageId::from_value(&i.id))
            .collect::<Option<Vec<_>>>()
            .map(Some),
    }
}

/// What an annotation's image id becomes while the annotations are parsed: `None` fails the
/// parse (an id of the wrong type: the general path then reports it), `Some(None)` skips the
/// annotation (its image is not listed, so it is never evaluated).
pub(super) type Place<'p, T> = &'p (dyn Fn(&Value) -> Option<Option<T>> + Sync);

/// COCO annotations as (placed image id, caption), in one pass (see [`Place`]).
struct Anns<'p, T>(Place<'p, T>);

impl<'de, T> serde::de::DeserializeSeed<'de> for Anns<'_, T> {
    type Value = Vec<(T, String)>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, T> serde::de::Visitor<'de> for Anns<'_, T> {
    type Value = Vec<(T, String)>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of annotations")
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        // A piece of 256 KiB holds about 3,000 annotations.
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).max(4096));
        while let Some(a) = seq.next_element::<FastAnn>()? {
            let placed = (self.0)(&a.image_id).ok_or_else(|| {
                <A::Error as serde::de::Error>::custom("image_id is not a number or a string")
            })?;
            if let Some(id) = placed {
                out.push((id, a.caption));
            }
        }
        Ok(out)
    }
}

/// Every annotation with its image id, for files that do not list their images first.
fn any_image(v: &Value) -> Option<Option<ImageId>> {
    ImageId::from_value(v).map(Some)
}

/// Every annotation with its image id (the whole file parsed in one piece).
struct AnnList(Vec<(ImageId, String)>);

impl<'de> serde::Deserialize<'de> for AnnList {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<AnnList, D::Error> {
        use serde::de::DeserializeSeed;
        Anns(&any_image).deserialize(d).map(AnnList)
    }
}

/// `text` (a JSON array) as annotations placed by `place`; `None` when it is not one.
fn parse_anns<T>(text: &str, place: Place<'_, T>) -> Option<Vec<(T, String)>> {
    use serde::de::DeserializeSeed;
    let mut de = serde_json::Deserializer::from_str(text);
    let anns = Anns(place).deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(anns)
}

/// Each piece (elements of an array) as annotations placed by `place`, in parallel.
pub(super) fn parse_pieces<T: Send>(
    pieces: &[&str],
    place: Place<'_, T>,
) -> Option<Vec<Vec<(T, String)>>> {
    use rayon::prelude::*;
    pieces
        .par_iter()
        .map(|p| {
            // Sized at once (`format!` grows its string as it writes: a copy per doubling).
            let mut array = String::with_capacity(p.len() + 2);
            array.push('[');
            array.push_str(p);
            array.push(']');
            parse_anns(&array, place)
        })
        .collect()
}

/// The position of the `"` that closes the JSON string whose text starts at `start` (escapes
/// skipped); `None` when the text ends first.
pub(super) fn string_end(b: &[u8], start: usize) -> Option<usize> {
    let mut j = start;
    loop {
        let k = j + memchr::memchr2(b'"', b'\\', b.get(j..)?)?;
        if b[k] == b'"' {
            return Some(k);
        }
        j = k + 2;
    }
}

/// What [`element_scan`] finds.
pub(super) struct Elements {
    /// Every `,` between two elements of the array (at its own depth, outside strings).
    pub(super) cuts: Vec<usize>,
    /// The array's `]`, when the text holds it.
    pub(super) end: Option<usize>,
}

/// A structural scan (strings with their escapes, nesting) of the elements of an array, from
/// `from` (a boundary between two of them, or just after its `[`) on, up to its `]` or the end
/// of the text. A misreading on text that is not valid JSON is harmless: a piece, or the rest of
/// the file, then fails to parse.
pub(super) fn element_scan(b: &[u8], from: usize) -> Elements {
    let mut cuts = Vec::new();
    let mut depth = 0usize;
    let mut i = from;
    while i < b.len() {
        match b[i] {
            b'"' => match string_end(b, i + 1) {
                Some(e) => i = e,
                None => break,
            },
            b'{' | b'[' => depth += 1,
            b'}' | b']' if depth > 0 => depth -= 1,
            b']' => return Elements { cuts, end: Some(i) },
            b',' if depth == 0 => cuts.push(i),
            _ => {}
        }
        i += 1;
    }
    Elements { cuts, end: None }
}

/// How many pieces `len` bytes of array elements are parsed in, in parallel: pieces of at
/// least 256 KiB, at most 16.
pub(super) fn piece_count(len: usize) -> usize {
    (len / (256 << 10)).clamp(1, 16)
}

/// The typed fast path for COCO annotation files: `None` when the file does not have that
/// shape (or is not valid JSON), for the general path to handle and report.
///
/// When `images` comes before `annotations` (as in COCO's files), the images are parsed and
/// indexed first, and each annotation is placed with its image as it is parsed (an annotation
/// keeps a 4-byte image position, not its id: issue 27); the check of the rest of the file also
/// confirms that its `images` is the text parsed.
///
/// The `annotations` array (nearly all of a COCO file) is parsed in pieces, in parallel. A
/// structural scan of the text before it (strings, nesting) finds where the array starts. A
/// piece ends at a `,` that follows a `}` (and blanks) and is parsed on its own as `[ ... ]`,
/// starting at a true element boundary (the previous piece's end, checked the same way). If a
/// cut were inside a string, the piece would end in an unterminated string; if it were inside
/// a nested value, the piece would end with that value unclosed: either way the piece fails to
/// parse and the array is parsed in one piece instead. The last piece runs to the end of the
/// array, which a structural scan from its start finds. The rest of the file, with `[]` in
/// place of the array, is then parsed (and so checked) as a whole, and must have that `[]` as
/// its `annotations`.
pub(crate) fn fast_coco_references(text: &str) -> Option<References> {
    #[derive(serde::Deserialize)]
    struct Fast {
        #[serde(default, deserialize_with = "present_list")]
        images: Option<Vec<FastImage>>,
        annotations: AnnList,
    }
    let serial = || {
        let f: Fast = serde_json::from_str(text).ok()?;
        Some(coco_references(fast_image_ids(f.images)?, f.annotations.0))
    };
    in_pieces(text).or_else(serial)
}

/// [`fast_coco_references`] in pieces: `None` when the file cannot be cut (or is not valid).
fn in_pieces(text: &str) -> Option<References> {
    #[derive(serde::Deserialize)]
    struct Rest {
        #[serde(default, deserialize_with = "present_list")]
        images: Option<Vec<FastImage>>,
        annotations: Vec<serde::de::IgnoredAny>,
    }
    let scan = scan_coco(text.as_bytes())?;
    let open = scan.annotations;
    let body = &text[open + 1..];
    // Pieces of at least 256 KiB, at most 16; the last runs to the end of the array.
    let mut cuts = element_cuts(body.as_bytes());
    let starts: Vec<usize> = std::iter::once(0)
        .chain(cuts.iter().map(|&c| c + 1))
        .collect();
    let end = element_scan(body.as_bytes(), *starts.last().expect("a first piece")).end?;
    // A blank last piece after a cut is a trailing comma (`...},]`): not JSON.
    if !cuts.is_empty() && body[cuts[cuts.len() - 1] + 1..end].trim().is_empty() {
        return None;
    }
    cuts.push(end);
    let pieces: Vec<&str> = starts
        .iter()
        .zip(&cuts)
        .map(|(&a, &b)| &body[a..b])
        .collect();
    let rest = format!("{}[]{}", &text[..open], &body[end + 1..]);
    let listed = match scan.images {
        Some((a, b)) => Some(listed_images(&text[a..b])?),
        None => None,
    };
    let Some(mut refs) = listed else {
        let parsed = parse_pieces(&pieces, &any_image)?;
        return match serde_json::from_str::<Rest>(&rest) {
            Ok(r) if r.annotations.is_empty() => Some(coco_references(
                fast_image_ids(r.images)?,
                parsed.into_iter().flatten(),
            )),
            _ => None,
        };
    };
    // Annotations of images missing from `images` are never evaluated.
    let place = |v: &Value| -> Option<Option<u32>> {
        Some(refs.position(&ImageKey::of(v)?).map(|p| p as u32))
    };
    // Check the rest of the file (with the images parsed above in it) while the annotations
    // are parsed.
    let images_text = scan.images.map(|(a, b)| &text[a..b]);
    let (valid, placed) = rayon::join(
        || valid_rest(&rest, images_text),
        || parse_pieces(&pieces, &place),
    );
    let placed = placed.filter(|_| valid)?;
    place_captions(&mut refs, placed);
    Some(refs)
}

/// The images listed in a COCO `images` array's text, indexed, with no captions yet; `None`
/// when it is not a list of objects with a number or string `id`.
pub(super) fn listed_images(text: &str) -> Option<References> {
    let v: Vec<FastImage> = serde_json::from_str(text).ok()?;
    let mut refs = References::default();
    for i in &v {
        refs.push(ImageId::from_value(&i.id)?, Vec::new());
    }
    Some(refs)
}

/// Whether the rest of a COCO file (its annotations array replaced by `[]`) is valid JSON with
/// that empty array as its `annotations`, and with `images_text` (the text indexed) as its
/// `images`.
pub(super) fn valid_rest(rest: &str, images_text: Option<&str>) -> bool {
    use serde_json::value::RawValue;
    #[derive(serde::Deserialize)]
    struct RestRaw<'a> {
        #[serde(borrow)]
        images: Option<&'a RawValue>,
        annotations: Vec<serde::de::IgnoredAny>,
    }
    matches!(serde_json::from_str::<RestRaw<'_>>(rest),
        Ok(r) if r.annotations.is_empty() && r.images.map(RawValue::get) == images_text)
}

/// Moves each placed caption (image position, caption) to its image, in order; each image's
/// list is allocated once, at its size.
pub(super) fn place_captions(refs: &mut References, placed: Vec<Vec<(u32, String)>>) {
    let mut counts = vec![0u32; refs.images.len()];
    for &(p, _) in placed.iter().flatten() {
        counts[p as usize] += 1;
    }
    for (image, &n) in refs.images.iter_mut().zip(&counts) {
        image.1.reserve_exact(n as usize);
    }
    for (p, cap) in placed.into_iter().flatten() {
        refs.images[p as usize].1.push(cap);
    }
}

/// Where a structural scan finds the parts of a COCO annotation file.
pub(super) struct CocoScan {
    /// Position of the `[` that opens the root object's `"annotations"` array.
    pub(super) annotations: usize,
    /// The root object's `"images"` array (from `[` to `]` included), when it comes before
    /// `"annotations"`.
    pub(super) images: Option<(usize, usize)>,
}

/// A structural scan (strings with their escapes, nesting) of the text before the root
/// object's `"annotations"` member. `None` when the text does not start with an object or the
/// member is not found as plain bytes, or its value is not an array.
pub(super) fn scan_coco(b: &[u8]) -> Option<CocoScan> {
    let blank = |c: &u8| matches!(c, b' ' | b'\t' | b'\n' | b'\r');
    let mut i = b.iter().position(|c| !blank(c))?;
    if b[i] != b'{' {
        return None;
    }
    let mut depth = 0usize;
    // True where the next string at depth 1 is a member name of the root object.
    let mut key = false;
    let (mut images_start, mut images) = (None, None);
    while i < b.len() {
        match b[i] {
            b'"' => {
                let start = i + 1;
                let end = string_end(b, start)?;
                let name = &b[start..end];
                if depth == 1 && key && (name == b"annotations" || name == b"images") {
                    let mut k = end + 1 + b.get(end + 1..)?.iter().position(|c| !blank(c))?;
                    if b[k] != b':' {
                        return None;
                    }
                    k += 1 + b.get(k + 1..)?.iter().position(|c| !blank(c))?;
                    if name == b"annotations" {
                        return (b[k] == b'[').then_some(CocoScan {
                            annotations: k,
                            images,
                        });
                    }
                    if b[k] == b'[' {
                        images_start = Some(k);
                    }
                    key = false;
                    i = k;
                    continue;
                }
                key = false;
                i = end + 1;
                continue;
            }
            b'{' => {
                depth += 1;
                key = depth == 1;
            }
            b'[' => {
                depth += 1;
                key = false;
            }
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                key = false;
                if depth == 1 {
                    if let Some(s) = images_start.take() {
                        images = Some((s, i + 1));
                    }
                }
            }
            b',' => key = depth == 1,
            _ => {}
        }
        i += 1;
    }
    None
}

/// Where to cut the elements of an array (`body`: the text after its `[`) into pieces of at
/// least 256 KiB, at most 16, to parse in parallel: guessed element boundaries (see
/// [`next_element_boundary`]), ascending.
fn element_cuts(body: &[u8]) -> Vec<usize> {
    let pieces = piece_count(body.len());
    let mut cuts: Vec<usize> = Vec::with_capacity(pieces);
    for k in 1..pieces {
        let from = (body.len() * k / pieces).max(cuts.last().map_or(0, |&c| c + 1));
        match next_element_boundary(body, from) {
            Some(c) => cuts.push(c),
            None => break,
        }
    }
    cuts
}

/// The first `,` at or after `from` that follows a `}` and blanks (a candidate boundary
/// between two objects of an array; see [`fast_coco_references`] for why a wrong guess is
/// harmless).
fn next_element_boundary(b: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while i < b.len() {
        let c = i + b[i..].iter().position(|&x| x == b',')?;
        let before = b[..c]
            .iter()
            .rev()
            .find(|&&x| !matches!(x, b' ' | b'\t' | b'\n' | b'\r'));
        if before == Some(&b'}') {
            return Some(c);
        }
        i = c + 1;
    }
    None
}

/// Parses the text of a candidates file (typed fast path for COCO results lists, see
/// [`parse_references_text`]; JSON lines and aac-metrics CSV by their content).
pub fn parse_candidates_text(text: &str, what: &str) -> Result<Vec<Candidate>, InputError> {
    match text_kind(text) {
        TextKind::Json => {}
        TextKind::JsonLines(lines) => {
            return candidate_entries(&lines, &|i| format!("{what}: JSON line {}", i + 1))
        }
        TextKind::Csv => return csv_candidates(text, what),
        TextKind::Unknown(why) => return Err(unknown_format(what, &why, CANDIDATE_FORMATS)),
    }
    if first_char(text) == Some('[') {
        if let Some(out) = fast_candidates(text).filter(|o| !o.is_empty()) {
            return Ok(out);
        }
    }
    parse_candidates(&parse_json(text, what)?)
}

/// The typed fast path of a results list (`[{"image_id", "caption"}, ...]`): each entry
/// becomes a [`Candidate`] as it is parsed, into a list reserved for the entries the text
/// holds (issue 27: a list of parsed entries, then a second of candidates, each grown by
/// doubling, made the candidates' parse the 500,000-image run's peak). `None` when the text
/// is not such a list or an id is not one (the general path then reports what is wrong).
pub(super) fn fast_candidates(text: &str) -> Option<Vec<Candidate>> {
    use serde::de::{DeserializeSeed, Deserializer, Error, SeqAccess, Visitor};

    #[derive(serde::Deserialize)]
    struct Fast {
        image_id: Value,
        caption: String,
    }
    /// The list, reserved for this many entries.
    struct Entries(usize);
    impl<'de> Visitor<'de> for Entries {
        type Value = Vec<Candidate>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a list of candidates")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Candidate>, A::Error> {
            let mut out = Vec::with_capacity(self.0);
            while let Some(c) = seq.next_element::<Fast>()? {
                let image_id = ImageId::from_value(&c.image_id)
                    .ok_or_else(|| A::Error::custom("not an image id"))?;
                out.push(Candidate {
                    image_id,
                    caption: c.caption,
                });
            }
            Ok(out)
        }
    }
    impl<'de> DeserializeSeed<'de> for Entries {
        type Value = Vec<Candidate>;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<Candidate>, D::Error> {
            d.deserialize_seq(self)
        }
    }
    // One entry per `"caption"` and `"image_id"` key (a caption's own quotes are escaped), and
    // at most one per 27 bytes (`{"caption":"","image_id":0}`), whatever the text holds: a
    // text padded with such strings reserves no more than that (untouched). A key written
    // with escapes is not counted: the list then grows as it is parsed.
    let count = |key: &[u8]| memchr::memmem::find_iter(text.as_bytes(), key).count();
    let entries = count(b"\"caption\"")
        .min(count(b"\"image_id\""))
        .min(text.len() / 27 + 1);
    let mut de = serde_json::Deserializer::from_str(text);
    let out = Entries(entries).deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(out)
}

/// Candidate entries `{"image_id", "caption"}` (or aac-metrics' `caption_predicted`), `at(i)`
/// naming entry `i`. Order is kept.
fn candidate_entries(
    a: &[Value],
    at: &dyn Fn(usize) -> String,
) -> Result<Vec<Candidate>, InputError> {
    let mut out = Vec::with_capacity(a.len());
    for (i, e) in a.iter().enumerate() {
        let at = at(i);
        let o = entry_object(e, &at, "{\"image_id\", \"caption\"}")?;
        let image_id = image_id_of(o.get("image_id"), &at)?;
        let caption = match (o.get("caption"), o.get("caption_predicted"), o.get("captions")) {
            (None, Some(c), _) => caption_string(Some(c), &format!("{at} (image_id {image_id})"))?,
            (None, None, Some(_)) => {
                return Err(InputError::new(
                    ErrorCode::InvalidFormat,
                    format!("{at} (image_id {image_id}): missing \"caption\"; a list of \"captions\" is a references entry, not a candidate"),
                ))
            }
            (c, _, _) => caption_string(c, &format!("{at} (image_id {image_id})"))?,
        };
        out.push(Candidate { image_id, caption });
    }
    Ok(out)
}

/// Parses candidates: a COCO results list `[{"image_id", "caption"}]`, a map
/// `{"<image_id>": "caption"}`, or pycocoevalcap's own `{"<image_id>": ["caption"]}` (exactly
/// one caption per image). Order is kept. Duplicates are reported by [`assemble`].
pub fn parse_candidates(v: &Value) -> Result<Vec<Candidate>, InputError> {
    let out = match v {
        Value::Array(a) => candidate_entries(a, &|i| format!("results[{i}]"))?,
        Value::Object(o) if o.contains_key("annotations") || is_karpathy(o) => {
            return Err(InputError::new(
                ErrorCode::InvalidFormat,
                format!(
                    "results: this is a references file ({}), not candidates; accepted: {CANDIDATE_FORMATS}",
                    if is_karpathy(o) { "Karpathy split file" } else { "COCO captions annotations" }
                ),
            ))
        }
        Value::Object(o) => {
            let mut out = Vec::with_capacity(o.len());
            for (k, v) in o {
                let image_id = ImageId::from_map_key(k);
                let at = format!("results[{k:?}] (image_id {image_id})");
                let caption = match v {
                    // pycocoevalcap's `res`: {id: [caption]}, one caption per image.
                    Value::Array(list) if list.len() == 1 => caption_string(list.first(), &at)?,
                    Value::Array(list) => {
                        return Err(InputError::new(
                            ErrorCode::InvalidFormat,
                            format!(
                                "{at}: {} captions; the {{\"<image_id>\": [\"caption\"]}} form of pycocoevalcap's results holds exactly one per image{}",
                                list.len(),
                                if list.len() > 1 { " (several per image are references)" } else { "" }
                            ),
                        ))
                    }
                    _ => caption_string(Some(v), &at)?,
                };
                out.push(Candidate { image_id, caption });
            }
            out
        }
        other => {
            return Err(InputError::new(
                ErrorCode::InvalidFormat,
                format!("results: got {}; accepted: {CANDIDATE_FORMATS}", json_type(other)),
            ))
        }
    };
    if out.is_empty() {
        return Err(InputError::new(
            ErrorCode::EmptyResults,
            "results: no candidate captions (empty results)",
        ));
    }
    Ok(out)
}
