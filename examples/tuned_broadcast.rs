//! A program that runs MPI itself broadcasts with the decision table `lgate-plogp bcast bench`
//! wrote, over a duplicate of its world communicator:
//!
//! ```text
//! cargo build --release --example tuned_broadcast
//! mpirun -np 12 target/release/examples/tuned_broadcast tuning/bcast-tuning.json 1MiB
//! ```

use std::process::ExitCode;

use lgate_bcast::{broadcast_tuned, BroadcastTable, Tuning};
use lgate_mpi::mpi::topology::Communicator;
use lgate_mpi::MpiTransport;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [path, size] = args.as_slice() else {
        eprintln!("usage: tuned_broadcast TUNING.json SIZE");
        return ExitCode::from(2);
    };
    let Ok(len) = size.parse::<lgate_rundir::MessageSize>() else {
        eprintln!("tuned_broadcast: `{size}` is not a message size such as 1MiB");
        return ExitCode::from(2);
    };
    let tuning = match std::fs::read_to_string(path)
        .map_err(|e| e.to_string())
        .and_then(|text| Tuning::parse(&text).map_err(|e| e.to_string()))
    {
        Ok(t) => t,
        Err(e) => {
            eprintln!("tuned_broadcast: {path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let Some(universe) = lgate_mpi::mpi::initialize() else {
        eprintln!("tuned_broadcast: MPI was started before");
        return ExitCode::FAILURE;
    };
    let world = universe.world();
    let transport = MpiTransport::from_communicator(world.duplicate());
    let mut buf = vec![0u8; len.0];
    if world.rank() == 0 {
        buf.iter_mut().enumerate().for_each(|(k, b)| *b = k as u8);
    }
    let start = std::time::Instant::now();
    if let Err(e) = broadcast_tuned(&transport, &mut buf, 0, &tuning) {
        eprintln!("tuned_broadcast: rank {}: {e}", world.rank());
        world.abort(1);
    }
    let took = start.elapsed();
    let correct = buf.iter().enumerate().all(|(k, &b)| b == k as u8);
    println!(
        "rank {}: {} bytes by {} in {:.1} us, {}",
        world.rank(),
        len.0,
        tuning.range_for(len.0).choice,
        took.as_secs_f64() * 1e6,
        if correct {
            "the root's bytes"
        } else {
            "WRONG BYTES"
        }
    );
    if correct {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
