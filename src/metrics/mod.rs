//! The caption metrics.

pub mod meteor;
