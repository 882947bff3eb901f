#!/usr/bin/env python3
"""Finds the first node where kiln departs from ONNX Runtime: every float value of the model is
made a graph output, both run it on one input, and the values are compared in node order.

  scripts/debug/layer_diff.py MODEL.onnx INPUT.npy --runner kiln_zoo_run \
      --device cuda --precisions fp32,tf32 [--work DIR] [--show 12] [--repeat 3]

Marking every value as an output keeps kiln from fusing across it, so a fused group's bug can
hide; the report says which values moved first, with their node's op and inputs. The default
tolerance per precision is the zoo's (relative L2): fp32 1e-4, tf32 1e-2, fp16 3e-2.

The plain model also runs --repeat times in one Context per precision: outputs that differ
between runs of the same input mean a race (the marked graph, with other timing, can then
look right), and each run's distance from ONNX Runtime is printed.
"""
import argparse
import os
import re
import subprocess
import sys

import numpy as np
import onnx
from onnx import shape_inference

TOL = {"fp32": 1e-4, "tf32": 1e-2, "fp16": 3e-2}


def file_name_for(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def mark_all(src, dst, shapes=None):
    """Writes src with every float node output as a graph output; returns them in node order,
    each as (value, op, node name, node inputs). Values whose shape inference left unknown are
    declared by type alone (ONNX Runtime takes that), or with their shape from `shapes`."""
    model = onnx.load(src)
    try:
        model = shape_inference.infer_shapes(model)
    except Exception as e:  # noqa: BLE001
        print(f"shape inference failed ({e}); marking every output", file=sys.stderr)
    g = model.graph
    infos = {vi.name: vi for vi in list(g.value_info) + list(g.output) + list(g.input)}
    have = {o.name for o in g.output}
    floats = (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16)
    marked = []
    for n in g.node:
        if n.op_type == "Constant":
            continue
        for o in n.output:
            vi = infos.get(o)
            if not o or vi is None or vi.type.tensor_type.elem_type not in floats:
                continue
            if shapes is not None:
                if o not in shapes:
                    continue
                vi = onnx.helper.make_tensor_value_info(o, vi.type.tensor_type.elem_type,
                                                        list(shapes[o]))
            marked.append((o, n.op_type, n.name, list(n.input)))
            if o not in have:
                g.output.append(vi)
                have.add(o)
    onnx.save(model, dst)
    return marked


def ort_outputs(path, x, threads, work):
    """ONNX Runtime's value for every output: the Python module where it is installed, else
    Node's onnxruntime-node through scripts/ort/ort_run.mjs."""
    try:
        import onnxruntime as ort  # noqa: PLC0415
    except ImportError:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        xin, d = os.path.join(work, "ort_input.npy"), os.path.join(work, "ort")
        np.save(xin, x)
        name = onnx.load(path, load_external_data=False).graph.input[0].name
        subprocess.run(["node", os.path.join(root, "scripts/ort/ort_run.mjs"), path, "--input",
                        f"{name}={xin}", "--output-dir", d, "--threads", str(threads),
                        "--opt", "disabled"], check=True, stdout=subprocess.DEVNULL)
        return {o.name: np.load(os.path.join(d, file_name_for(o.name) + ".npy"))
                for o in onnx.load(path, load_external_data=False).graph.output}
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(None, {sess.get_inputs()[0].name: x})))


