//! Gives the binary (and the package's tests and benches) a run-time search path to the MPI
//! library that `lgate-mpi` was built against, as MPI's compiler wrappers do.

fn main() {
    println!("cargo:rerun-if-env-changed=DEP_LGATE_MPI_LIBDIRS");
    if let Ok(dirs) = std::env::var("DEP_LGATE_MPI_LIBDIRS") {
        for dir in dirs.split(':').filter(|d| !d.is_empty()) {
            println!("cargo:rustc-link-arg=-Wl,--enable-new-dtags,-rpath,{dir}");
        }
    }
}
