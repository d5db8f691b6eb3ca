//! The weights and tables of the English pipeline, read once from the model wheel (thinc's
//! msgpack serialisation) and kept in capscore's own compact file.
//!
//! Compact file (`<cache>/nlp/model.bin`): the magic `CAPSNLP1`, a little-endian u64 length, a
//! JSON header ([`Header`]: shapes, seeds, labels, actions, norm table, attribute rules) and
//! then every float array of the header's `arrays` list, in order, as little-endian f32.
//!
//! Must not touch the filesystem: [`Model::from_wheel`] takes the wheel members' bytes and
//! [`Model::from_bytes`] the compact file's; the `resources` module reads and writes the files.

use std::io::Read;

use rmpv::Value;
use serde::{Deserialize, Serialize};

use super::lexeme::NormTable;
use super::ruler::Rule;

/// Magic bytes of the compact file.
pub const MAGIC: &[u8; 8] = b"CAPSNLP1";

/// A dense layer `y = W x + b` with `W` stored row-major as `n_out x n_in`.
#[derive(Debug, Clone, Default)]
pub struct Linear {
    /// Output width.
    pub n_out: usize,
    /// Input width.
    pub n_in: usize,
    /// Weights, `n_out * n_in`.
    pub w: Vec<f32>,
    /// Bias, `n_out`.
    pub b: Vec<f32>,
}

/// thinc's `Maxout(normalize=True)`: `n_out * pieces` affine outputs, the maximum over the
/// pieces, then layer normalisation with gain `g` and bias `beta`.
#[derive(Debug, Clone, Default)]
pub struct MaxoutLn {
    /// The affine part: `n_out * pieces` rows (row `o * pieces + p`).
    pub lin: Linear,
    /// Layer-norm gain, `n_out`.
    pub g: Vec<f32>,
    /// Layer-norm bias, `n_out`.
    pub beta: Vec<f32>,
    /// Number of pieces.
    pub pieces: usize,
}

impl MaxoutLn {
    /// Output width.
    pub fn n_out(&self) -> usize {
        self.lin.n_out / self.pieces
    }
}

/// One hashed embedding table.
#[derive(Debug, Clone, Default)]
pub struct HashEmbed {
    /// The lexical attribute it embeds.
    pub attr: Attr,
    /// Rows.
    pub rows: usize,
    /// Hash seed.
    pub seed: u32,
    /// The table, `rows x width`.
    pub table: Vec<f32>,
}

/// Token attributes the embedding can consume.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum Attr {
    /// Normalised form.
    #[default]
    #[serde(rename = "NORM")]
    Norm,
    /// First character.
    #[serde(rename = "PREFIX")]
    Prefix,
    /// Last three characters.
    #[serde(rename = "SUFFIX")]
    Suffix,
    /// Word shape.
    #[serde(rename = "SHAPE")]
    Shape,
    /// Whether a space follows the token.
    #[serde(rename = "SPACY")]
    Spacy,
    /// Whether the token is whitespace.
    #[serde(rename = "IS_SPACE")]
    IsSpace,
}

/// Transition types of spaCy's arc-eager system, in its numbering.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Move {
    /// Push the first buffer word.
    Shift = 0,
    /// Pop the stack (or put a head-less word back on the buffer).
    Reduce = 1,
    /// Arc from the first buffer word to the stack top; pop.
    Left = 2,
    /// Arc from the stack top to the first buffer word; push.
    Right = 3,
    /// Mark the second buffer word as a sentence start.
    Break = 4,
}

/// One parser output class.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Action {
    /// Transition type.
    pub mv: Move,
    /// Dependency label ("" for shift and reduce).
    pub label: String,
}

