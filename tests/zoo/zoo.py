#!/usr/bin/env python3
"""kiln's model zoo: every torchvision classifier and segmentation net, kiln against ONNX Runtime.

    zoo.py models [--tier ci|full|all]
    zoo.py prepare NAME... [--cache DIR]
    zoo.py check NAME...|--tier T --runner build/tests/zoo/kiln_zoo_run [--device cpu|cuda]
                 [--precisions fp32,tf32,fp16] [--cache DIR] [--results FILE.jsonl] [--jobs N]
                 [--runner-arg=ARG ...]
    zoo.py report FILE.jsonl... --out bench/results/zoo.md

Each model (tests/zoo/models.txt) is made as training would leave it: seeded random weights,
BatchNorm statistics recalibrated on random images (reset, cumulative average, several batches
in train mode). It is exported at opset 17 with a symbolic batch axis; its inputs are seeded
standard-normal images at batch 1 and batch 3; ONNX Runtime (CPU, fp32) gives the reference
outputs. `prepare` makes these once into the cache (default models/cache/zoo); where PyTorch has
CUDA it also keeps PyTorch's own tf32, fp16 and bf16 outputs, the yardstick for kiln's.

`check` runs each model through kiln_zoo_run (tests/zoo/zoo_run.cc: one process per model,
one engine per precision, every batch through it) and compares:
  - fp32: relative L2 error at most 1e-4; where deep nets amplify fp32 rounding beyond that,
    kiln's distance from the model run in float64 (by PyTorch) at most twice ONNX Runtime's;
  - tf32, fp16, bf16: relative L2 within twice PyTorch's own error in that precision on the
    same weights and inputs (and at least 2e-3 for tf32, 1e-2 for fp16, 0.15 for bf16); cosine similarity at least
    0.999, or what PyTorch's own error allows where it is below that (InceptionV3 in fp16);
  - int8, fp8 (calibrated on 32 other seeded standard-normal images, calib.npy): relative L2
    within 0.1 and cosine at least 0.99; outside that, the case passes as "named" when the
    precision report (kiln_zoo_run --report) names the layers where the error comes in;
  - every precision: top-1 (per image; per pixel for segmentation) as the reference's, except
    where the reference's two classes are closer than twice the engine's largest error on that
    image (1% of the pixels may differ on segmentation maps).
On the CPU, the fp16 range guard (kiln/fp16_range.h) runs on the same inputs and must stay
quiet: these models are made to stay inside fp16's range. Every reference output must be
finite and inside fp16's range (|x| <= 65504, most values above
fp16's smallest normal), or the model is reported as made wrong. Each case is one JSON line in
--results; the exit status is 1 if any case failed.
"""
import argparse
import concurrent.futures as cf
import json
import math
import os
import re
import shutil
import subprocess
import sys
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BATCHES = (1, 3)
FP16_MAX = 65504.0
FP16_MIN_NORMAL = 6.103515625e-05
# bf16 without PyTorch's yardstick (CPU caches): ResNet-50's own bf16 error is 0.115 on the
# GPU (scripts/gpu/torch_precision_error.py), so its floor is 0.15 and its cosine floor 0.99.
FLOOR = {"fp32": 1e-4, "tf32": 2e-3, "fp16": 1e-2, "bf16": 0.15, "int8": 0.1, "fp8": 0.1}
COSINE_FLOOR = {"bf16": 0.99, "int8": 0.99, "fp8": 0.99}
# 8-bit engines calibrate on CALIB_SAMPLES seeded standard-normal images like the inputs (not
# the inputs themselves), kept as calib.npy beside the model.
EIGHT_BIT = ("int8", "fp8")
CALIB_SAMPLES = 32
COSINE_MIN = 0.999


def read_models():
    models = []
    with open(os.path.join(HERE, "models.txt")) as f:
        for line in f:
            line = line.split("#", 1)[0].split()
            if line:
                name, family, tier, kind = line
                models.append({"name": name, "family": family, "tier": tier, "kind": kind})
    return models


