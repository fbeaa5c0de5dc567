//! Guards of the house: the binary's command files stay thin, no product file holds more than
//! 600 lines nor a function more than 120, no public function returns a `String` for its error,
//! no library spells a flag of ours, the paths the README and docs/ cite exist, and a test that
//! cannot run says so as a skip.

mod common;

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

/// The Rust files under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The most lines of product code (what comes before its `#[cfg(test)]` module) a library or
/// binary source file may have: past it a file holds several jobs.
const PRODUCT_FILE_LINES: usize = 600;

/// The lines of `code` before its first `#[cfg(test)]` item (all of them when it has none).
fn product_lines(code: &str) -> usize {
    code.lines()
        .take_while(|line| line.trim() != "#[cfg(test)]")
        .count()
}

/// The product source files of `src/` and `crates/`: tests, benches, examples and fuzz
/// targets are not product code.
fn product_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    rust_files(&root().join("crates"), &mut files);
    files.retain(|f| {
        let s = f.to_string_lossy();
        !s.contains("/tests/")
            && !s.contains("/benches/")
            && !s.contains("/examples/")
            && !s.ends_with("/tests.rs")
            && !s.contains("/fuzz/")
    });
    assert!(files.len() > 100, "only {} source files found", files.len());
    files
}

#[test]
fn no_product_file_holds_more_than_one_job() {
    let files = product_files();
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let n = product_lines(&std::fs::read_to_string(f).unwrap());
            let name = f.strip_prefix(root()).unwrap().display().to_string();
            (n > PRODUCT_FILE_LINES).then(|| format!("{name}: {n} lines"))
        })
        .collect();
    assert!(
        long.is_empty(),
        "product files over {PRODUCT_FILE_LINES} lines (split them by job): {long:?}"
    );
}

/// The most lines a product function may have, from its `fn` line to its closing brace: past it
/// a function does several jobs.
const PRODUCT_FUNCTION_LINES: usize = 120;

/// The functions of `code` before its tests longer than [`PRODUCT_FUNCTION_LINES`], as (name,
/// lines): each from a line starting `fn`, `pub fn` or `pub(..) fn` (after its indentation) to
/// the next line that is its indentation and `}` (a body written as rustfmt writes it).
fn long_functions(code: &str) -> Vec<(String, usize)> {
    let lines: Vec<&str> = code
        .lines()
        .take_while(|line| line.trim() != "#[cfg(test)]")
        .collect();
    let mut long = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        let body = line.trim_start();
        let indent = &line[..line.len() - body.len()];
        let rest = ["pub fn ", "fn ", "const fn ", "pub const fn "]
            .iter()
            .find_map(|p| body.strip_prefix(p))
            .or_else(|| {
                let after = body.strip_prefix("pub(")?;
                after.split_once(") fn ").map(|(_, r)| r)
            });
        let Some(rest) = rest else { continue };
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let close = format!("{indent}}}");
        let Some(end) = lines[at..].iter().position(|l| *l == close) else {
            continue;
        };
        // A body on the line that opens it (`fn a() {}`) is one line.
        let opening = lines[at..at + end].iter().find(|l| l.contains('{'));
        let one_line = opening.is_some_and(|l| l.trim_end().ends_with('}'));
        let bodiless = lines[at..at + end]
            .iter()
            .take_while(|l| !l.contains('{'))
            .any(|l| l.trim_end().ends_with(';'));
        if !one_line && !bodiless && end + 1 > PRODUCT_FUNCTION_LINES {
            long.push((name, end + 1));
        }
    }
    long
}

#[test]
fn no_product_function_does_several_jobs() {
    let files = product_files();
    let mut long = Vec::new();
    for f in &files {
        let name = f.strip_prefix(root()).unwrap().display().to_string();
        for (function, n) in long_functions(&std::fs::read_to_string(f).unwrap()) {
            long.push(format!("{name}: {function} {n} lines"));
        }
    }
    assert!(
        long.is_empty(),
        "product functions over {PRODUCT_FUNCTION_LINES} lines (split them by job): {long:?}"
    );
}

