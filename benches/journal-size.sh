#!/usr/bin/env bash
# Rank 0's record of the tests: a real staged `measure` of RANKS ranks (64 unless set) under
# mpirun on this machine, its journal's bytes per test against the target (issue 60: at most
# 64), beside the same journal as JSON lines (`lgate-plogp journal`) and the run directory
# without its dense files (matrices/, screen.csv).
#
#   benches/journal-size.sh
#   RANKS=128 benches/journal-size.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/lib.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/lgate-plogp/target}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ranks="${RANKS:-64}"
cargo build --release --quiet
bin="$CARGO_TARGET_DIR/release/lgate-plogp"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpirun --oversubscribe -np "$ranks" "$bin" measure --output "$work/run" --quiet
tests=$("$bin" journal "$work/run" | wc -l)
journal=$(stat -c %s "$work/run/journal.bin")
json=$("$bin" journal "$work/run" | wc -c)
besides=$(du -sb --exclude=matrices --exclude=screen.csv "$work/run" | cut -f1)
echo "$ranks ranks: $tests tests; journal.bin $journal bytes; as JSON lines $json bytes;" \
    "run directory without matrices/ and screen.csv $besides bytes"
echo "JSON lines: $(awk -v b="$json" -v t="$tests" 'BEGIN { printf "%.0f", b / t }') bytes a test"
echo "run directory without dense files: $(awk -v b="$besides" -v t="$tests" 'BEGIN { printf "%.0f", b / t }') bytes a test"
result "journal, real $ranks-rank staged run" \
    "$(awk -v b="$journal" -v t="$tests" 'BEGIN { printf "%.1f", b / t }')" "<=" 64 "bytes a test"
exit "$bench_failed"
