#!/usr/bin/env python3
"""PyTorch rows for `kiln bench --ladder --peer-torch NAME`: eager fp32, eager fp16 and
torch.compile fp16 of the torchvision model NAME, with copies (pinned input uploaded, output
downloaded every step), timed the way bench/peer_gpu.py times them.

  bench/ladder_torch.py --model resnet50 --batch 256 --warmup 1 --duration 3 --rounds 3
                        --baseline-used-mib 1234 --json out.json

Writes {"torch_version", "rows": [{"name", "config", "round_ips", "p50_ms", "p99_ms",
"own_mib", "used_mib"}]}. own_mib is PyTorch's peak allocated memory for the row; used_mib the
GPU's used memory (total - free) after the row, less --baseline-used-mib (what the GPU used
before kiln started). Exits 3, saying why on stderr, where PyTorch or a GPU is missing.
"""

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

ROWS = (  # name, precision, peer_gpu.TorchRunner mode
    ("PyTorch eager fp32", "fp32", "eager"),
    ("PyTorch eager fp16, channels_last", "fp16", "channels_last"),
    ("torch.compile fp16", "fp16", "compile"),
)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", required=True, help="a torchvision model name (resnet50...)")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--warmup", type=float, default=1.0)
    p.add_argument("--duration", type=float, default=3.0)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--compile-mode", default="reduce-overhead")
    p.add_argument("--baseline-used-mib", type=float, default=0.0)
    p.add_argument("--json", required=True)
    a = p.parse_args()
    try:
        import torch
    except Exception as e:  # not installed, or broken
        print(f"cannot import torch: {type(e).__name__}: {e}", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("PyTorch sees no CUDA GPU", file=sys.stderr)
        return 3
    from peer_gpu import TorchRunner

    a.with_transfers = True  # what TorchRunner reads
    rows = []
    for name, precision, mode in ROWS:
        row = {"name": name, "config": f"torch {torch.__version__} {precision} {mode}, "
               f"pinned input and output copied each step", "round_ips": []}
        try:
            r = TorchRunner(a, a.batch, precision, mode)
            lat = []
            for _ in range(a.rounds):
                res = r.round(a.warmup, a.duration)
                row["round_ips"].append(res["throughput"])
                lat.append(res["latency_ms"])
            row["p50_ms"] = statistics.median(x["p50"] for x in lat)
            row["p99_ms"] = max(x["p99"] for x in lat)
            row["own_mib"] = r.peak_mib
            free, total = torch.cuda.mem_get_info()
            row["used_mib"] = (total - free) / 2**20 - a.baseline_used_mib
            del r
        except Exception as e:  # one row failing leaves the others
            row["failed"] = f"{type(e).__name__}: {e}"
        torch.cuda.empty_cache()
        rows.append(row)
        print(f"{name}: {row.get('round_ips') or row.get('failed')}", file=sys.stderr, flush=True)
    with open(a.json, "w") as f:
        json.dump({"torch_version": torch.__version__, "rows": rows}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
