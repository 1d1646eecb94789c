//! Answers as YAML text: the default for agents (fewer tokens than JSON, same fields).
//!
//! Multi-line strings are written as literal blocks (`|`), so Markdown bodies stay
//! readable; everything else is quoted only where YAML needs it.

use serde_json::Value;
use yaml_rust2::YamlEmitter;
use yaml_rust2::yaml::{Hash, Yaml};

/// A JSON value as YAML text (no `---` line), ending with a newline.
pub fn to_yaml(value: &Value) -> String {
    let mut out = String::new();
    let mut emitter = YamlEmitter::new(&mut out);
    emitter.multiline_strings(true);
    if emitter.dump(&convert(value)).is_err() {
        return String::new();
    }
    let body = out.strip_prefix("---\n").or_else(|| out.strip_prefix("---")).unwrap_or(&out).trim_start_matches(' ');
    // The emitter indents the blank lines of literal blocks too: spaces nobody reads.
    let mut text = String::with_capacity(body.len() + 1);
    for line in body.split('\n') {
        if !line.trim_end_matches(' ').is_empty() {
            text.push_str(line);
        }
        text.push('\n');
    }
    text
}

fn convert(value: &Value) -> Yaml {
    match value {
        Value::Null => Yaml::Null,
        Value::Bool(b) => Yaml::Boolean(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Yaml::Integer(i),
            None => Yaml::Real(n.to_string()),
        },
        Value::String(s) => Yaml::String(s.clone()),
        Value::Array(a) => Yaml::Array(a.iter().map(convert).collect()),
        Value::Object(m) => {
            let mut h = Hash::new();
            for (k, v) in m {
                h.insert(Yaml::String(k.clone()), convert(v));
            }
            Yaml::Hash(h)
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn parse(text: &str) -> Option<Yaml> {
        yaml_rust2::YamlLoader::load_from_str(text).ok()?.into_iter().next()
    }

    #[test]
    fn bodies_become_literal_blocks_and_the_text_parses_back() {
        let v =
            json!({"scope": "w", "body_t1": "# Title\n\nLine: two\n", "tags": ["a", "b: c"], "count": 3, "empty": []});
        let text = to_yaml(&v);
        assert_eq!(
            text,
            "scope: w\nbody_t1: |\n  # Title\n\n  Line: two\ntags:\n  - a\n  - \"b: c\"\ncount: 3\nempty: []\n"
        );
        let back = parse(&text).unwrap();
        assert_eq!(back["body_t1"].as_str(), Some("# Title\n\nLine: two\n"));
        assert_eq!(back["tags"][1].as_str(), Some("b: c"));
    }
}
