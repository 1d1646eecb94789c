//! The reference pages of `docs/` whose source of truth is code are generated from it, and
//! a test fails when a committed page differs from what the code makes now:
//!
//! - `docs/tools.md` from the tool table (each tool's name, title, description, hints and
//!   input schema with the default config's defaults);
//! - `docs/config.md` from the config type (its doc comments, its defaults, and the range
//!   of each number as `Config::parse` accepts it, found by asking it);
//! - `docs/check-rules.md` from the rule table of `tmws check`.
//!
//! After a change to one of those, regenerate the pages and commit them:
//! `TMWS_BLESS=1 cargo test --locked --test integration it::docs::`.
//!
//! The other pages are written by hand; the tests here hold them to what they cite: every
//! `docs/…` page a comment or document names exists, and every tool is on the surfaces page.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde_json::{Map, Value};
use tmws::check::{Level, RULES};
use tmws::config::Config;
use tmws::query::catalog;

use super::util::repo;

/// The command that writes the generated pages.
const BLESS: &str = "TMWS_BLESS=1 cargo test --locked --test integration it::docs::";

/// Compares the committed page `rel` with `generated`, or writes it under `TMWS_BLESS`.
fn check_page(rel: &str, generated: &str) {
    let path = repo().join(rel);
    if std::env::var_os("TMWS_BLESS").is_some_and(|v| !v.is_empty() && v != "0") {
        std::fs::write(&path, generated).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != generated {
        let line = committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .map_or_else(|| committed.lines().count().min(generated.lines().count()) + 1, |i| i + 1);
        panic!(
            "{rel} is generated from the code and differs from it (first at line {line}): regenerate it with \
`{BLESS}` and commit it"
        );
    }
}

/// The notice at the top of every generated page.
fn generated_by(source: &str) -> String {
    format!("<!-- Generated from {source} by tests/it/docs.rs; do not edit. Regenerate: {BLESS} -->\n")
}

/// A table cell: one line, pipes escaped, and a page of `docs/` that a doc comment cites
/// (`docs/ranking.md#memories`) made a link to it.
fn cell(text: &str) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ").replace('|', "\\|");
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find("docs/") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 5..];
        let len =
            after.find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '#'))).unwrap_or(after.len());
        let target = after[..len].trim_end_matches('.');
        if target.contains(".md") {
            out.push_str(&format!("[{target}]({target})"));
            rest = &after[target.len()..];
        } else {
            out.push_str("docs/");
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

// Tools ---------------------------------------------------------------------------------

/// One tool as the page shows it. This is the one place that knows how the tool table is
/// spelled in code: a change to the table changes only this function.
struct ToolDoc {
    name: &'static str,
    title: &'static str,
    description: &'static str,
    read_only: bool,
    destructive: bool,
    idempotent: bool,
    open_world: bool,
    /// The input's JSON Schema, with the defaults of the default config.
    schema: Map<String, Value>,
    /// The answer's JSON Schema (`outputSchema`).
    output: Map<String, Value>,
    /// Its command line (`tmws memory add`), if it has one.
    command: Option<String>,
    /// Its REST routes (`GET /memory/search`).
    routes: Vec<String>,
}

fn tools() -> Vec<ToolDoc> {
    let config = Config::default();
    catalog::TOOLS
        .iter()
        .map(|t| {
            let spec = t.spec();
            ToolDoc {
                name: spec.name,
                title: spec.title,
                description: spec.description,
                read_only: spec.hints.read_only,
                destructive: spec.hints.destructive,
                idempotent: spec.hints.idempotent,
                open_world: spec.hints.open_world,
                schema: t.schema(&config),
                output: t.output_schema(),
                command: spec.cli.map(|c| match c.group {
                    Some(group) => format!("tmws {group} {}", c.name),
                    None => format!("tmws {}", c.name),
                }),
                routes: spec.http.iter().map(|r| format!("{} {}", r.method.as_str(), r.path)).collect(),
            }
        })
        .collect()
}

/// A parameter's type as the page shows it: `string`, `array of string`, `integer (1–100)`,
/// `yaml \| json`.
fn param_type(p: &Value) -> String {
    if let Some(values) = p.get("enum").and_then(Value::as_array) {
        return values.iter().filter_map(Value::as_str).map(|v| format!("`{v}`")).collect::<Vec<_>>().join(" \\| ");
    }
    let kind = p.get("type").and_then(Value::as_str).unwrap_or("any");
    let mut out = match (kind, p.pointer("/items/type").and_then(Value::as_str)) {
        ("array", Some(item)) => format!("array of {item}"),
        _ => kind.to_owned(),
    };
    match (p.get("minimum"), p.get("maximum")) {
        (Some(lo), Some(hi)) => write!(out, " ({lo}–{hi})").unwrap(),
        (Some(lo), None) => write!(out, " (≥ {lo})").unwrap(),
        (None, Some(hi)) => write!(out, " (≤ {hi})").unwrap(),
        (None, None) => {}
    }
    out
}

fn tools_page() -> String {
    let tools = tools();
    let mut out = String::from("# Tools\n\n");
    out.push_str(&generated_by("the tool table (`src/query/catalog/`) and the request types (`src/query/api.rs`)"));
    out.push_str(
        "\nEvery tool tmws serves, with the description an agent reads before calling it and the \
parameters of its input schema. MCP lists exactly these (`tools/list`); the CLI commands and HTTP routes that \
answer the same questions run the same tools with the same parameters, defaults, limits and errors \
([surfaces.md](surfaces.md)). How answers are written and cut: [answers.md](answers.md). Defaults shown are those \
of the default configuration ([config.md](config.md)); an unknown parameter is an error that lists the known \
ones. Each answer's fields are those of its output schema: MCP gives the answer as `structuredContent` \
beside its text, and the text (YAML, or JSON with `format: json`) says the same. An answer cut to fit `max_chars` \
also says `truncated: true` and a `hint` naming what was left out; cut down to nothing else, it is only those two. \
An error result (`isError: true`) carries `{error, category, hint}` instead ([errors.md](errors.md#over-mcp)), which \
every output schema admits too. \
Documents an answer names are also MCP resource links, read whole with `resources/read` \
([surfaces.md](surfaces.md#resources)).\n\n",
    );
    out.push_str("| tool | title | reads only | may delete or overwrite | idempotent | reaches other servers |\n");
    out.push_str("|---|---|---|---|---|---|\n");
    let yes = |b: bool| if b { "yes" } else { "no" };
    for t in &tools {
        writeln!(
            out,
            "| [`{}`](#{}) | {} | {} | {} | {} | {} |",
            t.name,
            t.name,
            cell(t.title),
            yes(t.read_only),
            yes(t.destructive),
            yes(t.idempotent),
            yes(t.open_world)
        )
        .unwrap();
    }
    for t in &tools {
        write!(out, "\n<a id=\"{}\"></a>\n## `{}`: {}\n\n{}\n\n", t.name, t.name, t.title, t.description).unwrap();
        let mut on = Vec::new();
        if let Some(command) = &t.command {
            on.push(format!("`{command}`"));
        }
        on.extend(t.routes.iter().map(|r| format!("`{r}`")));
        if !on.is_empty() {
            writeln!(out, "Also: {}.\n", on.join(", ")).unwrap();
        }
        parameters(&mut out, t);
        answer_fields(&mut out, t);
    }
    out
}

/// A tool's parameters, from its input schema.
fn parameters(out: &mut String, t: &ToolDoc) {
    let props = t.schema.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
    if props.is_empty() {
        out.push_str("No parameters.\n");
        return;
    }
    let required: Vec<&str> = t
        .schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    out.push_str("| parameter | type | required | default | description |\n|---|---|---|---|---|\n");
    for (name, p) in &props {
        let default = p.get("default").map_or_else(String::new, |d| format!("`{d}`"));
        let description = p.get("description").and_then(Value::as_str).unwrap_or("");
        writeln!(
            out,
            "| `{name}` | {} | {} | {} | {} |",
            param_type(p),
            if required.contains(&name.as_str()) { "yes" } else { "" },
            cell(&default),
            cell(description)
        )
        .unwrap();
    }
}

/// A tool's answer: its fields, from its output schema (but the marks of a cut answer, which
/// the page's head explains once).
fn answer_fields(out: &mut String, t: &ToolDoc) {
    let text = |v: &Value| v.get("description").and_then(Value::as_str).unwrap_or("").to_owned();
    let mark = |name: &str, p: &Value| {
        (name == "truncated" && text(p).starts_with("The answer was cut"))
            || (name == "hint" && text(p).starts_with("What was left out"))
            || (matches!(name, "error" | "category") && text(p).starts_with("An error result"))
    };
    let props: Vec<(&String, &Value)> = t
        .output
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(n, p)| !mark(n, p))
        .collect();
    if props.is_empty() {
        // An answer tmws does not know in advance (tool_call).
        writeln!(out, "\n{}", cell(&text(&Value::Object(t.output.clone())))).unwrap();
        return;
    }
    let always: Vec<&str> = t
        .output
        .get("anyOf")
        .and_then(|a| a.pointer("/0/required"))
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    out.push_str("\n| answer field | type | always | description |\n|---|---|---|---|\n");
    for (name, p) in props {
        let ty = if p.get("anyOf").is_some() { "any".to_owned() } else { param_type(p) };
        let always = if always.contains(&name.as_str()) { "yes" } else { "" };
        writeln!(out, "| `{name}` | {ty} | {always} | {} |", cell(&text(p))).unwrap();
    }
    if let Some(Value::Object(other)) = t.output.get("additionalProperties") {
        writeln!(
            out,
            "| each other field | {} |  | {} |",
            param_type(&Value::Object(other.clone())),
            cell(&text(&Value::Object(other.clone())))
        )
        .unwrap();
    }
}

