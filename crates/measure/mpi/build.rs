//! Compiles `src/constants.c` with the MPI library the bindings come from, so that constants
//! are read as the library's own header defines them, whichever MPI it is.

fn main() {
    println!("cargo:rerun-if-changed=src/constants.c");
    println!("cargo:rerun-if-env-changed=MPICC");
    let lib = match build_probe_mpi::probe() {
        Ok(lib) => lib,
        Err(errors) => {
            for e in errors {
                println!("cargo:warning=looking for MPI: {e}");
            }
            panic!("no MPI library found: install one (scripts/setup) or set MPICC");
        }
    };
    let mut build = cc::Build::new();
    build.file("src/constants.c");
    match &lib.mpicc {
        Some(mpicc) => {
            build.compiler(mpicc);
        }
        None => {
            for dir in &lib.include_paths {
                build.include(dir);
            }
        }
    }
    build.compile("lgate_mpi_constants");
    // Where the library lies, for this crate's tests and (through `links`) for the binary:
    // a run-time search path, as MPI's compiler wrappers add, so that an MPI outside the
    // loader's default directories (a module, a prefix from PyPI) is found without
    // LD_LIBRARY_PATH, which still takes precedence (RUNPATH, not RPATH).
    let dirs: Vec<String> = lib
        .lib_paths
        .iter()
        .filter_map(|d| d.to_str().map(str::to_owned))
        .filter(|d| !d.is_empty() && !d.contains(':'))
        .collect();
    println!("cargo:libdirs={}", dirs.join(":"));
    for dir in &dirs {
        println!("cargo:rustc-link-arg=-Wl,--enable-new-dtags,-rpath,{dir}");
    }
}
