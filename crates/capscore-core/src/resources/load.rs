//! Loading: all reading of the resource cache, and the loaders that turn its files into the
//! metric and parser objects through their constructors from bytes and strings
//! ([`Meteor::from_parts`], [`Synonyms::from_texts`], [`Model::from_bytes`],
//! [`Lemmatizer::from_tsv`], [`Spice::new`]).
//!
//! Errors name the missing or malformed file. Must not: download or write anything (that is
//! [`super::fetch`]).

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::cache::{
    io_err, Manifest, ResourceError, EXCEPTIONS_FILE, FUNCTION_WORDS_FILE, JAR_FILES,
    MANIFEST_FILE, MANIFEST_VERSION, METEOR_SUBDIR, NLP_LEMMA_EXC_FILE, NLP_MANIFEST_VERSION,
    NLP_MODEL_FILE, NLP_SUBDIR, NLP_WHEEL_SHA256, PARAPHRASE_FILE, PREFIXES_FILE, SYNSETS_FILE,
    WHEEL_SHA256,
};
use crate::metrics::meteor::{Meteor, ParaphraseTable, Synonyms};
use crate::metrics::spice::{Spice, SynonymSource};
use crate::nlp::lemma::Lemmatizer;
use crate::nlp::model::Model;
use crate::nlp::Nlp;

/// Lower-case hex of `d`.
pub(super) fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// The sha256 of a file, read in 1 MiB blocks.
pub(super) fn sha256_file(path: &Path) -> Result<String, ResourceError> {
    let mut f = fs::File::open(path).map_err(io_err(path))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let k = f.read(&mut buf).map_err(io_err(path))?;
        if k == 0 {
            break;
        }
        h.update(&buf[..k]);
    }
    Ok(hex(&h.finalize()))
}

/// The manifest of a resource folder, if there is a readable one.
pub(super) fn read_manifest(dir: &Path) -> Option<Manifest> {
    let text = fs::read_to_string(dir.join(MANIFEST_FILE)).ok()?;
    serde_json::from_str(&text).ok()
}

/// True when `<cache_dir>/meteor` holds a complete cache: a manifest of the current version
/// and every file it lists with the recorded size (hashes were checked when it was written; use
/// [`verify_meteor`] for a full re-check).
pub fn meteor_ready(cache_dir: &Path) -> bool {
    cache_complete(
        &cache_dir.join(METEOR_SUBDIR),
        MANIFEST_VERSION,
        WHEEL_SHA256,
        Some(JAR_FILES.len() + 1),
    )
}

/// True when `dir` has a manifest of `version` made from the wheel `wheel_sha256` (listing
/// `files` files, when given) and every file it lists, with the recorded size.
fn cache_complete(dir: &Path, version: u32, wheel_sha256: &str, files: Option<usize>) -> bool {
    let Some(m) = read_manifest(dir) else {
        return false;
    };
    m.version == version
        && m.wheel_sha256 == wheel_sha256
        && files.is_none_or(|n| m.files.len() == n)
        && m.files.iter().all(|e| {
            fs::metadata(dir.join(&e.file))
                .map(|md| md.is_file() && md.len() == e.bytes)
                .unwrap_or(false)
        })
}

/// Re-hashes every cached METEOR file against the manifest.
pub fn verify_meteor(cache_dir: &Path) -> Result<(), ResourceError> {
    let dir = cache_dir.join(METEOR_SUBDIR);
    let m = read_manifest(&dir).ok_or_else(|| ResourceError::Missing {
        what: "METEOR cache manifest".into(),
        path: dir.join(MANIFEST_FILE),
    })?;
    for e in &m.files {
        let actual = sha256_file(&dir.join(&e.file))?;
        if actual != e.sha256 {
            return Err(ResourceError::Verify {
                file: e.file.clone(),
                expected: e.sha256.clone(),
                actual,
            });
        }
    }
    Ok(())
}

/// True when `<cache>/nlp` holds a complete converted model of the current version.
pub fn nlp_ready(cache_dir: &Path) -> bool {
    cache_complete(
        &cache_dir.join(NLP_SUBDIR),
        NLP_MANIFEST_VERSION,
        NLP_WHEEL_SHA256,
        None,
    )
}

/// Reads a UTF-8 resource file `dir/name`, naming it when it is missing.
fn read_resource(dir: &Path, name: &str) -> Result<String, ResourceError> {
    let path = dir.join(name);
    if !path.is_file() {
        return Err(ResourceError::Missing {
            what: format!("METEOR resource {name}"),
            path,
        });
    }
    let bytes = fs::read(&path).map_err(io_err(&path))?;
    String::from_utf8(bytes).map_err(|_| ResourceError::Format {
        file: path,
        msg: "not UTF-8".into(),
    })
}

/// The folder holding the METEOR files inside a cache directory: `dir/meteor` if it exists,
/// else `dir` itself.
pub fn meteor_dir(dir: &Path) -> PathBuf {
    let sub = dir.join(METEOR_SUBDIR);
    if sub.is_dir() {
        sub
    } else {
        dir.to_path_buf()
    }
}

