#!/usr/bin/env bash
# The whole-machine path at 16 384 ranks, checked the way CI can check it on a busy machine:
# a BETZY-like machine of 128 hosts x 2 x 64 cores (every artifact) simulated, clustered, its
# report and Slurm export made, each a whole process. Checks what does not depend on the
# machine's load against fixed targets (peak memory, the run directory's size, every level
# exact) and the CPU time (user + system, which a busy machine inflates far less than wall
# time) against this machine's speed: the same work in units of a reference job (sorting 3
# million numbers with `sort`, one thread), at most MAX_RATIO of them. Today's pipeline takes
# about 2.2 units here (2026-11-28; 2.1 with two CPU hogs beside it), and MAX_RATIO is 3.3
# (1.5 times that): a busy machine does not reach it, a 2x slowdown of the pipeline does
# (PLANT_SLOWDOWN=2 runs every step twice to show it: 3.9, FAIL). A host that gets busier
# between the reference and the pipeline (a KVM guest's CPU time counts what the host takes
# from it) can still push one attempt past the limit (3.39 once in CI, right after the testbed
# suite, 2.5-2.6 alone): an attempt past it is made again, reference and pipeline, up to
# ATTEMPTS times (2 unless set), and the lowest ratio is checked. A real slowdown fails every
# attempt.
#
#   benches/scale-guard.sh                     # as CI runs it
#   PLANT_SLOWDOWN=2 benches/scale-guard.sh    # must fail
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/lib.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/lgate-plogp/target}"
if [ -f "$HOME/.cargo/env" ]; then . "$HOME/.cargo/env"; fi
cargo build --release --quiet
bin="$CARGO_TARGET_DIR/release/lgate-plogp"
max_ratio="${MAX_RATIO:-3.3}"
plant="${PLANT_SLOWDOWN:-1}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Runs NAME COMMAND... (PLANT_SLOWDOWN times): adds its CPU seconds to $cpu, its peak to $peak.
cpu=0 peak=0 unit=
step() {
    local name="$1" k u s kb
    shift
    for k in $(seq "$plant"); do
        /usr/bin/time -f '%U %S %M' -o "$work/time" "$@" >"$work/$name.out" 2>"$work/$name.err" || {
            echo "$name failed:" >&2
            tail -5 "$work/$name.err" >&2
            exit 1
        }
        read -r u s kb <"$work/time"
        cpu=$(awk -v c="$cpu" -v u="$u" -v s="$s" 'BEGIN { print c + u + s }')
        peak=$((kb / 1024 > peak ? kb / 1024 : peak))
        printf '  %-10s %6.2f s CPU %6d MiB\n' "$name" "$(awk -v u="$u" -v s="$s" 'BEGIN { print u + s }')" $((kb / 1024))
    done
}

# The reference: sorting 3 million pseudo-random numbers, one thread, the least of three.
awk 'BEGIN { s = 12345; for (i = 0; i < 3000000; i++) { s = (s * 1103515245 + 12345) % 2147483648; print s } }' >"$work/numbers"
reference() {
    local k t
    unit=
    for k in 1 2 3; do
        /usr/bin/time -f '%U %S' -o "$work/time" sort -n --parallel=1 -S 512M "$work/numbers" -o /dev/null
        t=$(awk '{ print $1 + $2 }' "$work/time")
        unit=$(awk -v a="${unit:-$t}" -v b="$t" 'BEGIN { print (b < a) ? b : a }')
    done
    echo "reference job (sort): $unit s CPU"
}

run="$work/run"
attempts="${ATTEMPTS:-2}"
best=
for attempt in $(seq "$attempts"); do
    cpu=0 peak=0
    reference
    step simulate "$bin" simulate --preset betzy --machine node=128,socket=2,core=64 \
        --artifacts all --output "$run" --force --quiet
    step cluster "$bin" cluster "$run" --output "$work/topology.json" --force --quiet
    step slurm "$bin" cluster "$run" --format slurm --output "$work/topology.conf" --force --quiet
    step report "$bin" report "$run" --output "$work/report.html" --force
    ratio=$(awk -v c="$cpu" -v u="$unit" 'BEGIN { printf "%.2f", c / u }')
    echo "attempt $attempt: $cpu s CPU in all, $ratio reference jobs"
    best=$(awk -v a="${best:-$ratio}" -v b="$ratio" 'BEGIN { printf "%.2f", (b < a) ? b : a }')
    if awk -v r="$best" -v m="$max_ratio" 'BEGIN { exit !(r <= m) }'; then
        break
    fi
done
ratio="$best"
disk=$(du -sm "$run" | cut -f1)
"$bin" score --topology "$work/topology.json" --truth "$run" >"$work/score.txt"
sed 's/^/  /' "$work/score.txt"
worst=$(awk 'NR > 1 && $0 !~ /one rank each/ { print $(NF - 1) }' "$work/score.txt" | sort -g | head -1)
echo "16 384 ranks: the lowest of $attempt attempt(s) $ratio reference jobs; peak $peak MiB; run directory $disk MiB"
result "16k ranks: CPU in reference jobs" "$ratio" "<=" "$max_ratio"
result "16k ranks: peak memory" "$peak" "<=" 1024 MiB
result "16k ranks: run directory" "$disk" "<=" 128 MiB
result "16k ranks: worst level ARI" "${worst:-}" ">=" 1
exit "$bench_failed"
