#!/usr/bin/env bash
# `diff` of two whole-machine runs (issue 62): two simulated BETZY-like machines of H hosts of
# 2 x 64 cores (every artifact on, the staged plan, host blocks only), the second with one
# host planted 1.3x slower, then `diff A B` as a user types it. Prints diff's wall time and
# peak memory and whether it named the planted host; fails past the targets.
#
#   benches/diff-at-scale.sh          # 1000 hosts: 128 000 ranks
#   benches/diff-at-scale.sh 128      # 16 384 ranks
#
# Targets at 128 000 ranks: diff <= 67 s, <= 4 GiB; the planted host named.
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/lib.sh
release_bin
work="${WORK:-$(mktemp -d)}"
trap 'rm -rf "$work"' EXIT
hosts="${1:-1000}"
ranks=$((hosts * 128))
# The planted host by number; its name as the simulation writes it (numbers padded to the
# widest).
planted_number=$((hosts / 2))
last=$((hosts - 1))
planted=$(printf "betzy-n%0${#last}d" "$planted_number")
machine="node=$hosts,socket=2,core=64"
echo "$hosts hosts x 128 = $ranks ranks; B has $planted 1.3x slower"
"$bin" simulate --preset betzy --machine "$machine" --artifacts all --seed 1 \
    --output "$work/a" --force --quiet
"$bin" simulate --preset betzy --machine "$machine" --artifacts all --seed 2 \
    --slow-host "$planted_number=1.3" --output "$work/b" --force --quiet
# diff exits 1 when something changed (as here), 2 on an error.
status=0
/usr/bin/time -f '%e %M' -o "$work/time" "$bin" diff "$work/a" "$work/b" \
    >"$work/diff.out" 2>"$work/diff.err" || status=$?
if [ "$status" -ne 1 ]; then
    echo "diff exited $status (1 expected: B has a slower host):" >&2
    tail -5 "$work/diff.err" "$work/diff.out" >&2
    exit 1
fi
# time(1) writes "Command exited with non-zero status 1" above its figures.
read -r wall kb < <(tail -n 1 "$work/time")
mib=$((kb / 1024))
printf '  diff %8.2f s %8d MiB\n' "$wall" "$mib"
grep -E "^  (host|link|rank) " "$work/diff.out" | head -5 | sed 's/^/  /'
named=0
if grep -qE "^  host $planted: \+" "$work/diff.out"; then named=1; fi
result "$ranks ranks: diff of two runs" "$wall" "<=" 67 s
result "$ranks ranks: diff peak memory" "$mib" "<=" 4096 MiB
result "$ranks ranks: diff names the planted slow host" "$named" ">=" 1
exit "$bench_failed"
