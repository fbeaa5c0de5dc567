//! The dependency graph: every package has a licence compatible with MIT OR Apache-2.0, and
//! the build without default features needs no MPI library.

use std::process::Command;

/// Licences that keep the project MIT OR Apache-2.0 when linked in.
const PERMISSIVE: &[&str] = &[
    "MIT",
    "MIT-0",
    "Apache-2.0",
    "Apache-2.0 WITH LLVM-exception",
    "BSD-2-Clause",
    "BSD-3-Clause",
    "0BSD",
    "ISC",
    "Zlib",
    "BSL-1.0",
    "CC0-1.0",
    "Unlicense",
    "Unicode-3.0",
    "Unicode-DFS-2016",
];

/// Whether an SPDX expression can be satisfied with permissive licences only.
fn permissive(expression: &str) -> bool {
    let spaced = expression
        .replace('(', " ( ")
        .replace(')', " ) ")
        .replace('/', " OR ");
    let tokens: Vec<&str> = spaced.split_whitespace().collect();
    let mut pos = 0;
    let ok = or_expr(&tokens, &mut pos);
    ok && pos == tokens.len()
}

fn or_expr(t: &[&str], pos: &mut usize) -> bool {
    let mut ok = and_expr(t, pos);
    while t.get(*pos) == Some(&"OR") {
        *pos += 1;
        ok |= and_expr(t, pos);
    }
    ok
}

fn and_expr(t: &[&str], pos: &mut usize) -> bool {
    let mut ok = licence(t, pos);
    while t.get(*pos) == Some(&"AND") {
        *pos += 1;
        ok &= licence(t, pos);
    }
    ok
}

fn licence(t: &[&str], pos: &mut usize) -> bool {
    match t.get(*pos) {
        Some(&"(") => {
            *pos += 1;
            let ok = or_expr(t, pos);
            if t.get(*pos) == Some(&")") {
                *pos += 1;
                ok
            } else {
                false
            }
        }
        Some(id) => {
            *pos += 1;
            let mut name = id.to_string();
            if t.get(*pos) == Some(&"WITH") {
                name = format!("{name} WITH {}", t.get(*pos + 1).unwrap_or(&""));
                *pos += 2;
            }
            PERMISSIVE.contains(&name.as_str())
        }
        None => false,
    }
}

#[test]
fn spdx_expressions() {
    assert!(permissive("MIT OR Apache-2.0"));
    assert!(permissive("(MIT OR Apache-2.0) AND Unicode-3.0"));
    assert!(permissive("MIT/Apache-2.0"));
    assert!(permissive("Apache-2.0 WITH LLVM-exception OR MIT"));
    assert!(!permissive("GPL-3.0-or-later"));
    assert!(!permissive("MIT AND GPL-2.0-only"));
    assert!(permissive("GPL-2.0-only OR MIT"));
    assert!(!permissive("LGPL-2.1"));
    assert!(!permissive("(MIT"));
}

#[test]
fn every_dependency_is_permissive() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--locked"])
        .current_dir(package_dir())
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata is JSON");
    let packages = meta["packages"].as_array().expect("a package list");
    assert!(packages.len() > 10, "the graph has its dependencies");
    let offending: Vec<String> = packages
        .iter()
        .filter(|p| !p["license"].as_str().is_some_and(permissive))
        .map(|p| format!("{} {}: {}", p["name"], p["version"], p["license"]))
        .collect();
    assert!(
        offending.is_empty(),
        "not MIT/Apache-compatible: {offending:#?}"
    );
}

/// `cargo tree` of `package` (normal and build dependencies, one package a line) with `extra`
/// options.
fn cargo_tree(package: &str, extra: &[&str]) -> String {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "tree",
            "--locked",
            "-p",
            package,
            "-e",
            "normal,build",
            "--prefix",
            "none",
        ])
        .args(extra)
        .current_dir(package_dir())
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn without_default_features_nothing_needs_mpi() {
    let tree = cargo_tree("lgate-plogp", &["--no-default-features"]);
    assert!(tree.contains("lgate-topology"), "{tree}");
    let mpi: Vec<&str> = tree
        .lines()
        .filter(|l| l.starts_with("mpi") || l.starts_with("lgate-mpi") || l.starts_with("bindgen"))
        .collect();
    assert!(mpi.is_empty(), "the no-MPI build pulls in {mpi:?}");
}

