#!/usr/bin/env python3
"""native_unwind.py: completeness and cost of scorch's native unwinding without frame pointers,
side by side with `perf record --call-graph fp` and `--call-graph dwarf` (same machine, same run).

  sudo python3 bench/native_unwind.py [--scorch ./scorch] [--build build] [--freq 999]
      [--tree-secs 10] [--rounds 3] [--secs 4] [--short-rate 200] [--short-secs 30]

Prints Markdown tables (results go to docs/benchmarks.md, "Native unwinding"):
  1. the known call tree of bench/unwind_tree.c (-O2 -fomit-frame-pointer): % of samples
     reaching main and _start, and per-leaf shares against the split of CPU time the workload
     measures itself (CLOCK_THREAD_CPUTIME_ID around each leaf); medians of --rounds runs;
  2. % complete for python3.11, xz -9, gzip -9, sqlite3;
  3. BPF run time per sample for 20/100/500-frame stacks (kernel.bpf_stats_enabled), net of
     the runs that only filter out other processes' samples;
  4. table build time/size and kernel memory (scorch --stats);
  5. short-lived processes: --short-rate per second of a program doing 100 ms of CPU work
     (bench/unwind_tree.c short), for --short-secs: % of their samples complete, how many ran.
A stack is complete when its outermost frame is _start (or a thread entry: clone3, or the
dynamic loader's entry for samples taken before main) and it carries no error marker."""
import argparse, os, re, statistics, subprocess, sys, tempfile, time

ap = argparse.ArgumentParser()
ap.add_argument("--scorch", default="./scorch")
ap.add_argument("--build", default=os.environ.get("B", "build"))
ap.add_argument("--secs", type=float, default=4)
ap.add_argument("--tree-secs", type=float, default=10)
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--freq", type=int, default=999)
ap.add_argument("--short-rate", type=int, default=200, help="short-lived processes started per second")
ap.add_argument("--short-secs", type=int, default=30)
ap.add_argument("--skip", default="", help="comma-separated sections to skip: tree,debian,cost,tables,short")
args = ap.parse_args()
TMP = tempfile.mkdtemp(prefix="unwbench.")
ROOTS = ("_start", "clone3", "__clone3", "start_thread")

def sh(cmd, **kw):
    return subprocess.run(cmd, shell=True, capture_output=True, text=True, **kw)

def scorch(cmd, comm, stats=False, env=""):
    """Returns (stacks: list of (frames root-first, count), stats text)."""
    out = os.path.join(TMP, "s.folded")
    if os.path.exists(out):
        os.unlink(out)
    r = sh(f"{env} {args.scorch} record -q {'--stats' if stats else ''} -F {args.freq} -o {out} -- {cmd}")
    stacks = []
    for line in open(out) if os.path.exists(out) else []:
        body, _, n = line.rstrip("\n").rpartition(" ")
        fr = body.split(";")
        if fr[0] != comm:
            continue
        fr = [f for f in fr[1:] if not f.endswith("_[k]")]
        stacks.append((fr, int(n)))
    return stacks, r.stderr

def perf(cmd, comm, mode):
    data = os.path.join(TMP, "perf.data")
    cg = "fp" if mode == "fp" else "dwarf"
    sh(f"perf record -q -e cpu-clock -F {args.freq} --call-graph {cg} -o {data} -- {cmd}")
    r = sh(f"perf script -i {data} -F comm,ip,sym 2>/dev/null")
    stacks, cur, cur_comm = [], [], None
    for line in r.stdout.splitlines() + [""]:
        if not line.strip():
            if cur_comm == comm and cur:
                stacks.append((list(reversed(cur)), 1))
            cur, cur_comm = [], None
        elif not line.startswith(("\t", " ")):
            cur_comm = line.split()[0]
        else:
            parts = line.split(None, 1)
            sym = parts[1].strip() if len(parts) > 1 else "[unknown]"
            sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
            if "[kernel" in sym or sym.endswith("_[k]"):
                continue
            sym = sym.removesuffix(" (inlined)")
            cur.append(sym)
    return stacks