/// Loads METEOR from the compact cache written by [`super::fetch::meteor`]. `dir` is the cache
/// directory (the METEOR files live in its `meteor/` folder) or that folder itself. The error
/// names the missing or malformed file.
pub fn meteor(dir: &Path) -> Result<Meteor, ResourceError> {
    let dir = meteor_dir(dir);
    let prefixes = read_resource(&dir, PREFIXES_FILE)?;
    let fw_text = read_resource(&dir, FUNCTION_WORDS_FILE)?;
    let para_path = dir.join(PARAPHRASE_FILE);
    if !para_path.is_file() {
        return Err(ResourceError::Missing {
            what: "METEOR paraphrase table (compact form)".into(),
            path: para_path,
        });
    }
    let (para, synonyms) = std::thread::scope(|s| {
        let para = s.spawn(|| -> Result<ParaphraseTable, ResourceError> {
            let t = std::time::Instant::now();
            let bytes = fs::read(&para_path).map_err(io_err(&para_path))?;
            let read = t.elapsed();
            let table = ParaphraseTable::from_bytes(bytes).map_err(|msg| ResourceError::Format {
                file: para_path.clone(),
                msg,
            });
            tracing::debug!(?read, total = ?t.elapsed(), "METEOR paraphrase table loaded");
            table
        });
        let t = std::time::Instant::now();
        let syn = synonyms_in(&dir);
        tracing::debug!(elapsed = ?t.elapsed(), "METEOR synonyms loaded");
        let para = para.join().unwrap_or_else(|_| {
            Err(ResourceError::Format {
                file: para_path.clone(),
                msg: "loader thread panicked".into(),
            })
        });
        (para, syn)
    });
    Ok(Meteor::from_parts(&prefixes, &fw_text, synonyms?, para?))
}

/// Loads METEOR's WordNet synonym data (`english.synsets`, `english.exceptions`) on its own.
/// `dir` is the cache directory or its `meteor/` folder.
pub fn synonyms(dir: &Path) -> Result<Synonyms, ResourceError> {
    synonyms_in(&meteor_dir(dir))
}

/// [`synonyms`] from the METEOR folder itself.
fn synonyms_in(dir: &Path) -> Result<Synonyms, ResourceError> {
    let syn = read_resource(dir, SYNSETS_FILE)?;
    let exc = read_resource(dir, EXCEPTIONS_FILE)?;
    Synonyms::from_texts(&syn, &exc).map_err(|msg| ResourceError::Format {
        file: dir.join(SYNSETS_FILE),
        msg,
    })
}

/// Loads the converted parser model from `<cache>/nlp/model.bin`.
pub fn nlp_model(cache_dir: &Path) -> Result<Model, ResourceError> {
    let path = cache_dir.join(NLP_SUBDIR).join(NLP_MODEL_FILE);
    if !path.is_file() {
        return Err(ResourceError::Missing {
            what: "the English parser model (en_core_web_sm 3.8)".into(),
            path,
        });
    }
    let bytes = fs::read(&path).map_err(io_err(&path))?;
    Model::from_bytes(&bytes).map_err(|e| ResourceError::Format {
        file: path,
        msg: e.0,
    })
}

/// Loads the English tagger/parser from `<cache>/nlp/model.bin`.
pub fn nlp(cache_dir: &Path) -> Result<Nlp, ResourceError> {
    Ok(Nlp::new(nlp_model(cache_dir)?))
}

/// Reads the lemma exceptions file of the cache (`<cache>/nlp/lemma_exc.tsv`).
pub fn lemma_exceptions(cache_dir: &Path) -> Result<String, ResourceError> {
    let dir = cache_dir.join(NLP_SUBDIR);
    let path = dir.join(NLP_LEMMA_EXC_FILE);
    if !path.is_file() {
        return Err(ResourceError::Missing {
            what: "the lemma exception lists".into(),
            path,
        });
    }
    read_resource(&dir, NLP_LEMMA_EXC_FILE)
}

/// The lemmatizer with the lemma exception lists of the cache (`<cache>/nlp/`).
pub fn lemmatizer(cache_dir: &Path) -> Result<Lemmatizer, ResourceError> {
    let text = lemma_exceptions(cache_dir)?;
    Lemmatizer::from_tsv(&text).map_err(|msg| ResourceError::Format {
        file: cache_dir.join(NLP_SUBDIR).join(NLP_LEMMA_EXC_FILE),
        msg,
    })
}

/// Loads SPICE: the parser model and lemma exceptions from `<cache>/nlp/`, with `synonyms`.
pub fn spice(cache_dir: &Path, synonyms: SynonymSource) -> Result<Spice, ResourceError> {
    Ok(Spice::new(
        nlp(cache_dir)?,
        lemmatizer(cache_dir)?,
        synonyms,
    ))
}

/// Loads SPICE with a standalone copy of METEOR's synonym data.
pub fn spice_standalone(cache_dir: &Path) -> Result<Spice, ResourceError> {
    let syn = synonyms(cache_dir)?;
    spice(cache_dir, SynonymSource::Own(syn))
}
