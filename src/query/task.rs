//! Tasks (docs/tasks.md): a piece of work on its own branch and linked git worktree,
//! started and finished through tmws.
//!
//! `task start` makes the branch and the worktree (`git worktree add`, in
//! `[tasks] worktrees_dir`) and records a `kind: task` memory in the main worktree's
//! long-term log, keyed `task/NAME`; `task done` records it again under the same key with
//! its outcome, the summaries of the sessions recorded on its branch and its commits, and
//! with `merge` merges the branch into the one it came from and removes the worktree and
//! the branch. The memories written in the worktree's logs on the task's branch are
//! brought into the main worktree's logs when the task is done, so that the main worktree
//! finds them once the branch is merged (the rule of docs/memory-log.md: an entry of an
//! untracked log written on a branch merged into HEAD is visible).
//!
//! Every git operation runs in the repository's own worktrees; a merge that does not go
//! through is aborted, so a refused `task done` leaves the branches, the worktree and the
//! memories as they were.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use chrono::{DateTime, SecondsFormat, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::api::{Flag, Format, MAX_MAX_CHARS, MAX_NAME_CHARS, MemoryAddRequest, Params, Spelling, within};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::layout;
use crate::memory::op::Author;
use crate::memory::session::CommitRecord;
use crate::memory::task::{TaskRecord, TaskState};
use crate::memory::{Fold, Op, Writer};
use crate::store;
use crate::store::git::{self, Worktree};

/// The namespace task entries are written to.
const NAMESPACE: &str = "long-term";
/// The kind of a task entry.
pub const KIND: &str = "task";
/// The longest task name: it is a branch name and a folder name.
const MAX_TASK_NAME: usize = 64;
/// The most commits and session summaries a done task's record keeps.
const MAX_COMMITS: usize = 50;
const MAX_SESSIONS: usize = 20;
/// The longest outcome, in characters.
const MAX_OUTCOME_CHARS: usize = 2000;

/// Parameters of `task_start` (docs/tasks.md).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskStartRequest {
    /// The task's name, which is also its branch and its worktree's folder: 1 to 64
    /// letters, digits, `.`, `_` or `-`, starting with a letter or a digit (`login-fix`,
    /// `123-retry`).
    pub name: String,
    /// The issue the task is for, as the tracker writes it (`#123`, `PROJ-7`, a URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issue: Option<String>,
    /// The branch to start from, and to merge into when the task is done. By default the
    /// branch checked out where tmws runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// `yaml` or `json`.
    #[serde(default)]
    pub format: Format,
}

impl Params for TaskStartRequest {
    const FLAGS: &'static [Flag] = &[Flag { param: "name", spelling: Spelling::Positional { rest: false } }];

    fn validate(&self, _config: &Config) -> Result<usize> {
        task_name(&self.name)?;
        for (what, v) in [("issue", &self.issue), ("from", &self.from)] {
            if let Some(v) = v {
                within(what, v, MAX_NAME_CHARS)?;
            }
        }
        Ok(MAX_MAX_CHARS)
    }
}

/// Parameters of `task_list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskListRequest {
    /// Also the tasks that are done.
    #[serde(default)]
    pub all: bool,
    /// `yaml` or `json`.
    #[serde(default)]
    pub format: Format,
}

impl Params for TaskListRequest {}

/// Parameters of `task_done`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskDoneRequest {
    /// The task's name, as `task_start` was given it.
    pub name: String,
    /// What came of the task, in a few words (at most 2000 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// Merge the task's branch into the branch it came from (refused, with nothing
    /// changed, when it does not merge cleanly), then remove its worktree and its branch.
    #[serde(default)]
    pub merge: bool,
    /// Post the session summary to the task's issue, through the tracker the config
    /// names (`[trackers.*]`).
    #[serde(default)]
    pub post: bool,
    /// `yaml` or `json`.
    #[serde(default)]
    pub format: Format,
}

