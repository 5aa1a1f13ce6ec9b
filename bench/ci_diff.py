#!/usr/bin/env python3
"""ci_diff.py: how well `scorch diff` tells a real regression from noise.

The workload is tests/helpers/ci_work.c built twice: the second build's checksum() does twice
the work (about 20% of the base's CPU), the rest is equal. For each setting (sampling rate,
work per run) it records, with `scorch ci -o`, BASE_RUNS runs of the base build and SLOW_RUNS of
the regressed one, then:

  false alarms, 1 run per side   20 pairs of distinct base runs          (exit 3 = false alarm)
  false alarms, 3 runs per side  20 draws of 3 + 3 distinct base runs
  detection, 1 run per side      20 pairs (base run, regressed run)      (exit 3 and checksum
  detection, 3 runs per side     20 draws of 3 base + 3 regressed runs    named first = found)

Next to it, what a user does today, eyeballing a diff flame graph: a function "looks changed"
when its self time differs by at least the same threshold (10%) and impact (0.5% of the run)
without any noise test. We count the same-version pairs where something looks changed, and in
the regressed pairs how many other functions look changed next to checksum.

Detection time: the wall time of `scorch diff` (files; and from a server for 3 runs per side)
after the runs are recorded, and the CPU per run each setting needs.

usage: sudo python3 bench/ci_diff.py [--settings 99:1,99:4,999:1] [--base-runs 60]
       [--slow-runs 30] [--pairs 20] [--exhaustive] [--keep DIR]
Prints markdown tables (docs/benchmarks.md keeps the latest).
"""
import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
B = os.environ.get("B", "build")
SCORCH = os.environ.get("SCORCH", os.path.join(ROOT, "scorch"))
BASE = os.path.join(ROOT, B, "helpers", "ci_work")
SLOW = os.path.join(ROOT, B, "helpers", "ci_slow", "ci_work")
THRESHOLD, IMPACT = 0.10, 0.005


