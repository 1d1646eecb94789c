//! A generator of synthetic tmws roots with realistic front-matter and bodies, shared by
//! the benches and by `examples/gen_root.rs`.
//!
//! The tree is deterministic for a given size: 10 workspaces, 10 domains each, then
//! repositories as needed; every scope has an OVERVIEW.md and topic folders (plans,
//! decisions, lessons, features, spikes) holding dated entries of about 1 KB. Running text
//! draws from a 4,000-word vocabulary with a Zipf-like spread, so that a query word matches
//! a realistic share of the documents (from nearly all to a few hundred).

#![allow(dead_code, reason = "each bench uses a different part of the support module")]

pub mod memory;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

const TOPICS: [&str; 5] = ["plans", "decisions", "lessons", "features", "spikes"];
const STATUSES: [&str; 5] = ["new", "in_progress", "partial", "done", "abandoned"];
const WORDS: [&str; 40] = [
    "index",
    "watcher",
    "memory",
    "registry",
    "schema",
    "token",
    "refresh",
    "cache",
    "compaction",
    "decay",
    "trust",
    "session",
    "plan",
    "decision",
    "lesson",
    "parser",
    "front-matter",
    "scope",
    "workspace",
    "domain",
    "repository",
    "search",
    "ranking",
    "latency",
    "budget",
    "rules",
    "agent",
    "server",
    "pool",
    "eviction",
    "timeout",
    "retry",
    "lock",
    "append",
    "journal",
    "snapshot",
    "rebuild",
    "manifest",
    "checkpoint",
    "stemming",
];

/// Distinct words of running text.
const VOCABULARY: usize = 4_000;

/// The `r`-th made-up word: consonant-vowel syllables and an `n` (`ban`, `kodun`).
fn syllables(mut r: usize) -> String {
    const C: &[u8] = b"bdfgklmprstvz";
    const V: &[u8] = b"aeiou";
    let mut w = String::new();
    loop {
        w.push(char::from(C[r % C.len()]));
        w.push(char::from(V[(r / C.len()) % V.len()]));
        r /= C.len() * V.len();
        if r == 0 {
            break;
        }
    }
    w.push('n');
    w
}

/// A small deterministic pseudo-random generator (no dependency, stable across runs).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> usize {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) as usize
    }

    fn word(&mut self) -> &'static str {
        WORDS[self.next() % WORDS.len()]
    }

    /// A word of running text: rank r of a 4,000-word vocabulary with probability ~ 1/r
    /// (Zipf-like, as in real prose), the domain words spread over the ranks (`index` is
    /// everywhere, `stemming` rare) and the others made of syllables.
    fn text_word(&mut self) -> String {
        let u = (self.next() % 1_000_000) as f64 / 1_000_000.0;
        let r = (VOCABULARY as f64).powf(u) as usize;
        if r % 50 == 7 && r / 50 < WORDS.len() { WORDS[r / 50].to_owned() } else { syllables(r) }
    }

    fn sentence(&mut self, words: usize) -> String {
        let mut s = String::new();
        for i in 0..words {
            if i > 0 {
                s.push(' ');
            }
            s.push_str(&self.text_word());
        }
        s
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Writes a root of about `files` Markdown files under `root` and returns how many it wrote.
pub fn generate(root: &Path, files: usize) -> usize {
    let mut rng = Lcg(42);
    std::fs::create_dir_all(root.join(".tmws")).unwrap();
    let per_scope = 40; // entries per repository scope
    let scopes = files.div_ceil(per_scope + 1 + TOPICS.len()).max(1);
    let mut written = 0;
    'outer: for s in 0..scopes {
        let (w, d, r) = (s % 10, (s / 10) % 10, s / 100);
        let scope = format!("resources/workspaces/w{w}/d{d}/r{r}");
        let dir = root.join(&scope);
        write(
            &dir.join("OVERVIEW.md"),
            &format!(
                "---\nname: Repository r{r}\ndescription: {}.\ntags: [{}, {}]\n---\n# r{r}\n\n{}\n",
                rng.sentence(12),
                rng.word(),
                rng.word(),
                rng.sentence(80)
            ),
        );
        written += 1;
        for t in TOPICS {
            let mut ov = format!(
                "---\nname: {t}\ndescription: The {t} of r{r}.\nfolder_structure: flat, one YYMMDD-kebab-case.md per entry\n"
            );
            if t == "spikes" {
                ov.push_str("status_values: [open, concluded, dropped]\n");
            }
            ov.push_str("---\n");
            write(&dir.join(format!("_{t}/OVERVIEW.md")), &ov);
            written += 1;
        }
        for i in 0..per_scope {
            if written >= files {
                break 'outer;
            }
            let t = TOPICS[i % TOPICS.len()];
            let (month, day) = (1 + rng.next() % 12, 1 + rng.next() % 28);
            let slug = format!("{}-{}-{i}", rng.word(), rng.word());
            let mut fm = format!("---\nname: {}\ndescription: {}.\n", rng.sentence(5), rng.sentence(18));
            match t {
                "plans" => {
                    let _ = writeln!(fm, "status: {}", STATUSES[rng.next() % STATUSES.len()]);
                }
                "spikes" => fm.push_str("status: open\n"),
                "decisions" | "lessons" => {
                    let _ = writeln!(fm, "category: {}", rng.word());
                }
                _ => {}
            }
            let _ = write!(
                fm,
                "created: 2026-{month:02}-{day:02}\ntags: [{}, {}, {}]\n---\n## Context\n\n{}\n\n## Notes\n\n{}\n",
                rng.word(),
                rng.word(),
                rng.word(),
                rng.sentence(60),
                rng.sentence(60)
            );
            write(&dir.join(format!("_{t}/26{month:02}{day:02}-{slug}.md")), &fm);
            written += 1;
        }
    }
    written
}