impl Params for TaskDoneRequest {
    const FLAGS: &'static [Flag] = &[Flag { param: "name", spelling: Spelling::Positional { rest: false } }];

    fn validate(&self, _config: &Config) -> Result<usize> {
        task_name(&self.name)?;
        if let Some(o) = &self.outcome {
            within("outcome", o, MAX_OUTCOME_CHARS)?;
        }
        Ok(MAX_MAX_CHARS)
    }
}

/// A task as `task_list` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct TaskView {
    pub name: String,
    /// `open` or `done`.
    #[schemars(with = "String")]
    pub state: TaskState,
    /// Its branch now: the one checked out in its worktree (which differs from the one it
    /// was made with when the branch was renamed).
    pub branch: String,
    /// The branch it came from.
    pub from: String,
    /// Its worktree.
    pub worktree: String,
    /// Whether its worktree is still there.
    pub worktree_exists: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issue: Option<String>,
    /// When it was started (RFC 3339).
    pub started: String,
    /// Sessions recorded on its branch.
    pub sessions: usize,
    /// Memories written on its branch (sessions included).
    pub memories: usize,
    /// Commits on its branch that the branch it came from does not have.
    pub commits: usize,
    /// What is out of the ordinary: a worktree deleted, a branch renamed or gone.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// `task_list`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct TaskList {
    pub tasks: Vec<TaskView>,
}

/// `task_start`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct TaskStarted {
    pub name: String,
    pub branch: String,
    pub from: String,
    /// The new worktree: work on the task there (`cd` into it, or `tmws --root` it).
    pub worktree: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issue: Option<String>,
    /// The id of the task's memory.
    pub memory: String,
}

/// `task_done`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct TaskDone {
    pub name: String,
    pub branch: String,
    /// Whether the branch was merged into the one it came from.
    pub merged: bool,
    /// Whether the worktree was removed.
    pub worktree_removed: bool,
    /// Whether the branch was deleted (after a merge).
    pub branch_deleted: bool,
    /// Memories of the task's branch brought from its worktree into the main worktree's
    /// logs.
    pub memories_kept: usize,
    /// The sessions recorded on its branch.
    pub sessions: usize,
    /// Its commits.
    pub commits: usize,
    /// The id of the task's memory as done.
    pub memory: String,
    /// With `post`: the summary posted to the task's issue, or why it could not be.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub posted: Option<Post>,
}

/// The summary of a task posted as a comment on its issue.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Post {
    /// The issue, as the task names it.
    pub issue: String,
    /// Whether the tracker took the comment.
    pub posted: bool,
    /// The comment's address, when the tracker gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// How many secrets were taken out of the summary before it was posted.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub redacted: usize,
    /// Why the tracker did not take it (the task is done all the same).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// How long posting the summary may take.
const POST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

impl super::answer::Answer for TaskStarted {}
impl super::answer::Answer for TaskDone {}

impl super::answer::Answer for TaskList {
    fn plan(&self, value: &serde_json::Value) -> super::answer::Plan {
        super::answer::Plan::list_from_end(value, "/tasks", "tasks", "raise max_chars")
    }
}

/// Checks a task name: a slug that is a safe branch name and folder name.
pub fn task_name(name: &str) -> Result<()> {
    let bad = |why: &str| {
        Err(Error::Usage(format!(
            "task name `{}`: {why}; use 1 to {MAX_TASK_NAME} letters, digits, `.`, `_` or `-`, starting with a \
letter or a digit",
            name.chars().take(80).collect::<String>().escape_debug()
        )))
    };
    if name.is_empty() {
        return bad("it is empty");
    }
    if name.chars().count() > MAX_TASK_NAME {
        return bad("it is too long");
    }
    if !name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return bad("it must start with a letter or a digit");
    }
    if let Some(c) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))) {
        return bad(&format!("`{}` is not allowed", c.escape_debug()));
    }
    // What git refuses in a branch name, of what the characters above allow.
    if name.contains("..") || name.ends_with('.') || name.ends_with(".lock") {
        return bad("git does not take `..`, a final `.` or `.lock` in a branch name");
    }
    Ok(())
}

