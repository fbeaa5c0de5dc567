#!/usr/bin/env bash
# Does `simulate --estimate-time` hold for real runs? Measures two ranks of this machine (shared
# memory) with `measure --plan full`, turns the measured PLogP parameters of that pair into a
# one-level machine model (benches/estimate_check.py model), and compares the model's estimate
# of each kind of pair test with the real tests' median time: the staged plan's screening and
# sample tests (a staged run) and the full plan's PLogP test. Prints the ratios measured /
# estimated and fails above a factor 1.5 either way. benches/testbed-vs-mpigraph.sh does the
# same on the emulated cluster.
#
#   benches/estimate-vs-measure.sh          # 5 sweeps of each plan
#   SWEEPS=10 benches/estimate-vs-measure.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/lgate-plogp/target}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cargo build --release --quiet
bin="$CARGO_TARGET_DIR/release/lgate-plogp"
sweeps="${SWEEPS:-5}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

mpirun --oversubscribe -np 2 "$bin" measure --plan full --journal json --sweeps "$sweeps" --output "$work/full" --quiet
mpirun --oversubscribe -np 2 "$bin" measure --journal json --sweeps "$sweeps" --output "$work/staged" --quiet
python3 benches/estimate_check.py model "$work/full/journal.jsonl" - "$work/model.json"
"$bin" simulate --model "$work/model.json" --estimate-time >"$work/staged.txt"
"$bin" simulate --model "$work/model.json" --plan full --estimate-time >"$work/full.txt"
python3 benches/estimate_check.py compare "$work/staged" "$work/staged.txt" "$work/full" "$work/full.txt"
