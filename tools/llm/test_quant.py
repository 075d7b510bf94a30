#!/usr/bin/python3
"""Unit test of tools/llm/quant.py's storage formats (issue 29), with numpy only.

The layouts are restated here from ONNX Runtime's MatMulNBits specification and ONNX's DequantizeLinear,
element by element in plain Python loops, not with quant.py's vectorised code: unpacking a byte is
`low nibble = element 2i, high nibble = element 2i + 1`; dequantisation is `(code - zero point) * scale`.
"""
import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import quant  # noqa: E402


def unpack_nibbles(byte_row):
    out = []
    for b in byte_row:
        out += [int(b) & 0xF, int(b) >> 4]
    return out


class PackNibbles(unittest.TestCase):
    def test_pack_then_unpack_gives_the_codes_low_nibble_first(self):
        rng = np.random.default_rng(29)
        codes = rng.integers(0, 16, size=(3, 5, 32))
        packed = quant.pack_nibbles(codes)
        self.assertEqual(packed.shape, (3, 5, 16))
        self.assertEqual(packed.dtype, np.uint8)
        for n in range(3):
            for b in range(5):
                self.assertEqual(unpack_nibbles(packed[n, b]), [int(c) for c in codes[n, b]])
        self.assertEqual(int(quant.pack_nibbles(np.array([0x3, 0xA]))[0]), 0xA3)


class Int4Blockwise(unittest.TestCase):
    def check(self, k, block, zero_point):
        rng = np.random.default_rng(k + block)
        n = 3
        w = rng.normal(0, 0.02, size=(n, k)).astype(np.float32)
        packed, s, zpp, deq = quant.int4_blockwise(w, block, zero_point)
        blocks = -(-k // block)
        self.assertEqual(packed.shape, (n, blocks, block // 2))
        self.assertEqual(s.shape, (n * blocks,))
        self.assertEqual(deq.shape, (n, k))
        if zero_point:
            self.assertEqual(zpp.shape, (n * -(-blocks // 2),))
        else:
            self.assertIsNone(zpp)
        zrow = -(-blocks // 2)
        for i in range(n):
            zps = unpack_nibbles(zpp[i * zrow:(i + 1) * zrow]) if zero_point else [8] * (2 * zrow)
            for b in range(blocks):
                codes = unpack_nibbles(packed[i, b])
                scale = np.float32(s[i * blocks + b])
                for j, c in enumerate(codes):
                    kk = b * block + j
                    if kk >= k:  # the padding of a short last block holds zero weights
                        self.assertEqual(c, zps[b], f"padding code at n={i} k={kk}")
                        continue
                    want = np.float32(np.float32(c - zps[b]) * scale)
                    self.assertEqual(deq[i, kk], want, f"n={i} k={kk}")
                    # a quantisation of w: within one step (a clamped zero point can shift by one)
                    self.assertLessEqual(abs(float(deq[i, kk]) - float(w[i, kk])), float(scale) * 1.0001)

    def test_symmetric_block_32(self):
        self.check(80, 32, False)

    def test_symmetric_block_128_short_last_block(self):
        self.check(176, 128, False)

    def test_zero_points_block_32_odd_block_count(self):
        self.check(96, 32, True)

    def test_zero_points_block_128(self):
        self.check(256, 128, True)


class Int8PerChannel(unittest.TestCase):
    def test_dequantised_is_code_times_the_channel_scale(self):
        rng = np.random.default_rng(8)
        w = rng.normal(0, 0.02, size=(4, 40)).astype(np.float32)
        q, s, deq = quant.int8_per_channel(w)
        self.assertEqual(q.dtype, np.int8)
        for i in range(4):
            self.assertAlmostEqual(float(s[i]), float(np.max(np.abs(w[i]))) / 127, delta=1e-9)
            for k in range(40):
                self.assertTrue(-127 <= int(q[i, k]) <= 127)
                self.assertEqual(deq[i, k], np.float32(np.float32(q[i, k]) * s[i]))
                self.assertLessEqual(abs(float(deq[i, k]) - float(w[i, k])), float(s[i]) / 2 * 1.0001)


class Schemes(unittest.TestCase):
    def test_dequantised_matches_the_stored_form(self):
        w = np.random.default_rng(1).normal(0, 0.02, size=(2, 64)).astype(np.float32)
        np.testing.assert_array_equal(quant.dequantised(w, "int4-b32-zp"), quant.int4_blockwise(w, 32, True)[3])
        np.testing.assert_array_equal(quant.dequantised(w, "int8"), quant.int8_per_channel(w)[2])
        with self.assertRaises(ValueError):
            quant.parse("int3")


if __name__ == "__main__":
    unittest.main()