#[test]
fn analysis_crates_need_neither_the_harness_nor_mpi() {
    for package in [
        "lgate-derive",
        "lgate-rundir",
        "lgate-tables",
        "lgate-stats",
        "lgate-diff",
        "lgate-plot",
        "lgate-cluster",
        "lgate-matrix",
        "lgate-topology",
        "lgate-bcast",
        "lgate-transport",
    ] {
        let tree = cargo_tree(package, &[]);
        let unwanted: Vec<&str> = tree
            .lines()
            .filter(|l| {
                l.starts_with("lgate-harness ")
                    || l.starts_with("lgate-mpi ")
                    || l.starts_with("mpi ")
                    || l.starts_with("mpi-sys ")
            })
            .collect();
        assert!(unwanted.is_empty(), "{package} pulls in {unwanted:?}");
    }
    // Plots read the broadcast decision table from lgate-rundir, without the broadcasts.
    let plot = cargo_tree("lgate-plot", &[]);
    assert!(
        !plot.lines().any(|l| l.starts_with("lgate-bcast ")),
        "lgate-plot pulls in lgate-bcast"
    );
}

/// The workspace's crates by layer: a crate may use crates of lower layers only, so no arrow
/// points sideways or up. Layer 0 is the knobs (the settings messages advise, spelled by the
/// binary), 1 the vocabulary, 2 the run directory's files and the matrices, 3 the run
/// directory's long tables and messaging, 4 what works on them alone (deriving, clustering), 5
/// measuring and the analyses of runs, 6 the pair tests, 7 the modelled machine, 8 the readers
/// of every input, 9 the binary.
const LAYERS: &[(&str, u32)] = &[
    ("lgate-knobs", 0),
    ("lgate-stats", 1),
    ("lgate-output", 1),
    ("lgate-topology", 1),
    ("lgate-testbed-hop", 1),
    ("lgate-model", 1),
    ("lgate-rundir", 2),
    ("lgate-matrix", 2),
    ("lgate-tables", 3),
    ("lgate-transport", 3),
    ("lgate-derive", 4),
    ("lgate-cluster", 4),
    ("lgate-harness", 5),
    ("lgate-mpi", 5),
    ("lgate-bcast", 5),
    ("lgate-diff", 5),
    ("lgate-plot", 5),
    ("lgate-plogp-bench", 6),
    ("lgate-simulate", 7),
    ("lgate-inputs", 8),
    ("lgate-plogp", 9),
];

/// Each workspace package's own lgate-* dependencies (normal and build), from cargo metadata.
fn workspace_arrows() -> Vec<(String, Vec<String>)> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps", "--locked"])
        .current_dir(package_dir())
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata is JSON");
    meta["packages"]
        .as_array()
        .expect("a package list")
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|d| d["kind"].is_null() || d["kind"] == "build")
                .filter_map(|d| d["name"].as_str())
                .filter(|n| n.starts_with("lgate-"))
                .map(str::to_string)
                .collect();
            (p["name"].as_str().unwrap_or_default().to_string(), deps)
        })
        .collect()
}

/// The arrows that break the layering: to a crate of the same or a higher layer, or from or to
/// a crate the table does not place.
fn layering_breaks(arrows: &[(String, Vec<String>)]) -> Vec<String> {
    let layer = |name: &str| LAYERS.iter().find(|(n, _)| *n == name).map(|&(_, l)| l);
    let mut breaks = Vec::new();
    for (from, deps) in arrows {
        let Some(lf) = layer(from) else {
            breaks.push(format!("{from} has no layer in LAYERS"));
            continue;
        };
        for to in deps {
            match layer(to) {
                Some(lt) if lt < lf => {}
                Some(lt) => breaks.push(format!("{from} (layer {lf}) uses {to} (layer {lt})")),
                None => breaks.push(format!("{to} has no layer in LAYERS")),
            }
        }
    }
    breaks
}

