//! Which servers of the client configs the user approved on this machine
//! (docs/registry.md#approval, docs/trust-boundary.md): nothing a repository names is started — for
//! introspection or a call — until then.
//!
//! An approval covers *what runs*, not only the line that starts it. A stdio server runs
//! in the root (never in the folder tmws happens to run in), its command resolved against
//! the root as `execvp` would (a path with a `/` from the root, a bare name through PATH,
//! whose relative entries are relative to the root), and what it executes from inside the
//! root is part of what the user approved: the resolved program when it lies in the root,
//! the files its command line names there that run (an interpreter's script; any file
//! with an execute bit or a code extension, also inside a `sh -c` line), the modules of a
//! `python -m` (`mod.py`, `mod/__init__.py`, `mod/__main__.py`, compiled ones, the
//! packages on the way, which the root shadows as the first folder Python looks in), the
//! local `node_modules/.bin` shim of an `npx`-like command with what it points to and the
//! package's `package.json` and bins, and the commands in every PATH entry inside the
//! root. Each is a part of the approval (its root-relative path and a hash of what is
//! there); the exact live connection — command, args, env, URL and headers with the
//! user's variables expanded — is another. A `git pull` that adds a server, changes one,
//! or changes a file one runs, runs nothing: the server awaits approval again.
//!
//! Approvals live outside every repository, in the user's config folder
//! (`$TMWS_CONFIG_HOME`, else `$XDG_CONFIG_HOME/tmws`, else `~/.config/tmws`), in
//! `approvals.json`: by root, by server, the hash of every part. It holds no secret. A file
//! there that cannot be read or parsed is left as it is, and every approval fails with the
//! reason, so that no approval of another project is lost by rewriting it.

use std::collections::{BTreeMap, HashMap};
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Cause, Error, Result};
use crate::parse::clients::Connection;
use crate::pool::{self, Exec};
use crate::store::{self, Probe};

/// The file in the user's config folder, and the lock of its writers.
const FILE: &str = "approvals.json";
const LOCK: &str = "approvals.lock";

/// The most bytes of one file an approval hashes (a program, a script): larger ones cannot
/// be approved.
const HASH_CAP: u64 = 1 << 30;
/// The most entries of one PATH folder, and the most words of one command line, looked at.
const MAX_ENTRIES: usize = 4096;
const MAX_WORDS: usize = 512;

/// Extensions of files that hold code an interpreter runs: a file named on a command line
/// with one of these (or with an execute bit) is part of what the server runs.
const CODE: [&str; 34] = [
    "py", "pyc", "pyw", "pyz", "js", "mjs", "cjs", "jsx", "ts", "mts", "cts", "tsx", "sh", "bash", "zsh", "fish",
    "ksh", "rb", "pl", "pm", "php", "lua", "jar", "r", "jl", "swift", "kts", "groovy", "exs", "dart", "wasm", "ps1",
    "bat", "cmd",
];

/// Interpreters whose first argument that is not an option is the script they run.
const INTERPRETERS: [&str; 17] = [
    "sh", "bash", "dash", "zsh", "ksh", "fish", "node", "nodejs", "deno", "bun", "ruby", "perl", "php", "lua", "tsx",
    "ts-node", "Rscript",
];

/// The user's config folder for tmws.
pub fn config_dir() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    var("TMWS_CONFIG_HOME")
        .or_else(|| var("XDG_CONFIG_HOME").map(|d| d.join("tmws")))
        .or_else(|| var("HOME").map(|h| h.join(".config/tmws")))
}

/// What one approval holds: the hash of each part of what the server runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
enum Held {
    Parts {
        parts: BTreeMap<String, String>,
    },
    /// The hash of the connection alone, as approvals were before they covered files: it
    /// is kept, and asks again.
    Old(String),
}

/// Approvals: root → server → what was approved.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Approvals {
    roots: BTreeMap<String, BTreeMap<String, Held>>,
}