#[test]
fn docs_tools_md_is_generated_from_the_tool_table() {
    check_page("docs/tools.md", &tools_page());
}

// Configuration -------------------------------------------------------------------------

/// Whether `Config::parse` takes `key = value` in `[section]`.
fn accepts(section: &str, key: &str, value: &str) -> bool {
    Config::parse(&format!("[{section}]\n{key} = {value}\n")).is_ok()
}

/// The values a whole-number key takes, as `Config::parse` answers: the least and the most
/// (each found by bisection from the default; no most when it takes the largest TOML
/// integer).
fn integer_range(section: &str, key: &str, default: i64) -> String {
    let takes = |n: i64| accepts(section, key, &n.to_string());
    let default = if takes(default) { default } else { 1 };
    assert!(takes(default), "{section}.{key} refuses its default");
    let lo = if takes(0) {
        0
    } else {
        let (mut bad, mut ok) = (0, default);
        while ok - bad > 1 {
            let mid = bad + (ok - bad) / 2;
            if takes(mid) { ok = mid } else { bad = mid }
        }
        ok
    };
    if takes(i64::MAX) {
        return format!("{lo} or more");
    }
    let (mut ok, mut bad) = (default, i64::MAX);
    while bad - ok > 1 {
        let mid = ok + (bad - ok) / 2;
        if takes(mid) { ok = mid } else { bad = mid }
    }
    format!("{lo} to {ok}")
}

