#!/usr/bin/python3
"""CPU peer benchmark: kiln against ONNX Runtime on the same model, batch and thread count.

  bench/peer_cpu.py MODEL.onnx --batch N --threads T --rounds R --duration S
                    [--warmup W] [--kiln build/kiln] [--kiln-before OTHER/kiln]
                    [--node node] [--markdown FILE]

Runs `kiln bench --json` and bench/ort_bench.mjs R times each, alternating (each run a
separate process with the same warmup and duration; the one going first swaps every round so
neither always gets the cooler machine), takes the median throughput of each across rounds
and prints both and the ratio kiln/ORT. Alternating and taking medians is what makes the
ratio meaningful on a shared, noisy machine; the absolute numbers are not.
With --kiln-before, a second kiln build (the one before a change) joins the rotation, and the
table adds its throughput and the ratio after/before: a before-and-after comparison in one run.
With --also NAME=FILE (repeatable), kiln on another model or plan file joins the rotation (an
int8 plan: `--also int8=r50.int8.kiln`), reported against ORT and against the first kiln.
Standard library only (Debian /usr/bin/python3).
"""

import argparse
import datetime
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ORT_BENCH = os.path.join(HERE, "ort_bench.mjs")

MD_HEADER = (
    "| model | batch | threads | ORT img/s | kiln img/s | kiln/ORT | rounds × s | machine | date "
    "| command |\n"
    "|---|---:|---:|---:|---:|---:|---|---|---|---|\n"
)


def machine():
    """CPU model and the cores this process may use (the machine may have more)."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{model}, {usable} cores"


def run_json(name, cmd, json_path):
    """Runs one benchmark process and returns its JSON result (read from json_path)."""
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        sys.exit(f"peer_cpu: {name} failed (exit {proc.returncode}): {shlex.join(cmd)}\n"
                 f"{proc.stderr.strip()}")
    try:
        with open(json_path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"peer_cpu: {name} wrote no readable JSON ({e}): {shlex.join(cmd)}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--duration", type=float, default=5.0, help="timed seconds per run")
    p.add_argument("--warmup", type=float, default=1.0, help="untimed seconds per run")
    p.add_argument("--kiln", default=os.path.join(ROOT, "build", "kiln"))
    p.add_argument("--kiln-before", help="a second kiln binary (before a change) to alternate with")
    p.add_argument("--also", action="append", default=[], metavar="NAME=FILE",
                   help="kiln on another model or plan file (an int8 plan) in the rotation")
    p.add_argument("--node", default="node")
    p.add_argument("--markdown", help="append the result row to this Markdown file")
    a = p.parse_args()
    if a.batch < 1 or a.threads < 1 or a.rounds < 1 or a.duration <= 0 or a.warmup < 0:
        p.error("--batch, --threads, --rounds must be >= 1, --duration > 0, --warmup >= 0")
    if not os.path.isfile(a.model):
        p.error(f"{a.model}: no such file")
    if not os.access(a.kiln, os.X_OK):
        p.error(f"{a.kiln}: no kiln binary (build it: ninja -C build kiln, or pass --kiln)")

    command = shlex.join([os.path.relpath(sys.argv[0])] + sys.argv[1:])
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    times = ["--warmup", str(a.warmup), "--duration", str(a.duration)]
    results = {"ort": [], "kiln": [], "before": []}
    also = {}
    for spec in a.also:
        name, _, path = spec.partition("=")
        if not name or not os.path.isfile(path) or name in results:
            p.error(f"--also {spec}: NAME=FILE, an existing file and a new name")
        also[name] = path
        results[name] = []
    with tempfile.TemporaryDirectory(prefix="kiln_peer_") as tmp:
        out = os.path.join(tmp, "result.json")
        cmds = {
            "kiln": [a.kiln, "--threads", str(a.threads), "bench", a.model, "--batch",
                     str(a.batch), *times, "--json", out],
            "ort": [a.node, ORT_BENCH, a.model, "--batch", str(a.batch), "--threads",
                    str(a.threads), *times, "--json", out],
        }
        if a.kiln_before:
            cmds["before"] = [a.kiln_before] + cmds["kiln"][1:]
        for name, path in also.items():
            cmds[name] = cmds["kiln"][:4] + [path] + cmds["kiln"][5:]
        names = list(cmds)
        for r in range(a.rounds):
            # Each contender goes first in turn (with two, the order swaps every round).
            order = names[r % len(names):] + names[:r % len(names)]
            for name in order:
                if os.path.exists(out):
                    os.remove(out)
                res = run_json(name, cmds[name], out)
                if res.get("batch") != a.batch or res.get("threads") != a.threads:
                    sys.exit(f"peer_cpu: {name} ran batch {res.get('batch')} threads "
                             f"{res.get('threads')}, asked for {a.batch} / {a.threads}")
                results[name].append(res["throughput_ips"])
                print(f"round {r + 1}/{a.rounds} {name:4}: {res['throughput_ips']:10.1f} img/s "
                      f"({res['runs']} runs, median {res['latency_ms']['median']:.3g} ms)",
                      file=sys.stderr)

    ort_ips = statistics.median(results["ort"])
    kiln_ips = statistics.median(results["kiln"])
    ratio = kiln_ips / ort_ips
    before_ips = statistics.median(results["before"]) if results["before"] else None
    name = os.path.basename(a.model)
    mach = machine()
    print(f"{'model':24} {'batch':>5} {'threads':>7} {'ORT img/s':>10} {'kiln img/s':>10} "
          f"{'kiln/ORT':>8}")
    print(f"{name:24} {a.batch:5d} {a.threads:7d} {ort_ips:10.1f} {kiln_ips:10.1f} {ratio:8.3f}")
    if before_ips:
        print(f"kiln before: {before_ips:.1f} img/s ({before_ips / ort_ips:.3f} of ORT); "
              f"after/before {kiln_ips / before_ips:.3f}")
    for n in also:
        ips = statistics.median(results[n])
        print(f"kiln {n} ({os.path.basename(also[n])}): {ips:.1f} img/s ({ips / ort_ips:.3f} of "
              f"ORT, {ips / kiln_ips:.3f} of kiln)")
    print(f"median of {a.rounds} alternating rounds of {a.duration:g} s each")
    print(f"machine: {mach}")
    print(f"date:    {date}")
    print(f"command: {command}")

    if a.markdown:
        new = not os.path.exists(a.markdown) or os.path.getsize(a.markdown) == 0
        with open(a.markdown, "a") as f:
            if new:
                f.write(MD_HEADER)
            f.write(f"| {name} | {a.batch} | {a.threads} | {ort_ips:.1f} | {kiln_ips:.1f} | "
                    f"{ratio:.3f} | {a.rounds} × {a.duration:g} | {mach} | {date} | "
                    f"`{command}` |\n")
            if before_ips:
                f.write(f"| {name} (before) | {a.batch} | {a.threads} | {ort_ips:.1f} | "
                        f"{before_ips:.1f} | {before_ips / ort_ips:.3f} | {a.rounds} × "
                        f"{a.duration:g} | {mach} | {date} | after/before "
                        f"{kiln_ips / before_ips:.3f} |\n")
            for n in also:
                ips = statistics.median(results[n])
                f.write(f"| {name} ({n}: {os.path.basename(also[n])}) | {a.batch} | {a.threads} "
                        f"| {ort_ips:.1f} | {ips:.1f} | {ips / ort_ips:.3f} | {a.rounds} × "
                        f"{a.duration:g} | {mach} | {date} | {n}/kiln {ips / kiln_ips:.3f} |\n")


if __name__ == "__main__":
    main()
