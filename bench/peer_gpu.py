#!/usr/bin/env python3
"""GPU peer benchmark: kiln against PyTorch on the same model, batch and precision.

  bench/peer_gpu.py --model resnet50 [--onnx models/cache/resnet50.onnx] --batch 1 16 256
                    --precision fp16 --torch-mode channels_last cuda_graph [--compile]
                    --rounds 5 [--kiln build/kiln] [--out results.json] [--markdown]
                    [--dry-run]

For each case (batch x precision) it runs, round after round, every PyTorch mode in-process
and then `kiln bench --device cuda --json` as a separate process (the one going first swaps
every round), and reports per engine the median throughput and median latency percentiles
across rounds, peak device memory, and the ratio kiln/PyTorch. Alternating rounds and taking
medians keeps slow drift of the machine (clocks, temperature) from favouring either side.
`--help` and `--dry-run` need no GPU (nor torch).
"""

import argparse
import datetime
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MODELS = ("resnet50", "resnet18", "mobilenet_v2")
PRECISIONS = ("fp32", "tf32", "fp16")
# eager: NCHW; channels_last: NHWC eager; cuda_graph: NHWC replayed from torch.cuda.CUDAGraph;
# compile: NHWC torch.compile (inductor) with --compile-mode.
TORCH_MODES = ("eager", "channels_last", "cuda_graph", "compile")
LAT_KEYS = ("p50", "p90", "p99", "mean")


def say(*args):
    print(*args, flush=True)


def percentiles(samples):
    s = sorted(samples)
    pick = lambda q: s[min(len(s) - 1, max(0, int(round(q * len(s))) - 1))]
    return {"p50": statistics.median(s), "p90": pick(0.90), "p99": pick(0.99),
            "mean": statistics.fmean(s)}


# ---------------------------------------------------------------------------------------
# Models: torchvision's, or the same architectures from vision_models.py when it is missing.

def build_model(name):
    import torch
    torch.manual_seed(0)
    try:
        import torchvision
        model = getattr(torchvision.models, name)(weights=None)
    except Exception as e:  # missing, or built against another torch (operator errors)
        from vision_models import fallback_model  # bench/, next to this script
        say(f"torchvision unavailable ({type(e).__name__}: {e}); using the built-in {name}")
        model = fallback_model(name)
    return model.eval()


# ---------------------------------------------------------------------------------------
# PyTorch side.

