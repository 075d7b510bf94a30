"""tnpu.Model: the Fashion-MNIST model of models/ and tiny models built with the `onnx` package, on the
device and on the runtime's CPU reference executor, against numpy."""
import errno
import os

import numpy as np
import pytest

import tnpu
from numpy_ref import assert_model_close, onnx_forward, read_idx

MODELS = os.environ.get("TNPU_MODELS", os.path.join(os.path.dirname(__file__), "..", "..", "models"))
FASHION = os.path.join(MODELS, "fashion-mnist", "fashion-mnist-cnn.onnx")
DATASET = "/usr/share/datasets/fashion-mnist"     # Debian's dataset-fashion-mnist
BATCH = 32


def fashion_images():
    """The first BATCH test images (pixels / 255, as train.py trained) and labels; random images and
    no labels when the dataset is not installed."""
    img = os.path.join(DATASET, "t10k-images-idx3-ubyte.gz")
    if not os.path.exists(img):
        return np.random.default_rng(1).random((BATCH, 1, 28, 28), np.float32), None
    x = read_idx(img)[:BATCH].astype(np.float32) / 255.0
    labels = read_idx(os.path.join(DATASET, "t10k-labels-idx1-ubyte.gz"))[:BATCH]
    return x.reshape(BATCH, 1, 28, 28), labels


def test_fashion_mnist_info():
    m = tnpu.Model(FASHION)
    assert [i["name"] for i in m.inputs] == ["image"]
    assert [o["name"] for o in m.outputs] == ["logits"]
    assert m.device is None and m.last_stats is None
    m.run(np.zeros((2, 1, 28, 28), np.float32))
    assert m.outputs[0]["shape"] == (2, 10) and m.outputs[0]["dtype"] == np.float32


def test_fashion_mnist_device_matches_cpu_reference_and_labels(dev):
    x, labels = fashion_images()
    on_dev = tnpu.Model(FASHION, dev)
    on_cpu = tnpu.Model(FASHION)
    got = on_dev.run({"image": x})
    ref = on_cpu.run({"image": x})
    assert set(got) == {"logits"} and got["logits"].shape == (BATCH, 10)
    assert_model_close(got["logits"], ref["logits"])
    assert on_dev.last_stats["accel_nodes"] > 0          # the convolutions ran on the device
    assert on_cpu.last_stats["accel_nodes"] == 0
    if labels is not None:
        acc = np.mean(got["logits"].argmax(1) == labels)
        assert acc >= 0.75, f"accuracy {acc:.2f} on the first {BATCH} test images (the model has 0.89)"


def test_fashion_mnist_matches_numpy_forward(dev):
    onnx = pytest.importorskip("onnx")
    x, _ = fashion_images()
    want = onnx_forward(onnx.load(FASHION), {"image": x})["logits"]
    got = tnpu.Model(FASHION, dev).run(x)["logits"]
    assert_model_close(got, want)
    assert (got.argmax(1) == want.argmax(1)).all()


def test_fold_false_runs_the_graph_as_written(dev):
    x, _ = fashion_images()
    folded = tnpu.Model(FASHION, dev)
    unfolded = tnpu.Model(FASHION, dev, fold=False)
    assert "6 nodes" in repr(folded) and "10 nodes" in repr(unfolded)
    assert_model_close(unfolded.run(x)["logits"], folded.run(x)["logits"])


def test_model_runs_many_times_and_at_any_batch(dev):
    m = tnpu.Model(FASHION, dev)
    x, _ = fashion_images()
    first = m.run([x])["logits"]
    for _ in range(3):
        np.testing.assert_array_equal(m.run((x,))["logits"], first)
    np.testing.assert_allclose(m.run(x[:3])["logits"], first[:3], rtol=1e-5, atol=1e-5)