fn stamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// The main worktree of the repository `root` is in: where tasks are recorded and made.
fn project(root: &Path) -> Result<PathBuf> {
    match git::repository(root) {
        Some(r) => Ok(r.main_worktree.unwrap_or_else(|| store::canonicalize(root).unwrap_or(root.to_path_buf()))),
        None => Err(Error::Usage(format!(
            "tasks need a git repository, and {} is not in one (git init, then commit)",
            root.display()
        ))),
    }
}

/// The folder of the tasks' worktrees, as `[tasks] worktrees_dir` names it.
fn worktrees_dir(project: &Path, config: &Config) -> PathBuf {
    let repo = project.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let dir = PathBuf::from(config.tasks.worktrees_dir.replace("{repo}", &repo));
    let dir = if dir.is_absolute() { dir } else { project.join(dir) };
    // `..` is resolved against the project as it is, so that the path shown is the
    // folder's own.
    let mut clean = PathBuf::new();
    for c in dir.components() {
        match c {
            std::path::Component::ParentDir => {
                clean.pop();
            }
            std::path::Component::CurDir => {}
            other => clean.push(other),
        }
    }
    clean
}

/// The task records of the project, latest first per name: each live `kind: task` entry of
/// the main worktree's long-term log.
fn records(project: &Path) -> Result<Vec<TaskRecord>> {
    let path = project.join(layout::memory_log(NAMESPACE));
    let Some(bytes) = store::read_opt(project, &path, store::cap::LOG)? else { return Ok(Vec::new()) };
    let fold = Fold::of(&bytes, false);
    let now = stamp(Utc::now());
    let live: BTreeSet<&String> = fold.live_at(&now).map(|(id, _)| id).collect();
    let mut found: Vec<TaskRecord> = fold
        .records(&bytes)
        .filter(|r| live.contains(&r.add.id) && r.add.kind.as_deref() == Some(KIND))
        .filter_map(|r| r.add.task)
        .collect();
    found.sort_by(|a, b| a.name.cmp(&b.name).then(b.started.cmp(&a.started)));
    found.dedup_by(|later, first| later.name == first.name);
    Ok(found)
}

/// The open task called `name`.
fn open_task(project: &Path, name: &str) -> Result<TaskRecord> {
    records(project)?
        .into_iter()
        .find(|t| t.name == name && t.state == TaskState::Open)
        .ok_or_else(|| Error::NotFound(format!("no open task `{name}` (tmws task list shows the open ones)")))
}

/// Writes a task entry in the main worktree's long-term log, superseding the task's
/// earlier entry.
fn write(
    project: &Path,
    config: &Config,
    (content, record): (String, TaskRecord),
    (agent, author): (String, Option<Author>),
    now: DateTime<Utc>,
) -> Result<String> {
    let req = MemoryAddRequest {
        summary: Some(content.lines().next().unwrap_or_default().to_owned()),
        content,
        namespace: Some(NAMESPACE.into()),
        kind: Some(KIND.into()),
        key: Some(format!("task/{}", record.name)),
        source: Some(KIND.into()),
        tags: vec![KIND.into()],
        agent: Some(agent),
        ..MemoryAddRequest::default()
    };
    Ok(super::memory::add_entry(project, config, &req, (author, None, Some(record)), now)?.id)
}

