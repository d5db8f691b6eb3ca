//! Input formats: COCO caption annotation files and results files, and plain maps keyed by
//! image id (spec COCO §2). Parsing checks everything pycocoevalcap would crash on, or silently
//! misalign, and reports it as an [`InputError`] with a stable code.
//!
//! Image ids compare as Python compares them (spec §2.2): the integer `1` and the float `1.0`
//! are the same id, the string `"1"` is another. In the plain map formats every key is a JSON
//! string; a key made only of ASCII digits is read as that integer (as the golden tooling
//! does), so a map of references matches a COCO results file and vice versa. The id is always
//! reported back exactly as the caller wrote it.

use std::fmt;

use rustc_hash::{FxHashMap, FxHashSet};
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

impl ImageId {
    /// An id from a JSON value (a number or a string).
    pub fn from_value(v: &Value) -> Option<ImageId> {
        let key = match v {
            Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    ImageKey::Int(i128::from(i))
                } else if let Some(u) = n.as_u64() {
                    ImageKey::Int(i128::from(u))
                } else {
                    let f = n.as_f64()?;
                    if f.fract() == 0.0 && f.abs() < 1.7e38 {
                        ImageKey::Int(f as i128)
                    } else {
                        ImageKey::Float(f.to_bits())
                    }
                }
            }
            Value::String(s) => ImageKey::Str(s.clone()),
            _ => return None,
        };
        Some(ImageId {
            raw: v.clone(),
            key,
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

/// Stable error codes for bad input (the API's `code`, the CLI's message prefix).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// The body or file is not valid JSON (including invalid Unicode escapes).
    InvalidJson,
    /// Valid JSON of the wrong shape.
    InvalidFormat,
    /// An image id that is not a number or a string.
    InvalidImageId,
    /// A caption that is not a string.
    InvalidCaption,
    /// A candidate for an image that has no entry among the references.
    UnknownImageId,
    /// Two candidates for one image.
    DuplicateImageId,
    /// A candidate whose image has zero references.
    MissingReferences,
    /// No candidates at all.
    EmptyResults,
    /// Every reference of every evaluated image is empty: CIDEr has no document frequencies.
    NoReferenceNgrams,
    /// An unknown metric name.
    UnknownMetric,
    /// A limit (caption length, item count, ...) was exceeded.
    LimitExceeded,
    /// A requested metric whose resources are not loaded.
    MetricUnavailable,
}

impl ErrorCode {
    /// The code as a stable string.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidJson => "invalid_json",
            ErrorCode::InvalidFormat => "invalid_format",
            ErrorCode::InvalidImageId => "invalid_image_id",
            ErrorCode::InvalidCaption => "invalid_caption",
            ErrorCode::UnknownImageId => "unknown_image_id",
            ErrorCode::DuplicateImageId => "duplicate_image_id",
            ErrorCode::MissingReferences => "missing_references",
            ErrorCode::EmptyResults => "empty_results",
            ErrorCode::NoReferenceNgrams => "no_reference_ngrams",
            ErrorCode::UnknownMetric => "unknown_metric",
            ErrorCode::LimitExceeded => "limit_exceeded",
            ErrorCode::MetricUnavailable => "metric_unavailable",
        }
    }
}

/// Bad input: a stable code and a one-line message that names the offending ids or entries.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct InputError {
    /// Stable code.
    pub code: ErrorCode,
    /// Human-readable, one line.
    pub message: String,
}

impl InputError {
    /// A new error.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> InputError {
        let message: String = message.into();
        // One line, always: messages quote user data, which may contain line breaks.
        let message = message.replace(['\n', '\r'], " ");
        InputError { code, message }
    }
}

fn list_ids<'a>(ids: impl IntoIterator<Item = &'a ImageId>) -> String {
    let ids: Vec<&ImageId> = ids.into_iter().collect();
    let mut s: Vec<String> = ids.iter().take(10).map(|i| i.to_string()).collect();
    if ids.len() > 10 {
        s.push(format!("... ({} in all)", ids.len()));
    }
    s.join(", ")
}

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

/// The references: images in evaluation order with their captions in file order.
#[derive(Debug, Clone, Default)]
pub struct References {
    /// Images in file order, each with its reference captions in file order.
    pub images: Vec<(ImageId, Vec<String>)>,
    index: FxHashMap<ImageKey, usize>,
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

    fn push(&mut self, id: ImageId, caps: Vec<String>) {
        match self.index.get(&id.key) {
            Some(&i) => self.images[i].1.extend(caps),
            None => {
                self.index.insert(id.key.clone(), self.images.len());
                self.images.push((id, caps));
            }
        }
    }

    /// Position of an image in file order.
    pub fn position(&self, key: &ImageKey) -> Option<usize> {
        self.index.get(key).copied()
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
fn fast_coco_references(text: &str) -> Option<References> {
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

/// One candidate caption.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Its image.
    pub image_id: ImageId,
    /// The caption text.
    pub caption: String,
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
}

impl Batch {
    /// A batch whose evaluation order is the given order, after the same checks as
    /// [`assemble`]: no duplicate ids, at least one reference per item, not empty.
    pub fn from_items(items: Vec<Item>) -> Result<Batch, InputError> {
        if items.is_empty() {
            return Err(InputError::new(
                ErrorCode::EmptyResults,
                "no items to score (empty batch)",
            ));
        }
        check_duplicates(items.iter().map(|i| &i.image_id))?;
        check_references(&items)?;
        let output_order = (0..items.len()).collect();
        Ok(Batch {
            items,
            output_order,
        })
    }
}

fn check_duplicates<'a>(ids: impl Iterator<Item = &'a ImageId>) -> Result<(), InputError> {
    let mut seen: FxHashSet<&ImageKey> = FxHashSet::default();
    let mut dups: Vec<&ImageId> = Vec::new();
    for id in ids {
        if !seen.insert(&id.key) && !dups.iter().any(|d| d.key == id.key) {
            dups.push(id);
        }
    }
    if dups.is_empty() {
        Ok(())
    } else {
        Err(InputError::new(
            ErrorCode::DuplicateImageId,
            format!("more than one candidate for image_id {}", list_ids(dups)),
        ))
    }
}

fn check_references(items: &[Item]) -> Result<(), InputError> {
    let missing: Vec<&ImageId> = items
        .iter()
        .filter(|i| i.references.is_empty())
        .map(|i| &i.image_id)
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(InputError::new(
            ErrorCode::MissingReferences,
            format!("no reference captions for image_id {}", list_ids(missing)),
        ))
    }
}

/// Joins candidates with their references, as COCOEvalCap does with `params['image_id']` set to
/// the images that have a result.
pub fn assemble(refs: &References, cands: Vec<Candidate>) -> Result<Batch, InputError> {
    assemble_with(refs, cands, |pos| refs.images[pos].1.clone())
}

/// [`assemble`], consuming the references (their captions move into the batch).
pub fn assemble_owned(refs: References, cands: Vec<Candidate>) -> Result<Batch, InputError> {
    let References { mut images, index } = refs;
    let lookup = References {
        images: Vec::new(),
        index,
    };
    // Candidates are distinct images (checked first), so each image's captions move once.
    assemble_with(&lookup, cands, |pos| std::mem::take(&mut images[pos].1))
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
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
            let fast = fast_coco_references(doc).expect("fast path");
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
            assert!(fast_coco_references(&doc).is_none());
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