def test_fashion_mnist_bad_inputs(dev):
    on_dev = tnpu.Model(FASHION, dev)
    on_cpu = tnpu.Model(FASHION)
    # a batch of 0: the CPU reference runs it; on the device the Conv refuses it (libaccel takes no empty
    # tensors) with the node's name, and the model stays usable
    assert on_cpu.run(np.zeros((0, 1, 28, 28), np.float32))["logits"].shape == (0, 10)
    with pytest.raises(tnpu.Error, match="Conv.*>= 1") as ei:
        on_dev.run(np.zeros((0, 1, 28, 28), np.float32))
    assert ei.value.errno == errno.EINVAL
    for m in (on_dev, on_cpu):
        with pytest.raises(tnpu.Error, match="Conv") as ei:
            m.run(np.zeros((1, 2, 28, 28), np.float32))
        assert ei.value.errno == errno.EINVAL
        with pytest.raises(tnpu.Error, match="INT8") as ei:
            m.run(np.zeros((1, 1, 28, 28), np.int8))
        assert ei.value.errno == errno.EOPNOTSUPP
        with pytest.raises(tnpu.Error):
            m.run(np.float32(1))
        assert m.run(np.zeros((1, 1, 28, 28), np.float32))["logits"].shape == (1, 10)


# ---- tiny models built with the onnx package (python3-onnx) ----

def save(tmp_path, graph, name="m.onnx", opset=13):
    onnx = pytest.importorskip("onnx")
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)])
    model.ir_version = 7                                 # what libonnx 1.12 reads
    path = tmp_path / name
    onnx.save(model, str(path))
    return str(path)


@pytest.fixture
def mlp(tmp_path):
    """z = relu(x @ W1 + b1) @ W2 + offset, p = softmax(z): two inputs, two outputs."""
    onnx = pytest.importorskip("onnx")
    h, nh = onnx.helper, onnx.numpy_helper
    r = np.random.default_rng(7)
    w1 = r.standard_normal((8, 6)).astype(np.float32)
    b1 = r.standard_normal(6).astype(np.float32)
    w2 = r.standard_normal((6, 3)).astype(np.float32)
    nodes = [
        h.make_node("MatMul", ["x", "W1"], ["xw"]),
        h.make_node("Add", ["xw", "b1"], ["xwb"]),
        h.make_node("Relu", ["xwb"], ["h"]),
        h.make_node("MatMul", ["h", "W2"], ["hw"]),
        h.make_node("Add", ["hw", "offset"], ["z"]),
        h.make_node("Softmax", ["z"], ["p"], axis=1),
    ]
    f = onnx.TensorProto.FLOAT
    graph = h.make_graph(nodes, "mlp",
                         [h.make_tensor_value_info("x", f, ["n", 8]), h.make_tensor_value_info("offset", f, ["n", 3])],
                         [h.make_tensor_value_info("z", f, ["n", 3]), h.make_tensor_value_info("p", f, ["n", 3])],
                         [nh.from_array(w1, "W1"), nh.from_array(b1, "b1"), nh.from_array(w2, "W2")])

    def ref(x, offset):
        z = np.maximum(x.astype(np.float64) @ w1 + b1, 0) @ w2 + offset
        e = np.exp(z - z.max(1, keepdims=True))
        return z, e / e.sum(1, keepdims=True)
    return save(tmp_path, graph), ref


@pytest.mark.parametrize("on_device", [True, False])
def test_tiny_mlp_matches_numpy(dev, mlp, on_device):
    path, ref = mlp
    m = tnpu.Model(path, dev if on_device else None)
    assert [i["name"] for i in m.inputs] == ["x", "offset"]
    assert [o["name"] for o in m.outputs] == ["z", "p"]
    r = np.random.default_rng(3)
    x = r.standard_normal((5, 8)).astype(np.float32)
    off = r.standard_normal((5, 3)).astype(np.float32)
    z, p = ref(x, off)
    for out in (m.run({"x": x, "offset": off}), m.run([x, off])):
        np.testing.assert_allclose(out["z"], z, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(out["p"], p, rtol=1e-4, atol=1e-5)
    # a non-contiguous input is copied
    xt = np.asfortranarray(x)
    np.testing.assert_allclose(m.run({"x": xt, "offset": off})["z"], z, rtol=1e-4, atol=1e-4)


def test_int8_model_gives_exact_int32(dev, tmp_path):
    onnx = pytest.importorskip("onnx")
    h = onnx.helper
    r = np.random.default_rng(5)
    b = r.integers(-128, 128, (7, 4), dtype=np.int8)
    graph = h.make_graph([h.make_node("MatMulInteger", ["a", "B"], ["y"])], "mmi",
                         [h.make_tensor_value_info("a", onnx.TensorProto.INT8, [3, 7])],
                         [h.make_tensor_value_info("y", onnx.TensorProto.INT32, [3, 4])],
                         [onnx.numpy_helper.from_array(b, "B")])
    m = tnpu.Model(save(tmp_path, graph), dev)
    a = r.integers(-128, 128, (3, 7), dtype=np.int8)
    y = m.run(a)["y"]
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, a.astype(np.int64) @ b)


