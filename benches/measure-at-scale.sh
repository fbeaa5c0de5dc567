#!/usr/bin/env bash
# How long `measure` would take at scale, and whether its staged run still gives the topology:
# for each machine, the estimate of `simulate --estimate-time` for the staged plan (the default)
# and for the full plan, the pair tests the staged plan runs, and the adjusted Rand index of
# every true level when the staged run is simulated (with the model's artifacts, with all but
# the slow node, and with all) and clustered with the defaults. The last row is estimated only.
#
#   benches/measure-at-scale.sh          # the table of the README and of the issue
#   ROWS=2 benches/measure-at-scale.sh   # the first two rows only
#
# Targets: 256 ranks <= 30 s, 1024 ranks <= 1 min, 4096 ranks <= 2 min, 128 000 ranks <= 10 min.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/lgate-plogp/target}"
cargo build --release --quiet
bin="$CARGO_TARGET_DIR/release/lgate-plogp"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# preset, machine, target (seconds), simulate the run (1) or estimate only (0)
rows=(
    "fram switch=1,node=8,socket=2,core=16 30 1"
    "fram switch=4,node=8,socket=2,core=16 60 1"
    "betzy node=8,socket=2,core=64 60 1"
    "fram switch=8,node=16,socket=2,core=16 120 1"
    "betzy node=32,socket=2,core=64 120 1"
    "betzy node=1000,socket=2,core=64 600 0"
)
limit="${ROWS:-${#rows[@]}}"

# The estimated wall time in seconds from --estimate-time's last line.
seconds() {
    sed -n 's/^estimated wall time: \([^(]*\) (.*/\1/p' | awk '
        / h / { print $1 * 3600 + $3 * 60; next }
        / min / { print $1 * 60 + $3; next }
        / ms/ { print $1 / 1000; next }
        / us/ { print $1 / 1e6; next }
        { print $1 }'
}

# Every level's ARI of a staged simulation with these artifacts, as level=ARI words.
levels() {
    local preset="$1" machine="$2" artifacts="$3"
    "$bin" simulate --preset "$preset" --machine "$machine" --artifacts "$artifacts" \
        --output "$work/run" --force --quiet --no-features
    "$bin" cluster "$work/run" --output "$work/found.json" --force --quiet 2>/dev/null
    "$bin" score --truth "$work/run" --topology "$work/found.json" --json |
        python3 -c 'import json, sys
rows = [r for r in json.load(sys.stdin) if r["level"] != "core"]
print(" ".join("%s=%.3f" % (r["level"], r["ari"]) for r in rows))'
}

printf '%-6s %-28s %7s %10s %9s %9s %7s  %s\n' preset machine ranks "pair tests" staged_s full_s target \
    "ARI per level (staged, simulated): no artifacts | all but slow-node | all"
for row in "${rows[@]:0:$limit}"; do
    read -r preset machine target simulate <<<"$row"
    out="$("$bin" simulate --preset "$preset" --machine "$machine" --estimate-time)"
    ranks=$(sed -n 's/.*, \([0-9]*\) ranks,.*/\1/p' <<<"$out" | head -1)
    tests=$(sed -n 's/^pair tests: \([0-9]*\),.*/\1/p' <<<"$out")
    staged=$(seconds <<<"$out")
    full=$("$bin" simulate --preset "$preset" --machine "$machine" --estimate-time --plan full | seconds)
    accuracy="(estimate only)"
    if [ "$simulate" = 1 ]; then
        accuracy="$(levels "$preset" "$machine" none | tr '\n' ' ')"
        model="$(levels "$preset" "$machine" warmup,spikes,first-pair,bands,slow-pairs,slow-node 2>/dev/null | tr '\n' ' ' || true)"
        but="$(levels "$preset" "$machine" warmup,spikes,first-pair,bands,slow-pairs | tr '\n' ' ')"
        accuracy="$accuracy| $but| $model"
    fi
    verdict=$(awk -v s="$staged" -v t="$target" 'BEGIN { print (s <= t) ? "ok" : "OVER" }')
    printf '%-6s %-28s %7s %10s %9.1f %9.0f %4s %s  %s\n' "$preset" "$machine" "$ranks" "$tests" \
        "$staged" "$full" "$target" "$verdict" "$accuracy"
done
