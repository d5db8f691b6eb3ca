//! An n-gram of order 1..=4 over word ids, the value every part of `stats` and its callers
//! exchange.

/// Highest n-gram order any metric here uses.
pub const MAX_ORDER: usize = 4;

/// A word n-gram of order 1..=4 over interned word ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ngram(pub [u32; MAX_ORDER]);

impl Ngram {
    /// Filler for the unused slots of a lower-order n-gram; never a word id.
    pub const PAD: u32 = u32::MAX;

    /// The n-gram `words` (1 to 4 ids).
    pub fn new(words: &[u32]) -> Ngram {
        let mut a = [Ngram::PAD; MAX_ORDER];
        a[..words.len()].copy_from_slice(words);
        Ngram(a)
    }

    /// Order of the n-gram (number of words).
    pub fn order(&self) -> usize {
        self.0.iter().take_while(|&&w| w != Ngram::PAD).count()
    }
}
