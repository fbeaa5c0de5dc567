//! Times the phases of `auto` on a matrix file: reading, the top-level dendrogram, and the
//! whole of `auto`.
//!
//! ```text
//! cargo run --release -p lgate-cluster --example auto_timing -- MATRIX.npy
//! ```

use std::time::Instant;
fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: auto_timing MATRIX");
        std::process::exit(2);
    };
    let t = Instant::now();
    let r = match lgate_matrix::read_matrix(std::path::Path::new(&path)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    eprintln!("read {:?}", t.elapsed());
    let d = r.matrix.values();
    let t = Instant::now();
    let den = lgate_cluster::Dendrogram::new(d, lgate_cluster::Linkage::Average);
    eprintln!(
        "dendrogram {:?} ({} merges)",
        t.elapsed(),
        den.merges().len()
    );
    let t = Instant::now();
    let tree = lgate_cluster::auto(d, &lgate_cluster::AutoParams::default());
    eprintln!("auto {:?}", t.elapsed());
    let _ = tree;
}
