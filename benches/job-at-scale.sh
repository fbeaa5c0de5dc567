#!/usr/bin/env bash
# The whole `measure` job against MPI's own cost at the same size: an MPI hello world (MPI_Init,
# a barrier, MPI_Finalize; built here with mpicc) and `lgate-plogp measure` with its defaults,
# both `mpirun --oversubscribe -np NP`, launch to exit. Prints both, the pair tests' time and
# the job line `measure` prints (its time from its start to the last file, by phase), and fails
# when the job takes more than hello world + the pair tests + 15 s, or when the time it prints
# is under 3/4 of launch to exit.
#
#   benches/job-at-scale.sh          # 256 ranks
#   benches/job-at-scale.sh 64
#
# Oversubscribed runs magnify every per-rank cost: on 2 cores, 256 ranks show what grows with P.
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/lib.sh
np="${1:-256}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/lgate-plogp/target}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cargo build --release --quiet
bin="$CARGO_TARGET_DIR/release/lgate-plogp"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat >"$work/hello.c" <<'C'
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("hello from %d ranks\n", 0);
    MPI_Finalize();
    return 0;
}
C
mpicc -O2 -o "$work/hello" "$work/hello.c"

now() { date +%s.%N; }
start=$(now)
mpirun --oversubscribe -np "$np" "$work/hello" >/dev/null
hello=$(awk -v a="$start" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
echo "MPI hello world, $np ranks: $hello s launch to exit"

start=$(now)
mpirun --oversubscribe -np "$np" "$bin" measure --output "$work/run" 2>"$work/measure.err"
job=$(awk -v a="$start" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
tests=$(sed -n 's/^measured [0-9]* pairs.* in \([0-9.]*\) s:.*/\1/p' "$work/measure.err")
printed=$(sed -n 's/^job: \([0-9.]*\) s on rank 0.*/\1/p' "$work/measure.err")
echo "lgate-plogp measure, $np ranks: $job s launch to exit; its pair tests $tests s"
grep '^job:' "$work/measure.err"

limit=$(awk -v h="$hello" -v t="$tests" 'BEGIN { printf "%.1f", h + t + 15 }')
result "measure job, $np ranks (hello world $hello s + tests $tests s + 15 s)" "$job" "<=" "$limit" s
share=$(awk -v p="$printed" -v j="$job" 'BEGIN { if (p != "") printf "%.2f", p / j }')
result "measure job, $np ranks: the time it prints over launch to exit" "$share" ">=" 0.75
exit "$bench_failed"