def rel_l2(got, want):
    got = got.astype(np.float64).ravel()
    want = want.astype(np.float64).ravel()
    if got.shape != want.shape:
        return float("inf")
    if not np.all(np.isfinite(got)):
        return float("nan")
    d = np.linalg.norm(got - want)
    n = np.linalg.norm(want)
    return d / n if n > 0 else d


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("input")
    ap.add_argument("--runner", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--precisions", default="fp32")
    ap.add_argument("--work", default="/tmp/kiln-layer-diff")
    ap.add_argument("--show", type=int, default=12)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--runner-arg", action="append", default=["--no-tactics"])
    ap.add_argument("--repeat", type=int, default=3, help="runs of the plain model (0: none)")
    a = ap.parse_args()

    os.makedirs(os.path.join(a.work, "case"), exist_ok=True)
    x = np.load(a.input)
    ort_path = os.path.join(a.work, "marked_ort.onnx")
    mark_all(a.model, ort_path)
    ref = ort_outputs(ort_path, x, a.threads, a.work)
    marked_path = os.path.join(a.work, "marked.onnx")
    marked = mark_all(a.model, marked_path, {k: v.shape for k, v in ref.items()})
    xin = os.path.join(a.work, "case", "input.npy")
    np.save(xin, x)
    out = os.path.join(a.work, "kiln")
    p = subprocess.run([a.runner, marked_path, out, "--device", a.device, "--precisions",
                        a.precisions, *a.runner_arg, xin], capture_output=True, text=True)
    print(p.stdout + p.stderr)
    producer = {v: (op, name, ins) for v, op, name, ins in marked}
    for prec in a.precisions.split(","):
        tol = TOL.get(prec, 1e-2)
        errs = {}
        for v, _, _, _ in marked:
            f = os.path.join(out, prec, "case", file_name_for(v) + ".npy")
            if v in ref and os.path.exists(f):
                errs[v] = rel_l2(np.load(f), ref[v])
        bad = [v for v, _, _, _ in marked if v in errs and not errs[v] <= tol]
        print(f"== {prec}: {len(errs)} values compared, {len(bad)} over {tol:g}")
        for v in bad[:a.show]:
            op, name, ins = producer[v]
            ins_s = ", ".join(f"{i}={errs[i]:.2e}" if i in errs else f"{i}=(input)"
                              for i in ins if i)
            got = np.load(os.path.join(out, prec, "case", file_name_for(v) + ".npy"))
            print(f"{errs[v]:.3e}  {op:<18} {name}  shape {list(ref[v].shape)} "
                  f"ref |max| {np.abs(ref[v]).max():.3g}  kiln |max| "
                  f"{np.nanmax(np.abs(got)) if got.size else 0:.3g}\n     inputs: {ins_s}")
    if a.repeat > 0:
        repeat_plain(a, x, ref)
    return 0


def repeat_plain(a, x, ref):
    """Runs the unmarked model a.repeat times on x in one runner process (one Context per
    precision) and prints how far each run is from the first and from ONNX Runtime."""
    cases = []
    for k in range(a.repeat):
        d = os.path.join(a.work, "plain_cases", f"run{k + 1}")
        os.makedirs(d, exist_ok=True)
        np.save(os.path.join(d, "input.npy"), x)
        cases.append(os.path.join(d, "input.npy"))
    out = os.path.join(a.work, "plain")
    p = subprocess.run([a.runner, a.model, out, "--device", a.device, "--precisions",
                        a.precisions, *a.runner_arg, *cases], capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stdout + p.stderr)
    names = [o.name for o in onnx.load(a.model, load_external_data=False).graph.output]
    for prec in a.precisions.split(","):
        runs = []
        for k in range(a.repeat):
            d = os.path.join(out, prec, f"run{k + 1}")
            runs.append({n: np.load(os.path.join(d, file_name_for(n) + ".npy")) for n in names
                         if os.path.exists(os.path.join(d, file_name_for(n) + ".npy"))})
        for k, r in enumerate(runs):
            same = all(np.array_equal(r[n], runs[0][n], equal_nan=True) for n in r)
            ort = ", ".join(f"{n} {rel_l2(r[n], ref[n]):.3e}" for n in r if n in ref)
            print(f"== {prec} plain run {k + 1}: "
                  f"{'same as run 1' if same else 'DIFFERS from run 1 (a race?)'}; "
                  f"from ONNX Runtime: {ort}")


if __name__ == "__main__":
    sys.exit(main())
