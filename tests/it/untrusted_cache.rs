//! A cache a repository brought, and files swapped or linked under a writer: nothing
//! outside the root is removed, written or read, and the cache is set aside and rebuilt.
//! Real git clones, real symlinks and hard links, the real binary.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use serde_json::Value;

use super::memory_git::git;
use super::util::{Output, TestRoot, tmws};

/// This version's index folder, as a repository would commit it.
fn segments() -> String {
    format!("{}/segments", tmws::INDEX_HOME)
}

fn json(out: &Output) -> Value {
    assert_eq!(out.code, 0, "{out:?}");
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

/// Every file (and link) below `dir`, root-relative.
fn listing(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(read) = std::fs::read_dir(&d) else { continue };
        for e in read.flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                stack.push(p.clone());
            }
            out.push(p.strip_prefix(dir).unwrap().to_string_lossy().into_owned());
        }
    }
    out.sort();
    out
}

/// A hostile repository: a root with one document and whatever `cache` puts below
/// `.tmws/cache/` (forced into git), committed, then cloned into `work/clone` of a
/// scratch folder whose `outside/` holds files the attack aims at. Returns the scratch
/// folder and the clone.
fn hostile_clone(cache: impl Fn(&Path)) -> (tempfile::TempDir, PathBuf) {
    let scratch = tempfile::Builder::new().prefix("tmws-hostile-").tempdir().unwrap();
    let s = scratch.path();
    std::fs::create_dir_all(s.join("outside")).unwrap();
    std::fs::write(s.join("outside/victim"), "the user's file\n").unwrap();
    let origin = s.join("origin");
    let doc = origin.join("resources/workspaces/acme/OVERVIEW.md");
    std::fs::create_dir_all(doc.parent().unwrap()).unwrap();
    std::fs::write(&doc, "---\nname: Acme\ndescription: the numbat project\n---\n# Acme\n").unwrap();
    std::fs::create_dir_all(origin.join(".tmws")).unwrap();
    std::fs::write(origin.join(".gitignore"), ".tmws/cache/\n").unwrap();
    cache(&origin);
    git(&origin, &["init", "-q"]);
    git(&origin, &["add", "."]);
    git(&origin, &["add", "-f", ".tmws/cache"]);
    git(&origin, &["commit", "-q", "-m", "hostile"]);
    std::fs::create_dir_all(s.join("work")).unwrap();
    git(&s.join("work"), &["clone", "-q", origin.to_str().unwrap(), "clone"]);
    let clone = s.join("work/clone");
    (scratch, clone)
}

/// The set-aside caches of a root.
fn set_aside(root: &Path) -> Vec<String> {
    let dir = root.join(".tmws/cache/set-aside");
    let mut names: Vec<String> = match std::fs::read_dir(dir) {
        Ok(r) => r.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect(),
        Err(_) => Vec::new(),
    };
    names.sort();
    names
}

fn cache_findings(root: &Path) -> Vec<(String, String)> {
    let out = tmws(root, &["check", "--format", "json"]);
    let v: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    v.as_array()
        .unwrap()
        .iter()
        .filter(|d| d["rule"] == "cache")
        .map(|d| (d["path"].as_str().unwrap().to_owned(), d["message"].as_str().unwrap().to_owned()))
        .collect()
}

#[test]
fn a_committed_index_file_list_never_deletes_a_file_outside_the_root() {
    // From the clone's segments folder (work/clone/.tmws/cache/index/vN/segments), seven
    // folders up is the scratch folder.
    let (scratch, clone) = hostile_clone(|origin| {
        std::fs::create_dir_all(origin.join(segments())).unwrap();
        let list = r#"["../../../../../../../outside/victim","../../../../../../../outside/nothing"]"#;
        std::fs::write(origin.join(segments()).join(".managed.json"), list).unwrap();
    });
    let victim = scratch.path().join("outside/victim");

    let found = json(&tmws(&clone, &["--json", "search", "numbat"]));
    assert_eq!(found["results"][0]["refId"], "resources/workspaces/acme/OVERVIEW.md", "{found}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "the user's file\n", "the victim is still there");
    // The hostile cache was filed away whole, and the new index is this machine's own.
    let aside = set_aside(&clone);
    assert_eq!(aside.len(), 1, "{aside:?}");
    let filed = clone
        .join(".tmws/cache/set-aside")
        .join(&aside[0])
        .join(segments().replacen(".tmws/cache/", "", 1))
        .join(".managed.json");
    assert!(filed.is_file(), "{}", filed.display());
    let list = std::fs::read_to_string(clone.join(segments()).join(".managed.json")).unwrap();
    assert!(!list.contains(".."), "{list}");

    // More searches, merges and a rebuild keep it so; the cache is not set aside again.
    for args in [&["--json", "search", "acme"][..], &["index", "--rebuild"], &["--json", "search", "numbat"]] {
        let out = tmws(&clone, args);
        assert_eq!(out.code, 0, "{out:?}");
    }
    assert_eq!(set_aside(&clone).len(), 1);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "the user's file\n");
    assert_eq!(listing(&scratch.path().join("outside")), ["victim"]);

    // `check` names the tracked file and how to stop tracking the cache.
    let findings = cache_findings(&clone);
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0].0, format!("{}/.managed.json", segments()));
    assert!(findings[0].1.starts_with("git tracks this file of the cache"), "{}", findings[0].1);
}

