#!/usr/bin/env python3
"""Checks `lgate-plogp simulate --estimate-time` against real runs (used by
benches/estimate-vs-measure.sh and benches/testbed-vs-mpigraph.sh).

  estimate_check.py model JOURNAL TRUTH|- OUT.json
      A machine model from the PLogP results of a `measure --plan full` journal: one link per
      level at which two ranks part (with TRUTH, a testbed's truth.json: core inside a host,
      node inside a leaf, leaf across leaves; with -, one level `core` of two ranks), each the
      medians of its pairs' L, g(m), o_s(m) and o_r(m). Measured values already hold every
      protocol step, so the model has no eager limit and no rendezvous step.

  estimate_check.py compare STAGED_RUN STAGED_ESTIMATE [FULL_RUN FULL_ESTIMATE]
      Each kind of pair test's measured median against its estimated time; prints a line per
      kind and the worst factor (target: 1.5 either way), exits 1 above it.
"""
import json
import re
import statistics
import sys

US = 1e6


def entries(journal):
    for line in open(journal):
        try:
            yield json.loads(line)
        except ValueError:
            return  # a torn last line, as a killed run leaves


def link(results):
    by_size, latency = {}, []
    for r in results:
        sizes = {s["size"]: s for s in r["sizes"]}
        zero = sizes[0]
        g0 = zero["g"]["median"]
        latency.append((zero["rtt"]["median"] - 2 * g0) / 2)
        for m, s in sizes.items():
            g = s["g"]["median"] if s.get("g") else s["rtt"]["median"] - zero["rtt"]["median"] + g0
            by_size.setdefault(m, []).append((g, s["os"]["median"], s["or"]["median"]))

    def curve(k):
        return [[float(m), US * statistics.median(v[k] for v in by_size[m])] for m in sorted(by_size)]

    return {"latency_us": max(US * statistics.median(latency), 0.01), "g_us": curve(0),
            "os_us": curve(1), "or_us": curve(2), "rendezvous_us": 0.0}


def model(journal, truth, out):
    per_kind = {}
    if truth == "-":
        levels = [("core", 2)]
        kind_of = lambda i, j: "core"
    else:
        t = json.load(open(truth))["levels"]
        host, leaf = t["host"], t["leaf"]
        hosts, leaves = len(set(host)), len(set(leaf))
        levels = [("leaf", leaves), ("node", hosts // leaves), ("core", len(host) // hosts)]
        kind_of = lambda i, j: "core" if host[i] == host[j] else "node" if leaf[i] == leaf[j] else "leaf"
    for e in entries(journal):
        per_kind.setdefault(kind_of(e["i"], e["j"]), []).append(e["result"])
    missing = [n for n, _ in levels if n not in per_kind]
    if missing:
        sys.exit("the run measured no pair parting at " + ", ".join(missing))
    json.dump({"format": "lgate-plogp-model", "version": 1, "name": "measured",
               "description": "from the PLogP results of " + journal,
               "levels": [{"name": n, "fanout": f} for n, f in levels], "placement": "block",
               "eager_limit_bytes": 1 << 50,
               "links": {k: link(v) for k, v in per_kind.items()},
               "noise": {"sigma": 0.05, "batch_jitter_us": 1.0}, "reps": 32},
              open(out, "w"), indent=1)


def seconds(text):
    n, unit = re.match(r"([0-9.]+) (us|ms|s|min)", text).groups()
    return float(n) * {"us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0}[unit]


def measured(run, stage=None):
    d = [e["end_s"] - e["start_s"] for e in entries(run + "/journal.jsonl") if e.get("stage") == stage]
    return (statistics.median(d), len(d)) if d else (float("nan"), 0)


def compare(staged_run, staged_estimate, full_run=None, full_estimate=None):
    staged = open(staged_estimate).read()
    rows = [("screening test inside a host", measured(staged_run, "hosts"),
             seconds(re.search(r"stage hosts: .*: (.*)", staged).group(1)))]
    between = re.search(r"stage between: +(\d+) screening tests in (\d+) rounds: (.*)", staged)
    if int(between.group(1)) > 0:
        # A round is as long as its slowest meeting's tests one after another.
        groups = int(re.search(r"plan: staged, (\d+) group", staged).group(1))
        per_meeting = int(between.group(1)) / (groups * (groups - 1) / 2)
        per_round = seconds(between.group(3)) / int(between.group(2))
        rows.append(("screening test between hosts", measured(staged_run, "between"),
                     per_round / per_meeting))
    sample = re.search(r"stage sample: +(\d+) full .*: (.*)", staged)
    rows.append(("PLogP test of the sample", measured(staged_run, "sample"),
                 seconds(sample.group(2)) / int(sample.group(1))))
    if full_run:
        full = open(full_estimate).read()
        rows.append(("PLogP test, full plan", measured(full_run),
                     seconds(re.search(r"pair tests: \d+, (.*?) on average", full).group(1))))
    worst = 1.0
    print("%-32s %12s %12s %7s" % ("pair test", "measured", "estimated", "ratio"))
    for name, (m, n), e in rows:
        ratio = m / e
        worst = max(worst, ratio, 1 / ratio)
        print("%-32s %10.3f ms %10.3f ms %7.2f  (median of %d)" % (name, 1e3 * m, 1e3 * e, ratio, n))
    print("worst factor %.2f (target <= 1.5): %s" % (worst, "ok" if worst <= 1.5 else "OVER"))
    return worst <= 1.5


if __name__ == "__main__":
    if sys.argv[1:2] == ["model"] and len(sys.argv) == 5:
        model(*sys.argv[2:])
    elif sys.argv[1:2] == ["compare"] and len(sys.argv) in (4, 6):
        sys.exit(0 if compare(*sys.argv[2:]) else 1)
    else:
        sys.exit(__doc__)
