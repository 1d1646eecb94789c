//! The binary in a real pseudo-terminal: what a person's screen shows.
//!
//! `tmux` runs a command in a terminal of a known size and gives back the screen, colours
//! included (`capture-pane -e`); `script` gives back every byte the terminal received, so a
//! progress line that was drawn and then cleared can be seen in the stream though it is no
//! longer on the screen. Nothing here waits for a time to pass: a test waits for the screen
//! to show what it expects (or gives up after a generous deadline and shows what it saw).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::cli::strip_ansi;
use super::util::{TestRoot, eventually, repo};

const BIN: &str = env!("CARGO_BIN_EXE_tmws");

/// `text` quoted for a POSIX shell.
fn sh_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// What a pane prints once its command is done: everything before it has been read.
const END: &str = "@@tmws-test-end@@";

/// A tmux server of its own (its own socket, no user config) with one window of 200 × 50.
struct Tmux {
    dir: tempfile::TempDir,
}

impl Tmux {
    /// Starts `command` (a shell command line) in `cwd`; None when tmux is not installed.
    fn start(cwd: &Path, command: &str) -> Option<Tmux> {
        if !Path::new("/usr/bin/tmux").exists() {
            super::util::missing("tmux is not installed (/usr/bin/tmux)");
            return None;
        }
        let tmux = Tmux { dir: tempfile::tempdir().unwrap() };
        let conf = tmux.dir.path().join("tmux.conf");
        // The pane stays once its command exits, so that its last screen can be read.
        std::fs::write(&conf, "set -g remain-on-exit on\nset -g status off\n").unwrap();
        // The command waits until the pane is set up: output written while tmux still sets
        // the terminal up can be lost. After the end mark the pane's shell stays (until the
        // server is killed): on a loaded machine, tmux marked a pane whose command had just
        // exited dead before it had read the last of its output, and lost that.
        let socket = sh_quote(&tmux.socket().to_string_lossy());
        let full = format!(
            "/usr/bin/tmux -S {socket} wait-for go; cd {} && {{ {command}; }}; printf '\\n%s\\n' {END}; \
             exec /usr/bin/tmux -S {socket} wait-for never",
            sh_quote(&cwd.to_string_lossy())
        );
        let ok = tmux
            .cmd()
            .args(["-f", &conf.to_string_lossy(), "new-session", "-d", "-x", "200", "-y", "50", &full])
            .status()
            .unwrap()
            .success();
        assert!(ok, "tmux new-session failed");
        assert!(tmux.cmd().args(["wait-for", "-S", "go"]).status().unwrap().success());
        Some(tmux)
    }

    fn socket(&self) -> PathBuf {
        self.dir.path().join("socket")
    }

    fn cmd(&self) -> Command {
        let mut cmd = Command::new("/usr/bin/tmux");
        cmd.arg("-S").arg(self.socket()).stdin(Stdio::null());
        cmd
    }

    /// The screen and what scrolled off it: one string per line (wrapped lines joined), SGR
    /// escapes kept, trailing blank lines dropped.
    fn screen(&self) -> Vec<String> {
        let out = self.cmd().args(["capture-pane", "-p", "-e", "-J", "-S", "-"]).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
        while lines.last().is_some_and(|l| strip_ansi(l).trim().is_empty()) {
            lines.pop();
        }
        lines
    }

    /// Waits until the screen holds a line for which `done` holds.
    fn wait_for(&self, what: &str, done: impl Fn(&str) -> bool) -> Vec<String> {
        eventually(&format!("the screen showing {what}"), || {
            let screen = self.screen();
            if screen.iter().any(|l| done(&strip_ansi(l))) { Ok(screen) } else { Err(screen.join("\n")) }
        })
    }