/// The approvals' key of a root: its project's, so that every worktree of a repository
/// shares the approvals of its main worktree (what each part hashes is still read in the
/// root the server runs in, so a worktree whose files differ is asked again).
fn key(root: &Path) -> String {
    let root = store::git::project_root(root);
    store::canonicalize(&root).unwrap_or(root).display().to_string()
}

/// The approvals on this machine (none when the file does not exist). A file that cannot be
/// read or parsed is an error that says so and leaves it alone.
fn load(dir: &Path) -> Result<Approvals> {
    let path = dir.join(FILE);
    let unusable = |why: String, source: Cause| Error::EnvironmentCause {
        message: format!(
            "{}: {why}; it is left as it is: fix it or move it away (its approvals are then asked for again)",
            path.display()
        ),
        source,
    };
    let bytes = match store::read_opt(dir, &path, store::cap::CONFIG) {
        Ok(Some(b)) => b,
        Ok(None) => return Ok(Approvals::default()),
        Err(Error::Io { source, .. }) => return Err(unusable(format!("cannot be read ({source})"), source.into())),
        Err(e) => return Err(unusable(format!("cannot be read ({e})"), e.into())),
    };
    serde_json::from_slice(&bytes).map_err(|e| unusable(format!("not approvals tmws can read ({e})"), e.into()))
}

/// What a server runs, as the user approves it, and how it is started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// The program (resolved against the root) and the folder (the root) of a stdio server.
    pub exec: Exec,
    /// Each part, by name: `connection`, `file:<path>` (a file inside the root that it
    /// runs), `path:<folder>` (a PATH entry inside the root).
    parts: BTreeMap<String, String>,
}

impl Launch {
    /// One hash of every part.
    pub fn hash(&self) -> String {
        let mut h = blake3::Hasher::new();
        for (k, v) in &self.parts {
            h.update(k.as_bytes()).update(b"\0").update(v.as_bytes()).update(b"\n");
        }
        h.finalize().to_hex().to_string()
    }

    /// The files and folders inside the root that are part of it, root-relative.
    pub fn files(&self) -> Vec<String> {
        self.parts
            .keys()
            .filter_map(|k| {
                k.strip_prefix("file:")
                    .map(str::to_owned)
                    .or_else(|| k.strip_prefix("path:").map(|p| format!("{p}/ (on PATH)")))
            })
            .collect()
    }
}

/// Whether a server is approved as it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    Approved,
    /// Never approved on this machine.
    New,
    /// Approved before; these parts changed since (in words).
    Changed(Vec<String>),
}

/// Works out what server `live` of `root` runs.
pub fn launch(root: &Path, live: &Connection) -> Result<Launch> {
    let mut parts = BTreeMap::new();
    parts.insert("connection".to_owned(), live.exact_hash());
    let Some(command) = live.command.as_deref().filter(|_| live.kind == "stdio") else {
        return Ok(Launch { exec: Exec::default(), parts });
    };
    let root = store::canonicalize(root)?;
    let path_var = match live.env.get("PATH") {
        Some(v) => pool::resolve(v).unwrap_or_default(),
        None => std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".to_owned()),
    };
    let entries: Vec<PathBuf> = path_var.split(':').map(|e| root.join(e)).collect();
    let program = resolve(&root, command, &entries);
    let mut files = Files { root: &root, parts: &mut parts };
    if let Some(p) = &program {
        files.add(p, true)?;
    }
    let name = base(command);
    let mut words = 0;
    let mut script = INTERPRETERS.contains(&name) || is_python(name);
    for arg in &live.args {
        let runs = script && !arg.starts_with('-');
        if runs {
            script = false;
        }
        for word in words_of(arg) {
            words += 1;
            if words > MAX_WORDS {
                break;
            }
            files.add(&root.join(word), runs)?;
        }
    }
    if is_python(name) || name == "uv" || live.args.iter().any(|a| is_python(base(a))) {
        // Python looks for a module in the working folder (the root) first, then along
        // PYTHONPATH, whose folders inside the root are the repository's too.
        let python_path = match live.env.get("PYTHONPATH") {
            Some(v) => pool::resolve(v).unwrap_or_default(),
            None => std::env::var("PYTHONPATH").unwrap_or_default(),
        };
        let mut dirs = vec![root.clone()];
        dirs.extend(python_path.split(':').filter(|d| !d.is_empty()).map(|d| lexical(&root.join(d))));
        dirs.retain(|d| d.starts_with(&root));
        for module in modules(&live.args) {
            for dir in &dirs {
                files.module(dir, module)?;
            }
        }
    }
    for package in packages(name, &live.args) {
        files.package(package)?;
    }
    for dir in &entries {
        files.path_entry(dir)?;
    }
    Ok(Launch { exec: Exec { program, cwd: Some(root) }, parts })
}