/// Header of the compact file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Header {
    /// Where the weights came from.
    pub source: String,
    /// Token-vector width.
    pub width: usize,
    /// Embedded attributes, rows and seeds, in column order.
    pub embeds: Vec<(Attr, usize, u32)>,
    /// Maxout pieces of the embedding mixer and encoder.
    pub pieces: usize,
    /// Encoder depth.
    pub depth: usize,
    /// Encoder window on each side.
    pub window: usize,
    /// Tagger labels.
    pub tags: Vec<String>,
    /// Parser: hidden width, pieces and number of state features.
    pub parser_hidden: usize,
    /// Parser maxout pieces.
    pub parser_pieces: usize,
    /// Parser state features.
    pub parser_feats: usize,
    /// Parser classes in model order.
    pub actions: Vec<Action>,
    /// The `lexeme_norm` table.
    pub norms: Vec<(u64, String)>,
    /// Attribute-ruler rules that set POS, in order.
    pub rules: Vec<Rule>,
    /// Names and lengths of the float arrays that follow the header.
    pub arrays: Vec<(String, usize)>,
}

/// The whole pipeline's parameters.
#[derive(Debug, Clone)]
pub struct Model {
    /// Token-vector width.
    pub width: usize,
    /// Hash embeddings, in column order.
    pub embeds: Vec<HashEmbed>,
    /// Mixer of the concatenated embeddings.
    pub mix: MaxoutLn,
    /// Encoder layers (each residual around window expansion + maxout + layer norm).
    pub encoder: Vec<MaxoutLn>,
    /// Encoder window on each side.
    pub window: usize,
    /// Tagger output layer.
    pub tagger: Linear,
    /// Tag labels.
    pub tags: Vec<String>,
    /// Parser input projection (token vector -> hidden).
    pub parser_in: Linear,
    /// Parser lower layer, precomputable: `feats * hidden * pieces` rows of `hidden` inputs.
    pub lower: Linear,
    /// Vector used for a missing state feature: `feats * hidden * pieces`.
    pub lower_pad: Vec<f32>,
    /// Parser hidden width.
    pub parser_hidden: usize,
    /// Parser maxout pieces.
    pub parser_pieces: usize,
    /// Parser state features.
    pub parser_feats: usize,
    /// Parser upper layer (hidden -> class scores).
    pub upper: Linear,
    /// Parser classes.
    pub actions: Vec<Action>,
    /// Norm exceptions.
    pub norms: NormTable,
    /// POS rules.
    pub rules: Vec<Rule>,
    /// Provenance.
    pub source: String,
}

/// A malformed model file or wheel member.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ModelError(pub String);

fn err<T>(msg: impl Into<String>) -> Result<T, ModelError> {
    Err(ModelError(msg.into()))
}

// ---------------------------------------------------------------------------------------------
// Reading thinc's msgpack serialisation.

fn key_is(k: &Value, name: &str) -> bool {
    match k {
        Value::String(s) => s.as_str() == Some(name),
        Value::Binary(b) => b.as_slice() == name.as_bytes(),
        _ => false,
    }
}

fn get<'a>(v: &'a Value, name: &str) -> Option<&'a Value> {
    v.as_map()?
        .iter()
        .find(|(k, _)| key_is(k, name))
        .map(|(_, v)| v)
}

fn as_str(v: &Value) -> Option<&str> {
    match v {
        Value::String(s) => s.as_str(),
        Value::Binary(b) => std::str::from_utf8(b).ok(),
        _ => None,
    }
}

/// A numpy array in msgpack-numpy form: shape and f32 data.
fn array(v: &Value, what: &str) -> Result<(Vec<usize>, Vec<f32>), ModelError> {
    let ty = get(v, "type").and_then(as_str);
    if ty != Some("<f4") {
        return err(format!(
            "{what}: expected a float32 array, found type {ty:?}"
        ));
    }
    let shape: Vec<usize> = match get(v, "shape").and_then(Value::as_array) {
        Some(s) => s
            .iter()
            .map(|d| d.as_u64().map(|d| d as usize))
            .collect::<Option<_>>()
            .ok_or_else(|| ModelError(format!("{what}: bad shape")))?,
        None => return err(format!("{what}: no shape")),
    };
    let data = match get(v, "data") {
        Some(Value::Binary(b)) => b,
        _ => return err(format!("{what}: no data")),
    };
    let n: usize = shape.iter().product();
    if data.len() != n * 4 {
        return err(format!("{what}: {} bytes for shape {shape:?}", data.len()));
    }
    let floats = data
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    Ok((shape, floats))
}