MODELS = {m["name"]: m for m in read_models()}


def select(names, tier):
    if names:
        unknown = [n for n in names if n not in MODELS]
        if unknown:
            raise SystemExit(f"zoo: unknown model(s) {', '.join(unknown)} (see tests/zoo/models.txt)")
        return names
    return [m["name"] for m in MODELS.values() if tier in ("all", m["tier"])]


# ---- preparing: export, inputs, references ----------------------------------------------------

def model_dir(cache, name):
    return os.path.join(cache, name)


def prepared(cache, name):
    d = model_dir(cache, name)
    return all(os.path.exists(os.path.join(d, f"b{b}", f)) for b in BATCHES
               for f in ("ref/logits.npy", "torch_fp64.npy"))


def float64_outputs(model, xs):
    """The model in float64: the truth fp32 engines round away from. On the GPU where there is
    one (an H200 runs float64 at 67 TFLOP/s; the big nets took minutes on the CPU)."""
    import copy  # noqa: PLC0415
    import torch  # noqa: PLC0415
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    m = copy.deepcopy(model).double().eval().to(dev)
    with torch.no_grad():
        ys = [m(torch.from_numpy(x).double().to(dev)).cpu().numpy() for x in xs]
    del m
    if dev.type == "cuda":
        torch.cuda.empty_cache()
    return ys


def ort_reference(onnx_path, x, out_dir):
    """ONNX Runtime's outputs for input x into out_dir/<name>.npy: the Python module where it
    is installed, else Node's onnxruntime-node through scripts/ort/ort_run.mjs."""
    os.makedirs(out_dir, exist_ok=True)
    try:
        import onnxruntime as ort  # noqa: PLC0415
    except ImportError:
        ort = None
    if ort is not None:
        so = ort.SessionOptions()
        so.intra_op_num_threads = int(os.environ.get("KILN_ZOO_THREADS", "2"))
        sess = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
        outs = sess.run(None, {"input": x})
        for meta, y in zip(sess.get_outputs(), outs):
            np.save(os.path.join(out_dir, meta.name + ".npy"), np.asarray(y, np.float32))
        return
    xin = out_dir + ".input.npy"
    np.save(xin, x)
    subprocess.run(["node", os.path.join(ROOT, "scripts/ort/ort_run.mjs"), onnx_path,
                    "--input", f"input={xin}", "--output-dir", out_dir,
                    "--threads", os.environ.get("KILN_ZOO_THREADS", "2")],
                   check=True, stdout=subprocess.DEVNULL)
    os.remove(xin)


def torch_outputs(model, xs):
    """PyTorch's own tf32, fp16 and bf16 outputs on the GPU for each input (its yardstick), as
    {precision: [output per input]}, or {} without CUDA. `model` itself is left as it was."""
    import copy  # noqa: PLC0415
    import torch  # noqa: PLC0415
    if not torch.cuda.is_available():
        return {}
    dev = torch.device("cuda")
    outs = {"tf32": [], "fp16": [], "bf16": []}
    with torch.no_grad():
        m = copy.deepcopy(model).to(dev).eval()
        old = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
        for x in xs:
            outs["tf32"].append(m(torch.from_numpy(x).to(dev)).float().cpu().numpy())
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old
        for prec, dt in (("fp16", torch.float16), ("bf16", torch.bfloat16)):
            m = m.to(dt).to(memory_format=torch.channels_last)
            for x in xs:
                xh = torch.from_numpy(x).to(dev).to(dt).contiguous(memory_format=torch.channels_last)
                outs[prec].append(m(xh).float().cpu().numpy())
        del m
        torch.cuda.empty_cache()
    return outs


