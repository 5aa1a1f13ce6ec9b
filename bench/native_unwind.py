#!/usr/bin/env python3
"""native_unwind.py: completeness and cost of scorch's native unwinding without frame pointers,
side by side with `perf record --call-graph fp` and `--call-graph dwarf` (same machine, same run).

  sudo python3 bench/native_unwind.py [--scorch ./scorch] [--secs 4] [--build build]

Prints Markdown tables (results go to docs/benchmarks.md, "Native unwinding"):
  1. the known call tree of bench/unwind_tree.c (-O2 -fomit-frame-pointer): % of samples
     reaching main and _start, and per-leaf shares against the known 40/30/30 split;
  2. % complete for python3.11, xz -9, gzip -9, sqlite3;
  3. BPF run time per sample for 20/100/500-frame stacks (kernel.bpf_stats_enabled);
  4. table build time/size and kernel memory (scorch --stats);
  5. short-lived processes: many 100 ms FP-less programs, % of their samples complete.
A stack is complete when its outermost frame is _start (or a thread entry: clone3)."""
import argparse, os, re, subprocess, sys, tempfile, time

ap = argparse.ArgumentParser()
ap.add_argument("--scorch", default="./scorch")
ap.add_argument("--build", default=os.environ.get("B", "build"))
ap.add_argument("--secs", type=float, default=4)
ap.add_argument("--freq", type=int, default=499)
ap.add_argument("--short-rate", type=int, default=20, help="short-lived processes started per second")
ap.add_argument("--short-secs", type=int, default=15)
args = ap.parse_args()
TMP = tempfile.mkdtemp(prefix="unwbench.")
ROOTS = ("_start", "clone3", "__clone3", "start_thread")

def sh(cmd, **kw):
    return subprocess.run(cmd, shell=True, capture_output=True, text=True, **kw)

def scorch(cmd, comm, stats=False):
    """Returns (stacks: list of (frames root-first, count), stats text)."""
    out = os.path.join(TMP, "s.folded")
    r = sh(f"{args.scorch} record -q {'--stats' if stats else ''} -F {args.freq} -o {out} -- {cmd}")
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
    sh(f"perf record -q -F {args.freq} --call-graph {cg} -o {data} -- {cmd}")
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
            cur.append(sym)
    return stacks

def complete(fr):
    """Outermost frame _start / a thread entry; stripped executables show their _start as
    exe+0xOFF, so a root followed by __libc_start_main counts too. No error markers."""
    if not fr or any(f.startswith("[unwind error]") or f.startswith("[truncated]") for f in fr):
        return False
    if fr[0] in ROOTS:
        return True
    return len(fr) > 1 and fr[1].startswith("__libc_start_main")

def pct(a, b):
    return 100.0 * a / b if b else 0.0

def tree_row(name, stacks):
    tot = sum(n for _, n in stacks)
    comp = sum(n for f, n in stacks if complete(f) and "main" in f)
    leaves = {"a": 0, "b": 0, "c": 0}
    for f, n in stacks:
        s = ";".join(f)
        if "path_a;a1;a2;a3;burn" in s and complete(f):
            leaves["a"] += n
        elif "path_b;" in s and s.count("down") == 120 and complete(f):
            leaves["b"] += n
        elif "path_c;" in s and s.count("rec") == 500 and complete(f):
            leaves["c"] += n
    known = {"a": 40, "b": 30, "c": 30}
    err = max(abs(pct(leaves[k], tot) - known[k]) for k in known)
    return (f"| {name} | {tot} | {pct(comp, tot):.1f}% | " +
            " | ".join(f"{pct(leaves[k], tot):.1f}%" for k in "abc") + f" | {err:.1f} |")

def main():
    b = args.build
    w = os.path.join(TMP, "unwind_tree")
    subprocess.check_call(["gcc", "-O2", "-g", "-fomit-frame-pointer", "-fno-optimize-sibling-calls",
                           "-o", w, "bench/unwind_tree.c"])
    print(f"## Native unwinding\n\nFrequency {args.freq} Hz, {args.secs:g} s per run, "
          f"kernel {os.uname().release}, {os.cpu_count()} CPUs.\n")
    print("### Known call tree (bench/unwind_tree.c, -O2 -fomit-frame-pointer)\n")
    print("| profiler | samples | complete (main and _start) | leaf A 5 deep (40%) | leaf B 122 deep (30%) | leaf C 502 deep (30%) | worst share error (points) |")
    print("|---|---|---|---|---|---|---|")
    st, _ = scorch(f"{w} {args.secs}", "unwind_tree")
    print(tree_row("scorch", st))
    print(tree_row("perf --call-graph fp", perf(f"{w} {args.secs}", "unwind_tree", "fp")))
    print(tree_row("perf --call-graph dwarf", perf(f"{w} {args.secs}", "unwind_tree", "dwarf")))

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

    print("\n### BPF run time per sample (kernel.bpf_stats_enabled=1)\n")
    print("| user stack depth | samples | ns per program run (all CPUs, all tasks) | ns per table unwind (upper bound) | frames per unwind |")
    print("|---|---|---|---|---|")
    old = sh("sysctl -n kernel.bpf_stats_enabled").stdout.strip() or "0"
    sh("sysctl -qw kernel.bpf_stats_enabled=1")
    helper = os.path.join(b, "helpers", "unwind_chain")
    for depth in (20, 100, 500):
        st, err = scorch(f"{helper} deep {depth - 6} {args.secs}", "unwind_chain", stats=True)
        m = dict(re.findall(r"(\w+)=([0-9.]+)", err))
        rt, cnt = float(m.get("bpf_runtime_ns", 0)), float(m.get("bpf_run_cnt", 0))
        fr, un = float(m.get("bpf_frames", 0)), float(m.get("bpf_unwinds", 0))
        print(f"| {depth} | {sum(n for _, n in st)} | {rt / cnt if cnt else 0:.0f} | {rt / un if un else 0:.0f} | {fr / un if un else 0:.0f} |")
    sh(f"sysctl -qw kernel.bpf_stats_enabled={old}")

    print("\n### Tables (python3.11 run above repeated with --stats)\n")
    _, err = scorch("/usr/bin/python3.11 -c 'import json, sqlite3, decimal'", "python3.11", stats=True)
    m = dict(re.findall(r"(\w+)=([0-9.]+)", err))
    print("| files | tables built | build time | entries used | entry bytes | kernel memory for tables (caps) |")
    print("|---|---|---|---|---|---|")
    print(f"| {m.get('files')} | {m.get('table_builds')} | {m.get('table_build_ms')} ms | {m.get('entries_used')} | "
          f"{int(m.get('entries_used', 0)) * 8 / 1024:.0f} KiB | {int(m.get('kernel_bytes', 0)) / 1048576:.1f} MiB |")

    print(f"\n### Short-lived processes ({args.short_rate}/s of a 100 ms FP-less program for {args.short_secs} s)\n")
    n = args.short_rate * args.short_secs
    loop = (f"sh -c 'i=0; while [ $i -lt {n} ]; do {helper} short 100 & i=$((i+1)); "
            f"sleep {1.0 / args.short_rate:.3f}; done; wait'")
    st, _ = scorch(loop, "unwind_chain")
    tot = sum(c for _, c in st)
    comp = sum(c for f, c in st if complete(f) and "short_b" in f and "main" in f)
    print("| processes | samples of them | complete (_start ... main;short_a;short_b) |")
    print("|---|---|---|")
    print(f"| {n} | {tot} | {pct(comp, tot):.1f}% |")

main()
