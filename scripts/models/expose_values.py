#!/usr/bin/python3
"""Every value a Conv, activation, Add or MatMul writes made a graph output too, so that two
engines (or a model and its fp16_storage.py form) can be compared layer by layer.

    /usr/bin/python3 scripts/models/expose_values.py MODEL.onnx -o MODEL.values.onnx
"""
import argparse

import onnx
from onnx import TensorProto, helper

KINDS = ("Conv", "Clip", "Relu", "Add", "MatMul")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("-o", "--out", required=True)
    a = ap.parse_args()
    m = onnx.load(a.model)
    g = m.graph
    outs = {o.name for o in g.output}
    for n in g.node:
        if n.op_type in KINDS and n.output[0] not in outs:
            g.output.append(helper.make_tensor_value_info(n.output[0], TensorProto.FLOAT, None))
            outs.add(n.output[0])
    m = onnx.shape_inference.infer_shapes(m)
    known = {v.name: v for v in m.graph.value_info}
    for i, o in enumerate(m.graph.output):
        if not o.type.tensor_type.HasField("shape") and o.name in known:
            m.graph.output[i].CopyFrom(known[o.name])
    onnx.checker.check_model(m)
    onnx.save(m, a.out)
    print(f"wrote {a.out}: {len(m.graph.output)} outputs")


if __name__ == "__main__":
    main()
