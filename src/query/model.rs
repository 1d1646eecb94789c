//! `tmws model`: the embedding model recall by meaning uses (docs/ranking.md#meaning), and
//! how far the index's vectors are its.

use std::path::Path;

use serde::Serialize;

use crate::config::{Config, ModelChoice};
use crate::error::Result;
use crate::index::{Index, meaning};

/// The built-in model's sha256, as the build checked it.
const BUILTIN_SHA256: &str = include_str!("../../assets/model/static-minilm-l6.safetensors.sha256");

/// What `tmws model` shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelStatus {
    /// `builtin`, `off`, or the model's folder, as `[semantic] model` says.
    pub model: String,
    /// Whether recall is by meaning as well as by words.
    pub active: bool,
    /// What the model is, where it came from and under which licence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub about: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub licence: Option<String>,
    /// Values per vector.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dimensions: Option<usize>,
    /// Tokens of its vocabulary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vocabulary: Option<usize>,
    /// The first 16 hex digits of the model file's sha256: what names it in the index.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// The built-in model's whole sha256, which the build checks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Items in the index.
    pub items: u64,
    /// Items with a vector (an item with no word the model knows has none).
    pub vectors: u64,
    /// Whether the index's vectors are this model's: when not, the next sync makes them.
    pub current: bool,
    /// The encoder that gives memories their vectors (`[semantic] memories`), when one is
    /// named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memories: Option<EncoderStatus>,
}

/// What `tmws model` shows of the memories' encoder.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EncoderStatus {
    /// The folder, as `[semantic] memories` says.
    pub folder: String,
    /// Whether it was read and runs: when not, memories take the model's vectors (the log
    /// says why).
    pub active: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dimensions: Option<usize>,
    /// The longest input in tokens; the rest of a longer memory is not read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
}

/// The status of `root`'s model and of `index`'s vectors.
pub(crate) fn status(root: &Path, config: &Config, index: &Index) -> Result<ModelStatus> {
    let makers = meaning::makers_for(root, config);
    let model = makers.map(|m| m.model);
    let (indexed_by, items, vectors) = index.vectors()?;
    let memories = config.semantic.encoder().map(|folder| {
        let encoder = makers.and_then(|m| m.encoder);
        EncoderStatus {
            folder: folder.display().to_string(),
            active: encoder.is_some(),
            dimensions: encoder.map(|e| e.dim()),
            max_tokens: encoder.map(|e| e.max_seq()),
            fingerprint: encoder.map(|e| e.fingerprint().to_owned()),
        }
    });
    let builtin = config.semantic.choice() == ModelChoice::Builtin;
    Ok(ModelStatus {
        model: config.semantic.model.clone(),
        active: model.is_some(),
        about: model.map(|_| {
            if builtin {
                "static embedding model distilled from sentence-transformers/all-MiniLM-L6-v2 (English), built into tmws"
                    .to_owned()
            } else {
                format!("static embedding model of {}/{}", config.semantic.model, meaning::MODEL_FILE)
            }
        }),
        licence: (builtin && model.is_some()).then(|| "Apache-2.0".to_owned()),
        dimensions: model.map(|m| m.dim()),
        vocabulary: model.map(|m| m.vocab_size()),
        fingerprint: model.map(|m| m.fingerprint().to_owned()),
        sha256: (builtin && model.is_some()).then(|| BUILTIN_SHA256.split_whitespace().next().unwrap_or("").to_owned()),
        items,
        vectors,
        current: indexed_by == makers.map(|m| m.fingerprint()),
        memories,
    })
}
