#!/usr/bin/env python3
"""`kiln serve` on the GPU: served throughput against the offline Pipeline, the transport's
ceiling, capacity, latency at 70% and 2x capacity, and resident memory under overload.

  bench/serve_gpu.py --kiln build/kiln --onnx resnet50.onnx --out DIR
                     [--client-cpus 0-5] [--server-cpus 6-15] [--duration 8] [--concurrency 256]
                     [--max-batch 256] [--instances 4] [--queue-delay-us 2000] [--max-queue 512]
                     [--overload-seconds 60] [--timing-cache FILE] [--jpegs DIR]
                     [--sweep-instances 1,2] [--ab-blocking-sync] [--dry-run]

The model is served fp16 with CUDA graphs and raw uint8 NHWC inputs (input_format
uint8-nhwc: the client sends 224x224x3 bytes a request), and again as resnet50_jpeg taking
JPEG files (--jpegs DIR, BYTES inputs decoded by the server); a no-op model of the same input and
output (the first 1000 input values as floats, exported with PyTorch) measures what the
transport and batcher cost alone. Every load comes from `kiln perf`, pinned to --client-cpus
while the server runs on --server-cpus. Steps, each logged in DIR/serve.log:
  1. offline: `kiln bench` at --max-batch through a Pipeline of --instances contexts with
     copies from pinned memory (uint8 NHWC): the ceiling served throughput is measured against;
  2. the server loads both models (every batch size's plan built at load);
  3. no-op over gRPC, then ResNet-50 over gRPC at --concurrency b1 clients, with --instances
     and with each count of --sweep-instances (models resnet50_iN) and, with
     --ab-blocking-sync, with the option cuda_blocking_sync (resnet50_bsync); the fastest goes on to
     HTTP binary (and JPEG bodies over gRPC) and every later step;
  4. lightly loaded (concurrency 1): p50_light;
  5. capacity: after a warm-up, Poisson request rates from 40% to 100% of the served
     throughput (from 10% where none of those holds); capacity is the highest rate whose
     p99 <= 2 x p50_light with nothing refused;
  6. 70% of capacity (p99 against p50), and 2x capacity for --overload-seconds: p99 of what
     was admitted, how many were refused (REJECTED in /metrics), the server's RSS every second.
The figures land in DIR/serve.json.
"""

import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
import urllib.request


def say(*args):
    print(*args, flush=True)


class Run:
    def __init__(self, out, dry):
        self.out, self.dry = out, dry
        self.log = open(os.path.join(out, "serve.log"), "a")

    def cmd(self, argv, timeout):
        line = " ".join(shlex.quote(a) for a in argv)
        self.log.write(f"== {line}\n")
        self.log.flush()
        if self.dry:
            say("dry-run:", line)
            return ""
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=timeout)
        self.log.write(r.stdout)
        self.log.flush()
        if r.returncode != 0:
            say(f"FAILED ({r.returncode}): {line}\n{r.stdout[-2000:]}")
        return r.stdout


def write_noop(path):
    import torch

    class Noop(torch.nn.Module):
        def forward(self, x):
            return x.flatten(1)[:, :1000] * 1.0

    torch.onnx.export(Noop(), torch.zeros(1, 3, 224, 224), path, input_names=["input"],
                      output_names=["logits"], dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}},
                      opset_version=17, dynamo=False)


def config(a, instances=None, extra=None):
    params = {"precision": "fp16", "input_format": "uint8-nhwc", "cuda_graph": "true"}
    params.update(extra or {})
    if a.timing_cache:
        params["timing_cache"] = a.timing_cache
    p = "".join(f'parameters {{ key: "{k}" value {{ string_value: "{v}" }} }}\n'
                for k, v in params.items())
    return (f"max_batch_size: {a.max_batch}\n"
            f"dynamic_batching {{ max_queue_delay_microseconds: {a.queue_delay_us}\n"
            f"  default_queue_policy {{ max_queue_size: {a.max_queue} }} }}\n"
            f"instance_group [ {{ count: {instances or a.instances} kind: KIND_GPU }} ]\n" + p)


def sweep_counts(a):
    return [int(n) for n in a.sweep_instances.split(",") if n and int(n) != a.instances]