def test_decoder_with_many_inputs_and_an_empty_past_runs_compiled(dev, tmp_path):
    # a decoder's layout (issue 29): 3 + 2 per layer inputs (here 27, GPT-2-small's count, more than the 16
    # the binding once kept per compiled form), each past concatenated with new rows, a past of length 0
    onnx = pytest.importorskip("onnx")
    h, T = onnx.helper, onnx.TensorProto
    names = [f"past.{i}" for i in range(24)]
    nodes = [h.make_node("Relu", ["x"], ["r"])]
    outs = []
    for i, n in enumerate(names):
        nodes.append(h.make_node("Concat", [n, "r"], [f"present.{i}"], axis=1))
        outs.append(h.make_tensor_value_info(f"present.{i}", T.FLOAT, [1, None, 4]))
    ins = [h.make_tensor_value_info(n, T.FLOAT, [1, None, 4]) for n in ["x", "pad1", "pad2"] + names]
    nodes += [h.make_node("Identity", [p], [p + ".out"]) for p in ("pad1", "pad2")]
    outs += [h.make_tensor_value_info(p + ".out", T.FLOAT, [1, None, 4]) for p in ("pad1", "pad2")]
    m = tnpu.Model(save(tmp_path, h.make_graph(nodes, "dec", ins, outs)), dev)
    r = np.random.default_rng(29)
    for past in (0, 3):
        feed = {n: r.standard_normal((1, past, 4)).astype(np.float32) for n in names}
        feed.update(x=r.standard_normal((1, 2, 4)).astype(np.float32),
                    pad1=np.ones((1, 1, 4), np.float32), pad2=np.ones((1, 1, 4), np.float32))
        got = m.run(feed)
        for i, n in enumerate(names):
            np.testing.assert_array_equal(got[f"present.{i}"],
                                          np.concatenate([feed[n], np.maximum(feed["x"], 0)], axis=1))


def test_shape_from_input_data_runs_node_by_node(dev, tmp_path):
    # Reshape(x, shape) with shape a graph input: onnx_compile refuses a data-dependent shape, and the
    # model runs node by node with the shape the run gives (it used to run compiled with a wrong shape)
    onnx = pytest.importorskip("onnx")
    h, T = onnx.helper, onnx.TensorProto
    g = h.make_graph([h.make_node("Relu", ["x"], ["r"]), h.make_node("Reshape", ["r", "shape"], ["y"])], "rs",
                     [h.make_tensor_value_info("x", T.FLOAT, [2, 3, 4]),
                      h.make_tensor_value_info("shape", T.INT64, [3])],
                     [h.make_tensor_value_info("y", T.FLOAT, None)])
    m = tnpu.Model(save(tmp_path, g), dev)
    x = np.random.default_rng(30).standard_normal((2, 3, 4)).astype(np.float32)
    for shape in ((4, 2, 3), (3, 8, 1)):
        y = m.run({"x": x, "shape": np.array(shape, np.int64)})["y"]
        np.testing.assert_array_equal(y, np.maximum(x, 0).reshape(shape))


# ---- errors ----

def test_missing_file_raises_enoent():
    with pytest.raises(tnpu.Error) as ei:
        tnpu.Model("/nonexistent/model.onnx")
    assert ei.value.errno == errno.ENOENT
    assert "/nonexistent/model.onnx" in str(ei.value)


def test_garbage_file_raises_error_with_message(tmp_path):
    p = tmp_path / "garbage.onnx"
    p.write_bytes(b"\xff\xfe this is not a protobuf \x00\x01" * 8)
    with pytest.raises(tnpu.Error) as ei:
        tnpu.Model(str(p))
    assert ei.value.errno in (errno.EBADMSG, errno.EINVAL)
    assert ei.value.strerror