def complete(fr):
    """Outermost frame _start / a thread entry; stripped executables show their _start as
    exe+0xOFF, so a root followed by __libc_start_main counts too, and so does the dynamic
    loader's entry (ld-linux...+0xOFF: samples before main). No error markers."""
    if not fr or any(f.startswith("[unwind error]") or f.startswith("[truncated]") for f in fr):
        return False
    if fr[0] in ROOTS or fr[0].startswith("ld-linux"):
        return True
    return len(fr) > 1 and fr[1].startswith("__libc_start_main")

def pct(a, b):
    return 100.0 * a / b if b else 0.0

LEAVES = "abc"

def leaf_shares(stacks):
    """(samples, % complete through main, {leaf: % of samples})"""
    tot = sum(n for _, n in stacks)
    comp = sum(n for f, n in stacks if complete(f) and "main" in f)
    leaves = {k: 0 for k in LEAVES}
    for f, n in stacks:
        # perf shows functions gcc inlined (from the debug info); scorch shows real frames
        f = [x for x in f if x not in ("timed_burn", "tree")]
        s = ";".join(f)
        if not complete(f) or not f or f[-1] != "burn":
            continue
        if "path_a;a1;a2;a3;burn" in s:
            leaves["a"] += n
        elif "path_b;" in s and s.count("down") == 120:
            leaves["b"] += n
        elif "path_c;" in s and s.count("rec") == 500:
            leaves["c"] += n
    return tot, pct(comp, tot), {k: pct(v, tot) for k, v in leaves.items()}

def read_truth(path):
    """The workload's own CPU-time split, % of its process CPU time per leaf."""
    m = dict(re.findall(r"(\w+)=([0-9.]+)", open(path).read())) if os.path.exists(path) else {}
    tot = float(m.get("total", 0))
    return {k: 100.0 * float(m.get(k, 0)) / tot if tot else 0.0 for k in LEAVES}

def tree_rows(w):
    """Runs every profiler --rounds times on the tree; prints one row per profiler (medians)."""
    truth_file = os.path.join(TMP, "truth.txt")
    runs = {"scorch": [], "perf --call-graph fp": [], "perf --call-graph dwarf": [],
            "scorch, fixed leaf order (aliasing check)": []}
    for _ in range(args.rounds):
        for name in runs:
            if os.path.exists(truth_file):
                os.unlink(truth_file)
            cmd = f"{w} {args.tree_secs} {truth_file}"
            if name.startswith("scorch"):
                env = "UNWIND_TREE_FIXED=1" if "fixed" in name else ""
                st, _ = scorch(cmd, "unwind_tree", env=env)
            else:
                st = perf(cmd, "unwind_tree", "fp" if "fp" in name else "dwarf")
            tot, comp, shares = leaf_shares(st)
            truth = read_truth(truth_file)
            err = max(abs(shares[k] - truth[k]) for k in LEAVES)
            runs[name].append((tot, comp, shares, truth, err))
    med = statistics.median
    for name, rs in runs.items():
        cells = [f"{med(r[0] for r in rs):.0f}", f"{med(r[1] for r in rs):.1f}%"]
        for k in LEAVES:
            cells.append(f"{med(r[2][k] for r in rs):.1f}% ({med(r[3][k] for r in rs):.1f}%)")
        cells.append(f"{med(r[4] for r in rs):.1f} (max {max(r[4] for r in rs):.1f})")
        print(f"| {name} | " + " | ".join(cells) + " |")