def make_repository(a, repo):
    models = [("resnet50", a.onnx, None), ("noop", os.path.join(repo, "noop.onnx"), None)]
    models += [(f"resnet50_i{n}", a.onnx, n) for n in sweep_counts(a)]
    if a.jpegs:
        models.append(("resnet50_jpeg", a.onnx, None))
    if a.ab_blocking_sync:
        models.append(("resnet50_bsync", a.onnx, None))
    for name, onnx, instances in models:
        os.makedirs(os.path.join(repo, name, "1"), exist_ok=True)
        if name == "noop" and not os.path.exists(onnx) and not a.dry_run:
            write_noop(onnx)
        dst = os.path.join(repo, name, "1", "model.onnx")
        if not os.path.lexists(dst):
            os.symlink(os.path.abspath(onnx), dst)
        with open(os.path.join(repo, name, "config.pbtxt"), "w") as f:
            extra = {"cuda_blocking_sync": "true"} if name.endswith("_bsync") else None
            f.write(config(a, instances, extra))
            if name.endswith("_jpeg"):  # encoded images, decoded by the server
                f.write('input [ { name: "input" data_type: TYPE_STRING dims: [ 1 ] } ]\n')


def get(url, timeout=2):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read().decode()


def wait_ready(server, timeout):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if server.poll() is not None:
            return False
        try:
            if get("http://127.0.0.1:8000/v2/health/ready")[0] == 200:
                return True
        except OSError:
            pass
        time.sleep(1)
    return False


def rejected(model):
    try:
        text = get("http://127.0.0.1:8002/metrics")[1]
    except OSError:
        return None
    m = re.search(r'nv_inference_request_failure\{[^}]*model="%s"[^}]*reason="REJECTED"[^}]*\} (\S+)'
                  % model, text)
    return float(m.group(1)) if m else 0.0


def rss_sampler(pid, stop, samples):
    while not stop.is_set():
        try:
            with open(f"/proc/{pid}/status") as f:
                kb = int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))
            samples.append((time.time(), kb / 1024.0))
        except (OSError, AttributeError):
            pass
        stop.wait(1.0)