    /// Waits until the command is done and returns its last screen.
    fn finished(&self) -> Vec<String> {
        let mut screen = self.wait_for("the end of the command", |l| l == END);
        let end = screen.iter().position(|l| strip_ansi(l) == END).unwrap_or(screen.len());
        screen.truncate(end);
        while screen.last().is_some_and(|l| strip_ansi(l).trim().is_empty()) {
            screen.pop();
        }
        screen
    }

    fn keys(&self, keys: &[&str]) {
        let ok = self.cmd().args(["send-keys"]).args(keys).status().unwrap().success();
        assert!(ok);
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").stderr(Stdio::null()).status();
    }
}

/// Every byte a terminal received while `command` ran in it (`script`), and the exit code.
fn typescript(cwd: &Path, command: &str) -> Option<(i32, String)> {
    if !Path::new("/usr/bin/script").exists() {
        super::util::missing("script (util-linux) is not installed (/usr/bin/script)");
        return None;
    }
    let out = Command::new("/usr/bin/script")
        .args(["-q", "-e", "-c", &format!("stty cols 200 rows 50; {command}"), "/dev/null"])
        .current_dir(cwd)
        .env_remove("NO_COLOR")
        .env_remove("TMWS_LOG")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    Some((out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned()))
}

#[test]
fn index_on_a_terminal_names_its_phases_and_leaves_only_its_answer() {
    let root = TestRoot::sample();
    let Some((code, stream)) = typescript(root.path(), &format!("TMWS_PROGRESS_DELAY_MS=0 {BIN} index")) else {
        return;
    };
    assert_eq!(code, 0, "{stream}");
    // The progress line was drawn, phase by phase, and cleared before the answer.
    assert!(stream.contains(" scan (") || stream.contains(" parse ["), "no phase drawn: {stream:?}");
    let last_clear = stream.rfind("\r\x1b[2K").unwrap_or_else(|| panic!("never cleared: {stream:?}"));
    let after = &stream[last_clear + "\r\x1b[2K".len()..];
    assert!(after.starts_with("indexed 39 new, 0 changed, 0 removed in "), "{after:?}");
    assert!(!after.contains("commit (") && !after.contains("scan ("), "{after:?}");

    // On the screen, only the answer is left.
    let root = TestRoot::sample();
    let Some(tmux) = Tmux::start(root.path(), &format!("env -u NO_COLOR TMWS_PROGRESS_DELAY_MS=0 {BIN} index")) else {
        return;
    };
    let screen = tmux.finished();
    assert_eq!(screen.len(), 1, "{screen:?}");
    let line = strip_ansi(&screen[0]);
    assert!(line.starts_with("indexed 39 new, 0 changed, 0 removed in ") && line.ends_with(" ms"), "{line}");
}

#[test]
fn piped_stdout_gets_only_data_while_the_terminal_gets_the_progress() {
    let root = TestRoot::sample();
    let Some((code, stream)) = typescript(
        root.path(),
        &format!("TMWS_PROGRESS_DELAY_MS=0 {BIN} index > index.txt; {BIN} search pool > search.txt"),
    ) else {
        return;
    };
    assert_eq!(code, 0, "{stream}");
    // Which phases are drawn depends on how fast each goes (a loaded machine skips one):
    // some phase is.
    assert!(
        [" scan (", " parse [", " write (", " commit ("].iter().any(|p| stream.contains(p)),
        "stderr is the terminal: the progress is drawn there: {stream:?}"
    );
    let index = root.read("index.txt");
    assert!(index.starts_with("indexed 39 new, 0 changed, 0 removed in ") && index.ends_with(" ms\n"), "{index:?}");
    let search = root.read("search.txt");
    assert!(search.starts_with("query: pool\nresults:\n  - refId: "), "piped: YAML, the data agents get: {search}");
    assert!(!index.contains('\x1b') && !search.contains('\x1b'), "no escape reaches a file");
}

