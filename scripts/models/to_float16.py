#!/usr/bin/env python3
"""Writes a model in the float16 form that keeps float32 inputs and outputs.

    /usr/bin/python3 scripts/models/to_float16.py MODEL.onnx OUT.onnx

The form of the common float16 converters' keep-io-types mode, written here from its
description: every float32 initializer is stored as float16, every float32 value inside the
graph becomes float16, each graph input is followed by Cast(to=float16) and each graph output is
preceded by Cast(to=float32). Models distributed this way are half the size and compute in
float16. kiln's tests build their small cases the same way (tests/onnx).
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def convert(model):
    g = model.graph
    for init in g.initializer:
        if init.data_type == TensorProto.FLOAT:
            init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init).astype(np.float16),
                                                  init.name))
    for node in g.node:  # Constant nodes' float tensors
        for a in node.attribute:
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == TensorProto.FLOAT:
                a.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(a.t).astype(np.float16)))
    for vi in g.value_info:
        if vi.type.tensor_type.elem_type == TensorProto.FLOAT:
            vi.type.tensor_type.elem_type = TensorProto.FLOAT16
    renames = {}
    casts_in = []
    for inp in g.input:
        if inp.type.tensor_type.elem_type != TensorProto.FLOAT:
            continue
        half = inp.name + "_fp16"
        renames[inp.name] = half
        casts_in.append(helper.make_node("Cast", [inp.name], [half], to=TensorProto.FLOAT16,
                                         name=inp.name + "_to_fp16"))
    for node in g.node:
        for i, name in enumerate(node.input):
            if name in renames:
                node.input[i] = renames[name]
    casts_out = []
    for out in g.output:
        if out.type.tensor_type.elem_type != TensorProto.FLOAT:
            continue
        half = out.name + "_fp16"
        for node in g.node:
            for i, name in enumerate(node.output):
                if name == out.name:
                    node.output[i] = half
            for i, name in enumerate(node.input):
                if name == out.name:
                    node.input[i] = half
        casts_out.append(helper.make_node("Cast", [half], [out.name], to=TensorProto.FLOAT,
                                          name=out.name + "_to_fp32"))
    nodes = casts_in + list(g.node) + casts_out
    del g.node[:]
    g.node.extend(nodes)
    return model


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    model = convert(onnx.load(sys.argv[1]))
    onnx.checker.check_model(model)
    onnx.save(model, sys.argv[2])
    print(f"wrote {sys.argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
