//! Issue references end to end, with real git: the commits whose messages name an issue,
//! the memories written on its branch and the sessions that worked on it are found by
//! `tmws search "#123"` and narrowed to by `--issue`.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use super::util::TestRoot;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=Dev", "-c", "user.email=dev@example.com", "-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn commit(root: &TestRoot, file: &str, message: &str) -> String {
    root.write(file, message);
    git(root.path(), &["add", "-A"]);
    git(root.path(), &["commit", "-q", "-m", message]);
    git(root.path(), &["rev-parse", "HEAD"])
}

fn search(root: &TestRoot, args: &[&str]) -> Value {
    let mut all = vec!["search"];
    all.extend_from_slice(args);
    all.push("--json");
    let out = root.run(&all);
    assert_eq!(out.code, 0, "{out:?}");
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"))
}

fn ref_ids(answer: &Value) -> Vec<String> {
    let mut ids: Vec<String> =
        answer["results"].as_array().unwrap().iter().map(|r| r["refId"].as_str().unwrap().to_owned()).collect();
    ids.sort();
    ids
}

#[test]
fn what_was_done_for_an_issue_is_one_search() {
    let root = TestRoot::new();
    git(root.path(), &["init", "-q", "-b", "main"]);
    let start = commit(&root, "README.md", "Start the project");
    git(root.path(), &["checkout", "-q", "-b", "feature/123-login"]);
    let fix = commit(&root, "src/login.rs", "Fix the login redirect\n\nFixes #123");
    let refactor = commit(&root, "src/session.rs", "Refactor the session store (PROJ-9)");
    let _plain = commit(&root, "notes.md", "Bump to v1.2-3, see the C# notes and UTF-8 names");
    let upstream = commit(&root, "vendor.md", "Take the upstream login fix, see acme/web#123");
    let out = root.run(&["memory", "add", "The login redirect loses the next parameter"]);
    assert_eq!(out.code, 0, "{out:?}");
    let out = root.run(&["session", "record", "--since", &start, "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let session: Value = serde_json::from_str(&out.stdout).unwrap();
    let session_id = session["id"].as_str().unwrap_or_else(|| panic!("{session}")).to_owned();

    // The commits naming it (also as another repository's #123), the memory written on
    // its branch, and the session that worked on it.
    let found = search(&root, &["#123"]);
    let ids = ref_ids(&found);
    let memory = ids.iter().find(|id| id.starts_with("m_") && **id != session_id).cloned();
    assert!(memory.is_some(), "{found}");
    let mut want = vec![format!("commit:{fix}"), format!("commit:{upstream}"), session_id.clone(), memory.unwrap()];
    want.sort();
    assert_eq!(ids, want, "{found}");
    for r in found["results"].as_array().unwrap() {
        assert!(r["issues"].as_array().unwrap().iter().any(|i| i == "#123"), "{r}");
    }

    // A Jira key, and another repository's reference alone: the commit that names it and
    // the session whose commits did.
    let with_session = |commit: &str| {
        let mut ids = vec![format!("commit:{commit}"), session_id.clone()];
        ids.sort();
        ids
    };
    let key = search(&root, &["PROJ-9"]);
    assert_eq!(ref_ids(&key), with_session(&refactor), "{key}");
    let other = search(&root, &["acme/web#123"]);
    assert_eq!(ref_ids(&other), with_session(&upstream), "{other}");

    // Words within one issue's items.
    let within = ref_ids(&search(&root, &["redirect", "--issue", "123"]));
    assert!(within.contains(&format!("commit:{fix}")), "{within:?}");
    assert!(!within.contains(&format!("commit:{refactor}")), "{within:?}");
    let none = ref_ids(&search(&root, &["session store", "--issue", "#123"]));
    assert!(!none.contains(&format!("commit:{refactor}")), "{none:?}");

    // A reference no item names is searched as words: nothing here.
    assert_eq!(ref_ids(&search(&root, &["#999"])), Vec::<String>::new());

    // What is not a reference is said so.
    let bad = root.run(&["search", "login", "--issue", "C#"]);
    assert_eq!(bad.code, 2, "{bad:?}");
    assert!(bad.stderr.contains("`C#` is not an issue reference"), "{bad:?}");
}