/// The values a number key takes: from 0 (or from just above 0) to the most it takes.
fn number_range(section: &str, key: &str, default: f64) -> String {
    let takes = |x: f64| accepts(section, key, &format!("{x:?}"));
    let default = if takes(default) { default } else { 1e-9 };
    assert!(takes(default), "{section}.{key} refuses {default}");
    let least;
    let lo = if takes(0.0) {
        "0 to"
    } else if takes(f64::MIN_POSITIVE) {
        "greater than 0, at most"
    } else {
        // The least value taken, to two decimals: a bound such as 0.5.
        least = (1..=100).map(|c| f64::from(c) / 100.0).find(|x| takes(*x));
        match &least {
            Some(x) => return number_range_from(section, key, default, &format!("{x} to")),
            None => panic!("{section}.{key}: a lower bound above 1 is not described here yet"),
        }
    };
    number_range_from(section, key, default, lo)
}

/// [`number_range`] from its lower bound's words `lo`.
fn number_range_from(section: &str, key: &str, default: f64, lo: &str) -> String {
    let takes = |x: f64| accepts(section, key, &format!("{x:?}"));
    if takes(1e300) {
        return lo.replace(" to", " or more").replace(", at most", "");
    }
    let (mut ok, mut bad) = (default, 1e300_f64);
    for _ in 0..2000 {
        let mid = ok + (bad - ok) / 2.0;
        if mid <= ok || mid >= bad {
            break;
        }
        if takes(mid) { ok = mid } else { bad = mid }
    }
    format!("{lo} {ok}")
}

