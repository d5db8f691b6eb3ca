//! Input formats: COCO caption annotation files and results files, and plain maps keyed by
//! image id (spec COCO §2). Parsing checks everything pycocoevalcap would crash on, or silently
//! misalign, and reports it as an [`InputError`] with a stable code.
//!
//! Must not: read files (callers hand over text or JSON values) or score anything.

use std::fmt;

use serde_json::Value;

use super::error::{ErrorCode, InputError};
use super::{Candidate, ImageId, References};

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
                    "{at}: image_id must be a number or a string, got {}",
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
    match v {
        Value::Object(o) if o.contains_key("annotations") => parse_coco_annotations(o),
        Value::Object(o) if o.len() == 1 && o.get("references").is_some_and(Value::is_object) => {
            parse_reference_map(o.get("references").and_then(Value::as_object).into_iter().flatten())
        }
        Value::Object(o) => parse_reference_map(o.iter()),
        Value::Array(a) => {
            let mut refs = References::default();
            for (i, e) in a.iter().enumerate() {
                let at = format!("references[{i}]");
                let id = image_id_of(e.get("image_id"), &at)?;
                let caps = caption_list(e.get("captions"), &at)?;
                refs.push(id, caps);
            }
            Ok(refs)
        }
        other => Err(InputError::new(
            ErrorCode::InvalidFormat,
            format!(
                "references: expected a COCO annotation object or a map of image id to captions, got {}",
                json_type(other)
            ),
        )),
    }
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
/// [`parse_references`], which also produces the precise error messages.
pub fn parse_references_text(text: &str, what: &str) -> Result<References, InputError> {
    if first_char(text) == Some('{') {
        if let Some(refs) = fast_coco_references(text) {
            return Ok(refs);
        }
    }
    parse_references(&parse_json(text, what)?)
}

#[derive(serde::Deserialize)]
struct FastImage {
    id: Value,
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

/// COCO annotations as (image id, caption), in one pass; an image id of the wrong type fails
/// the parse (the general path then reports it).
struct AnnList(Vec<(ImageId, String)>);

impl<'de> serde::Deserialize<'de> for AnnList {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<AnnList, D::Error> {
        struct Seq;
        impl<'de> serde::de::Visitor<'de> for Seq {
            type Value = AnnList;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of annotations")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<AnnList, A::Error> {
                // A piece of 256 KiB holds about 3,000 annotations.
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).max(4096));
                while let Some(a) = seq.next_element::<FastAnn>()? {
                    let id = ImageId::from_value(&a.image_id).ok_or_else(|| {
                        <A::Error as serde::de::Error>::custom(
                            "image_id is not a number or a string",
                        )
                    })?;
                    out.push((id, a.caption));
                }
                Ok(AnnList(out))
            }
        }
        d.deserialize_seq(Seq)
    }
}

