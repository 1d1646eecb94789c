//! Every rule a finding of `tmws check` can name, with how severe its findings are and
//! what it means: the one table people read the rules from (`docs/check-rules.md` is
//! generated from it, and a test fails when a `Rule` is missing here).

use crate::model::Rule;

/// How severe the findings of a rule are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Always an error.
    Error,
    /// Always a warning: it fails a check only with `--strict`.
    Warning,
    /// An error or a warning, as the entry says.
    Both,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warning => "warning",
            Level::Both => "error, warning",
        }
    }
}

/// One rule as people read it.
#[derive(Debug, Clone, Copy)]
pub struct RuleDoc {
    pub rule: Rule,
    pub level: Level,
    /// What a finding of it means, in Markdown.
    pub what: &'static str,
}

const fn rule(rule: Rule, level: Level, what: &'static str) -> RuleDoc {
    RuleDoc { rule, level, what }
}

/// Every rule, in the order of the `Rule` enum.
pub const RULES: [RuleDoc; 33] = [
    rule(
        Rule::YamlSyntax,
        Level::Error,
        "front-matter that does not parse as YAML (line and column in the file); an unquoted `: ` inside a value gets a hint to quote it",
    ),
    rule(
        Rule::MissingFrontMatter,
        Level::Error,
        "a file tmws owns without front-matter, or with blank lines before its opening `---` (it must start on line 1)",
    ),
    rule(Rule::UnclosedFrontMatter, Level::Error, "an opening `---` that is never closed"),
    rule(Rule::NotAMapping, Level::Error, "front-matter that is not `key: value` pairs"),
    rule(
        Rule::MissingField,
        Level::Error,
        "a required field that is absent or empty; an unknown key that means it (`date:` in a decision) is named in the hint",
    ),
    rule(Rule::InvalidType, Level::Error, "a field of the wrong type, e.g. `tags: x` instead of a list"),
    rule(Rule::InvalidDate, Level::Error, "a date that is not a real `YYYY-MM-DD`"),
    rule(
        Rule::InvalidEnum,
        Level::Error,
        "a plan's `status` outside its enum, or a value outside the topic overview's `status_values` / `category_values`",
    ),
    rule(
        Rule::SchemaViolation,
        Level::Error,
        "any other schema violation (e.g. a value outside a project override's constraints)",
    ),
    rule(Rule::DuplicateKey, Level::Error, "a key given twice in one mapping, reported at its second occurrence"),
    rule(
        Rule::KeyCase,
        Level::Warning,
        "a key that differs from a schema key only by case (`Date:` where the schema says `date`)",
    ),
    rule(Rule::TitleAsName, Level::Warning, "no `name`, so `title` is read as the name"),
    rule(
        Rule::UnknownKey,
        Level::Warning,
        "a key tmws does not read that looks like an optional one the front-matter lacks (`tag:` for `tags`, `categroy:`)",
    ),
    rule(
        Rule::Encoding,
        Level::Error,
        "bytes that are not UTF-8 (the file is still indexed, with replacement characters)",
    ),
    rule(
        Rule::FileName,
        Level::Warning,
        "an entry not named `YYMMDD-kebab-case.md`; the hint gives the name to rename it to",
    ),
    rule(
        Rule::ScopeName,
        Level::Error,
        "a scope or topic folder named outside `[A-Za-z0-9._-]`, or a scope deeper than workspace/domain/repository",
    ),
    rule(
        Rule::RuleBudget,
        Level::Error,
        "a rule file over its `<!-- budget: N lines -->`, or all rule files together over `rules.total_budget_lines`",
    ),
    rule(Rule::MissingBudget, Level::Error, "a rule file that declares no budget"),
    rule(
        Rule::JsonlLine,
        Level::Both,
        "a log line that is not a valid op, torn final lines included (an error, and the line is skipped); a memory op without a field tmws always writes (a warning: the entry is read without it)",
    ),
    rule(Rule::Registry, Level::Error, "`.tmws/registry/index.json` is not a valid registry"),
    rule(
        Rule::Config,
        Level::Error,
        "`.tmws/config.toml` is not valid: an unknown key, a wrong type, a value out of range",
    ),
    rule(Rule::Skills, Level::Error, "`.tmws/skills.yaml` is not a valid skills list"),
    rule(Rule::Schema, Level::Error, "a schema override in `.tmws/schemas/` that is not a usable JSON Schema"),
    rule(
        Rule::Io,
        Level::Error,
        "a file or folder that could not be read, or that tmws will not read: a symlink out of the root or in a loop, a FIFO, a device, a socket, a name that is not UTF-8",
    ),
    rule(
        Rule::Secret,
        Level::Error,
        "a secret in a file tmws owns (workspace documents and rules, memory and trust log lines, the registry, the config), named by its redaction rule and never shown: the line under the finding shows it as its mark",
    ),
    rule(
        Rule::Moved,
        Level::Warning,
        "`.tmws/registry/usage.jsonl`: tool-call usage now lives in `.tmws/cache/usage.jsonl`; delete the old file from git",
    ),
    rule(
        Rule::Cache,
        Level::Error,
        "`.tmws/cache/` holds what tmws never makes there: a file git tracks, a symlink, a FIFO or a device, or an index file list naming files outside its folder. Such a cache is set aside whole into `.tmws/cache/set-aside/` and rebuilt before any of it is used",
    ),
    rule(
        Rule::Stashed,
        Level::Warning,
        "memories that are only in a git stash (a `stash pop` that conflicted on a log); the hint is the command that appends them back",
    ),
    rule(
        Rule::TrustSelf,
        Level::Error,
        "a `.tmws/trust.jsonl` line whose verifier is the agent it verifies, names compared normalised (`Ｃｏｄｅｘ` is `codex`); not counted",
    ),
    rule(
        Rule::TrustVerifier,
        Level::Both,
        "a verification by no one (a missing or empty verifier: an error, not counted), or a verifier not spelled as tmws writes names (a warning: counted as its normalised name)",
    ),
    rule(
        Rule::TrustBurst,
        Level::Error,
        "verifications faster than tmws records them: a verifier verifying an agent twice in one second, or more than three verifications of an agent in one second; not counted",
    ),
    rule(
        Rule::HardLink,
        Level::Warning,
        "a file tmws owns that has other names (a hard link): tmws never writes it, since an append or a rewrite would change the file of its other names; replace it with a copy",
    ),
    rule(
        Rule::InvalidCite,
        Level::Error,
        "a front-matter `cites:` that is not a list of citations, or an item of it that is not one (`path`, `path:L1-L2` or `path#symbol`, optionally `@commit`, inside the root)",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_has_one_entry_per_rule_in_the_order_of_the_enum() {
        for (i, doc) in RULES.iter().enumerate() {
            assert_eq!(doc.rule as usize, i, "{} is out of place", doc.rule);
        }
        // The last rule of the enum closes the table (`tests/it/docs.rs` compares the
        // table with the enum's source, variant by variant).
        assert_eq!(RULES.last().map(|d| d.rule), Some(Rule::InvalidCite));
    }
}