/// A value as TOML shows it.
fn toml_value(v: &Value) -> String {
    match v {
        Value::Null => "unset".to_owned(),
        Value::String(s) => format!("\"{s}\""),
        Value::Array(items) => format!("[{}]", items.iter().map(toml_value).collect::<Vec<_>>().join(", ")),
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or_default();
            if f.fract() == 0.0 { format!("{f:.1}") } else { format!("{f}") }
        }
        other => other.to_string(),
    }
}

/// The schema a property points to (through `$ref`), with the property's own keys.
fn resolve<'a>(defs: &'a Map<String, Value>, prop: &'a Value) -> &'a Value {
    match prop.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/$defs/")) {
        Some(name) => &defs[name],
        None => prop,
    }
}

/// A key's type as the page shows it.
fn config_type(defs: &Map<String, Value>, p: &Value) -> String {
    let kinds: Vec<&str> = match p.get("type") {
        Some(Value::String(k)) => vec![k.as_str()],
        Some(Value::Array(ks)) => ks.iter().filter_map(Value::as_str).filter(|k| *k != "null").collect(),
        _ => Vec::new(),
    };
    match kinds.as_slice() {
        ["array"] => {
            let items = resolve(defs, &p["items"]);
            let values: Vec<String> = items
                .get("oneOf")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|v| v.get("const").and_then(Value::as_str).map(|c| format!("`\"{c}\"`")))
                .chain(
                    items
                        .get("enum")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(|v| v.as_str().map(|c| format!("`\"{c}\"`"))),
                )
                .collect();
            if values.is_empty() {
                format!("array of {}", items.get("type").and_then(Value::as_str).unwrap_or("any"))
            } else {
                format!("array of {}", values.join(", "))
            }
        }
        [k] => (*k).to_owned(),
        _ => "any".to_owned(),
    }
}

/// The values a key takes, asked of `Config::parse`.
fn config_range(section: &str, key: &str, kind: &str, default: &Value) -> String {
    match kind {
        "integer" => integer_range(section, key, default.as_i64().unwrap_or(1)),
        "number" => number_range(section, key, default.as_f64().unwrap_or(1e-9)),
        _ => String::new(),
    }
}

fn config_page() -> String {
    let schema = serde_json::to_value(schemars::schema_for!(Config)).unwrap();
    let defs = schema["$defs"].as_object().cloned().unwrap_or_default();
    let defaults = serde_json::to_value(Config::default()).unwrap();
    let mut out = String::from("# Configuration: `.tmws/config.toml`\n\n");
    out.push_str(&generated_by("the config type (`src/config.rs`)"));
    out.push_str(
        "\nEvery key is optional: a missing file, section or key takes the default shown. `tmws init` writes the \
file with every key commented out at its default. An unknown key, a wrong type or a value outside the range shown \
is an error that names the key and its line (`tmws check` reports it as `config`; every command that reads the \
config stops with exit code 2). The ranges are what `Config::parse` accepts, asked of it when this page was \
made.\n",
    );
    let sections = schema["properties"].as_object().cloned().unwrap_or_default();
    for (section, prop) in &sections {
        let shape = resolve(&defs, prop);
        let about = prop.get("description").or_else(|| shape.get("description")).and_then(Value::as_str);
        if section == "namespaces" {
            out.push_str("\n## `[namespaces.NAME]`\n\n");
            if let Some(about) = about {
                writeln!(out, "{}\n", cell(about)).unwrap();
            }
            let ns = resolve(&defs, &prop["additionalProperties"]);
            let names: Vec<&String> =
                defaults["namespaces"].as_object().map(|m| m.keys().collect()).unwrap_or_default();
            let heads: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
            writeln!(out, "| key | type | default ({}) | accepted | description |", heads.join(" / ")).unwrap();
            out.push_str("|---|---|---|---|---|\n");
            for (key, p) in ns["properties"].as_object().into_iter().flatten() {
                let values: Vec<String> = names
                    .iter()
                    .map(|n| format!("`{}`", toml_value(&defaults["namespaces"][n.as_str()][key])))
                    .collect();
                let kind = config_type(&defs, p);
                let range = config_range("namespaces.x", key, &kind, &defaults["namespaces"]["short-term"][key]);
                let description = p.get("description").and_then(Value::as_str).unwrap_or("");
                writeln!(out, "| `{key}` | {kind} | {} | {range} | {} |", values.join(" / "), cell(description))
                    .unwrap();
            }
            continue;
        }
        write!(out, "\n## `[{section}]`\n\n").unwrap();
        if let Some(about) = about {
            writeln!(out, "{}\n", cell(about)).unwrap();
        }
        out.push_str("| key | type | default | accepted | description |\n|---|---|---|---|---|\n");
        for (key, p) in shape["properties"].as_object().into_iter().flatten() {
            let default = &defaults[section][key];
            let kind = config_type(&defs, p);
            let range = config_range(section, key, &kind, default);
            let description = p.get("description").and_then(Value::as_str).unwrap_or("");
            writeln!(out, "| `{key}` | {kind} | `{}` | {range} | {} |", toml_value(default), cell(description))
                .unwrap();
        }
    }
    out
}

