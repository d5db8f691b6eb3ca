//! Runtime data of the metrics that need upstream files: where it lives, obtaining it, reading
//! it.
//!
//! Owns every file and network access of the metrics: [`fetch`] downloads (through pip),
//! verifies and converts the upstream artefacts into the compact cache; [`load`] reads the cache
//! and builds the metric and parser objects from bytes and strings through their constructors;
//! [`ResourceArgs`] is the command-line/server configuration (cache folder, offline) with the
//! fetch-if-needed-then-load helpers. [`ResourceError`] is the one error type of all of it.
//!
//! Imports go one way: `resources` -> [`crate::metrics`], [`crate::nlp`]; never the reverse,
//! and nothing here imports the CLI or the server.
//!
//! Everything METEOR needs comes from one artefact, the pycocoevalcap 1.2 wheel (spec
//! `METEOR-resources.md`); the parser model from the pinned `en_core_web_sm` 3.8 wheel. The
//! cache layout:
//!
//! | file | origin | licence |
//! |---|---|---|
//! | `meteor/english.synsets`, `english.exceptions`, `COPYING.WORDNET` | jar `synonym/` | WordNet 3.0 |
//! | `meteor/english.words` | jar `function/` | LGPL (Meteor) |
//! | `meteor/english.prefixes` | jar `nonbreaking/` | LGPL (Moses) |
//! | `meteor/paraphrase-en.bin` | compact form of wheel `meteor/data/paraphrase-en.gz` | LGPL (Meteor) |
//! | `nlp/model.bin`, `nlp/lemma_exc.tsv`, `nlp/LICENSE` | converted `en_core_web_sm` 3.8 | MIT |
//! | `*/manifest.json` | hashes and sizes of all of the above | – |

mod cache;
mod config;
pub mod fetch;
pub mod load;

pub use cache::*;
pub use config::{Loaded, ResourceArgs};