/// The last component of a command's path.
fn base(command: &str) -> &str {
    let name = command.rsplit(['/', '\\']).next().unwrap_or(command);
    name.strip_suffix(".exe").unwrap_or(name)
}

fn is_python(name: &str) -> bool {
    name.starts_with("python") || name.starts_with("pypy")
}

/// `command` as `execvp` finds it from the root: a path with a `/` is taken from the root,
/// a bare name is looked for in the PATH entries (relative ones from the root); None when
/// no executable is found (the command as written is started, and fails as it fails).
fn resolve(root: &Path, command: &str, entries: &[PathBuf]) -> Option<PathBuf> {
    if command.is_empty() || command.contains('\0') {
        return None;
    }
    if command.contains('/') {
        // `./scripts/srv.sh` runs as `<root>/scripts/srv.sh` (the `.` dropped, nothing else).
        return Some(root.join(command).components().collect());
    }
    entries.iter().map(|dir| dir.join(command)).find(|p| store::is_executable(p))
}

/// The words of an argument that may name a file: split at spaces, `=`, quotes and the
/// shell's operators (`sh -c "exec ./srv.sh"`, `--script=./srv.py`).
fn words_of(arg: &str) -> impl Iterator<Item = &str> {
    arg.split(|c: char| c.is_whitespace() || "=;'\"`|&<>()".contains(c))
        .filter(|w| !w.is_empty() && !w.starts_with('-') && w.len() < 4096)
}

/// The modules of `python -m MOD` (`-m MOD` or `-mMOD`) on a command line.
fn modules(args: &[String]) -> Vec<&str> {
    let mut out = Vec::new();
    for (i, a) in args.iter().enumerate() {
        let m = if a == "-m" {
            args.get(i + 1).map(String::as_str)
        } else {
            a.strip_prefix("-m").filter(|m| !m.is_empty())
        };
        if let Some(m) = m.filter(|m| m.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '.')) {
            out.push(m);
        }
    }
    out
}

/// The packages an `npx`-like command runs (`npx -y pkg`, `npx -p pkg cmd`, `bunx`,
/// `pnpx`, `npm exec`, `pnpm exec|dlx`, `yarn exec|dlx`, `bun x`).
fn packages<'a>(name: &str, args: &'a [String]) -> Vec<&'a str> {
    let rest = match name {
        "npx" | "bunx" | "pnpx" => args,
        "npm" | "pnpm" | "yarn" | "bun" if args.first().is_some_and(|a| ["exec", "dlx", "x"].contains(&a.as_str())) => {
            &args[1..]
        }
        _ => return Vec::new(),
    };
    let mut out = Vec::new();
    let mut it = rest.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-p" | "--package" => out.extend(it.next().map(String::as_str)),
            "--" => {}
            a if a.starts_with("--package=") => out.push(&a["--package=".len()..]),
            a if a.starts_with('-') => {}
            a => {
                out.push(a);
                break;
            }
        }
    }
    out
}

/// A package spec without its version: `@scope/name@1.2` → `@scope/name`.
fn package_name(spec: &str) -> &str {
    let (scope, rest) = match spec.strip_prefix('@') {
        Some(r) => match r.split_once('/') {
            Some((s, n)) => (Some(s), n),
            None => return spec,
        },
        None => (None, spec),
    };
    let bare = rest.split('@').next().unwrap_or(rest);
    match scope {
        Some(s) => &spec[..s.len() + 2 + bare.len()],
        None => bare,
    }
}

