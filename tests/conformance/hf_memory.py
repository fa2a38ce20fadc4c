#!/usr/bin/env python3
"""hf_memory.py - `tinspect memory` on a Hugging Face config.json against PyTorch re-implementations.

For each dense decoder family tinspect describes from a config.json (llama, mistral, qwen2, qwen3,
gemma, gemma2, gemma3_text, phi3, olmo2, gpt2, gpt_neox, falcon), a small PyTorch re-implementation
that follows transformers' modeling code (the module tree and state_dict names; RMSNorm's float32
upcast; the rotary tables as the model's rotary embedding computes them; repeat_kv; the KV cache
that DynamicCache grows with torch.cat; eager attention, softmax(QK^T * scale + mask) V, since
PyTorch 1.13 has no scaled_dot_product_attention; each family's differences: Gemma's scaled
embeddings and (1 + w) norms, Gemma 2's soft-capping and four norms, Phi-3's fused qkv/gate_up,
GPT-2's Conv1D and gelu_new, GPT-NeoX's parallel residual and partial rotary, Falcon's fused
multi-query qkv) is measured on the CPU under memshim, as memory_random.py measures (one thread,
float32, the live bytes after a warm-up backward subtracted, two warm-up steps, the third's peak):

  infer   model(input_ids [B, T]) under no_grad with a cache (the prefill: its peak), then one
          token [B, 1] beside that cache (the decode step: its peak; the prefill's logits let go,
          as generate keeps only the last row)
  train   out = model(input_ids, labels=input_ids): the logits and the loss as transformers'
          ForCausalLMLoss computes it (labels padded with -100 and shifted by one, cross_entropy with
          mean reduction); out.loss.backward() with the output (its logits) held, AdamW
          (foreach=False), zero_grad(set_to_none=True)

Each case's config is written as a config.json in a temporary folder, and `tinspect memory FOLDER
--batch B --context T` estimates it from that config: the prefill against `peak`, the decode step
against `decode_peak`, training (`--mode train --optimizer adamw --impl for-loop`) against `peak`.

  hf_memory.py TINSPECT --measure -o FILE [--only NAME]   measure every case, write FILE
  hf_memory.py TINSPECT --compare FILE [--misses FILE]    estimate every case of FILE again; fail when
                                                          one is more than 5 % (and 64 KiB) from its
                                                          measurement, or outside the estimate's
                                                          peak_range; --misses: cases known to miss,
                                                          reported while no worse by 2 points
  hf_memory.py TINSPECT --export [--only NAME]            tinspect-export each re-implementation and
              [--measured FILE]                           compare `tinspect memory` on that
                                                          description with the config-built one
                                                          (a report; fails when an export fails)
  hf_memory.py TINSPECT --compare FILE --write-doc DOC    write the results' table into DOC between
              (--check-doc DOC: fail when it differs)     its hf-memory markers
"""
import argparse
import datetime
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)

from memory_judge import LIMIT, SLACK, judge, load_misses, marked_table, run_json, save_cases  # noqa: E402

