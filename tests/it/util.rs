//! The harness: throwaway roots built file by file, and the real binary run in them.

use std::fmt::Debug;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// The tools `tmws mcp` and `/mcp` of `tmws serve` list, sorted by name: the tool table's.
pub fn mcp_tools() -> Vec<&'static str> {
    tmws::query::catalog::names()
}

/// Says that a test's prerequisite (a program, a system feature) is missing, and lets the
/// test return: but where `TMWS_REQUIRE_ALL` is set, as `.ci/run` sets it, the test fails,
/// so that a run cannot count a skip as a pass.
pub fn missing(what: &str) {
    assert!(!require_all(), "missing prerequisite: {what} (TMWS_REQUIRE_ALL is set)");
    #[allow(clippy::print_stderr, reason = "a skipped test says why")]
    {
        eprintln!("skipped: {what}");
    }
}

/// Whether every prerequisite is required (`TMWS_REQUIRE_ALL`, which `.ci/run` sets).
fn require_all() -> bool {
    std::env::var_os("TMWS_REQUIRE_ALL").is_some_and(|v| !v.is_empty() && v != "0")
}

/// How long a test waits for something that must happen before it says it did not: long
/// enough for a machine loaded many times over (a debug build, every test at once, other
/// work besides), since a test that passes only on an idle machine tests the machine. A
/// wait that ends sooner costs nothing; only a failure waits this long.
pub const PATIENCE: Duration = Duration::from_secs(120);

/// What a probe of [`eventually`] gives: `Some(value)` or `Ok(value)` once the awaited
/// thing happened; `None`, or `Err(state)` with what it saw instead (shown if the wait
/// fails), until then.
pub trait Probe<T> {
    fn outcome(self) -> Result<T, Option<String>>;
}

impl<T> Probe<T> for Option<T> {
    fn outcome(self) -> Result<T, Option<String>> {
        self.ok_or(None)
    }
}

impl<T, E: Debug> Probe<T> for Result<T, E> {
    fn outcome(self) -> Result<T, Option<String>> {
        self.map_err(|e| Some(format!("{e:?}")))
    }
}

/// Polls `probe` until it gives a value, and returns that value; fails naming `what` (and
/// the last state the probe reported) once [`PATIENCE`] has passed. The pause between
/// polls grows from 5 ms to 200 ms, so that a probe that runs a process does not crowd a
/// busy machine.
#[track_caller]
pub fn eventually<T, P: Probe<T>>(what: &str, mut probe: impl FnMut() -> P) -> T {
    let deadline = Instant::now() + PATIENCE;
    let mut pause = Duration::from_millis(5);
    loop {
        let last = match probe().outcome() {
            Ok(value) => return value,
            Err(last) => last,
        };
        if Instant::now() > deadline {
            give_up(what, last);
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(200));
    }
}

/// The failure of [`eventually`]: what was waited for, and what was last seen.
#[track_caller]
fn give_up(what: &str, last: Option<String>) -> ! {
    match last {
        Some(last) => panic!("{what}: not within {} s; last seen: {last}", PATIENCE.as_secs()),
        None => panic!("{what}: not within {} s", PATIENCE.as_secs()),
    }
}

/// [`eventually`] for async tests: the probe is a future, and the pause does not block the
/// runtime.
pub async fn eventually_async<T, P: Probe<T>, F: Future<Output = P>>(what: &str, mut probe: impl FnMut() -> F) -> T {
    let deadline = Instant::now() + PATIENCE;
    let mut pause = Duration::from_millis(5);
    loop {
        let last = match probe().await.outcome() {
            Ok(value) => return value,
            Err(last) => last,
        };
        if Instant::now() > deadline {
            give_up(what, last);
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(200));
    }
}

/// The mock MCP server (the example `mcp_mock`, which `cargo test` builds).
pub fn mock() -> String {
    let tmws = PathBuf::from(env!("CARGO_BIN_EXE_tmws"));
    let mock = tmws.parent().unwrap().join("examples").join(format!("mcp_mock{}", std::env::consts::EXE_SUFFIX));
    assert!(mock.exists(), "{} is missing: `cargo test` builds the examples", mock.display());
    mock.display().to_string()
}

