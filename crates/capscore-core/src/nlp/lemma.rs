//! A Morpha-behaviour lemmatiser for SPICE's tuple strings (spec SPICE §6), written from the
//! behaviour described there and from observed official outputs; it is not derived from
//! Morpha's or CoreNLP's source.
//!
//! Dispatch on the Penn Treebank tag:
//! - `NNS`: plural -> singular: exception list, invariant and plural-only nouns, Latin
//!   plurals, suffix rules (`-ies`, `-ches`, `-shes`, `-xes`, `-sses`, `-zes`, `-oes`, `-s`);
//! - `NN`: unchanged (lowercased); `NNP`, `NNPS`: unchanged with case kept;
//! - `VBD`, `VBN`, `VBG`, `VBZ`: inflected -> base: forms of `be`/`have`/`do`, exception
//!   list, then `-s`/`-ed`/`-ing` rules with consonant undoubling and e-restoration;
//!   `VB`, `VBP`: base forms, unchanged except the forms of `be`/`have`/`do`;
//! - any other tag: unchanged (lowercased), except a few closed-class words (`an` -> `a`,
//!   object/possessive pronouns -> subject form, `n't` -> `not`, `ca`/`wo` -> `can`/`will`).
//!
//! Hyphenated words keep everything before the last hyphen and analyse the last part
//! (`3-year-olds` -> `3-year-old`).
//!
//! Exception data: WordNet's exception lists (`noun.exc`, `verb.exc`, ...) as shipped in the
//! spaCy English model's lookup tables (`lemma_exc`), read from a TSV file with lines
//! `noun|verb|adj|adv<TAB>form<TAB>lemma` ([`Lemmatizer::from_tsv`]). Only the noun and verb
//! lists are used (Morpha leaves adjectives and adverbs alone).

use std::collections::HashMap;

/// The lemmatiser: exception lists plus built-in rules.
#[derive(Debug, Clone, Default)]
pub struct Lemmatizer {
    noun: HashMap<String, String>,
    verb: HashMap<String, String>,
}

/// Noun forms whose official lemma differs from the WordNet exception list, or that need a
/// lemma the suffix rules cannot give (observed in the official parser output).
const NOUN_OVERRIDES: &[(&str, &str)] = &[("graffiti", "graffitus")];

/// Nouns left as they are when plural (invariant and plural-only nouns). Compounds ending in
/// one of the plural-only words behave the same (`sweatpants`).
const NOUN_INVARIANT: &[&str] = &[
    "aircraft",
    "barracks",
    "bison",
    "cattle",
    "clothes",
    "deer",
    "fish",
    "fries",
    "goggles",
    "headquarters",
    "jeans",
    "means",
    "moose",
    "news",
    "pants",
    "people",
    "police",
    "salmon",
    "scissors",
    "series",
    "sheep",
    "shorts",
    "species",
    "swine",
    "trousers",
];
/// Plural-only words also recognised at the end of a compound.
const PLURAL_ONLY_TAILS: &[&str] = &[
    "pants", "shorts", "jeans", "trousers", "goggles", "clothes", "scissors",
];

/// Singular nouns ending in `-ie` (their plural `-ies` only drops the `s`).
const IE_NOUNS: &[&str] = &[
    "auntie",
    "beanie",
    "birdie",
    "bootie",
    "brownie",
    "budgie",
    "calorie",
    "collie",
    "cookie",
    "cutie",
    "doggie",
    "eerie",
    "genie",
    "goalie",
    "hippie",
    "hoodie",
    "kiddie",
    "lassie",
    "movie",
    "necktie",
    "newbie",
    "ollie",
    "pixie",
    "prairie",
    "rookie",
    "selfie",
    "smoothie",
    "sweetie",
    "veggie",
    "walkie-talkie",
    "yuppie",
    "zombie",
];

