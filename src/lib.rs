//! capscore: the caption-evaluation service and command line.
//!
//! The computing core is the `capscore-core` crate (`crates/capscore-core`); this package adds
//! the front ends that need an async runtime, HTTP or a command line:
//!
//! | module | owns | must not |
//! | --- | --- | --- |
//! | [`cli`] | clap commands; maps errors to exit codes | compute, or be imported by the core |
//! | [`server`] | axum: config, state, auth, errors, telemetry, OpenAPI, `routes/{score,compare,datasets,ops}` | compute metrics (it calls the core's engine) |
//!
//! The core's modules are re-exported under the same names, so `capscore::engine` is
//! `capscore_core::engine`.
#![deny(unsafe_code)]

pub use capscore_core::{
    dataset, engine, error, files, input, metrics, nlp, pretokenized, resources, reward, stats,
    text, ErrorCode, InputError,
};

pub mod cli;
pub mod flags;
pub mod memory;
pub mod server;
