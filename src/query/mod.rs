//! The query layer: the one library API that every surface calls.
//!
//! [`Engine`] is an open root; each tool is a method that takes its request type from
//! [`api`] (defined once, with the parameter descriptions, defaults and limits every
//! surface publishes) and gives a typed answer that [`answer`] writes as YAML or JSON within
//! its cap. [`catalog`] lists the tools as clients see them. The modules below the engine
//! hold each tool's logic: `context`, `memory`, `tools`, `registry`, `session`, `trust`,
//! `hook`; `keeper` keeps the index fresh and `metrics` counts.

pub mod answer;
pub mod api;
pub mod approval;
mod ask;
pub mod autowatch;
mod background;
pub mod brief;
pub mod catalog;
pub mod cites;
pub mod context;
mod engine;
pub mod hook;
mod keeper;
mod live;
pub mod memory;
mod metrics;
pub mod model;
pub mod read;
pub mod recall;

pub mod registry;
pub mod review;
pub mod session;
pub mod task;
pub mod tools;
pub mod trust;
pub mod upkeep;
pub mod verify;
pub mod view;
pub mod write;
#[cfg(test)]
mod written;
pub(crate) mod yaml;

pub use self::answer::{Answer, Reply};
pub use self::engine::{Engine, Health, Session};
pub use self::keeper::STALE_WAIT;
pub use self::live::Handle;
pub use crate::index::watch::WatchUpdate;
pub use crate::index::{SearchHit, SearchResults as SearchAnswer, SyncOptions, SyncPhase, SyncProgress, SyncReport};

impl Answer for SearchAnswer {
    fn plan(&self, value: &serde_json::Value) -> answer::Plan {
        answer::Plan::list_from_end(
            value,
            "/results",
            "results",
            "ask for fewer results (limit) or narrower filters, or raise max_chars (up to 100000)",
        )
    }
}

impl Answer for recall::RecallAnswer {
    fn plan(&self, value: &serde_json::Value) -> answer::Plan {
        answer::Plan::list_from_end(
            value,
            "/results",
            "results",
            "ask for fewer results (limit), read one by its refId (workspace_read), or raise max_chars",
        )
    }
}

impl Answer for tools::ToolResults {
    fn plan(&self, value: &serde_json::Value) -> answer::Plan {
        answer::Plan::list_from_end(value, "/results", "results", "ask for fewer results (limit), or raise max_chars")
    }
}

impl Answer for memory::MemorySearchAnswer {
    fn plan(&self, value: &serde_json::Value) -> answer::Plan {
        let mut plan = answer::Plan::list_from_end(
            value,
            "/results",
            "results",
            "ask for fewer results (limit), leave out include_content, or raise max_chars (up to 100000)",
        );
        // Previews go before whole results, from the last result up.
        let n = value.pointer("/results").and_then(serde_json::Value::as_array).map_or(0, Vec::len);
        let previews: Vec<(String, &'static str)> = (0..n)
            .rev()
            .map(|i| format!("/results/{i}/content_preview"))
            .filter(|p| value.pointer(p).is_some())
            .map(|p| (p, "content_preview"))
            .collect();
        plan.order.insert(0, "content_preview");
        plan.steps.splice(0..0, previews);
        plan
    }
}

impl Answer for memory::MemoryListAnswer {
    fn plan(&self, value: &serde_json::Value) -> answer::Plan {
        answer::Plan::list_from_end(value, "/results", "results", "ask for fewer results (limit), or raise max_chars")
    }
}

impl Answer for memory::MemoryHit {}
impl Answer for read::WorkspaceList {}
impl Answer for memory::AddAnswer {}
impl Answer for memory::Deleted {}
impl Answer for memory::Stats {}
impl Answer for memory::maint::Cleaned {}
impl Answer for memory::maint::Cleared {}
impl Answer for session::SessionAnswer {}
impl Answer for trust::Verified {}

impl Answer for trust::TrustList {
    fn plan(&self, value: &serde_json::Value) -> answer::Plan {
        answer::Plan::list_from_end(value, "/agents", "agents", "raise max_chars")
    }
}

impl Answer for tools::ToolDescription {
    fn plan(&self, value: &serde_json::Value) -> answer::Plan {
        let mut plan = answer::Plan::texts_of(value);
        plan.texts.retain(|p| !p.starts_with("/input_schema"));
        plan.steps = vec![("/input_schema".into(), "input_schema")];
        plan.order = vec!["input_schema"];
        plan
    }
}