#[test]
fn every_crate_uses_only_lower_layers() {
    let arrows = workspace_arrows();
    assert!(arrows.len() >= LAYERS.len(), "{arrows:?}");
    let breaks = layering_breaks(&arrows);
    assert!(breaks.is_empty(), "{breaks:#?}");
    // The derive stage measures nothing: imports and simulations write matrices without the
    // harness or a pair test.
    let derive = &arrows
        .iter()
        .find(|(n, _)| n == "lgate-derive")
        .expect("lgate-derive")
        .1;
    for measuring in [
        "lgate-harness",
        "lgate-plogp-bench",
        "lgate-transport",
        "lgate-mpi",
    ] {
        assert!(
            !derive.contains(&measuring.to_string()),
            "lgate-derive uses {measuring}"
        );
    }
}

#[test]
fn the_layering_check_sees_an_arrow_up_and_sideways() {
    let arrows = vec![
        ("lgate-derive".to_string(), vec!["lgate-rundir".to_string()]),
        ("lgate-rundir".to_string(), vec!["lgate-derive".to_string()]),
        (
            "lgate-cluster".to_string(),
            vec!["lgate-harness".to_string()],
        ),
        ("lgate-new".to_string(), vec![]),
    ];
    let breaks = layering_breaks(&arrows);
    assert_eq!(breaks.len(), 3, "{breaks:#?}");
    assert!(breaks[0].contains("lgate-rundir (layer 2) uses lgate-derive (layer 4)"));
    assert!(breaks[1].contains("lgate-cluster (layer 4) uses lgate-harness (layer 5)"));
    assert!(breaks[2].contains("lgate-new has no layer"));
}

