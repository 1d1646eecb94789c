//! The sparse registry of MCP servers (docs/registry.md), `.tmws/registry/index.json`: the
//! [`Registry`] type, which `registry build` writes and every reader reads, and from which
//! `schemas/registry.schema.json` is generated.
//!
//! People edit the file, so reading is lenient: a field of the wrong shape is read as
//! absent (`check` reports it against the schema), a server or tool that is not an object
//! is read as one with no fields, and fields tmws does not know are kept, so that a build
//! writes them back. A server's connection is kept as it was written. The file is written
//! pretty-printed, its fields in the order they are declared here and its servers and
//! tools by name, so that people can diff it.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use super::clients::Connection;
use super::lenient;

/// The version this tmws writes.
pub const VERSION: &str = "1";

/// The registry: every server of the client configs that was introspected, and its tools.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(
    title = "Sparse registry of MCP servers (.tmws/registry/index.json)",
    extend("$id" = "registry.schema.json", "additionalProperties" = false)
)]
pub struct Registry {
    /// The format's version.
    #[serde(default, deserialize_with = "lenient::or_default")]
    #[schemars(extend("const" = "1"))]
    pub version: String,
    /// The servers, by name.
    #[serde(default, deserialize_with = "lenient::map")]
    pub servers: BTreeMap<String, Server>,
}

/// One server: how it is reached, what tmws measured, and its tools.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(extend("required" = ["connection", "tools"]))]
pub struct Server {
    /// What it does: the first line of its instructions, or a person's words (kept by
    /// every build).
    #[serde(default, deserialize_with = "lenient::option", skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// blake3 of its stored connection's canonical JSON: a server whose hash is unchanged
    /// is not introspected again.
    #[serde(default, deserialize_with = "lenient::option", skip_serializing_if = "Option::is_none")]
    pub config_hash: Option<String>,
    /// How it is reached, as its client config says (secret-looking values as `${VAR}`
    /// references or redacted), kept as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Connection")]
    pub connection: Option<Value>,
    /// Whether its connection stays open between calls (kept by every build).
    #[serde(default, deserialize_with = "lenient::option", skip_serializing_if = "Option::is_none")]
    pub persistent: Option<bool>,
    /// How long an idle connection is kept, in seconds (kept by every build).
    #[serde(default, deserialize_with = "lenient::option", skip_serializing_if = "Option::is_none")]
    pub ttl_secs: Option<u64>,
    /// What tmws measured.
    #[serde(default, deserialize_with = "lenient::option", skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    /// Its tools, by name.
    #[serde(default, deserialize_with = "lenient::map")]
    pub tools: BTreeMap<String, Tool>,
    /// Fields a person added, kept as they are.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// What tmws measured of a server.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
pub struct Metadata {
    /// How long it took to start and list its tools, in milliseconds.
    #[serde(default, deserialize_with = "lenient::option", skip_serializing_if = "Option::is_none")]
    pub cold_start_ms: Option<u64>,
    /// When it was introspected (RFC 3339).
    #[serde(default, deserialize_with = "lenient::option", skip_serializing_if = "Option::is_none")]
    pub introspected_at: Option<String>,
    /// Its share of this machine's tool calls of the last 30 days, 0 to 1.
    #[serde(default, deserialize_with = "lenient::option", skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1))]
    pub popularity: Option<f64>,
    /// Why its last introspection failed (URLs without user info or query values, redacted).
    #[serde(default, deserialize_with = "lenient::option", skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Fields a person added, kept as they are.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl Serialize for Metadata {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // A server never introspected has its error first, then its popularity: the order
        // builds have always written it in (an error added to one that was introspected
        // comes last).
        let introspected = self.cold_start_ms.is_some() || self.introspected_at.is_some();
        let mut m = s.serialize_map(None)?;
        if !introspected && let Some(e) = &self.error {
            m.serialize_entry("error", e)?;
        }
        if let Some(ms) = &self.cold_start_ms {
            m.serialize_entry("cold_start_ms", ms)?;
        }
        if let Some(at) = &self.introspected_at {
            m.serialize_entry("introspected_at", at)?;
        }
        if let Some(p) = &self.popularity {
            m.serialize_entry("popularity", p)?;
        }
        if introspected && let Some(e) = &self.error {
            m.serialize_entry("error", e)?;
        }
        for (k, v) in &self.other {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// A tool of a server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Tool {
    /// What it does, as the server says (or a person's words, kept by every build).
    #[serde(default, deserialize_with = "lenient::option", skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON Schema of its arguments, as the server gives it.
    #[serde(default, deserialize_with = "lenient::option", skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Map<String, Value>>,
    /// A person's grouping of tools (kept by every build).
    #[serde(default, deserialize_with = "lenient::option", skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// When to use it, in a person's words (kept by every build).
    #[serde(default, deserialize_with = "lenient::option", skip_serializing_if = "Option::is_none")]
    pub usage_hint: Option<String>,
    /// The tools to call before it (kept by every build).
    #[serde(default, deserialize_with = "lenient::option", skip_serializing_if = "Option::is_none")]
    pub dependencies: Option<Vec<String>>,
    /// Fields a person added, kept as they are.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl Registry {
    /// Reads the registry's text: an error when it is not JSON, None when it is JSON but
    /// not an object; every field that is there is read as far as it has its shape.
    pub fn read(text: &str) -> serde_json::Result<Option<Registry>> {
        match serde_json::from_str::<Value>(text)? {
            v @ Value::Object(_) => serde_json::from_value(v).map(Some),
            _ => Ok(None),
        }
    }

    /// The file's text: pretty-printed JSON and a final newline.
    pub fn text(&self) -> serde_json::Result<String> {
        let mut text = serde_json::to_string_pretty(self)?;
        text.push('\n');
        Ok(text)
    }
}

/// The JSON Schema of the registry, generated from [`Registry`].
pub fn schema() -> schemars::Schema {
    crate::schema::generator().into_root_schema_for::<Registry>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registry_a_build_wrote_reads_and_writes_back_byte_for_byte() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/formats/registry/index.json");
        let text = std::fs::read_to_string(path).unwrap();
        let reg = Registry::read(&text).unwrap().unwrap();
        assert_eq!(reg.text().unwrap(), text);
        let serena = &reg.servers["serena"];
        assert_eq!((serena.ttl_secs, serena.other["notes"].as_str()), (Some(60), Some("kept by hand")));
        assert_eq!(serena.tools["echo"].category.as_deref(), Some("util"));
        assert_eq!(
            reg.servers["broken"].metadata.as_ref().and_then(|m| m.error.as_deref()).map(|e| e.len() > 10),
            Some(true)
        );
    }

    #[test]
    fn a_hand_edit_of_the_wrong_shape_is_read_as_absent() {
        let reg = Registry::read(
            r#"{"version": 1, "servers": {"a": {"persistent": "no", "ttl_secs": -1, "tools": {"t": 5, "u": {"description": 3}}}, "b": 7}}"#,
        )
        .unwrap()
        .unwrap();
        assert_eq!(reg.version, "");
        let a = &reg.servers["a"];
        assert_eq!((a.persistent, a.ttl_secs), (None, None));
        assert_eq!((a.tools["t"].description.as_deref(), a.tools["u"].description.as_deref()), (None, None));
        assert_eq!(reg.servers["b"], Server::default());
        assert_eq!(Registry::read("[]").unwrap(), None);
        assert!(Registry::read("{").unwrap_err().is_eof());
    }
}
