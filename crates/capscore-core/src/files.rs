//! Reading an input file (references, candidates, a caption list) as every front end reads it:
//! plain or gzip-compressed (recognised by its magic bytes, not its name), UTF-8, with a bound
//! on what a compressed file may expand to, so a small "gzip bomb" is a clear error instead of
//! gigabytes of memory.

use std::io::Read;
use std::path::Path;

use crate::error::{ErrorCode, InputError};
use crate::input;

/// A compressed file may expand to at most this many times its own size...
pub const MAX_GZIP_RATIO: u64 = 64;
/// ...but always to at least this much (small files compress further than large ones)...
pub const MIN_GZIP_ALLOWANCE: u64 = 16 << 20;
/// ...and never to more than this.
pub const MAX_DECOMPRESSED: u64 = 1 << 30;

/// The bytes a compressed file of `compressed` bytes may expand to.
pub fn gzip_allowance(compressed: u64) -> u64 {
    compressed
        .saturating_mul(MAX_GZIP_RATIO)
        .clamp(MIN_GZIP_ALLOWANCE, MAX_DECOMPRESSED)
}

/// The text of an input file; `what` names it in errors (`--refs`, `references`). A missing
/// file is `file_not_found`; a folder or an unreadable file `invalid_format`; a compressed file
/// that expands past [`gzip_allowance`] `limit_exceeded` naming the limit; bytes that are not
/// UTF-8 `invalid_json`.
pub fn read_text(path: &Path, what: &str) -> Result<String, InputError> {
    let cannot = |e: std::io::Error| {
        if e.kind() == std::io::ErrorKind::NotFound {
            return InputError::new(
                ErrorCode::FileNotFound,
                format!("{what}: no such file: {}", path.display()),
            );
        }
        InputError::new(
            ErrorCode::InvalidFormat,
            format!("{what}: cannot read {}: {e}", path.display()),
        )
    };
    if path.is_dir() {
        return Err(InputError::new(
            ErrorCode::InvalidFormat,
            format!("{what}: {} is a directory, not a file", path.display()),
        ));
    }
    let mut bytes = std::fs::read(path).map_err(cannot)?;
    if bytes.starts_with(&[0x1f, 0x8b]) {
        bytes = gunzip(&bytes, what, path)?;
    }
    String::from_utf8(bytes).map_err(|e| {
        InputError::new(
            ErrorCode::InvalidJson,
            format!("{what}: {} is not valid UTF-8: {e}", path.display()),
        )
    })
}

/// The references of a references file, as [`read_text`] then
/// [`input::parse_references_text_with`] give them, with the same errors. A plain COCO
/// annotation file (its `images` before its `annotations`, as COCO's own files are) is parsed
/// block by block as it is read ([`input::CocoBlocks`]), its text never held whole (issue 27);
/// any other file, or one that path refuses, is read whole and parsed as text.
pub fn read_references(
    path: &Path,
    what: &str,
    split: Option<input::KarpathySplit>,
) -> Result<input::References, InputError> {
    if split.is_none() {
        if let Some(refs) = references_in_blocks(path) {
            return Ok(refs);
        }
    }
    let text = read_text(path, what)?;
    input::parse_references_text_with(&text, what, split)
}

