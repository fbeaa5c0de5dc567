#!/usr/bin/env bash
# lgate-plogp cluster against the Python stack the thesis used (hdbscan, kmedoids,
# scikit-learn AgglomerativeClustering, SpectralClustering and KMeans, the CSV loaded with
# numpy), whole process, on the same CSV matrices of P = 512, 2048 and 4096 ranks.
# SpectralClustering(affinity="precomputed") gets the affinity `--algo spectral` makes (a
# Gaussian kernel scaled by each rank's distance to its 7th nearest rank, zero diagonal),
# computed in numpy inside the timed process; KMeans clusters the rows of the matrix, as
# `--algo kmeans` does. Installs the peers into a virtual environment
# (they are only benchmarked, never linked), prints both times and the ratio, and checks that
# FasterPAM here and the `kmedoids` package reach the same loss.
#
# At P = 4096, where the targets are, each side's time is the median of RUNS runs (3 unless
# set), taken in turns: one run of a 0.25 s process moves by 0.05-0.1 s on this machine.
#
#   benches/python-peer.sh [WORKDIR]
#   ALGOS="spectral kmeans" benches/python-peer.sh [WORKDIR]   (some of the algorithms only)
set -euo pipefail
# A failing command inside $(...) stops the script too: a missing binary is no 0 s result.
shopt -s inherit_errexit
cd "$(dirname "$0")/.."
. benches/lib.sh
work="${1:-$(mktemp -d)}"
algos="${ALGOS:-hdbscan kmedoids agglomerative spectral kmeans}"
mkdir -p "$work"
if [ -f "$HOME/.cargo/env" ]; then . "$HOME/.cargo/env"; fi
cargo build --release --quiet
target_dir="${CARGO_TARGET_DIR:-target}"
case "$target_dir" in /*) ;; *) target_dir="$(pwd)/$target_dir" ;; esac
bin="$target_dir/release/lgate-plogp"
venv="$work/venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet numpy scipy scikit-learn hdbscan kmedoids
fi
py="$venv/bin/python"
"$py" - "$work" <<'PY'
import sys, numpy as np
work = sys.argv[1]
rng = np.random.default_rng(1)
for n in (512, 2048, 4096):
    r = np.arange(n)
    d = np.full((n, n), 3.0)
    d[(r[:, None] // 1024) == (r[None, :] // 1024)] = 1.8
    d[(r[:, None] // 64) == (r[None, :] // 64)] = 0.8
    d[(r[:, None] // 32) == (r[None, :] // 32)] = 0.4
    d *= np.exp(rng.uniform(-0.03, 0.03, (n, n)))
    d = (d + d.T) / 2
    np.fill_diagonal(d, 0)
    np.savetxt(f"{work}/m{n}.csv", d, delimiter=",", fmt="%.6f")
PY
peer() { # algo n
  "$py" - "$1" "$work/m$2.csv" "$2" <<'PY'
import sys, numpy as np
algo, path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
d = np.loadtxt(path, delimiter=",")
if algo == "hdbscan":
    import hdbscan
    hdbscan.HDBSCAN(metric="precomputed", min_cluster_size=16, min_samples=4).fit(d)
elif algo == "kmedoids":
    import kmedoids
    print(kmedoids.fasterpam(d, n // 64, random_state=0).loss)
elif algo == "agglomerative":
    from sklearn.cluster import AgglomerativeClustering
    AgglomerativeClustering(n_clusters=n // 64, metric="precomputed", linkage="average").fit(d)
elif algo == "spectral":
    from sklearn.cluster import SpectralClustering
    s = np.partition(d, 7, axis=1)[:, 7]  # the 7th nearest other rank (the row holds 0 for itself)
    w = np.exp(-d * d / np.outer(s, s))
    np.fill_diagonal(w, 0)
    SpectralClustering(n_clusters=n // 64, affinity="precomputed", random_state=0).fit(w)
elif algo == "kmeans":
    from sklearn.cluster import KMeans
    KMeans(n_clusters=n // 64, random_state=0).fit(d)
PY
}
ours() { # algo n
  case "$1" in
    hdbscan) "$bin" cluster "$work/m$2.csv" -q --algo hdbscan --min-cluster-size 16 --min-samples 4 ;;
    kmedoids) "$bin" cluster "$work/m$2.csv" -q --algo kmedoids --k $(($2 / 64)) ;;
    agglomerative) "$bin" cluster "$work/m$2.csv" -q --algo agglomerative --linkage average --k $(($2 / 64)) ;;
    spectral|kmeans) "$bin" cluster "$work/m$2.csv" -q --algo "$1" --k $(($2 / 64)) ;;
    auto) "$bin" cluster "$work/m$2.csv" -q ;;
  esac
}
# Wall time of a command in milliseconds.
millis() { local s e; s=$(date +%s%N); "$@" > "$work/last.out"; e=$(date +%s%N); echo $(( (e - s) / 1000000 )); }
secs() { printf '%d.%02d' $(($1 / 1000)) $((($1 % 1000) / 10)); }
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf '%-14s %6s %10s %10s %7s\n' algorithm P python_s ours_s ratio
for n in 512 2048 4096; do
  runs=1; [ "$n" = 4096 ] && runs=${RUNS:-3}
  for algo in $algos; do
    ps=() os=()
    for _ in $(seq "$runs"); do
      ps+=("$(millis peer "$algo" "$n")"); [ "$algo" = kmedoids ] && cp "$work/last.out" "$work/py-loss"
      os+=("$(millis ours "$algo" "$n")"); [ "$algo" = kmedoids ] && cp "$work/last.out" "$work/our-topology.json"
    done
    p=$(median "${ps[@]}") o=$(median "${os[@]}")
    ratio=$("$py" -c "print(f'{$p / max($o, 1):.1f}')")
    printf '%-14s %6d %10s %10s %6sx\n' "$algo" "$n" "$(secs "$p")" "$(secs "$o")" "$ratio"
    case "$n:$algo" in
    4096:hdbscan | 4096:kmedoids | 4096:agglomerative)
      result "$algo at P = 4096: Python's time over ours" "$ratio" ">=" 10 x ;;
    esac
    if [ "$algo" = kmedoids ]; then
      "$py" - "$work/m$n.csv" "$work/our-topology.json" "$(cat "$work/py-loss")" <<'PY'
import sys, json, numpy as np
d = np.loadtxt(sys.argv[1], delimiter=",")
groups = json.load(open(sys.argv[2]))["levels"][0]["groups"]
# The loss of our partition with each group's best medoid.
loss = sum(min(d[np.ix_(g, g)].sum(axis=0)) for g in groups)
peer = float(sys.argv[3])
print(f"               FasterPAM loss here {loss:.4f}, kmedoids package {peer:.4f} (ratio {loss / peer:.4f})")
PY
    fi
  done
  o=$(millis ours auto "$n"); printf '%-14s %6d %10s %10s\n' auto "$n" "-" "$(secs "$o")"
done
# Peak memory of each run here at the largest size, against the matrix in f64 (the target is at
# most twice it), measured by the venv's Python as the child's maximum resident set.
n=4096
printf '\n%-14s %6s %9s %9s\n' algorithm P peak_MiB x_matrix
for algo in $algos auto; do
  kib=$("$py" - "$algo" "$n" "$bin" "$work/m$n.csv" <<'PY'
import resource, subprocess, sys
algo, n, binary, path = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
extra = {"hdbscan": ["--algo", "hdbscan", "--min-cluster-size", "16", "--min-samples", "4"],
         "kmedoids": ["--algo", "kmedoids", "--k", str(n // 64)],
         "agglomerative": ["--algo", "agglomerative", "--linkage", "average", "--k", str(n // 64)],
         "spectral": ["--algo", "spectral", "--k", str(n // 64)],
         "kmeans": ["--algo", "kmeans", "--k", str(n // 64)],
         "auto": []}[algo]
subprocess.run([binary, "cluster", path, "-q", *extra], check=True, stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
PY
)
  printf '%-14s %6d %9d %9s\n' "$algo" "$n" $((kib / 1024)) "$("$py" -c "print(f'{$kib * 1024 / ($n * $n * 8):.2f}')")"
done
exit "$bench_failed"
