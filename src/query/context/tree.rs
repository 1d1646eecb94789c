//! The folder tree of a scope (`folder_structure` of `workspace_get_context`, docs/tools.md):
//! folders only, read level by level, only as deep as fits in its share of the answer.

use std::path::Path;

use crate::error::{Chain, Result};
use crate::layout;
use crate::model::Scope;
use crate::store;

/// The scope's folders as a tree, without files or hidden folders, within `budget` chars.
pub(crate) fn folder_tree(root: &Path, scope: &Scope, budget: usize) -> Result<String> {
    let rel = layout::scope_dir(scope);
    let tree = Tree::read(root, &root.join(&rel), budget)?;
    Ok(tree.render(format!("{rel}/\n")))
}

/// A directory-only tree read level by level, no deeper than fits in its budget: every
/// folder down to the deepest level that fits whole, and a last line saying what was left
/// out. Reading stops as soon as a level overflows, so a huge scope costs a few hundred
/// folder reads, not one per folder.
#[derive(Debug)]
struct Tree {
    /// (parent index, name) in breadth-first order; node 0 is the scope's folder.
    nodes: Vec<(usize, String)>,
    left_out: LeftOut,
}

#[derive(Debug, PartialEq, Eq)]
enum LeftOut {
    Nothing,
    /// Folders deeper than this many levels.
    Deeper(usize),
    /// Not even the first level fits: this many of its folders are not shown.
    More(usize),
}

impl Tree {
    const MAX_DEPTH: usize = 16;

    /// The tree of `dir`, below `root`. A folder that cannot be read (no permission, a
    /// symlink out of the root) shows without children; the rest of the tree goes on.
    fn read(root: &Path, dir: &Path, budget: usize) -> Result<Tree> {
        let subdirs = |p: &Path| -> Result<Vec<String>> {
            let names = store::list_subdirs(root, p).unwrap_or_else(|e| {
                tracing::debug!("{}", Chain(&e));
                Vec::new()
            });
            Ok(names.into_iter().filter(|n| !n.starts_with('.')).collect())
        };
        let mut nodes: Vec<(usize, String)> = vec![(0, String::new())];
        let mut paths = vec![dir.to_path_buf()];
        let mut level: Vec<usize> = vec![0];
        let mut chars = 0usize;
        for depth in 1..=Tree::MAX_DEPTH {
            let level_start = nodes.len();
            let mut next = Vec::new();
            for &parent in &level {
                let names = subdirs(&paths[parent])?;
                for (i, name) in names.iter().enumerate() {
                    // Four columns per depth (`│   `, `├── `), the name, `/` and the newline.
                    chars += 4 * depth + name.chars().count() + 2;
                    if chars > budget {
                        if depth == 1 {
                            nodes.truncate(level_start + i);
                            return Ok(Tree { nodes, left_out: LeftOut::More(names.len() - i) });
                        }
                        nodes.truncate(level_start);
                        return Ok(Tree { nodes, left_out: LeftOut::Deeper(depth - 1) });
                    }
                    paths.push(paths[parent].join(name));
                    nodes.push((parent, name.clone()));
                    next.push(nodes.len() - 1);
                }
            }
            if next.is_empty() {
                break;
            }
            level = next;
        }
        Ok(Tree { nodes, left_out: LeftOut::Nothing })
    }

    fn render(&self, mut out: String) -> String {
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); self.nodes.len()];
        for (i, (parent, _)) in self.nodes.iter().enumerate().skip(1) {
            children[*parent].push(i);
        }
        let mut stack: Vec<(usize, String)> = Vec::new();
        // Depth-first from the root, children in name order.
        let push_kids = |stack: &mut Vec<(usize, String)>, at: usize, prefix: &str| {
            for &k in children[at].iter().rev() {
                stack.push((k, prefix.to_owned()));
            }
        };
        push_kids(&mut stack, 0, "");
        while let Some((k, prefix)) = stack.pop() {
            let parent = self.nodes[k].0;
            let last = children[parent].last() == Some(&k);
            out.push_str(&prefix);
            out.push_str(if last { "└── " } else { "├── " });
            out.push_str(&self.nodes[k].1);
            out.push_str("/\n");
            push_kids(&mut stack, k, &format!("{prefix}{}", if last { "    " } else { "│   " }));
        }
        match self.left_out {
            LeftOut::Nothing => {}
            LeftOut::Deeper(levels) => out.push_str(&format!(
                "… folders deeper than {levels} level{} left out (ask for a narrower scope)\n",
                if levels == 1 { "" } else { "s" }
            )),
            LeftOut::More(n) => out.push_str(&format!(
                "… {n} more folder{} left out (ask for a narrower scope)\n",
                if n == 1 { "" } else { "s" }
            )),
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree_of(dirs: &[&str], budget: usize) -> String {
        let tmp = tempfile::tempdir().unwrap();
        for d in dirs {
            std::fs::create_dir_all(tmp.path().join(d)).unwrap();
        }
        std::fs::write(tmp.path().join("a/OVERVIEW.md"), "files are not shown").unwrap();
        Tree::read(tmp.path(), tmp.path(), budget).unwrap().render("w/\n".into())
    }

    #[test]
    fn the_folder_tree_shows_the_levels_that_fit_and_says_what_it_left_out() {
        let dirs = ["a/_plans", "a/x/_lessons", "b", ".hidden"];
        let whole = "w/\n├── a/\n│   ├── _plans/\n│   └── x/\n│       └── _lessons/\n└── b/\n";
        assert_eq!(tree_of(&dirs, 1000), whole);
        // Exactly the size of all lines: still whole.
        assert_eq!(tree_of(&dirs, 7 + 7 + 16 + 11 + 22), whole);
        assert_eq!(
            tree_of(&dirs, 7 + 7 + 16 + 11 + 21),
            "w/\n├── a/\n│   ├── _plans/\n│   └── x/\n└── b/\n… folders deeper than 2 levels left out (ask for a narrower scope)\n"
        );
        assert_eq!(
            tree_of(&dirs, 20),
            "w/\n├── a/\n└── b/\n… folders deeper than 1 level left out (ask for a narrower scope)\n"
        );
        assert_eq!(tree_of(&dirs, 7), "w/\n└── a/\n… 1 more folder left out (ask for a narrower scope)\n");
    }
}
