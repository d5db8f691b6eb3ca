//! The attribute ruler's POS rules: token patterns over TAG, LOWER, DEP and IS_SPACE (exact
//! value, `IN` list or `NOT_IN` list); every match sets the coarse POS of one token of the
//! matched span; rules apply in order, so later rules win.

use rmpv::Value;
use serde::{Deserialize, Serialize};

/// A condition on one token attribute.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Cond {
    /// Equal to.
    Is(String),
    /// One of.
    In(Vec<String>),
    /// None of.
    NotIn(Vec<String>),
}

impl Cond {
    fn holds(&self, v: &str) -> bool {
        match self {
            Cond::Is(x) => x == v,
            Cond::In(xs) => xs.iter().any(|x| x == v),
            Cond::NotIn(xs) => !xs.iter().any(|x| x == v),
        }
    }
}

/// A pattern for one token.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenPattern {
    /// Fine-grained tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<Cond>,
    /// Lowercased text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lower: Option<Cond>,
    /// Dependency label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dep: Option<Cond>,
    /// Whether the token is whitespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_space: Option<bool>,
}

/// One rule: alternative patterns, the POS they set and which token of the span gets it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rule {
    /// Alternative token-sequence patterns.
    pub patterns: Vec<Vec<TokenPattern>>,
    /// The POS to set.
    pub pos: String,
    /// Index into the matched span (negative: from its end).
    pub index: i64,
}

/// What a rule sees of a token.
pub struct TokenView<'a> {
    /// Tag.
    pub tag: &'a str,
    /// Lowercased text.
    pub lower: &'a str,
    /// Dependency label.
    pub dep: &'a str,
    /// IS_SPACE.
    pub is_space: bool,
}

impl TokenPattern {
    fn matches(&self, t: &TokenView<'_>) -> bool {
        self.tag.as_ref().is_none_or(|c| c.holds(t.tag))
            && self.lower.as_ref().is_none_or(|c| c.holds(t.lower))
            && self.dep.as_ref().is_none_or(|c| c.holds(t.dep))
            && self.is_space.is_none_or(|b| b == t.is_space)
    }
}

/// Applies the rules to a sentence: returns the POS per token (empty where no rule matched).
pub fn apply(rules: &[Rule], tokens: &[TokenView<'_>]) -> Vec<String> {
    let mut pos = vec![String::new(); tokens.len()];
    for rule in rules {
        for pat in &rule.patterns {
            let n = pat.len();
            if n == 0 || n > tokens.len() {
                continue;
            }
            for start in 0..=tokens.len() - n {
                if pat
                    .iter()
                    .zip(&tokens[start..start + n])
                    .all(|(p, t)| p.matches(t))
                {
                    let i = if rule.index < 0 {
                        n as i64 + rule.index
                    } else {
                        rule.index
                    };
                    if (0..n as i64).contains(&i) {
                        pos[start + i as usize] = rule.pos.clone();
                    }
                }
            }
        }
    }
    pos
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => s.as_str().map(String::from),
        Value::Binary(b) => String::from_utf8(b.clone()).ok(),
        _ => None,
    }
}

fn field<'a>(m: &'a Value, name: &str) -> Option<&'a Value> {
    m.as_map()?
        .iter()
        .find(|(k, _)| text(k).as_deref() == Some(name))
        .map(|(_, v)| v)
}

fn cond(v: &Value) -> Result<Cond, String> {
    if let Some(s) = text(v) {
        return Ok(Cond::Is(s));
    }
    let list = |v: &Value| -> Result<Vec<String>, String> {
        v.as_array()
            .ok_or("IN/NOT_IN without a list")?
            .iter()
            .map(|x| text(x).ok_or_else(|| "non-string in a list".to_string()))
            .collect()
    };
    if let Some(l) = field(v, "IN") {
        return Ok(Cond::In(list(l)?));
    }
    if let Some(l) = field(v, "NOT_IN") {
        return Ok(Cond::NotIn(list(l)?));
    }
    Err(format!("unsupported condition {v}"))
}

/// Reads the rules that set POS from the ruler's serialised patterns.
pub fn rules_from_msgpack(v: &Value) -> Result<Vec<Rule>, String> {
    let mut rules = Vec::new();
    for r in v.as_array().ok_or("patterns: not a list")? {
        let Some(pos) = field(r, "attrs")
            .and_then(|a| field(a, "POS"))
            .and_then(text)
        else {
            continue;
        };
        let index = field(r, "index").and_then(Value::as_i64).unwrap_or(0);
        let mut patterns = Vec::new();
        for p in field(r, "patterns")
            .and_then(Value::as_array)
            .ok_or("rule without patterns")?
        {
            let mut toks = Vec::new();
            for t in p.as_array().ok_or("pattern not a list")? {
                let mut tp = TokenPattern::default();
                for (k, val) in t.as_map().ok_or("token pattern not a map")? {
                    match text(k).as_deref() {
                        Some("TAG") => tp.tag = Some(cond(val)?),
                        Some("LOWER") => tp.lower = Some(cond(val)?),
                        Some("DEP") => tp.dep = Some(cond(val)?),
                        Some("IS_SPACE") => {
                            tp.is_space = Some(val.as_bool().ok_or("IS_SPACE not a bool")?)
                        }
                        other => return Err(format!("unsupported pattern key {other:?}")),
                    }
                }
                toks.push(tp);
            }
            patterns.push(toks);
        }
        rules.push(Rule {
            patterns,
            pos,
            index,
        });
    }
    Ok(rules)
}
