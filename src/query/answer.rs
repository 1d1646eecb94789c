//! Answers as text, within their cap (docs/answers.md): YAML by default, JSON on request, never
//! longer than `max_chars` characters however small it is.
//!
//! An answer is a `Serialize` struct. It says what may be cut from it when it is too long
//! (a [`Plan`]: pieces to drop in order, then long texts to shorten), and [`fit`] cuts it:
//! it drops as many pieces as their estimated sizes say are needed, measures the real text,
//! and goes on from there, so that a large answer is rendered a few times, not once per
//! piece. A cut answer says `truncated: true` and a `hint` naming what was left out and
//! how to get it. One cutter serves every tool.

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::api::Format;
use super::yaml::to_yaml;

/// For `skip_serializing_if`: a count of nothing is left out of an answer.
#[allow(clippy::trivially_copy_pass_by_ref)]
pub(crate) fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// An answer of a tool.
pub trait Answer: Serialize {
    /// Drops from `value` (the answer's JSON form), before anything is written, what could
    /// not fit `max` characters whatever else were cut; returns what it dropped, by name.
    fn prepare(&self, value: &mut Value, max: usize) -> Vec<(&'static str, usize)> {
        let _ = (value, max);
        Vec::new()
    }

    /// What may be cut from the answer, and in which order; asked only when it is over its
    /// cap.
    fn plan(&self, value: &Value) -> Plan {
        Plan::texts_of(value)
    }
}

impl<T: Answer> Answer for &T {
    fn prepare(&self, value: &mut Value, max: usize) -> Vec<(&'static str, usize)> {
        (*self).prepare(value, max)
    }

    fn plan(&self, value: &Value) -> Plan {
        (*self).plan(value)
    }
}

/// What may be cut from an answer, in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    /// Pieces to drop, first to last: a JSON pointer to an object's field or an array's
    /// item, and what it counts as in the hint.
    pub steps: Vec<(String, &'static str)>,
    /// Texts to shorten, longest first, when dropping every piece is not enough.
    pub texts: Vec<String>,
    /// The hint's names of what was left out, in the order it lists them.
    pub order: Vec<&'static str>,
    /// Pieces left out before the answer was made (items never read because they could not
    /// have fit), by name.
    pub pre: Vec<(&'static str, usize)>,
    /// How to get what was left out: the end of the hint.
    pub advice: String,
}

impl Plan {
    /// A plan that only shortens the answer's texts.
    pub fn texts_of(value: &Value) -> Plan {
        let mut texts = Vec::new();
        strings(value, &mut String::new(), &mut texts, &|_| true);
        Plan { texts, advice: "raise max_chars (up to 100000)".into(), ..Plan::default() }
    }

    /// A plan that drops the items of the list at `list` from the last, then shortens texts.
    pub fn list_from_end(value: &Value, list: &str, label: &'static str, advice: &str) -> Plan {
        let n = value.pointer(list).and_then(Value::as_array).map_or(0, Vec::len);
        let mut plan = Plan::texts_of(value);
        plan.steps = (0..n).rev().map(|i| (format!("{list}/{i}"), label)).collect();
        plan.order = vec![label];
        plan.advice = advice.to_owned();
        plan
    }
}

/// A JSON pointer from its parts.
pub fn pointer(parts: &[&str]) -> String {
    parts.iter().fold(String::new(), |mut p, part| {
        p.push('/');
        p.push_str(&part.replace('~', "~0").replace('/', "~1"));
        p
    })
}

/// Every string below `v` whose key passes `keep`, as pointers.
pub(crate) fn strings(v: &Value, at: &mut String, out: &mut Vec<String>, keep: &dyn Fn(&str) -> bool) {
    match v {
        Value::Object(m) => {
            for (k, val) in m {
                let len = at.len();
                at.push_str(&pointer(&[k]));
                match val {
                    Value::String(_) if keep(k) => out.push(at.clone()),
                    Value::String(_) => {}
                    other => strings(other, at, out, keep),
                }
                at.truncate(len);
            }
        }
        Value::Array(a) => {
            for (i, val) in a.iter().enumerate() {
                let len = at.len();
                at.push_str(&format!("/{i}"));
                if let Value::String(_) = val {
                    out.push(at.clone());
                } else {
                    strings(val, at, out, keep);
                }
                at.truncate(len);
            }
        }
        _ => {}
    }
}

/// An answer with what it is written as.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply<T> {
    pub answer: T,
    pub format: Format,
    /// The cap on the text's length in characters.
    pub max_chars: usize,
}

