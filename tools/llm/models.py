"""Decoder language models in plain torch.nn, as the LLM exporters' users bring them (issue #29).

Two architectures, seeded random weights (no hub, no model files):
  gpt2   learned positions, LayerNorm, tanh-GELU MLP, multi-head attention, tied embedding head
  llama  RMSNorm, rotary embeddings, SwiGLU MLP, grouped-query attention, untied head

Both take (input_ids, attention_mask, position_ids, past_key_values) and return (logits, presents), with
the KV cache as [batch, kv_heads, past, head_dim] per layer: the layout ONNX decoder exporters write.
`build(arch, size, seed)` gives a model in eval mode; SIZES lists the configurations (`test` sizes keep
make llm-check fast; `full` sizes are the issue's: GPT-2-small, a ~100 M Llama).
"""
import math

import torch
from torch import nn
import torch.nn.functional as F

SIZES = {
    # name: (layers, d_model, heads, kv_heads, ffn, vocab, context)
    ("gpt2", "test"): dict(layers=2, d=64, heads=4, kv_heads=4, ffn=256, vocab=256, ctx=128),
    ("gpt2", "full"): dict(layers=12, d=768, heads=12, kv_heads=12, ffn=3072, vocab=50257, ctx=1024),
    ("llama", "test"): dict(layers=2, d=64, heads=8, kv_heads=2, ffn=176, vocab=256, ctx=128),
    ("llama", "full"): dict(layers=8, d=768, heads=12, kv_heads=3, ffn=2048, vocab=32000, ctx=1024),
}


def causal_mask(attention_mask, q_len, past_len):
    """[B, 1, q_len, past_len + q_len] additive mask: causal over positions and the padding mask."""
    total = past_len + q_len
    k_pos = torch.arange(total, device=attention_mask.device)
    q_pos = torch.arange(q_len, device=attention_mask.device) + past_len
    allowed = k_pos[None, :] <= q_pos[:, None]  # [q, total]
    allowed = allowed[None, None, :, :] & (attention_mask[:, None, None, :] > 0)
    zero = torch.zeros((), dtype=torch.float32)
    neg = torch.full((), torch.finfo(torch.float32).min, dtype=torch.float32)
    return torch.where(allowed, zero, neg)


def attend(q, k, v, mask, rep):
    """q [B,H,T,hd], k/v [B,KV,S,hd] (KV heads repeated rep times), mask [B,1,T,S]."""
    scale = 1.0 / math.sqrt(int(q.shape[-1]))  # a constant of the architecture, not of the input
    if rep > 1:
        b, kv, s, hd = k.shape
        k = k[:, :, None, :, :].expand(b, kv, rep, s, hd).reshape(b, kv * rep, s, hd)
        v = v[:, :, None, :, :].expand(b, kv, rep, s, hd).reshape(b, kv * rep, s, hd)
    scores = torch.matmul(q, k.transpose(-1, -2)) * scale + mask
    return torch.matmul(torch.softmax(scores, dim=-1), v)


class Attention(nn.Module):
    def __init__(self, c, bias):
        super().__init__()
        self.h, self.kv, self.hd = c["heads"], c["kv_heads"], c["d"] // c["heads"]
        self.q = nn.Linear(c["d"], self.h * self.hd, bias=bias)
        self.k = nn.Linear(c["d"], self.kv * self.hd, bias=bias)
        self.v = nn.Linear(c["d"], self.kv * self.hd, bias=bias)
        self.o = nn.Linear(self.h * self.hd, c["d"], bias=bias)

    def forward(self, x, mask, past_k, past_v, rope=None):
        b, t, _ = x.shape
        q = self.q(x).view(b, t, self.h, self.hd).transpose(1, 2)
        k = self.k(x).view(b, t, self.kv, self.hd).transpose(1, 2)
        v = self.v(x).view(b, t, self.kv, self.hd).transpose(1, 2)
        if rope is not None:
            q, k = rope(q), rope(k)
        k = torch.cat([past_k, k], dim=2)
        v = torch.cat([past_v, v], dim=2)
        y = attend(q, k, v, mask, self.h // self.kv)
        return self.o(y.transpose(1, 2).reshape(b, t, self.h * self.hd)), k, v


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(d)), eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Rotary:
    """Rotate-half rotary embedding at the given positions; tables precomputed for the context."""

    def __init__(self, hd, ctx, theta=10000.0):
        inv = 1.0 / theta ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd)
        ang = torch.arange(ctx, dtype=torch.float64)[:, None] * inv[None, :]
        ang = torch.cat([ang, ang], dim=-1)
        self.cos, self.sin = ang.cos().float(), ang.sin().float()

    def at(self, position_ids):
        cos, sin = self.cos[position_ids][:, None], self.sin[position_ids][:, None]  # [B,1,T,hd]

        def apply(x):
            half = x.shape[-1] // 2
            rot = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
            return x * cos + rot * sin

        return apply


