"""Decoder-only language models in plain PyTorch, for the exporter's coverage test.

Two models written the way people write them, not the way an exporter would like them:

  GPT      GPT-2 style (nanoGPT): learned token and position embeddings, pre-LayerNorm
           blocks, a GELU MLP, causal self-attention computed by hand (q @ k^T, masked_fill
           with a lower-triangular buffer registered with persistent=False, softmax, @ v),
           `B, T, C = x.shape`, and an lm_head tied to the token embedding.
  LLaMA    LLaMA style: RMSNorm written out (x * rsqrt(mean(x^2) + eps) * weight), rotary
           position embeddings from precomputed cos/sin buffers with rotate_half done by
           slicing and cat, a SwiGLU MLP (w2(silu(w1 x) * w3 x)), grouped-query attention
           (n_kv_heads < n_heads, the key/value heads repeated by expand + reshape), no
           biases, an untied output projection. Two other ways people write it are
           options: kv_repeat="interleave" repeats the heads with repeat_interleave (which
           PyTorch 1.13 cannot run on the meta device), rope_cache=False keeps only an
           inv_freq buffer and computes cos/sin in every forward (as Hugging Face's
           LlamaRotaryEmbedding does).

Both use F.scaled_dot_product_attention where it exists (PyTorch 2.x) and the manual path
otherwise (PyTorch 1.13, what CI runs). Dropout is configurable and 0.0 by default (as
nanoGPT pretrains); the nn.Dropout modules are still called, so they appear in a trace.

CONFIGS holds a small configuration of each for CI and a realistic one (GPT-2 124M, a
TinyLlama-1.1B shaped LLaMA with 4 key/value heads) for --full runs. make(name, full)
builds one; the input is a (batch, sequence) int64 tensor of token ids. The exporter's
own tests (tools/export/tests/small_models.py) build these classes in smaller
configurations of their own.
"""
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

HAS_SDPA = hasattr(F, "scaled_dot_product_attention")


# ==========================================================================
# GPT-2
# ==========================================================================
@dataclass
class GPTConfig:
    vocab_size: int = 1000
    block_size: int = 64
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.0
    bias: bool = True
    gelu: str = "none"           # nn.GELU(approximate=...): "none" (nanoGPT) or "tanh" (GPT-2's own)
    attention: str = "auto"      # "auto": scaled_dot_product_attention where it exists; "manual": always by hand
    mask_persistent: bool = False  # the hand-written path's causal mask buffer: in the state_dict or not
    mlp_sequential: bool = False   # the MLP as nn.Sequential(Linear, GELU, Linear, Dropout): mlp.0.weight ...


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        assert cfg.n_embd % cfg.n_head == 0
        self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd, bias=cfg.bias)
        self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd, bias=cfg.bias)
        self.attn_dropout = nn.Dropout(cfg.dropout)
        self.resid_dropout = nn.Dropout(cfg.dropout)
        self.n_head = cfg.n_head
        self.n_embd = cfg.n_embd
        self.dropout = cfg.dropout
        self.flash = HAS_SDPA and cfg.attention == "auto"
        if not self.flash:
            mask = torch.tril(torch.ones(cfg.block_size, cfg.block_size))
            self.register_buffer("bias", mask.view(1, 1, cfg.block_size, cfg.block_size),
                                 persistent=cfg.mask_persistent)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        if self.flash:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=None,
                                               dropout_p=self.dropout if self.training else 0.0,
                                               is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            att = self.attn_dropout(att)
            y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.c_fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd, bias=cfg.bias)
        self.gelu = nn.GELU(approximate=cfg.gelu)
        self.c_proj = nn.Linear(4 * cfg.n_embd, cfg.n_embd, bias=cfg.bias)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd)
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.n_embd)
        self.mlp = MLP(cfg) if not cfg.mlp_sequential else nn.Sequential(
            nn.Linear(cfg.n_embd, 4 * cfg.n_embd, bias=cfg.bias), nn.GELU(approximate=cfg.gelu),
            nn.Linear(4 * cfg.n_embd, cfg.n_embd, bias=cfg.bias), nn.Dropout(cfg.dropout))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class GPT(nn.Module):
    """GPT-2: logits (B, T, vocab) from token ids (B, T)."""

    def __init__(self, cfg):
        super().__init__()
        self.config = cfg
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(cfg.vocab_size, cfg.n_embd),
            wpe=nn.Embedding(cfg.block_size, cfg.n_embd),
            drop=nn.Dropout(cfg.dropout),
            h=nn.ModuleList([Block(cfg) for _ in range(cfg.n_layer)]),
            ln_f=nn.LayerNorm(cfg.n_embd),
        ))
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith("c_proj.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * cfg.n_layer))

    @staticmethod
    def _init_weights(module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx):
        B, T = idx.shape
        torch._assert(T <= self.config.block_size, "sequence longer than block_size")
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device)
        tok_emb = self.transformer.wte(idx)
        pos_emb = self.transformer.wpe(pos)
        x = self.transformer.drop(tok_emb + pos_emb)
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        return self.lm_head(x)