def main():
    b = args.build
    w = os.path.join(TMP, "unwind_tree")
    subprocess.check_call(["gcc", "-O2", "-g", "-fomit-frame-pointer", "-fno-optimize-sibling-calls",
                           "-o", w, "bench/unwind_tree.c"])
    print(f"## Native unwinding\n\nFrequency {args.freq} Hz, kernel {os.uname().release}, "
          f"{os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d')}.\n")
    skip = set(args.skip.split(","))
    if "tree" not in skip:
        print(f"### Known call tree (bench/unwind_tree.c, -O2 -fomit-frame-pointer), {args.rounds} "
              f"rounds of {args.tree_secs:g} s, medians\n")
        print("Each share is followed by the workload's own measure of that leaf's share of its CPU time.\n")
        print("| profiler | samples per round | complete (main and _start) | leaf A 5 deep (truth) | leaf B 122 deep (truth) | leaf C 502 deep (truth) | worst share error vs truth (points) |")
        print("|---|---|---|---|---|---|---|")
        tree_rows(w)
    if "debian" not in skip:
        debian()
    if "cost" not in skip:
        cost(b)
    if "tables" not in skip:
        tables()
    if "short" not in skip:
        short_lived(w)

def stats_of(err):
    """scorch --stats text -> {section: {key: value}} (sections: stats, python, unwind)."""
    out = {}
    for line in err.splitlines():
        sec, _, rest = line.partition(":")
        if sec in ("stats", "python", "unwind"):
            out[sec] = {k: float(v) for k, v in re.findall(r"(\w+)=([0-9.]+)", rest)}
    return out

def debian():
    print("\n### Debian binaries (% of samples whose stack reaches _start / thread entry)\n")
    data = os.path.join(TMP, "input.bin")
    sh(f"cat /usr/bin/python3.11 /usr/lib/x86_64-linux-gnu/libsqlite3.so.0 > {data}")
    progs = [
        ("python3.11", "python3.11", "/usr/bin/python3.11 -c 'exec(\"import time\\nt=time.time()\\nwhile time.time()-t<%g: sum(i*i for i in range(1000))\")'" % args.secs),
        ("xz -9", "xz", f"sh -c 'xz -9 -T1 -c {data} > /dev/null'"),
        ("gzip -9", "gzip", f"sh -c 'for i in 1 2 3; do gzip -9 -c {data} > /dev/null; done'"),
        ("sqlite3", "sqlite3", "sqlite3 :memory: 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 8000000) SELECT sum(x) FROM c'"),
    ]
    print("| program | scorch | perf fp | perf dwarf | samples (scorch) |")
    print("|---|---|---|---|---|")
    for name, comm, cmd in progs:
        row = []
        sst, _ = scorch(cmd, comm)
        for stacks in (sst, perf(cmd, comm, "fp"), perf(cmd, comm, "dwarf")):
            tot = sum(n for _, n in stacks)
            row.append(f"{pct(sum(n for f, n in stacks if complete(f)), tot):.1f}%")
        print(f"| {name} | " + " | ".join(row) + f" | {sum(n for _, n in sst)} |")

def cost(b):
    """BPF run time. The program runs for every sample of every CPU; samples of other processes
    are only filtered out. Their cost is measured first (the command sleeps: every run is a
    filtered one) and taken out of the runs of the deep-stack helper."""
    med = statistics.median
    print(f"\n### BPF run time per sample (kernel.bpf_stats_enabled=1), {args.rounds} runs of {args.secs:g} s, medians\n")
    old = sh("sysctl -n kernel.bpf_stats_enabled").stdout.strip() or "0"
    sh("sysctl -qw kernel.bpf_stats_enabled=1")
    filt = []
    for _ in range(args.rounds):
        _, err = scorch(f"sleep {args.secs}", "sleep", stats=True)
        st = stats_of(err).get("stats", {})
        if st.get("bpf_run_cnt"):
            filt.append(st["bpf_runtime_ns"] / st["bpf_run_cnt"])
    fns = med(filt) if filt else 0
    print(f"A run that filters out another process's sample: {fns:.0f} ns.\n")
    print("| user stack depth | samples per run | ns per program run (all CPUs, all tasks) | ns per unwound sample (net) | frames per unwind | snapshots per run |")
    print("|---|---|---|---|---|---|")
    helper = os.path.join(b, "helpers", "unwind_chain")
    for depth in (20, 100, 500):
        rows = []
        for _ in range(args.rounds):
            _, err = scorch(f"{helper} deep {depth - 6} {args.secs}", "unwind_chain", stats=True)
            m = stats_of(err)
            st, un = m.get("stats", {}), m.get("unwind", {})
            rt, cnt, n = st.get("bpf_runtime_ns", 0), st.get("bpf_run_cnt", 0), st.get("samples", 0)
            u = un.get("bpf_unwinds", 0)
            rows.append((n, rt / cnt if cnt else 0, (rt - (cnt - n) * fns) / n if n else 0,
                         un.get("bpf_frames", 0) / u if u else 0, un.get("snapshots", 0)))
        print(f"| {depth} | " + " | ".join(f"{med(r[i] for r in rows):.0f}" for i in range(5)) + " |")
    sh(f"sysctl -qw kernel.bpf_stats_enabled={old}")