#[test]
fn the_long_function_check_sees_one_and_skips_tests_and_declarations() {
    let body = "    let x = 1;\n".repeat(PRODUCT_FUNCTION_LINES);
    let code = format!(
        "pub(crate) fn long(a: u8) -> u8 {{\n{body}}}\n\nfn short() {{\n    1\n}}\n\
         trait T {{\n    fn declared(&self);\n    fn one() {{}}\n{body}    }}\n}}\n#[cfg(test)]\nmod tests {{\n    \
         fn t() {{\n{body}    }}\n}}\n"
    );
    assert_eq!(
        long_functions(&code),
        [("long".to_string(), PRODUCT_FUNCTION_LINES + 2)]
    );
    let fits = format!(
        "fn fits() {{\n{}}}\n",
        "    x;\n".repeat(PRODUCT_FUNCTION_LINES - 2)
    );
    assert!(long_functions(&fits).is_empty());
}

#[test]
fn the_long_file_check_counts_product_lines_only() {
    let code = "fn a() {}\nfn b() {}\n\n#[cfg(test)]\nmod tests {\n    fn t() {}\n}\n";
    assert_eq!(product_lines(code), 3);
    assert_eq!(product_lines("fn a() {}\nfn b() {}\n"), 2);
}

/// The public functions of `code` (before its tests) whose signature returns an error as a
/// `String`: each signature from `pub fn` to its body or `;`.
fn string_errors(code: &str) -> Vec<String> {
    let code = code.split("#[cfg(test)]").next().unwrap_or("");
    let mut found = Vec::new();
    for (at, _) in code.match_indices("pub fn ") {
        let tail = &code[at..];
        let end = tail.find(['{', ';']).unwrap_or(tail.len());
        let signature: String = tail[..end].split_whitespace().collect::<Vec<_>>().join(" ");
        if signature.contains("Result<") && signature.contains(", String>") {
            found.push(signature);
        }
    }
    found
}

#[test]
fn no_public_function_returns_a_string_for_its_error() {
    let mut files = Vec::new();
    rust_files(&root().join("crates"), &mut files);
    rust_files(&root().join("src"), &mut files);
    assert!(files.len() > 50, "only {} Rust files found", files.len());
    let found: Vec<String> = files
        .iter()
        .filter(|f| !f.components().any(|c| c.as_os_str() == "tests"))
        .flat_map(|f| {
            let code = std::fs::read_to_string(f).unwrap();
            let name = f.strip_prefix(root()).unwrap().display().to_string();
            string_errors(&code)
                .into_iter()
                .map(move |s| format!("{name}: {s}"))
        })
        .collect();
    assert!(
        found.is_empty(),
        "public functions with String errors (give them a typed error): {found:#?}"
    );
}