def prepare(cache, name):
    """Exports `name` (once) with inputs and ONNX Runtime's outputs at every batch."""
    if prepared(cache, name):
        return
    sys.path.insert(0, os.path.join(ROOT, "scripts/models"))
    import torch  # noqa: PLC0415
    import export_torchvision as ex  # noqa: PLC0415
    torch.set_num_threads(int(os.environ.get("KILN_ZOO_THREADS", "2")))
    d = model_dir(cache, name)
    refs = [os.path.join(d, f"b{b}", "ref", "logits.npy") for b in BATCHES]
    if all(os.path.exists(r) for r in refs):
        # Made before the float64 outputs were kept: the same seeded model, rebuilt, gives them.
        model = ex.build(name, seed=0, calib_batches=4)
        xs = [np.load(os.path.join(d, f"b{b}", "input.npy")) for b in BATCHES]
        for b, y in zip(BATCHES, float64_outputs(model, xs)):
            np.save(os.path.join(d, f"b{b}", "torch_fp64.npy"), y)
        return
    tmp = d + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    t0 = time.time()
    model = ex.build(name, seed=0, calib_batches=4)
    if MODELS[name]["kind"] == "seg" and not isinstance(model, ex.SegmentationOut):
        raise SystemExit(f"{name}: expected a segmentation model")
    onnx_path = os.path.join(tmp, "model.onnx")
    ex.export_onnx(model, onnx_path, opset=17)
    xs = [np.random.RandomState(100 + b).standard_normal((b, 3, 224, 224)).astype(np.float32)
          for b in BATCHES]
    theirs = torch_outputs(model, xs)
    theirs["fp64"] = float64_outputs(model, xs)
    for i, (b, x) in enumerate(zip(BATCHES, xs)):
        bd = os.path.join(tmp, f"b{b}")
        os.makedirs(bd)
        np.save(os.path.join(bd, "input.npy"), x)
        for prec, ys in theirs.items():
            np.save(os.path.join(bd, f"torch_{prec}.npy"), ys[i])
        ort_reference(onnx_path, x, os.path.join(bd, "ref"))
    with open(os.path.join(tmp, "made.json"), "w") as f:
        import torchvision  # noqa: PLC0415
        json.dump({"torch": torch.__version__, "torchvision": torchvision.__version__,
                   "seconds": round(time.time() - t0, 1)}, f)
    shutil.rmtree(d, ignore_errors=True)
    os.replace(tmp, d)


# ---- checking -------------------------------------------------------------------------------

def rel_l2(got, want):
    got, want = got.astype(np.float64).ravel(), want.astype(np.float64).ravel()
    n = np.linalg.norm(want)
    return float(np.linalg.norm(got - want) / (n if n > 0 else 1.0))


def cosine(got, want):
    got, want = got.astype(np.float64).ravel(), want.astype(np.float64).ravel()
    d = np.linalg.norm(got) * np.linalg.norm(want)
    return float(got @ want / d) if d > 0 else (1.0 if not got.any() and not want.any() else 0.0)


def top1_agreement(got, want):
    """Fraction of images (classifiers: [B,C]) or pixels (segmentation: [B,C,H,W]) whose
    argmax over the classes agrees."""
    return float(np.mean(np.argmax(got, axis=1) == np.argmax(want, axis=1)))


def top1_unexplained(got, want):
    """Fraction of images (pixels) whose top-1 differs from the reference's by more than the
    engine's own error explains: a flip between two classes whose reference scores are closer
    than twice the largest error on that image is rounding, not a wrong answer."""
    g, w = np.moveaxis(got, 1, -1), np.moveaxis(want, 1, -1)  # [..., classes]
    g, w = g.reshape(-1, g.shape[-1]), w.reshape(-1, w.shape[-1])
    gi, wi = np.argmax(g, axis=1), np.argmax(w, axis=1)
    rows = np.arange(len(gi))
    margin = w[rows, wi] - w[rows, gi]
    band = 2 * np.max(np.abs(g - w), axis=1)
    return float(np.mean((gi != wi) & (margin > band)))