#[test]
fn docs_config_md_is_generated_from_the_config_type() {
    check_page("docs/config.md", &config_page());
}

#[test]
fn every_config_key_has_a_description() {
    let schema = serde_json::to_value(schemars::schema_for!(Config)).unwrap();
    for (name, def) in schema["$defs"].as_object().into_iter().flatten() {
        for (key, p) in def.get("properties").and_then(Value::as_object).into_iter().flatten() {
            assert!(
                p.get("description").and_then(Value::as_str).is_some_and(|d| !d.trim().is_empty()),
                "{name}.{key} has no doc comment: docs/config.md would not say what it does"
            );
        }
    }
}

/// `tmws init` writes every key, commented out at its default: a key added to the config
/// type is named in the template too (its values are held to the defaults by a unit test of
/// `init`).
#[test]
fn the_config_template_names_every_key() {
    let schema = serde_json::to_value(schemars::schema_for!(Config)).unwrap();
    let defs = schema["$defs"].as_object().cloned().unwrap_or_default();
    let template = tmws::init::CONFIG_TEMPLATE;
    for (section, prop) in schema["properties"].as_object().into_iter().flatten() {
        let (header, shape) = if section == "namespaces" {
            ("# [namespaces.short-term]".to_owned(), resolve(&defs, &prop["additionalProperties"]).clone())
        } else {
            (format!("# [{section}]"), resolve(&defs, prop).clone())
        };
        let at = template.find(&header).unwrap_or_else(|| panic!("the config template has no `{header}`"));
        let body = &template[at + header.len()..];
        let body = &body[..body.find("\n# [").unwrap_or(body.len())];
        for key in shape["properties"].as_object().into_iter().flatten().map(|(k, _)| k) {
            assert!(body.contains(&format!("# {key}")), "the config template does not name `{section}.{key}`");
        }
    }
}

// Check rules ---------------------------------------------------------------------------

fn rules_page() -> String {
    let mut out = String::from("# Check rules\n\n");
    out.push_str(&generated_by("the rule table of `tmws check` (`src/check/table.rs`)"));
    out.push_str(
        "\nEvery finding of `tmws check` names one of these rules. Errors make the check fail (exit 1); warnings \
fail it only with `--strict`. A finding names its file (relative to the root), line and column; how the command \
prints them is in [surfaces.md](surfaces.md#tmws-check). What each kind of file must hold is in \
[workspace-documents.md](workspace-documents.md), [memory-log.md](memory-log.md), [registry.md](registry.md), \
[trust.md](trust.md) and [config.md](config.md).\n\n| rule | severity | what it finds |\n|---|---|---|\n",
    );
    for r in &RULES {
        writeln!(out, "| `{}` | {} | {} |", r.rule, r.level.as_str(), cell(r.what)).unwrap();
    }
    out
}

