#!/usr/bin/env python3
"""kiln serve's gRPC protocol from Python's grpc tools (Debian python3-grpc-tools).

Two clients, generated at test time into a temporary folder:
  - from kiln's own src/server/proto/grpc_service.proto: every RPC it declares is called;
  - from minimal_inference.proto, written separately with only the fields it uses: its
    ModelInfer must agree with the full client's on the wire, byte for byte.

Starts `kiln serve` on free ports with a repository of the shipped Fashion-MNIST net, and stops
it with SIGTERM (exit 0 expected). Exit 77 (skipped) where grpc or grpc_tools is missing.

    grpc_client_test.py --kiln build/kiln --source .
"""
import argparse
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

try:
    import grpc
    from grpc_tools import protoc
except ImportError as e:  # pragma: no cover
    print(f"skipped: {e}")
    sys.exit(77)


def generate(proto_root, proto_files, out):
    include = os.path.join(os.path.dirname(protoc.__file__), "_proto")
    args = ["protoc", f"-I{proto_root}", f"-I{include}", f"--python_out={out}",
            f"--grpc_python_out={out}"] + proto_files
    if protoc.main(args) != 0:
        raise SystemExit(f"protoc failed on {proto_files}")


def start_server(kiln, repo, log_path):
    log = open(log_path, "w")
    p = subprocess.Popen([kiln, "serve", "--model-repository", repo, "--http-port", "0",
                          "--grpc-port", "0", "--metrics-port", "-1", "--threads", "1"],
                         stderr=log, stdout=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline:
        text = open(log_path).read()
        m = re.search(r"gRPC on [^:]+:(\d+)", text)
        if m:
            return p, int(m.group(1))
        if p.poll() is not None:
            raise SystemExit("kiln serve exited: " + text)
        time.sleep(0.1)
    p.kill()
    raise SystemExit("kiln serve printed no gRPC port: " + open(log_path).read())


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok:", what)


def image(seed):
    # A deterministic 28x28 image of values in [-2, 2).
    return [((seed * 7919 + i * 104729) % 4000) / 1000.0 - 2.0 for i in range(784)]


def full_client(pb, stub, name):
    """Calls every RPC of kiln's service; returns the raw logits of one inference."""
    check(stub.ServerLive(pb.ServerLiveRequest()).live, "ServerLive")
    check(stub.ServerReady(pb.ServerReadyRequest()).ready, "ServerReady")
    check(stub.ModelReady(pb.ModelReadyRequest(name=name)).ready, "ModelReady")
    meta = stub.ServerMetadata(pb.ServerMetadataRequest())
    check(meta.name == "kiln" and "model_repository" in meta.extensions, "ServerMetadata")
    mm = stub.ModelMetadata(pb.ModelMetadataRequest(name=name))
    check(list(mm.inputs[0].shape) == [-1, 1, 28, 28] and mm.outputs[0].name == "logits",
          "ModelMetadata")
    cfg = stub.ModelConfig(pb.ModelConfigRequest(name=name))
    check(cfg.config.max_batch_size == 8, "ModelConfig")
    x = image(3) + image(4)
    req = pb.ModelInferRequest(model_name=name, id="py")
    t = req.inputs.add(name="input", datatype="FP32", shape=[2, 1, 28, 28])
    req.raw_input_contents.append(struct.pack("<1568f", *x))
    res = stub.ModelInfer(req)
    check(res.id == "py" and list(res.outputs[0].shape) == [2, 10], "ModelInfer (raw)")
    typed = pb.ModelInferRequest(model_name=name)
    ti = typed.inputs.add(name="input", datatype="FP32", shape=[2, 1, 28, 28])
    ti.contents.fp32_contents.extend(x)
    res_typed = stub.ModelInfer(typed)
    check(res_typed.raw_output_contents[0] == res.raw_output_contents[0],
          "ModelInfer (typed contents) == raw")
    stats = stub.ModelStatistics(pb.ModelStatisticsRequest(name=name))
    check(stats.model_stats[0].inference_stats.success.count == 2
          and stats.model_stats[0].inference_count == 4, "ModelStatistics")
    def stream():
        for i in range(3):
            q = pb.ModelInferRequest(model_name=name, id=f"st{i}")
            q.inputs.add(name="input", datatype="FP32", shape=[1, 1, 28, 28])
            q.raw_input_contents.append(struct.pack("<784f", *image(10 + i)))
            yield q
    answers = list(stub.ModelStreamInfer(stream()))
    check(sorted(a.infer_response.id for a in answers) == ["st0", "st1", "st2"]
          and not any(a.error_message for a in answers)
          and all(list(a.infer_response.outputs[0].shape) == [1, 10] for a in answers),
          "ModelStreamInfer: three answers by id")
    index = stub.RepositoryIndex(pb.RepositoryIndexRequest())
    check([(m.name, m.state) for m in index.models] == [(name, "READY")], "RepositoryIndex")
    try:
        stub.RepositoryModelUnload(pb.RepositoryModelUnloadRequest(model_name=name))
        raise AssertionError("unload under model control 'none' was accepted")
    except grpc.RpcError as e:
        check(e.code() == grpc.StatusCode.INVALID_ARGUMENT and "model control" in e.details(),
              "RepositoryModelUnload refused under model control none: " + e.details())
    try:
        stub.RepositoryModelLoad(pb.RepositoryModelLoadRequest(model_name=name))
        raise AssertionError("load under model control 'none' was accepted")
    except grpc.RpcError as e:
        check(e.code() == grpc.StatusCode.INVALID_ARGUMENT, "RepositoryModelLoad refused")
    try:
        stub.ModelInfer(pb.ModelInferRequest(model_name="nothing"))
        raise AssertionError("an unknown model was served")
    except grpc.RpcError as e:
        check(e.code() == grpc.StatusCode.NOT_FOUND, "ModelInfer on an unknown model: NOT_FOUND")
    return res.raw_output_contents[0]


def minimal_client(pb, stub, name, want):
    check(stub.ServerReady(pb.ServerReadyRequest()).ready, "minimal: ServerReady")
    req = pb.ModelInferRequest(model_name=name, id="min")
    req.parameters["priority"].int64_param = 1
    req.inputs.add(name="input", datatype="FP32", shape=[2, 1, 28, 28])
    req.raw_input_contents.append(struct.pack("<1568f", *(image(3) + image(4))))
    req.outputs.add(name="logits")
    res = stub.ModelInfer(req)
    check(res.model_name == name and res.model_version == "1" and res.id == "min",
          "minimal: names and id")
    check(res.outputs[0].name == "logits" and res.outputs[0].datatype == "FP32"
          and list(res.outputs[0].shape) == [2, 10], "minimal: output tensor")
    check(res.raw_output_contents[0] == want, "minimal: the same logits, byte for byte")


def run_minimal(target, gen, want_path):
    sys.path.insert(0, gen)
    import minimal_inference_pb2 as min_pb
    import minimal_inference_pb2_grpc as min_grpc
    with open(want_path, "rb") as f:
        want = f.read()
    with grpc.insecure_channel(target) as ch:
        minimal_client(min_pb, min_grpc.GRPCInferenceServiceStub(ch), "fashion", want)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln")
    ap.add_argument("--source")
    ap.add_argument("--minimal", help=argparse.SUPPRESS)  # the second client's process
    ap.add_argument("--gen", help=argparse.SUPPRESS)
    ap.add_argument("--want", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.minimal:
        run_minimal(a.minimal, a.gen, a.want)
        return
    if not a.kiln or not a.source:
        ap.error("--kiln and --source are required")
    work = tempfile.mkdtemp(prefix="kiln_grpc_py_")
    server = None
    try:
        gen_full, gen_min = os.path.join(work, "full"), os.path.join(work, "min")
        os.makedirs(gen_full)
        os.makedirs(gen_min)
        src = os.path.join(a.source, "src")
        generate(src, [os.path.join(src, "server/proto/model_config.proto"),
                       os.path.join(src, "server/proto/grpc_service.proto")], gen_full)
        here = os.path.dirname(os.path.abspath(__file__))
        generate(here, [os.path.join(here, "minimal_inference.proto")], gen_min)

        repo = os.path.join(work, "repo")
        os.makedirs(os.path.join(repo, "fashion", "1"))
        shutil.copy(os.path.join(a.source, "models", "fashion_mnist.onnx"),
                    os.path.join(repo, "fashion", "1", "model.onnx"))
        with open(os.path.join(repo, "fashion", "config.pbtxt"), "w") as f:
            f.write("max_batch_size: 8\ninstance_group [ { kind: KIND_CPU } ]\n")
        server, port = start_server(a.kiln, repo, os.path.join(work, "serve.log"))
        target = f"127.0.0.1:{port}"

        sys.path.insert(0, gen_full)
        from server.proto import grpc_service_pb2 as full_pb
        from server.proto import grpc_service_pb2_grpc as full_grpc
        with grpc.insecure_channel(target) as ch:
            grpc.channel_ready_future(ch).result(timeout=30)
            want = full_client(full_pb, full_grpc.GRPCInferenceServiceStub(ch), "fashion")
        # The minimal client runs in a process of its own: both files declare the same
        # message names, which one protobuf descriptor pool cannot hold twice.
        want_path = os.path.join(work, "want.bin")
        with open(want_path, "wb") as f:
            f.write(want)
        rc = subprocess.call([sys.executable, os.path.abspath(__file__), "--minimal", target,
                              "--gen", gen_min, "--want", want_path])
        check(rc == 0, "the minimal client agrees with kiln's service on the wire")

        server.send_signal(signal.SIGTERM)
        check(server.wait(timeout=30) == 0, "kiln serve drained and exited 0 on SIGTERM")
        server = None
    finally:
        if server is not None:
            server.kill()
            print(open(os.path.join(work, "serve.log")).read())
        shutil.rmtree(work, ignore_errors=True)
    print("grpc client test: passed")


if __name__ == "__main__":
    main()