/// `path` with `.` and `..` worked out by their names (no symlink followed).
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Hashes already taken, by file and its state: a call checks its server's approval
/// without reading unchanged files again.
static HASHED: Mutex<Option<HashMap<PathBuf, (store::FileState, String)>>> = Mutex::new(None);

fn hash_of(path: &Path, state: store::FileState) -> Result<String> {
    let mut cache = HASHED.lock().unwrap_or_else(|e| e.into_inner());
    let cache = cache.get_or_insert_with(HashMap::new);
    if let Some((s, h)) = cache.get(path)
        && *s == state
    {
        return Ok(h.clone());
    }
    let h = store::hash_file(path, HASH_CAP)?;
    if cache.len() >= 4 * MAX_ENTRIES {
        cache.clear();
    }
    cache.insert(path.to_path_buf(), (state, h.clone()));
    Ok(h)
}

/// The parts an approval takes from the files inside the root.
struct Files<'a> {
    root: &'a Path,
    parts: &'a mut BTreeMap<String, String>,
}

impl Files<'_> {
    /// The path's place inside the root (root-relative), if it is inside.
    fn inside(&self, path: &Path) -> Option<String> {
        path.strip_prefix(self.root).ok().map(|r| r.to_string_lossy().into_owned())
    }

    /// What is at `path` (a file inside the root, or a symlink inside it): its content's
    /// hash, or where the link leads; None when it is not a file that may run.
    fn state(&self, path: &Path, runs: bool) -> Result<Option<String>> {
        let real = store::canonicalize(path).ok();
        let link = match store::probe(path)? {
            Probe::Symlink(to) => Some(to),
            _ => None,
        };
        let Some(real) = real else {
            // A dangling link: where it points is what a later file there would run.
            return Ok(link.map(|to| format!("link {} to nothing", to.display())));
        };
        let Probe::File { executable, state } = store::probe(&real)? else { return Ok(None) };
        let code = real
            .extension()
            .or_else(|| path.extension())
            .and_then(|e| e.to_str())
            .is_some_and(|e| CODE.contains(&e.to_ascii_lowercase().as_str()));
        if !(runs || executable || code) {
            return Ok(None);
        }
        let what = match self.inside(&real) {
            Some(_) => hash_of(&real, state)?,
            // Outside the root: what it is is not the repository's, where the link leads is.
            None => format!("outside {}", real.display()),
        };
        Ok(Some(match link {
            Some(to) => format!("link {} to {what}", to.display()),
            None => what,
        }))
    }

    /// Adds the file at `path` when it lies inside the root (by name or where its links
    /// lead) and may run.
    fn add(&mut self, path: &Path, runs: bool) -> Result<()> {
        let path = lexical(path);
        let named = self.inside(&path);
        let real = store::canonicalize(&path).ok().and_then(|r| self.inside(&r));
        let Some(rel) = named.or(real) else { return Ok(()) };
        if let Some(state) = self.state(&path, runs)? {
            self.parts.insert(format!("file:{rel}"), state);
        }
        Ok(())
    }

    /// The files that `python -m MOD` may run from `base`, a folder of the root: for `a.b`,
    /// `a/__init__.py`, and in `a/` any `b.*` Python loads (`.py`, `.pyc`, `.so`…) or the
    /// package `b/`.
    fn module(&mut self, base: &Path, module: &str) -> Result<()> {
        let names: Vec<&str> = module.split('.').filter(|n| !n.is_empty()).collect();
        let Some((last, packages)) = names.split_last() else { return Ok(()) };
        let mut dir = base.to_path_buf();
        for p in packages {
            dir.push(p);
            self.add(&dir.join("__init__.py"), true)?;
        }
        if store::is_dir_in(self.root, &dir) {
            for entry in store::list_dir(self.root, &dir)?.into_iter().take(MAX_ENTRIES) {
                let loads = entry
                    .strip_prefix(last)
                    .and_then(|r| r.strip_prefix('.'))
                    .is_some_and(|r| ["py", "pyc", "pyw", "so", "pyd"].iter().any(|e| r.ends_with(e)));
                if loads {
                    self.add(&dir.join(&entry), true)?;
                }
            }
        }
        let package = dir.join(last);
        for file in ["__init__.py", "__main__.py"] {
            self.add(&package.join(file), true)?;
        }
        Ok(())
    }

    /// What an `npx`-like command runs of `spec` from the root's `node_modules`: the shim
    /// `.bin/NAME` and what it points to, the package's `package.json`, and its bins.
    fn package(&mut self, spec: &str) -> Result<()> {
        let name = package_name(spec);
        if name.is_empty() || name.contains("..") || name.starts_with('/') || name.contains('\\') {
            return Ok(());
        }
        let modules = self.root.join("node_modules");
        let bin = name.rsplit('/').next().unwrap_or(name);
        self.add(&modules.join(".bin").join(bin), true)?;
        let dir = modules.join(name);
        let manifest = dir.join("package.json");
        let rel = self.inside(&manifest).unwrap_or_default();
        let Ok(Some(text)) = store::read_opt(self.root, &manifest, store::cap::CONFIG) else { return Ok(()) };
        self.parts.insert(format!("file:{rel}"), blake3::hash(&text).to_hex().to_string());
        let bins: Vec<String> = match serde_json::from_slice::<Value>(&text).ok().and_then(|v| v.get("bin").cloned()) {
            Some(Value::String(s)) => vec![s],
            Some(Value::Object(m)) => {
                m.values().filter_map(Value::as_str).map(str::to_owned).take(MAX_ENTRIES).collect()
            }
            _ => Vec::new(),
        };
        for b in bins {
            self.add(&dir.join(b), true)?;
        }
        Ok(())
    }

    /// A PATH entry inside the root: the commands in it (name and content, or where a link
    /// leads), or that there is none yet.
    fn path_entry(&mut self, dir: &Path) -> Result<()> {
        let dir = lexical(dir);
        let real = store::canonicalize(&dir).ok();
        let Some(rel) = self.inside(&dir).or_else(|| real.as_deref().and_then(|r| self.inside(r))) else {
            return Ok(());
        };
        let rel = if rel.is_empty() { ".".to_owned() } else { rel };
        let mut h = blake3::Hasher::new();
        match real.as_deref().filter(|r| self.inside(r).is_some() && store::is_dir(r)) {
            None => {
                h.update(b"no folder");
            }
            Some(real) => {
                let names = store::list_dir(self.root, real)?;
                for name in names.iter().take(MAX_ENTRIES) {
                    if let Some(state) = self.command_in(&real.join(name))? {
                        h.update(name.as_bytes()).update(b"\0").update(state.as_bytes()).update(b"\n");
                    }
                }
                h.update(format!("{} entries", names.len()).as_bytes());
            }
        }
        self.parts.insert(format!("path:{rel}"), h.finalize().to_hex().to_string());
        Ok(())
    }

    /// A command in a PATH folder inside the root: an executable file (its content) or a
    /// symlink (where it leads, and what is there when that is inside the root).
    fn command_in(&self, path: &Path) -> Result<Option<String>> {
        match store::probe(path)? {
            Probe::File { executable: true, .. } | Probe::Symlink(_) => self.state(path, true),
            _ => Ok(None),
        }
    }
}

