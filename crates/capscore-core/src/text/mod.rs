//! Text processing: the pycocoevalcap-compatible PTB tokenizer. Its output is split into words
//! by [`crate::stats::split`].

pub mod ptb;
