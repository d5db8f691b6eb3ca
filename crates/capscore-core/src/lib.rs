//! capscore-core: the MS-COCO caption metrics of pycocoevalcap 1.2, computed natively.
//!
//! This crate is the computing core. It knows nothing of HTTP, async runtimes or command lines
//! (no axum, tokio, hyper, clap or Swagger UI in its dependency tree): the service and CLI
//! (the root `capscore` package) and the Python extension (`python/`) are front ends on top.
//!
//! # Layout
//!
//! One direction of imports, top to bottom; nothing below imports anything above it.
//!
//! | module | owns | must not |
//! | --- | --- | --- |
//! | [`dataset`] | registered datasets: a [`engine::ReferenceSource`] with cached tokenization, document frequencies, SPICE graphs; persistence | know about HTTP |
//! | [`engine`] | [`engine::score`], the one entry point: join, tokenize, one step per metric, the report types; on top of it split tables, paired comparison and several candidates per image (`leaderboard.rs`, `compare.rs`, `multi.rs`) | read files |
//! | [`pretokenized`] | per-image BLEU and ROUGE-L of pre-tokenized captions, borrowed (pycocoevalcap's `Bleu` / `Rouge` calls) | tokenize, read files |
//! | [`reward`] | CIDEr-D / BLEU-4 rewards with a fixed document-frequency table (SCST training) | read files |
//! | [`resources`] | fetch (pip download, sha256, compact caches) and load (all file reading) | score |
//! | [`metrics`] | bleu, rouge, cider, meteor/, spice/ (incl. the SPICE pipeline): pure computation | touch the filesystem or the network |
//! | [`nlp`] | the native tagger/parser, the lemmatizer, the one `unsafe` sgemm call | touch the filesystem |
//! | [`stats`] | the one n-gram statistics pipeline: word splitter, interner, n-gram keys and tables, batch counting, the partitioned document-frequency counter and tables | know about metrics' reports |
//! | [`text`] | the pycocoevalcap-compatible PTB tokenizer | anything else |
//! | [`files`] | reading an input file: plain or gzip (with a bound on expansion), UTF-8 | parse it |
//! | [`input`] | ids, references, candidates, batches, the COCO/map formats | read files |
//! | [`error`] (at the root: [`ErrorCode`], [`InputError`]) | the one table of stable error codes (code, HTTP status, title, meaning) | depend on HTTP crates |
//!
//! A request goes `engine::score` (`engine/mod.rs`) -> a step (`engine/ngram.rs`,
//! `engine/meteor.rs`, `engine/spice.rs`) -> [`metrics`].
//!
//! # Features
//!
//! - `openapi`: derives `utoipa::ToSchema` on the report types (the service's OpenAPI document).
//! - `test-support`: test and bench hooks (METEOR's search counters and score bounds).
#![deny(unsafe_code)]

pub use error::{ErrorCode, InputError};

pub mod dataset;
pub mod engine;
pub mod error;
pub mod files;
pub mod heap;
pub mod input;
pub mod metrics;
pub mod nlp;
pub mod pretokenized;
pub mod resources;
pub mod reward;
pub mod stats;
pub mod text;
