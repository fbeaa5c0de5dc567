#!/usr/bin/env bash
# What a waiting rank costs on the emulated cluster (issue 45: at most 0.5 % of a core at a few
# dozen ranks): brings up `scripts/testbed` with LEAVES x HOSTS x RANKS, runs `lgate-plogp
# measure` (the defaults, then any options given after `--`) RUNS times, and prints per run the
# wall time and the share of a core the ranks used while they waited (meta.json's
# summary.rank_time: CPU over wall time of each rank's waits, from getrusage outside timed
# code), the mean over ranks, the highest rank, and rank 0's (which also collects). Exits
# non-zero when the median over runs of the mean is above LIMIT percent, or any rank's share in
# any run above LIMIT_MOST (1 %). Needs root.
#
#   sudo benches/testbed-waiting.sh                          # 4 x 4 x 2 = 32 ranks, 3 runs
#   sudo LEAVES=2 HOSTS=4 RUNS=5 benches/testbed-waiting.sh -- --plan full --max-size 4KiB
#   sudo LEAVES=3 UPLINK=4gbit benches/testbed-waiting.sh    # 24 ranks, short runs (uplinks 200mbit unless given)
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/lib.sh
leaves=${LEAVES:-4} hosts=${HOSTS:-4} ranks=${RANKS:-2} runs=${RUNS:-3} limit=${LIMIT:-0.5}
if [ "${1:-}" = "--" ]; then shift; fi
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/lgate-plogp/target}"
cargo build --release --quiet
bin="$CARGO_TARGET_DIR/release/lgate-plogp"
work=$(mktemp -d)
export LGATE_TESTBED_STATE="$work/testbed"
trap 'scripts/testbed down >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
scripts/testbed up --leaves "$leaves" --hosts-per-leaf "$hosts" --ranks-per-host "$ranks" --uplink-rate "${UPLINK:-200mbit}" 2>&1 | tail -1
echo "machine: $(nproc) cores, $((leaves * hosts * ranks)) ranks; options: ${*:-(defaults)}"
for k in $(seq "$runs"); do
    scripts/testbed run --timeout 600 -- "$bin" measure --quiet --output "$work/run$k" "$@" \
        2> >(grep -v setpgid >&2)
done
python3 - "$work" "$runs" "$limit" >"$work/shares" <<'PY'
import json, statistics, sys
work, runs, limit = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
means, tops = [], []
for k in range(1, runs + 1):
    s = json.load(open(f"{work}/run{k}/meta.json"))["summary"]
    share = {t["rank"]: 100 * t["waiting_cpu_s"] / t["waiting_s"]
             for t in s.get("rank_time", []) if t["waiting_s"] > 0}
    mean = statistics.mean(share.values())
    means.append(mean)
    top = max(share, key=share.get)
    tops.append(share[top])
    print(f"run {k}: {s['wall_s']:6.1f} s; waiting ranks {mean:.2f}% of a core on average, "
          f"rank {top} {share[top]:.2f}% the most, rank 0 {share.get(0, float('nan')):.2f}%")
median = statistics.median(means)
print(f"median over runs of the mean waiting share: {median:.2f}% of a core (limit {limit}%)")
print(f"SHARES\t{median:.2f}\t{max(tops):.2f}")
PY
grep -v '^SHARES' "$work/shares"
read -r _ mean most < <(grep '^SHARES' "$work/shares")
ranks=$((leaves * hosts * ranks))
result "waiting ranks on the testbed, $ranks ranks: mean (median of runs)" "$mean" "<=" "$limit" "% of a core"
result "waiting ranks on the testbed, $ranks ranks: the most of any rank" "$most" "<=" "${LIMIT_MOST:-1}" "% of a core"
exit "$bench_failed"
