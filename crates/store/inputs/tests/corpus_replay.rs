//! Every fuzz seed and every input that once failed, fed to its reader on stable Rust, and
//! random mutations of the seeds: a parser regression fails here without running the fuzzer.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use lgate_inputs::{InputFormat, FORMATS};
use proptest::prelude::*;

fn fuzz_dir() -> PathBuf {
    package_dir().join("../../../fuzz")
}

/// The files of `fuzz/<kind>/<format>/`, sorted; none when the folder does not exist.
fn files(kind: &str, format: &InputFormat) -> Vec<PathBuf> {
    let dir = fuzz_dir().join(kind).join(format.name);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .map(|e| e.expect("a corpus folder lists").path())
        .filter(|p| p.is_file())
        .collect();
    out.sort();
    out
}

/// Runs a check, turning a panic into its message.
fn outcome(format: &InputFormat, bytes: &[u8]) -> Result<(), String> {
    catch_unwind(AssertUnwindSafe(|| (format.check)(bytes))).map_err(|e| {
        e.downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    })
}

#[test]
fn every_format_has_a_fuzz_target_and_seeds() {
    for format in FORMATS {
        let target = fuzz_dir()
            .join("fuzz_targets")
            .join(format!("{}.rs", format.name));
        let source = std::fs::read_to_string(&target)
            .unwrap_or_else(|e| panic!("{}: {e}", target.display()));
        assert!(
            source.contains(&format!("lgate_inputs::{}(", format.name)),
            "{} does not call lgate_inputs::{}",
            target.display(),
            format.name
        );
        assert!(
            !files("seeds", format).is_empty(),
            "fuzz/seeds/{} has no seed",
            format.name
        );
    }
}

#[test]
fn seeds_and_regressions_replay_without_a_panic() {
    let mut failures = Vec::new();
    let mut replayed = 0;
    for format in FORMATS {
        for path in files("seeds", format)
            .into_iter()
            .chain(files("regressions", format))
        {
            let bytes = std::fs::read(&path).expect("a corpus file reads");
            replayed += 1;
            if let Err(message) = outcome(format, &bytes) {
                failures.push(format!("{}: {message}", path.display()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(replayed >= 2 * FORMATS.len(), "only {replayed} inputs");
}

#[test]
fn seeds_are_accepted_by_their_readers() {
    // A seed the reader refuses explores only the error paths: each format keeps at least one
    // that reads, so the checks after reading run too. (Every seed of these must read.)
    let must_read = [
        "topology_lgate",
        "topology_json",
        "topology_newick",
        "matrix_npy",
    ];
    for name in must_read {
        let format = lgate_inputs::format(name).expect("a format");
        for path in files("seeds", format) {
            let text = std::fs::read(&path).expect("a seed reads");
            let accepted = match name {
                "matrix_npy" => lgate_matrix::read_matrix_bytes(&path, &text).is_ok(),
                _ => lgate_topology::format::parse(
                    std::str::from_utf8(&text).expect("UTF-8"),
                    None,
                    None,
                )
                .is_ok(),
            };
            assert!(accepted, "{} is refused", path.display());
        }
    }
}

/// Nesting far deeper than any machine: refused with an error, never a stack overflow (each
/// was one before the depth limit).
#[test]
fn deep_nesting_is_refused_not_overflowed() {
    let deep = 100_000;
    let inputs: [(&str, String); 3] = [
        (
            "topology_lgate",
            "cluster { ".repeat(deep) + "group { 0 }" + &" }".repeat(deep),
        ),
        (
            "topology_newick",
            "(".repeat(deep) + "0" + &")".repeat(deep) + ";",
        ),
        ("topology_json", "[".repeat(deep) + &"]".repeat(deep)),
    ];
    for (name, text) in inputs {
        let format = lgate_inputs::format(name).expect("a format");
        // On a thread with the 2 MiB stack Rust gives threads (the CLI has 8 MiB).
        let bytes = text.into_bytes();
        let result = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || outcome(format, &bytes))
            .expect("a thread starts")
            .join()
            .expect("the thread ends");
        assert_eq!(result, Ok(()), "{name}");
    }
}

/// One change to a seed: overwrite, insert, remove or repeat bytes, or cut the end off.
#[derive(Debug, Clone)]
enum Mutation {
    Set(usize, u8),
    Insert(usize, Vec<u8>),
    Remove(usize, usize),
    Repeat(usize, usize, usize),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let interesting = prop::sample::select(vec![
        b'0', b'9', b'-', b'.', b',', b'e', b'"', b'{', b'}', b'(', b')', b';', b'\n', b' ', 0,
        0xff,
    ]);
    prop_oneof![
        (
            any::<usize>(),
            prop_oneof![any::<u8>(), interesting.clone()]
        )
            .prop_map(|(at, b)| Mutation::Set(at, b)),
        (any::<usize>(), prop::collection::vec(interesting, 1..8))
            .prop_map(|(at, b)| Mutation::Insert(at, b)),
        (any::<usize>(), 1usize..32).prop_map(|(at, n)| Mutation::Remove(at, n)),
        (any::<usize>(), 1usize..32, 2usize..64).prop_map(|(at, n, k)| Mutation::Repeat(at, n, k)),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn apply(mut bytes: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for m in mutations {
        let len = bytes.len();
        let at = |i: usize| if len == 0 { 0 } else { i % (len + 1) };
        match m {
            Mutation::Set(i, b) if len > 0 => bytes[i % len] = *b,
            Mutation::Set(..) => bytes.push(0),
            Mutation::Insert(i, b) => {
                let i = at(*i);
                bytes.splice(i..i, b.iter().copied());
            }
            Mutation::Remove(i, n) => {
                let i = at(*i);
                bytes.drain(i..(i + n).min(len));
            }
            Mutation::Repeat(i, n, k) => {
                let i = at(*i);
                let piece = bytes[i..(i + n).min(len)].to_vec();
                for _ in 1..*k {
                    bytes.splice(i..i, piece.iter().copied());
                }
            }
            Mutation::Truncate(i) => bytes.truncate(at(*i)),
        }
    }
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 4096,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Mutated seeds of every format: refused or accepted, never a panic.
    #[test]
    fn mutated_seeds_never_panic(
        format in 0..FORMATS.len(),
        seed in any::<usize>(),
        mutations in prop::collection::vec(mutation(), 1..6),
    ) {
        let format = &FORMATS[format];
        let seeds = files("seeds", format);
        let path = &seeds[seed % seeds.len()];
        let bytes = apply(std::fs::read(path).expect("a seed reads"), &mutations);
        let result = outcome(format, &bytes);
        prop_assert!(
            result.is_ok(),
            "{} mutated ({mutations:?}): {}\n{}",
            path.display(),
            result.unwrap_err(),
            String::from_utf8_lossy(&bytes)
        );
    }
}

/// The package's directory as cargo gives it to this run (a binary left by a checkout elsewhere
/// that shares the target directory still holds that checkout's path), else as built.
fn package_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(
        || env!("CARGO_MANIFEST_DIR").into(),
        std::path::PathBuf::from,
    )
}
