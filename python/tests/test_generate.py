"""tnpu.Model.generate(): a decoder LLM's greedy tokens equal PyTorch's (tools/llm, issue #29)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import tnpu

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLM = os.path.join(TOP, "tools", "llm")
torch = pytest.importorskip("torch")  # Debian's python3-torch (tools/setup-deps): the reference
sys.path.insert(0, LLM)
import models  # noqa: E402


@pytest.fixture(scope="module")
def gpt2_path():
    out = subprocess.run([sys.executable, os.path.join(LLM, "export.py"), "--arch", "gpt2", "--size", "test",
                          "--quant", "fp32", "--cached"], check=True, capture_output=True, text=True)
    return out.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def gpt2():
    return models.build("gpt2", "test", 0)


def prompt():
    return [int(x) for x in np.random.default_rng(30).integers(0, 256, size=7)]


def test_generate_greedy_matches_pytorch_on_device(dev, gpt2_path, gpt2):
    m = tnpu.Model(gpt2_path, dev)
    assert m.generate(prompt(), max_new_tokens=16) == models.generate_greedy(gpt2, prompt(), 16)


def test_generate_greedy_matches_pytorch_on_cpu_reference(gpt2_path, gpt2):
    m = tnpu.Model(gpt2_path)
    assert m.generate(prompt(), 8) == models.generate_greedy(gpt2, prompt(), 8)


def test_generate_sampling_is_reproducible_and_top_k_1_is_greedy(dev, gpt2_path, gpt2):
    m = tnpu.Model(gpt2_path, dev)
    kw = dict(max_new_tokens=12, temperature=0.9, top_k=50, top_p=0.95, seed=11)
    a = m.generate(prompt(), **kw)
    assert a == m.generate(prompt(), **kw)
    assert all(0 <= t < 256 for t in a)
    assert m.generate(prompt(), 12, temperature=1.0, top_k=1, seed=4) == models.generate_greedy(gpt2, prompt(), 12)


def test_generate_rejects_bad_input(dev, gpt2_path):
    m = tnpu.Model(gpt2_path, dev)
    with pytest.raises(ValueError, match="max_new_tokens"):
        m.generate([1, 2], max_new_tokens=0)
    with pytest.raises(tnpu.Error, match="outside the vocabulary"):
        m.generate([1, 256], max_new_tokens=2)
    with pytest.raises(tnpu.Error, match="max length 4"):
        m.generate([1, 2, 3, 4, 5], max_new_tokens=2, max_len=4)