/// `task_start`: the branch, the worktree and the task's memory.
pub(crate) fn start(
    root: &Path,
    config: &Config,
    req: &TaskStartRequest,
    writer: (String, Option<Author>),
    now: DateTime<Utc>,
) -> Result<TaskStarted> {
    task_name(&req.name)?;
    let project = project(root)?;
    if let Some(open) = records(&project)?.into_iter().find(|t| t.name == req.name && t.state == TaskState::Open) {
        return Err(Error::Conflict(format!("task `{}` is open already, in {}", req.name, open.worktree)));
    }
    let branches = git::branches(&project).unwrap_or_default();
    let from = match &req.from {
        Some(f) => f.trim().to_owned(),
        None => git::git_head(root)
            .and_then(|h| h.branch)
            .ok_or_else(|| Error::Usage("HEAD is detached here: name the branch to start from with --from".into()))?,
    };
    if !branches.contains(&from) {
        return Err(Error::NotFound(format!("no branch `{from}` to start the task from")));
    }
    if branches.contains(&req.name) {
        return Err(Error::Conflict(format!(
            "a branch `{}` exists already: choose another task name, or delete the branch",
            req.name
        )));
    }
    let dir = worktrees_dir(&project, config);
    // The config is the repository's, and a repository is untrusted: its tasks' worktrees
    // go beside it or inside it, never anywhere else on the machine.
    let beside = project.parent().unwrap_or(&project);
    if !dir.starts_with(beside) {
        return Err(Error::Usage(format!(
            "tasks.worktrees_dir names {}, outside {}: a task's worktree goes beside the repository or inside it",
            dir.display(),
            beside.display()
        )));
    }
    let worktree = dir.join(&req.name);
    if store::exists(&worktree) {
        return Err(Error::Conflict(format!(
            "{} exists already: move it away or choose another name",
            worktree.display()
        )));
    }
    let path = worktree.to_string_lossy().into_owned();
    git::run(&project, &["worktree", "add", "--quiet", "-b", &req.name, &path, &from])?;
    let worktree = store::canonicalize(&worktree).unwrap_or(worktree);
    // A project whose `.tmws/` git does not track would leave the worktree without one,
    // and tmws run there would find no root: the folder makes it one.
    let tmws_dir = worktree.join(layout::TMWS_DIR);
    if !store::is_dir_in(&worktree, &tmws_dir) {
        store::create_dir_all(&tmws_dir)?;
    }
    // Without --issue, a branch named after its issue (`123-login`, `PROJ-7-x`) names it.
    let issue = req
        .issue
        .as_deref()
        .map(str::trim)
        .filter(|i| !i.is_empty())
        .map(|i| crate::redact::redact(i).text)
        .or_else(|| crate::parse::issue_ref::from_branch(&req.name).map(|r| r.to_string()));
    let record = TaskRecord {
        name: req.name.clone(),
        state: TaskState::Open,
        branch: req.name.clone(),
        from: from.clone(),
        worktree: worktree.display().to_string(),
        issue: issue.clone(),
        started: stamp(now),
        ended: None,
        outcome: None,
        merged: None,
        sessions: Vec::new(),
        commits: Vec::new(),
    };
    let for_issue = issue.as_deref().map(|i| format!(" for issue {i}")).unwrap_or_default();
    let content = format!(
        "Task {} started{for_issue}: branch {} from {from}, worktree {}.",
        record.name, record.branch, record.worktree
    );
    let memory = write(&project, config, (content, record.clone()), writer, now)?;
    Ok(TaskStarted { name: record.name, branch: record.branch, from, worktree: record.worktree, issue, memory })
}

/// Where a task's worktree and branch stand now.
struct Found {
    /// Its worktree as git lists it, when git still knows it and it is there.
    worktree: Option<Worktree>,
    /// Its branch now.
    branch: String,
    branch_exists: bool,
    notes: Vec<String>,
}

fn same_path(a: &Path, b: &Path) -> bool {
    a == b || store::canonicalize(a).ok().zip(store::canonicalize(b).ok()).is_some_and(|(a, b)| a == b)
}

fn find(project: &Path, task: &TaskRecord) -> Found {
    let listed = git::worktrees(project).unwrap_or_default();
    let path = Path::new(&task.worktree);
    let worktree =
        listed.into_iter().find(|w| same_path(&w.path, path)).filter(|w| !w.prunable && store::exists(&w.path));
    let mut notes = Vec::new();
    if worktree.is_none() {
        notes.push(format!("worktree {} is gone", task.worktree));
    }
    let branch = match worktree.as_ref().and_then(|w| w.branch.clone()) {
        Some(b) if b != task.branch => {
            notes.push(format!("branch renamed from {} to {b}", task.branch));
            b
        }
        _ => task.branch.clone(),
    };
    let branch_exists = git::branches(project).unwrap_or_default().contains(&branch);
    if !branch_exists {
        notes.push(format!("branch {branch} is gone"));
    }
    Found { worktree, branch, branch_exists, notes }
}

