//! capscore: the MS-COCO caption metrics of pycocoevalcap 1.2, computed natively.
//!
//! # Layout
//!
//! One direction of imports, top to bottom; nothing below imports anything above it.
//!
//! | module | owns | must not |
//! | --- | --- | --- |
//! | [`cli`] | clap commands; maps errors to exit codes | compute, or be imported |
//! | [`server`] | axum: config, state, auth, errors, telemetry, OpenAPI, `routes/{score,compare,datasets,ops}` | compute metrics (it calls [`engine::score`]) |
//! | [`dataset`] | registered datasets: a [`engine::ReferenceSource`] with cached tokenization, document frequencies, SPICE graphs; persistence | know about HTTP |
//! | [`engine`] | [`engine::score`], the one entry point: join, tokenize, one step per metric, the report types; on top of it split tables, paired comparison and several candidates per image (`leaderboard.rs`, `compare.rs`, `multi.rs`) | read files |
//! | [`pretokenized`] | per-image BLEU and ROUGE-L of pre-tokenized captions, borrowed (pycocoevalcap's `Bleu` / `Rouge` calls) | tokenize, read files |
//! | [`reward`] | CIDEr-D / BLEU-4 rewards with a fixed document-frequency table (SCST training) | read files |
//! | [`resources`] | fetch (pip download, sha256, compact caches) and load (all file reading) | score |
//! | [`metrics`] | bleu, rouge, cider, meteor/, spice/ (incl. the SPICE pipeline): pure computation | touch the filesystem or the network |
//! | [`nlp`] | the native tagger/parser, the lemmatizer, the one `unsafe` sgemm call | touch the filesystem |
//! | [`corpus`] | interning, n-gram counts, document-frequency tables | know about metrics' reports |
//! | [`text`] | the pycocoevalcap-compatible PTB tokenizer | anything else |
//! | [`input`] | ids, references, candidates, batches, the COCO/map formats, the stable error codes | read files |
//!
//! A request goes `server/routes/score.rs` -> [`engine::score`] (`engine/mod.rs`) -> a step
//! (`engine/ngram.rs`, `engine/meteor.rs`, `engine/spice.rs`) -> [`metrics`].
#![deny(unsafe_code)]

pub mod cli;
pub mod corpus;
pub mod dataset;
pub mod engine;
pub mod input;
pub mod metrics;
pub mod nlp;
pub mod pretokenized;
pub mod resources;
pub mod reward;
pub mod server;
pub mod text;