def range_problem(ref):
    """Why a reference output is no fit for an fp16 comparison, or None."""
    if not np.all(np.isfinite(ref)):
        return "reference output has inf or NaN"
    if ref.size > 1 and np.ptp(ref) == 0:
        return "reference output is constant: a comparison against it checks nothing"
    a = np.abs(ref)
    if a.max() > FP16_MAX:
        return f"reference output reaches {a.max():.3g}, beyond fp16's 65504"
    nz = a[a > 0]
    if nz.size and np.mean(nz < FP16_MIN_NORMAL) > 0.5:
        return f"most reference values are below fp16's smallest normal (median {np.median(nz):.3g})"
    return None


def calibration_samples(d):
    """The model's calibration samples (made once): CALIB_SAMPLES seeded standard-normal images
    of its input's shape, drawn apart from the inputs."""
    path = os.path.join(d, "calib.npy")
    if not os.path.exists(path):
        shape = np.load(os.path.join(d, f"b{BATCHES[0]}", "input.npy")).shape[1:]
        x = np.random.default_rng(20261207).standard_normal((CALIB_SAMPLES, *shape))
        tmp = path + f".{os.getpid()}.npy"
        np.save(tmp, x.astype(np.float32))
        os.replace(tmp, path)
    return path


def run_model(args, name, precisions):
    """Runs every case of `name` through kiln_zoo_run (one process, one engine per precision);
    returns {(precision, batch): info} and the folder holding the outputs."""
    d = model_dir(args.cache, name)
    out_dir = os.path.join(args.work, f"{name}-{args.device}")
    shutil.rmtree(out_dir, ignore_errors=True)
    eight_bit = [p for p in precisions if p in EIGHT_BIT]
    cmd = [args.runner, os.path.join(d, "model.onnx"), out_dir, "--device", args.device,
           "--precisions", ",".join(precisions), *args.runner_arg,
           *(["--fp16-range"] if args.device == "cpu" else []),
           *(["--calib", calibration_samples(d)] if eight_bit else []),
           *(["--report"] if any(p != "fp32" for p in precisions) else []),
           *[os.path.join(d, f"b{b}", "input.npy") for b in BATCHES]]
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
        log, code = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        log, code = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""), -1
        log += f"\nkiln_zoo_run: timed out after {args.timeout} s"
    wall = round(time.time() - t0, 1)
    infos, reports = {}, {}
    fp16 = None
    for line in log.splitlines():
        if mt := re.match(r"fp16-range (\d+) (\d+)(?:: (.*))?", line):
            fp16 = {"fp16_range_findings": int(mt.group(1)), "fp16_range_values": int(mt.group(2))}
            if mt.group(3):
                fp16["fp16_range_first"] = mt.group(3)
        if mt := re.match(r"case (\S+) b(\d+): ok ([0-9.]+) s, steps (\d+), cpu (\d+)", line):
            infos[(mt.group(1), int(mt.group(2)))] = {
                "seconds": float(mt.group(3)), "steps": int(mt.group(4)),
                "cpu_steps": int(mt.group(5))}
        elif mt := re.match(r"case (\S+) b(\d+): error (.*)", line):
            infos[(mt.group(1), int(mt.group(2)))] = {"error": mt.group(3)[-600:]}
        elif mt := re.match(r"report (\S+) (\d+) (\d+): (.*)", line):
            reports[mt.group(1)] = {"over_budget": f"{mt.group(2)} of {mt.group(3)}",
                                    "error_origins": mt.group(4)}
    for prec in precisions:
        for b in BATCHES:
            if (prec, b) not in infos:
                infos[(prec, b)] = {"error": f"no result (exit {code}, {wall} s): "
                                    + " ".join(log.strip().splitlines()[-3:])[-600:]}
    for prec, rep in reports.items():
        for b in BATCHES:
            if "error" not in infos.get((prec, b), {"error": 1}):
                infos[(prec, b)].update(rep)
    if fp16 is not None:  # reported with the fp32 cases
        for b in BATCHES:
            if ("fp32", b) in infos:
                infos[("fp32", b)].update(fp16)
    return infos, out_dir