def record(binary, scale, hz, out, label):
    env = dict(os.environ)
    for k in ("SCORCH_SERVER", "GITHUB_ACTIONS", "GITLAB_CI", "JENKINS_URL", "CIRCLECI", "BUILDKITE"):
        env.pop(k, None)
    r = subprocess.run([SCORCH, "ci", "-q", "-F", str(hz), "-o", out, "--app", "ciw",
                        "--label", "commit=" + label, "--", binary, str(scale)],
                       env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit("scorch ci failed: %s" % r.stderr)


def diff(base, new, extra=()):
    t0 = time.monotonic()
    r = subprocess.run([SCORCH, "diff", "-q", "-f", "json", ",".join(base), ",".join(new), *extra],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    dt = time.monotonic() - t0
    if r.returncode not in (0, 3):
        sys.exit("scorch diff failed: %s" % r.stderr)
    return r.returncode, json.loads(r.stdout), dt


def eyeball(report):
    """Functions whose self time looks changed without a noise test."""
    total = report["total"]["base"]
    out = []
    for f in report["functions"]:
        b, n = f["self"]["base"], f["self"]["new"]
        if abs(n - b) < IMPACT * total:
            continue
        if b == 0 or abs(n - b) / b >= THRESHOLD:
            out.append(f["name"])
    return out


def flagged(report):
    out = []
    for f in report["functions"]:
        for m in ("self", "total"):
            if f[m]["verdict"] == "regression":
                out.append("%s %s %.3f -> %.3f s (p=%.2g)" % (f["name"], m, f[m]["base"],
                                                              f[m]["new"], f[m]["p_adjusted"]))
    if report["total"]["verdict"] == "regression":
        out.append("run total")
    return "; ".join(out)


def run_setting(hz, scale, args, tmp, rng):
    d = os.path.join(args.keep or tmp, "%d-%s" % (hz, scale))
    base, slow = [], []
    t0 = time.monotonic()
    reuse = args.keep and os.path.isdir(d)
    os.makedirs(d, exist_ok=True)
    for i in range(args.base_runs):
        p = os.path.join(d, "base%02d.pb.gz" % i)
        if not (reuse and os.path.exists(p)):
            record(BASE, scale, hz, p, "base")
        base.append(p)
    for i in range(args.slow_runs):
        p = os.path.join(d, "slow%02d.pb.gz" % i)
        if not (reuse and os.path.exists(p)):
            record(SLOW, scale, hz, p, "slow")
        slow.append(p)
    rec_s = time.monotonic() - t0
    res = {"hz": hz, "scale": scale, "record_s": rec_s}
    cpu, samples = [], []
    for p in base[:5]:
        _, j, _ = diff([p], [p])
        cpu.append(j["total"]["base"])
    res["cpu"] = statistics.median(cpu)
    res["samples"] = res["cpu"] * hz

    times = []
    fa1 = eye_fa1 = 0
    for i in range(args.pairs):
        rc, j, dt = diff([base[(2 * i) % len(base)]], [base[(2 * i + 1) % len(base)]])
        times.append(dt)
        fa1 += rc == 3
        eye_fa1 += bool(eyeball(j))
        if rc == 3:
            print("false alarm, %d Hz x %s, 1 run per side: %s" % (hz, scale, flagged(j)),
                  file=sys.stderr)
    det1 = named1 = 0
    extra1 = []
    for i in range(args.pairs):
        rc, j, dt = diff([base[i % len(base)]], [slow[i % len(slow)]])
        times.append(dt)
        det1 += rc == 3
        named1 += rc == 3 and j["functions"][0]["name"] == "checksum"
        e = eyeball(j)
        extra1.append(len([x for x in e if x != "checksum"]))
    fa3 = eye_fa3 = 0
    for _ in range(args.pairs):
        pick = rng.sample(base, 6)
        rc, j, dt = diff(pick[:3], pick[3:])
        fa3 += rc == 3
        if rc == 3:
            print("false alarm, %d Hz x %s, 3 runs per side: %s" % (hz, scale, flagged(j)),
                  file=sys.stderr)
        eye_fa3 += bool(eyeball(j))
    det3 = named3 = 0
    extra3 = []
    times3 = []
    for _ in range(args.pairs):
        rc, j, dt = diff(rng.sample(base, 3), rng.sample(slow, 3))
        times3.append(dt)
        det3 += rc == 3
        named3 += rc == 3 and j["functions"][0]["name"] == "checksum"
        extra3.append(len([x for x in eyeball(j) if x != "checksum"]))
    res.update(fa1=fa1, eye_fa1=eye_fa1, det1=det1, named1=named1, extra1=statistics.mean(extra1),
               fa3=fa3, eye_fa3=eye_fa3, det3=det3, named3=named3, extra3=statistics.mean(extra3),
               diff_ms=1000 * statistics.median(times), diff3_ms=1000 * statistics.median(times3))
    res["server_ms"] = server_diff_ms(base, slow, tmp)
    if args.exhaustive:
        # Every pair of distinct base runs, every (base, regressed) pair, and 500 draws of
        # 3 + 3 of each kind: many more comparisons (not independent ones) for rarer events.
        n1 = a1 = 0
        for i in range(len(base)):
            for k in range(i + 1, len(base)):
                rc, j, _ = diff([base[i]], [base[k]])
                n1 += 1
                a1 += rc == 3
        d1 = f1 = 0
        for b in base:
            for sl in slow:
                rc, j, _ = diff([b], [sl])
                d1 += 1
                f1 += rc == 3 and j["functions"][0]["name"] == "checksum"
        a3 = f3 = 0
        for _ in range(500):
            pick = rng.sample(base, 6)
            rc, _, _ = diff(pick[:3], pick[3:])
            a3 += rc == 3
            rc, j, _ = diff(rng.sample(base, 3), rng.sample(slow, 3))
            f3 += rc == 3 and j["functions"][0]["name"] == "checksum"
        res.update(ex_n1=n1, ex_a1=a1, ex_d1=d1, ex_f1=f1, ex_a3=a3, ex_f3=f3)
    return res


def server_diff_ms(base, slow, tmp):
    """Upload 3 + 3 runs to a fresh server and time `scorch diff --server` on them."""
    data = tempfile.mkdtemp(dir=tmp)
    portfile = os.path.join(data, "port")
    srv = subprocess.Popen([SCORCH, "server", "--listen", "127.0.0.1:0", "--port-file", portfile,
                            "--data", data], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if os.path.exists(portfile) and open(portfile).read().strip():
                break
            time.sleep(0.05)
        url = "http://127.0.0.1:" + open(portfile).read().strip()
        import urllib.request
        for p in base[:3] + slow[:3]:
            # the files carry their labels (commit, run) and their time
            q = urllib.parse.urlencode({"name": "ciw.cpu", "format": "pprof"})
            req = urllib.request.Request(url + "/ingest?" + q, data=open(p, "rb").read(),
                                         method="POST")
            urllib.request.urlopen(req).read()
        t = []
        for _ in range(5):
            t0 = time.monotonic()
            r = subprocess.run([SCORCH, "diff", "-q", "--server", url, 'ciw.cpu{commit="base"}',
                                'ciw.cpu{commit="slow"}'], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
            t.append(time.monotonic() - t0)
            if r.returncode not in (0, 3):
                sys.exit("scorch diff --server failed: %s" % r.stderr)
        return 1000 * statistics.median(t)
    finally:
        srv.terminate()
        srv.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--settings", default="99:1,99:4,999:1",
                    help="HZ:SCALE pairs; SCALE 1 is about 0.6 s of CPU for the base build")
    ap.add_argument("--base-runs", type=int, default=60)
    ap.add_argument("--slow-runs", type=int, default=30)
    ap.add_argument("--pairs", type=int, default=20)
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--exhaustive", action="store_true",
                    help="also compare every pair of runs and 500 draws of 3 + 3 runs")
    ap.add_argument("--keep", help="record into this directory and keep the profiles; runs "
                    "already there are reused (to measure another scorch diff on the same runs)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("error: needs root (BPF)")
    subprocess.run(["make", "-s", "-C", ROOT, os.path.join(B, "helpers", "ci_work"),
                    os.path.join(B, "helpers", "ci_slow", "ci_work")]
                   + ([] if "SCORCH" in os.environ else ["scorch"]), check=True)
    rng = random.Random(args.seed)
    tmp = tempfile.mkdtemp(prefix="scorch-ci-bench.")
    rows = []
    try:
        for s in args.settings.split(","):
            hz, scale = s.split(":")
            rows.append(run_setting(int(hz), float(scale), args, tmp, rng))
            print("done %s (%.0f s of recording)" % (s, rows[-1]["record_s"]), file=sys.stderr)
    finally:
        shutil.rmtree(tmp)
    n = args.pairs
    print("| rate | CPU per run (samples) | runs per side | scorch: false alarms | scorch: regression found (named first) | eyeballing: same-version pairs that look changed | eyeballing: other functions that look changed next to checksum | scorch diff time |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        cpu = "%.2f s (%.0f)" % (r["cpu"], r["samples"])
        print("| %d Hz | %s | 1 | %d / %d | %d / %d (%d) | %d / %d | %.1f | %.0f ms |" % (
            r["hz"], cpu, r["fa1"], n, r["det1"], n, r["named1"], r["eye_fa1"], n, r["extra1"], r["diff_ms"]))
        print("| %d Hz | %s | 3 | %d / %d | %d / %d (%d) | %d / %d | %.1f | %.0f ms (server: %.0f ms) |" % (
            r["hz"], cpu, r["fa3"], n, r["det3"], n, r["named3"], r["eye_fa3"], n, r["extra3"],
            r["diff3_ms"], r["server_ms"]))
    if args.exhaustive:
        print()
        print("| rate | CPU per run | false alarms, 1 run per side (all pairs) | found and named, 1 run per side (all pairs) | false alarms, 3 runs per side (500 draws) | found and named, 3 runs per side (500 draws) |")
        print("|---|---|---|---|---|---|")
        for r in rows:
            print("| %d Hz | %.2f s | %d / %d (%.2f%%) | %d / %d (%.1f%%) | %d / 500 (%.1f%%) | %d / 500 (%.1f%%) |" % (
                r["hz"], r["cpu"], r["ex_a1"], r["ex_n1"], 100.0 * r["ex_a1"] / r["ex_n1"],
                r["ex_f1"], r["ex_d1"], 100.0 * r["ex_f1"] / r["ex_d1"], r["ex_a3"],
                r["ex_a3"] / 5.0, r["ex_f3"], r["ex_f3"] / 5.0))


if __name__ == "__main__":
    main()
