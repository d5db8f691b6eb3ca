//! capscore: the MS-COCO caption metrics of pycocoevalcap 1.2, computed natively.
#![forbid(unsafe_code)]

pub mod metrics;
pub mod resources;
pub mod text;