/// The typed fast path for COCO annotation files: `None` when the file does not have that
/// shape (or is not valid JSON), for the general path to handle and report.
///
/// When `images` comes before `annotations` (as in COCO's files), the images are parsed and
/// indexed while the annotations are, and each piece of annotations then finds its images in
/// parallel; the check of the rest of the file also confirms that its `images` is the text
/// parsed.
///
/// The `annotations` array (nearly all of a COCO file) is parsed in pieces, in parallel. A
/// structural scan of the text before it (strings, nesting) finds where the array starts. A
/// piece ends at a `,` that follows a `}` (and blanks) and is parsed on its own as `[ ... ]`,
/// starting at a true element boundary (the previous piece's end, checked the same way). If a
/// cut were inside a string, the piece would end in an unterminated string; if it were inside
/// a nested value, the piece would end with that value unclosed: either way the piece fails to
/// parse and the array is parsed in one piece instead. The last piece runs to the end of the
/// array, which its parse finds. The rest of the file, with `[]` in place of the array, is then
/// parsed (and so checked) as a whole, and must have that `[]` as its `annotations`.
pub(crate) fn fast_coco_references(text: &str) -> Option<References> {
    use rayon::prelude::*;
    use serde_json::value::RawValue;
    #[derive(serde::Deserialize)]
    struct Fast {
        images: Option<Vec<FastImage>>,
        annotations: AnnList,
    }
    #[derive(serde::Deserialize)]
    struct Rest {
        images: Option<Vec<FastImage>>,
        annotations: Vec<serde::de::IgnoredAny>,
    }
    #[derive(serde::Deserialize)]
    struct RestRaw<'a> {
        #[serde(borrow)]
        images: Option<&'a RawValue>,
        annotations: Vec<serde::de::IgnoredAny>,
    }
    let serial = || {
        let f: Fast = serde_json::from_str(text).ok()?;
        Some(coco_references(fast_image_ids(f.images)?, f.annotations.0))
    };
    let Some(scan) = scan_coco(text) else {
        return serial();
    };
    let open = scan.annotations;
    let body = &text[open + 1..];
    // Pieces of at least 256 KiB, at most 16; `body` runs past the end of the array, so the
    // last piece is open-ended.
    let pieces = (body.len() / (256 << 10)).clamp(1, 16);
    let mut cuts: Vec<usize> = Vec::with_capacity(pieces);
    for k in 1..pieces {
        let from = (body.len() * k / pieces).max(cuts.last().map_or(0, |&c| c + 1));
        match next_element_boundary(body, from) {
            Some(c) => cuts.push(c),
            None => break,
        }
    }
    let starts: Vec<usize> = std::iter::once(0)
        .chain(cuts.iter().map(|&c| c + 1))
        .collect();
    // Per piece: its annotations and where it ends in `body`.
    type Piece = (Vec<(ImageId, String)>, usize);
    let pieces = || -> Option<Vec<Piece>> {
        starts
            .par_iter()
            .enumerate()
            .map(|(k, &a)| match cuts.get(k) {
                Some(&b) => {
                    let anns: AnnList = serde_json::from_str(&format!("[{}]", &body[a..b])).ok()?;
                    Some((anns.0, b))
                }
                None => {
                    // The last piece: parse one array and see where it ends.
                    let piece = format!("[{}", &body[a..]);
                    let mut stream = serde_json::Deserializer::from_str(&piece).into_iter();
                    let anns: AnnList = stream.next()?.ok()?;
                    // `piece[offset - 1]` is the array's `]`: `body[a + offset - 2]`.
                    let end = a + stream.byte_offset() - 1;
                    Some((anns.0, end))
                }
            })
            .collect()
    };
    // The images (when listed before the annotations), indexed, while the pieces parse.
    let listed = || -> Option<References> {
        let (a, b) = scan.images?;
        let v: Vec<FastImage> = serde_json::from_str(&text[a..b]).ok()?;
        let mut refs = References::default();
        for i in &v {
            refs.push(ImageId::from_value(&i.id)?, Vec::new());
        }
        Some(refs)
    };
    let (listed, parsed) = rayon::join(listed, pieces);
    let Some(parsed) = parsed else {
        return serial();
    };
    let end = parsed.last().map_or(0, |p| p.1);
    let rest = format!("{}[]{}", &text[..open], &body[end..]);
    let Some(mut refs) = listed else {
        return match serde_json::from_str::<Rest>(&rest) {
            Ok(r) if r.annotations.is_empty() => Some(coco_references(
                fast_image_ids(r.images)?,
                parsed.into_iter().flat_map(|p| p.0),
            )),
            _ => serial(),
        };
    };
    // Check the rest of the file (with the images parsed above in it) while the annotations
    // find their images.
    let images_text = scan.images.map(|(a, b)| &text[a..b]);
    let (valid, placed) = rayon::join(
        || {
            matches!(serde_json::from_str::<RestRaw<'_>>(&rest),
                Ok(r) if r.annotations.is_empty() && r.images.map(RawValue::get) == images_text)
        },
        || {
            parsed
                .into_par_iter()
                .map(|(anns, _)| {
                    // Annotations of images missing from `images` are never evaluated.
                    anns.into_iter()
                        .filter_map(|(id, cap)| refs.position(&id.key).map(|p| (p as u32, cap)))
                        .collect::<Vec<_>>()
                })
                .collect::<Vec<_>>()
        },
    );
    if !valid {
        return serial();
    }
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
    Some(refs)
}

