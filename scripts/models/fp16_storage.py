#!/usr/bin/python3
"""Pure fp16 storage, for measuring what fp16 itself costs a model: every float weight
(initializer or Constant node) rounded to float16 and every float value a node writes rounded
to float16 and back (a Cast pair after each node), all arithmetic in float32. An fp16 engine's
error beyond this model's comes from its arithmetic (fp16 sums, the bias added after
rounding...), not from storing values in fp16. With --fp32-biases, Conv and Gemm biases stay
float32: what an engine that adds them in its float32 sums would store.

    /usr/bin/python3 scripts/models/fp16_storage.py MODEL.onnx -o MODEL.fp16storage.onnx [--fp32-biases]

Run the result with ONNX Runtime (scripts/ort/ort_run.mjs) or kiln's fp32 CPU engine with
--no-optimize, next to the original, on inputs like the real ones.
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--fp32-biases", action="store_true",
                    help="keep the biases of Conv and Gemm (input 2) in float32, as an engine "
                         "that adds them in its float32 sums does")
    a = ap.parse_args()
    m = onnx.load(a.model)
    g = m.graph
    biases = set()
    if a.fp32_biases:
        biases = {n.input[2] for n in g.node if n.op_type in ("Conv", "Gemm") and len(n.input) > 2}
    for t in g.initializer:
        if t.data_type == TensorProto.FLOAT and t.name not in biases:
            w = numpy_helper.to_array(t).astype(np.float16).astype(np.float32)
            t.CopyFrom(numpy_helper.from_array(w, t.name))
    # Weights a converter wrote as Constant nodes too.
    for n in g.node:
        if n.op_type != "Constant" or n.output[0] in biases:
            continue
        for at in n.attribute:
            if at.name == "value" and at.t.data_type == TensorProto.FLOAT:
                w = numpy_helper.to_array(at.t).astype(np.float16).astype(np.float32)
                at.t.CopyFrom(numpy_helper.from_array(w, at.t.name))
    m = onnx.shape_inference.infer_shapes(m)
    g = m.graph
    floats = {v.name for v in list(g.value_info) + list(g.output)
              if v.type.tensor_type.elem_type == TensorProto.FLOAT}
    outputs = {o.name for o in g.output}
    nodes = []
    for n in g.node:
        nodes.append(n)
        if n.op_type in ("Shape", "Constant"):
            continue
        for i, out in enumerate(n.output):
            if out not in floats:
                continue
            raw = out + "/fp32"
            n.output[i] = raw
            half = out + "/fp16"
            nodes.append(helper.make_node("Cast", [raw], [half], to=TensorProto.FLOAT16,
                                          name=out + "/to_fp16"))
            nodes.append(helper.make_node("Cast", [half], [out], to=TensorProto.FLOAT,
                                          name=out + "/to_fp32"))
    del g.node[:]
    g.node.extend(nodes)
    del g.value_info[:]
    onnx.checker.check_model(m)
    onnx.save(m, a.out)
    print(f"wrote {a.out}: {len(nodes)} nodes, {sum(o in outputs for o in floats)} outputs rounded")


if __name__ == "__main__":
    main()