/// An attribute stored as msgpack inside a binary blob.
fn attr_value(attrs: &Value, name: &str) -> Option<Value> {
    match get(attrs, name)? {
        Value::Binary(b) => rmpv::decode::read_value(&mut b.as_slice()).ok(),
        other => Some(other.clone()),
    }
}

struct Node {
    name: String,
    dims: Value,
    attrs: Value,
    params: Value,
}

fn nodes(bytes: &[u8], what: &str) -> Result<Vec<Node>, ModelError> {
    let root = rmpv::decode::read_value(&mut &bytes[..])
        .map_err(|e| ModelError(format!("{what}: not msgpack: {e}")))?;
    let list = |k: &str| -> Result<Vec<Value>, ModelError> {
        get(&root, k)
            .and_then(Value::as_array)
            .cloned()
            .ok_or_else(|| ModelError(format!("{what}: no `{k}` list")))
    };
    let (n, a, p) = (list("nodes")?, list("attrs")?, list("params")?);
    if n.len() != a.len() || n.len() != p.len() {
        return err(format!("{what}: nodes, attrs and params differ in length"));
    }
    Ok(n.into_iter()
        .zip(a)
        .zip(p)
        .map(|((n, attrs), params)| Node {
            name: get(&n, "name").and_then(as_str).unwrap_or("").to_string(),
            dims: get(&n, "dims").cloned().unwrap_or(Value::Nil),
            attrs,
            params,
        })
        .collect())
}

/// The node called `name` in `list` (of `what`).
fn named<'a>(list: &'a [Node], name: &str, what: &str) -> Result<&'a Node, ModelError> {
    list.iter()
        .find(|n| n.name == name)
        .ok_or_else(|| ModelError(format!("{what}: no {name}")))
}

fn dim(node: &Node, name: &str) -> Option<usize> {
    get(&node.dims, name)
        .and_then(Value::as_u64)
        .map(|d| d as usize)
}

fn param(node: &Node, name: &str, what: &str) -> Result<(Vec<usize>, Vec<f32>), ModelError> {
    let v = get(&node.params, name)
        .ok_or_else(|| ModelError(format!("{what}: node `{}` has no param {name}", node.name)))?;
    array(v, &format!("{what}: {}.{name}", node.name))
}

fn maxout_ln(mo: &Node, ln: &Node, what: &str) -> Result<MaxoutLn, ModelError> {
    let (ws, w) = param(mo, "W", what)?;
    let (_, b) = param(mo, "b", what)?;
    let (_, g) = param(ln, "G", what)?;
    let (_, beta) = param(ln, "b", what)?;
    if ws.len() != 3 || b.len() != ws[0] * ws[1] || g.len() != ws[0] || beta.len() != ws[0] {
        return err(format!("{what}: unexpected maxout/layernorm shapes {ws:?}"));
    }
    Ok(MaxoutLn {
        lin: Linear {
            n_out: ws[0] * ws[1],
            n_in: ws[2],
            w,
            b,
        },
        pieces: ws[1],
        g,
        beta,
    })
}

fn linear(node: &Node, what: &str) -> Result<Linear, ModelError> {
    let (ws, w) = param(node, "W", what)?;
    let (_, b) = param(node, "b", what)?;
    if ws.len() != 2 || b.len() != ws[0] {
        return err(format!("{what}: unexpected linear shape {ws:?}"));
    }
    Ok(Linear {
        n_out: ws[0],
        n_in: ws[1],
        w,
        b,
    })
}

/// The raw wheel members the model is built from.
pub struct WheelMembers {
    /// `tok2vec/model`.
    pub tok2vec: Vec<u8>,
    /// `tagger/model`.
    pub tagger: Vec<u8>,
    /// `tagger/cfg` (JSON with the labels).
    pub tagger_cfg: Vec<u8>,
    /// `parser/model`.
    pub parser: Vec<u8>,
    /// `parser/moves`.
    pub moves: Vec<u8>,
    /// `vocab/lookups.bin`.
    pub vocab_lookups: Vec<u8>,
    /// `attribute_ruler/patterns`.
    pub patterns: Vec<u8>,
}

