//! The enums a topic overview imposes on its entries (`status_values`, `category_values`,
//! docs/workspace-documents.md), and the schemas they make: a project's override or the built-in
//! schema of the topic, with the nearest overview's enums applied. Each is compiled once per check.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::lock;
use crate::layout;
use crate::model::Scope;
use crate::parse::{markdown, yaml};
use crate::schema::{Builtin, Compiled};
use crate::store;

/// The enums one topic overview lists.
#[derive(Debug, Default)]
struct TopicEnums {
    status: Option<Vec<String>>,
    category: Option<Vec<String>>,
}

/// The schemas of one root's check.
#[derive(Debug, Default)]
pub(super) struct Schemas {
    root: Option<PathBuf>,
    /// Compiled schema overrides from `.tmws/schemas/`, by name.
    overrides: HashMap<String, Arc<Compiled>>,
    /// Schemas with a topic overview's enums applied, by topic and enums.
    effective: std::sync::Mutex<HashMap<String, Arc<Compiled>>>,
    /// Parsed topic overviews (None: no such file), by absolute path.
    overviews: std::sync::Mutex<HashMap<PathBuf, Option<Arc<TopicEnums>>>>,
}

impl Schemas {
    /// The overrides of `root` that compile (those that do not are findings of their own).
    pub(super) fn new(root: Option<&Path>) -> Schemas {
        let mut overrides = HashMap::new();
        if let Some(root) = root {
            let dir = root.join(layout::SCHEMAS_DIR);
            for name in store::list_dir(root, &dir).unwrap_or_default() {
                let Some(stem) = name.strip_suffix(".schema.json") else { continue };
                let Ok(bytes) = store::read(root, &dir.join(&name), store::cap::CONFIG) else { continue };
                let Ok(json) = serde_json::from_slice::<Value>(&bytes) else { continue };
                if let Ok(c) = Compiled::new(json) {
                    // A topic's override may be named in the singular (`decision`); the
                    // folder's own name wins when both are there.
                    let topic = layout::topic_name(stem);
                    if topic == stem {
                        overrides.insert(topic, Arc::new(c));
                    } else {
                        overrides.entry(topic).or_insert_with(|| Arc::new(c));
                    }
                }
            }
        }
        Schemas { root: root.map(Path::to_path_buf), overrides, ..Schemas::default() }
    }

    /// The project's override of `name`, else the built-in schema.
    pub(super) fn of(&self, name: &str, builtin: Builtin) -> &Compiled {
        self.overrides.get(name).map_or(builtin.compiled(), |c| c.as_ref())
    }

    /// The schema of a topic's entries, with the nearest topic overview's enums applied.
    pub(super) fn entry_schema(&self, scope: &Scope, topic: &str) -> Arc<Compiled> {
        let base: Option<&Arc<Compiled>> = self.overrides.get(topic);
        let (status, category) = self.topic_enums(scope, topic);
        let key = format!("{topic}\u{0}{status:?}\u{0}{category:?}");
        if let Some(c) = lock(&self.effective).get(&key) {
            return c.clone();
        }
        let mut json = base.map_or_else(|| Builtin::for_topic(topic).json().clone(), |c| c.json().clone());
        for (field, values) in [("status", &status), ("category", &category)] {
            if let (Some(values), Some(props)) = (values, json.get_mut("properties").and_then(Value::as_object_mut)) {
                let mut prop = props.get(field).cloned().unwrap_or_else(|| serde_json::json!({"type": "string"}));
                prop["enum"] = Value::from(values.clone());
                props.insert(field.to_owned(), prop);
            }
        }
        let compiled = Compiled::new(json).map(Arc::new).unwrap_or_else(|_| {
            Arc::new(Compiled::new(Builtin::for_topic(topic).json().clone()).unwrap_or_else(|_| unreachable_schema()))
        });
        lock(&self.effective).insert(key, compiled.clone());
        compiled
    }

    /// The nearest non-empty `status_values` and `category_values` up the scope ladder.
    fn topic_enums(&self, scope: &Scope, topic: &str) -> (Option<Vec<String>>, Option<Vec<String>>) {
        let Some(root) = &self.root else { return (None, None) };
        let (mut status, mut category) = (None, None);
        for s in layout::scope_ladder(scope) {
            let path = root.join(layout::topic_dir(&s, topic)).join(layout::OVERVIEW);
            let cached = lock(&self.overviews).get(&path).cloned();
            let enums = match cached {
                Some(e) => e,
                None => {
                    let parsed = store::read(root, &path, store::cap::MARKDOWN).ok().map(|bytes| {
                        let doc = markdown::parse(&bytes);
                        let list = |key: &str| -> Option<Vec<String>> {
                            let items = match &doc.mapping()?.get(key)?.value.value {
                                yaml::Value::Seq(items) => items,
                                _ => return None,
                            };
                            let v: Vec<String> = items.iter().map(|n| n.key_text().into_owned()).collect();
                            (!v.is_empty()).then_some(v)
                        };
                        Arc::new(TopicEnums { status: list("status_values"), category: list("category_values") })
                    });
                    lock(&self.overviews).insert(path, parsed.clone());
                    parsed
                }
            };
            if let Some(e) = enums {
                status = status.or_else(|| e.status.clone());
                category = category.or_else(|| e.category.clone());
            }
        }
        (status, category)
    }
}

fn unreachable_schema() -> Compiled {
    Compiled::new(Value::Bool(true)).unwrap_or_else(|e| panic!("the empty schema compiles: {e}"))
}
