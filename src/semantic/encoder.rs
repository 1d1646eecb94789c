//! The optional transformer tier: a BERT-style sentence encoder (all-MiniLM-L6-v2 and its
//! kind) read from a folder of the files a sentence-transformers model ships with, and run
//! on the CPU in plain Rust.
//!
//! It gives the vectors of memories and of the questions asked of them when `[semantic]
//! memories` names such a folder. It reads what the static model reads (the same uncased
//! basic tokeniser and WordPiece, but an unknown word is the unknown token), then the whole
//! network: embeddings, `layers` blocks of self-attention and feed-forward, the mean of the
//! last hidden states, normalised. Matrix products go through `matrixmultiply`.
//!
//! A text costs about `2 × weights` multiply-adds per token (21 M for MiniLM-L6), so a
//! memory of 60 tokens takes milliseconds, where the static model takes microseconds: the
//! reason this tier is for memories only, and off unless asked for.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

use serde_json::{Map, Value};

use super::tokenize::{self, Wordpiece};
use super::vocab::Vocab;
use super::{Embedding, ModelError};

/// The files of an encoder's folder, read by the caller.
#[derive(Debug)]
pub struct EncoderFiles {
    /// `model.safetensors`: the weights, f32.
    pub weights: Vec<u8>,
    /// `vocab.txt`: one token a line.
    pub vocab: Vec<u8>,
    /// `config.json`: the network's sizes.
    pub config: Vec<u8>,
    /// `sentence_bert_config.json`, when the folder has it: the longest input.
    pub sentence_config: Option<Vec<u8>>,
}

/// The file names of an encoder's folder.
pub const WEIGHTS_FILE: &str = "model.safetensors";
pub const VOCAB_FILE: &str = "vocab.txt";
pub const CONFIG_FILE: &str = "config.json";
pub const SENTENCE_CONFIG_FILE: &str = "sentence_bert_config.json";

/// The longest input when the folder does not say: what all-MiniLM-L6-v2 was trained on.
const DEFAULT_MAX_SEQ: usize = 256;

/// The longest word WordPiece splits, as BERT's tokeniser has it.
const MAX_WORD_CHARS: usize = 100;

/// One block of the encoder: attention, then feed-forward, each followed by a residual
/// LayerNorm. Linear weights are `[out, in]`, as the file stores them.
struct Layer {
    q: Linear,
    k: Linear,
    v: Linear,
    attn_out: Linear,
    attn_norm: Norm,
    up: Linear,
    down: Linear,
    out_norm: Norm,
}

struct Linear {
    weight: Vec<f32>,
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

struct Norm {
    weight: Vec<f32>,
    bias: Vec<f32>,
}

/// A sentence encoder ready to embed texts.
pub struct Encoder {
    vocab_text: Box<[u8]>,
    vocab: Vocab,
    unk: u32,
    cls: u32,
    sep: u32,
    hidden: usize,
    heads: usize,
    eps: f32,
    max_seq: usize,
    word: Vec<f32>,
    position: Vec<f32>,
    /// The first token type's row: every input is one segment.
    token_type: Vec<f32>,
    embed_norm: Norm,
    layers: Vec<Layer>,
    fingerprint: String,
    /// The last texts embedded, by their token ids: a memory is embedded as it is written
    /// (to find what it repeats) and again as the sync indexes it, tens of milliseconds
    /// each.
    recent: Mutex<VecDeque<(Vec<u32>, Option<Embedding>)>>,
}

/// How many embeddings an encoder remembers.
const RECENT: usize = 8;

impl std::fmt::Debug for Encoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encoder")
            .field("fingerprint", &self.fingerprint)
            .field("hidden", &self.hidden)
            .field("layers", &self.layers.len())
            .field("max_seq", &self.max_seq)
            .finish_non_exhaustive()
    }
}

fn bad(problem: impl Into<String>) -> ModelError {
    ModelError::Encoder(problem.into())
}

/// The f32 tensors of a safetensors file, by name.
struct Tensors<'a> {
    header: Map<String, Value>,
    body: &'a [u8],
}