/// The repository's own folder (for `testdata/`).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Real-world Markdown nobody here wrote: the folder `TMWS_CORPORA` names (the full
/// corpora, which CI provides), else the samples of them in `testdata/corpora`; but where
/// `TMWS_REQUIRE_ALL` is set, a run without the full corpora fails rather than pass on
/// the samples.
pub fn corpora() -> PathBuf {
    if full_corpora() {
        return PathBuf::from(std::env::var_os("TMWS_CORPORA").unwrap_or_default());
    }
    assert!(
        !require_all(),
        "missing prerequisite: the full corpora, which TMWS_CORPORA names (TMWS_REQUIRE_ALL is set)"
    );
    repo().join("testdata/corpora")
}

/// Whether the tests run on the full corpora rather than the samples.
pub fn full_corpora() -> bool {
    std::env::var_os("TMWS_CORPORA").is_some_and(|d| !d.is_empty())
}

/// YAML text as a value (answers are YAML by default); None when it does not parse.
pub fn yaml(text: &str) -> Option<yaml_rust2::Yaml> {
    yaml_rust2::YamlLoader::load_from_str(text).ok()?.into_iter().next()
}

/// A text field of a Markdown file's front-matter (a BOM and CRLF allowed), when the
/// front-matter is YAML that parses and the field is not empty.
pub fn front_matter_field(bytes: &[u8], field: &str) -> Option<String> {
    let text = String::from_utf8_lossy(bytes).replace("\r\n", "\n");
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let (front, _) = text.strip_prefix("---\n")?.split_once("\n---")?;
    yaml(front)?[field].as_str().map(str::trim).filter(|t| !t.is_empty()).map(str::to_owned)
}

/// What a run of the binary gave.
#[derive(Debug)]
pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Where the tmws processes of the tests keep the user's approvals of servers: one folder
/// for this test run, never the real `~/.config/tmws`.
pub fn user_config() -> PathBuf {
    std::env::temp_dir().join(format!("tmws-test-user-config-{}", std::process::id()))
}

/// Runs `tmws` with `args` in `cwd`, with no colour and no inherited log level.
pub fn tmws(cwd: &Path, args: &[&str]) -> Output {
    tmws_at(Path::new(env!("CARGO_BIN_EXE_tmws")), cwd, args)
}

/// Runs the tmws binary at `exe` (a copy of the one built) like [`tmws`].
pub fn tmws_at(exe: &Path, cwd: &Path, args: &[&str]) -> Output {
    let out = Command::new(exe)
        .env("TMWS_CONFIG_HOME", user_config())
        .args(args)
        .current_dir(cwd)
        .env_remove("TMWS_LOG")
        .env("NO_COLOR", "1")
        .output()
        .expect("the tmws binary runs");
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `tmws` with `args` in `cwd` like [`tmws`], with `stdin` on its standard input. A
/// process that stops reading early (it gave up on a huge input) is not an error.
pub fn tmws_with_stdin(cwd: &Path, args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tmws"))
        .env("TMWS_CONFIG_HOME", user_config())
        .env_remove("TMWS_LOG")
        .env("NO_COLOR", "1")
        .args(args)
        .current_dir(cwd)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the tmws binary runs");
    let mut input = child.stdin.take().expect("a piped stdin");
    let bytes = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = std::io::Write::write_all(&mut input, &bytes);
    });
    let out = child.wait_with_output().expect("the tmws binary ends");
    let _ = writer.join();
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A temporary root, built file by file.
pub struct TestRoot {
    dir: TempDir,
}

impl TestRoot {
    /// An empty folder marked as a tmws root (`.tmws/`).
    pub fn new() -> TestRoot {
        let root = TestRoot::bare();
        std::fs::create_dir_all(root.path().join(".tmws")).unwrap();
        root
    }