/// The live entries written on `branch` in every log of `root`, except task entries.
fn branch_memories(root: &Path, config: &Config, branch: &str) -> Vec<(String, Op)> {
    let now = stamp(Utc::now());
    let mut out = Vec::new();
    for ns in super::memory::namespaces(root, config).unwrap_or_default() {
        let path = root.join(layout::memory_log(&ns));
        let Ok(Some(bytes)) = store::read_opt(root, &path, store::cap::LOG) else { continue };
        let fold = Fold::of(&bytes, false);
        let live: BTreeSet<&String> = fold.live_at(&now).map(|(id, _)| id).collect();
        for r in fold.records(&bytes) {
            let on_branch = r.add.git.as_ref().and_then(|g| g.branch.as_deref()) == Some(branch);
            if on_branch && live.contains(&r.add.id) && r.add.kind.as_deref() != Some(KIND) {
                out.push((ns.clone(), r.add));
            }
        }
    }
    out
}

/// The memories of a task's branch, from its worktree and the main worktree, once each.
fn task_memories(project: &Path, config: &Config, found: &Found) -> Vec<(String, Op)> {
    let mut seen = BTreeSet::new();
    let mut all = Vec::new();
    let roots = found.worktree.iter().map(|w| w.path.clone()).chain([project.to_path_buf()]);
    for root in roots {
        for (ns, op) in branch_memories(&root, config, &found.branch) {
            if seen.insert(op.id.clone()) {
                all.push((ns, op));
            }
        }
    }
    all
}

fn commit_count(project: &Path, task: &TaskRecord, found: &Found) -> usize {
    if !found.branch_exists {
        return 0;
    }
    git::rev_list(project, &format!("{}..{}", task.from, found.branch)).map_or(0, |c| c.len())
}

/// `task_list`: the open tasks (all with `all`), with what was done on them.
pub(crate) fn list(root: &Path, config: &Config, req: &TaskListRequest) -> Result<TaskList> {
    let project = project(root)?;
    let tasks = records(&project)?
        .into_iter()
        .filter(|t| req.all || t.state == TaskState::Open)
        .map(|t| {
            let found = find(&project, &t);
            let (memories, sessions, commits) = if t.state == TaskState::Open {
                let memories = task_memories(&project, config, &found);
                let sessions = memories.iter().filter(|(_, op)| op.kind.as_deref() == Some("session")).count();
                (memories.len(), sessions, commit_count(&project, &t, &found))
            } else {
                (0, t.sessions.len(), t.commits.len())
            };
            let notes = if t.state == TaskState::Open { found.notes } else { Vec::new() };
            TaskView {
                name: t.name,
                state: t.state,
                branch: found.branch,
                from: t.from,
                worktree: t.worktree,
                worktree_exists: found.worktree.is_some(),
                issue: t.issue,
                started: t.started,
                sessions,
                memories,
                commits,
                notes,
            }
        })
        .collect();
    Ok(TaskList { tasks })
}

/// The paths a worktree has changed that are not tmws' own files.
fn uncommitted(worktree: &Path) -> Result<Vec<String>> {
    let out = git::run(worktree, &["status", "--porcelain=v1", "-z", "--untracked-files=all"])?;
    let mut paths = Vec::new();
    let mut fields = out.split('\0');
    while let Some(f) = fields.next() {
        if f.len() < 4 {
            continue;
        }
        let (status, path) = f.split_at(3);
        // A rename names its source in the next field.
        if status.starts_with('R') || status.starts_with('C') {
            fields.next();
        }
        if !path.starts_with(&format!("{}/", layout::TMWS_DIR)) {
            paths.push(path.to_owned());
        }
    }
    Ok(paths)
}