impl<'a> Tensors<'a> {
    fn parse(bytes: &'a [u8]) -> Result<Tensors<'a>, ModelError> {
        let (header, body) = super::file::split(bytes)?;
        Ok(Tensors { header, body })
    }

    /// The tensor `name` (with or without a `bert.` prefix), checked to be f32 of `shape`.
    fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, ModelError> {
        let entry = self
            .header
            .get(name)
            .or_else(|| self.header.get(&format!("bert.{name}")))
            .ok_or_else(|| bad(format!("the weights have no tensor `{name}`")))?;
        let dtype = entry.get("dtype").and_then(Value::as_str).unwrap_or("");
        if dtype != "F32" {
            return Err(bad(format!("the tensor `{name}` is {dtype:?}, not F32")));
        }
        let found: Vec<usize> = entry
            .get("shape")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|d| d.as_u64().and_then(|d| usize::try_from(d).ok())).collect())
            .unwrap_or_default();
        if found != shape {
            return Err(bad(format!("the tensor `{name}` has the shape {found:?}, not {shape:?}")));
        }
        let offsets: Vec<usize> = entry
            .get("data_offsets")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|d| d.as_u64().and_then(|d| usize::try_from(d).ok())).collect())
            .unwrap_or_default();
        let count: usize = shape.iter().product();
        let (start, end) = match offsets[..] {
            [start, end] if end >= start && end - start == count * 4 && end <= self.body.len() => (start, end),
            _ => return Err(bad(format!("the tensor `{name}`'s bytes {offsets:?} do not hold its shape"))),
        };
        Ok(self.body[start..end].chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
    }

    fn linear(&self, name: &str, outputs: usize, inputs: usize) -> Result<Linear, ModelError> {
        Ok(Linear {
            weight: self.get(&format!("{name}.weight"), &[outputs, inputs])?,
            bias: self.get(&format!("{name}.bias"), &[outputs])?,
            inputs,
            outputs,
        })
    }

    fn norm(&self, name: &str, size: usize) -> Result<Norm, ModelError> {
        Ok(Norm {
            weight: self.get(&format!("{name}.weight"), &[size])?,
            bias: self.get(&format!("{name}.bias"), &[size])?,
        })
    }
}

