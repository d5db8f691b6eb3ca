//! A COCO annotation file taken block by block as it is read ([`CocoBlocks`], issue 27): the
//! annotations are parsed a block at a time and the block's text is let go, so a large file's
//! text is never held whole (215 MB for 500,000 images). The result is the one of the typed
//! fast path on the whole text ([`super::formats::fast_coco_references`]); a file of another
//! shape, or not valid, is refused (`None`), and the caller parses its whole text instead,
//! which also reports what is wrong with it.
//!
//! Must not: read files (the caller pushes the bytes).

use serde_json::Value;

use super::formats::{
    element_scan, listed_images, parse_pieces, piece_count, place_captions, scan_coco, valid_rest,
    CocoScan,
};
use super::ids::{ImageKey, References};

/// Annotation text parsed at once (then let go), past the last element boundary it holds.
pub const BLOCK: usize = 16 << 20;
/// The text before the `annotations` array that is looked through for it, and the longest
/// annotation: a file with more is parsed whole.
const HEAD_MAX: usize = 64 << 20;

/// A COCO annotation file fed in blocks: [`CocoBlocks::push`] the bytes as they are read, then
/// [`CocoBlocks::finish`].
///
/// The text up to the `[` of the root object's `"annotations"` is kept (found by the same
/// structural scan as the whole-text path; it must list `"images"` first); its `images` are
/// indexed. Then, each time a block of annotations is held, a structural scan of it (strings
/// with their escapes, nesting: [`element_scan`]) finds its element boundaries; the text up to
/// the last one is cut at boundaries into pieces, parsed, and let go, each annotation placed
/// with its image. Once the scan meets the array's `]`, the rest is left for the end. At the
/// end of the file the last elements are parsed the same way, and the rest of the file (its
/// text before the array, `[]`, and its text after) is parsed as a whole, checked as on the
/// whole text. Every piece is parsed as an array of its own, so a piece that is not whole
/// elements fails, and a file the scan misreads (it is not valid JSON) is refused.
pub struct CocoBlocks {
    /// Annotation bytes parsed at once ([`BLOCK`]; smaller in tests).
    block: usize,
    /// Bytes not yet parsed: the head, then the annotations from the last boundary on.
    buf: Vec<u8>,
    /// Once the head is found: the text before the annotations array, its scan, the images.
    body: Option<Body>,
    /// Annotations parsed, block after block (image position, caption).
    placed: Vec<Vec<(u32, String)>>,
    /// The head is looked for once this many bytes are held (doubling: a scan of the whole
    /// head each time).
    next_scan: usize,
    /// Whether a block was cut (a blank last piece is then a trailing comma).
    cut: bool,
    /// The array's `]` is in `buf`: the rest waits for the end of the file.
    ended: bool,
    /// The text is not a COCO file this path takes.
    refused: bool,
}

impl Default for CocoBlocks {
    fn default() -> CocoBlocks {
        CocoBlocks::with_block(BLOCK)
    }
}

struct Body {
    head: String,
    scan: CocoScan,
    refs: References,
}

impl CocoBlocks {
    /// Parses the annotations `block` bytes at a time (and looks for the head from `block / 16`
    /// bytes on).
    fn with_block(block: usize) -> CocoBlocks {
        CocoBlocks {
            block,
            buf: Vec::new(),
            body: None,
            placed: Vec::new(),
            next_scan: block / 16,
            cut: false,
            ended: false,
            refused: false,
        }
    }

    /// Takes the next bytes of the file; `false` once the file is refused (the rest need not
    /// be pushed).
    pub fn push(&mut self, bytes: &[u8]) -> bool {
        if self.refused {
            return false;
        }
        self.buf.extend_from_slice(bytes);
        if self.body.is_none() {
            let blank = |c: &u8| matches!(c, b' ' | b'\t' | b'\n' | b'\r');
            if self
                .buf
                .iter()
                .find(|c| !blank(c))
                .is_some_and(|&c| c != b'{')
            {
                return self.refuse();
            }
            if self.buf.len() < self.next_scan.min(HEAD_MAX) {
                return true;
            }
            self.next_scan = self.buf.len() * 2;
            if !self.find_head() {
                return !self.refused && self.buf.len() <= HEAD_MAX || self.refuse();
            }
        }
        if self.buf.len() >= self.block && !self.ended && !self.parse_block() {
            return self.refuse();
        }
        true
    }