/// Singular nouns ending in `-oe` (plural `-oes` drops only the `s`); also matched as the end
/// of a longer word for `shoe` (`horseshoes`, `snowshoes`).
const OE_NOUNS: &[&str] = &[
    "aloe",
    "canoe",
    "doe",
    "floe",
    "foe",
    "hoe",
    "mistletoe",
    "oboe",
    "roe",
    "shoe",
    "sloe",
    "throe",
    "tiptoe",
    "toe",
    "woe",
];

/// Singular nouns ending in `-che` (plural `-ches` drops only the `s`).
const CHE_NOUNS: &[&str] = &[
    "ache",
    "attache",
    "avalanche",
    "brioche",
    "cache",
    "cliche",
    "creche",
    "douche",
    "gouache",
    "headache",
    "microfiche",
    "moustache",
    "mustache",
    "niche",
    "panache",
    "pastiche",
    "psyche",
    "quiche",
    "toothache",
    "stomachache",
];

/// Singular nouns ending in `-s` (not `-ss`) whose plural adds `-es`.
const S_NOUNS: &[&str] = &[
    "abacus",
    "alias",
    "atlas",
    "bias",
    "bonus",
    "bus",
    "cactus",
    "campus",
    "canvas",
    "chorus",
    "circus",
    "focus",
    "citrus",
    "gas",
    "genus",
    "hibiscus",
    "iris",
    "lens",
    "lotus",
    "minibus",
    "octopus",
    "platypus",
    "rhinoceros",
    "sinus",
    "status",
    "syllabus",
    "trolleybus",
    "virus",
    "walrus",
];

/// Verb stems ending in a single `l` (or `z`/`s`) that double it before `-ed`/`-ing`.
const UNDOUBLE_STEMS: &[&str] = &[
    "annul", "bus", "cancel", "channel", "compel", "control", "counsel", "dial", "dispel",
    "distil", "duel", "enrol", "excel", "expel", "fuel", "fulfil", "funnel", "gas", "gravel",
    "impel", "instil", "jewel", "label", "level", "marvel", "model", "panel", "patrol", "pedal",
    "propel", "pummel", "quarrel", "quiz", "rebel", "refuel", "repel", "shovel", "signal",
    "snorkel", "spiral", "swivel", "total", "travel", "tunnel", "whiz",
];
/// Verb bases that end in a doubled consonant of their own.
const DOUBLE_BASES: &[&str] = &[
    "add", "burr", "butt", "ebb", "egg", "err", "inn", "mitt", "purr", "putt", "whirr",
];
/// Stems (after removing `-ed`/`-ing`) whose base adds a silent `e` although the general
/// tests below say no.
const E_STEMS: &[&str] = &[
    "ach",
    "adher",
    "ador",
    "aveng",
    "arrang",
    "bath",
    "bast",
    "bing",
    "breath",
    "challeng",
    "chang",
    "cloth",
    "coher",
    "compet",
    "complet",
    "condon",
    "conven",
    "creat",
    "cring",
    "declar",
    "delet",
    "deplet",
    "deplor",
    "derang",
    "dethron",
    "devot",
    "elop",
    "emot",
    "enthron",
    "escap",
    "estrang",
    "evok",
    "exchang",
    "excit",
    "exhal",
    "expedit",
    "explor",
    "extradit",
    "expung",
    "fring",
    "hast",
    "hing",
    "ignit",
    "ignor",
    "imping",
    "implor",
    "incit",
    "infring",
    "inhal",
    "interfer",
    "interven",
    "invit",
    "invok",
    "loath",
    "loung",
    "lung",
    "outscor",
    "overwrit",
    "partak",
    "past",
    "persever",
    "plung",
    "postpon",
    "prepar",
    "procreat",
    "promot",
    "provok",
    "rang",
    "rearrang",
    "recit",
    "recreat",
    "restor",
    "reunit",
    "rever",
    "revok",
    "rewrit",
    "scaveng",
    "scyth",
    "secret",
    "seeth",
    "sheath",
    "sooth",
    "spong",
    "swath",
    "tast",
    "teeth",
    "telephon",
    "tith",
    "twing",
    "underscor",
    "underwrit",
    "unit",
    "wast",
    "welcom",
    "writh",
    "compar",
    "ensnar",
    "bewar",
    "overcom",
    "aton",
];
/// Stems for which the general e-restoration tests wrongly say yes.
const NO_E_STEMS: &[&str] = &[
    "bias", "bus", "canvas", "chorus", "combat", "focus", "gas", "imperil", "kayak", "nonplus",
    "pencil", "stencil", "rev", "impeach", "strip",
];

