#!/usr/bin/env python3
"""Seed inputs for QEMU's generic-fuzz on the tnpu device (tools/build-qemu-fuzz run).

Each seed programs the MMU and queue 0 through BAR0, rings the doorbell and installs a DMA pattern
that makes every device read of guest memory return a plausible ring entry / context entry, so the
fuzzer starts from inputs that reach ring fetch, context lookup and the MMU walk instead of having to
discover the register protocol first.  Format: generic_fuzz.c (opcode byte, operands, "FUZZ").
Usage: gen-fuzz-seeds.py CORPUS_DIR
"""
import os
import struct
import sys

SEP = b"FUZZ"
OP_WRITE, OP_ADD_DMA_PATTERN = 3, 7
LONG, QUAD = 2, 3

def write(base, off, val, size=LONG):
    # struct { uint8_t size, base; uint32_t offset; uint64_t value; } (natural alignment)
    return bytes([OP_WRITE]) + struct.pack("<BBxxIQ", size, base, off, val)

def pattern(data, index=0, stride=0):
    return bytes([OP_ADD_DMA_PATTERN, index, stride]) + data

def seed(base, cmd_len, flags):
    # ctx 1, cmd_va 0, seqno 7; flags bit 1 COUNTERS: the counter record goes to 0x400000
    counters_addr = 0x400000 if flags & 2 else 0
    entry = struct.pack("<HHIQQQ", 1, flags, cmd_len, 0, 7, counters_addr)
    ops = [
        pattern(entry),
        write(base, 0x80, 0x100000),        # MMU_CTX_BASE
        write(base, 0x88, 2),               # MMU_CTX_COUNT
        write(base, 0x54, 0),               # IRQ_MASK
        write(base, 0x1000, 0x200000),      # Q0 RING_BASE
        write(base, 0x1008, 8),             # Q0 RING_SIZE
        write(base, 0x1018, 0x300000),      # Q0 FENCE
        write(base, 0x1020, 1),             # Q0 CTRL.ENABLE
        write(base, 0x40, 1),               # CTRL.ENABLE
        write(base, 0x1010, 1),             # Q0 TAIL
        write(base, 0x1014, 1),             # Q0 DOORBELL
    ]
    return SEP.join(ops)

def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    n = 0
    for base in range(4):
        for cmd_len, flags in ((8, 1), (64, 0), (4096, 1), (64, 3)):
            with open(os.path.join(out, "seed-tnpu-%d-%d-%d" % (base, cmd_len, flags)), "wb") as f:
                f.write(seed(base, cmd_len, flags))
            n += 1
    print("%d seeds in %s" % (n, out))

if __name__ == "__main__":
    main()