def check_case(args, name, b, precision, info, out_dir):
    m = MODELS[name]
    bd = os.path.join(model_dir(args.cache, name), f"b{b}")
    ref = np.load(os.path.join(bd, "ref", "logits.npy"))
    res = {"model": name, "family": m["family"], "kind": m["kind"], "device": args.device,
           "precision": precision, "batch": b, **info}
    problems = []
    if problem := range_problem(ref):
        problems.append(problem)
    if "error" in info:
        problems.append("kiln failed: " + info["error"])
    if info.get("fp16_range_findings"):
        problems.append(f"the fp16 range guard reports {info['fp16_range_findings']} values on "
                        f"a model whose outputs are inside fp16's range: {info['fp16_range_first']}")
    else:
        opath = os.path.join(out_dir, precision, f"b{b}", "logits.npy")
        got = np.load(opath) if os.path.exists(opath) else None
        if got is None:
            d = os.path.dirname(opath)
            problems.append("no output 'logits' (wrote: "
                            + (", ".join(sorted(os.listdir(d))) if os.path.isdir(d) else "nothing")
                            + ")")
        elif got.shape != ref.shape:
            problems.append(f"output shape {list(got.shape)}, reference {list(ref.shape)}")
        else:
            res["rel_l2"] = rel_l2(got, ref)
            res["cosine"] = cosine(got, ref)
            res["top1"] = top1_agreement(got, ref)
            res["top1_unexplained"] = top1_unexplained(got, ref)
            tol, cos_min = FLOOR[precision], COSINE_FLOOR.get(precision, COSINE_MIN)
            # Top-1 flips are allowed only where the engine's own error explains them; on
            # segmentation maps, on 1% of the pixels (class boundaries).
            top1_max_unexplained = 0.01 if m["kind"] == "seg" else 0.0
            # Deep nets amplify fp32 rounding itself (ResNet-152: ONNX Runtime is 1.8e-4 from
            # the float64 truth). There kiln passes when it is as close to float64 as ONNX
            # Runtime is, within a factor 2.
            f64 = os.path.join(bd, "torch_fp64.npy")
            fp32_truth_ok = False
            if precision == "fp32" and os.path.exists(f64):
                truth = np.load(f64)
                res["ort_vs_fp64"] = rel_l2(ref, truth)
                res["kiln_vs_fp64"] = rel_l2(got, truth)
                fp32_truth_ok = res["kiln_vs_fp64"] <= 2 * res["ort_vs_fp64"]
            tpath = os.path.join(bd, f"torch_{precision}.npy")
            if precision != "fp32" and os.path.exists(tpath):
                t = np.load(tpath)
                res["torch_rel_l2"] = rel_l2(t, ref)
                res["torch_cosine"] = cosine(t, ref)
                res["torch_top1"] = top1_agreement(t, ref)
                # Rounding errors of this size add up like a random walk: two implementations
                # rounding in different places (kiln folds BatchNorm into the weights, fuses
                # epilogues, runs NHWC) land within about 2x of each other.
                tol = max(tol, 2 * res["torch_rel_l2"])
                cos_min = min(cos_min, 1 - 2 * (1 - res["torch_cosine"]))
            res["tolerance"] = tol
            if not np.all(np.isfinite(got)):
                problems.append("output has inf or NaN")
            if res["rel_l2"] > tol and not fp32_truth_ok:
                why = f"relative L2 {res['rel_l2']:.3g} > {tol:.3g}"
                if "kiln_vs_fp64" in res:
                    why += (f", and {res['kiln_vs_fp64']:.3g} from float64 against ONNX Runtime's "
                            f"{res['ort_vs_fp64']:.3g}")
                problems.append(why)
            if precision != "fp32" and res["cosine"] < cos_min:
                problems.append(f"cosine {res['cosine']:.6f} < {cos_min:.6f}")
            if res["top1_unexplained"] > top1_max_unexplained:
                problems.append(f"top-1 differs beyond the error band on "
                                f"{100 * res['top1_unexplained']:.2f}% of the "
                                f"{'pixels' if m['kind'] == 'seg' else 'images'}")
    # 8 bits over the tolerance, with nothing broken, pass where the layers that lose the
    # accuracy are named (the precision report's origins: kiln build --max-layer-error or
    # --keep then keeps them); the line says so.
    accuracy_only = all(p.startswith(("relative L2", "cosine", "top-1")) for p in problems)
    if problems and precision in EIGHT_BIT and accuracy_only and info.get("error_origins"):
        res["named"] = problems
        problems = []
    res["pass"] = not problems
    if problems:
        res["problems"] = problems
    return res