#[test]
fn the_string_error_check_sees_one() {
    let code = "pub fn a(x: u8)\n    -> Result<(), String> {\n}\npub(crate) fn b() -> \
                Result<(), String> {}\npub fn c() -> Result<(), E> {}\n";
    assert_eq!(
        string_errors(code),
        ["pub fn a(x: u8) -> Result<(), String>"]
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
    let text = "see `crates/measure/harness/src/staged.rs` and `crates/analyse/cluster/src/methods/NAME.rs`, \
                `tests/house.rs:12`, `cargo test`";
    assert_eq!(
        cited_paths(text),
        ["crates/measure/harness/src/staged.rs", "tests/house.rs"]
    );
    assert!(!root().join("crates/measure/harness/src/staged.rs").exists());
}

/// The lines of the test files under `dirs` that print a skip themselves (a line that is an
/// `eprintln!` of a text saying "skip"), not through `common::skip`, which `scripts/test` lists.
fn own_skips(dirs: &[PathBuf]) -> Vec<String> {
    let mut files = Vec::new();
    for dir in dirs {
        rust_files(dir, &mut files);
    }
    let mut found = Vec::new();
    for f in files.iter().filter(|f| !f.ends_with("common/mod.rs")) {
        let code = std::fs::read_to_string(f).unwrap();
        let lines: Vec<&str> = code.lines().collect();
        for (k, line) in lines.iter().enumerate() {
            // The call up to its end, over the lines it takes (three at most).
            let call = lines[k..(k + 3).min(lines.len())].join(" ").to_lowercase();
            let call = call.split(");").next().unwrap_or("");
            if line.trim().starts_with("eprintln!") && call.contains("skip") {
                found.push(format!("{}:{}: {}", f.display(), k + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn a_test_that_cannot_run_says_so_as_a_skip() {
    let mut dirs = vec![root().join("tests")];
    for stage in std::fs::read_dir(root().join("crates")).unwrap().flatten() {
        for entry in std::fs::read_dir(stage.path()).unwrap().flatten() {
            dirs.push(entry.path().join("tests"));
        }
    }
    assert!(dirs.len() >= 20, "only {} test folders", dirs.len());
    let found = own_skips(&dirs);
    assert!(
        found.is_empty(),
        "tests that print their own skip and pass (call common::skip, which scripts/test \
         lists): {found:#?}"
    );
    // The skip is recorded where scripts/test reads it.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("skips");
    common::skip_to(Some(&file), "a test", "no such device");
    common::skip_to(Some(&file), "another", "one CPU");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "SKIPPED a test: no such device\nSKIPPED another: one CPU\n"
    );
    // And the check sees a test that prints its own.
    let planted = dir.path().join("tests");
    std::fs::create_dir(&planted).unwrap();
    std::fs::write(
        planted.join("t.rs"),
        "fn t() {\n    if x {\n        eprintln!(\"skipped: no MPI\");\n        return;\n    }\n    \
         if y {\n        eprintln!(\n            \"Skipping: one CPU\"\n        );\n    }\n    \
         eprintln!(\"took {s} s\");\n    let skip = 1;\n}\n",
    )
    .unwrap();
    assert_eq!(own_skips(&[planted]).len(), 2);
}

/// The subcommands `help` lists after its "Commands:" line (each line two spaces in, then the
/// name), `help` itself left out.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| l.trim() != "Commands:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l[2..].starts_with(' '))
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .filter(|name| name != "help")
        .collect()
}

/// The long flags a help text's option lines define (`  -o, --output <DIR>` gives `--output`).
fn defined_flags(help: &str) -> Vec<String> {
    help.lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with('-'))
        .flat_map(|l| l.split([' ', ',', '=', '[', '<']))
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(String::from)
        .collect()
}

/// The long flags of every command and subcommand of the binary, from their help.
fn our_flags() -> std::collections::BTreeSet<String> {
    let help = |words: &[String]| -> String {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_lgate-plogp"))
            .args(words)
            .arg("--help")
            .output()
            .unwrap();
        assert!(out.status.success(), "{words:?} --help failed");
        String::from_utf8(out.stdout).unwrap()
    };
    let mut flags = std::collections::BTreeSet::new();
    let mut todo: Vec<Vec<String>> = vec![vec![]];
    while let Some(words) = todo.pop() {
        let text = help(&words);
        flags.extend(defined_flags(&text));
        for sub in subcommands(&text) {
            let mut next = words.clone();
            next.push(sub);
            todo.push(next);
        }
    }
    flags
}

/// The string literals of `code` before its tests, each as the compiler reads it across a
/// backslash line end (comments, character literals and lifetimes skipped).
fn string_literals(code: &str) -> Vec<String> {
    let code = code.split("#[cfg(test)]").next().unwrap_or("").as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let text = |from: usize, to: usize| {
        let raw = String::from_utf8_lossy(&code[from..to]).to_string();
        let mut joined = String::new();
        let mut parts = raw.split("\\\n");
        joined.push_str(parts.next().unwrap_or(""));
        for part in parts {
            joined.push_str(part.trim_start());
        }
        joined
    };
    let (mut found, mut i) = (Vec::new(), 0);
    while i < code.len() {
        let rest = &code[i..];
        let after_ident = i > 0 && ident(code[i - 1]) && code[i - 1] != b'b';
        if rest.starts_with(b"//") {
            i += rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len());
        } else if rest.starts_with(b"/*") {
            i += rest
                .windows(2)
                .position(|w| w == b"*/")
                .map_or(rest.len(), |p| p + 2);
        } else if rest[0] == b'\'' {
            // '\'' or '\n', 'x', or a lifetime 'a.
            i += match (rest.get(1), rest.get(2)) {
                (Some(b'\\'), _) => 3 + rest[3..].iter().position(|&c| c == b'\'').unwrap_or(0) + 1,
                (_, Some(b'\'')) => 3,
                _ => 1,
            };
        } else if rest[0] == b'r' && !after_ident && matches!(rest.get(1), Some(b'"' | b'#')) {
            let hashes = rest[1..].iter().take_while(|&&c| c == b'#').count();
            if rest.get(1 + hashes) != Some(&b'"') {
                i += 1;
                continue;
            }
            let close: Vec<u8> = std::iter::once(b'"').chain(vec![b'#'; hashes]).collect();
            let from = i + 2 + hashes;
            let len = code[from..].windows(close.len()).position(|w| w == close);
            let to = from + len.unwrap_or(code.len() - from);
            found.push(String::from_utf8_lossy(&code[from..to]).to_string());
            i = to + close.len();
        } else if rest[0] == b'"' {
            let mut j = i + 1;
            while j < code.len() && code[j] != b'"' {
                j += if code[j] == b'\\' { 2 } else { 1 };
            }
            found.push(text(i + 1, j.min(code.len())));
            i = j + 1;
        } else {
            i += 1;
        }
    }
    found
}

/// The flags of `flags` that a string literal of `code` names (a `--word` at the start of the
/// literal or after a space, a bracket, a quote or a backtick).
fn named_flags(code: &str, flags: &std::collections::BTreeSet<String>) -> Vec<String> {
    let mut named = Vec::new();
    for literal in string_literals(code) {
        for (at, _) in literal.match_indices("--") {
            let before = literal[..at].chars().last();
            if before.is_some_and(|c| !matches!(c, ' ' | '(' | '[' | '`' | '\'' | '"')) {
                continue;
            }
            let word: String = literal[at..]
                .chars()
                .take_while(|c| *c == '-' || c.is_ascii_lowercase())
                .collect();
            if flags.contains(&word) {
                named.push(word);
            }
        }
    }
    named
}

/// The libraries never spell a flag of the binary: a message that advises one formats a
/// `lgate_knobs::Knob`, which the binary names (ripgrep's way: the flags live in `src/`).
#[test]
fn no_library_names_a_flag_of_ours() {
    let flags = our_flags();
    for known in [
        "--reps",
        "--algo",
        "--resamples",
        "--truth",
        "--machine",
        "--pairs-between",
    ] {
        assert!(flags.contains(known), "{known} not among {flags:?}");
    }
    let found: Vec<String> = product_files()
        .iter()
        .filter(|f| f.starts_with(root().join("crates")))
        .flat_map(|f| {
            let code = std::fs::read_to_string(f).unwrap();
            let name = f.strip_prefix(root()).unwrap().display().to_string();
            (named_flags(&code, &flags).into_iter()).map(move |flag| format!("{name}: {flag}"))
        })
        .collect();
    assert!(
        found.is_empty(),
        "flags of ours spelled in library code (name an lgate_knobs::Knob): {found:#?}"
    );
}

#[test]
fn the_flag_check_sees_one_across_lines_and_skips_comments_and_tests() {
    let flags = ["--reps", "--sweeps", "--algo", "--force"]
        .map(String::from)
        .into();
    let code = "// measure with --force\nlet c = '\"'; let d = '\\''; fn f<'a>() {}\n\
                let m = \"more repetitions (measure \\\n    --reps) or\";\n\
                let r = r#\"a \"raw\" --sweeps\"#;\nlet n = \"x--algo, --server-side\";\n\
                /* \"--force\" */\n#[cfg(test)]\nmod tests { \"--algo\" }\n";
    assert_eq!(named_flags(code, &flags), ["--reps", "--sweeps"]);
}