class GPT2Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(c["d"]), nn.LayerNorm(c["d"])
        self.attn = Attention(c, bias=True)
        self.fc, self.proj = nn.Linear(c["d"], c["ffn"]), nn.Linear(c["ffn"], c["d"])

    def forward(self, x, mask, pk, pv, rope):
        a, k, v = self.attn(self.ln1(x), mask, pk, pv)
        x = x + a
        x = x + self.proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))
        return x, k, v


class LlamaBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.n1, self.n2 = RMSNorm(c["d"]), RMSNorm(c["d"])
        self.attn = Attention(c, bias=False)
        self.gate = nn.Linear(c["d"], c["ffn"], bias=False)
        self.up = nn.Linear(c["d"], c["ffn"], bias=False)
        self.down = nn.Linear(c["ffn"], c["d"], bias=False)

    def forward(self, x, mask, pk, pv, rope):
        a, k, v = self.attn(self.n1(x), mask, pk, pv, rope)
        x = x + a
        h = self.n2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h)), k, v


class Decoder(nn.Module):
    def __init__(self, arch, c):
        super().__init__()
        self.arch, self.c = arch, c
        self.embed = nn.Embedding(c["vocab"], c["d"])
        block = GPT2Block if arch == "gpt2" else LlamaBlock
        self.blocks = nn.ModuleList(block(c) for _ in range(c["layers"]))
        if arch == "gpt2":
            self.pos = nn.Embedding(c["ctx"], c["d"])
            self.norm = nn.LayerNorm(c["d"])
            self.head = None  # tied: logits = h @ embed.weight^T
            self.rotary = None
        else:
            self.norm = RMSNorm(c["d"])
            self.head = nn.Linear(c["d"], c["vocab"], bias=False)
            self.rotary = Rotary(c["d"] // c["heads"], c["ctx"])

    def head_weight(self):
        return self.embed.weight if self.head is None else self.head.weight

    def forward(self, input_ids, attention_mask, position_ids, *past):
        x = self.embed(input_ids)
        if self.arch == "gpt2":
            x = x + self.pos(position_ids)
        rope = self.rotary.at(position_ids) if self.rotary else None
        mask = causal_mask(attention_mask, input_ids.shape[1], past[0].shape[2])
        presents = []
        for i, blk in enumerate(self.blocks):
            x, k, v = blk(x, mask, past[2 * i], past[2 * i + 1], rope)
            presents += [k, v]
        logits = F.linear(self.norm(x), self.head_weight())
        return (logits, *presents)

    def empty_past(self, batch=1):
        hd = self.c["d"] // self.c["heads"]
        z = torch.zeros(batch, self.c["kv_heads"], 0, hd)
        return [z.clone() for _ in range(2 * self.c["layers"])]


def build(arch, size="test", seed=0):
    if (arch, size) not in SIZES:
        raise ValueError(f"unknown model {arch}/{size}; have {sorted(SIZES)}")
    torch.manual_seed(seed)
    m = Decoder(arch, dict(SIZES[(arch, size)]))
    with torch.no_grad():  # GPT-2's initialisation: N(0, 0.02); norms at 1, biases at 0
        for name, p in m.named_parameters():
            if p.dim() >= 2:
                p.normal_(0.0, 0.02)
            elif name.endswith("bias"):
                p.zero_()
    return m.eval()


def io_names(layers):
    ins = ["input_ids", "attention_mask", "position_ids"]
    outs = ["logits"]
    for i in range(layers):
        ins += [f"past_key_values.{i}.key", f"past_key_values.{i}.value"]
        outs += [f"present.{i}.key", f"present.{i}.value"]
    return ins, outs


def generate_greedy(model, ids, new_tokens):
    """PyTorch's own greedy generation with the KV cache: the reference the device run is compared with."""
    past = model.empty_past()
    out, cur, n = [], torch.tensor([ids]), len(ids)
    with torch.no_grad():
        for _ in range(new_tokens):
            t = cur.shape[1]
            pos = torch.arange(n - t, n)[None, :]
            res = model(cur, torch.ones(1, n, dtype=torch.int64), pos, *past)
            past = list(res[1:])
            nxt = int(res[0][0, -1].argmax())
            out.append(nxt)
            cur, n = torch.tensor([[nxt]]), n + 1
    return out
