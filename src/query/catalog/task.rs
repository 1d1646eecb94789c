//! The tools of tasks (docs/tasks.md): each task on its own branch and linked git worktree,
//! started, listed and finished by people and agents alike.

use super::{Ask, Asks, Command, Cx, Hints, Method, Route, Spec, Typed};
use crate::error::Result;
use crate::memory::op::Author;
use crate::query::answer::Reply;
use crate::query::api::Params;
use crate::query::task::{
    self, TaskDone as Done, TaskDoneRequest, TaskList as List, TaskListRequest, TaskStartRequest, TaskStarted,
};

/// Who writes a task's memory: the session's identity (the person's name for the
/// command line), and how it came.
fn writer(cx: &Cx<'_>) -> (String, Option<Author>) {
    let author = serde_json::from_value(cx.session.author()).ok();
    (cx.session.writer(), author)
}

/// `task_start`: a branch and a linked worktree for a task, and its memory.
#[derive(Debug, Clone, Copy)]
pub struct TaskStart;

static TASK_START: Spec = Spec {
    name: "task_start",
    title: "Start a task",
    description: "Start a task on its own branch and git worktree: makes the branch NAME from the current branch (or \
from), checks it out in a new linked worktree beside the repository, and records a memory of kind task (name, branch, \
worktree, issue, start). Work on the task in that worktree; its memories stay there until task_done.",
    hints: Hints::ADD,
    cli: Some(Command::new(
        Some("task"),
        "start",
        "Make a branch and a linked git worktree for a task, and record it (task_start).",
        "\
Examples:
  tmws task start login-fix
  tmws task start 123-retry --issue '#123' --from develop",
    )),
    http: &[Route {
        method: Method::Post,
        path: "/tasks",
        asks: "",
        example: Some("POST a JSON object such as {\"name\": \"login-fix\", \"issue\": \"#123\"}"),
    }],
};

impl Typed for TaskStart {
    type Request = TaskStartRequest;
    type Answer = TaskStarted;

    fn spec(&self) -> &'static Spec {
        &TASK_START
    }

    fn run(&self, cx: &Cx<'_>, req: &TaskStartRequest) -> Result<Reply<TaskStarted>> {
        let max = req.validate(cx.engine.config())?;
        let answer = task::start(cx.engine.root(), cx.engine.config(), req, writer(cx), chrono::Utc::now())?;
        Ok(Reply { answer, format: req.format, max_chars: max })
    }
}

/// `task_list`: the open tasks with what was done on them.
#[derive(Debug, Clone, Copy)]
pub struct TaskListTool;

static TASK_LIST: Spec = Spec {
    name: "task_list",
    title: "List the tasks",
    description: "The open tasks of this repository (with all, the done ones too): each task's branch, worktree, \
issue, start, and how many sessions, memories and commits it has; a deleted worktree or a renamed branch is noted.",
    hints: Hints::READ,
    cli: Some(Command::new(
        Some("task"),
        "list",
        "The open tasks with their branch, worktree, issue, sessions, memories and commits (task_list).",
        "\
Examples:
  tmws task list
  tmws task list --all --json",
    )),
    http: &[Route::get("/tasks")],
};

impl Typed for TaskListTool {
    type Request = TaskListRequest;
    type Answer = List;

    fn spec(&self) -> &'static Spec {
        &TASK_LIST
    }

    fn run(&self, cx: &Cx<'_>, req: &TaskListRequest) -> Result<Reply<List>> {
        let max = req.validate(cx.engine.config())?;
        let answer = task::list(cx.engine.root(), cx.engine.config(), req)?;
        Ok(Reply { answer, format: req.format, max_chars: max })
    }
}

/// `task_done`: a task's outcome recorded, its branch merged and its worktree removed.
#[derive(Debug, Clone, Copy)]
pub struct TaskDoneTool;

static TASK_DONE: Spec = Spec {
    name: "task_done",
    title: "Finish a task",
    description: "Finish a task: records its outcome, the summaries of the sessions recorded on its branch and its \
commits in its task memory, and brings the memories written in its worktree into the main worktree. With merge, \
merges its branch into the branch it came from (refused, with nothing changed, on a conflict or uncommitted \
changes), then removes its worktree and its branch.",
    hints: Hints { read_only: false, destructive: true, idempotent: false, open_world: false },
    cli: Some(Command {
        asks: Some(Asks { param: "post", about: Ask::PostTaskSummary }),
        ..Command::new(
            Some("task"),
            "done",
            "Record a task's outcome; with --merge, merge its branch and remove its worktree (task_done).",
            "\
Examples:
  tmws task done login-fix --outcome 'tokens refresh before they expire'
  tmws task done login-fix --merge
  tmws task done login-fix --merge --post        asks before it posts to the issue
  tmws task done login-fix --merge --post --yes  posts without asking (scripts)",
        )
    }),
    http: &[Route {
        method: Method::Post,
        path: "/tasks/{name}/done",
        asks: "",
        example: Some("POST a JSON object such as {\"outcome\": \"…\", \"merge\": true}"),
    }],
};

impl Typed for TaskDoneTool {
    type Request = TaskDoneRequest;
    type Answer = Done;

    fn spec(&self) -> &'static Spec {
        &TASK_DONE
    }

    fn run(&self, cx: &Cx<'_>, req: &TaskDoneRequest) -> Result<Reply<Done>> {
        let max = req.validate(cx.engine.config())?;
        let answer = task::done(cx.engine.root(), cx.engine.config(), req, writer(cx), chrono::Utc::now())?;
        Ok(Reply { answer, format: req.format, max_chars: max })
    }
}