def test_unsupported_operator_is_named(tmp_path):
    onnx = pytest.importorskip("onnx")
    h = onnx.helper
    f = onnx.TensorProto.FLOAT
    graph = h.make_graph([h.make_node("StringNormalizer", ["x"], ["y"])], "strnorm",
                         [h.make_tensor_value_info("x", f, [2])], [h.make_tensor_value_info("y", f, [2])])
    with pytest.raises(tnpu.Error, match="StringNormalizer") as ei:
        tnpu.Model(save(tmp_path, graph))
    assert ei.value.errno == errno.EOPNOTSUPP


def test_bad_inputs_raise_python_errors(dev, mlp):
    path, _ = mlp
    m = tnpu.Model(path, dev)
    x = np.ones((2, 8), np.float32)
    off = np.ones((2, 3), np.float32)
    with pytest.raises(KeyError, match="offset"):
        m.run({"x": x})
    with pytest.raises(KeyError, match="typo"):
        m.run({"x": x, "offset": off, "typo": off})
    with pytest.raises(ValueError, match="2 inputs"):
        m.run([x])
    with pytest.raises(ValueError, match="2 inputs"):
        m.run(x)
    with pytest.raises(TypeError, match="float64"):
        m.run({"x": x.astype(np.float64), "offset": off})
    with pytest.raises(TypeError):
        m.run({"x": None, "offset": off})
    with pytest.raises(TypeError):
        m.run({1: x, "offset": off})
    with pytest.raises(ValueError, match="dimensions"):
        m.run({"x": np.ones((1,) * 9, np.float32), "offset": off})
    # a shape the graph cannot take: the runtime's message, and the model stays usable
    with pytest.raises(tnpu.Error) as ei:
        m.run({"x": np.ones((2, 5), np.float32), "offset": off})
    assert ei.value.errno == errno.EINVAL and ei.value.strerror
    assert m.run({"x": x, "offset": off})["z"].shape == (2, 3)


def test_model_arguments_and_closed_device(mlp):
    path, _ = mlp
    with pytest.raises(TypeError, match="Device"):
        tnpu.Model(path, "sim")
    d = tnpu.Device("sim")
    m = tnpu.Model(path, d)
    d.close()
    with pytest.raises(ValueError, match="closed"):
        m.run({"x": np.ones((2, 8), np.float32), "offset": np.ones((2, 3), np.float32)})


def test_model_on_a_device_runs_compiled_per_input_shape(dev):
    x, _ = fashion_images()
    compiled = tnpu.Model(FASHION, dev)
    by_node = tnpu.Model(FASHION, dev, compile=False)
    assert compiled.plan_cache is None                 # nothing compiled before the first run
    for batch in (BATCH, 3, BATCH, 5, 1, 2, 3):    # five shapes: more than the 4 plans kept
        got = compiled.run(x[:batch])["logits"]
        assert got.shape == (batch, 10)
        assert_model_close(got, by_node.run(x[:batch])["logits"])
        assert compiled.last_stats["accel_nodes"] > 0
    # the runtime's plan cache (4 plans): BATCH, 3, 5, 1 compiled, BATCH a hit; 2 evicts 3 (the least
    # recently used), the last 3 is compiled again and evicts BATCH
    pc = compiled.plan_cache
    assert pc == {"capacity": 4, "plans": 4, "runs": 7, "hits": 1, "compiles": 6, "evictions": 2}, pc
    # a compiled form runs again to the same bits
    np.testing.assert_array_equal(compiled.run(x[:3])["logits"], compiled.run(x[:3])["logits"])
    assert by_node.plan_cache is None                  # compile=False: no plans


def test_closing_the_device_frees_the_compiled_model_first():
    d = tnpu.Device("sim")
    m = tnpu.Model(FASHION, d)
    x, _ = fashion_images()
    m.run(x[:2])
    d.close()
    with pytest.raises(ValueError):
        m.run(x[:2])
    del m                                              # nothing left to free on the closed device


def test_inputs_and_outputs_are_described_as_declared():
    m = tnpu.Model(FASHION)
    (i,), (o,) = m.inputs, m.outputs
    assert i["name"] == "image" and i["dtype"] == np.float32
    # the batch is symbolic: None; the rest as declared
    assert i["shape"][1:] == (1, 28, 28) and i["shape"][0] is None, i
    assert o["name"] == "logits" and o["dtype"] == np.float32 and o["shape"][1:] == (10,), o