impl<T: Answer> Reply<T> {
    /// The answer as its text, cut to its cap.
    pub fn text(&self) -> String {
        self.written().1
    }

    /// The answer's JSON form cut to its cap, and its text: the text is that value written
    /// in the answer's format, so the two always say the same.
    pub fn written(&self) -> (Value, String) {
        let mut value = shown(&self.answer);
        let pre = self.answer.prepare(&mut value, self.max_chars);
        if pre.iter().all(|(_, n)| *n == 0) {
            // The usual case: it fits, and is written once.
            let text = render(&value, self.format);
            if text.chars().count() <= self.max_chars {
                return (value, text);
            }
        }
        let value = self.cut(value, pre);
        let text = render(&value, self.format);
        (value, text)
    }

    /// The answer's JSON form, cut to its cap.
    pub fn value(&self) -> Value {
        let mut value = shown(&self.answer);
        let pre = self.answer.prepare(&mut value, self.max_chars);
        self.cut(value, pre)
    }

    fn cut(&self, value: Value, pre: Vec<(&'static str, usize)>) -> Value {
        let mut plan = self.answer.plan(&value);
        plan.pre = pre;
        fit(value, self.format, self.max_chars, &plan)
    }
}

/// The key a structured answer that is not an object is found under.
pub const WRAPPED: &str = "result";

/// An answer's JSON form as MCP structured content, which must be an object: an object as
/// it is, any other value as `{"result": value}`.
pub fn structured(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(m) => m,
        other => Map::from_iter([(WRAPPED.to_owned(), other)]),
    }
}

/// The JSON Schema (2020-12) of what [`structured`] makes of an answer of type `T`, as
/// `tools/list` publishes it (`outputSchema`): made from the type, so it describes what is
/// written (a field left out when empty is optional and never null, a flattened field is
/// the object's own), every object closed to fields it does not name, with the marks of
/// an answer cut to its cap: `truncated` and `hint`, and, once cut to nothing else, only
/// those two; and the `{error, category, hint}` of an error result.
pub fn output_schema<T: schemars::JsonSchema>() -> Map<String, Value> {
    let schema = crate::schema::generator().into_root_schema_for::<T>();
    let Value::Object(mut root) = schema.to_value() else { return Map::new() };
    // The Rust type's name says nothing to a client.
    root.remove("$schema");
    root.remove("title");
    if root.get("type").and_then(Value::as_str) != Some("object") {
        root = Map::from_iter([
            ("type".to_owned(), json!("object")),
            ("properties".to_owned(), json!({ WRAPPED: Value::Object(root) })),
            ("required".to_owned(), json!([WRAPPED])),
        ]);
    }
    close(&mut root);
    let properties = root.entry("properties").or_insert_with(|| json!({}));
    if let Value::Object(p) = properties {
        p.entry("truncated").or_insert_with(|| {
            json!({"type": "boolean", "description": "The answer was cut to fit max_chars; `hint` says what was left out."})
        });
        p.entry("hint")
            .or_insert_with(|| json!({"type": "string", "description": "What was left out, and how to get it."}));
        // An error result (`isError: true`) carries `{error, category, hint}` instead; clients
        // that validate error results too (the MCP Inspector does) find it described.
        p.entry("error").or_insert_with(|| json!({"type": "string", "description": "An error result's message."}));
        p.entry("category").or_insert_with(
            || json!({"type": "string", "description": "An error result's category (`usage`, `not_found`, …)."}),
        );
    }
    // A cut answer may have lost whole fields, down to only its marks.
    if let Some(required) = root.remove("required").filter(|r| r.as_array().is_some_and(|a| !a.is_empty())) {
        root.insert(
            "anyOf".to_owned(),
            json!([
                {"required": required},
                {"required": ["truncated", "hint"], "properties": {"truncated": {"const": true}}},
                {"required": ["error", "category"]},
            ]),
        );
    }
    let mut out = Map::from_iter([("$schema".to_owned(), json!("https://json-schema.org/draft/2020-12/schema"))]);
    out.extend(root);
    out
}