/// A positive whole number of `config.json`.
fn size(config: &Map<String, Value>, key: &str) -> Result<usize, ModelError> {
    config
        .get(key)
        .and_then(Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
        .filter(|n| (1..=1 << 20).contains(n))
        .ok_or_else(|| bad(format!("`{CONFIG_FILE}` has no positive `{key}`")))
}

impl Encoder {
    /// Reads an encoder from its folder's files; every size is checked against the others,
    /// so that embedding never indexes out of a tensor.
    pub fn parse(files: &EncoderFiles) -> Result<Encoder, ModelError> {
        let config: Map<String, Value> = serde_json::from_slice(&files.config)
            .map_err(|e| bad(format!("`{CONFIG_FILE}` is not a JSON object ({e})")))?;
        if let Some(kind) = config.get("model_type").and_then(Value::as_str)
            && kind != "bert"
        {
            return Err(bad(format!("`{CONFIG_FILE}` names a {kind:?} model; only BERT encoders are read")));
        }
        if let Some(act) = config.get("hidden_act").and_then(Value::as_str)
            && act != "gelu"
        {
            return Err(bad(format!("`{CONFIG_FILE}` names the activation {act:?}; only \"gelu\" is read")));
        }
        let hidden = size(&config, "hidden_size")?;
        let heads = size(&config, "num_attention_heads")?;
        let layers = size(&config, "num_hidden_layers")?;
        let intermediate = size(&config, "intermediate_size")?;
        let vocab_size = size(&config, "vocab_size")?;
        let positions = size(&config, "max_position_embeddings")?;
        if hidden % heads != 0 {
            return Err(bad(format!("{heads} heads do not divide the hidden size {hidden}")));
        }
        let eps = config.get("layer_norm_eps").and_then(Value::as_f64).unwrap_or(1e-12) as f32;
        let wanted = match &files.sentence_config {
            Some(bytes) => serde_json::from_slice::<Value>(bytes)
                .map_err(|e| bad(format!("`{SENTENCE_CONFIG_FILE}` is not JSON ({e})")))?
                .get("max_seq_length")
                .and_then(Value::as_u64)
                .and_then(|n| usize::try_from(n).ok())
                .unwrap_or(DEFAULT_MAX_SEQ),
            None => DEFAULT_MAX_SEQ,
        };
        let max_seq = wanted.clamp(2, positions);

        let text = std::str::from_utf8(&files.vocab).map_err(|e| ModelError::VocabNotUtf8(e.valid_up_to()))?;
        let text = text.strip_suffix('\n').unwrap_or(text);
        let text = text.strip_suffix('\r').unwrap_or(text);
        if text.contains('\r') {
            return Err(bad(format!("`{VOCAB_FILE}` has Windows line ends")));
        }
        if u32::try_from(text.len() + 1).is_err() {
            return Err(ModelError::Shape(format!("a vocabulary of {} bytes", text.len())));
        }
        let vocab_text: Box<[u8]> = text.as_bytes().into();
        let vocab = Vocab::new(text, "##");
        if vocab.len() != vocab_size {
            return Err(ModelError::Shape(format!("{} tokens in `{VOCAB_FILE}` for {vocab_size} rows", vocab.len())));
        }
        let id = |token: &str| {
            vocab.whole(&vocab_text, token.as_bytes()).ok_or_else(|| ModelError::UnknownTokenMissing(token.to_owned()))
        };
        let (unk, cls, sep) = (id("[UNK]")?, id("[CLS]")?, id("[SEP]")?);

        let t = Tensors::parse(&files.weights)?;
        let word = t.get("embeddings.word_embeddings.weight", &[vocab_size, hidden])?;
        let position = t.get("embeddings.position_embeddings.weight", &[positions, hidden])?;
        let types = size(&config, "type_vocab_size").unwrap_or(2);
        let mut token_type = t.get("embeddings.token_type_embeddings.weight", &[types, hidden])?;
        token_type.truncate(hidden);
        let embed_norm = t.norm("embeddings.LayerNorm", hidden)?;
        let layers = (0..layers)
            .map(|i| {
                let p = format!("encoder.layer.{i}");
                Ok(Layer {
                    q: t.linear(&format!("{p}.attention.self.query"), hidden, hidden)?,
                    k: t.linear(&format!("{p}.attention.self.key"), hidden, hidden)?,
                    v: t.linear(&format!("{p}.attention.self.value"), hidden, hidden)?,
                    attn_out: t.linear(&format!("{p}.attention.output.dense"), hidden, hidden)?,
                    attn_norm: t.norm(&format!("{p}.attention.output.LayerNorm"), hidden)?,
                    up: t.linear(&format!("{p}.intermediate.dense"), intermediate, hidden)?,
                    down: t.linear(&format!("{p}.output.dense"), hidden, intermediate)?,
                    out_norm: t.norm(&format!("{p}.output.LayerNorm"), hidden)?,
                })
            })
            .collect::<Result<Vec<_>, ModelError>>()?;

        // blake3, not sha256: it reads the 87 MB of weights several times faster, and every
        // process that loads the encoder pays it once.
        let mut hash = blake3::Hasher::new();
        for part in [&files.config[..], &files.vocab, &files.weights, files.sentence_config.as_deref().unwrap_or(&[])] {
            hash.update(&(part.len() as u64).to_le_bytes());
            hash.update(part);
        }
        let fingerprint: String = hash.finalize().as_bytes().iter().take(8).map(|b| format!("{b:02x}")).collect();
        Ok(Encoder {
            vocab_text,
            vocab,
            unk,
            cls,
            sep,
            hidden,
            heads,
            eps,
            max_seq,
            word,
            position,
            token_type,
            embed_norm,
            layers,
            fingerprint: format!("enc-{fingerprint}"),
            recent: Mutex::default(),
        })
    }

    /// How many values a vector has.
    pub fn dim(&self) -> usize {
        self.hidden
    }

    /// A short stable id of the encoder: it changes when any of its files changes.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// The longest input in tokens, the two markers included: the rest of a text is not read.
    pub fn max_seq(&self) -> usize {
        self.max_seq
    }

    /// The token ids the network reads: `[CLS]`, the text's tokens, `[SEP]`.
    pub fn tokens(&self, text: &str) -> Vec<u32> {
        let wordpiece = Wordpiece {
            vocab: &self.vocab,
            text: &self.vocab_text,
            unk: self.unk,
            max_word_chars: MAX_WORD_CHARS,
            max_tokens: self.max_seq - 2,
            keep_unknown: true,
        };
        let mut ids = vec![self.cls];
        let mut words = Vec::with_capacity(64);
        tokenize::tokenize(&wordpiece, text, &mut words);
        ids.extend(words);
        ids.push(self.sep);
        ids
    }

    /// The text's unit vector: the mean of the last hidden states of its tokens (the two
    /// markers included, as sentence-transformers pools), normalised. None for a text with
    /// no token.
    pub fn embed(&self, text: &str) -> Option<Embedding> {
        let ids = self.tokens(text);
        let recent = || self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, v)) = recent().iter().find(|(seen, _)| *seen == ids) {
            return v.clone();
        }
        let v = self.embed_ids(&ids);
        tracing::debug!(tokens = ids.len(), "the encoder ran over a text");
        let mut recent = recent();
        if recent.len() == RECENT {
            recent.pop_front();
        }
        recent.push_back((ids, v.clone()));
        v
    }

    fn embed_ids(&self, ids: &[u32]) -> Option<Embedding> {
        if ids.len() <= 2 {
            return None;
        }
        let states = self.forward(ids);
        let h = self.hidden;
        let n = ids.len();
        let mut mean = vec![0f32; h];
        for row in states.chunks_exact(h) {
            for (m, x) in mean.iter_mut().zip(row) {
                *m += x;
            }
        }
        let norm = mean.iter().map(|&x| f64::from(x / n as f32).powi(2)).sum::<f64>().sqrt();
        if !(norm > 0.0 && norm.is_finite()) {
            return None;
        }
        let inv = (1.0 / (norm * n as f64)) as f32;
        Some(Embedding(mean.into_iter().map(|x| x * inv).collect()))
    }

    /// The last hidden states of `ids`, `len × hidden`, row-major.
    fn forward(&self, ids: &[u32]) -> Vec<f32> {
        let (n, h) = (ids.len(), self.hidden);
        let mut x = vec![0f32; n * h];
        for (i, (row, &id)) in x.chunks_exact_mut(h).zip(ids).enumerate() {
            let w = &self.word[id as usize * h..][..h];
            let p = &self.position[i * h..][..h];
            for (j, out) in row.iter_mut().enumerate() {
                *out = w[j] + p[j] + self.token_type[j];
            }
        }
        layer_norm(&mut x, &self.embed_norm, self.eps);
        let d = h / self.heads;
        let scale = 1.0 / (d as f32).sqrt();
        let (mut q, mut k, mut v, mut ctx) =
            (vec![0f32; n * h], vec![0f32; n * h], vec![0f32; n * h], vec![0f32; n * h]);
        let mut scores = vec![0f32; n * n];
        for layer in &self.layers {
            layer.q.apply(&x, n, &mut q);
            layer.k.apply(&x, n, &mut k);
            layer.v.apply(&x, n, &mut v);
            for head in 0..self.heads {
                let at = head * d;
                // scores = q_h k_hᵀ / √d
                gemm((n, d, n), scale, (&q[at..], h, 1), (&k[at..], 1, h), 0.0, (&mut scores, n));
                for row in scores.chunks_exact_mut(n) {
                    softmax(row);
                }
                // ctx_h = scores v_h
                gemm((n, n, d), 1.0, (&scores, n, 1), (&v[at..], h, 1), 0.0, (&mut ctx[at..], h));
            }
            // x = norm(x + ctx Wᵀ + b)
            layer.attn_out.apply(&ctx, n, &mut q);
            for (a, b) in x.iter_mut().zip(&q) {
                *a += b;
            }
            layer_norm(&mut x, &layer.attn_norm, self.eps);
            let mut up = vec![0f32; n * layer.up.outputs];
            layer.up.apply(&x, n, &mut up);
            for u in &mut up {
                *u = gelu(*u);
            }
            layer.down.apply(&up, n, &mut q);
            for (a, b) in x.iter_mut().zip(&q) {
                *a += b;
            }
            layer_norm(&mut x, &layer.out_norm, self.eps);
        }
        x
    }
}