# name, model_type, config (written as config.json), batch, context
CASES = [
    ("llama", "llama", {"vocab_size": 4000, "hidden_size": 128, "intermediate_size": 344, "num_hidden_layers": 2,
                        "num_attention_heads": 4, "num_key_value_heads": 2, "rms_norm_eps": 1e-6,
                        "tie_word_embeddings": False}, 2, 128),
    ("mistral", "mistral", {"vocab_size": 3000, "hidden_size": 192, "intermediate_size": 512, "num_hidden_layers": 3,
                            "num_attention_heads": 6, "num_key_value_heads": 2, "rms_norm_eps": 1e-5,
                            "sliding_window": 4096, "tie_word_embeddings": False}, 2, 96),
    ("qwen2", "qwen2", {"vocab_size": 5000, "hidden_size": 128, "intermediate_size": 384, "num_hidden_layers": 2,
                        "num_attention_heads": 4, "num_key_value_heads": 1, "rms_norm_eps": 1e-6,
                        "tie_word_embeddings": True}, 2, 128),
    ("qwen3", "qwen3", {"vocab_size": 4000, "hidden_size": 128, "intermediate_size": 384, "num_hidden_layers": 2,
                        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64, "rms_norm_eps": 1e-6,
                        "tie_word_embeddings": True}, 2, 96),
    ("gemma", "gemma", {"vocab_size": 4000, "hidden_size": 128, "intermediate_size": 512, "num_hidden_layers": 2,
                        "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 64, "rms_norm_eps": 1e-6},
     2, 128),
    ("gemma2", "gemma2", {"vocab_size": 4000, "hidden_size": 128, "intermediate_size": 512, "num_hidden_layers": 2,
                          "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64, "rms_norm_eps": 1e-6,
                          "query_pre_attn_scalar": 64, "sliding_window": 4096}, 2, 128),
    ("gemma3_text", "gemma3_text", {"vocab_size": 4000, "hidden_size": 128, "intermediate_size": 512,
                                    "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 1,
                                    "head_dim": 64, "rms_norm_eps": 1e-6, "query_pre_attn_scalar": 64,
                                    "sliding_window": 4096}, 2, 128),
    ("phi3", "phi3", {"vocab_size": 3000, "hidden_size": 192, "intermediate_size": 512, "num_hidden_layers": 2,
                      "num_attention_heads": 6, "num_key_value_heads": 6, "rms_norm_eps": 1e-5,
                      "tie_word_embeddings": False}, 2, 96),
    ("olmo2", "olmo2", {"vocab_size": 4000, "hidden_size": 128, "intermediate_size": 384, "num_hidden_layers": 2,
                        "num_attention_heads": 4, "num_key_value_heads": 4, "rms_norm_eps": 1e-6,
                        "tie_word_embeddings": False}, 2, 128),
    ("gpt2", "gpt2", {"vocab_size": 4000, "n_positions": 256, "n_embd": 128, "n_layer": 2, "n_head": 4,
                      "layer_norm_epsilon": 1e-5, "attn_pdrop": 0.0, "embd_pdrop": 0.0, "resid_pdrop": 0.0,
                      "activation_function": "gelu_new"}, 2, 128),
    ("gpt_neox", "gpt_neox", {"vocab_size": 4000, "hidden_size": 128, "intermediate_size": 512,
                              "num_hidden_layers": 2, "num_attention_heads": 4, "rotary_pct": 0.25,
                              "layer_norm_eps": 1e-5, "use_parallel_residual": True,
                              "tie_word_embeddings": False}, 2, 128),
    ("falcon", "falcon", {"vocab_size": 4000, "hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
                          "layer_norm_epsilon": 1e-5, "multi_query": True, "parallel_attn": True,
                          "new_decoder_architecture": False, "alibi": False, "bias": False}, 2, 128),
    # a second size of each, with what the first leaves at its default
    ("llama-tied", "llama", {"vocab_size": 8000, "hidden_size": 256, "intermediate_size": 688, "num_hidden_layers": 4,
                             "num_attention_heads": 8, "num_key_value_heads": 2, "rms_norm_eps": 1e-5,
                             "attention_bias": True, "tie_word_embeddings": True}, 1, 256),
    ("mistral-b4", "mistral", {"vocab_size": 2000, "hidden_size": 128, "intermediate_size": 448, "num_hidden_layers": 2,
                               "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 32,
                               "sliding_window": 4096}, 4, 64),
    ("qwen2-mha", "qwen2", {"vocab_size": 3000, "hidden_size": 192, "intermediate_size": 512, "num_hidden_layers": 3,
                            "num_attention_heads": 6, "num_key_value_heads": 6, "tie_word_embeddings": False}, 1, 192),
    ("qwen3-b1", "qwen3", {"vocab_size": 6000, "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
                           "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 32,
                           "tie_word_embeddings": False}, 1, 256),
    ("gemma-mha", "gemma", {"vocab_size": 2000, "hidden_size": 64, "intermediate_size": 256, "num_hidden_layers": 4,
                            "num_attention_heads": 2, "num_key_value_heads": 2, "head_dim": 32}, 4, 64),
    ("gemma2-kv1", "gemma2", {"vocab_size": 6000, "hidden_size": 192, "intermediate_size": 384, "num_hidden_layers": 3,
                              "num_attention_heads": 3, "num_key_value_heads": 1, "head_dim": 64,
                              "query_pre_attn_scalar": 64, "sliding_window": 4096}, 1, 192),
    ("gemma3_text-6l", "gemma3_text", {"vocab_size": 2000, "hidden_size": 64, "intermediate_size": 192,
                                       "num_hidden_layers": 6, "num_attention_heads": 4, "num_key_value_heads": 2,
                                       "head_dim": 16, "query_pre_attn_scalar": 16, "sliding_window": 4096}, 2, 96),
    ("phi3-gqa", "phi3", {"vocab_size": 4000, "hidden_size": 128, "intermediate_size": 384, "num_hidden_layers": 3,
                          "num_attention_heads": 8, "num_key_value_heads": 2, "tie_word_embeddings": False}, 2, 128),
    ("olmo2-gqa", "olmo2", {"vocab_size": 3000, "hidden_size": 192, "intermediate_size": 512, "num_hidden_layers": 2,
                            "num_attention_heads": 6, "num_key_value_heads": 2, "tie_word_embeddings": True}, 2, 96),
    ("gpt2-l4", "gpt2", {"vocab_size": 8000, "n_positions": 512, "n_embd": 256, "n_layer": 4, "n_head": 8,
                         "attn_pdrop": 0.0, "embd_pdrop": 0.0, "resid_pdrop": 0.0}, 1, 256),
    ("gpt_neox-serial", "gpt_neox", {"vocab_size": 3000, "hidden_size": 192, "intermediate_size": 768,
                                     "num_hidden_layers": 3, "num_attention_heads": 6, "rotary_pct": 0.5,
                                     "use_parallel_residual": False, "tie_word_embeddings": True}, 2, 96),
    ("falcon-bias", "falcon", {"vocab_size": 6000, "hidden_size": 256, "num_hidden_layers": 2,
                               "num_attention_heads": 8, "multi_query": True, "parallel_attn": True,
                               "new_decoder_architecture": False, "alibi": False, "bias": True}, 1, 192),
]


HF_CLASS = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "qwen2": "Qwen2ForCausalLM",
            "qwen3": "Qwen3ForCausalLM", "gemma": "GemmaForCausalLM", "gemma2": "Gemma2ForCausalLM",
            "gemma3_text": "Gemma3ForCausalLM", "phi3": "Phi3ForCausalLM", "olmo2": "Olmo2ForCausalLM",
            "gpt2": "GPT2LMHeadModel", "gpt_neox": "GPTNeoXForCausalLM", "falcon": "FalconForCausalLM"}


# ==========================================================================
# The re-implementations (imported by tinspect-export too: build(family, config))
# ==========================================================================
def _torch():
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    return torch, nn, F


