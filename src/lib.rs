//! capscore: the MS-COCO caption metrics of pycocoevalcap 1.2, computed natively.
//!
//! Layers, one way only: `cli`/`server` -> [`engine`] -> [`metrics`], [`text`], [`corpus`].
#![deny(unsafe_code)]

pub mod cli;
pub mod corpus;
pub mod dataset;
pub mod engine;
pub mod input;
pub mod metrics;
pub mod nlp;
pub mod resources;
pub mod server;
pub mod text;
