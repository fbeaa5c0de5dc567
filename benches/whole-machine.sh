#!/usr/bin/env bash
# The whole machine without a dense matrix: BETZY-like machines of H hosts of 2 x 64 cores (every
# artifact on, the staged plan, defaults) simulated, clustered, exported for Slurm and
# reported, each step a whole process, as a user types them (the export and the report reuse
# the clustering `cluster` stored in the run directory). Prints each step's wall time and peak memory, the run
# directory's size and the adjusted Rand index of every level against the placement the
# simulation knows; fails past the targets of issue 44.
#
#   benches/whole-machine.sh            # 16 384 ranks (128 hosts) and 128 000 (1000 hosts)
#   benches/whole-machine.sh 128 1000 8192    # hosts; 8192 hosts is 1 048 576 ranks
#
# Targets (whole job: simulate + cluster + Slurm export + report):
#   16 384 ranks:     simulate + cluster <= 10 s, each <= 1 GiB
#   128 000 ranks:    <= 120 s, <= 4 GiB, run directory <= 1 GiB, every level ARI 1
#   1 048 576 ranks:  <= 900 s, <= 16 GiB
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/lib.sh
release_bin
work="${WORK:-$(mktemp -d)}"
trap 'rm -rf "$work"' EXIT
hosts_list=("$@")
if [ ${#hosts_list[@]} -eq 0 ]; then hosts_list=(128 1000); fi

# Runs STEP NAME COMMAND...: its wall time and peak memory into $wall and $mib.
step() {
    local name="$1"
    shift
    /usr/bin/time -f '%e %M' -o "$work/time" "$@" >"$work/$name.out" 2>"$work/$name.err" || {
        echo "$name failed:" >&2
        tail -5 "$work/$name.err" >&2
        exit 1
    }
    read -r wall kb <"$work/time"
    mib=$((kb / 1024))
    printf '  %-10s %8.2f s %8d MiB\n' "$name" "$wall" "$mib"
}

for hosts in "${hosts_list[@]}"; do
    ranks=$((hosts * 128))
    run="$work/run"
    echo "$hosts hosts x 128 = $ranks ranks"
    step simulate "$bin" simulate --preset betzy --machine "node=$hosts,socket=2,core=64" \
        --artifacts all --output "$run" --force --quiet
    sim_s=$wall sim_mib=$mib
    step cluster "$bin" cluster "$run" --output "$work/topology.json" --force --quiet
    cl_s=$wall cl_mib=$mib
    step slurm "$bin" cluster "$run" --format slurm --output "$work/topology.conf" --force \
        --quiet
    sl_s=$wall sl_mib=$mib
    step report "$bin" report "$run" --output "$work/report.html" --force
    rp_s=$wall rp_mib=$mib
    disk=$(du -sm "$run" | cut -f1)
    total=$(awk -v a="$sim_s" -v b="$cl_s" -v c="$sl_s" -v d="$rp_s" 'BEGIN { print a + b + c + d }')
    peak=$(printf '%s\n' "$sim_mib" "$cl_mib" "$sl_mib" "$rp_mib" | sort -n | tail -1)
    "$bin" score --topology "$work/topology.json" --truth "$run" >"$work/score.txt"
    sed 's/^/  /' "$work/score.txt"
    worst=$(awk 'NR > 1 && $0 !~ /one rank each/ { print $(NF - 1) }' "$work/score.txt" | sort -g | head -1)
    printf '  whole job %.2f s, peak %d MiB, run directory %d MiB, worst level ARI %s\n' \
        "$total" "$peak" "$disk" "${worst:-none}"
    case "$ranks" in
    16384)
        result "16k ranks: simulate + cluster" \
            "$(awk -v a="$sim_s" -v b="$cl_s" 'BEGIN { print a + b }')" "<=" 10 s
        result "16k ranks: peak memory" "$peak" "<=" 1024 MiB
        ;;
    128000)
        result "128k ranks: whole job" "$total" "<=" 120 s
        result "128k ranks: report + Slurm export" \
            "$(awk -v a="$sl_s" -v b="$rp_s" 'BEGIN { print a + b }')" "<=" 20 s
        result "128k ranks: peak memory" "$peak" "<=" 4096 MiB
        result "128k ranks: run directory" "$disk" "<=" 1024 MiB
        ;;
    1048576)
        result "1M ranks: whole job" "$total" "<=" 900 s
        result "1M ranks: peak memory" "$peak" "<=" 16384 MiB
        ;;
    esac
    result "$ranks ranks: worst level ARI" "${worst:-}" ">=" 1
    rm -rf "$run"
done
exit "$bench_failed"
