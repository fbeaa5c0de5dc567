#!/usr/bin/env bash
# Side by side with the tools HPC users already trust, on this machine: the OSU Micro-Benchmarks
# (osu_latency, osu_bw) and lgate-plogp, for the same two ranks (bound to two cores), run back to
# back and interleaved: ROUNDS rounds, each running osu_latency, our ping-pong, osu_bw and our
# PLogP test once. Prints the medians and ranges over the rounds, per size:
#   - osu_latency (half a ping-pong of m bytes each way, the mean of a timed block of
#     iterations) next to our ping-pong's RTT(m)/2 (the median of repetitions timed one by one);
#   - our PLogP RTT(m) (m bytes out, an empty reply back) made comparable through the model:
#     RTT(m) = 2L + g(m) + g(0) and RTT(0) = 2L + 2g(0), so a one-way time of m bytes,
#     L + g(m), is RTT(m) - RTT(0)/2;
#   - osu_bw (a window of 64 messages in flight, MB = 10^6 bytes) next to m / g(m), the
#     bandwidth PLogP's gap gives, as `lgate-plogp sizes --format csv` prints it.
# The peers are built from ../shared/peers with their own build script (never copied).
# With TESTBED=1 (root) it then runs benches/testbed-vs-mpigraph.sh: mpiGraph next to
# `measure` on the emulated cluster (time to topology and the levels each recovers).
#
#   benches/peers-side-by-side.sh                 # ROUNDS=5
#   ROUNDS=9 TESTBED=1 benches/peers-side-by-side.sh
#
# The README's "Already using OSU or mpiGraph?" table comes from this script.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
rounds=${ROUNDS:-5}
# Repetitions of our ping-pong per size: as many as osu_latency times above 8 KiB (it times
# 10000 below); the default, 32, is what a topology needs per pair, not a reference figure.
reps=${REPS:-1000}
if [ -f "$HOME/.cargo/env" ]; then . "$HOME/.cargo/env"; fi
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/lgate-plogp/target}"
cargo build --release --quiet
bin="$CARGO_TARGET_DIR/release/lgate-plogp"
peers="${PEERS:-$repo/../shared/peers}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$peers/build" "$work/peers" >/dev/null
launch=(mpirun --bind-to core --map-by core -np 2)
# OSU's sizes: 0 and 1 B to 4 MiB in powers of two.
sizes="0$(for k in $(seq 0 22); do printf ',%d' $((1 << k)); done)"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(mpirun --version | head -1)"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); $rounds rounds, interleaved"
for r in $(seq "$rounds"); do
    "${launch[@]}" "$work/peers/osu_latency" >"$work/osu_latency.$r"
    "${launch[@]}" "$bin" measure --test pingpong --plan full --sizes "$sizes" --reps "$reps" --quiet \
        --output "$work/pingpong.$r"
    "${launch[@]}" "$work/peers/osu_bw" >"$work/osu_bw.$r"
    "${launch[@]}" "$bin" measure --plan full --max-size 4MiB --csv --quiet --output "$work/plogp.$r"
    "$bin" sizes "$work/plogp.$r" --units MB/s --format csv >"$work/sizes.$r.csv"
done
python3 - "$work" "$rounds" <<'PY'
import csv, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])

def osu(name):
    """Per size, the value of each round."""
    out = {}
    for r in range(1, rounds + 1):
        for line in open(f"{work}/{name}.{r}"):
            cells = line.split()
            if len(cells) == 2 and not line.startswith("#"):
                out.setdefault(int(cells[0]), []).append(float(cells[1]))
    return out

def ours_pingpong():
    out = {}
    for r in range(1, rounds + 1):
        for row in csv.DictReader(open(f"{work}/pingpong.{r}/pingpong.csv")):
            out.setdefault(int(row["size_bytes"]), []).append(float(row["rtt_median_us"]) / 2)
    return out

def ours_plogp():
    """Per (parameter, size), the pair's median of each round."""
    out = {}
    for r in range(1, rounds + 1):
        for row in csv.DictReader(open(f"{work}/plogp.{r}/measurements.csv")):
            key = (row["parameter"], int(row["size_bytes"]))
            out.setdefault(key, []).append(float(row["median_us"]))
    return out

def ours_bandwidth():
    """Per size, `sizes`' bandwidth (MB/s) of each round."""
    out = {}
    for r in range(1, rounds + 1):
        for row in csv.DictReader(open(f"{work}/sizes.{r}.csv")):
            if row["bandwidth_mb_per_s"]:
                out.setdefault(int(row["size_bytes"]), []).append(float(row["bandwidth_mb_per_s"]))
    return out

def cell(values, digits=2):
    lo, mid, hi = min(values), statistics.median(values), max(values)
    return f"{lo:.{digits}f}-{hi:.{digits}f}, {mid:.{digits}f}"

def spread(values):
    return (max(values) - min(values)) / statistics.median(values) if statistics.median(values) else 0.0

def size_name(m):
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if m >= 1 << shift and m % (1 << shift) == 0:
            return f"{m >> shift} {unit}"
    return f"{m} B"

lat, bw, pp, plogp = osu("osu_latency"), osu("osu_bw"), ours_pingpong(), ours_plogp()
sizes_bw = ours_bandwidth()
rtt0 = [v for v in plogp.get(("rtt", 0), [])]
print()
print("| size | `osu_latency`, us (range, median) | ping-pong RTT/2, us | ours / OSU | spread OSU / ours | PLogP RTT(m) - RTT(0)/2, us | `osu_bw`, MB/s | m / g(m), MB/s |")
print("|---|---|---|---|---|---|---|---|")
worst = 0.0
wider = []
for m in sorted(lat):
    if m not in pp:
        continue
    ratio = statistics.median(pp[m]) / statistics.median(lat[m])
    worst = max(worst, abs(ratio - 1))
    if spread(pp[m]) > spread(lat[m]):
        wider.append(size_name(m))
    rtt = plogp.get(("rtt", m))
    one_way = "" if not rtt or not rtt0 else cell([a - b / 2 for a, b in zip(rtt, rtt0)])
    ours_bw = cell(sizes_bw[m], 0) if m in sizes_bw else ""
    osu_bw = cell(bw[m], 0) if m in bw else ""
    print(f"| {size_name(m)} | {cell(lat[m])} | {cell(pp[m])} | {ratio:.2f} | "
          f"{spread(lat[m]):.2f} / {spread(pp[m]):.2f} | {one_way} | {osu_bw} | {ours_bw} |")
print()
print(f"largest difference of the medians, ping-pong against osu_latency: {100 * worst:.0f} %")
print("sizes where our run-to-run spread is wider than OSU's: " + (", ".join(wider) or "none"))
PY
if [ "${TESTBED:-0}" = 1 ]; then
    echo
    "$repo/benches/testbed-vs-mpigraph.sh"
fi
