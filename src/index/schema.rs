//! The tantivy schema: which fields are searched, filtered and stored.

use tantivy::schema::{
    FAST, Field, IndexRecordOption, STORED, STRING, Schema, SchemaBuilder, TextFieldIndexing, TextOptions,
};

use super::analyzer::ANALYZER;

/// Bumped whenever the schema or the analysis changes: an index of another version is
/// rebuilt from the files.
pub const SCHEMA_VERSION: u32 = 19;

/// Handles of every field.
#[derive(Debug, Clone)]
pub struct Fields {
    pub schema: Schema,
    pub ref_id: Field,
    /// A stable number derived from the refId, to order ties the same way in every build.
    pub ref_rank: Field,
    pub kind: Field,
    pub scope: Field,
    /// The scope and each of its ancestors, for scope-prefix filters.
    pub scope_path: Field,
    pub topic: Field,
    pub name: Field,
    pub description: Field,
    /// Tags as searchable text.
    pub tags: Field,
    /// Tags as exact terms, for filters.
    pub tag: Field,
    pub status: Field,
    pub category: Field,
    pub namespace: Field,
    pub created: Field,
    pub updated: Field,
    pub path: Field,
    pub body: Field,
    /// The body where answers return it (T1).
    pub body_stored: Field,
    /// A summary shown but not searched (see `IndexDoc::summary_unsearched`).
    pub summary_stored: Field,
    pub flags: Field,
    /// A memory's expiry, RFC 3339 UTC: text order is time order.
    pub expires: Field,
    pub importance: Field,
    /// When a memory was added, in seconds since the epoch (decay: docs/ranking.md).
    pub added: Field,
    pub agent: Field,
    pub branch: Field,
    /// The commit HEAD was at when a memory was written (12 hex digits, as its log says).
    pub commit: Field,
    /// A memory's upsert key.
    pub key: Field,
    /// An overview's topic fields, as JSON text.
    pub meta: Field,
    /// The item's vector of meaning (`Quantized::to_bytes`), when the model knew a word of
    /// it; kept in the segments, so that it comes and goes with the item.
    pub vector: Field,
    /// The files an item is about (`IndexDoc::cites`), each a raw term.
    pub cites: Field,
    /// The issues an item is about (`IndexDoc::issues`), each a raw term: `#123`,
    /// `owner/repo#12`, `PROJ-7`.
    pub issue: Field,
    /// What makes the vectors a sync writes (none: words only). Not part of the schema: a
    /// sync sets it from the config.
    pub model: Option<super::meaning::Makers>,
}

impl Fields {
    pub fn new() -> Fields {
        let mut b = SchemaBuilder::new();
        let text = |stored: bool| {
            let indexing = TextFieldIndexing::default()
                .set_tokenizer(ANALYZER)
                .set_index_option(IndexRecordOption::WithFreqsAndPositions);
            let opts = TextOptions::default().set_indexing_options(indexing);
            if stored { opts.set_stored() } else { opts }
        };
        let ref_id = b.add_text_field("ref_id", STRING | STORED | FAST);
        let ref_rank = b.add_u64_field("ref_rank", FAST);
        let kind = b.add_text_field("kind", STRING | STORED);
        let scope = b.add_text_field("scope", STRING | STORED);
        let scope_path = b.add_text_field("scope_path", STRING);
        let topic = b.add_text_field("topic", STRING | STORED);
        let name = b.add_text_field("name", text(true));
        let description = b.add_text_field("description", text(true));
        let tags = b.add_text_field("tags", text(false));
        let tag = b.add_text_field("tag", STRING | STORED);
        let status = b.add_text_field("status", STRING | STORED);
        let category = b.add_text_field("category", STRING | STORED | FAST);
        let namespace = b.add_text_field("namespace", STRING | STORED | FAST);
        let created = b.add_text_field("created", STRING | STORED);
        let updated = b.add_text_field("updated", STRING | STORED);
        let path = b.add_text_field("path", STORED);
        let body = b.add_text_field("body", text(false));
        let body_stored = b.add_text_field("body_stored", STORED);
        let summary_stored = b.add_text_field("summary_stored", STORED);
        let flags = b.add_text_field("flags", STRING | STORED);
        let expires = b.add_text_field("expires", STRING | STORED);
        let importance = b.add_f64_field("importance", FAST | STORED);
        let added = b.add_i64_field("added", FAST);
        let agent = b.add_text_field("agent", STRING | STORED | FAST);
        let branch = b.add_text_field("branch", STRING | STORED | FAST);
        let commit = b.add_text_field("commit", STRING | STORED | FAST);
        let key = b.add_text_field("key", STRING | STORED);
        let meta = b.add_text_field("meta", STORED);
        let vector = b.add_bytes_field("vector", FAST);
        let cites = b.add_text_field("cites", STRING);
        let issue = b.add_text_field("issue", STRING | STORED);
        Fields {
            schema: b.build(),
            ref_id,
            ref_rank,
            kind,
            scope,
            scope_path,
            topic,
            name,
            description,
            tags,
            tag,
            status,
            category,
            namespace,
            created,
            updated,
            path,
            body,
            body_stored,
            summary_stored,
            flags,
            expires,
            importance,
            added,
            agent,
            branch,
            commit,
            key,
            meta,
            vector,
            cites,
            issue,
            model: None,
        }
    }
}

/// The tie-break rank of a refId: the first 8 bytes of its blake3 hash.
pub fn ref_rank(ref_id: &str) -> u64 {
    let hash = blake3::hash(ref_id.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&hash.as_bytes()[..8]);
    u64::from_be_bytes(first)
}

impl Default for Fields {
    fn default() -> Self {
        Fields::new()
    }
}