class TorchRunner:
    """One PyTorch mode of one case: built once (capture/compile included), timed per round."""

    def __init__(self, a, batch, precision, mode):
        import torch
        self.torch, self.batch, self.precision, self.mode = torch, batch, precision, mode
        self.transfers = a.with_transfers
        self.set_precision_flags()
        dev = torch.device("cuda")
        dtype = torch.float16 if precision == "fp16" else torch.float32
        fmt = torch.contiguous_format if mode == "eager" else torch.channels_last
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        model = build_model(a.model).to(dev, dtype).to(memory_format=fmt)
        x = (torch.rand(batch, 3, 224, 224, generator=torch.Generator().manual_seed(1)) * 2 - 1)
        self.x_host = x.to(dtype).pin_memory()
        self.x = self.x_host.to(dev).contiguous(memory_format=fmt)
        # Uploads go to an NCHW buffer and the layout changes on the device (a host-side
        # NHWC conversion before the copy would be slow and not what an engine does).
        self.x_stage = self.x_host.to(dev) if self.transfers and mode != "eager" else self.x
        self.out_host = None
        with torch.inference_mode():
            if mode == "compile":
                say(f"  torch.compile(mode={a.compile_mode!r}) batch {batch} {precision}...")
                t0 = time.perf_counter()
                model = torch.compile(model, mode=a.compile_mode)
                for _ in range(3):
                    self.mark_step()
                    model(self.x)
                torch.cuda.synchronize()
                say(f"  compiled in {time.perf_counter() - t0:.1f} s")
                self.mark_step()
            y = model(self.x)
            self.out_host = torch.empty(y.shape, dtype=y.dtype, pin_memory=True)
            if mode == "cuda_graph":
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):  # warm up (cuDNN benchmark) off the capture
                    for _ in range(3):
                        model(self.x)
                torch.cuda.current_stream().wait_stream(side)
                self.graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(self.graph):
                    self.y = model(self.x)
        self.model = model
        for _ in range(2):
            self.step()
        torch.cuda.synchronize()
        self.peak_mib = (torch.cuda.max_memory_allocated() - base) / 2**20

    def set_precision_flags(self):
        tf32 = self.precision == "tf32"
        self.torch.backends.cuda.matmul.allow_tf32 = tf32
        self.torch.backends.cudnn.allow_tf32 = tf32

    def mark_step(self):
        mark = getattr(getattr(self.torch, "compiler", None), "cudagraph_mark_step_begin", None)
        if mark:
            mark()

    def step(self):
        # All in inference mode: the outputs (and out_host) are inference tensors.
        with self.torch.inference_mode():
            if self.transfers:
                self.x_stage.copy_(self.x_host, non_blocking=True)
                if self.x_stage is not self.x:
                    self.x.copy_(self.x_stage)
            if self.mode == "cuda_graph":
                self.graph.replay()
                y = self.y
            else:
                if self.mode == "compile":
                    self.mark_step()
                y = self.model(self.x)
            if self.transfers:
                self.out_host.copy_(y, non_blocking=True)

    def round(self, warmup_s, duration_s):
        """Throughput from one pipelined loop between two CUDA events; latency from runs one
        at a time (each synchronized, so the queue is empty: a single request's time)."""
        torch = self.torch
        self.set_precision_flags()
        t0, n = time.perf_counter(), 0
        while n < 3 or time.perf_counter() - t0 < warmup_s:
            self.step()
            n += 1
        torch.cuda.synchronize()
        per_run = (time.perf_counter() - t0) / n
        runs = max(5, int(duration_s / 2 / max(per_run, 1e-6)))
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(runs):
            self.step()
        end.record()
        end.synchronize()
        throughput = self.batch * runs / (start.elapsed_time(end) / 1e3)
        lat = []
        for _ in range(runs):
            start.record()
            self.step()
            end.record()
            end.synchronize()
            lat.append(start.elapsed_time(end))
        return {"throughput": throughput, "latency_ms": percentiles(lat), "runs": runs,
                "peak_device_mib": self.peak_mib}


# ---------------------------------------------------------------------------------------
# kiln side.

def kiln_command(a, batch, precision, json_path):
    cmd = [a.kiln, "bench", a.onnx, "--device", "cuda", "--precision", precision, "--batch",
           str(batch), "--json", json_path, "--warmup", f"{a.warmup:g}", "--duration",
           f"{a.duration:g}"]
    if a.kiln_cuda_graph:
        cmd.append("--cuda-graph")
    if not a.with_transfers:
        cmd.append("--no-transfers")
    return cmd + shlex.split(a.kiln_args)