/// The schema of a field that may hold any JSON value (a document's front-matter, as its
/// author wrote it): each type as its own branch, which every client's schema dialect reads.
pub fn any_json(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "anyOf": [
            {"type": "object"},
            {"type": "array"},
            {"type": "string"},
            {"type": "number"},
            {"type": "boolean"},
            {"type": "null"},
        ]
    })
}

/// Closes every object schema that names its properties and says nothing of others: the
/// answer types have no field their schema does not name.
fn close(schema: &mut Map<String, Value>) {
    if schema.contains_key("properties") && !schema.contains_key("additionalProperties") {
        schema.insert("additionalProperties".to_owned(), Value::Bool(false));
    }
    for (key, v) in schema.iter_mut() {
        match (key.as_str(), v) {
            ("properties" | "$defs", Value::Object(m)) => {
                m.values_mut().filter_map(Value::as_object_mut).for_each(close);
            }
            ("items" | "additionalProperties" | "not", Value::Object(m)) => close(m),
            ("anyOf" | "oneOf" | "allOf" | "prefixItems", Value::Array(a)) => {
                a.iter_mut().filter_map(Value::as_object_mut).for_each(close);
            }
            _ => {}
        }
    }
}

/// Any serialisable value as text in `format`, uncut (what the CLI prints for the answers of
/// its own commands).
pub fn to_text<T: Serialize + ?Sized>(value: &T, format: Format) -> String {
    render(&shown(value), format)
}

/// An answer's JSON form as it may be shown: every string redacted
/// (docs/trust-boundary.md#secrets), so that a secret in a hand-edited file or an old log never
/// reaches a client, whatever the surface.
fn shown<T: Serialize + ?Sized>(answer: &T) -> Value {
    let mut value = serde_json::to_value(answer).unwrap_or(Value::Null);
    crate::redact::redact_value(&mut value);
    value
}

/// A value as the text of an answer (no final newline for JSON, one for YAML).
pub fn render(value: &Value, format: Format) -> String {
    match format {
        Format::Json => serde_json::to_string_pretty(value).unwrap_or_default(),
        Format::Yaml => to_yaml(value),
    }
}

fn size(v: &Value, format: Format) -> usize {
    render(v, format).chars().count()
}

