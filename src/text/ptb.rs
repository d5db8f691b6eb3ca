//! PLACEHOLDER: replaced by the pycocoevalcap-exact PTB tokenizer.

/// Tokenizes a stream of captions as pycocoevalcap's tokenizer step does (one output per caption).
pub fn tokenize_stream<S: AsRef<str>>(captions: &[S]) -> Vec<String> {
    captions
        .iter()
        .map(|c| {
            let lower = c.as_ref().to_lowercase();
            lower
                .split(|ch: char| !ch.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}