def run_kiln(a, batch, precision):
    """One kiln round; None (after printing why, with its stderr) when it fails."""
    with tempfile.TemporaryDirectory(prefix="kiln_peer_gpu_") as tmp:
        out = os.path.join(tmp, "result.json")
        cmd = kiln_command(a, batch, precision, out)
        try:
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  timeout=a.kiln_timeout)
        except (OSError, subprocess.TimeoutExpired) as e:
            say(f"  KILN FAILED: {shlex.join(cmd)}\n  {type(e).__name__}: {e}")
            return None
        if proc.returncode != 0:
            say(f"  KILN FAILED (exit {proc.returncode}): {shlex.join(cmd)}")
            say("  " + "\n  ".join((proc.stderr.strip() or "(no stderr)").splitlines()[-40:]))
            return None
        try:
            with open(out) as f:
                res = json.load(f)
        except (OSError, ValueError) as e:
            say(f"  KILN FAILED: no readable JSON ({e}): {shlex.join(cmd)}")
            return None
    # Older builds wrote throughput_ips and latency min/median/p90/p99.
    lat = res.get("latency_ms", {})
    res["throughput"] = res.get("throughput", res.get("throughput_ips"))
    res["latency_ms"] = {k: lat.get(k, lat.get("median") if k == "p50" else None)
                         for k in LAT_KEYS}
    if not isinstance(res["throughput"], (int, float)):
        say(f"  KILN FAILED: JSON without throughput: {res}")
        return None
    for key, want in (("batch", batch), ("precision", precision), ("device", "cuda"),
                      ("compute_only", not a.with_transfers)):
        if key in res and res[key] != want:
            say(f"  warning: kiln reports {key}={res[key]!r}, asked for {want!r}")
    return res


# ---------------------------------------------------------------------------------------

def summarize(rounds):
    """Medians across rounds of throughput, each latency percentile and peak memory."""
    if not rounds:
        return None
    med = lambda vals: statistics.median(vals) if vals else None
    lat = {k: med([r["latency_ms"][k] for r in rounds if r["latency_ms"].get(k) is not None])
           for k in LAT_KEYS}
    peaks = [r["peak_device_mib"] for r in rounds if r.get("peak_device_mib") is not None]
    return {"throughput": med([r["throughput"] for r in rounds]), "latency_ms": lat,
            "peak_device_mib": max(peaks) if peaks else None, "rounds": len(rounds),
            "per_round_throughput": [r["throughput"] for r in rounds]}


def run_case(a, batch, precision, modes):
    import torch
    say(f"== {a.model} batch {batch} {precision}: torch {', '.join(modes)} vs kiln")
    runners, torch_rounds, kiln_rounds, kiln_ok = {}, {m: [] for m in modes}, [], True
    for mode in modes:
        try:
            runners[mode] = TorchRunner(a, batch, precision, mode)
        except Exception as e:  # OOM, capture or compile failure: report, keep going
            say(f"  TORCH {mode} FAILED to build: {type(e).__name__}: {e}")
    for r in range(a.rounds):
        order = ["torch", "kiln"] if r % 2 == 0 else ["kiln", "torch"]
        for side in order:
            if side == "kiln" and kiln_ok:
                torch.cuda.empty_cache()  # hand PyTorch's cached blocks back for kiln's run
                res = run_kiln(a, batch, precision)
                kiln_ok = res is not None
                if res:
                    kiln_rounds.append(res)
                    say(f"  round {r + 1}/{a.rounds} kiln {'':13} {res['throughput']:10.1f} "
                        f"img/s  p50 {res['latency_ms']['p50'] or float('nan'):.3f} ms")
            elif side == "torch":
                for mode, runner in list(runners.items()):
                    try:
                        res = runner.round(a.warmup, a.duration)
                    except Exception as e:
                        say(f"  TORCH {mode} FAILED: {type(e).__name__}: {e}")
                        del runners[mode]
                        continue
                    torch_rounds[mode].append(res)
                    say(f"  round {r + 1}/{a.rounds} torch {mode:13} {res['throughput']:10.1f} "
                        f"img/s  p50 {res['latency_ms']['p50']:.3f} ms")
    runners.clear()
    if "compile" in modes and hasattr(torch, "_dynamo"):
        torch._dynamo.reset()
    torch.cuda.empty_cache()
    kiln = summarize(kiln_rounds)
    if kiln:  # what kiln reports beyond the timings (memory split, device ms, version)
        kiln["last_round"] = {k: v for k, v in kiln_rounds[-1].items()
                              if k not in ("throughput", "latency_ms")}
    rows = []
    for mode in modes:
        t = summarize(torch_rounds[mode])
        ratio = kiln["throughput"] / t["throughput"] if kiln and t else None
        rows.append({"model": a.model, "batch": batch, "precision": precision, "torch_mode": mode,
                     "torch": t, "kiln": kiln, "kiln_over_torch": ratio})
    return rows


