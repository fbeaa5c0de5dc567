#!/usr/bin/env bash
# Fabrics of any shape: for each seed, `scripts/testbed up --random SEED` (2-6 leaves, 2-4 hosts
# a leaf, 1-3 ranks a host, uplinks 1-8x a host link, 0-3 extra hops, 1-3 groups of leaves;
# at most 48 ranks), then `lgate-plogp measure` and `cluster` with their defaults, scored
# against the testbed's truth. Per seed it prints the fabric drawn, the adjusted Rand index of
# each true level, the levels kept and those left undecided, and its verdict:
#   - every host level exact (ARI 1);
#   - every leaf (and group) level exact, or left undecided with exactly its groups;
#   - nothing invented: every level kept is a true level (or all ranks, or one rank each).
# Exits non-zero when a seed fails these; the RESULT lines count the seeds that pass, and
# those whose leaves are exact (the target: every seed passes, leaves exact in 10 of 12).
#
#   sudo benches/testbed-random.sh                 # seeds 1-12
#   sudo SEEDS="3 7 21" benches/testbed-random.sh  # these seeds
#   sudo benches/testbed-random.sh --keep DIR      # keeps each seed's run directory in DIR
#   benches/testbed-random.sh --rescore DIR        # clusters DIR's kept runs again and judges them
#   sudo MEASURE_ARGS="--estimator p10" benches/testbed-random.sh   # measure with these options
#   sudo LGATE_BIN=/tmp/lgate-before benches/testbed-random.sh     # another build, side by side
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
. benches/lib.sh
keep="" rescore=""
if [ "${1:-}" = --keep ]; then keep="$2"; mkdir -p "$keep"; fi
if [ "${1:-}" = --rescore ]; then rescore="$2"; fi
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/lgate-plogp/target}"
# LGATE_BIN=PATH: another build of the tool (an earlier commit's), to set beside this one.
bin="${LGATE_BIN:-$CARGO_TARGET_DIR/release/lgate-plogp}"
[ -n "${LGATE_BIN:-}" ] || cargo build --release --quiet
seeds="${SEEDS:-$(seq -s ' ' 1 12)}"
work="$(mktemp -d)"
export LGATE_TESTBED_STATE="$work/testbed"
cleanup() {
    "$repo/scripts/testbed" down >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

# The verdict on one seed: the truth (truth.json) against the topology `cluster` wrote.
judge() {
    python3 - "$1" "$2" <<'EOF'
import json, sys
from collections import Counter
truth = json.load(open(sys.argv[1]))["levels"]
found = json.load(open(sys.argv[2]))
n = len(truth["host"])

def labels(groups):
    out = [None] * n
    for g, ranks in enumerate(groups):
        for r in ranks:
            out[r] = g
    return out

def ari(a, b):
    pairs = lambda k: k * (k - 1) / 2
    index = sum(pairs(k) for k in Counter(zip(a, b)).values())
    sa = sum(pairs(k) for k in Counter(a).values())
    sb = sum(pairs(k) for k in Counter(b).values())
    expected = sa * sb / max(pairs(n), 1)
    top = (sa + sb) / 2
    if abs(top - expected) < 1e-12:
        return 1.0 if abs(index - expected) < 1e-12 else 0.0
    return (index - expected) / (top - expected)

def same(a, b):
    return ari(a, b) > 1 - 1e-9

kept = [labels(l["groups"]) for l in found["levels"]]
undecided = [labels(u["members"]) for u in (found.get("confidence") or {}).get("undecided", []) if u.get("members")]
candidates = kept + [[0] * n, list(range(n))]
scores, problems, leaves_exact = [], [], True
for name in ("group", "leaf", "host"):
    if name not in truth:
        continue
    t = truth[name]
    best = max(ari(t, f) for f in candidates)
    scores.append("%s=%.3f" % (name, best))
    if best > 1 - 1e-9:
        continue
    if name != "host":
        leaves_exact = False
    if name == "host" or not any(same(t, u) for u in undecided):
        problems.append("%s missed" % name)
    else:
        scores[-1] += "(undecided)"
true_levels = [truth[k] for k in truth] + [[0] * n, list(range(n))]
invented = [len(set(f)) for f in kept if not any(same(f, t) for t in true_levels)]
if invented:
    problems.append("invented %s" % ", ".join("%d groups" % g for g in invented))
und = (found.get("confidence") or {}).get("undecided", [])
print("%s | kept %s | undecided %s | %s" % (
    " ".join(scores),
    ", ".join(str(len(l["groups"])) for l in found["levels"]) or "none",
    ", ".join("%d (%.0f %%)" % (u["groups"], 100 * u["share"]) for u in und) or "none",
    ("FAIL: " + "; ".join(problems)) if problems else ("PASS exact" if leaves_exact else "PASS undecided")))
EOF
}

# --rescore DIR: the runs kept by --keep DIR clustered again by this build and judged against
# the truth kept beside them (no testbed, no root: for a change to the clustering).
if [ -n "$rescore" ]; then
    passed=0 exact=0 total=0
    for truth in "$rescore"/truth-*.json; do
        seed="${truth##*/truth-}" seed="${seed%.json}"
        rm -rf "$rescore/run-$seed/clustered"
        verdict="FAIL: cluster failed"
        if "$bin" cluster "$rescore/run-$seed" --output "$work/found.json" --force --quiet 2>"$work/cluster.log"; then
            verdict=$(judge "$truth" "$work/found.json")
        fi
        total=$((total + 1))
        case "$verdict" in *"PASS exact") passed=$((passed + 1)) exact=$((exact + 1)) ;; *PASS*) passed=$((passed + 1)) ;; esac
        printf '%-5s %s\n' "$seed" "$verdict"
    done
    result "kept random fabrics passing" "$passed" ">=" "$total" "of $total"
    result "kept random fabrics with every level exact" "$exact" ">=" "$(( (total * 10 + 11) / 12 ))" "of $total"
    exit "$bench_failed"
