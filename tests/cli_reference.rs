//! `docs/CLI.md`, the command reference, is the binary's own `--help` for every command and
//! subcommand: this test renders it and fails when the file differs, so the docs cannot drift
//! from clap. After a deliberate change to a flag or its help, regenerate it with
//! `LGATE_UPDATE_DOCS=1 cargo test --release --test cli_reference`.

use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The help of `lgate-plogp ARGS --help`, as a user with a 100-column terminal reads it.
fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_lgate-plogp"))
        .args(args)
        .arg("--help")
        .env("COLUMNS", "100")
        .stdin(Stdio::null())
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "{args:?} --help: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("help is UTF-8")
}

/// The subcommands a help text lists under `Commands:` (`help` aside).
fn subcommands(help: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut inside = false;
    for line in help.lines() {
        if line == "Commands:" {
            inside = true;
            continue;
        }
        if inside {
            if line.is_empty() || !line.starts_with(' ') {
                break;
            }
            // A name starts two spaces in; deeper lines continue a description.
            if let Some(rest) = line.strip_prefix("  ") {
                if !rest.starts_with(' ') {
                    let name = rest.split_whitespace().next().unwrap_or_default();
                    if name != "help" {
                        names.push(name.to_string());
                    }
                }
            }
        }
    }
    names
}

/// The whole reference: every command, depth first, as clap prints its help.
fn reference() -> String {
    let mut text = String::from(
        "# Command reference\n\n\
         Every command and option of `lgate-plogp`, as `lgate-plogp COMMAND --help` prints it. This \
         file is\ngenerated from the binary by `tests/cli_reference.rs`, which fails when the two \
         differ; regenerate it\nwith `LGATE_UPDATE_DOCS=1 cargo test --release --test \
         cli_reference`. The [guide](GUIDE.md) says what\neach command is for.\n",
    );
    let mut stack: Vec<Vec<String>> = vec![vec![]];
    let mut seen = 0;
    while let Some(path) = stack.pop() {
        let args: Vec<&str> = path.iter().map(String::as_str).collect();
        let body = help(&args);
        let title = std::iter::once("lgate-plogp")
            .chain(args.iter().copied())
            .collect::<Vec<_>>()
            .join(" ");
        text.push_str(&format!(
            "\n## `{title}`\n\n```text\n{}\n```\n",
            body.trim_end()
        ));
        seen += 1;
        for sub in subcommands(&body).into_iter().rev() {
            let mut next = path.clone();
            next.push(sub);
            stack.push(next);
        }
    }
    assert!(seen > 10, "only {seen} commands found");
    text
}

#[test]
fn the_command_reference_is_the_help() {
    let path = package_dir().join("docs/CLI.md");
    let produced = reference();
    if std::env::var_os("LGATE_UPDATE_DOCS").is_some() {
        std::fs::write(&path, &produced).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    if expected != produced {
        let line = expected
            .lines()
            .zip(produced.lines())
            .position(|(a, b)| a != b)
            .map_or(
                expected.lines().count().min(produced.lines().count()),
                |k| k,
            )
            + 1;
        panic!(
            "{} differs from the binary's help from line {line} on; regenerate it with \
             LGATE_UPDATE_DOCS=1 cargo test --release --test cli_reference",
            path.display()
        );
    }
}

#[test]
fn subcommands_are_read_from_the_help() {
    let help = "Usage: x <COMMAND>\n\nCommands:\n  pairs     A pair list\n            \
                more of it\n  mpigraph  mpiGraph's output\n  help      Print this\n\nOptions:\n";
    assert_eq!(subcommands(help), ["pairs", "mpigraph"]);
    assert!(subcommands("Usage: x\n\nOptions:\n  -h\n").is_empty());
}

/// The package's directory as cargo gives it to this run, else as built.
fn package_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), PathBuf::from)
}