def fmt(v, spec):
    """format(v, spec), or a dash as wide as the spec asks for a missing value."""
    if isinstance(v, (int, float)):
        return format(v, spec)
    width = spec.split(".")[0].lstrip(",")
    return "–".rjust(int(width) if width.isdigit() else 0)


def print_tables(rows, markdown):
    get = lambda row, side, *keys: (row[side] or {}).get(keys[0]) if len(keys) == 1 else \
        ((row[side] or {}).get(keys[0]) or {}).get(keys[1])
    say(f"\n{'model':13} {'batch':>5} {'prec':4} {'torch mode':13} {'torch img/s':>11} "
        f"{'kiln img/s':>10} {'kiln/torch':>10} {'torch p50':>9} {'kiln p50':>8} "
        f"{'torch MiB':>9} {'kiln MiB':>8}")
    for r in rows:
        say(f"{r['model']:13} {r['batch']:5d} {r['precision']:4} {r['torch_mode']:13} "
            f"{fmt(get(r, 'torch', 'throughput'), '11.1f')} "
            f"{fmt(get(r, 'kiln', 'throughput'), '10.1f')} {fmt(r['kiln_over_torch'], '10.3f')} "
            f"{fmt(get(r, 'torch', 'latency_ms', 'p50'), '9.3f')} "
            f"{fmt(get(r, 'kiln', 'latency_ms', 'p50'), '8.3f')} "
            f"{fmt(get(r, 'torch', 'peak_device_mib'), '9.0f')} "
            f"{fmt(get(r, 'kiln', 'peak_device_mib'), '8.0f')}")
    if markdown:
        say("\n| model | batch | precision | torch mode | torch img/s | kiln img/s | kiln/torch "
            "| torch p50 ms | kiln p50 ms | torch peak MiB | kiln peak MiB |\n"
            "|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            cells = [r["model"], str(r["batch"]), r["precision"], r["torch_mode"],
                     fmt(get(r, "torch", "throughput"), ",.0f"),
                     fmt(get(r, "kiln", "throughput"), ",.0f"), fmt(r["kiln_over_torch"], ".2f"),
                     fmt(get(r, "torch", "latency_ms", "p50"), ".3f"),
                     fmt(get(r, "kiln", "latency_ms", "p50"), ".3f"),
                     fmt(get(r, "torch", "peak_device_mib"), ",.0f"),
                     fmt(get(r, "kiln", "peak_device_mib"), ",.0f")]
            say("| " + " | ".join(cells) + " |")