impl Linear {
    /// `out = x Wᵀ + b` for `n` rows of `x`.
    fn apply(&self, x: &[f32], n: usize, out: &mut [f32]) {
        let (i, o) = (self.inputs, self.outputs);
        assert!(x.len() >= n * i && out.len() >= n * o && self.weight.len() == i * o, "linear sizes");
        for row in out[..n * o].chunks_exact_mut(o) {
            row.copy_from_slice(&self.bias);
        }
        gemm((n, i, o), 1.0, (x, i, 1), (&self.weight, 1, i), 1.0, (out, o));
    }
}

/// `c = alpha × a b + beta × c` for an `m × k` matrix `a` and a `k × n` matrix `b`, each
/// given as a slice and its row and column strides, into `c` of row stride `rsc`.
///
/// # Panics
/// When a stride reaches past its slice: every index is checked before the product runs.
#[allow(unsafe_code)]
fn gemm(
    (m, k, n): (usize, usize, usize),
    alpha: f32,
    (a, rsa, csa): (&[f32], usize, usize),
    (b, rsb, csb): (&[f32], usize, usize),
    beta: f32,
    (c, rsc): (&mut [f32], usize),
) {
    if m == 0 || k == 0 || n == 0 {
        return;
    }
    let last = |rows: usize, cols: usize, rs: usize, cs: usize| (rows - 1) * rs + (cols - 1) * cs;
    assert!(
        last(m, k, rsa, csa) < a.len() && last(k, n, rsb, csb) < b.len() && last(m, n, rsc, 1) < c.len(),
        "matrix strides reach past their buffers"
    );
    let s = |x: usize| x as isize;
    // SAFETY: the assertion above bounds the last element every stride reaches, and the
    // three slices are live for the call; `c` is borrowed mutably, so it aliases neither.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            alpha,
            a.as_ptr(),
            s(rsa),
            s(csa),
            b.as_ptr(),
            s(rsb),
            s(csb),
            beta,
            c.as_mut_ptr(),
            s(rsc),
            1,
        );
    }
}