    /// The references, once the whole file was pushed; `None` when it is refused.
    pub fn finish(mut self) -> Option<References> {
        if self.refused || (self.body.is_none() && !self.find_head()) {
            return None;
        }
        let mut body = self.body.take()?;
        let b = &self.buf;
        let scan = element_scan(b, 0);
        let end = scan.end?;
        let last = std::str::from_utf8(&b[..end]).ok()?;
        let pieces = pieces(last, &scan.cuts, self.cut)?;
        let tail = std::str::from_utf8(&b[end + 1..]).ok()?;
        let rest = format!("{}[]{tail}", &body.head[..body.scan.annotations]);
        let images_text = body.scan.images.map(|(a, b)| &body.head[a..b]);
        let refs = &body.refs;
        let place = |v: &Value| -> Option<Option<u32>> {
            Some(refs.position(&ImageKey::of(v)?).map(|p| p as u32))
        };
        let (valid, parsed) = rayon::join(
            || valid_rest(&rest, images_text),
            || parse_pieces(&pieces, &place),
        );
        self.placed.extend(parsed.filter(|_| valid)?);
        place_captions(&mut body.refs, self.placed);
        Some(body.refs)
    }

    fn refuse(&mut self) -> bool {
        self.refused = true;
        self.buf = Vec::new();
        self.placed = Vec::new();
        false
    }

    /// Looks for the head in the bytes held; `true` once found (and its images indexed).
    fn find_head(&mut self) -> bool {
        let Some(scan) = scan_coco(&self.buf) else {
            return false;
        };
        let head = std::str::from_utf8(&self.buf[..scan.annotations]).ok();
        let Some(((a, b), head)) = scan.images.zip(head) else {
            // Without `images` first: the whole-text path.
            self.refused = true;
            return false;
        };
        let Some(refs) = listed_images(&head[a..b]) else {
            self.refused = true;
            return false;
        };
        let head = head.to_owned();
        self.buf.drain(..scan.annotations + 1);
        self.body = Some(Body { head, scan, refs });
        true
    }

    /// Parses the annotations held up to their last element boundary; `false` when a piece
    /// does not parse (or no boundary comes in [`HEAD_MAX`] bytes: an annotation that large
    /// goes the whole-text way).
    fn parse_block(&mut self) -> bool {
        let Some(body) = &self.body else {
            return true;
        };
        let scan = element_scan(&self.buf, 0);
        if scan.end.is_some() {
            self.ended = true;
            return true;
        }
        let Some(&cut) = scan.cuts.last() else {
            return self.buf.len() <= HEAD_MAX;
        };
        let Ok(text) = std::str::from_utf8(&self.buf[..cut]) else {
            return false;
        };
        let refs = &body.refs;
        let place = |v: &Value| -> Option<Option<u32>> {
            Some(refs.position(&ImageKey::of(v)?).map(|p| p as u32))
        };
        let within = &scan.cuts[..scan.cuts.len() - 1];
        let Some(parsed) = pieces(text, within, true).and_then(|p| parse_pieces(&p, &place)) else {
            return false;
        };
        self.placed.extend(parsed);
        self.buf.drain(..cut + 1);
        self.cut = true;
        true
    }
}