fn is_vowel(c: u8) -> bool {
    matches!(c, b'a' | b'e' | b'i' | b'o' | b'u')
}

/// Vowel test at position `i` of `s`: a, e, i, o, u (except `u` after `q`), and `y` after a
/// consonant.
fn vowel_at(s: &[u8], i: usize) -> bool {
    let c = s[i];
    if c == b'u' && i > 0 && s[i - 1] == b'q' {
        return false;
    }
    if is_vowel(c) {
        return true;
    }
    c == b'y' && i > 0 && !is_vowel(s[i - 1])
}

/// Number of vowel groups (a rough syllable count).
fn syllables(s: &[u8]) -> usize {
    let mut n = 0;
    let mut prev = false;
    for i in 0..s.len() {
        let v = vowel_at(s, i);
        if v && !prev {
            n += 1;
        }
        prev = v;
    }
    n
}

/// Whether a verb stem left by removing `-ed`/`-ing` needs a restored silent `e`.
fn needs_e(stem: &str) -> bool {
    if NO_E_STEMS.contains(&stem) {
        return false;
    }
    if E_STEMS.contains(&stem) {
        return true;
    }
    let s = stem.as_bytes();
    let n = s.len();
    if n < 2 {
        return false;
    }
    let last = s[n - 1];
    let prev = s[n - 2];
    match last {
        b'v' | b'c' => return true,
        b'u' => return !is_vowel(prev) || prev == b'u',
        b'z' => return prev != b'z',
        b's' => return prev != b's',
        b'g' if matches!(prev, b'r' | b'l' | b'd') => return true,
        b'l' if !is_vowel(prev) && !matches!(prev, b'l' | b'r' | b'w' | b'y') => return true,
        _ => {}
    }
    // Consonant-vowel-consonant ending.
    let cvc = n >= 2
        && !vowel_at(s, n - 1)
        && !matches!(last, b'w' | b'x' | b'y' | b'h')
        && vowel_at(s, n - 2)
        && (n == 2 || !vowel_at(s, n - 3));
    if !cvc {
        return false;
    }
    if syllables(s) == 1 {
        return true;
    }
    let v = s[n - 2];
    match (v, last) {
        // decorate, compute, capture, admire, combine, decide, include, explode, invade,
        // precede, describe, assume, schedule, console, manage, compile, rename
        (b'a', b't') => true,
        (b'u', b't') | (b'u', b'r') | (b'i', b'r') | (b'i', b'n') => true,
        (_, b'd') => true,
        (b'i', b'b') | (b'u', b'm') | (b'u', b'l') | (b'o', b'l') | (b'a', b'g') => true,
        (b'i', b'l') | (b'a', b'm') => true,
        _ => false,
    }
}

/// Base form of a verb stem left by removing `-ed` or `-ing`.
fn verb_stem(stem: &str) -> String {
    let s = stem.as_bytes();
    let n = s.len();
    // A doubled final consonant after a single vowel (`running`, not `eatting`).
    let single_vowel = n >= 3 && vowel_at(s, n - 3) && (n == 3 || !vowel_at(s, n - 4));
    if single_vowel && s[n - 1] == s[n - 2] && !is_vowel(s[n - 1]) {
        let single = &stem[..n - 1];
        return match s[n - 1] {
            b'l' | b's' | b'z' | b'f' => {
                if UNDOUBLE_STEMS.contains(&single) {
                    single.to_string()
                } else {
                    stem.to_string()
                }
            }
            _ if DOUBLE_BASES.contains(&stem) => stem.to_string(),
            _ => single.to_string(),
        };
    }
    if needs_e(stem) {
        format!("{stem}e")
    } else {
        stem.to_string()
    }
}

