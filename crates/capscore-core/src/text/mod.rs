//! Text processing: the pycocoevalcap-compatible PTB tokenizer, and the compact lists its output
//! is kept in. Its output is split into words by [`crate::stats::split`].

pub mod list;
pub mod ptb;

pub use list::{ImageTexts, Texts};