fn layer_norm(x: &mut [f32], norm: &Norm, eps: f32) {
    let h = norm.weight.len();
    for row in x.chunks_exact_mut(h) {
        let mean = row.iter().sum::<f32>() / h as f32;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / h as f32;
        let inv = 1.0 / (var + eps).sqrt();
        for ((v, w), b) in row.iter_mut().zip(&norm.weight).zip(&norm.bias) {
            *v = (*v - mean) * inv * w + b;
        }
    }
}

fn softmax(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for v in row.iter_mut() {
        *v = (*v - max).exp();
        sum += *v;
    }
    for v in row.iter_mut() {
        *v /= sum;
    }
}

/// BERT's GELU: `x Φ(x)`, with the error function.
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x / std::f32::consts::SQRT_2))
}

/// The error function to within 1.2e-7 (Numerical Recipes' `erfc` by Chebyshev fit).
fn erf(x: f32) -> f32 {
    let x = f64::from(x);
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98 + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let erfc = t * poly.exp();
    (if x >= 0.0 { 1.0 - erfc } else { erfc - 1.0 }) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_known_values() {
        for (x, want) in
            [(0.0f32, 0.0f32), (0.5, 0.520_499_9), (1.0, 0.842_700_8), (-2.0, -0.995_322_3), (3.5, 0.999_999_3)]
        {
            assert!((erf(x) - want).abs() < 2e-7, "erf({x}) = {} not {want}", erf(x));
        }
    }

    const VOCAB: &str = "[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\ndb\npass\n##word\n.\n";

    /// The files of a tiny BERT (hidden 4, 2 heads, 1 layer, intermediate 8) whose weights
    /// are a fixed pattern, with `tweak` applied to the tensor list first.
    fn tiny(tweak: impl FnOnce(&mut Vec<(String, Vec<usize>)>)) -> EncoderFiles {
        let (h, i, v, p) = (4usize, 8usize, 9usize, 16usize);
        let mut tensors: Vec<(String, Vec<usize>)> = vec![
            ("embeddings.word_embeddings.weight".into(), vec![v, h]),
            ("embeddings.position_embeddings.weight".into(), vec![p, h]),
            ("embeddings.token_type_embeddings.weight".into(), vec![2, h]),
            ("embeddings.LayerNorm.weight".into(), vec![h]),
            ("embeddings.LayerNorm.bias".into(), vec![h]),
        ];
        let l = "encoder.layer.0";
        for (name, shape) in [
            ("attention.self.query", vec![h, h]),
            ("attention.self.key", vec![h, h]),
            ("attention.self.value", vec![h, h]),
            ("attention.output.dense", vec![h, h]),
            ("intermediate.dense", vec![i, h]),
            ("output.dense", vec![h, i]),
        ] {
            tensors.push((format!("{l}.{name}.weight"), shape.clone()));
            tensors.push((format!("{l}.{name}.bias"), vec![shape[0]]));
        }
        for name in ["attention.output.LayerNorm", "output.LayerNorm"] {
            tensors.push((format!("{l}.{name}.weight"), vec![h]));
            tensors.push((format!("{l}.{name}.bias"), vec![h]));
        }
        tweak(&mut tensors);
        let mut header = serde_json::Map::new();
        let mut body = Vec::new();
        for (k, (name, shape)) in tensors.iter().enumerate() {
            let count: usize = shape.iter().product();
            let start = body.len();
            for j in 0..count {
                let x = ((k * 31 + j * 7) % 13) as f32 / 13.0 - 0.4;
                body.extend_from_slice(&x.to_le_bytes());
            }
            header.insert(
                name.clone(),
                serde_json::json!({ "dtype": "F32", "shape": shape, "data_offsets": [start, body.len()] }),
            );
        }
        let header = serde_json::to_vec(&header).unwrap();
        let mut weights = (header.len() as u64).to_le_bytes().to_vec();
        weights.extend_from_slice(&header);
        weights.extend_from_slice(&body);
        let config = serde_json::json!({
            "model_type": "bert", "hidden_act": "gelu", "hidden_size": h, "num_attention_heads": 2,
            "num_hidden_layers": 1, "intermediate_size": i, "vocab_size": v, "max_position_embeddings": p,
            "type_vocab_size": 2, "layer_norm_eps": 1e-12
        });
        EncoderFiles {
            weights,
            vocab: VOCAB.as_bytes().to_vec(),
            config: serde_json::to_vec(&config).unwrap(),
            sentence_config: Some(br#"{"max_seq_length": 8}"#.to_vec()),
        }
    }

    #[test]
    fn a_tiny_encoder_reads_unknown_words_as_the_unknown_token_and_cuts_long_texts() {
        let e = Encoder::parse(&tiny(|_| {})).unwrap();
        assert_eq!(e.dim(), 4);
        assert_eq!(e.max_seq(), 8);
        // [CLS] the db pass ##word [UNK] . [SEP]
        assert_eq!(e.tokens("The DB password zebra."), vec![2, 4, 5, 6, 7, 1, 8, 3]);
        // At most 8 tokens, the markers included.
        assert_eq!(e.tokens("the the the the the the the the the"), vec![2, 4, 4, 4, 4, 4, 4, 3]);
        let v = e.embed("the db password").unwrap();
        let norm: f32 = v.0.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "{norm}");
        assert!(v.0.iter().all(|x| x.is_finite()));
        // The same text gives the same vector; another text another one.
        assert_eq!(e.embed("the db password"), Some(v.clone()));
        assert_ne!(e.embed("the db"), Some(v));
        assert_eq!(e.embed(""), None);
        assert_eq!(e.embed("   "), None);
    }

    #[test]
    fn a_broken_encoder_folder_is_one_error_line_and_no_panic() {
        let err = |files: EncoderFiles| Encoder::parse(&files).unwrap_err().to_string();
        let missing = err(tiny(|t| t.retain(|(n, _)| !n.contains("intermediate.dense.weight"))));
        assert_eq!(
            missing,
            "not an encoder tmws runs: the weights have no tensor `encoder.layer.0.intermediate.dense.weight`"
        );
        let shaped = err(tiny(|t| t[0].1 = vec![9, 5]));
        assert_eq!(
            shaped,
            "not an encoder tmws runs: the tensor `embeddings.word_embeddings.weight` has the shape [9, 5], not [9, 4]"
        );
        let mut files = tiny(|_| {});
        files.config = br#"{"model_type": "gpt2"}"#.to_vec();
        assert_eq!(
            err(files),
            "not an encoder tmws runs: `config.json` names a \"gpt2\" model; only BERT encoders are read"
        );
        let mut files = tiny(|_| {});
        files.vocab = b"[UNK]\n[CLS]\n".to_vec();
        assert_eq!(err(files), "the model file's shapes disagree: 2 tokens in `vocab.txt` for 9 rows");
        let mut files = tiny(|_| {});
        files.weights.truncate(files.weights.len() - 4);
        assert!(err(files).contains("do not hold its shape"));
        let mut files = tiny(|_| {});
        files.weights = b"garbage".to_vec();
        assert!(err(files).starts_with("not a safetensors model file"));
    }

    #[test]
    fn any_text_gives_the_markers_within_the_longest_input_and_a_finite_vector() {
        let e = Encoder::parse(&tiny(|_| {})).unwrap();
        crate::parse::fuzz::check("encoder-any-string", 256, proptest::prelude::any::<String>(), |text| {
            let ids = e.tokens(&text);
            proptest::prop_assert!(ids.len() >= 2 && ids.len() <= 8 && ids[0] == 2 && ids[ids.len() - 1] == 3);
            if let Some(v) = e.embed(&text) {
                proptest::prop_assert!(v.0.iter().all(|x| x.is_finite()));
            }
            Ok(())
        });
    }
}