/// A generated root of `files` files, made once and reused (under the system temp folder).
pub fn cached_root(files: usize) -> (PathBuf, usize) {
    // `-z`: the Zipf-like vocabulary (an earlier generator drew every word from 40).
    cached(&format!("tmws-bench-root-z-{files}"), files, generate)
}

/// The root `name` under the system temp folder, written by `generate` once and reused.
fn cached(name: &str, files: usize, generate: fn(&Path, usize) -> usize) -> (PathBuf, usize) {
    let root = std::env::temp_dir().join(name);
    let marker = root.join(".tmws/generated");
    if let Ok(text) = std::fs::read_to_string(&marker)
        && let Ok(n) = text.trim().parse()
    {
        return (root, n);
    }
    let _ = std::fs::remove_dir_all(&root);
    let n = generate(&root, files);
    std::fs::write(&marker, n.to_string()).unwrap();
    (root, n)
}

const VERBS: [&str; 12] =
    ["find", "get", "list", "create", "update", "delete", "search", "resolve", "read", "run", "fetch", "explain"];
const CATEGORIES: [&str; 6] = ["code-search", "docs", "issues", "files", "database", "browser"];

/// Writes `.mcp.json` with `servers` stdio servers running `command` (the example
/// `mcp_mock`, `--name sNNN`) and a registry of them with `tools_per_server` tools each:
/// `echo` (which the mock answers) and generated ones named in snake_case, camelCase or
/// kebab-case from a small vocabulary, with descriptions, categories and schemas.
pub fn registry(root: &Path, servers: usize, tools_per_server: usize, command: &str) {
    let mut rng = Lcg(7);
    let mut configs = serde_json::Map::new();
    for s in 0..servers {
        configs.insert(
            format!("s{s:03}"),
            serde_json::json!({"command": command, "args": ["--name", format!("s{s:03}")]}),
        );
    }
    let mcp = serde_json::json!({"mcpServers": configs}).to_string();
    write(&root.join(".mcp.json"), &mcp);
    write(&root.join(".tmws/config.toml"), "");
    let configured = tmws::query::Engine::open(root).unwrap().configured_servers().unwrap();
    let mut entries = serde_json::Map::new();
    for server in configured {
        let name = server.name;
        let mut tools = serde_json::Map::new();
        tools.insert(
            "echo".into(),
            serde_json::json!({"description": "Answers with the text it is given.",
                "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}}}),
        );
        while tools.len() < tools_per_server {
            let (verb, a, b) =
                (VERBS[rng.next() % VERBS.len()], rng.word().replace('-', "_"), rng.word().replace('-', "_"));
            let tool = match rng.next() % 3 {
                0 => format!("{verb}_{a}_{b}"),
                1 => format!("{verb}{}{}", capitalise(&a), capitalise(&b)),
                _ => format!("{verb}-{a}-{b}"),
            };
            tools.insert(
                tool,
                serde_json::json!({"description": format!("{} the {a} {b}: {}.", capitalise(verb), rng.sentence(10)),
                    "category": CATEGORIES[rng.next() % CATEGORIES.len()],
                    "input_schema": {"type": "object", "properties": {a.clone(): {"type": "string"}, "limit": {"type": "integer"}}}}),
            );
        }
        entries.insert(
            name,
            serde_json::json!({"description": format!("Server of {}", rng.sentence(4)), "config_hash": server.config_hash,
                "connection": server.connection, "persistent": false,
                "metadata": {"cold_start_ms": 20, "introspected_at": "2026-11-22T00:00:00Z", "popularity": 0.0},
                "tools": tools}),
        );
    }
    let reg = serde_json::json!({"version": "1", "servers": entries});
    write(&root.join(".tmws/registry/index.json"), &serde_json::to_string_pretty(&reg).unwrap());
}

fn capitalise(w: &str) -> String {
    let mut c = w.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}

/// A `tmws mcp` child that has answered `initialize`: its stdin and its stdout's lines.
pub struct McpChild {
    pub child: std::process::Child,
    pub stdin: std::process::ChildStdin,
    pub lines: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
}

/// Spawns `tmws mcp` on `root`, sends initialize and initialized, reads the answer.
pub fn start_mcp(bin: &str, root: &Path) -> McpChild {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    let mut child = Command::new(bin)
        .arg("--root")
        .arg(root)
        .arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
    writeln!(stdin, "{init}\n{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}}").unwrap();
    stdin.flush().unwrap();
    let first = lines.next().unwrap().unwrap();
    assert!(first.contains("\"id\":1"), "{first}");
    McpChild { child, stdin, lines }
}

impl McpChild {
    /// Calls `tool` with `arguments` (JSON text) until the answer is no longer stale: the
    /// first sync is done.
    pub fn until_synced(&mut self, tool: &str, arguments: &str) {
        use std::io::Write;
        for id in 2.. {
            let call = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments}}}}}"#
            );
            writeln!(self.stdin, "{call}").unwrap();
            let answer = self.lines.next().unwrap().unwrap();
            if !answer.contains("stale: true") {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// Waits `idle` (the segment merges tantivy starts behind a commit finish too), then
    /// gives the resident memory and its peak, as /proc says them; stops the server.
    pub fn idle_memory(self, idle: std::time::Duration) -> (String, String) {
        std::thread::sleep(idle);
        let McpChild { mut child, stdin, .. } = self;
        let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
        let field = |name: &str| {
            let line = status.lines().find(|l| l.starts_with(name)).unwrap_or("? ?");
            line.split_whitespace().skip(1).collect::<Vec<_>>().join(" ")
        };
        let found = (field("VmRSS:"), field("VmHWM:"));
        drop(stdin);
        let _ = child.wait();
        found
    }
}