#[test]
fn check_on_a_terminal_is_coloured_unless_no_color_or_never() {
    let invalid = repo().join("testdata/invalid");
    let screen_of = |env: &str, flags: &str| {
        let tmux = Tmux::start(&invalid, &format!("{env} {BIN} check {flags}; true"))?;
        Some(tmux.finished())
    };
    let Some(screen) = screen_of("env -u NO_COLOR", "") else { return };
    assert!(screen.len() > 10, "{screen:?}");
    let first = &screen[0];
    assert!(first.contains('\x1b'), "colours on a terminal: {screen:?}");
    assert!(strip_ansi(first).contains(": error["), "{first}");
    let summary = strip_ansi(screen.last().unwrap());
    assert!(summary.ends_with("files checked"), "{summary}");
    let uncoloured: Vec<String> = screen.iter().map(|l| strip_ansi(l)).collect();
    for (env, flags) in [("NO_COLOR=1", ""), ("env -u NO_COLOR TERM=dumb", ""), ("env -u NO_COLOR", "--color never")] {
        let plain = screen_of(env, flags).unwrap();
        assert!(plain.iter().all(|l| !l.contains('\x1b')), "{env} {flags}: {plain:?}");
        assert_eq!(plain, uncoloured, "{env} {flags}: the same text, uncoloured");
    }
}

#[test]
fn search_on_a_terminal_is_a_table_of_aligned_columns() {
    let root = TestRoot::sample();
    let Some(tmux) = Tmux::start(root.path(), &format!("env -u NO_COLOR {BIN} search pool connection")) else {
        return;
    };
    let screen = tmux.finished();
    assert!(screen.len() >= 2, "{screen:?}");
    assert!(screen.iter().any(|l| l.contains('\x1b')), "coloured: {screen:?}");
    // Score, kind, scope and refId are columns: each starts at the same place on every row.
    let rows: Vec<String> = screen.iter().map(|l| strip_ansi(l)).collect();
    // A column starts after two spaces that follow some text; the score is right-aligned
    // on its `%`.
    let starts = |row: &str| -> Vec<usize> {
        let chars: Vec<char> = row.chars().collect();
        let first_text = chars.iter().position(|c| *c != ' ').unwrap_or(0);
        let percent = chars.iter().position(|c| *c == '%').unwrap_or(usize::MAX);
        let mut out = vec![percent];
        out.extend(
            (first_text + 2..chars.len()).filter(|&i| chars[i] != ' ' && chars[i - 1] == ' ' && chars[i - 2] == ' '),
        );
        out
    };
    let first = starts(&rows[0]);
    assert!(first.len() >= 5, "{rows:?}");
    for row in &rows {
        assert!(row.contains('%'), "one result a line: {row}");
        assert_eq!(starts(row)[..5], first[..5], "columns line up:\n{}", rows.join("\n"));
    }
}

#[test]
fn watch_on_a_terminal_prints_a_coloured_line_per_change_and_stops_on_ctrl_c() {
    let root = TestRoot::new().file(
        "resources/workspaces/w/_lessons/260101-a.md",
        "---\nname: a\ndescription: d\ncreated: 2026-01-01\n---\n",
    );
    let Some(tmux) = Tmux::start(root.path(), &format!("env -u NO_COLOR {BIN} watch")) else { return };
    tmux.wait_for("the first sync", |l| l.starts_with("synced: 1 new, 0 changed, 0 removed in "));
    root.write(
        "resources/workspaces/w/_lessons/260102-b.md",
        "---\nname: b\ndescription: d\ncreated: 2026-01-02\n---\n",
    );
    let screen = tmux.wait_for("the new file", |l| l == "new      resources/workspaces/w/_lessons/260102-b.md");
    let line = screen.iter().find(|l| strip_ansi(l).starts_with("new ")).unwrap();
    assert!(line.contains('\x1b'), "the change is coloured: {line:?}");
    tmux.keys(&["C-c"]);
    let screen = tmux.finished();
    let text: Vec<String> = screen.iter().map(|l| strip_ansi(l)).collect();
    assert!(text[0].starts_with("watching "), "{text:?}");
}