/// Whether the tracked files changed in the worktree at `at` are memory logs and nothing
/// else (and there is at least one).
fn only_logs_changed(at: &Path) -> Result<bool> {
    let out = git::run(at, &["status", "--porcelain=v1", "-z", "--untracked-files=no"])?;
    let changed: Vec<&str> = out.split('\0').filter(|f| !f.is_empty()).collect();
    Ok(!changed.is_empty()
        && changed.iter().all(|f| {
            f.get(..3).is_some_and(|status| status.trim() == "M")
                && f.get(3..).is_some_and(|p| layout::memory_namespace(p).is_some())
        }))
}

/// Merges `branch` into `into`, checked out in `at`; a merge that stops is aborted and
/// refused, leaving everything as it was.
fn merge(at: &Path, branch: &str, into: &str, name: &str) -> Result<()> {
    let message = format!("Merge task {name}");
    let mut args = vec!["merge", "--no-ff", "--no-edit", "-m", &message];
    // A tracked memory log that tmws appended to (this task's own entry, a note) is the
    // only change there: git would refuse to merge a branch that changed it too. Its lines
    // are put aside and back around the merge, which the logs' union merge
    // (`.gitattributes`) takes without a conflict; other changes are left for git to judge.
    if only_logs_changed(at)? {
        args.push("--autostash");
    }
    args.push(branch);
    let Err(said) = git::try_run(at, &args)? else {
        return Ok(());
    };
    let conflicts: Vec<&str> = said
        .lines()
        .filter_map(|l| l.strip_prefix("CONFLICT").and_then(|c| c.rsplit(" in ").next()))
        .map(str::trim)
        .collect();
    // A merge that started and stopped on conflicts is taken back, so that nothing
    // changes; one git refused before it began changed nothing.
    if git::run(at, &["rev-parse", "-q", "--verify", "MERGE_HEAD"]).is_ok() {
        git::run(at, &["merge", "--abort"])?;
    }
    let why = if conflicts.is_empty() {
        // git's reason, with the files it names (indented lines under it).
        let mut lines = said.lines().filter(|l| !l.trim().is_empty());
        let first = lines.next().map_or("git refused", str::trim).trim_end_matches(':');
        let files: Vec<&str> = lines.take_while(|l| l.starts_with('\t')).map(str::trim).take(5).collect();
        if files.is_empty() { first.to_owned() } else { format!("{first}: {}", files.join(", ")) }
    } else {
        format!("conflicts in {}", conflicts.join(", "))
    };
    Err(Error::Conflict(format!(
        "task `{name}`: {branch} does not merge cleanly into {into} ({why}); nothing was changed: merge it by hand, \
or run task done without --merge"
    )))
}

/// Brings the task's memories of its worktree's logs into the main worktree's logs (those
/// it holds already stay as they are); returns how many were added.
fn keep(project: &Path, config: &Config, worktree: &Path, branch: &str) -> Result<usize> {
    let mut kept = 0;
    let mut by_ns: std::collections::BTreeMap<String, Vec<Op>> = std::collections::BTreeMap::new();
    for (ns, op) in branch_memories(worktree, config, branch) {
        by_ns.entry(ns).or_default().push(op);
    }
    for (ns, ops) in by_ns {
        let mut writer = Writer::open(project, &ns)?;
        let missing: Vec<Op> = ops.into_iter().filter(|op| !writer.fold.live.contains_key(&op.id)).collect();
        if !missing.is_empty() {
            kept += missing.len();
            writer.append(&missing, config.memory.fsync)?;
        }
    }
    Ok(kept)
}

