#!/usr/bin/python3
"""Smoke test of the peer benchmark scripts (never asserts performance).

  bench/smoke_test.py [--kiln PATH]

Runs bench/ort_bench.mjs for 0.2 s on models/fashion_mnist.onnx and checks its JSON has the
keys and types of `kiln bench --json`; with --kiln, also runs bench/peer_cpu.py for one short
round and checks the table and Markdown row. Exits 77 (ctest SKIP_RETURN_CODE) when node or
onnxruntime-node (scripts/ort/node_modules) is missing, so a missing install shows as skipped.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MODEL = os.path.join(ROOT, "models", "fashion_mnist.onnx")
SKIP = 77


def check(cond, msg):
    if not cond:
        sys.exit(f"FAIL: {msg}")


def check_result(res, batch, threads):
    keys = {"model", "device", "precision", "batch", "threads", "runs", "throughput_ips",
            "latency_ms"}
    check(keys <= set(res), f"missing keys {sorted(keys - set(res))} in {res}")
    check(res["device"] == "cpu" and res["precision"] == "fp32", f"device/precision: {res}")
    check(res["batch"] == batch and res["threads"] == threads, f"batch/threads: {res}")
    check(isinstance(res["runs"], int) and res["runs"] >= 3, f"runs: {res['runs']}")
    check(res["throughput_ips"] > 0, f"throughput: {res['throughput_ips']}")
    lat = res["latency_ms"]
    check(set(lat) == {"min", "median", "p90", "p99"}, f"latency keys: {sorted(lat)}")
    check(0 < lat["min"] <= lat["median"] <= lat["p90"] <= lat["p99"], f"latency order: {lat}")
    # Throughput is batch·runs over the timed wall time, which includes every run's latency.
    check(res["throughput_ips"] <= batch * 1e3 / lat["min"] * 1.01, f"throughput vs min: {res}")


def main():
    kiln = None
    if len(sys.argv) == 3 and sys.argv[1] == "--kiln":
        kiln = sys.argv[2]
    elif len(sys.argv) != 1:
        sys.exit("usage: smoke_test.py [--kiln PATH]")
    node = shutil.which("node")
    if node is None or not os.path.isdir(
            os.path.join(ROOT, "scripts", "ort", "node_modules", "onnxruntime-node")):
        print("SKIPPED: node or scripts/ort/node_modules/onnxruntime-node missing "
              "(cd scripts/ort && ONNXRUNTIME_NODE_INSTALL=skip npm ci)")
        return SKIP

    with tempfile.TemporaryDirectory(prefix="kiln_bench_smoke_") as tmp:
        out = os.path.join(tmp, "ort.json")
        cmd = [node, os.path.join(HERE, "ort_bench.mjs"), MODEL, "--batch", "3", "--threads",
               "1", "--warmup", "0.05", "--duration", "0.2", "--json", out]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        check(proc.returncode == 0, f"ort_bench failed: {proc.stderr}")
        res = json.loads(proc.stdout)
        with open(out) as f:
            check(json.load(f) == res, "--json file differs from stdout")
        check_result(res, 3, 1)

        # A bad option is an error, not a silent default.
        bad = subprocess.run(cmd[:3] + ["--batch", "0"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        check(bad.returncode != 0 and "--batch" in bad.stderr, f"--batch 0 accepted: {bad}")
        print(f"ort_bench ok: {res['runs']} runs, {res['throughput_ips']:.1f} img/s")

        if kiln:
            md = os.path.join(tmp, "cpu.md")
            cmd = [sys.executable, os.path.join(HERE, "peer_cpu.py"), MODEL, "--batch", "2",
                   "--threads", "1", "--rounds", "2", "--warmup", "0", "--duration", "0.1",
                   "--kiln", kiln, "--markdown", md]
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            check(proc.returncode == 0, f"peer_cpu failed: {proc.stderr}")
            lines = proc.stdout.splitlines()
            check(lines[0].split() == ["model", "batch", "threads", "ORT", "img/s", "kiln",
                                       "img/s", "kiln/ORT"], f"table header: {lines[0]}")
            row = lines[1].split()
            check(row[:3] == ["fashion_mnist.onnx", "2", "1"], f"table row: {lines[1]}")
            ort_ips, kiln_ips, ratio = map(float, row[3:6])
            check(ort_ips > 0 and kiln_ips > 0, f"throughputs: {lines[1]}")
            check(abs(ratio - kiln_ips / ort_ips) <= 0.002 + 0.01 * ratio, f"ratio: {lines[1]}")
            check(proc.stderr.count("round ") == 4, f"expected 4 runs: {proc.stderr}")
            with open(md) as f:
                md_lines = f.read().splitlines()
            check(len(md_lines) == 3 and md_lines[2].startswith("| fashion_mnist.onnx | 2 | 1 |"),
                  f"markdown: {md_lines}")
            print(f"peer_cpu ok: {lines[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