def ab_pinned(a, run, perf, c):
    """The default server's resnet50 against a second server's with --pinned-batches, at
    concurrency c, alternating, 2 rounds; infer/s and input µs of each."""
    repo = "/tmp/kiln-serve-repo-pinned"
    os.makedirs(os.path.join(repo, "resnet50", "1"), exist_ok=True)
    dst = os.path.join(repo, "resnet50", "1", "model.onnx")
    if not os.path.lexists(dst):
        os.symlink(os.path.abspath(a.onnx), dst)
    with open(os.path.join(repo, "resnet50", "config.pbtxt"), "w") as f:
        f.write(config(a))
    log = open(os.path.join(a.out, "server_pinned.log"), "w")
    other = subprocess.Popen(["taskset", "-c", a.server_cpus, a.kiln, "serve", "--model-repository",
                              repo, "--http-port", "9000", "--grpc-port", "9001", "--metrics-port",
                              "9002", "--http-threads", str(a.concurrency + 64), "--pinned-batches"],
                             stdout=log, stderr=subprocess.STDOUT)
    out = {"pageable": [], "pinned": []}
    try:
        t0 = time.time()
        while time.time() - t0 < a.load_timeout and other.poll() is None:
            try:
                if get("http://127.0.0.1:9000/v2/health/ready")[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(1)
        for r in range(2):
            for kind in ("pageable", "pinned"):
                if kind == "pageable":
                    got = perf("resnet50", "grpc", c, tag=f"ab{r}")
                else:
                    path = os.path.join(a.out, f"perf_resnet50_pinned_ab{r}.json")
                    run.cmd(["taskset", "-c", a.client_cpus, a.kiln, "perf", "-m", "resnet50", "-u",
                             "127.0.0.1:9001", "--metrics-url", "127.0.0.1:9002", "--duration",
                             str(a.duration), "--json", path, "-i", "grpc", *c], 900)
                    try:
                        got = json.load(open(path))
                    except (OSError, ValueError):
                        got = []
                if got:
                    g = got[0]
                    out[kind].append((round(g["infer_per_s"]), round(g["server_input_us"]),
                                      "join/wait/copy/h2d", *(round(g.get("server_input_" + k, 0))
                                      for k in ("join_us", "staging_wait_us", "staging_copy_us", "h2d_us"))))
    finally:
        other.send_signal(signal.SIGTERM)
        try:
            other.wait(90)
        except subprocess.TimeoutExpired:
            other.kill()
    say("pinned batches A/B (infer/s, input us, and its join/staging wait/staging copy/h2d us):", out)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kiln", required=True)
    p.add_argument("--onnx", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--client-cpus", default="0-5")
    p.add_argument("--server-cpus", default="6-15")
    p.add_argument("--duration", type=float, default=8)
    p.add_argument("--concurrency", type=int, default=256)
    p.add_argument("--max-batch", type=int, default=256)
    p.add_argument("--instances", type=int, default=4)
    p.add_argument("--queue-delay-us", type=int, default=2000)
    p.add_argument("--max-queue", type=int, default=512)
    p.add_argument("--max-threads", type=int, default=1024)
    p.add_argument("--overload-seconds", type=float, default=60)
    p.add_argument("--timing-cache", default="")
    p.add_argument("--jpegs", default="", help="a folder of JPEGs for the encoded-image model")
    p.add_argument("--sweep-instances", default="",
                   help="instance counts also served at --concurrency (models resnet50_iN)")
    p.add_argument("--ab-blocking-sync", action="store_true",
                   help="also serve the model with cuda_blocking_sync (resnet50_bsync), at "
                        "--concurrency right after the default")
    p.add_argument("--ab-pinned-batches", action="store_true",
                   help="also run a second server with --pinned-batches (ports 9000-9002, "
                        "resnet50 only) and alternate the two at --concurrency, 2 rounds")
    p.add_argument("--load-timeout", type=float, default=400)
    p.add_argument("--dry-run", action="store_true")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    run = Run(a.out, a.dry_run)
    res = {"client_cpus": a.client_cpus, "server_cpus": a.server_cpus, "config": config(a)}
    tc = ["--timing-cache", a.timing_cache] if a.timing_cache else []

    # 1. offline, before the server holds the GPU
    out = run.cmd(["taskset", "-c", a.server_cpus, a.kiln, "bench", "--device", "cuda", a.onnx,
                   "--precision", "fp16", "--cuda-graph", "--batch", str(a.max_batch),
                   "--input-format", "uint8-nhwc", "--pinned", "--streams", str(a.instances),
                   "--duration", "4", *tc], 300)
    rows = [l.split() for l in out.splitlines() if l.startswith(os.path.basename(a.onnx))]
    res["offline_img_s"] = float(rows[0][-1]) if rows else None
    say("offline:", res["offline_img_s"], "img/s")

    # 2. the server
    repo = "/tmp/kiln-serve-repo"
    make_repository(a, repo)
    if a.dry_run:
        return 0
    server_log = open(os.path.join(a.out, "server.log"), "w")
    t0 = time.time()
    server = subprocess.Popen(["taskset", "-c", a.server_cpus, a.kiln, "serve", "--model-repository",
                               repo, "--http-port", "8000", "--grpc-port", "8001",
                               "--metrics-port", "8002", "--http-threads", str(a.concurrency + 64)],
                              stdout=server_log, stderr=subprocess.STDOUT)
    try:
        if not wait_ready(server, a.load_timeout):
            say("the server did not become ready; see server.log")
            return 1
        res["load_s"] = time.time() - t0
        say(f"server ready after {res['load_s']:.0f} s")

        def perf(model, proto, levels, extra=(), dur=None, tag=""):
            path = os.path.join(a.out, f"perf_{model}_{proto}_{tag}.json")
            url = "127.0.0.1:8001" if proto == "grpc" else "127.0.0.1:8000"
            argv = ["taskset", "-c", a.client_cpus, a.kiln, "perf", "-m", model, "-u", url,
                    "--metrics-url", "127.0.0.1:8002", "--duration", str(dur or a.duration),
                    "--json", path, *levels, *extra]
            argv += ["-i", "grpc"] if proto == "grpc" else ["--binary"]
            say("\n".join(run.cmd(argv, 900).strip().splitlines()[-8:]))
            try:
                return json.load(open(path))
            except (OSError, ValueError):
                return []

        c = ["--concurrency-range", str(a.concurrency)]
        res["noop_grpc"] = perf("noop", "grpc", c, tag="c")
        res["r50_grpc"] = perf("resnet50", "grpc", c, tag="c")
        rate = lambda r: r[0]["infer_per_s"] if r else 0
        best, served = "resnet50", rate(res["r50_grpc"])
        res["instances"] = {str(a.instances): served}
        if a.ab_blocking_sync:
            r = perf("resnet50_bsync", "grpc", c, tag="c")
            res["r50_bsync_grpc"] = r
            res["blocking_sync"] = {"spin": served, "block": rate(r)}
            if rate(r) > served:
                best, served = "resnet50_bsync", rate(r)
        if a.ab_pinned_batches:
            res["pinned_batches"] = ab_pinned(a, run, perf, c)
        for n in sweep_counts(a):
            r = perf(f"resnet50_i{n}", "grpc", c, tag="c")
            res[f"r50_i{n}_grpc"] = r
            res["instances"][str(n)] = rate(r)
            if rate(r) > served:
                best, served = f"resnet50_i{n}", rate(r)
        res["best_model"], res["served_img_s"] = best, served
        say(f"best: {best} at {served:.0f} infer/s")
        res["r50_http"] = perf(best, "http", c, tag="c")
        res["r50_grpc_light"] = perf(best, "grpc", ["--concurrency-range", "1"], tag="light")
        if a.jpegs:
            res["r50_jpeg_grpc"] = perf("resnet50_jpeg", "grpc", c, ["--images", a.jpegs], tag="c")
        p50_light = res["r50_grpc_light"][0]["p50_us"] if res["r50_grpc_light"] else 0
        if res["offline_img_s"]:
            res["served_over_offline"] = served / res["offline_img_s"]

        # 5. capacity, after a warm-up at the sweep's first rate
        rate_args = ["--request-distribution", "poisson", "--max-threads", str(a.max_threads)]
        perf(best, "grpc", ["--request-rate-range", f"{0.4 * served:.0f}"], rate_args, dur=3,
             tag="warm")
        sweep = []
        for lo, hi in ((0.4, 1.0), (0.1, 0.35)):
            step = 0.1 if lo == 0.4 else 0.05
            sweep += perf(best, "grpc", ["--request-rate-range",
                                         f"{lo * served:.0f}:{hi * served:.0f}:{step * served:.0f}"],
                          rate_args, tag=f"sweep{lo}")
            if any(l["failed"] == 0 and l["p99_us"] <= 2 * p50_light for l in sweep):
                break
        res["sweep"] = sweep
        ok = [l for l in sweep if l["failed"] == 0 and l["p99_us"] <= 2 * p50_light]
        cap = max((l["request_rate"] for l in ok), default=0)
        res["capacity_req_s"], res["p50_light_us"] = cap, p50_light
        say(f"capacity {cap:.0f} req/s (p50 light {p50_light:.0f} us)")
        if cap:
            res["at_70"] = perf(best, "grpc", ["--request-rate-range", f"{0.7 * cap:.0f}"],
                                rate_args, tag="70")
            before = rejected(best)
            stop, samples = threading.Event(), []
            th = threading.Thread(target=rss_sampler, args=(server.pid, stop, samples))
            th.start()
            res["at_2x"] = perf(best, "grpc", ["--request-rate-range", f"{2 * cap:.0f}"],
                                rate_args, dur=a.overload_seconds, tag="2x")
            stop.set()
            th.join()
            after = rejected(best)
            res["at_2x_rejected"] = None if before is None or after is None else after - before
            res["rss_mib"] = [round(s[1], 1) for s in samples]
            if len(samples) > 4:
                first, last = samples[1][1], samples[-1][1]
                res["rss_growth"] = (last - first) / first
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            res["sigterm_exit"] = server.wait(90)
        except subprocess.TimeoutExpired:
            server.kill()
            res["sigterm_exit"] = "killed after 90 s"
        json.dump(res, open(os.path.join(a.out, "serve.json"), "w"), indent=2)
    for k in ("offline_img_s", "instances", "blocking_sync", "pinned_batches", "best_model", "served_over_offline", "capacity_req_s", "p50_light_us",
              "at_2x_rejected", "rss_growth", "sigterm_exit"):
        say(f"{k}: {res.get(k)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