def int_list(values):
    return [int(v) for item in values for v in str(item).split(",") if v]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="resnet50",
                   help="a torchvision classifier (default resnet50; without torchvision only "
                        + ", ".join(MODELS) + ")")
    p.add_argument("--onnx", help="the ONNX file kiln runs (default models/cache/MODEL.onnx)")
    p.add_argument("--batch", nargs="+", default=["1"], help="batch sizes, space or comma separated (default 1)")
    p.add_argument("--precision", nargs="+", choices=PRECISIONS, default=["fp16"],
                   help="default fp16")
    p.add_argument("--torch-mode", nargs="+", choices=TORCH_MODES,
                   default=["eager", "channels_last", "cuda_graph"],
                   help="eager: NCHW; channels_last: NHWC eager; cuda_graph: NHWC replayed from "
                        "a CUDA graph; compile: NHWC torch.compile (default: the first three)")
    p.add_argument("--compile", action="store_true", help="add the torch.compile mode")
    p.add_argument("--compile-mode", default="reduce-overhead",
                   help="torch.compile mode (default reduce-overhead: inductor + CUDA graphs; "
                        "max-autotune-no-cudagraphs or max-autotune tune for minutes)")
    p.add_argument("--rounds", type=int, default=5, help="default 5")
    p.add_argument("--warmup", type=float, default=1.0, help="untimed seconds per round (1)")
    p.add_argument("--duration", type=float, default=3.0, help="timed seconds per round (3)")
    p.add_argument("--with-transfers", action="store_true",
                   help="time host->device input and device->host output copies on both sides "
                        "(pinned host memory); default: compute only (kiln --no-transfers)")
    p.add_argument("--kiln", default="kiln", help="the kiln binary (default: kiln on PATH)")
    p.add_argument("--kiln-cuda-graph", action=argparse.BooleanOptionalAction, default=True,
                   help="pass --cuda-graph to kiln (default yes)")
    p.add_argument("--kiln-args", default="", help="extra arguments for kiln bench")
    p.add_argument("--kiln-timeout", type=float, default=900, help="seconds per kiln run (900)")
    p.add_argument("--out", help="write all results as JSON here (rewritten after each case)")
    p.add_argument("--markdown", action="store_true", help="also print a Markdown table")
    p.add_argument("--dry-run", action="store_true", help="print the cases and exit")
    a = p.parse_args()
    try:
        a.batch = int_list(a.batch)
    except ValueError:
        p.error(f"--batch: integers expected, got {a.batch}")
    if min(a.batch) < 1 or a.rounds < 1 or a.duration <= 0 or a.warmup < 0:
        p.error("--batch and --rounds must be >= 1, --duration > 0, --warmup >= 0")
    a.onnx = a.onnx or os.path.join(ROOT, "models", "cache", f"{a.model}.onnx")
    modes = list(dict.fromkeys(a.torch_mode + (["compile"] if a.compile else [])))
    cases = [(b, prec) for prec in a.precision for b in a.batch]
    command = shlex.join([sys.argv[0]] + sys.argv[1:])

    if a.dry_run:
        say(f"model {a.model}, kiln runs {a.onnx}{'' if os.path.isfile(a.onnx) else ' (MISSING)'}")
        say(f"{a.rounds} alternating rounds of {a.warmup:g} s warmup + {a.duration:g} s timed, "
            f"{'with' if a.with_transfers else 'without'} host<->device transfers")
        for b, prec in cases:
            say(f"batch {b:4d} {prec}: torch {', '.join(modes)}"
                + (f" (compile mode {a.compile_mode})" if "compile" in modes else ""))
            say(f"  kiln: {shlex.join(kiln_command(a, b, prec, 'RESULT.json'))}")
        return 0

    import torch
    if not torch.cuda.is_available():
        sys.exit("peer_gpu: no CUDA device visible to PyTorch")
    if not os.path.isfile(a.onnx):
        say(f"peer_gpu: {a.onnx}: no such file (kiln rounds will fail; export it with "
            f"scripts/models/export_torchvision.py {a.model})")
    torch.backends.cudnn.benchmark = True  # PyTorch's fastest convolutions, as kiln tunes its own
    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
            "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "command": command, "rounds": a.rounds, "warmup_s": a.warmup,
            "duration_s": a.duration, "compute_only": not a.with_transfers,
            "compile_mode": a.compile_mode if "compile" in modes else None}
    say(f"{meta['gpu']}, torch {meta['torch']} (CUDA {meta['cuda']}, cuDNN {meta['cudnn']}), "
        f"{meta['date']}")
    rows = []
    for b, prec in cases:
        rows += run_case(a, b, prec, modes)
        if a.out:
            with open(a.out, "w") as f:
                json.dump({"meta": meta, "results": rows}, f, indent=2)
    print_tables(rows, a.markdown)
    say(f"median of {a.rounds} alternating rounds; {meta['gpu']}; {meta['date']}\n"
        f"command: {command}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