/// A singular `-che` noun: one of [`CHE_NOUNS`], or a word ending in one of its longer
/// entries (`headache` but not `beache`).
fn che_noun(w: &str) -> bool {
    CHE_NOUNS
        .iter()
        .any(|t| w == *t || (t.len() >= 6 && w.ends_with(t)))
}

fn ends_with_any(w: &str, list: &[&str]) -> bool {
    list.iter().any(|t| w.ends_with(t))
}

impl Lemmatizer {
    /// Reads the exception lists: lines `noun|verb|adj|adv<TAB>form<TAB>lemma`; empty lines
    /// are skipped. The first line for a form wins.
    pub fn from_tsv(text: &str) -> Result<Lemmatizer, String> {
        let mut lem = Lemmatizer::default();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim_end_matches('\r');
            if line.is_empty() {
                continue;
            }
            let mut it = line.split('\t');
            let (Some(pos), Some(form), Some(lemma), None) =
                (it.next(), it.next(), it.next(), it.next())
            else {
                return Err(format!(
                    "lemma exceptions line {}: expected 3 tab-separated fields",
                    i + 1
                ));
            };
            if form.is_empty() || lemma.is_empty() {
                return Err(format!("lemma exceptions line {}: empty field", i + 1));
            }
            let table = match pos {
                "noun" => &mut lem.noun,
                "verb" => &mut lem.verb,
                "adj" | "adv" => continue,
                other => {
                    return Err(format!(
                        "lemma exceptions line {}: unknown part of speech {other:?}",
                        i + 1
                    ))
                }
            };
            table
                .entry(form.to_string())
                .or_insert_with(|| lemma.to_string());
        }
        Ok(lem)
    }

    /// Number of noun and verb exceptions loaded.
    pub fn len(&self) -> usize {
        self.noun.len() + self.verb.len()
    }

    /// True when no exceptions are loaded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The lemma of `word` tagged `tag` (Penn Treebank).
    pub fn lemma(&self, word: &str, tag: &str) -> String {
        if tag == "NNP" || tag == "NNPS" {
            return word.to_string();
        }
        let w = word.to_lowercase();
        match tag {
            "NNS" => self.hyphenated(&w, |x| self.noun_lemma(x)),
            "VBD" | "VBN" | "VBG" | "VBZ" => self.hyphenated(&w, |x| self.verb_lemma(x, tag)),
            // VB, VBP (and any other VB tag).
            t if t.starts_with("VB") => be_have_do(&w).map_or(w, str::to_string),
            _ => closed_class(&w, tag).map_or(w, str::to_string),
        }
    }

    /// Applies `f` to the whole word if it is an exception, else to the part after the last
    /// hyphen.
    fn hyphenated(&self, w: &str, f: impl Fn(&str) -> String) -> String {
        if self.noun.contains_key(w) || self.verb.contains_key(w) {
            return f(w);
        }
        match w.rfind('-') {
            Some(i) if i + 1 < w.len() => format!("{}{}", &w[..=i], f(&w[i + 1..])),
            _ => f(w),
        }
    }

    fn noun_lemma(&self, w: &str) -> String {
        if let Some((_, l)) = NOUN_OVERRIDES.iter().find(|(f, _)| *f == w) {
            return l.to_string();
        }
        if NOUN_INVARIANT.contains(&w) || ends_with_any(w, PLURAL_ONLY_TAILS) {
            return w.to_string();
        }
        if let Some(l) = self.noun.get(w) {
            return l.clone();
        }
        let n = w.len();
        if !w.ends_with('s') {
            if let Some(st) = w.strip_suffix("men") {
                return format!("{st}man");
            }
            // Latin and Greek plurals.
            if let Some(st) = w.strip_suffix("ae") {
                return format!("{st}a");
            }
            if n > 3 {
                if let Some(st) = w.strip_suffix("ata") {
                    return format!("{st}a");
                }
                if let Some(st) = w.strip_suffix('i') {
                    return format!("{st}us");
                }
            }
            return w.to_string();
        }
        if n <= 2 || w.ends_with("ss") || w.ends_with("us") || w.ends_with("sis") {
            return w.to_string();
        }
        let drop = |k: usize| w[..n - k].to_string();
        if w.ends_with("ies") {
            if n <= 4 || IE_NOUNS.contains(&&w[..n - 1]) {
                return drop(1);
            }
            return format!("{}y", &w[..n - 3]);
        }
        if w.ends_with("oes") {
            let one = &w[..n - 1];
            if OE_NOUNS.contains(&one) || one.ends_with("shoe") {
                return drop(1);
            }
            return drop(2);
        }
        if w.ends_with("ches") {
            let one = &w[..n - 1];
            return if che_noun(one) { drop(1) } else { drop(2) };
        }
        if w.ends_with("shes") || w.ends_with("xes") || w.ends_with("sses") || w.ends_with("zzes") {
            return drop(2);
        }
        if w.ends_with("zes") && n >= 4 {
            // waltzes -> waltz, prizes -> prize
            let c = w.as_bytes()[n - 4];
            return if is_vowel(c) { drop(1) } else { drop(2) };
        }
        if w.ends_with("ses") && S_NOUNS.contains(&&w[..n - 2]) {
            return drop(2);
        }
        drop(1)
    }

    fn verb_lemma(&self, w: &str, tag: &str) -> String {
        if let Some(l) = be_have_do(w) {
            return l.to_string();
        }
        if let Some(l) = self.verb.get(w) {
            return l.clone();
        }
        let n = w.len();
        match tag {
            "VBZ" => {
                if !w.ends_with('s') || w.ends_with("ss") || n <= 2 {
                    return w.to_string();
                }
                let drop = |k: usize| w[..n - k].to_string();
                if w.ends_with("ies") {
                    return if n <= 4 {
                        drop(1)
                    } else {
                        format!("{}y", &w[..n - 3])
                    };
                }
                if w.ends_with("oes") {
                    let one = &w[..n - 1];
                    return if OE_NOUNS.contains(&one) || one.ends_with("shoe") {
                        drop(1)
                    } else {
                        drop(2)
                    };
                }
                if che_noun(&w[..n - 1]) {
                    return drop(1);
                }
                if w.ends_with("sses")
                    || w.ends_with("shes")
                    || w.ends_with("ches")
                    || w.ends_with("xes")
                    || w.ends_with("zzes")
                {
                    return drop(2);
                }
                if w.ends_with("ses") && S_NOUNS.contains(&&w[..n - 2]) {
                    return drop(2);
                }
                drop(1)
            }
            "VBG" => {
                let Some(stem) = w.strip_suffix("ing") else {
                    return w.to_string();
                };
                if stem.len() < 2 || syllables(stem.as_bytes()) == 0 {
                    return w.to_string();
                }
                // seeing, fleeing, hoeing, canoeing, dyeing, eyeing, skiing
                if stem.ends_with("ee")
                    || stem.ends_with("oe")
                    || stem.ends_with("ye")
                    || stem.ends_with('i')
                {
                    return stem.to_string();
                }
                verb_stem(stem)
            }
            _ => {
                // VBD, VBN
                let Some(stem) = w.strip_suffix("ed") else {
                    return w.to_string();
                };
                if stem.is_empty() || syllables(stem.as_bytes()) == 0 {
                    return w.to_string();
                }
                if let Some(st) = w.strip_suffix("ied") {
                    return if n <= 4 {
                        w[..n - 1].to_string()
                    } else {
                        format!("{st}y")
                    };
                }
                // freed, agreed, continued, argued, canoed, tiptoed, dyed
                if stem.ends_with('e') || stem.ends_with('u') {
                    return w[..n - 1].to_string();
                }
                if stem.ends_with("oe") || OE_NOUNS.contains(&&w[..n - 1]) {
                    return w[..n - 1].to_string();
                }
                verb_stem(stem)
            }
        }
    }
}

