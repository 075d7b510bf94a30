"""Weight-only quantisation of a MatMul weight, in the forms users meet (issue #29).

Every function takes W as float32 [N, K] (output channel × reduction, nn.Linear's layout) and returns the
stored form plus the dequantised float32 [N, K] that both the ONNX graph and the PyTorch reference use, so
"PyTorch running the same dequantised weights" is exact by construction.

  int8        per output channel, symmetric: q = clamp(round(W / s), -127, 127), s = max|W[n]| / 127
              stored as ONNX DequantizeLinear(q int8 [K, N], s [N], axis=1) feeding MatMul
  int4-bB     blockwise along K (block B = 32 or 128), symmetric: codes c = clamp(round(W / s), -8, 7) + 8,
              s = max|block| / 7; com.microsoft MatMulNBits with no zero_points (the default zero point 8)
  int4-bB-zp  blockwise, asymmetric: s = (max - min) / 15, zp = clamp(round(-min / s), 0, 15),
              c = clamp(round(W / s) + zp, 0, 15); MatMulNBits with packed 4-bit zero_points
A last block shorter than B is padded with zero weights (code = zero point).  Codes are packed two per byte,
low nibble first, along K: B is uint8 [N, ceil(K / B), B / 2]; scales float [N * blocks]; zero points
uint8 [N * ceil(blocks / 2)], low nibble first.
"""
import numpy as np

SCHEMES = ("fp32", "int8", "int4-b32", "int4-b128", "int4-b32-zp", "int4-b128-zp")


def parse(scheme):
    if scheme not in SCHEMES:
        raise ValueError(f"unknown quantisation {scheme!r}; have {', '.join(SCHEMES)}")
    if not scheme.startswith("int4"):
        return scheme, 0, False
    parts = scheme.split("-")
    return "int4", int(parts[1][1:]), len(parts) == 3


def int8_per_channel(w):
    w = np.asarray(w, dtype=np.float32)
    amax = np.abs(w).max(axis=1)
    s = np.where(amax > 0, amax / np.float32(127), np.float32(1)).astype(np.float32)
    q = np.clip(np.rint(w / s[:, None]), -127, 127).astype(np.int8)
    return q, s, (q.astype(np.float32) * s[:, None]).astype(np.float32)


def pack_nibbles(codes):
    """[..., 2m] values 0..15 -> [..., m] bytes, element 2i in the low nibble."""
    codes = codes.astype(np.uint8)
    return (codes[..., 0::2] | (codes[..., 1::2] << 4)).astype(np.uint8)


def int4_blockwise(w, block, zero_point):
    w = np.asarray(w, dtype=np.float32)
    n, k = w.shape
    blocks = -(-k // block)
    wp = np.zeros((n, blocks * block), dtype=np.float32)
    wp[:, :k] = w
    wb = wp.reshape(n, blocks, block)
    if zero_point:
        lo = np.minimum(wb.min(axis=2), 0).astype(np.float32)
        hi = np.maximum(wb.max(axis=2), 0).astype(np.float32)
        s = np.where(hi > lo, (hi - lo) / np.float32(15), np.float32(1)).astype(np.float32)
        zp = np.clip(np.rint(-lo / s), 0, 15).astype(np.int32)
        codes = np.clip(np.rint(wb / s[:, :, None]) + zp[:, :, None], 0, 15).astype(np.int32)
    else:
        amax = np.abs(wb).max(axis=2)
        s = np.where(amax > 0, amax / np.float32(7), np.float32(1)).astype(np.float32)
        zp = np.full((n, blocks), 8, dtype=np.int32)
        codes = np.clip(np.rint(wb / s[:, :, None]), -8, 7).astype(np.int32) + 8
    deq = ((codes - zp[:, :, None]).astype(np.float32) * s[:, :, None]).astype(np.float32)
    packed = pack_nibbles(codes)  # [n, blocks, block/2]
    zpp = None
    if zero_point:
        zpad = np.full((n, blocks + (blocks & 1)), 0, dtype=np.int32)
        zpad[:, :blocks] = zp
        zpp = pack_nibbles(zpad).reshape(-1)
    return packed, s.reshape(-1), zpp, deq.reshape(n, blocks * block)[:, :k].copy()


def dequantised(w, scheme):
    """The float32 [N, K] weights a scheme's graph computes with."""
    kind, block, zp = parse(scheme)
    if kind == "fp32":
        return np.asarray(w, dtype=np.float32)
    if kind == "int8":
        return int8_per_channel(w)[2]
    return int4_blockwise(w, block, zp)[3]