def check(args):
    names = select(args.names, args.tier)
    precisions = args.precisions.split(",")
    if args.skip_done and args.results and os.path.exists(args.results):
        done = {}
        with open(args.results) as f:
            for line in f:
                r = json.loads(line) if line.strip() else {}
                if r.get("device") == args.device and "precision" in r:
                    done.setdefault(r["model"], set()).add((r["precision"], r["batch"]))
        want = {(p, b) for p in precisions for b in BATCHES}
        names = [n for n in names if not want <= done.get(n, set())]
    os.makedirs(args.cache, exist_ok=True)
    args.work = os.path.join(args.cache, "_runs")
    os.makedirs(args.work, exist_ok=True)
    out = open(args.results, "a") if args.results else None
    failed = 0

    def prep(name):
        if prepared(args.cache, name):
            return None
        # A process of its own per model: PyTorch's memory is returned after each export.
        p = subprocess.run([sys.executable, __file__, "prepare", name, "--cache", args.cache],
                           capture_output=True, text=True)
        return None if p.returncode == 0 else (p.stdout + p.stderr).strip()[-1500:]

    lock = threading.Lock()  # one writer of the results and the log at a time

    def write(line, res):
        with lock:
            print(line, flush=True)
            if out:
                out.write(json.dumps(res) + "\n")
                out.flush()

    def run_and_check(name):
        """kiln on every case of `name` once its inputs exist; the number of failed cases."""
        infos, out_dir = run_model(args, name, precisions)
        bad = 0
        for precision in precisions:
            for b in BATCHES:
                res = check_case(args, name, b, precision, infos[(precision, b)], out_dir)
                bad += not res["pass"]
                err = f"rel L2 {res['rel_l2']:.3g}" if "rel_l2" in res else ""
                cpu = (f", {res['cpu_steps']}/{res['steps']} steps on the CPU"
                       if res.get("steps") else "")
                status = "FAIL" if not res["pass"] else "named" if "named" in res else "ok  "
                extra = ("" if res["pass"] else "\n     " + "\n     ".join(res["problems"]))
                if "named" in res:
                    extra = ("\n     " + "; ".join(res["named"]) + "\n     where the error comes in: "
                             + res["error_origins"])
                write(f"{status} {name} {args.device} {precision} b{b}: "
                      f"{err}{cpu}, {res.get('seconds', '-')} s" + extra, res)
        shutil.rmtree(out_dir, ignore_errors=True)
        return bad

    # Models are prepared `jobs` at a time and run `run_jobs` at a time, in the list's order.
    with cf.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool, \
            cf.ThreadPoolExecutor(max_workers=max(1, args.run_jobs)) as runs:
        futures = [(n, pool.submit(prep, n)) for n in names]
        checks = []
        for name, fut in futures:
            err = fut.result()
            if err:
                failed += 1
                res = {"model": name, "family": MODELS[name]["family"], "kind": MODELS[name]["kind"],
                       "device": args.device, "pass": False, "problems": ["prepare failed: " + err]}
                write(f"FAIL {name}: could not prepare it:\n{err}", res)
                continue
            checks.append(runs.submit(run_and_check, name))
        failed += sum(c.result() for c in checks)
    return 1 if failed else 0