/// Lookups tables (`lookups.bin`): table name -> msgpack map.
pub fn lookups_table(bytes: &[u8], table: &str) -> Result<Value, ModelError> {
    let root = rmpv::decode::read_value(&mut &bytes[..])
        .map_err(|e| ModelError(format!("lookups: not msgpack: {e}")))?;
    let t = get(&root, table).ok_or_else(|| ModelError(format!("lookups: no table {table}")))?;
    match t {
        Value::Binary(b) => rmpv::decode::read_value(&mut b.as_slice())
            .map_err(|e| ModelError(format!("lookups {table}: {e}"))),
        other => Ok(other.clone()),
    }
}

/// Map entries of a msgpack map whose values are strings (or lists of strings: the first).
pub fn string_entries(v: &Value) -> Vec<(Value, String)> {
    let mut out = Vec::new();
    if let Some(m) = v.as_map() {
        for (k, val) in m {
            let s = match val {
                Value::Array(a) => a.first().and_then(as_str),
                other => as_str(other),
            };
            if let Some(s) = s {
                out.push((k.clone(), s.to_string()));
            }
        }
    }
    out
}

impl Model {
    /// Builds the model from the wheel's members.
    pub fn from_wheel(m: &WheelMembers, source: &str) -> Result<Model, ModelError> {
        // tok2vec: hash embeddings, the mixer, the encoder layers.
        let t2v = nodes(&m.tok2vec, "tok2vec/model")?;
        let columns: Vec<Attr> = t2v
            .iter()
            .find(|n| n.name == "extract_features")
            .and_then(|n| attr_value(&n.attrs, "columns"))
            .and_then(|v| {
                v.as_array().map(|a| {
                    a.iter()
                        .filter_map(|c| {
                            serde_json::from_value::<Attr>(serde_json::Value::String(
                                as_str(c)?.to_string(),
                            ))
                            .ok()
                        })
                        .collect()
                })
            })
            .ok_or_else(|| ModelError("tok2vec/model: no feature columns".into()))?;
        let mut embeds = Vec::new();
        for n in t2v.iter().filter(|n| n.name == "hashembed") {
            let (shape, table) = param(n, "E", "tok2vec/model")?;
            let seed = attr_value(&n.attrs, "seed").and_then(|v| v.as_u64());
            let column = attr_value(&n.attrs, "column").and_then(|v| v.as_u64());
            let (Some(seed), Some(column)) = (seed, column) else {
                return err("tok2vec/model: hashembed without seed or column");
            };
            let attr = *columns
                .get(column as usize)
                .ok_or_else(|| ModelError("tok2vec/model: column out of range".into()))?;
            if column as usize != embeds.len() {
                return err("tok2vec/model: hash embeddings out of column order");
            }
            embeds.push(HashEmbed {
                attr,
                rows: shape[0],
                seed: seed as u32,
                table,
            });
        }
        let width = dim(&t2v[0], "nO").ok_or_else(|| ModelError("tok2vec: no width".into()))?;
        if embeds.len() != columns.len() || embeds.iter().any(|e| e.table.len() != e.rows * width) {
            return err("tok2vec/model: embedding tables do not match the columns and width");
        }
        let maxouts: Vec<&Node> = t2v.iter().filter(|n| n.name == "maxout").collect();
        let norms: Vec<&Node> = t2v.iter().filter(|n| n.name == "layernorm").collect();
        if maxouts.len() < 2 || maxouts.len() != norms.len() {
            return err("tok2vec/model: unexpected maxout/layernorm layers");
        }
        let mix = maxout_ln(maxouts[0], norms[0], "tok2vec/model")?;
        let encoder = maxouts[1..]
            .iter()
            .zip(&norms[1..])
            .map(|(a, b)| maxout_ln(a, b, "tok2vec/model"))
            .collect::<Result<Vec<_>, _>>()?;
        let window = t2v
            .iter()
            .find(|n| n.name == "expand_window")
            .and_then(|n| attr_value(&n.attrs, "window_size"))
            .and_then(|v| v.as_u64())
            .unwrap_or(1) as usize;
        if mix.lin.n_in != width * embeds.len()
            || mix.n_out() != width
            || encoder
                .iter()
                .any(|l| l.lin.n_in != width * (2 * window + 1) || l.n_out() != width)
        {
            return err("tok2vec/model: layer widths do not chain");
        }

        // tagger
        let tg = nodes(&m.tagger, "tagger/model")?;
        let sm = named(&tg, "softmax", "tagger/model")?;
        let tagger = linear(sm, "tagger/model")?;
        let cfg: serde_json::Value = serde_json::from_slice(&m.tagger_cfg)
            .map_err(|e| ModelError(format!("tagger/cfg: {e}")))?;
        let tags: Vec<String> = cfg["labels"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        if tags.len() != tagger.n_out || tagger.n_in != width {
            return err("tagger: labels and output layer disagree");
        }

        // parser
        let ps = nodes(&m.parser, "parser/model")?;
        let pa = named(&ps, "precomputable_affine", "parser/model")?;
        let (ws, lw) = param(pa, "W", "parser/model")?;
        let (_, lb) = param(pa, "b", "parser/model")?;
        let (_, pad) = param(pa, "pad", "parser/model")?;
        if ws.len() != 4 {
            return err("parser/model: lower layer is not (nF, nO, nP, nI)");
        }
        let (nf, no, np, ni) = (ws[0], ws[1], ws[2], ws[3]);
        let lower = Linear {
            n_out: nf * no * np,
            n_in: ni,
            w: lw,
            b: lb,
        };
        let linears: Vec<Linear> = ps
            .iter()
            .filter(|n| n.name == "linear")
            .map(|n| linear(n, "parser/model"))
            .collect::<Result<_, _>>()?;
        let parser_in = linears
            .iter()
            .find(|l| l.n_in == width)
            .cloned()
            .ok_or_else(|| ModelError("parser/model: no input projection".into()))?;
        let upper = linears
            .iter()
            .find(|l| l.n_in == no && l.n_out != no)
            .cloned()
            .ok_or_else(|| ModelError("parser/model: no upper layer".into()))?;
        if parser_in.n_out != ni || pad.len() != nf * no * np || lower.b.len() != no * np {
            return err("parser/model: layer shapes do not chain");
        }

        // moves: msgpack {moves: json {"0": {label: freq}, ...}}
        let mv = rmpv::decode::read_value(&mut &m.moves[..])
            .map_err(|e| ModelError(format!("parser/moves: {e}")))?;
        let json = get(&mv, "moves")
            .and_then(as_str)
            .ok_or_else(|| ModelError("parser/moves: no moves".into()))?;
        let actions = actions_from_moves(json)?;
        if actions.len() != upper.n_out {
            return err(format!(
                "parser: {} actions but {} outputs",
                actions.len(),
                upper.n_out
            ));
        }

        // norms
        let table = lookups_table(&m.vocab_lookups, "lexeme_norm")?;
        let norms = NormTable::new(
            string_entries(&table)
                .into_iter()
                .filter_map(|(k, v)| Some((k.as_u64()?, v))),
        );

        // attribute ruler
        let pv = rmpv::decode::read_value(&mut &m.patterns[..])
            .map_err(|e| ModelError(format!("attribute_ruler/patterns: {e}")))?;
        let rules = super::ruler::rules_from_msgpack(&pv)
            .map_err(|e| ModelError(format!("attribute_ruler/patterns: {e}")))?;

        Ok(Model {
            width,
            embeds,
            mix,
            encoder,
            window,
            tagger,
            tags,
            parser_in,
            lower,
            lower_pad: pad,
            parser_hidden: no,
            parser_pieces: np,
            parser_feats: nf,
            upper,
            actions,
            norms,
            rules,
            source: source.to_string(),
        })
    }

    fn arrays(&self) -> Vec<(String, &Vec<f32>)> {
        let mut v: Vec<(String, &Vec<f32>)> = Vec::new();
        for (i, e) in self.embeds.iter().enumerate() {
            v.push((format!("embed.{i}"), &e.table));
        }
        fn ml<'a>(name: &str, l: &'a MaxoutLn, v: &mut Vec<(String, &'a Vec<f32>)>) {
            v.push((format!("{name}.w"), &l.lin.w));
            v.push((format!("{name}.b"), &l.lin.b));
            v.push((format!("{name}.g"), &l.g));
            v.push((format!("{name}.beta"), &l.beta));
        }
        ml("mix", &self.mix, &mut v);
        for (i, l) in self.encoder.iter().enumerate() {
            ml(&format!("encoder.{i}"), l, &mut v);
        }
        for (name, l) in [
            ("tagger", &self.tagger),
            ("parser_in", &self.parser_in),
            ("lower", &self.lower),
            ("upper", &self.upper),
        ] {
            v.push((format!("{name}.w"), &l.w));
            v.push((format!("{name}.b"), &l.b));
        }
        v.push(("lower.pad".into(), &self.lower_pad));
        v
    }

    /// Serialises the model into the compact form.
    pub fn to_bytes(&self) -> Vec<u8> {
        let arrays = self.arrays();
        let header = Header {
            source: self.source.clone(),
            width: self.width,
            embeds: self
                .embeds
                .iter()
                .map(|e| (e.attr, e.rows, e.seed))
                .collect(),
            pieces: self.mix.pieces,
            depth: self.encoder.len(),
            window: self.window,
            tags: self.tags.clone(),
            parser_hidden: self.parser_hidden,
            parser_pieces: self.parser_pieces,
            parser_feats: self.parser_feats,
            actions: self.actions.clone(),
            norms: self
                .norms
                .entries()
                .into_iter()
                .map(|(k, v)| (k, v.to_string()))
                .collect(),
            rules: self.rules.clone(),
            arrays: arrays.iter().map(|(n, a)| (n.clone(), a.len())).collect(),
        };
        let json = serde_json::to_vec(&header).expect("header serialises");
        let total: usize = arrays.iter().map(|(_, a)| a.len() * 4).sum();
        let mut out = Vec::with_capacity(16 + json.len() + total);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&(json.len() as u64).to_le_bytes());
        out.extend_from_slice(&json);
        for (_, a) in arrays {
            for x in a {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
        out
    }

    /// Reads the compact form.
    pub fn from_bytes(bytes: &[u8]) -> Result<Model, ModelError> {
        if bytes.len() < 16 || &bytes[..8] != MAGIC {
            return err("not a capscore model file (bad magic)");
        }
        let hl = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes")) as usize;
        let Some(hbytes) = bytes.get(16..16usize.saturating_add(hl)) else {
            return err("truncated header");
        };
        let h: Header =
            serde_json::from_slice(hbytes).map_err(|e| ModelError(format!("header: {e}")))?;
        let mut rest = &bytes[16 + hl..];
        let mut take = |name: &str, want: Option<usize>| -> Result<Vec<f32>, ModelError> {
            let Some((n, len)) = h.arrays.iter().find(|(n, _)| n == name) else {
                return err(format!("array {name} missing"));
            };
            let _ = n;
            if let Some(w) = want {
                if w != *len {
                    return err(format!("array {name}: {len} values, expected {w}"));
                }
            }
            let nb = len * 4;
            if rest.len() < nb {
                return err(format!("array {name} truncated"));
            }
            let mut v = Vec::with_capacity(*len);
            let mut r = &rest[..nb];
            let mut buf = [0u8; 4];
            while r.read_exact(&mut buf).is_ok() {
                v.push(f32::from_le_bytes(buf));
            }
            rest = &rest[nb..];
            Ok(v)
        };
        // Arrays are stored in the order `arrays()` lists them; read them back in that order.
        let w = h.width;
        let mut embeds = Vec::new();
        for (i, (attr, rows, seed)) in h.embeds.iter().enumerate() {
            embeds.push(HashEmbed {
                attr: *attr,
                rows: *rows,
                seed: *seed,
                table: take(&format!("embed.{i}"), Some(rows * w))?,
            });
        }
        let mut ml = |name: &str, n_in: usize, pieces: usize| -> Result<MaxoutLn, ModelError> {
            Ok(MaxoutLn {
                lin: Linear {
                    n_out: w * pieces,
                    n_in,
                    w: take(&format!("{name}.w"), Some(w * pieces * n_in))?,
                    b: take(&format!("{name}.b"), Some(w * pieces))?,
                },
                pieces,
                g: take(&format!("{name}.g"), Some(w))?,
                beta: take(&format!("{name}.beta"), Some(w))?,
            })
        };
        let mix = ml("mix", w * h.embeds.len(), h.pieces)?;
        let mut encoder = Vec::new();
        for i in 0..h.depth {
            encoder.push(ml(
                &format!("encoder.{i}"),
                w * (2 * h.window + 1),
                h.pieces,
            )?);
        }
        let (nf, no, np) = (h.parser_feats, h.parser_hidden, h.parser_pieces);
        let mut lin = |name: &str, n_out: usize, n_in: usize| -> Result<Linear, ModelError> {
            Ok(Linear {
                n_out,
                n_in,
                w: take(&format!("{name}.w"), Some(n_out * n_in))?,
                b: take(&format!("{name}.b"), None)?,
            })
        };
        let tagger = lin("tagger", h.tags.len(), w)?;
        let parser_in = lin("parser_in", no, w)?;
        let lower = lin("lower", nf * no * np, no)?;
        let upper = lin("upper", h.actions.len(), no)?;
        let lower_pad = take("lower.pad", Some(nf * no * np))?;
        if !rest.is_empty() {
            return err("trailing bytes after the arrays");
        }
        if lower.b.len() != no * np
            || upper.b.len() != h.actions.len()
            || tagger.b.len() != h.tags.len()
        {
            return err("bias lengths do not match");
        }
        Ok(Model {
            width: w,
            embeds,
            mix,
            encoder,
            window: h.window,
            tagger,
            tags: h.tags,
            parser_in,
            lower,
            lower_pad,
            parser_hidden: no,
            parser_pieces: np,
            parser_feats: nf,
            upper,
            actions: h.actions,
            norms: NormTable::new(h.norms),
            rules: h.rules,
            source: h.source,
        })
    }
}

/// The parser's classes from the `moves` JSON, in spaCy's order: transition types in numeric
/// order; within one, labels by decreasing frequency, ties by decreasing label string.
pub fn actions_from_moves(json: &str) -> Result<Vec<Action>, ModelError> {
    let v: serde_json::Value =
        serde_json::from_str(json).map_err(|e| ModelError(format!("moves: {e}")))?;
    let obj = v
        .as_object()
        .ok_or_else(|| ModelError("moves: not an object".into()))?;
    let mut keys: Vec<&String> = obj.keys().collect();
    keys.sort();
    let mut out = Vec::new();
    for k in keys {
        let mv = match k.as_str() {
            "0" => Move::Shift,
            "1" => Move::Reduce,
            "2" => Move::Left,
            "3" => Move::Right,
            "4" => Move::Break,
            other => return err(format!("moves: unknown transition {other}")),
        };
        let labels = obj[k]
            .as_object()
            .ok_or_else(|| ModelError("moves: labels not an object".into()))?;
        let mut sorted: Vec<(i64, &String)> = labels
            .iter()
            .map(|(l, f)| (f.as_i64().unwrap_or(0), l))
            .collect();
        sorted.sort();
        sorted.reverse();
        let mut added = Vec::new();
        for (f, l) in sorted {
            if f < 0 {
                added.push((f, l));
            } else {
                push_action(&mut out, mv, l);
            }
        }
        added.sort();
        added.reverse();
        for (_, l) in added {
            push_action(&mut out, mv, l);
        }
    }
    Ok(out)
}

fn push_action(out: &mut Vec<Action>, mv: Move, label: &str) {
    if !out.iter().any(|a| a.mv == mv && a.label == label) {
        out.push(Action {
            mv,
            label: label.to_string(),
        });
    }
}
