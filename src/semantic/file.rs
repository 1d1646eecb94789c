//! The model file: a safetensors file of three tensors (`embeddings`, `scales`, `vocab`)
//! and the metadata that says how to tokenise, read into byte ranges and numbers.
//!
//! Nothing is copied here: the layout names where each tensor's bytes lie in the file, and
//! every size is checked against the others, so that the reader that follows can index the
//! table without a failure. The format is described in `tools/model/README.md`.

use std::ops::Range;

use serde_json::{Map, Value};

use super::ModelError;

/// The `format` metadata value of the one format this reader knows.
pub const FORMAT: &str = "tmws-static-embedding/1";

/// The largest header accepted. The built-in model's is 824 bytes; a header of megabytes is
/// not a model of this format, and reading it would only cost memory.
pub const MAX_HEADER: u64 = 1 << 20;

/// Where the tensors lie in the file, and the tokeniser's settings.
#[derive(Debug)]
pub struct Layout {
    pub dim: usize,
    pub rows: usize,
    /// The `rows × dim` int8 values, row-major.
    pub embeddings: Range<usize>,
    /// The `rows` little-endian f32 scales.
    pub scales: Range<usize>,
    /// The tokens as UTF-8, joined by `\n`.
    pub vocab: Range<usize>,
    pub unk_token: String,
    pub prefix: String,
    pub max_word_chars: usize,
    pub max_tokens: usize,
}

/// A safetensors file's JSON header and the bytes after it (the tensors' data).
pub fn split(bytes: &[u8]) -> Result<(Map<String, Value>, &[u8]), ModelError> {
    let Some((len, rest)) = bytes.split_first_chunk::<8>() else {
        return Err(ModelError::NotSafetensors(format!("{} bytes, shorter than a header", bytes.len())));
    };
    let header_len = u64::from_le_bytes(*len);
    if header_len > MAX_HEADER {
        return Err(ModelError::HeaderTooLarge(header_len));
    }
    // At most MAX_HEADER, so it fits in usize.
    let header_len = header_len as usize;
    if rest.len() < header_len {
        return Err(ModelError::Truncated { header: header_len, available: rest.len() });
    }
    let (header, body) = rest.split_at(header_len);
    let header: Map<String, Value> = serde_json::from_slice(header)
        .map_err(|e| ModelError::NotSafetensors(format!("the header is not a JSON object ({e})")))?;
    Ok((header, body))
}

/// Reads the header of a model file and checks every tensor against the others.
pub fn layout(bytes: &[u8]) -> Result<Layout, ModelError> {
    let (header, body) = split(bytes)?;
    let start = bytes.len() - body.len();

    let meta = match header.get("__metadata__") {
        Some(Value::Object(m)) => m,
        _ => return Err(ModelError::WrongFormat(None)),
    };
    let text = |key: &'static str| match meta.get(key) {
        Some(Value::String(s)) => Ok(s.as_str()),
        Some(_) => Err(ModelError::Metadata { key, problem: "not a string".into() }),
        None => Err(ModelError::Metadata { key, problem: "missing".into() }),
    };
    let number = |key: &'static str| {
        let t = text(key)?;
        match t.parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(ModelError::Metadata { key, problem: format!("{t:?}, not a positive whole number") }),
        }
    };
    match meta.get("format") {
        Some(Value::String(f)) if f == FORMAT => {}
        Some(Value::String(f)) => return Err(ModelError::WrongFormat(Some(f.clone()))),
        _ => return Err(ModelError::WrongFormat(None)),
    }
    let dim = number("dim")?;
    let vocab_size = number("vocab_size")?;
    let unk_token = text("unk_token")?.to_owned();
    let prefix = text("continuing_subword_prefix")?.to_owned();
    let max_word_chars = number("max_input_chars_per_word")?;
    let max_tokens = number("max_tokens")?;

    let embeddings = tensor(&header, "embeddings", "I8", 1, body.len())?;
    let scales = tensor(&header, "scales", "F32", 4, body.len())?;
    let vocab = tensor(&header, "vocab", "U8", 1, body.len())?;

    let [rows, table_dim] = embeddings.shape[..] else {
        return Err(ModelError::Tensor { name: "embeddings", problem: "not of two dimensions".into() });
    };
    if table_dim != dim {
        return Err(ModelError::Shape(format!("rows of {table_dim} values, but metadata dim is {dim}")));
    }
    if rows != vocab_size {
        return Err(ModelError::Shape(format!("{rows} rows, but metadata vocab_size is {vocab_size}")));
    }
    // Token ids are u32.
    if u32::try_from(rows).is_err() {
        return Err(ModelError::Shape(format!("{rows} rows, more than a token id can count")));
    }
    if scales.shape[..] != [rows] {
        return Err(ModelError::Shape(format!("scales of shape {:?} for {rows} rows", scales.shape)));
    }
    if vocab.shape.len() != 1 {
        return Err(ModelError::Tensor { name: "vocab", problem: "not of one dimension".into() });
    }
    let shift = |r: Range<usize>| r.start + start..r.end + start;
    Ok(Layout {
        dim,
        rows,
        embeddings: shift(embeddings.range),
        scales: shift(scales.range),
        vocab: shift(vocab.range),
        unk_token,
        prefix,
        max_word_chars,
        max_tokens,
    })
}

/// A tensor's shape and where its bytes lie in the body.
struct Tensor {
    shape: Vec<usize>,
    range: Range<usize>,
}

/// Reads the entry `name` of the header and checks its type, and that its shape fills its
/// bytes exactly and those bytes lie within the body.
fn tensor(
    header: &Map<String, Value>,
    name: &'static str,
    dtype: &str,
    width: usize,
    body: usize,
) -> Result<Tensor, ModelError> {
    let bad = |problem: String| ModelError::Tensor { name, problem };
    let Some(Value::Object(entry)) = header.get(name) else {
        return Err(ModelError::MissingTensor(name));
    };
    match entry.get("dtype") {
        Some(Value::String(d)) if d == dtype => {}
        other => return Err(bad(format!("dtype {}, not {dtype}", other.map_or("missing".into(), Value::to_string)))),
    }
    let whole = |v: &Value| v.as_u64().and_then(|n| usize::try_from(n).ok());
    let shape: Option<Vec<usize>> = match entry.get("shape") {
        Some(Value::Array(dims)) => dims.iter().map(whole).collect(),
        _ => None,
    };
    let shape = shape.ok_or_else(|| bad("its shape is not a list of whole numbers".into()))?;
    let offsets: Option<Vec<usize>> = match entry.get("data_offsets") {
        Some(Value::Array(o)) if o.len() == 2 => o.iter().map(whole).collect(),
        _ => None,
    };
    let Some(&[begin, end]) = offsets.as_deref() else {
        return Err(bad("its data_offsets are not two whole numbers".into()));
    };
    if begin > end || end > body {
        return Err(bad(format!("bytes {begin}..{end} outside the {body} bytes of data")));
    }
    let size = shape.iter().try_fold(width, |n, d| n.checked_mul(*d));
    if size != Some(end - begin) {
        return Err(ModelError::Shape(format!("{name} of shape {shape:?} in {} bytes", end - begin)));
    }
    Ok(Tensor { shape, range: begin..end })
}