def family_cfg(model_type, c):
    """The config with transformers' defaults filled in, in one vocabulary for every family."""
    g = dict(c)
    g["model_type"] = model_type
    if model_type == "gpt2":
        g.update(hidden_size=c["n_embd"], num_hidden_layers=c["n_layer"], num_attention_heads=c["n_head"],
                 intermediate_size=c.get("n_inner") or 4 * c["n_embd"], eps=c.get("layer_norm_epsilon", 1e-5),
                 tie_word_embeddings=c.get("tie_word_embeddings", True))
    elif model_type == "falcon":
        g.update(intermediate_size=c.get("ffn_hidden_size", 4 * c["hidden_size"]), eps=c.get("layer_norm_epsilon", 1e-5),
                 num_key_value_heads=1, tie_word_embeddings=c.get("tie_word_embeddings", True))
    elif model_type == "gpt_neox":
        g.update(eps=c.get("layer_norm_eps", 1e-5), num_key_value_heads=c["num_attention_heads"],
                 tie_word_embeddings=c.get("tie_word_embeddings", False))
    else:
        g["eps"] = c.get("rms_norm_eps", 1e-6)
        g.setdefault("tie_word_embeddings", model_type.startswith("gemma"))
    g.setdefault("num_key_value_heads", g["num_attention_heads"])
    default_hd = 256 if model_type.startswith("gemma") else 128 if model_type == "qwen3" else None
    g.setdefault("head_dim", default_hd or g["hidden_size"] // g["num_attention_heads"])
    if model_type in ("gemma2", "gemma3_text"):
        g.setdefault("query_pre_attn_scalar", 256)
    if model_type == "gemma2":
        g.setdefault("attn_logit_softcapping", 50.0)
        g.setdefault("final_logit_softcapping", 30.0)
    g.setdefault("attn_logit_softcapping", None)
    g.setdefault("final_logit_softcapping", None)
    return g


def build(family, config):
    """The model for a config: a CausalLM whose forward(input_ids, cache=None, labels=None) gives the
    logits (and the loss with labels), and grows cache (a list of [key, value] per layer) as it goes."""
    torch, nn, F = _torch()
    g = family_cfg(family, config)
    mt = g["model_type"]
    H, KV, hd, D = g["num_attention_heads"], g["num_key_value_heads"], g["head_dim"], g["hidden_size"]
    rms = mt not in ("gpt2", "gpt_neox", "falcon")

    class RMSNorm(nn.Module):
        # LlamaRMSNorm (weight * x.to(dtype)), GemmaRMSNorm (x * (1 + w)), Olmo2RMSNorm ((w * x).to(dtype))
        def __init__(self, n):
            super().__init__()
            self.eps = g["eps"]
            self.weight = nn.Parameter(torch.zeros(n) if mt.startswith("gemma") else torch.ones(n))

        def forward(self, x):
            dtype = x.dtype
            if mt.startswith("gemma"):
                h = x.float()
                h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
                h = h * (1.0 + self.weight.float())
                return h.type_as(x)
            h = x.to(torch.float32)
            var = h.pow(2).mean(-1, keepdim=True)
            h = h * torch.rsqrt(var + self.eps)
            if mt == "olmo2":
                return (self.weight * h).to(dtype)
            return self.weight * h.to(dtype)

    def norm(n):
        return RMSNorm(n) if rms else nn.LayerNorm(n, eps=g["eps"])

    class Conv1D(nn.Module):  # GPT-2's: weight [in, out], addmm
        def __init__(self, nf, nx):
            super().__init__()
            self.nf = nf
            self.weight = nn.Parameter(torch.randn(nx, nf) * 0.02)
            self.bias = nn.Parameter(torch.zeros(nf))

        def forward(self, x):
            size_out = x.size()[:-1] + (self.nf,)
            x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
            return x.view(size_out)

    def rotate_half(x):
        x1 = x[..., : x.shape[-1] // 2]
        x2 = x[..., x.shape[-1] // 2:]
        return torch.cat((-x2, x1), dim=-1)

    def apply_rotary(q, k, cos, sin):
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        rd = cos.shape[-1]
        if mt in ("gpt_neox", "phi3"):  # partial rotary: the rotated part, then the rest, concatenated
            q_rot, q_pass = q[..., :rd], q[..., rd:]
            k_rot, k_pass = k[..., :rd], k[..., rd:]
            q = torch.cat([(q_rot * cos) + (rotate_half(q_rot) * sin), q_pass], dim=-1)
            k = torch.cat([(k_rot * cos) + (rotate_half(k_rot) * sin), k_pass], dim=-1)
            return q, k
        return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)

    def repeat_kv(x, n_rep):
        b, kvh, slen, d = x.shape
        if n_rep == 1:
            return x
        x = x[:, :, None, :, :].expand(b, kvh, n_rep, slen, d)
        return x.reshape(b, kvh * n_rep, slen, d)

    def cache_update(cache, i, k, v):  # DynamicCache.update
        if cache is None:
            return k, v
        if len(cache) <= i:
            cache.append([k, v])
        else:
            cache[i][0] = torch.cat([cache[i][0], k], dim=-2)
            cache[i][1] = torch.cat([cache[i][1], v], dim=-2)
        return cache[i][0], cache[i][1]

    def eager(q, k, v, mask, scaling, softcap=None):  # eager_attention_forward
        k = repeat_kv(k, H // KV)
        v = repeat_kv(v, H // KV)
        w = torch.matmul(q, k.transpose(2, 3)) * scaling
        if softcap is not None:
            w = w / softcap
            w = torch.tanh(w)
            w = w * softcap
        w = w + mask[:, :, :, : k.shape[-2]]
        w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        o = torch.matmul(w, v)
        return o.transpose(1, 2).contiguous()

    class Attention(nn.Module):
        def __init__(self, idx):
            super().__init__()
            self.idx = idx
            bias = g.get("attention_bias", mt == "gpt_neox")
            if mt == "phi3":
                self.o_proj = nn.Linear(H * hd, D, bias=False)
                self.qkv_proj = nn.Linear(D, (H + 2 * KV) * hd, bias=False)
                return
            if mt == "gpt_neox":
                self.query_key_value = nn.Linear(D, 3 * D, bias=bias)
                self.dense = nn.Linear(D, D, bias=bias)
                return
            if mt == "falcon":
                self.query_key_value = nn.Linear(D, (H + 2) * hd, bias=g["bias"])
                self.dense = nn.Linear(D, D, bias=g["bias"])
                return
            qkv_bias = True if mt == "qwen2" else bias
            self.q_proj = nn.Linear(D, H * hd, bias=qkv_bias)
            self.k_proj = nn.Linear(D, KV * hd, bias=qkv_bias)
            self.v_proj = nn.Linear(D, KV * hd, bias=qkv_bias)
            self.o_proj = nn.Linear(H * hd, D, bias=bias)
            if mt in ("qwen3", "gemma3_text"):
                self.q_norm = RMSNorm(hd)
                self.k_norm = RMSNorm(hd)
            if mt == "olmo2":
                self.q_norm = RMSNorm(H * hd)
                self.k_norm = RMSNorm(KV * hd)

        def forward(self, x, cos, sin, mask, cache):
            B, T = x.shape[:2]
            shape = (B, T, -1, hd)
            if mt == "phi3":
                qkv = self.qkv_proj(x)
                qp = H * hd
                q = qkv[..., :qp].view(shape).transpose(1, 2)
                k = qkv[..., qp: qp + KV * hd].view(shape).transpose(1, 2)
                v = qkv[..., qp + KV * hd:].view(shape).transpose(1, 2)
            elif mt == "gpt_neox":
                qkv = self.query_key_value(x)
                qkv = qkv.view(B, T, -1, 3 * hd)
                q, k, v = qkv.transpose(1, 2).chunk(3, dim=-1)
            elif mt == "falcon":
                fused = self.query_key_value(x).view(B, T, H + 2, hd)
                q, k, v = fused[..., :-2, :], fused[..., [-2], :], fused[..., [-1], :]
                q = q.transpose(1, 2).reshape(B, H, T, hd)
                k = k.transpose(1, 2).reshape(B, 1, T, hd)
                v = v.transpose(1, 2).reshape(B, 1, T, hd)
            elif mt == "olmo2":
                q = self.q_norm(self.q_proj(x)).view(shape).transpose(1, 2)
                k = self.k_norm(self.k_proj(x)).view(shape).transpose(1, 2)
                v = self.v_proj(x).view(shape).transpose(1, 2)
            elif mt in ("qwen3", "gemma3_text"):
                q = self.q_norm(self.q_proj(x).view(shape)).transpose(1, 2)
                k = self.k_norm(self.k_proj(x).view(shape)).transpose(1, 2)
                v = self.v_proj(x).view(shape).transpose(1, 2)
            else:
                q = self.q_proj(x).view(shape).transpose(1, 2)
                k = self.k_proj(x).view(shape).transpose(1, 2)
                v = self.v_proj(x).view(shape).transpose(1, 2)
            q, k = apply_rotary(q, k, cos, sin)
            k, v = cache_update(cache, self.idx, k, v)
            if mt == "falcon":  # FalconAttention's eager path: MQA by broadcasting, scores /= sqrt(d) in place
                s = q @ k.transpose(-1, -2)
                s /= math.sqrt(hd)
                s = F.softmax(s + mask, dim=-1, dtype=x.dtype)
                o = s @ v
                o = o.view(B, H, T, hd).permute(0, 2, 1, 3).reshape(B, T, H * hd)
                return self.dense(o)
            scaling = g["query_pre_attn_scalar"] ** -0.5 if mt in ("gemma2", "gemma3_text") else hd ** -0.5
            o = eager(q, k, v, mask, scaling, g["attn_logit_softcapping"])
            o = o.reshape(B, T, -1).contiguous()
            return self.dense(o) if mt == "gpt_neox" else self.o_proj(o)

    class GPT2Attention(nn.Module):
        def __init__(self, idx):
            super().__init__()
            self.idx = idx
            self.c_attn = Conv1D(3 * D, D)
            self.c_proj = Conv1D(D, D)

        def forward(self, x, cos, sin, mask, cache):
            B, T = x.shape[:2]
            q, k, v = self.c_attn(x).split(D, dim=2)
            q = q.view(B, T, -1, hd).transpose(1, 2)
            k = k.view(B, T, -1, hd).transpose(1, 2)
            v = v.view(B, T, -1, hd).transpose(1, 2)
            k, v = cache_update(cache, self.idx, k, v)
            w = torch.matmul(q, k.transpose(-1, -2))
            w = w / torch.full([], v.size(-1) ** 0.5, dtype=w.dtype)
            w = w + mask
            w = F.softmax(w, dim=-1)
            o = torch.matmul(w, v).transpose(1, 2)
            o = o.reshape(B, T, -1).contiguous()
            return self.c_proj(o)

    def act(x):
        if mt.startswith("gemma"):
            return F.gelu(x, approximate="tanh")
        if mt == "gpt2":  # NewGELUActivation, written out
            return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
        if mt in ("gpt_neox", "falcon"):
            return F.gelu(x)
        return F.silu(x)

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            I = g["intermediate_size"]
            if mt == "gpt2":
                self.c_fc = Conv1D(I, D)
                self.c_proj = Conv1D(D, I)
            elif mt in ("gpt_neox", "falcon"):
                b = g.get("bias", True) if mt == "falcon" else True
                self.dense_h_to_4h = nn.Linear(D, I, bias=b)
                self.dense_4h_to_h = nn.Linear(I, D, bias=b)
            elif mt == "phi3":
                self.gate_up_proj = nn.Linear(D, 2 * I, bias=False)
                self.down_proj = nn.Linear(I, D, bias=False)
            else:
                self.gate_proj = nn.Linear(D, I, bias=False)
                self.up_proj = nn.Linear(D, I, bias=False)
                self.down_proj = nn.Linear(I, D, bias=False)

        def forward(self, x):
            if mt == "gpt2":
                return self.c_proj(act(self.c_fc(x)))
            if mt in ("gpt_neox", "falcon"):
                return self.dense_4h_to_h(act(self.dense_h_to_4h(x)))
            if mt == "phi3":
                up = self.gate_up_proj(x)
                gate, up = up.chunk(2, dim=-1)
                return self.down_proj(up * act(gate))
            return self.down_proj(act(self.gate_proj(x)) * self.up_proj(x))

    class Layer(nn.Module):
        def __init__(self, idx):
            super().__init__()
            if mt == "gpt2":
                self.ln_1 = norm(D)
                self.attn = GPT2Attention(idx)
                self.ln_2 = norm(D)
                self.mlp = MLP()
            elif mt == "gpt_neox":
                self.input_layernorm = norm(D)
                self.post_attention_layernorm = norm(D)
                self.attention = Attention(idx)
                self.mlp = MLP()
            elif mt == "falcon":
                self.self_attention = Attention(idx)
                self.mlp = MLP()
                self.input_layernorm = norm(D)
            elif mt == "olmo2":
                self.self_attn = Attention(idx)
                self.mlp = MLP()
                self.post_attention_layernorm = norm(D)
                self.post_feedforward_layernorm = norm(D)
            else:
                self.self_attn = Attention(idx)
                self.mlp = MLP()
                self.input_layernorm = norm(D)
                self.post_attention_layernorm = norm(D)
                if mt in ("gemma2", "gemma3_text"):
                    self.pre_feedforward_layernorm = norm(D)
                    self.post_feedforward_layernorm = norm(D)

        def forward(self, x, cos, sin, mask, cache):
            if mt == "gpt2":
                x = self.attn(self.ln_1(x), cos, sin, mask, cache) + x
                return x + self.mlp(self.ln_2(x))
            if mt == "gpt_neox":  # parallel residual, or the attention's output (and the input) into the MLP
                a = self.attention(self.input_layernorm(x), cos, sin, mask, cache)
                if g.get("use_parallel_residual", True):
                    m = self.mlp(self.post_attention_layernorm(x))
                    return m + a + x
                a = a + x
                m = self.mlp(self.post_attention_layernorm(a))
                return m + a
            if mt == "falcon":
                h = self.input_layernorm(x)
                a = self.self_attention(h, cos, sin, mask, cache)
                m = self.mlp(h)
                m += a
                return x + m
            if mt == "olmo2":
                x = x + self.post_attention_layernorm(self.self_attn(x, cos, sin, mask, cache))
                return x + self.post_feedforward_layernorm(self.mlp(x))
            if mt in ("gemma2", "gemma3_text"):
                h = self.post_attention_layernorm(self.self_attn(self.input_layernorm(x), cos, sin, mask, cache))
                x = x + h
                h = self.post_feedforward_layernorm(self.mlp(self.pre_feedforward_layernorm(x)))
                return x + h
            x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask, cache)
            return x + self.mlp(self.post_attention_layernorm(x))

    class Rotary(nn.Module):
        def __init__(self, dim, base):
            super().__init__()
            inv = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
            self.register_buffer("inv_freq", inv, persistent=False)

        def forward(self, x, position_ids):  # LlamaRotaryEmbedding.forward
            inv = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
            pos = position_ids[:, None, :].float()
            freqs = (inv.float() @ pos.float()).transpose(1, 2)
            emb = torch.cat((freqs, freqs), dim=-1)
            cos = emb.cos() * 1.0
            sin = emb.sin() * 1.0
            return cos.to(x.dtype), sin.to(x.dtype)

    class Backbone(nn.Module):
        def __init__(self):
            super().__init__()
            V = g["vocab_size"]
            if mt == "gpt2":
                self.wte = nn.Embedding(V, D)
                self.wpe = nn.Embedding(g["n_positions"], D)
                self.h = nn.ModuleList(Layer(i) for i in range(g["num_hidden_layers"]))
                self.ln_f = norm(D)
                return
            if mt == "gpt_neox":
                self.embed_in = nn.Embedding(V, D)
                self.layers = nn.ModuleList(Layer(i) for i in range(g["num_hidden_layers"]))
                self.final_layer_norm = norm(D)
                self.rotary_emb = Rotary(int(hd * g.get("rotary_pct", 0.25)), g.get("rotary_emb_base", 10000))
                return
            if mt == "falcon":
                self.word_embeddings = nn.Embedding(V, D)
                self.h = nn.ModuleList(Layer(i) for i in range(g["num_hidden_layers"]))
                self.ln_f = norm(D)
                self.rotary_emb = Rotary(hd, g.get("rope_theta", 10000.0))
                return
            self.embed_tokens = nn.Embedding(V, D)
            self.layers = nn.ModuleList(Layer(i) for i in range(g["num_hidden_layers"]))
            self.norm = norm(D)
            self.rotary_emb = Rotary(hd, g.get("rope_theta", 1000000.0 if mt.startswith("qwen") else 10000.0))
            if mt == "gemma3_text":
                self.rotary_emb_local = Rotary(hd, g.get("rope_local_base_freq", 10000.0))
                self.register_buffer("embed_scale", torch.tensor(D ** 0.5), persistent=False)

        def forward(self, ids, cache):
            B, T = ids.shape
            past = cache[0][0].shape[-2] if cache else 0
            pos = torch.arange(past, past + T).unsqueeze(0)
            if mt == "gpt2":
                x = self.wte(ids) + self.wpe(pos)
            elif mt == "gpt_neox":
                x = self.embed_in(ids)
            elif mt == "falcon":
                x = self.word_embeddings(ids)
            else:
                x = self.embed_tokens(ids)
                if mt == "gemma3_text":  # Gemma3TextScaledWordEmbedding
                    x = x * self.embed_scale.to(x.dtype)
                elif mt.startswith("gemma"):
                    x = x * torch.tensor(D ** 0.5, dtype=x.dtype)
            # the eager causal mask: [B, 1, T, past + T], 0 where seen, the dtype's min elsewhere
            kv = torch.arange(past + T)
            allowed = (kv[None, :] <= pos[0][:, None])[None, None].expand(B, 1, T, past + T)
            mask = torch.where(allowed, torch.tensor(0.0), torch.tensor(torch.finfo(x.dtype).min))
            cos = sin = None
            local = None
            if mt != "gpt2":
                cos, sin = self.rotary_emb(x, pos)
                if mt == "gemma3_text":
                    local = self.rotary_emb_local(x, pos)
            layers = self.h if mt in ("gpt2", "falcon") else self.layers
            for i, layer in enumerate(layers):
                c, s = cos, sin
                if local is not None and (i + 1) % 6 != 0:  # Gemma 3's sliding layers: the local base
                    c, s = local
                x = layer(x, c, s, mask, cache)
            final = {"gpt2": "ln_f", "falcon": "ln_f", "gpt_neox": "final_layer_norm"}.get(mt, "norm")
            return getattr(self, final)(x)

    class CausalLM(nn.Module):
        def __init__(self):
            super().__init__()
            V = g["vocab_size"]
            body = Backbone()
            if mt == "gpt_neox":
                self.gpt_neox = body
                self.embed_out = nn.Linear(D, V, bias=False)
                head = self.embed_out
            else:
                setattr(self, {"gpt2": "transformer", "falcon": "transformer"}.get(mt, "model"), body)
                self.lm_head = nn.Linear(D, V, bias=False)
                head = self.lm_head
            object.__setattr__(self, "body", body)  # plain attributes: the state_dict keeps transformers' names
            object.__setattr__(self, "head", head)
            if g["tie_word_embeddings"]:
                emb = {"gpt2": "wte", "falcon": "word_embeddings", "gpt_neox": "embed_in"}.get(mt, "embed_tokens")
                head.weight = getattr(body, emb).weight

        def forward(self, input_ids, cache=None, labels=None):
            h = self.body(input_ids, cache)
            logits = self.head(h[:, slice(0, None), :])
            if g["final_logit_softcapping"] is not None:
                logits = logits / g["final_logit_softcapping"]
                logits = torch.tanh(logits)
                logits = logits * g["final_logit_softcapping"]
            if labels is None:
                return logits
            # ForCausalLMLoss: float logits, labels padded with -100 and shifted, mean cross-entropy
            lf = logits.float()
            lab = F.pad(labels, (0, 1), value=-100)
            shift = lab[..., 1:].contiguous()
            loss = F.cross_entropy(lf.view(-1, g["vocab_size"]), shift.view(-1), ignore_index=-100, reduction="mean")
            return loss, logits  # CausalLMOutputWithPast(loss, logits)

    torch.manual_seed(0)
    # transformers' class name (the description tinspect-export writes keeps it: a causal LM trains on cross-entropy)
    model = type(HF_CLASS[mt], (CausalLM,), {})()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2 and not name.endswith("c_attn.weight"):
                p.normal_(0.0, 0.02)
    return model


# ==========================================================================
# Measuring (the child, under memshim)
# ==========================================================================
def worker(spec):
    import torch
    import memshim_run
    shim = memshim_run.Shim()
    base = memshim_run.baseline(shim)
    torch.manual_seed(0)
    model = build(spec["model_type"], spec["config"])
    B, T = spec["batch"], spec["context"]
    V = spec["config"]["vocab_size"]
    ids = torch.randint(0, V, (B, T))
    nxt = torch.randint(0, V, (B, 1))
    res = {"weights": memshim_run.uniq_bytes(list(model.parameters()) + list(model.buffers()))}
    if spec["mode"] == "infer":
        model.eval()

        def step(phases):
            cache = []
            if phases is not None:
                shim.reset()
            with torch.no_grad():
                logits = model(ids, cache)
            if phases is not None:
                phases["prefill"] = shim.peak() - base
            last = logits[:, -1, :].clone()  # generate keeps the last row, lets the rest go
            del logits
            if phases is not None:
                shim.live()
                shim.reset()
            with torch.no_grad():
                logits = model(nxt, cache)
            if phases is not None:
                phases["decode"] = shim.peak() - base
            del logits, last, cache

        for _ in range(2):
            step(None)
        ph = {}
        step(ph)
        res.update(peak=ph["prefill"], decode_peak=ph["decode"])
    else:
        model.train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)

        def step():  # out = model(**batch); out.loss.backward(): the output holds the logits through backward
            loss, logits = model(ids, None, labels=ids)
            loss.backward()
            del loss, logits
            opt.step()
            opt.zero_grad(set_to_none=True)

        for _ in range(2):
            step()
        shim.live()
        shim.reset()
        step()
        res["peak"] = shim.peak() - base
        res["optimizer_state"] = sum(t.numel() * t.element_size() for s in opt.state.values()
                                     for t in s.values() if isinstance(t, torch.Tensor))
    return res


def worker_main(arg):
    spec = json.loads(arg)
    print(json.dumps(worker(spec)))
    return 0


# ==========================================================================
# Driver
# ==========================================================================
def write_config(tmp, name, model_type, config):
    folder = os.path.join(tmp, name)
    os.makedirs(folder, exist_ok=True)
    c = dict(config)
    c["model_type"] = model_type
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(c, f, indent=1)
    return folder


def run_tinspect(binary, path, B, T, mode, cpu_isa, bind=False):
    argv = [binary, "memory", path]
    argv += ["--bind", "B=%d" % B, "--bind", "T=%d" % T] if bind else ["--batch", str(B), "--context", str(T)]
    if mode == "train":
        argv += ["--mode", "train", "--optimizer", "adamw", "--impl", "for-loop"]
    argv += ["--device", "cpu", "--json"]
    if cpu_isa:
        argv += ["--cpu-isa", cpu_isa]
    return run_json(argv, timeout=120)


def measure_cmd(a):
    import torch
    import memshim_run
    import memory_conformance as mc
    tmp, so = memshim_run.build_shim()
    out = {"torch": torch.__version__, "device": "cpu", "threads": 1, "dtype": "float32",
           "cpu_isa": mc.tinspect_cpu_isa(a.tinspect), "measured": datetime.date.today().isoformat(),
           "generator": "tests/conformance/hf_memory.py", "cases": []}
    if a.output and os.path.exists(a.output) and a.only:
        with open(a.output) as f:
            old = json.load(f)
        out["cases"] = [c for c in old["cases"] if c["family"] not in a.only]
    for name, mt, config, B, T in CASES:
        if a.only and name not in a.only:
            continue
        for mode in ("infer", "train"):
            spec = {"model_type": mt, "config": config, "batch": B, "context": T, "mode": mode}
            res = memshim_run.run_worker(so, os.path.abspath(__file__), [json.dumps(spec)])
            if "error" in res:
                raise SystemExit("%s/%s: %s" % (name, mode, res["error"]))
            out["cases"].append({"family": name, "model_type": mt, "config": config, "batch": B, "context": T,
                                 "mode": mode, "torch": res})
            print("measured %-12s %-5s %s" % (name, mode, " ".join(
                "%s %.2f MiB" % (k, v / 2 ** 20) for k, v in res.items() if k in ("peak", "decode_peak"))), flush=True)
    order = [c[0] for c in CASES]
    out["cases"].sort(key=lambda c: (order.index(c["family"]), c["mode"]))
    save_cases(a.output, {k: v for k, v in out.items() if k != "cases"}, out["cases"])
    return 0


def rows_of(a, data):
    """(family, step, measured, estimated, error, doc or None, error words or None) per step measured."""
    tmp = tempfile.mkdtemp(prefix="hf-memory-")
    rows = []
    for c in data["cases"]:
        folder = write_config(tmp, c["family"], c["model_type"], c["config"])
        doc, err = run_tinspect(a.tinspect, folder, c["batch"], c["context"], c["mode"], data.get("cpu_isa"))
        steps = [("prefill", "peak", "peak"), ("decode", "decode_peak", "decode_peak")] if c["mode"] == "infer" \
            else [("train", "peak", "peak")]
        for step, mkey, tkey in steps:
            want = c["torch"][mkey]
            got = doc.get(tkey) if doc else None
            e = (got - want) / float(want) if isinstance(got, int) else None
            rows.append({"family": c["family"], "step": step, "measured": want, "estimated": got, "error": e,
                         "doc": doc, "err": err, "case": c})
    return rows


def compare_cmd(a):
    import memory_conformance as mc
    with open(a.compare) as f:
        data = json.load(f)
    misses = load_misses(a.misses)
    rows = rows_of(a, data)
    failed, known = [], []
    for r in rows:
        case = "%s/%s" % (r["family"], r["step"])
        if r["err"] or r["error"] is None:
            failed.append("%s: %s" % (case, r["err"] or "no estimate"))
            continue
        verdict, e, words = judge(case, r["estimated"], r["measured"], misses)
        if verdict == "known":
            known.append((case, 100 * e, words))
        elif verdict == "failed":
            failed.append("%s: %s" % (case, words))
        elif verdict == "mended":
            print("  %s is within 5 %% now: take it out of %s" % (case, a.misses))
        keys = ("weights", "optimizer_state") if r["step"] == "train" else ("weights",) if r["step"] == "prefill" else ()
        for key in keys:  # exact: the parameters, buffers and AdamW's state are what they are
            if r["doc"].get(key) != r["case"]["torch"].get(key):
                failed.append("%s: %s %r, torch %r" % (case, key, r["doc"].get(key), r["case"]["torch"].get(key)))
        if r["step"] != "decode":  # the decode step has no range of its own
            inside, words = mc.range_verdict(r["doc"], r["measured"], SLACK)
            if inside == "outside" and verdict != "known":
                failed.append("%s: %s" % (case, words))
    print("hf memory: %d steps of %d families from %s (PyTorch %s, %s, one thread)" % (
        len(rows), len(data["cases"]) // 2, os.path.basename(a.compare), data.get("torch"), data.get("cpu_isa")))
    for r in rows:
        if r["error"] is not None:
            print("  %-12s %-8s torch %8.2f MiB  tinspect %8.2f MiB  %+6.1f %%" % (
                r["family"], r["step"], r["measured"] / 2 ** 20, r["estimated"] / 2 ** 20, 100 * r["error"]))
    for case, e, cause in known:
        print("  known miss %-20s %+6.1f %%  %s" % (case, e, cause))
    if a.write_doc or a.check_doc:
        failed += doc_table(a.write_doc or a.check_doc, data, rows, misses, bool(a.write_doc))
    for f in failed:
        print("FAIL " + f)
    print("hf memory: %d of %d steps within %d %%, %d known misses, %d failed" % (
        len(rows) - len(known) - len(failed), len(rows), round(100 * LIMIT), len(known), len(failed)))
    return 1 if failed else 0


DOC_BEGIN, DOC_END = "<!-- hf-memory:begin -->", "<!-- hf-memory:end -->"


def doc_table(path, data, rows, misses, write):
    out = ["Measured against PyTorch %s re-implementations on the CPU (%s, one thread, float32; "
           "`tests/conformance/hf_memory.py`, `make test` compares every step):" % (data.get("torch"), data.get("cpu_isa")),
           "", "| family | B x T | step | measured | tinspect | error |", "| --- | --- | --- | --- | --- | --- |"]
    bt = {c["family"]: "%d x %d" % (c["batch"], c["context"]) for c in data["cases"]}
    for r in rows:
        if r["error"] is None:
            continue
        note = " (known miss)" if "%s/%s" % (r["family"], r["step"]) in misses and abs(r["error"]) > LIMIT else ""
        out.append("| %s | %s | %s | %.2f MiB | %.2f MiB | %+.1f %%%s |" % (
            r["family"], bt[r["family"]], r["step"], r["measured"] / 2 ** 20, r["estimated"] / 2 ** 20,
            100 * r["error"], note))
    return marked_table(path, DOC_BEGIN, DOC_END, "\n" + "\n".join(out) + "\n", write, "hf-memory table", "--write-doc")


def export_cmd(a):
    """tinspect-export each re-implementation; `tinspect memory` on its description against the config-built
    estimate (and the measurement, when --measured FILE has the case). A report: the two descriptions differ
    where the re-implementation writes out what a template names (eager attention, the mask, repeat_kv);
    fails only when an export or an estimate fails."""
    tmp = tempfile.mkdtemp(prefix="hf-export-")
    exporter = os.path.join(ROOT, "tools", "export", "tinspect-export")
    measured = {}
    if a.measured:
        with open(a.measured) as f:
            for c in json.load(f)["cases"]:
                measured[(c["family"], c["mode"])] = c["torch"]
    failed = 0
    print("%-12s %-5s %12s %12s %8s %12s" % ("family", "step", "config", "exported", "diff", "measured"))
    for name, mt, config, B, T in CASES:
        if a.only and name not in a.only:
            continue
        folder = write_config(tmp, name, mt, config)
        out = os.path.join(tmp, name + ".json")
        env = dict(os.environ, PYTHONPATH=HERE + os.pathsep + os.environ.get("PYTHONPATH", ""))
        p = subprocess.run([sys.executable, exporter, "hf_memory:build", "--kwargs",
                            json.dumps({"family": mt, "config": config}), "--input", "input_ids=B,T:int64",
                            "--symbolic", "B=2,T=16", "-o", out, "--force"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=env)
        if p.returncode:
            print("%-12s export failed: %s" % (name, p.stderr.strip().splitlines()[-1:]))
            failed += 1
            continue
        for mode in ("infer", "train"):
            want, err1 = run_tinspect(a.tinspect, folder, B, T, mode, None)
            got, err2 = run_tinspect(a.tinspect, out, B, T, mode, None, bind=True)
            if err1 or err2:
                print("%-12s %-5s tinspect failed: %s" % (name, mode, err1 or err2))
                failed += 1
                continue
            if got["weights"] != want["weights"]:
                print("%-12s %-5s weights differ: %d exported, %d from the config" % (name, mode, got["weights"],
                                                                                   want["weights"]))
                failed += 1
            m = measured.get((name, mode), {}).get("peak")
            print("%-12s %-5s %10.2f MiB %8.2f MiB %+7.1f %% %10s" % (
                name, "prefill" if mode == "infer" else mode, want["peak"] / 2 ** 20, got["peak"] / 2 ** 20,
                100.0 * (got["peak"] - want["peak"]) / want["peak"], "%.2f MiB" % (m / 2 ** 20) if m else "-"))
    return 1 if failed else 0


def main(argv):
    if len(argv) > 2 and argv[1] == "--worker":
        return worker_main(argv[2])
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tinspect", nargs="?", default=os.path.join(ROOT, "tinspect"))
    ap.add_argument("--measure", action="store_true")
    ap.add_argument("-o", "--output", metavar="FILE")
    ap.add_argument("--only", action="append", metavar="NAME")
    ap.add_argument("--compare", metavar="FILE")
    ap.add_argument("--misses", metavar="FILE")
    ap.add_argument("--export", action="store_true")
    ap.add_argument("--measured", metavar="FILE", help="--export: the measurements to show beside")
    ap.add_argument("--write-doc", metavar="DOC")
    ap.add_argument("--check-doc", metavar="DOC")
    a = ap.parse_args(argv[1:])
    if a.compare:
        return compare_cmd(a)
    try:
        import torch  # noqa: F401
    except ImportError:
        print("hf memory: skipped (python3-torch is not installed)")
        return 0
    if a.measure:
        if not a.output:
            ap.error("--measure needs -o FILE")
        return measure_cmd(a)
    if a.export:
        return export_cmd(a)
    ap.error("give --measure -o FILE, --compare FILE or --export")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