# ==========================================================================
# LLaMA
# ==========================================================================
@dataclass
class LlamaConfig:
    vocab_size: int = 1000
    dim: int = 128
    n_layers: int = 2
    n_heads: int = 4
    n_kv_heads: int = 2
    multiple_of: int = 32
    ffn_dim_multiplier: float = None
    norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    max_seq_len: int = 64
    dropout: float = 0.0
    ffn_hidden_dim: int = None  # set: this width; None: Meta's formula from dim
    kv_repeat: str = "expand"   # "expand": expand + reshape (Meta's, Hugging Face's); "interleave": repeat_interleave
    rope_cache: bool = True     # True: cos/sin buffers made once; False: an inv_freq buffer, cos/sin every forward

    @property
    def hidden_dim(self):
        """The SwiGLU width: ffn_hidden_dim, or as Meta's reference code computes it."""
        if self.ffn_hidden_dim is not None:
            return self.ffn_hidden_dim
        hidden = int(2 * (4 * self.dim) / 3)
        if self.ffn_dim_multiplier is not None:
            hidden = int(self.ffn_dim_multiplier * hidden)
        return self.multiple_of * ((hidden + self.multiple_of - 1) // self.multiple_of)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    """Rotates half the hidden dims: (x1, x2) -> (-x2, x1)."""
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


def repeat_kv(x, n_rep):
    """(B, n_kv_heads, T, hd) -> (B, n_kv_heads * n_rep, T, hd), each head repeated n_rep times."""
    b, h, s, d = x.shape
    if n_rep == 1:
        return x
    return x[:, :, None, :, :].expand(b, h, n_rep, s, d).reshape(b, h * n_rep, s, d)


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.n_heads = cfg.n_heads
        self.n_kv_heads = cfg.n_kv_heads
        self.n_rep = cfg.n_heads // cfg.n_kv_heads
        self.head_dim = cfg.dim // cfg.n_heads
        self.wq = nn.Linear(cfg.dim, cfg.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(cfg.dim, cfg.n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(cfg.dim, cfg.n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(cfg.n_heads * self.head_dim, cfg.dim, bias=False)
        self.attn_dropout = nn.Dropout(cfg.dropout)
        self.dropout = cfg.dropout
        self.kv_repeat = cfg.kv_repeat

    def forward(self, x, cos, sin):
        bsz, seqlen, _ = x.shape
        q = self.wq(x).view(bsz, seqlen, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim).transpose(1, 2)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        if self.kv_repeat == "interleave":
            k = k.repeat_interleave(self.n_rep, dim=1)
            v = v.repeat_interleave(self.n_rep, dim=1)
        else:
            k = repeat_kv(k, self.n_rep)
            v = repeat_kv(v, self.n_rep)
        if HAS_SDPA:
            out = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout if self.training else 0.0,
                                                 is_causal=True)
        else:
            mask = torch.full((seqlen, seqlen), float("-inf"), device=x.device)
            mask = torch.triu(mask, diagonal=1)
            scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
            scores = scores + mask
            scores = F.softmax(scores.float(), dim=-1).type_as(q)
            scores = self.attn_dropout(scores)
            out = torch.matmul(scores, v)
        out = out.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.wo(out)


class FeedForward(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class TransformerBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.attention = Attention(cfg)
        self.feed_forward = FeedForward(cfg.dim, cfg.hidden_dim)
        self.attention_norm = RMSNorm(cfg.dim, eps=cfg.norm_eps)
        self.ffn_norm = RMSNorm(cfg.dim, eps=cfg.norm_eps)

    def forward(self, x, cos, sin):
        h = x + self.attention(self.attention_norm(x), cos, sin)
        return h + self.feed_forward(self.ffn_norm(h))


class Llama(nn.Module):
    """LLaMA: logits (B, T, vocab) from token ids (B, T)."""

    def __init__(self, cfg):
        super().__init__()
        self.config = cfg
        self.tok_embeddings = nn.Embedding(cfg.vocab_size, cfg.dim)
        self.layers = nn.ModuleList([TransformerBlock(cfg) for _ in range(cfg.n_layers)])
        self.norm = RMSNorm(cfg.dim, eps=cfg.norm_eps)
        self.output = nn.Linear(cfg.dim, cfg.vocab_size, bias=False)
        head_dim = cfg.dim // cfg.n_heads
        inv_freq = 1.0 / (cfg.rope_theta ** (torch.arange(0, head_dim, 2).float() / head_dim))
        if not cfg.rope_cache:
            self.register_buffer("inv_freq", inv_freq, persistent=False)
            return
        t = torch.arange(cfg.max_seq_len).float()
        freqs = torch.outer(t, inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos(), persistent=False)
        self.register_buffer("sin_cached", emb.sin(), persistent=False)

    def forward(self, tokens):
        _bsz, seqlen = tokens.shape
        h = self.tok_embeddings(tokens)
        if self.config.rope_cache:
            cos = self.cos_cached[:seqlen]
            sin = self.sin_cached[:seqlen]
        else:
            t = torch.arange(seqlen, device=tokens.device, dtype=self.inv_freq.dtype)
            freqs = torch.outer(t, self.inv_freq)
            emb = torch.cat((freqs, freqs), dim=-1)
            cos, sin = emb.cos(), emb.sin()
        for layer in self.layers:
            h = layer(h, cos, sin)
        h = self.norm(h)
        return self.output(h).float()


# ==========================================================================
# Configurations
# ==========================================================================
# TinyLlama-1.1B's SwiGLU width (5632) is not what Meta's formula gives for dim 2048: pinned.
CONFIGS = {
    # name: (class, small config for CI, realistic config for --full)
    "gpt2": (GPT, GPTConfig(),
             GPTConfig(vocab_size=50257, block_size=1024, n_layer=12, n_head=12, n_embd=768)),
    "llama": (Llama, LlamaConfig(),
              LlamaConfig(vocab_size=32000, dim=2048, n_layers=22, n_heads=32, n_kv_heads=4,
                          ffn_hidden_dim=5632, norm_eps=1e-5, max_seq_len=2048)),
}


def make(name, full=False):
    """The model `name` ("gpt2" or "llama"), its small CI configuration or the realistic one."""
    cls, small, big = CONFIGS[name]
    return cls(big if full else small)


def config(name, full=False):
    """The configuration make(name, full) uses."""
    return CONFIGS[name][2 if full else 1]