fi

passed=0 exact=0 total=0
printf '%-5s %-62s %6s  %s\n' seed fabric "wall s" "ARI per true level | kept | undecided | verdict"
for seed in $seeds; do
    fabric="$("$repo/scripts/testbed" random "$seed")"
    if ! "$repo/scripts/testbed" up --random "$seed" 2>"$work/up.log"; then
        # A testbed left up by another state folder, a missing tool: said, not a silent exit.
        echo "testbed-random: seed $seed: the testbed did not come up:" >&2
        tail -n 5 "$work/up.log" >&2
        exit 1
    fi
    run="$work/run-$seed.$total"
    start=$(date +%s.%N)
    verdict="FAIL: measure failed"
    if "$repo/scripts/testbed" run --timeout 300 -- "$bin" measure --output "$run" --quiet ${MEASURE_ARGS:-} >"$work/measure.log" 2>&1 &&
        "$bin" cluster "$run" --output "$work/found.json" --force --quiet 2>"$work/cluster.log"; then
        wall=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
        verdict=$(judge "$LGATE_TESTBED_STATE/truth.json" "$work/found.json")
    else
        wall="-"
        tail -n 3 "$work/measure.log" "$work/cluster.log" >&2 || true
    fi
    if [ -n "$keep" ] && [ -d "$run" ]; then
        rm -rf "$keep/run-$seed" && cp -r "$run" "$keep/run-$seed"
        cp "$LGATE_TESTBED_STATE/truth.json" "$keep/truth-$seed.json"
    fi
    "$repo/scripts/testbed" down 2>"$work/up.log" || { tail -n 5 "$work/up.log" >&2; exit 1; }
    total=$((total + 1))
    case "$verdict" in *"PASS exact") passed=$((passed + 1)) exact=$((exact + 1)) ;; *PASS*) passed=$((passed + 1)) ;; esac
    printf '%-5s %-62s %6s  %s\n' "$seed" "$(echo "$fabric" | sed 's/--leaves /L/; s/ --hosts-per-leaf /xH/; s/ --ranks-per-host /xR/; s/ --host-rate 2gbit//; s/ --uplink-rate / up /; s/ --extra-hops / hops /; s/ --groups / groups /; s/ --global-rate / global /')" "$wall" "$verdict"
done
result "random fabrics passing (hosts exact, leaves exact or undecided, nothing invented)" "$passed" ">=" "$total" "of $total"
result "random fabrics with every level exact" "$exact" ">=" "$(( (total * 10 + 11) / 12 ))" "of $total"
exit "$bench_failed"
