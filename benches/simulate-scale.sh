#!/usr/bin/env bash
# How long `lgate-plogp simulate` takes, and its peak memory, as the machine grows: BETZY-like
# nodes of 2 x 64 cores, from 512 to 4096 ranks. Prints one line per run.
#
#   benches/simulate-scale.sh            # 512, 1024, 2048 and 4096 ranks
#   SIZES_FLAGS="" benches/simulate-scale.sh 512   # all sizes up to 2 MiB, with the table
#
# By default the runs write the matrices and report.json for sizes 0, 1 KiB, 64 KiB and
# 1 MiB, without measurements.parquet and feature matrices (143 million table rows and four
# O(P^3) products at 4096 ranks); set SIZES_FLAGS to change that.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/lgate-plogp/target}"
cargo build --release --quiet
bin="$CARGO_TARGET_DIR/release/lgate-plogp"
flags="${SIZES_FLAGS---sizes 0,1KiB,64KiB,1MiB --no-table --no-features}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
nodes_list=("$@")
if [ ${#nodes_list[@]} -eq 0 ]; then nodes_list=(512 1024 2048 4096); fi
printf '%6s %10s %12s %10s\n' ranks wall_s peak_MiB disk_MiB
for ranks in "${nodes_list[@]}"; do
    nodes=$((ranks / 128))
    # shellcheck disable=SC2086
    /usr/bin/time -f '%e %M' -o "$work/time" "$bin" simulate --preset betzy --plan full \
        --machine "node=$nodes,socket=2,core=64" --output "$work/run" --force --quiet $flags
    read -r wall kb <"$work/time"
    disk=$(du -sm "$work/run" | cut -f1)
    printf '%6s %10s %12s %10s\n' "$ranks" "$wall" "$((kb / 1024))" "$disk"
done