#[test]
fn a_committed_symlink_in_the_cache_gets_no_index_written_or_read_outside() {
    // An index built elsewhere, outside the root, that the link would serve answers from.
    let elsewhere = TestRoot::new().file(
        "resources/workspaces/evil/OVERVIEW.md",
        "---\nname: Planted\ndescription: numbat answers from outside\n---\n",
    );
    assert_eq!(elsewhere.run(&["index"]).code, 0);
    let built = elsewhere.path().join(segments());
    let (scratch, clone) = hostile_clone(|origin| {
        std::fs::create_dir_all(origin.join(tmws::INDEX_HOME)).unwrap();
        // From the clone's index folder, six folders up is the scratch folder.
        symlink("../../../../../../outside/index", origin.join(segments())).unwrap();
    });
    let outside = scratch.path().join("outside");
    let copy = outside.join("index");
    std::fs::create_dir_all(&copy).unwrap();
    for e in std::fs::read_dir(&built).unwrap().flatten() {
        std::fs::copy(e.path(), copy.join(e.file_name())).unwrap();
    }
    let before = listing(&outside);

    let found = json(&tmws(&clone, &["--json", "search", "numbat"]));
    let refs: Vec<&str> = found["results"].as_array().unwrap().iter().map(|r| r["refId"].as_str().unwrap()).collect();
    assert_eq!(refs, ["resources/workspaces/acme/OVERVIEW.md"], "answered from the root's files only: {found}");
    assert_eq!(listing(&outside), before, "nothing was written outside");
    assert!(!std::fs::symlink_metadata(clone.join(segments())).unwrap().file_type().is_symlink());
    assert_eq!(set_aside(&clone).len(), 1);
    let findings = cache_findings(&clone);
    assert!(findings.iter().any(|(p, _)| *p == segments()), "{findings:?}");
}

#[test]
fn a_cache_symlinked_out_of_the_root_is_set_aside_without_touching_its_target() {
    let target = tempfile::tempdir().unwrap();
    std::fs::write(target.path().join("token"), "planted-token-planted-token-planted-token").unwrap();
    let root =
        TestRoot::new().file("resources/workspaces/acme/OVERVIEW.md", "---\nname: Acme\ndescription: numbat\n---\n");
    symlink(target.path(), root.path().join(".tmws/cache")).unwrap();
    let found = json(&root.run(&["--json", "search", "numbat"]));
    assert_eq!(found["results"][0]["refId"], "resources/workspaces/acme/OVERVIEW.md");
    assert_eq!(listing(target.path()), ["token"], "nothing written in the link's target");
    let meta = std::fs::symlink_metadata(root.path().join(".tmws/cache")).unwrap();
    assert!(meta.is_dir() && !meta.file_type().is_symlink());
    // The link itself was filed away, still a link.
    let aside = set_aside(root.path());
    assert_eq!(aside.len(), 1);
    let filed = root.path().join(".tmws/cache/set-aside").join(&aside[0]);
    assert!(std::fs::symlink_metadata(filed).unwrap().file_type().is_symlink());
}

#[test]
fn committed_lock_symlinks_and_a_committed_token_are_not_used() {
    let (scratch, clone) = hostile_clone(|origin| {
        std::fs::create_dir_all(origin.join(".tmws/cache/locks")).unwrap();
        symlink("/dev/null", origin.join(".tmws/cache/locks/memory-short-term.lock")).unwrap();
        std::fs::write(origin.join(".tmws/cache/token"), "known-token-known-token-known-token-0000").unwrap();
    });
    let add = tmws(&clone, &["--json", "memory", "add", "the numbat deploys on friday"]);
    assert_eq!(add.code, 0, "{add:?}");
    assert!(!clone.join(".tmws/cache/token").exists(), "the committed token was filed away");
    assert_eq!(set_aside(&clone).len(), 1);
    drop(scratch);
}