/// [`read_references`]' block path: `None` when the file cannot be opened or read, or is
/// refused (the text path then reports what is wrong).
fn references_in_blocks(path: &Path) -> Option<input::References> {
    // Checked before opening: opening a named pipe would take its writer's data from the
    // text path's own open.
    if !std::fs::metadata(path).ok()?.is_file() {
        return None;
    }
    let mut f = std::fs::File::open(path).ok()?;
    let mut blocks = input::CocoBlocks::default();
    let mut block = vec![0u8; 4 << 20];
    loop {
        match f.read(&mut block) {
            Ok(0) => return blocks.finish(),
            Ok(n) => {
                if !blocks.push(&block[..n]) {
                    return None;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
}

/// Decompresses gzip data (every member), refusing to expand past [`gzip_allowance`].
fn gunzip(compressed: &[u8], what: &str, path: &Path) -> Result<Vec<u8>, InputError> {
    let allowance = gzip_allowance(compressed.len() as u64);
    let mut out = Vec::new();
    let mut reader = flate2::read::MultiGzDecoder::new(compressed).take(allowance + 1);
    reader.read_to_end(&mut out).map_err(|e| {
        InputError::new(
            ErrorCode::InvalidFormat,
            format!("{what}: cannot decompress {}: {e}", path.display()),
        )
    })?;
    if out.len() as u64 > allowance {
        return Err(InputError::new(
            ErrorCode::LimitExceeded,
            format!(
                "{what}: {} expands past {allowance} bytes: a compressed input may expand to {MAX_GZIP_RATIO} times its size ({} bytes here; at least {MIN_GZIP_ALLOWANCE}, at most {MAX_DECOMPRESSED} bytes); decompress it yourself if it is genuine",
                path.display(),
                compressed.len()
            ),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn plain_and_gzip_files_read_the_same() {
        let d = tempfile::tempdir().unwrap();
        let text = "{\"1\": [\"a dog runs\"]}";
        std::fs::write(d.path().join("a.json"), text).unwrap();
        std::fs::write(d.path().join("a.bin"), gz(text.as_bytes())).unwrap();
        assert_eq!(read_text(&d.path().join("a.json"), "x").unwrap(), text);
        assert_eq!(read_text(&d.path().join("a.bin"), "x").unwrap(), text);
        let e = read_text(&d.path().join("none"), "--refs").unwrap_err();
        assert_eq!(e.code, ErrorCode::FileNotFound);
        assert_eq!(
            read_text(d.path(), "x").unwrap_err().code,
            ErrorCode::InvalidFormat
        );
    }

    /// Issue 27: a COCO file larger than a block is parsed block by block as it is read, to
    /// the references its whole text gives; any other file, or a bad one, is read whole, with
    /// the text path's result or error.
    #[test]
    fn references_read_in_blocks_equal_the_text_path() {
        let d = tempfile::tempdir().unwrap();
        let n = 60_000;
        let images: Vec<String> = (0..n).map(|i| format!("{{\"id\": {i}}}")).collect();
        let anns: Vec<String> = (0..4 * n + 9)
            .map(|k| {
                format!(
                    "{{\"image_id\": {}, \"id\": {k}, \"caption\": \"a man {k} rides a horse along the beach at dusk\"}}",
                    (k * 7919) % (n + 3)
                )
            })
            .collect();
        let text = format!(
            "{{\"images\": [{}], \"annotations\": [\n{}\n]}}",
            images.join(", "),
            anns.join(",\n")
        );
        assert!(
            text.len() > input::blocks::BLOCK + (4 << 20),
            "{}",
            text.len()
        );
        let rows = |r: &input::References| format!("{:?}", r.images);
        let whole = input::parse_references_text(&text, "x").unwrap();
        let path = d.path().join("coco.json");
        std::fs::write(&path, &text).unwrap();
        let blocks = references_in_blocks(&path).expect("taken block by block");
        assert_eq!(rows(&blocks), rows(&whole));
        assert_eq!(
            rows(&read_references(&path, "x", None).unwrap()),
            rows(&whole)
        );
        // Compressed: read whole, same references.
        let gz_path = d.path().join("coco.json.gz");
        std::fs::write(&gz_path, gz(text.as_bytes())).unwrap();
        assert!(references_in_blocks(&gz_path).is_none());
        assert_eq!(
            rows(&read_references(&gz_path, "x", None).unwrap()),
            rows(&whole)
        );
        // A trailing comma after the last annotation: the text path's error.
        let bad = text.replacen("\n]}", ",\n]}", 1);
        assert_ne!(bad, text);
        std::fs::write(&path, &bad).unwrap();
        let want = input::parse_references_text(&bad, "x").unwrap_err();
        let got = read_references(&path, "x", None).unwrap_err();
        assert_eq!((got.code, got.message), (want.code, want.message));
        let missing = read_references(&d.path().join("none"), "--refs", None).unwrap_err();
        assert_eq!(missing.code, ErrorCode::FileNotFound);
    }

    /// Issue 29: a 2 MB gzip bomb (zeros) is refused, naming the limit, without expanding it.
    #[test]
    fn a_gzip_bomb_is_refused_naming_the_limit() {
        let d = tempfile::tempdir().unwrap();
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        let zeros = vec![b' '; 1 << 20];
        for _ in 0..2048 {
            e.write_all(&zeros).unwrap();
        }
        let bomb = e.finish().unwrap();
        assert!(bomb.len() < 4 << 20, "{}", bomb.len());
        std::fs::write(d.path().join("bomb.json.gz"), &bomb).unwrap();
        let err = read_text(&d.path().join("bomb.json.gz"), "--refs").unwrap_err();
        assert_eq!(err.code, ErrorCode::LimitExceeded);
        assert!(err.message.contains("64 times"), "{}", err.message);
        assert!(gzip_allowance(bomb.len() as u64) < 300 << 20);
    }
}