/// What `task done NAME --post` asks a person at a terminal before anything is done.
pub(crate) fn post_question(root: &Path, config: &Config, name: &str) -> Result<String> {
    task_name(name)?;
    let task = open_task(&project(root)?, name)?;
    let Some(issue) = task.issue else {
        return Err(Error::Usage(format!(
            "task `{name}` names no issue to post to: start a task with --issue REF, or run task done without --post"
        )));
    };
    let target = crate::tracker::post_target(config, &issue)?;
    Ok(format!(
        "task done will post the summary of task `{name}` (its outcome, sessions and commits, redacted) as a comment \
on {target}. Post it?"
    ))
}

/// `task_done`: the outcome recorded, and with `merge` the branch merged, the worktree
/// and the branch removed.
pub(crate) fn done(
    root: &Path,
    config: &Config,
    req: &TaskDoneRequest,
    writer: (String, Option<Author>),
    now: DateTime<Utc>,
) -> Result<TaskDone> {
    task_name(&req.name)?;
    let project = project(root)?;
    let task = open_task(&project, &req.name)?;
    // Where the summary goes is checked before anything changes: a task without an issue,
    // or an issue no configured tracker takes, fails here with nothing done.
    let post_to = if req.post {
        let Some(issue) = task.issue.clone() else {
            return Err(Error::Usage(format!(
                "task `{}` names no issue to post to: start a task with --issue REF (or a branch named after its \
issue, such as 123-login), or run task done without --post",
                task.name
            )));
        };
        crate::tracker::check_post(config, &issue)?;
        Some(issue)
    } else {
        None
    };
    let found = find(&project, &task);
    // The worktree the branch was merged in, where it is then deleted (git deletes a
    // branch merged into the HEAD it runs at).
    let mut merged_at: Option<PathBuf> = None;
    if req.merge {
        if !found.branch_exists {
            return Err(Error::NotFound(format!(
                "task `{}`: its branch {} is gone, so there is nothing to merge; run task done without --merge",
                task.name, found.branch
            )));
        }
        if let Some(w) = &found.worktree {
            let changed = uncommitted(&w.path)?;
            if !changed.is_empty() {
                let shown: Vec<&str> = changed.iter().take(5).map(String::as_str).collect();
                return Err(Error::Conflict(format!(
                    "task `{}`: its worktree {} has changes not committed ({}{}): commit or discard them, then run \
task done again",
                    task.name,
                    w.path.display(),
                    shown.join(", "),
                    if changed.len() > 5 { ", …" } else { "" }
                )));
            }
        }
        let worktrees = git::worktrees(&project)?;
        let Some(base) = worktrees.iter().find(|w| w.branch.as_deref() == Some(task.from.as_str())) else {
            return Err(Error::Conflict(format!(
                "task `{}`: the branch it came from, {}, is not checked out in any worktree: check it out, then run \
task done again",
                task.name, task.from
            )));
        };
        merge(&base.path, &found.branch, &task.from, &task.name)?;
        merged_at = Some(base.path.clone());
    }
    let merged = merged_at.is_some();
    // The record is made before anything is removed: the sessions and commits are read
    // from the branch and the worktree.
    let memories = task_memories(&project, config, &found);
    let mut sessions: Vec<String> = memories
        .iter()
        .filter(|(_, op)| op.kind.as_deref() == Some("session"))
        .filter_map(|(_, op)| op.summary.clone())
        .collect();
    sessions.truncate(MAX_SESSIONS);
    let range = format!("{}..{}", task.from, found.branch);
    let commits: Vec<CommitRecord> = if found.branch_exists && !merged {
        git::commits(&project, &range).unwrap_or_default()
    } else if merged {
        // Once merged, the branch's own commits are those the merge brought.
        git::commits(&project, &format!("{}^1..{}", task.from, found.branch)).unwrap_or_default()
    } else {
        Vec::new()
    }
    .into_iter()
    .take(MAX_COMMITS)
    .map(|c| CommitRecord {
        commit: c.sha.chars().take(12).collect(),
        subject: crate::redact::redact(&c.subject).text,
        files: c.files.iter().take(20).cloned().collect(),
        more_files: (c.files.len() > 20).then(|| c.files.len() - 20),
    })
    .collect();
    let memories_kept = match &found.worktree {
        Some(w) => keep(&project, config, &w.path, &found.branch)?,
        None => 0,
    };
    let outcome = req.outcome.as_deref().map(str::trim).filter(|o| !o.is_empty()).map(str::to_owned);
    let record = TaskRecord {
        state: TaskState::Done,
        branch: found.branch.clone(),
        ended: Some(stamp(now)),
        outcome: outcome.clone(),
        merged: Some(merged),
        sessions: sessions.clone(),
        commits: commits.clone(),
        ..task.clone()
    };
    let mut content = format!(
        "Task {} done{}: branch {} ({} commits, {} sessions){}.",
        task.name,
        task.issue.as_deref().map(|i| format!(" (issue {i})")).unwrap_or_default(),
        found.branch,
        commits.len(),
        sessions.len(),
        if merged { format!(", merged into {}", task.from) } else { String::new() }
    );
    if let Some(o) = &outcome {
        content.push_str(&format!("\nOutcome: {o}"));
    }
    for s in &sessions {
        content.push_str(&format!("\nSession: {s}"));
    }
    for c in &commits {
        content.push_str(&format!("\nCommit {}: {}", c.commit, c.subject));
    }
    let memory = write(&project, config, (content.clone(), record), writer, now)?;
    let (mut worktree_removed, mut branch_deleted) = (false, false);
    if let Some(at) = &merged_at {
        match &found.worktree {
            Some(w) => {
                // Checked above: what is left there is tmws' own, and its memories are kept.
                git::run(&project, &["worktree", "remove", "--force", &w.path.to_string_lossy()])?;
                worktree_removed = true;
            }
            None => {
                git::run(&project, &["worktree", "prune"])?;
            }
        }
        git::run(at, &["branch", "-d", &found.branch])?;
        branch_deleted = true;
    }
    // Posted last: the task is done whatever the tracker answers, and a failure is said in
    // the answer, not lost in an error that would hide what was done.
    let posted = post_to.map(|issue| match crate::tracker::post_comment(config, &issue, &content, POST_TIMEOUT) {
        Ok(p) => Post { issue, posted: true, url: p.url, redacted: p.redacted, error: None },
        Err(e) => Post { issue, posted: false, url: None, redacted: 0, error: Some(e.to_string()) },
    });
    Ok(TaskDone {
        name: task.name,
        branch: found.branch,
        merged,
        worktree_removed,
        branch_deleted,
        memories_kept,
        sessions: sessions.len(),
        commits: commits.len(),
        memory,
        posted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_name_is_a_slug_git_takes_as_a_branch() {
        for ok in ["login-fix", "123-retry", "PROJ-7_b", "a", "v1.2"] {
            assert!(task_name(ok).is_ok(), "{ok}");
        }
        let err = |n: &str| task_name(n).unwrap_err().to_string();
        assert_eq!(
            err("../x"),
            "task name `../x`: it must start with a letter or a digit; use 1 to 64 letters, digits, `.`, `_` or `-`, \
starting with a letter or a digit"
        );
        assert!(err("a/b").contains("`/` is not allowed"));
        assert!(err("a..b").contains("`..`"));
        assert!(err("x.lock").contains("`.lock`"));
        assert!(err("").contains("it is empty"));
        assert!(err(&"a".repeat(65)).contains("too long"));
        assert!(err("a b").contains("` ` is not allowed"));
        assert!(err("a\nb").contains("`\\n` is not allowed"));
    }

    #[test]
    fn the_worktrees_dir_is_beside_the_repository_by_default() {
        let config = Config::default();
        assert_eq!(worktrees_dir(Path::new("/src/app"), &config), PathBuf::from("/src/app-worktrees"));
        let mut config = Config::default();
        config.tasks.worktrees_dir = "/tmp/wt/{repo}".into();
        assert_eq!(worktrees_dir(Path::new("/src/app"), &config), PathBuf::from("/tmp/wt/app"));
    }
}