#[test]
fn a_hard_linked_log_is_never_appended_to() {
    let outside = tempfile::tempdir().unwrap();
    let inode = outside.path().join("theirs.jsonl");
    std::fs::write(&inode, "").unwrap();
    let root = TestRoot::new();
    std::fs::create_dir_all(root.path().join(".tmws/memory")).unwrap();
    std::fs::hard_link(&inode, root.path().join(".tmws/memory/short-term.jsonl")).unwrap();
    let add = root.run(&["memory", "add", "a note for the hard link"]);
    assert_eq!(add.code, 2, "{add:?}");
    assert!(add.stderr.contains("a hard-linked file"), "{}", add.stderr);
    assert_eq!(std::fs::read_to_string(&inode).unwrap(), "", "the other name's file is unchanged");
}

/// Swaps two paths at once (`renameat2` with `RENAME_EXCHANGE`): neither is ever missing.
fn exchange(a: &Path, b: &Path) {
    use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
    renameat2(AT_FDCWD, a, AT_FDCWD, b, RenameFlags::RENAME_EXCHANGE).expect("renameat2");
}

#[test]
fn swapping_the_memory_folder_for_a_link_while_adding_writes_nothing_outside() {
    // The race runs for a number of adds, not for a time. How many get through depends on
    // how fast each add is against the swaps (one in thirty on a quiet machine, hardly any
    // on a busy one); that one does once the swaps stop is checked after.
    const ADDS: usize = 300;
    const AT_MOST: usize = 20_000;
    let outside = tempfile::tempdir().unwrap();
    let root = TestRoot::new();
    let memory = root.path().join(".tmws/memory");
    let link = root.path().join(".tmws/memory-link");
    std::fs::create_dir_all(&memory).unwrap();
    symlink(outside.path(), &link).unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicUsize::new(0));
    let swapper = {
        let (stop, swaps, memory, link) = (stop.clone(), swaps.clone(), memory.clone(), link.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                exchange(&memory, &link);
                std::thread::yield_now();
                exchange(&memory, &link);
                swaps.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let (mut acknowledged, mut refused) = (Vec::new(), 0usize);
    let mut i = 0;
    // The race was met: some adds were refused, and the folder was swapped many times.
    while i < ADDS || refused == 0 || swaps.load(Ordering::Relaxed) <= 1000 {
        assert!(i < AT_MOST, "{i} adds: {} got through, {refused} refused", acknowledged.len());
        i += 1;
        let content = format!("race note number {i}");
        let out = root.run(&["--json", "memory", "add", &content]);
        match out.code {
            0 => acknowledged.push(json(&out)["id"].as_str().unwrap().to_owned()),
            2 => refused += 1,
            _ => panic!("{out:?}"),
        }
        assert_eq!(listing(outside.path()), Vec::<String>::new(), "a write landed outside after add {i}");
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    assert_eq!(listing(outside.path()), Vec::<String>::new());
    // The folder is back in its place (each swap is undone at once): an add gets through.
    let out = root.run(&["--json", "memory", "add", "a note after the race"]);
    acknowledged.push(json(&out)["id"].as_str().unwrap().to_owned());
    // Every acknowledged add is in the real log.
    let log = std::fs::read_to_string(memory.join("short-term.jsonl")).unwrap();
    for id in &acknowledged {
        assert!(log.contains(&format!("\"id\":\"{id}\"")), "{id} is not in the log");
    }
}

#[test]
fn check_reports_a_hard_linked_log_and_document() {
    let outside = tempfile::tempdir().unwrap();
    let root = TestRoot::new()
        .file("resources/workspaces/acme/OVERVIEW.md", "---\nname: Acme\ndescription: the numbat project\n---\n");
    std::fs::write(outside.path().join("theirs.jsonl"), "").unwrap();
    std::fs::create_dir_all(root.path().join(".tmws/memory")).unwrap();
    std::fs::hard_link(outside.path().join("theirs.jsonl"), root.path().join(".tmws/memory/short-term.jsonl")).unwrap();
    std::fs::hard_link(root.path().join("resources/workspaces/acme/OVERVIEW.md"), outside.path().join("copy.md"))
        .unwrap();
    let out = root.run(&["check", "--format", "json"]);
    assert_eq!(out.code, 0, "warnings: {out:?}");
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    let links: Vec<(&str, &str)> = v
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["rule"] == "hard-link")
        .map(|d| (d["path"].as_str().unwrap(), d["severity"].as_str().unwrap()))
        .collect();
    assert_eq!(
        links,
        [(".tmws/memory/short-term.jsonl", "warning"), ("resources/workspaces/acme/OVERVIEW.md", "warning")]
    );
}