    /// A copy of `testdata/sample`, without any derived cache.
    pub fn sample() -> TestRoot {
        let root = TestRoot::new();
        for (rel, bytes) in copy_tree(&repo().join("testdata/sample")) {
            if !rel.starts_with(".tmws/cache") {
                root.write(&rel, bytes);
            }
        }
        root
    }

    /// An empty folder that is not a root.
    pub fn bare() -> TestRoot {
        TestRoot { dir: tempfile::Builder::new().prefix("tmws-test-").tempdir().unwrap() }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Adds a file (creating its folders).
    pub fn file(self, rel: &str, contents: impl AsRef<[u8]>) -> TestRoot {
        self.write(rel, contents);
        self
    }

    pub fn write(&self, rel: &str, contents: impl AsRef<[u8]>) {
        let p = self.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, contents).unwrap();
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
    }

    pub fn run(&self, args: &[&str]) -> Output {
        tmws(self.path(), args)
    }

    /// Every file under the root with its bytes, for before/after comparisons.
    pub fn snapshot(&self) -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::new();
        let mut stack = vec![self.path().to_path_buf()];
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).unwrap() {
                let e = e.unwrap();
                let p = e.path();
                let meta = std::fs::symlink_metadata(&p).unwrap();
                let rel = p.strip_prefix(self.path()).unwrap().to_string_lossy().into_owned();
                if meta.is_dir() {
                    stack.push(p);
                } else if meta.file_type().is_symlink() {
                    out.push((rel, std::fs::read_link(&p).unwrap().to_string_lossy().into_owned().into_bytes()));
                } else {
                    out.push((rel, std::fs::read(&p).unwrap()));
                }
            }
        }
        out.sort();
        out
    }
}

/// Every file under `dir` (symlinks skipped) with its bytes, relative paths.
pub fn copy_tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.is_dir() {
                stack.push(p);
            } else if meta.is_file() {
                out.push((p.strip_prefix(dir).unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out
}

/// The JSON diagnostics of a `check --format json` run, as tuples.
pub fn diagnostics(out: &Output) -> Vec<(String, u64, u64, String, String, String)> {
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout));
    v.as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["path"].as_str().unwrap().to_owned(),
                d["line"].as_u64().unwrap(),
                d["column"].as_u64().unwrap(),
                d["severity"].as_str().unwrap().to_owned(),
                d["rule"].as_str().unwrap().to_owned(),
                d["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// A `tmws watch` that keeps the index of a root, started and synced; killed when the test
/// ends, passed or failed, stopped or not.
pub struct Keeper {
    child: std::process::Child,
    /// Its stdout, read no further but kept open: a closed pipe would end it.
    _out: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
}

impl Keeper {
    /// Starts `tmws watch` in `root` and waits for its first sync.
    pub fn start(root: &TestRoot) -> Keeper {
        use std::io::BufRead;
        let mut child = Command::new(env!("CARGO_BIN_EXE_tmws"))
            .env("TMWS_CONFIG_HOME", user_config())
            .arg("watch")
            .current_dir(root.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let first = out.next().and_then(Result::ok).unwrap_or_default();
        assert!(first.starts_with("synced: "), "the watcher's first line: {first:?}");
        Keeper { child, _out: out }
    }

    /// Sends it `signal` (`-STOP`, `-CONT`).
    pub fn signal(&self, signal: &str) {
        let sent = Command::new("kill").args([signal, &self.child.id().to_string()]).status().unwrap();
        assert!(sent.success(), "kill {signal}");
    }
}

impl Drop for Keeper {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether `v` is the id tmws gives a client session (`20261128T040600Z-PID-N`), as the
/// `session` of an op's `author` names it.
pub fn is_session_id(v: &serde_json::Value) -> bool {
    let Some(text) = v.as_str() else { return false };
    let parts: Vec<&str> = text.split('-').collect();
    let stamp = parts[0].as_bytes();
    parts.len() == 3
        && stamp.len() == 16
        && stamp[8] == b'T'
        && stamp[15] == b'Z'
        && stamp.iter().enumerate().all(|(i, b)| matches!(i, 8 | 15) || b.is_ascii_digit())
        && parts[1..].iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}