def test_compile_save_and_open_without_the_onnx_file(dev, tmp_path):
    x, _ = fashion_images()
    m = tnpu.Model(FASHION, dev)
    m.compile(x[:3])                                   # ahead of the first run: no run counted
    assert m.plan_cache["compiles"] == 1 and m.plan_cache["runs"] == 0, m.plan_cache
    want = m.run(x[:3])["logits"]
    assert m.plan_cache["hits"] == 1 and m.plan_cache["compiles"] == 1, m.plan_cache
    path = tmp_path / "fashion.tnpu"
    m.save(path, x[:3])
    # a copy of the ONNX file that is gone: the compiled file carries the model
    opened = tnpu.Model.open(path, dev)
    assert [i["name"] for i in opened.inputs] == ["image"]
    assert opened.inputs[0]["shape"] == (3, 1, 28, 28)  # the shape it was compiled for
    np.testing.assert_array_equal(opened.run(x[:3])["logits"], want)
    with pytest.raises(tnpu.Error):                    # another shape than the compiled one
        opened.run(x[:2])
    opened.save(tmp_path / "again.tnpu")                # an opened model saves its own plan
    again = tnpu.Model.open(tmp_path / "again.tnpu", dev)
    np.testing.assert_array_equal(again.run(x[:3])["logits"], want)


def test_compile_save_and_open_errors(dev, tmp_path):
    x, _ = fashion_images()
    with pytest.raises(ValueError):                    # the CPU reference has no compiled plan
        tnpu.Model(FASHION).compile(x[:2])
    with pytest.raises(ValueError):
        tnpu.Model(FASHION, dev, compile=False).save(tmp_path / "x.tnpu", x[:2])
    with pytest.raises(TypeError):                     # an ONNX model saves the plan of given shapes
        tnpu.Model(FASHION, dev).save(tmp_path / "x.tnpu")
    bad = tmp_path / "garbage.tnpu"
    bad.write_bytes(b"not a compiled model" * 10)
    with pytest.raises(tnpu.Error) as e:
        tnpu.Model.open(bad, dev)
    assert "garbage.tnpu" in str(e.value)
    with pytest.raises(tnpu.Error) as e:
        tnpu.Model.open(tmp_path / "missing.tnpu", dev)
    assert e.value.errno == errno.ENOENT


def test_closing_the_device_frees_an_opened_compiled_model(tmp_path):
    x, _ = fashion_images()
    d = tnpu.Device("sim")
    tnpu.Model(FASHION, d).save(tmp_path / "f.tnpu", x[:2])
    m = tnpu.Model.open(tmp_path / "f.tnpu", d)
    m.run(x[:2])
    d.close()
    with pytest.raises(ValueError):
        m.run(x[:2])
    del m


def test_half_precision_model_runs_on_the_device(dev, tmp_path):
    # FLOAT16 weights, input and output: the network computes in FLOAT (Documentation/onnx.md, "Element
    # types"), so the MatMul and the Relu run on the device; the float16 result is within one float16
    # step of numpy's float64 product of the same halves
    onnx = pytest.importorskip("onnx")
    h = onnx.helper
    r = np.random.default_rng(16)
    w = (r.standard_normal((8, 5)) * 0.5).astype(np.float16)
    graph = h.make_graph([h.make_node("MatMul", ["x", "W"], ["p"]), h.make_node("Relu", ["p"], ["y"])], "half",
                         [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT16, [3, 8])],
                         [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT16, [3, 5])],
                         [onnx.numpy_helper.from_array(w, "W")])
    m = tnpu.Model(save(tmp_path, graph), dev)
    x = r.standard_normal((3, 8)).astype(np.float16)
    y = m.run(x)["y"]
    assert y.dtype == np.float16
    exact = np.maximum(x.astype(np.float64) @ w.astype(np.float64), 0)
    np.testing.assert_allclose(y.astype(np.float64), exact, rtol=2 ** -10, atol=2 ** -24)
    assert m.last_stats["accel_nodes"] >= 1 and m.last_stats["host_nodes"] == 0, m.last_stats