/// `text` (elements of an array, from a true boundary to the end of an element) cut in
/// pieces of at least 256 KiB, at most 16, at element boundaries among `bounds` (ascending,
/// inside `text`); `None` when one is blank, unless it is the whole of an array that no block
/// was cut from (`[]`): a blank piece is a trailing comma (`...},]`), or two commas, not JSON.
fn pieces<'t>(text: &'t str, bounds: &[usize], after_cut: bool) -> Option<Vec<&'t str>> {
    let count = piece_count(text.len());
    let mut cuts: Vec<usize> = Vec::with_capacity(count);
    for k in 1..count {
        let target = text.len() * k / count;
        let i = bounds.partition_point(|&b| b < target);
        match bounds.get(i) {
            Some(&c) if cuts.last().is_none_or(|&l| c > l) => cuts.push(c),
            _ => {}
        }
    }
    let starts = std::iter::once(0).chain(cuts.iter().map(|&c| c + 1));
    let ends = cuts.iter().copied().chain(std::iter::once(text.len()));
    let pieces: Vec<&str> = starts.zip(ends).map(|(a, b)| &text[a..b]).collect();
    let blank = pieces.iter().any(|p| p.trim().is_empty());
    (!blank || pieces.len() == 1 && !after_cut).then_some(pieces)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::parse_references_text;

    /// Images and captions as (raw id, captions), to compare.
    fn rows(r: &References) -> Vec<(Value, Vec<String>)> {
        r.images
            .iter()
            .map(|(id, caps)| (id.raw.clone(), caps.clone()))
            .collect()
    }

    fn in_blocks(text: &str, block: usize, push: usize) -> Option<References> {
        let mut b = CocoBlocks::with_block(block);
        for piece in text.as_bytes().chunks(push) {
            if !b.push(piece) {
                return None;
            }
        }
        b.finish()
    }

    /// A COCO file: `images` first (one unlisted image's annotations too), captions with
    /// escapes and multi-byte characters, blanks of every kind between elements; `tricky`:
    /// `},` in strings and nested objects in annotations.
    fn coco(n: usize, after: &str, tricky: bool) -> String {
        let images: Vec<String> = (0..n)
            .map(|i| match i % 3 {
                0 => format!("{{\"id\": {i}}}"),
                1 => format!("{{\"id\": \"s{i}\", \"file\": \"x\"}}"),
                _ => format!("{{\"id\": {i}.0}}"),
            })
            .collect();
        let mut anns = Vec::new();
        for k in 0..4 * n + 3 {
            let i = k % (n + 1);
            let id = match i % 3 {
                _ if i == n => "\"unlisted\"".to_owned(),
                1 => format!("\"s{i}\""),
                _ => i.to_string(),
            };
            let caption = match k % 5 {
                0 | 2 if !tricky => format!("a dog {k}"),
                0 => format!("a man {k} riding}}, a horse"),
                1 => format!("caf\u{e9} \\\"quoted\\\" {k} \u{1F600}"),
                2 => format!("{{\\\"x\\\": [1,{{}}],}} {k}"),
                3 => String::new(),
                _ => format!("  spaced\\n{k}  "),
            };
            let blank = ["", " ", "\n", "\r\n\t "][k % 4];
            let extra = if tricky && k % 3 == 0 {
                ", \"segmentation\": {\"counts\": [1, {}], \"size\": [2]}, \"x\": 1"
            } else {
                ""
            };
            anns.push(format!(
                "{{\"image_id\": {id},{blank}\"id\": {k}, \"caption\": \"{caption}\"{extra}}}{blank}"
            ));
        }
        format!(
            "{{\"info\": {{\"v\": [1, {{}}]}}, \"images\": [{}],\n \"annotations\": [{}]{after}}}",
            images.join(", "),
            anns.join(",")
        )
    }

    #[test]
    fn blocks_give_what_the_whole_text_gives() {
        let cases = [0usize, 1, 7, 60].into_iter().flat_map(|n| {
            ["", ", \"licenses\": [{\"a\": 1}, {\"b\": [2]}]"]
                .into_iter()
                .flat_map(move |after| [false, true].map(|tricky| (n, after, tricky)))
        });
        for (n, after, tricky) in cases {
            {
                let text = coco(n, after, tricky);
                let whole = parse_references_text(&text, "x").unwrap();
                for block in [1, 16, 97, 400, 1 << 20] {
                    for push in [1, 5, 64, 3000] {
                        let got = in_blocks(&text, block, push)
                            .unwrap_or_else(|| panic!("refused: n {n} block {block} {after}"));
                        assert_eq!(rows(&got), rows(&whole), "n {n} block {block}");
                    }
                }
            }
        }
    }

    #[test]
    fn blocks_refuse_what_is_not_a_plain_valid_coco_file() {
        let good = coco(9, "", true);
        let close = good.rfind(']').unwrap();
        let bad = [
            // A trailing comma after the last annotation, and two commas.
            format!("{},\n{}", &good[..close], &good[close..]),
            good.replacen("},{\"image_id\"", "},,{\"image_id\"", 1),
            // `images` null, after the annotations, absent.
            good.replacen("\"images\": [", "\"images\": null, \"x\": [", 1),
            "{\"annotations\": [{\"image_id\": 1, \"caption\": \"a\"}], \"images\": [{\"id\": 1}]}"
                .to_owned(),
            "{\"annotations\": [{\"image_id\": 1, \"caption\": \"a\"}]}".to_owned(),
            // Invalid after the array, a caption that is not a string, a bad id, cut short.
            format!("{}]]}}", &good[..close]),
            good.replacen("\"caption\": \"\"", "\"caption\": 5", 1),
            good.replacen("\"image_id\": 0", "\"image_id\": [0]", 1),
            good[..good.len() - 1].to_owned(),
            // Not an object; JSON lines.
            format!("[{good}]"),
            format!("{good}\n{good}\n"),
        ];
        for text in &bad {
            assert_ne!(text, &good);
            for block in [1, 16, 97, 1 << 20] {
                for push in [1, 7, 4096] {
                    if let Some(got) = in_blocks(text, block, push) {
                        // Only a valid COCO file gets through, with its own references.
                        let whole = parse_references_text(text, "x")
                            .unwrap_or_else(|e| panic!("accepted invalid {text:?}: {e}"));
                        assert_eq!(rows(&got), rows(&whole));
                        panic!("a file this path should refuse was taken: {text:?}");
                    }
                }
            }
        }
    }
}