def tables():
    print("\n### Tables (python3.11 importing json, sqlite3, decimal, with --stats)\n")
    _, err = scorch("/usr/bin/python3.11 -c 'import json, sqlite3, decimal'", "python3.11", stats=True)
    m = stats_of(err).get("unwind", {})
    print("| files | tables built | build time | entries used | entry bytes | kernel memory for tables (caps) |")
    print("|---|---|---|---|---|---|")
    print(f"| {m.get('files', 0):.0f} | {m.get('table_builds', 0):.0f} | {m.get('table_build_ms', 0)} ms | {m.get('entries_used', 0):.0f} | "
          f"{m.get('entries_used', 0) * 8 / 1024:.0f} KiB | {m.get('kernel_bytes', 0) / 1048576:.1f} MiB |")

def short_lived(w):
    print(f"\n### Short-lived processes ({args.short_rate}/s of a program doing 100 ms of CPU work, for {args.short_secs} s)\n")
    rows = []
    for label, prio in (("default", ""), ("profiler and spawner at nice -10", "nice"),
                        ("profiler and spawner SCHED_FIFO", "fifo")):
        rows.append(short_run(w, label, prio))
    print("| priorities | started (rate achieved) | finished / stopped at the end | most running at once | spawner behind schedule | samples of them | lost (ring buffer full) | complete | through main;short_a;short_b | snapshots (complete) | wall time |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(r)

def short_run(w, label, prio):
    """prio "": everything at nice 0; "nice": scorch and the spawner at nice -10; "fifo": both
    SCHED_FIFO (reset on fork: the short-lived processes always run at nice 0)."""
    out = os.path.join(TMP, "spawn.txt")
    t0 = time.time()
    env = {"": "", "nice": "UNWIND_TREE_NICE=-10 nice -n -10", "fifo": "chrt -f -R 10"}[prio]
    spawner = "chrt -f -R 10 " if prio == "fifo" else ""
    st, err = scorch(f"sh -c '{spawner}{w} spawn {args.short_rate} {args.short_secs} 100 > {out}'",
                     "unwind_tree", stats=True, env=env)
    wall = time.time() - t0
    sp = dict(re.findall(r"(\w+)=([0-9.]+)", open(out).read())) if os.path.exists(out) else {}
    m = stats_of(err)
    tot = sum(c for _, c in st)
    comp = sum(c for f, c in st if complete(f))
    chain = sum(c for f, c in st if complete(f) and "short_b" in f and "main" in f)
    return (f"| {label} | {sp.get('started', '?')} ({sp.get('rate', '?')}/s) | {sp.get('finished', '?')} / {sp.get('killed', '?')} | "
            f"{sp.get('peak_running', '?')} | up to {sp.get('late_ms', '?')} ms | {tot} | "
            f"{m.get('stats', {}).get('ringbuf_lost', 0):.0f} | {pct(comp, tot):.1f}% | {pct(chain, tot):.1f}% | "
            f"{m.get('unwind', {}).get('snapshots', 0):.0f} ({m.get('unwind', {}).get('snapshots_complete', 0):.0f}) | {wall:.0f} s |")

main()