#[test]
fn docs_check_rules_md_is_generated_from_the_rule_table() {
    check_page("docs/check-rules.md", &rules_page());
}

/// The variants of `enum Rule` as `src/model.rs` spells them, in order.
fn rule_variants() -> Vec<String> {
    let model = std::fs::read_to_string(repo().join("src/model.rs")).unwrap();
    let start = model.find("pub enum Rule {").expect("src/model.rs defines `enum Rule`");
    let body = &model[start..start + model[start..].find("\n}").unwrap()];
    body.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("//") && !l.starts_with("pub enum"))
        .filter_map(|l| l.strip_suffix(','))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_rule_table_lists_every_rule_once_in_the_order_of_the_enum() {
    let listed: Vec<String> = RULES.iter().map(|r| format!("{:?}", r.rule)).collect();
    assert_eq!(listed, rule_variants(), "src/check/table.rs must list every `Rule` of src/model.rs, in order");
    assert!(RULES.iter().all(|r| !r.what.trim().is_empty()));
    // A rule whose findings are only warnings never fails a check without --strict; the
    // ones said to be both are the ones the code makes both of.
    let both: Vec<String> = RULES.iter().filter(|r| r.level == Level::Both).map(|r| r.rule.to_string()).collect();
    assert_eq!(both, ["jsonl-line", "trust-verifier"]);
}

// Citations -----------------------------------------------------------------------------

/// Every file of the repository a citation may be in: sources, tests, benches, examples,
/// schemas, CI and the Markdown at the top and in `docs/`.
fn cited_in() -> Vec<(String, String)> {
    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs" || x == "md" || x == "json" || x == "toml")
                || p.file_name().is_some_and(|n| n == "run")
            {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    for dir in ["src", "tests/it", "benches", "examples", "schemas", ".ci", "docs"] {
        walk(&repo().join(dir), &mut files);
    }
    for top in ["README.md", "ARCHITECTURE.md", "Cargo.toml", "tests/integration.rs"] {
        files.push(repo().join(top));
    }
    files
        .into_iter()
        .filter_map(|p| {
            let mut text = std::fs::read_to_string(&p).ok()?;
            // In code, only comments cite: tests make up files of their own under docs/.
            if p.extension().is_some_and(|x| x == "rs") {
                text = text.lines().filter(|l| l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n");
            }
            Some((p.strip_prefix(repo()).unwrap().to_string_lossy().into_owned(), text))
        })
        .collect()
}

#[test]
fn every_docs_page_that_is_cited_exists() {
    let mut missing = BTreeMap::new();
    for (file, text) in cited_in() {
        let in_docs = file.starts_with("docs/");
        for (at, _) in text.match_indices(".md") {
            let head = &text[..at];
            let start = head
                .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '/'))
                .map_or(0, |i| i + head[i..].chars().next().map_or(1, char::len_utf8));
            let name = &text[start..at + 3];
            let page = if let Some(page) = name.strip_prefix("docs/").filter(|p| !p.contains('/')) {
                page
            } else if in_docs && !name.contains('/') && text[..start].ends_with('(') {
                // A relative link between pages: `[x](ranking.md)`.
                name
            } else {
                continue;
            };
            if !repo().join("docs").join(page).is_file() {
                missing.entry(format!("docs/{page}")).or_insert_with(Vec::new).push(file.clone());
            }
        }
    }
    assert!(missing.is_empty(), "cited pages that do not exist: {missing:?}");
}

#[test]
fn the_surfaces_page_names_every_tool() {
    let page = std::fs::read_to_string(repo().join("docs/surfaces.md")).unwrap();
    for t in tools() {
        assert!(page.contains(&format!("`{}`", t.name)), "docs/surfaces.md does not say where `{}` is served", t.name);
    }
}

/// The README is the front page (what tmws is, how to set it up and enable it in each
/// client); the reference is `docs/`. It stays under 12 KB.
#[test]
fn the_readme_stays_under_twelve_kilobytes() {
    let len = std::fs::metadata(repo().join("README.md")).unwrap().len();
    assert!(len < 12 * 1024, "README.md is {len} bytes, over 12 KB: move the detail to docs/");
}