/// Whether server `name` of `root`, running `launch`, is approved as it is now.
pub fn status(root: &Path, name: &str, launch: &Launch) -> Result<Status> {
    let Some(dir) = config_dir() else { return Ok(Status::New) };
    let all = load(&dir)?;
    Ok(match all.roots.get(&key(root)).and_then(|s| s.get(name)) {
        None => Status::New,
        Some(Held::Old(_)) => {
            Status::Changed(vec!["what it runs was never checked (approved by an older tmws)".into()])
        }
        Some(Held::Parts { parts }) if *parts == launch.parts => Status::Approved,
        Some(Held::Parts { parts }) => Status::Changed(changes(parts, &launch.parts)),
    })
}

/// What differs between the approved parts and those of now, in words.
fn changes(was: &BTreeMap<String, String>, now: &BTreeMap<String, String>) -> Vec<String> {
    let mut out = Vec::new();
    let keys: std::collections::BTreeSet<&String> = was.keys().chain(now.keys()).collect();
    for k in keys {
        let (a, b) = (was.get(k), now.get(k));
        if a == b {
            continue;
        }
        let what = match k.split_once(':') {
            Some(("file", p)) => format!("`{p}`"),
            Some(("path", p)) => format!("the commands in `{p}/` (on PATH)"),
            _ => "its connection (command, args, env, URL or headers, with your environment's values)".to_owned(),
        };
        out.push(match (a, b) {
            (None, _) if k.starts_with("file:") => format!("{what} is new"),
            (_, None) if k.starts_with("file:") => format!("{what} is gone"),
            _ => format!("{what} changed"),
        });
    }
    out
}

