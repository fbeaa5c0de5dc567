#!/usr/bin/env bash
# The fabrics users have, on the emulated cluster (scripts/testbed), side by side with mpiGraph:
# for each fabric, mpiGraph (built from ../shared/peers with its build script, its output read
# by `import mpigraph`) and `lgate-plogp measure` with its defaults (the staged plan), each
# clustered by `cluster` with its defaults and scored against the testbed's truth. Prints each
# one's wall time (launch included), the adjusted Rand index of every true level, and the
# confidence `cluster` gives each level it keeps (and what it leaves undecided).
#
#   sudo benches/testbed-fabrics.sh                 # every fabric below
#   sudo FABRICS="blocking dragonfly" benches/testbed-fabrics.sh
#
# Fabrics (16 or 12 ranks, 2 a host):
#   blocking     3 leaves x 2 hosts, uplinks 10x thinner than a host link (the testbed default)
#   fat-tree     3 leaves x 2 hosts, non-blocking (uplinks as wide as their hosts together),
#                2 extra hops between a leaf and the spine: only the hops tell leaves apart
#   fat-tree-jitter  the same with one relay hop per uplink that holds each frame 4 us +- 4 us
#                (scripts/testbed --hop-delay, lgate-testbed-hop; on top of its own cost)
#   dragonfly    4 leaves x 2 hosts in 2 groups, non-blocking inside a group, the groups joined
#                by global links a tenth as wide as a leaf's uplink
#   background   the blocking fabric with other jobs' traffic between the two hosts of leaf 0
#                for the whole run
#   flat         1 leaf of 6 hosts, non-blocking: nothing above the hosts, so any level found
#                there is invented (the truth's one leaf scores 1 only when no level is kept)
# This machine's kernel has no netem: delays and their jitter come from hops (bridges, or
# relays in user space with --hop-delay) and traffic, not from a per-link setting.
set -Eeuo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/lgate-plogp/target}"
cargo build --release --quiet
bin="$CARGO_TARGET_DIR/release/lgate-plogp"
peers="${PEERS:-$repo/../shared/peers}"
fabrics="${FABRICS:-blocking fat-tree fat-tree-jitter dragonfly background flat}"
work="$(mktemp -d)"
export LGATE_TESTBED_STATE="$work/testbed"
cleanup() {
    "$repo/scripts/testbed" down >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
# A step that fails names itself and says why (its errors kept in step.err), not a silent exit.
failed() {
    echo "testbed-fabrics: line $1 failed (fabric ${fabric:-none}):" >&2
    tail -n 5 "$work/step.err" >&2 2>/dev/null || true
}
trap 'failed $LINENO' ERR
"$peers/build" "$work/peers" >/dev/null

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# The levels `cluster` finds in a run, scored against the truth, and their confidence:
# "leaf=1.000 host=1.000 | kept: node 1.00 | undecided: ...".
levels() {
    "$bin" cluster "$1" --output "$work/found.json" --force --quiet 2>"$work/step.err"
    local scores
    scores=$("$bin" score --truth "$LGATE_TESTBED_STATE/truth.json" --topology "$work/found.json" --json |
        python3 -c 'import json, sys
print(" ".join("%s=%.3f" % (r["level"], r["ari"]) for r in json.load(sys.stdin)))')
    python3 - "$work/found.json" "$scores" <<'EOF'
import json, sys
t = json.load(open(sys.argv[1]))
kept = ", ".join("%d groups %s" % (len(l["groups"]), "%.2f" % l["confidence"] if "confidence" in l else "-")
                 for l in t["levels"]) or "one group"
c = t.get("confidence")
undecided = ", ".join("%s%d groups %.0f %%" % (u["name"] + " " if u.get("name") else "", u["groups"], 100 * u["share"])
                      for u in (c or {}).get("undecided", [])) or "none"
print("%s | kept: %s | undecided: %s" % (sys.argv[2], kept, undecided if c else "(not estimated)"))
EOF
}

printf '%-15s %-9s %8s  %s\n' fabric tool "wall s" "ARI per true level | levels kept (confidence) | undecided"
for fabric in $fabrics; do
    case "$fabric" in
    blocking) up=() ;;
    fat-tree) up=(--uplink-rate 4gbit --extra-hops 2) ;;
    fat-tree-jitter) up=(--uplink-rate 4gbit --extra-hops 1 --hop-delay 4 --hop-jitter 4) ;;
    dragonfly) up=(--leaves 4 --groups 2 --uplink-rate 4gbit --global-rate 400mbit) ;;
    background) up=() ;;
    flat) up=(--leaves 1 --hosts-per-leaf 6 --uplink-rate 4gbit) ;;
    *) echo "unknown fabric $fabric" >&2; exit 2 ;;
    esac
    "$repo/scripts/testbed" up "${up[@]}" 2>"$work/step.err"
    if [ "$fabric" = background ]; then
        "$repo/scripts/testbed" background start --from l0h0 --to l0h1 --seconds 3600 2>"$work/step.err"
    fi
    start=$(now)
    "$repo/scripts/testbed" run -- "$work/peers/mpiGraph" 1048576 10 10 >"$work/mpigraph.txt" 2>"$work/step.err"
    mpigraph_s=$(since "$start")
    "$bin" import mpigraph "$work/mpigraph.txt" --output "$work/mpigraph" --force --quiet
    printf '%-15s %-9s %8s  %s\n' "$fabric" mpiGraph "$mpigraph_s" "$(levels "$work/mpigraph")"
    rm -rf "$work/staged"
    start=$(now)
    "$repo/scripts/testbed" run -- "$bin" measure --output "$work/staged" --quiet 2>"$work/step.err"
    staged_s=$(since "$start")
    printf '%-15s %-9s %8s  %s\n' "$fabric" measure "$staged_s" "$(levels "$work/staged")"
    "$repo/scripts/testbed" down 2>"$work/step.err"
done