/// Cuts `value` until its text fits in `max` characters, in the plan's order, and says so.
pub fn fit(value: Value, format: Format, max: usize, plan: &Plan) -> Value {
    let full = size(&value, format);
    if full <= max && plan.pre.iter().all(|(_, n)| *n == 0) {
        return value;
    }
    // The size of a piece written `depth` levels in.
    let cost = |v: &Value, depth: usize| {
        let text = render(v, format);
        text.chars().count() + 2 * depth * text.lines().count()
    };
    // The steps below each pointer, so that a piece is measured without what goes before it
    // (an entry without its body, when the bodies go first).
    let mut inside: std::collections::HashMap<&str, Vec<usize>> = std::collections::HashMap::new();
    for (j, (p, _)) in plan.steps.iter().enumerate() {
        for (at, _) in p.match_indices('/').skip(1) {
            inside.entry(&p[..at]).or_default().push(j);
        }
    }
    let costs: Vec<usize> = plan
        .steps
        .iter()
        .enumerate()
        .map(|(i, (p, _))| {
            let (parent, key) = p.rsplit_once('/').unwrap_or(("", p));
            let depth = p.matches('/').count();
            let Some(piece) = value.pointer(p) else { return 0 };
            let earlier: Vec<(String, &'static str)> = inside
                .get(p.as_str())
                .map(|js| js.iter().filter(|j| **j < i).map(|j| (plan.steps[*j].0[p.len()..].to_owned(), "")).collect())
                .unwrap_or_default();
            let piece = if earlier.is_empty() { piece.clone() } else { drop_pieces(piece, &earlier) };
            match value.pointer(parent) {
                // A field is written at its object's indentation, an item one level in.
                Some(Value::Object(_)) => cost(&json!({ key: piece }), depth - 1),
                _ => cost(&piece, depth),
            }
        })
        .collect();
    // Room for the hint that says what was cut.
    let target = max.saturating_sub(400);
    let (mut k, mut estimate) = (0, full);
    loop {
        while k < plan.steps.len() && estimate > target {
            estimate = estimate.saturating_sub(costs[k]);
            k += 1;
        }
        let v = mark(drop_pieces(&value, &plan.steps[..k]), &plan.steps[..k], plan);
        let real = size(&v, format);
        if real <= max {
            return v;
        }
        if k == plan.steps.len() {
            return shorten(v, format, max, plan);
        }
        estimate = real;
    }
}

/// `value` without the pieces of `steps`.
fn drop_pieces(value: &Value, steps: &[(String, &'static str)]) -> Value {
    let mut v = value.clone();
    let mut lists: Vec<&str> = Vec::new();
    for (p, _) in steps {
        let Some((parent, key)) = p.rsplit_once('/') else { continue };
        match v.pointer_mut(parent) {
            Some(Value::Array(a)) => {
                if let Some(item) = key.parse::<usize>().ok().and_then(|i| a.get_mut(i)) {
                    *item = Value::Null;
                    lists.push(parent);
                }
            }
            Some(Value::Object(m)) => {
                m.remove(&key.replace("~1", "/").replace("~0", "~"));
            }
            _ => {}
        }
    }
    lists.sort_unstable();
    lists.dedup();
    for list in lists {
        if let Some(Value::Array(a)) = v.pointer_mut(list) {
            a.retain(|item| !item.is_null());
        }
    }
    v
}

/// Adds `truncated` and a `hint` naming what `done` (and the plan's `pre`) left out.
fn mark(mut v: Value, done: &[(String, &'static str)], plan: &Plan) -> Value {
    let mut counts: Vec<(&str, usize)> = plan.order.iter().map(|l| (*l, 0)).collect();
    for label in plan.pre.iter().flat_map(|(l, n)| std::iter::repeat_n(*l, *n)).chain(done.iter().map(|(_, l)| *l)) {
        match counts.iter_mut().find(|(l, _)| *l == label) {
            Some((_, n)) => *n += 1,
            None => counts.push((label, 1)),
        }
    }
    let parts: Vec<String> = counts.iter().filter(|(_, n)| *n > 0).map(|(l, n)| format!("{n} {l}")).collect();
    let left_out =
        if parts.is_empty() { "long texts were cut".to_owned() } else { format!("{} left out", parts.join(", ")) };
    if let Some(m) = v.as_object_mut() {
        m.insert("truncated".into(), json!(true));
        m.insert("hint".into(), json!(format!("answer cut to fit max_chars: {left_out}; {}", plan.advice)));
    }
    v
}

/// Cuts the plan's texts, longest first, until the answer fits; an answer whose other parts
/// alone are over the cap (a tiny cap) becomes `truncated` and the hint.
fn shorten(mut v: Value, format: Format, max: usize, plan: &Plan) -> Value {
    for _ in 0..8 {
        let real = size(&v, format);
        if real <= max {
            return v;
        }
        let mut over = real - max;
        let mut texts: Vec<(usize, &String)> = plan
            .texts
            .iter()
            .filter_map(|p| v.pointer(p).and_then(Value::as_str).map(|s| (s.chars().count(), p)))
            .collect();
        texts.sort_by_key(|t| std::cmp::Reverse(t.0));
        let cuts: Vec<(String, usize)> = texts
            .into_iter()
            .map_while(|(n, p)| {
                (over > 0).then(|| {
                    // A character of the text may take more than one in the answer (an
                    // escaped newline, a block's indentation): the cut is scaled by what
                    // the text takes where it is written, so that one long text pays for
                    // the whole excess instead of every text being cut to nothing after it.
                    let mut without = v.clone();
                    if let Some(Value::String(t)) = without.pointer_mut(p) {
                        t.clear();
                    }
                    let shown = real.saturating_sub(size(&without, format)).max(n).max(1);
                    let keep = n.saturating_sub((over * n).div_ceil(shown) + 2);
                    over = over.saturating_sub((n - keep) * shown / n.max(1));
                    (p.clone(), keep)
                })
            })
            .collect();
        if cuts.is_empty() {
            break;
        }
        for (p, keep) in cuts {
            if let Some(Value::String(s)) = v.pointer_mut(&p) {
                *s = format!("{}…", s.chars().take(keep).collect::<String>());
            }
        }
    }
    if size(&v, format) <= max {
        return v;
    }
    // Nothing else can go: the answer is only that it was cut.
    let hint = v.get("hint").and_then(Value::as_str).unwrap_or("answer cut to fit max_chars").to_owned();
    let mut bare = Map::new();
    bare.insert("truncated".into(), json!(true));
    bare.insert("hint".into(), json!(hint));
    let mut bare = Value::Object(bare);
    let over = size(&bare, format).saturating_sub(max);
    if over > 0
        && let Some(Value::String(h)) = bare.get_mut("hint")
    {
        let keep = h.chars().count().saturating_sub(over + 2);
        *h = format!("{}…", h.chars().take(keep).collect::<String>());
    }
    bare
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Listed {
        query: String,
        results: Vec<String>,
    }

    impl Answer for Listed {
        fn plan(&self, v: &Value) -> Plan {
            Plan::list_from_end(v, "/results", "results", "ask for fewer results")
        }
    }

    #[test]
    fn every_cap_is_honoured_in_both_formats_and_the_cut_says_so() {
        let answer = Listed { query: "q".into(), results: (0..50).map(|i| format!("result number {i}")).collect() };
        for format in [Format::Yaml, Format::Json] {
            let whole = Reply { answer: &answer, format, max_chars: 100_000 }.text();
            assert!(!whole.contains("truncated"));
            let n = whole.chars().count();
            assert_eq!(Reply { answer: &answer, format, max_chars: n }.text(), whole, "exactly the cap fits");
            for max in [100, 150, 300, 500, 800, n - 1] {
                let text = Reply { answer: &answer, format, max_chars: max }.text();
                assert!(text.chars().count() <= max, "{format:?} {max}: {} chars", text.chars().count());
                assert!(text.contains("truncated"), "{format:?} {max}");
            }
            // Items go from the end: what is kept is a prefix.
            let v = Reply { answer: &answer, format, max_chars: 800 }.value();
            let kept = v["results"].as_array().unwrap();
            assert!(!kept.is_empty() && kept.len() < 50);
            assert_eq!(kept[0], "result number 0");
            assert_eq!(
                v["hint"],
                format!("answer cut to fit max_chars: {} results left out; ask for fewer results", 50 - kept.len())
            );
        }
    }

    #[test]
    fn long_texts_are_shortened_when_nothing_else_can_go() {
        #[derive(Serialize)]
        struct One {
            id: String,
            content: String,
        }
        impl Answer for One {}
        let answer = One { id: "m_1".into(), content: "word ".repeat(5000) };
        let v = Reply { answer, format: Format::Yaml, max_chars: 1000 }.value();
        let text = render(&v, Format::Yaml);
        assert!(text.chars().count() <= 1000, "{}", text.chars().count());
        assert_eq!(v["id"], "m_1");
        assert!(v["content"].as_str().unwrap().ends_with('…'));
        assert_eq!(v["hint"], "answer cut to fit max_chars: long texts were cut; raise max_chars (up to 100000)");
    }
}