/// Spawns `tmws mcp` on `root`, has it answer initialize and tools/list (which must name
/// `expect`), and stops it.
pub fn mcp_spawn_to_tools_list(bin: &str, root: &Path, expect: &str) {
    use std::io::Write;
    let mut mcp = start_mcp(bin, root);
    writeln!(mcp.stdin, r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list"}}"#).unwrap();
    mcp.stdin.flush().unwrap();
    let second = mcp.lines.next().unwrap().unwrap();
    assert!(second.contains(expect), "{second}");
    drop(mcp.stdin);
    let _ = mcp.child.kill();
    let _ = mcp.child.wait();
}

/// A serving engine over `root` (as `tmws mcp` runs one), once its first sync is done.
pub fn serving(root: &Path) -> tmws::query::Engine {
    let engine = tmws::query::Engine::serve(root).unwrap();
    while !engine.health().ready {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    engine
}

/// Areas of the win32-shaped tree: one folder each, as `desktop-src/{Area}` holds them.
const AREAS: [&str; 24] = [
    "CIMWin32Prov",
    "WmiSdk",
    "SecAuthZ",
    "SecAuthN",
    "Direct3D12",
    "DirectWrite",
    "FileIO",
    "Memory",
    "ProcThread",
    "Registry",
    "Shell",
    "Controls",
    "Multimedia",
    "NetMgmt",
    "WinSock",
    "Tapi",
    "Msi",
    "TaskSchd",
    "Wininet",
    "AD",
    "Power",
    "Sync",
    "Debug",
    "Gdi",
];
const KINDS: [&str; 6] = ["function", "method", "class", "structure", "property", "enumeration"];
const TYPES: [&str; 8] = ["DWORD", "HRESULT", "LPCWSTR", "BOOL", "HANDLE", "ULONG", "LPVOID", "UINT"];

/// A CamelCase identifier of two or three made-up words (`KodunBanFen`).
fn camel(rng: &mut Lcg) -> String {
    let parts = 2 + rng.next() % 2;
    (0..parts).map(|_| capitalise(&syllables(rng.next() % VOCABULARY))).collect()
}

/// One page shaped like the win32 documentation: `ms.*` keys, API names, a syntax block,
/// parameter sections with identifiers, a requirements table, links to other pages.
fn win32_page(rng: &mut Lcg, area: &str, n: usize) -> (String, String) {
    let kind = KINDS[rng.next() % KINDS.len()];
    let api = camel(rng);
    let class = format!("Win32_{}", camel(rng));
    let title = match kind {
        "method" => format!("{api} method of the {class} class"),
        "property" => format!("{class}.{api} property"),
        "class" => format!("{class} class"),
        _ => format!("{api} {kind} ({}.h)", area.to_lowercase()),
    };
    let file = format!("{}-{}-{n}.md", api.to_lowercase(), kind);
    let mut p = format!(
        "---\ntitle: {title}\ndescription: {}.\nms.assetid: {:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}\nms.tgt_platform: multiple\n\
         ms.topic: reference\nms.date: {:02}/{:02}/20{}\napi_name:\n- {class}.{api}\n- {api}\napi_type:\n- COM\n\
         api_location:\n- {}.dll\ntopic_type:\n- apiref\n---\n\n# {title}\n\n{}.\n\n## Syntax\n\n```C++\n{} {api}(\n",
        rng.sentence(14),
        rng.next(),
        rng.next() % 0xffff,
        rng.next() % 0xfff,
        rng.next() % 0xfff,
        rng.next() as u64 * 7919,
        1 + rng.next() % 12,
        1 + rng.next() % 28,
        10 + rng.next() % 15,
        area,
        rng.sentence(30),
        TYPES[rng.next() % TYPES.len()],
    );
    let params: Vec<String> = (0..2 + rng.next() % 5)
        .map(|_| format!("{}{}", ["dw", "lp", "h", "pb", "cb"][rng.next() % 5], camel(rng)))
        .collect();
    for (i, name) in params.iter().enumerate() {
        let comma = if i + 1 < params.len() { "," } else { "" };
        let _ = writeln!(p, "  [in] {} {name}{comma}", TYPES[rng.next() % TYPES.len()]);
    }
    p.push_str(");\n```\n\n## Parameters\n\n");
    for name in &params {
        let _ = write!(
            p,
            "*{name}* \\[in\\]\n\n{}. Set `{}` to `{}_{}`.\n\n",
            {
                let words = 25 + rng.next() % 40;
                rng.sentence(words)
            },
            name,
            area.to_uppercase(),
            syllables(rng.next() % VOCABULARY).to_uppercase()
        );
    }
    let _ = write!(p, "## Return value\n\n{}.\n\n## Remarks\n\n", rng.sentence(40));
    for _ in 0..1 + rng.next() % 8 {
        let words = 40 + rng.next() % 80;
        let _ = write!(p, "{}.\n\n", rng.sentence(words));
    }
    let _ = write!(
        p,
        "## Requirements\n\n| Requirement | Value |\n|---|---|\n| Minimum supported client | Windows Vista |\n\
         | Header | {}.h |\n| DLL | {}.dll |\n\n## See also\n\n[{class} class]({}-class.md)\n\n[{}]({}.md)\n",
        area.to_lowercase(),
        area,
        class.to_lowercase(),
        camel(rng),
        syllables(rng.next() % VOCABULARY),
    );
    (file, p)
}

/// Writes `files` pages shaped like the win32 documentation (about 5 KB each, as its
/// 48,212 pages of 238 MB are) under `desktop-src/`, with a config that includes it.
pub fn generate_win32(root: &Path, files: usize) -> usize {
    let mut rng = Lcg(7);
    write(&root.join(".tmws/config.toml"), "[index]\ninclude = [\"desktop-src\"]\n");
    for n in 0..files {
        let area = AREAS[n % AREAS.len()];
        let (file, text) = win32_page(&mut rng, area, n);
        write(&root.join(format!("desktop-src/{area}/{file}")), &text);
    }
    files
}

/// A generated root's config set to words only (`[semantic] model = "off"`) while this
/// lives: the benches by words only measure what the vectors add.
pub struct WordsOnly {
    config: PathBuf,
    was: String,
}

impl WordsOnly {
    pub fn set(root: &Path) -> WordsOnly {
        let config = root.join(".tmws/config.toml");
        let was = std::fs::read_to_string(&config).unwrap_or_default();
        std::fs::write(&config, format!("{was}\n[semantic]\nmodel = \"off\"\n")).unwrap();
        WordsOnly { config, was }
    }
}

impl Drop for WordsOnly {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.config, &self.was);
    }
}

/// A generated win32-shaped root of `files` pages, made once and reused.
pub fn cached_win32(files: usize) -> (PathBuf, usize) {
    cached(&format!("tmws-bench-win32-{files}"), files, generate_win32)
}

/// Runs git in `dir` with a fixed identity and no user configuration.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=Bench", "-c", "user.email=bench@example.invalid", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}