/// Approves these servers of `root` (name and what it runs, as the user was shown it).
pub fn approve(root: &Path, servers: &[(String, Launch)]) -> Result<()> {
    if servers.is_empty() {
        return Ok(());
    }
    let dir = config_dir().ok_or_else(|| {
        Error::Environment("no folder for approvals: set HOME, XDG_CONFIG_HOME or TMWS_CONFIG_HOME".into())
    })?;
    store::create_dir_all(&dir)?;
    // Two processes approving at once must not lose each other's approvals.
    let _lock = store::FileLock::exclusive(&dir, &dir.join(LOCK))?;
    let mut all = load(&dir)?;
    let before = all.clone();
    // Roots that are gone (a deleted clone, a temporary folder) are forgotten.
    all.roots.retain(|r, _| store::is_dir(Path::new(r)));
    let mine = all.roots.entry(key(root)).or_default();
    for (name, launch) in servers {
        mine.insert(name.clone(), Held::Parts { parts: launch.parts.clone() });
    }
    if all == before {
        return Ok(());
    }
    let bytes = serde_json::to_vec_pretty(&all).map_err(|e| Error::environment("", e))?;
    store::write_atomic(&dir, &dir.join(FILE), &bytes)
}

/// The command line a server runs (or the URL it is reached at), as the user is shown it
/// (secrets left to the caller's redaction; a URL's query values and user info replaced).
pub fn shown(live: &Connection) -> String {
    match &live.command {
        Some(cmd) => {
            std::iter::once(cmd.as_str()).chain(live.args.iter().map(String::as_str)).collect::<Vec<_>>().join(" ")
        }
        None => crate::parse::clients::url_shown(live.url.as_deref().unwrap_or_default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_name_their_modules_packages_and_words() {
        let args = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(modules(&args(&["-u", "-m", "mcpsrv.main", "--port", "1"])), ["mcpsrv.main"]);
        assert_eq!(modules(&args(&["-mhttp.server"])), ["http.server"]);
        assert_eq!(modules(&args(&["-m", "$(evil)"])), Vec::<&str>::new());
        assert_eq!(packages("npx", &args(&["-y", "@scope/srv@1.2.0", "--stdio"])), ["@scope/srv@1.2.0"]);
        assert_eq!(packages("npx", &args(&["-p", "a", "--package=b", "cmd"])), ["a", "b", "cmd"]);
        assert_eq!(packages("pnpm", &args(&["dlx", "srv"])), ["srv"]);
        assert_eq!(packages("node", &args(&["srv.js"])), Vec::<&str>::new());
        assert_eq!(package_name("@scope/srv@1.2.0"), "@scope/srv");
        assert_eq!(package_name("srv@latest"), "srv");
        assert_eq!(package_name("@scope"), "@scope");
        let words: Vec<&str> = words_of("exec ./scripts/srv.sh --flag=x; python3 'a b.py'").collect();
        assert_eq!(words, ["exec", "./scripts/srv.sh", "x", "python3", "a", "b.py"]);
        assert_eq!(lexical(Path::new("/r/./a/../b")), Path::new("/r/b"));
        assert_eq!(base("/usr/bin/python3.12"), "python3.12");
    }
}
