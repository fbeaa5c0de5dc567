#!/usr/bin/env bash
# Rank 0's cost of taking in results: staged runs over the in-process transport (a rank per
# thread) with several hosts, where each host's first rank relays its host's results to rank 0
# in batches. Prints rank 0's collecting CPU per result for each shape and fails when any is
# above LIMIT microseconds (rank 0 parsing and journalling every result itself, one message
# each, took 24-35 us here).
#
#   benches/rank0-collecting.sh                  # 32 hosts x 16 ranks and 16 x 32, limit 12 us
#   LIMIT=8 benches/rank0-collecting.sh 8x64
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/lib.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/lgate-plogp/target}"
limit="${LIMIT:-12}"
shapes=("$@")
[ ${#shapes[@]} -gt 0 ] || shapes=(32x16 16x32)
cargo build --release --quiet -p lgate-harness --example collecting
for shape in "${shapes[@]}"; do
    line=$("$CARGO_TARGET_DIR/release/examples/collecting" "${shape%x*}" "${shape#*x}")
    echo "$line"
    us=$(sed -n 's/.*CPU, \([0-9.]*\) us a result$/\1/p' <<<"$line")
    result "rank 0 collecting, $shape ranks" "$us" "<=" "$limit" "us a result"
done
exit "$bench_failed"