# ---- report ---------------------------------------------------------------------------------

def report(args):
    rows = {}
    for path in args.results:
        with open(path) as f:
            for line in f:
                if line.strip():
                    r = json.loads(line)
                    rows[(r["model"], r["device"], r.get("precision", "-"), r.get("batch", 0))] = r
    cols = sorted({(k[1], k[2]) for k in rows}, key=lambda c: (c[0] != "cpu", ["fp32", "tf32", "fp16", "bf16", "int8", "fp8", "-"].index(c[1])))
    lines = ["| model | " + " | ".join(f"{d} {p}" for d, p in cols) + " |",
             "|---|" + "---|" * len(cols)]
    passed = total = 0
    for name, m in MODELS.items():
        cells = []
        for d, p in cols:
            rs = [r for k, r in rows.items() if k[0] == name and k[1] == d and k[2] in (p, "-")]
            if not rs:
                cells.append("–")
                continue
            total += 1
            ok = all(r["pass"] for r in rs)
            passed += ok
            err = max((r.get("rel_l2", math.nan) for r in rs), default=math.nan)
            cpu = max((r.get("cpu_steps", 0) for r in rs), default=0)
            t = sum(r.get("seconds", 0) for r in rs)
            named = any("named" in r for r in rs)
            cell = f"{'named' if ok and named else 'pass' if ok else '**FAIL**'} {err:.1e}"
            if d == "cuda":
                cell += f", cpu {cpu}"
            cell += f", {t:.0f} s"
            if not ok:
                why = next(r["problems"][0] for r in rs if not r["pass"])
                cell += " (" + why.replace("|", "/")[:120] + ")"
            elif named:
                first = next(r["error_origins"] for r in rs if "named" in r).split("; ")[0]
                cell += " (error from " + first.replace("|", "/")[:120] + ")"
            cells.append(cell)
        if any(c != "–" for c in cells):
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    text = "\n".join(lines) + f"\n\n{passed} of {total} model × device × precision cells pass.\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    print(text)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("models")
    p.add_argument("--tier", default="all", choices=["ci", "full", "all"])
    p = sub.add_parser("prepare")
    p.add_argument("names", nargs="+")
    p.add_argument("--cache", default=os.path.join(ROOT, "models/cache/zoo"))
    p = sub.add_parser("check")
    p.add_argument("names", nargs="*")
    p.add_argument("--tier", default="all", choices=["ci", "full", "all"])
    p.add_argument("--runner", required=True, help="the kiln_zoo_run binary")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--precisions", default="fp32")
    p.add_argument("--cache", default=os.path.join(ROOT, "models/cache/zoo"))
    p.add_argument("--results", default=None)
    p.add_argument("--jobs", type=int, default=1, help="models prepared at once")
    p.add_argument("--run-jobs", type=int, default=1, help="models run through kiln at once")
    p.add_argument("--runner-arg", action="append", default=[],
                   help="extra kiln_zoo_run option, e.g. --runner-arg=--no-tactics")
    p.add_argument("--timeout", type=int, default=1800, help="seconds per model")
    p.add_argument("--skip-done", action="store_true",
                   help="leave out models with every case already in --results (to resume)")
    p = sub.add_parser("report")
    p.add_argument("results", nargs="+")
    p.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.cmd == "models":
        print("\n".join(select([], args.tier)))
        return 0
    if args.cmd == "prepare":
        for n in select(args.names, "all"):
            prepare(args.cache, n)
        return 0
    if args.cmd == "check":
        return check(args)
    return report(args)


if __name__ == "__main__":
    sys.exit(main())