/// Where a structural scan finds the parts of a COCO annotation file.
struct CocoScan {
    /// Position of the `[` that opens the root object's `"annotations"` array.
    annotations: usize,
    /// The root object's `"images"` array (from `[` to `]` included), when it comes before
    /// `"annotations"`.
    images: Option<(usize, usize)>,
}

/// A structural scan (strings with their escapes, nesting) of the text before the root
/// object's `"annotations"` member. `None` when the text does not start with an object or the
/// member is not found as plain bytes, or its value is not an array.
fn scan_coco(text: &str) -> Option<CocoScan> {
    let b = text.as_bytes();
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
                let mut j = start;
                let end = loop {
                    let k = j + b.get(j..)?.iter().position(|&c| c == b'"' || c == b'\\')?;
                    if b[k] == b'"' {
                        break k;
                    }
                    j = k + 2;
                };
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

/// The first `,` at or after `from` that follows a `}` and blanks (a candidate boundary
/// between two objects of an array; see [`fast_coco_references`] for why a wrong guess is
/// harmless).
fn next_element_boundary(s: &str, from: usize) -> Option<usize> {
    let b = s.as_bytes();
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
/// [`parse_references_text`]).
pub fn parse_candidates_text(text: &str, what: &str) -> Result<Vec<Candidate>, InputError> {
    #[derive(serde::Deserialize)]
    struct Fast {
        image_id: Value,
        caption: String,
    }
    if first_char(text) == Some('[') {
        if let Ok(v) = serde_json::from_str::<Vec<Fast>>(text) {
            let out: Option<Vec<Candidate>> = v
                .into_iter()
                .map(|c| {
                    ImageId::from_value(&c.image_id).map(|image_id| Candidate {
                        image_id,
                        caption: c.caption,
                    })
                })
                .collect();
            if let Some(out) = out.filter(|o| !o.is_empty()) {
                return Ok(out);
            }
        }
    }
    parse_candidates(&parse_json(text, what)?)
}

/// Parses candidates: a COCO results list `[{"image_id", "caption"}]` or a map
/// `{"<image_id>": "caption"}`. Order is kept. Duplicates are reported by [`assemble`].
pub fn parse_candidates(v: &Value) -> Result<Vec<Candidate>, InputError> {
    let out = match v {
        Value::Array(a) => {
            let mut out = Vec::with_capacity(a.len());
            for (i, e) in a.iter().enumerate() {
                let at = format!("results[{i}]");
                if !e.is_object() {
                    return Err(InputError::new(
                        ErrorCode::InvalidFormat,
                        format!("{at}: expected an object"),
                    ));
                }
                let image_id = image_id_of(e.get("image_id"), &at)?;
                let caption =
                    caption_string(e.get("caption"), &format!("{at} (image_id {image_id})"))?;
                out.push(Candidate { image_id, caption });
            }
            out
        }
        Value::Object(o) => {
            let mut out = Vec::with_capacity(o.len());
            for (k, v) in o {
                let image_id = ImageId::from_map_key(k);
                let caption =
                    caption_string(Some(v), &format!("results[{k:?}] (image_id {image_id})"))?;
                out.push(Candidate { image_id, caption });
            }
            out
        }
        other => {
            return Err(InputError::new(
                ErrorCode::InvalidFormat,
                format!(
                    "results: expected a COCO results list or a map of image id to caption, got {}",
                    json_type(other)
                ),
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
