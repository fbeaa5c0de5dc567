#!/usr/bin/env bash
# Does an MPI finalize cleanly between hosts over TCP? Brings up the emulated cluster
# (scripts/testbed: 3 leaves x 2 hosts x 2 ranks), builds a 30-line C program with MPICC that
# passes one message around a ring (one way, both ways, or none) and calls MPI_Finalize, runs
# it RUNS times per pattern, and prints how many runs ended and how many hung (still running
# after TIMEOUT seconds, then killed). Not lgate-plogp: the same program hangs or not whatever
# the application does, which is what the README's "Which MPI" says of Debian 12's MPICH 4.0.2
# (UCX over TCP) and MPICH 5.0.2. Needs root (network namespaces).
#
#   benches/finalize-over-tcp.sh [MPICC=mpicc.mpich] [RUNS=5] [TIMEOUT=25]
#
# MPICC names the MPI: mpicc.mpich (Debian's MPICH), "$(scripts/setup --mpich-prefix)/bin/mpicc"
# (MPICH 5.0.2 from PyPI), mpicc (Open MPI). scripts/testbed picks the launcher that belongs to it.
set -euo pipefail
cd "$(dirname "$0")/.."
mpicc=${1:-mpicc.mpich} runs=${2:-5} limit=${3:-25}
work=$(mktemp -d)
export LGATE_TESTBED_STATE="$work/testbed"
trap 'scripts/testbed down >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
cat >"$work/ring.c" <<'EOF'
#include <mpi.h>
#include <stdio.h>
#include <string.h>
/* argv[1]: "none" (init and finalize only), "ring" (one message around a ring), "both" (the
   ring both ways). */
int main(int argc, char **argv) {
    int rank, size, got = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *pattern = argc > 1 ? argv[1] : "none";
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    if (strcmp(pattern, "none") != 0)
        MPI_Sendrecv(&rank, 1, MPI_INT, next, 0, &got, 1, MPI_INT, prev, 0, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
    if (strcmp(pattern, "both") == 0)
        MPI_Sendrecv(&rank, 1, MPI_INT, prev, 1, &got, 1, MPI_INT, next, 1, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
    MPI_Finalize();
    if (rank == 0) printf("finalized\n");
    return 0;
}
EOF
"$mpicc" -O2 -o "$work/ring" "$work/ring.c"
scripts/testbed up >/dev/null
echo "MPI: $("$mpicc" -show 2>/dev/null | head -c 120)"
for pattern in none ring both; do
  ended=0 hung=0
  for _ in $(seq "$runs"); do
    if scripts/testbed run --timeout "$limit" -- "$work/ring" "$pattern" >"$work/out" 2>&1 &&
      grep -q finalized "$work/out"; then
      ended=$((ended + 1))
    else
      hung=$((hung + 1))
    fi
  done
  echo "$pattern: $ended of $runs ended, $hung hung or failed"
done
