//! Guards of the house: the binary's command files stay thin, and the paths the README and
//! docs/ cite exist.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The most lines a command file of the binary (`src/*_cmd.rs`) may have.
const COMMAND_FILE_LINES: usize = 250;

#[test]
fn command_files_stay_thin() {
    let mut long = Vec::new();
    let mut seen = 0;
    for entry in std::fs::read_dir(root().join("src")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if name.ends_with("_cmd.rs") {
            seen += 1;
            let lines = std::fs::read_to_string(&path).unwrap().lines().count();
            if lines > COMMAND_FILE_LINES {
                long.push(format!("src/{name}: {lines} lines"));
            }
        }
    }
    assert!(seen >= 10, "only {seen} command files found in src/");
    assert!(
        long.is_empty(),
        "command files over {COMMAND_FILE_LINES} lines (move the work into a crate): {long:?}"
    );
}

/// The paths in backticks of `text` under the workspace's own folders, placeholders (`NAME`,
/// `TARGET`) left out.
fn cited_paths(text: &str) -> Vec<String> {
    const FOLDERS: [&str; 7] = [
        "crates/",
        "tests/",
        "benches/",
        "scripts/",
        "examples/",
        "fixtures/",
        "docs/",
    ];
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| FOLDERS.iter().any(|f| s.starts_with(f)))
        .filter(|s| !s.contains(char::is_whitespace))
        .filter(|s| {
            !s.split('/').any(|part| {
                let stem = part.split('.').next().unwrap_or("");
                stem.len() > 1 && stem.chars().all(|c| c.is_ascii_uppercase())
            })
        })
        // A path with a line or an anchor: the file.
        .map(|s| s.split([':', '#']).next().unwrap_or(s).to_string())
        .collect()
}

#[test]
fn documented_paths_exist() {
    let mut docs: Vec<PathBuf> = vec![root().join("README.md")];
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            docs.push(path);
        }
    }
    let mut missing = Vec::new();
    let mut checked = 0;
    for doc in &docs {
        let text = std::fs::read_to_string(doc).unwrap();
        for path in cited_paths(&text) {
            checked += 1;
            if !Path::new(&root().join(&path)).exists() {
                let name = doc
                    .strip_prefix(root())
                    .unwrap_or(doc)
                    .display()
                    .to_string();
                missing.push(format!("{name}: {path}"));
            }
        }
    }
    assert!(checked >= 50, "only {checked} cited paths found");
    assert!(
        missing.is_empty(),
        "documented paths that do not exist: {missing:?}"
    );
}

#[test]
fn the_path_check_sees_a_missing_file_and_skips_placeholders() {
    let text = "see `crates/harness/src/staged.rs` and `crates/cluster/src/methods/NAME.rs`, \
                `tests/house.rs:12`, `cargo test`";
    assert_eq!(
        cited_paths(text),
        ["crates/harness/src/staged.rs", "tests/house.rs"]
    );
    assert!(!root().join("crates/harness/src/staged.rs").exists());
}