/// Forms of `be`, `have` and `do` (any verb tag).
fn be_have_do(w: &str) -> Option<&'static str> {
    Some(match w {
        "is" | "are" | "was" | "were" | "am" | "been" | "being" | "be" | "'s" | "'re" | "'m" => {
            "be"
        }
        "has" | "had" | "having" | "have" | "'ve" => "have",
        "does" | "did" | "done" | "doing" | "do" => "do",
        _ => return None,
    })
}

/// Closed-class words with a lemma different from the lowercased word.
fn closed_class(w: &str, tag: &str) -> Option<&'static str> {
    Some(match (w, tag) {
        ("an", "DT") => "a",
        ("him", _) | ("his", _) if tag.starts_with("PRP") => "he",
        ("her", _) if tag.starts_with("PRP") => "she",
        ("them", _) | ("their", _) if tag.starts_with("PRP") => "they",
        ("me", _) if tag.starts_with("PRP") => "i",
        ("us", _) | ("our", _) if tag.starts_with("PRP") => "we",
        ("your", _) if tag.starts_with("PRP") => "you",
        ("n't", _) => "not",
        ("ca", "MD") => "can",
        ("wo", "MD") => "will",
        ("'ll", "MD") => "will",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lem() -> Lemmatizer {
        Lemmatizer::from_tsv(
            "noun\tmen\tman\nnoun\tleaves\tleaf\nnoun\tgeese\tgoose\nnoun\tchildren\tchild\n\
             verb\tridden\tride\nverb\tsat\tsit\nverb\tcaught\tcatch\nverb\tlying\tlie\n\
             adj\tbigger\tbig\n",
        )
        .unwrap()
    }

    /// Every short word over letters that reach the suffix rules (and a hyphen), under every
    /// tag the rules look at, gets a lemma without panicking ("zes" as a plural once read
    /// before the word's start).
    #[test]
    fn short_words_never_panic() {
        let l = lem();
        let alphabet = b"aeiosxzhc-";
        let tags = [
            "NN", "NNS", "NNP", "NNPS", "VB", "VBD", "VBG", "VBN", "VBP", "VBZ", "JJ", "JJR",
            "JJS", "RB", "RBR", "RBS", "MD",
        ];
        let mut words = vec![String::new()];
        let mut all = Vec::new();
        for _ in 0..4 {
            words = words
                .iter()
                .flat_map(|w| alphabet.iter().map(move |&c| format!("{w}{}", c as char)))
                .collect();
            all.extend(words.iter().cloned());
        }
        for w in &all {
            for t in tags {
                let out = l.lemma(w, t);
                assert!(!out.is_empty() || w.is_empty(), "{w:?}/{t}");
            }
        }
    }

    #[test]
    fn tsv_errors() {
        assert!(Lemmatizer::from_tsv("noun\tmen").is_err());
        assert!(Lemmatizer::from_tsv("pron\tme\ti").is_err());
        assert_eq!(lem().len(), 8);
    }

    #[test]
    fn nouns() {
        let l = lem();
        for (w, want) in [
            ("men", "man"),
            ("women", "woman"),
            ("firemen", "fireman"),
            ("leaves", "leaf"),
            ("geese", "goose"),
            ("children", "child"),
            ("kites", "kite"),
            ("glasses", "glass"),
            ("lots", "lot"),
            ("jeans", "jeans"),
            ("shorts", "shorts"),
            ("pants", "pants"),
            ("goggles", "goggles"),
            ("people", "people"),
            ("bleachers", "bleacher"),
            ("Dogs", "dog"),
            ("puppies", "puppy"),
            ("cookies", "cookie"),
            ("ties", "tie"),
            ("benches", "bench"),
            ("mustaches", "mustache"),
            ("dishes", "dish"),
            ("boxes", "box"),
            ("buzzes", "buzz"),
            ("prizes", "prize"),
            ("potatoes", "potato"),
            ("shoes", "shoe"),
            ("horseshoes", "horseshoe"),
            ("toes", "toe"),
            ("buses", "bus"),
            ("houses", "house"),
            ("3-year-olds", "3-year-old"),
            ("graffiti", "graffitus"),
            ("sweatpants", "sweatpants"),
        ] {
            assert_eq!(l.lemma(w, "NNS"), want, "{w}");
        }
        assert_eq!(l.lemma("Dogs", "NN"), "dogs");
        assert_eq!(l.lemma("Dogs", "NNPS"), "Dogs");
        assert_eq!(l.lemma("Paris", "NNP"), "Paris");
    }

    #[test]
    fn verbs() {
        let l = lem();
        for (w, tag, want) in [
            ("is", "VBZ", "be"),
            ("are", "VBP", "be"),
            ("'s", "VBZ", "be"),
            ("been", "VBN", "be"),
            ("has", "VBZ", "have"),
            ("did", "VBD", "do"),
            ("ridden", "VBN", "ride"),
            ("sat", "VBD", "sit"),
            ("caught", "VBD", "catch"),
            ("lying", "VBG", "lie"),
            ("running", "VBG", "run"),
            ("sitting", "VBG", "sit"),
            ("riding", "VBG", "ride"),
            ("smiling", "VBG", "smile"),
            ("walking", "VBG", "walk"),
            ("rolling", "VBG", "roll"),
            ("playing", "VBG", "play"),
            ("skiing", "VBG", "ski"),
            ("seeing", "VBG", "see"),
            ("dancing", "VBG", "dance"),
            ("juggling", "VBG", "juggle"),
            ("leaving", "VBG", "leave"),
            ("using", "VBG", "use"),
            ("opening", "VBG", "open"),
            ("visiting", "VBG", "visit"),
            ("decorated", "VBN", "decorate"),
            ("parked", "VBN", "park"),
            ("carried", "VBN", "carry"),
            ("tied", "VBN", "tie"),
            ("freed", "VBN", "free"),
            ("stopped", "VBD", "stop"),
            ("adding", "VBG", "add"),
            ("eatting", "VBG", "eatt"),
            ("striped", "VBN", "strip"),
            ("covered", "VBN", "cover"),
            ("dressed", "VBN", "dress"),
            ("kayaking", "VBG", "kayak"),
            ("charging", "VBG", "charge"),
            ("changing", "VBG", "change"),
            ("hanging", "VBG", "hang"),
            ("continued", "VBD", "continue"),
            ("catches", "VBZ", "catch"),
            ("flies", "VBZ", "fly"),
            ("goes", "VBZ", "go"),
            ("uses", "VBZ", "use"),
            ("sits", "VBZ", "sit"),
            ("sing", "VB", "sing"),
            ("need", "VBP", "need"),
        ] {
            assert_eq!(l.lemma(w, tag), want, "{w}/{tag}");
        }
    }

    #[test]
    fn closed_class_words() {
        let l = lem();
        assert_eq!(l.lemma("an", "DT"), "a");
        assert_eq!(l.lemma("A", "DT"), "a");
        assert_eq!(l.lemma("him", "PRP"), "he");
        assert_eq!(l.lemma("her", "PRP$"), "she");
        assert_eq!(l.lemma("their", "PRP$"), "they");
        assert_eq!(l.lemma("my", "PRP$"), "my");
        assert_eq!(l.lemma("n't", "RB"), "not");
        assert_eq!(l.lemma("ca", "MD"), "can");
        assert_eq!(l.lemma("'s", "POS"), "'s");
        assert_eq!(l.lemma("bigger", "JJR"), "bigger");
        assert_eq!(l.lemma("Red", "JJ"), "red");
    }
}