/// The top-level modules of a crate's `src/` and, for each, the other top-level modules its
/// code (outside `#[cfg(test)]` modules) names through `crate::`.
fn module_graph(src: &std::path::Path) -> std::collections::BTreeMap<String, Vec<String>> {
    fn files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut all = Vec::new();
    files(src, &mut all);
    let top = |path: &std::path::Path| -> String {
        let rel = path.strip_prefix(src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        first.trim_end_matches(".rs").to_string()
    };
    let modules: std::collections::BTreeSet<String> = all.iter().map(|p| top(p)).collect();
    let mut graph: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    // A module file of tests (`mod.rs` declaring `#[cfg(test)] mod tests;` beside it) is test
    // code as a `#[cfg(test)] mod tests { .. }` block is.
    let test_file = |path: &std::path::Path| -> bool {
        path.file_name().is_some_and(|n| n == "tests.rs")
            && path.parent().is_some_and(|dir| {
                std::fs::read_to_string(dir.join("mod.rs"))
                    .is_ok_and(|m| m.contains("#[cfg(test)]\nmod tests;"))
            })
    };
    for path in all.iter().filter(|p| !test_file(p)) {
        let text = std::fs::read_to_string(path).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        let from = top(path);
        for (k, _) in code.match_indices("crate::") {
            let name: String = code[k + 7..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_' || c.is_ascii_digit())
                .collect();
            if name != from && name != "lib" && modules.contains(&name) {
                let deps = graph.entry(from.clone()).or_default();
                if !deps.contains(&name) {
                    deps.push(name);
                }
            }
        }
    }
    graph
}

#[test]
fn no_module_circle_inside_any_crate() {
    let mut circles = Vec::new();
    let crates = crate_dirs();
    assert!(crates.len() >= 19, "only {} crates found", crates.len());
    for dir in crates {
        let src = dir.join("src");
        if !src.is_dir() {
            continue;
        }
        let graph = module_graph(&src);
        // A circle: a module reachable from one of the modules it names.
        for (from, deps) in &graph {
            let mut stack: Vec<&String> = deps.iter().collect();
            let mut seen = std::collections::BTreeSet::new();
            while let Some(m) = stack.pop() {
                if m == from {
                    circles.push(format!("{}: {from}", src.display()));
                    break;
                }
                if seen.insert(m) {
                    stack.extend(graph.get(m).into_iter().flatten());
                }
            }
        }
    }
    assert!(
        circles.is_empty(),
        "modules that reach themselves: {circles:#?}"
    );
}

#[test]
fn the_circle_check_sees_a_circle() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.rs"), "use crate::b::B;\n").unwrap();
    std::fs::write(
        dir.path().join("b.rs"),
        "use crate::a::A;\n#[cfg(test)]\nuse crate::c;\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("c.rs"), "use crate::b::B;\n").unwrap();
    let graph = module_graph(dir.path());
    assert_eq!(graph["a"], ["b"]);
    assert_eq!(graph["b"], ["a"], "test-only uses do not count");
    assert_eq!(graph["c"], ["b"]);
}

/// The package's directory as cargo gives it to this run (a binary left by a checkout elsewhere
/// that shares the target directory still holds that checkout's path), else as built.
/// The pipeline's stages, in order, after the vocabulary they share (`base`): each crate
/// lives in the folder of its stage.
const STAGES: [&str; 5] = ["base", "measure", "store", "analyse", "export"];

/// Every crate's folder: `crates/STAGE/NAME`.
fn crate_dirs() -> Vec<std::path::PathBuf> {
    let mut dirs = Vec::new();
    for stage in STAGES {
        for entry in std::fs::read_dir(package_dir().join("crates").join(stage)).unwrap() {
            let dir = entry.unwrap().path();
            if dir.join("Cargo.toml").is_file() {
                dirs.push(dir);
            }
        }
    }
    dirs.sort();
    dirs
}

#[test]
fn every_crate_is_in_the_folder_of_its_stage() {
    // Nothing under crates/ but the stages, and no crate outside them.
    let mut found: Vec<String> = std::fs::read_dir(package_dir().join("crates"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    found.sort();
    let mut stages = STAGES.map(String::from).to_vec();
    stages.sort();
    assert_eq!(found, stages, "crates/ holds the pipeline's stages only");
    let output = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(package_dir())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let mut members = 0;
    for package in metadata["packages"].as_array().unwrap() {
        let manifest = std::path::Path::new(package["manifest_path"].as_str().unwrap());
        let dir = manifest.parent().unwrap();
        if dir == package_dir() {
            continue;
        }
        members += 1;
        assert!(
            crate_dirs().iter().any(|d| d == dir),
            "{}: not in a stage's folder (crates/STAGE/NAME)",
            dir.display()
        );
    }
    assert!(members >= 19, "only {members} crates in the workspace");
}

fn package_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(
        || env!("CARGO_MANIFEST_DIR").into(),
        std::path::PathBuf::from,
    )
}

#[test]
fn the_measuring_side_links_no_clustering_and_no_parquet() {
    // The staged plan asks a `LevelJudge` (lgate-topology) that the binary fills with
    // `cluster`'s, and the long tables are lgate-tables', not the run directory's: the
    // measuring ranks link no clustering library and no Parquet.
    for package in [
        "lgate-harness",
        "lgate-transport",
        "lgate-mpi",
        "lgate-plogp-bench",
    ] {
        let tree = cargo_tree(package, &[]);
        let unwanted: Vec<&str> = tree
            .lines()
            .filter(|l| {
                [
                    "lgate-cluster ",
                    "kodama ",
                    "linfa ",
                    "petal-clustering ",
                    "lgate-tables ",
                    "parquet ",
                ]
                .iter()
                .any(|c| l.starts_with(c))
            })
            .collect();
        assert!(unwanted.is_empty(), "{package} pulls in {unwanted:?}");
    }
}
