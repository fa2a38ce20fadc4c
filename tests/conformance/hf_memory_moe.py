#!/usr/bin/env python3
"""hf_memory_moe.py - `tinspect memory` on Hugging Face configs of the MoE and encoder families,
against PyTorch re-implementations of transformers' modeling code (issue 27, proof (c)).

Families: mixtral, qwen2_moe, qwen3_moe, deepseek_v3 (MLA, shared experts, first dense layers),
bert, roberta, vit, t5. Each is a small config.json (CONFIGS below; the same file is what tinspect
reads) and a re-implementation written here after transformers' modeling_*.py, eager attention
(PyTorch 1.13 has no scaled_dot_product_attention), float32, CPU, one thread, measured under the
LD_PRELOAD memshim as memory_conformance.py measures (the baseline after a warm-up op, two warm-up
steps, the third step's peak above the baseline):

  infer   decoders (the MoE families, t5's decoder): the prefill of B x T under no_grad with
          use_cache (a DynamicCache: each layer's keys and values, concatenated at a decode step),
          its peak; then, the logits dropped and the cache kept, one decode step of B x 1 tokens,
          its peak (tinspect's decode_peak). Encoders: one forward under no_grad.
  train   model.train(), forward, loss = the sum of the floating outputs' sums (t5: the logits'),
          backward with the outputs held, AdamW(foreach=False) step, zero_grad(set_to_none=True).
          (--loss sum is passed to tinspect when it has the option.)

The MoE blocks run as transformers runs them: router, softmax (deepseek_v3: sigmoid, grouped top-k
with e_score_correction_bias), top-k, one_hot expert mask, a loop over the experts gathering each
one's tokens (hidden[top_x]), the expert MLP, the routing weight, index_add_ into the output.
Routing depends on the data: "seed S" cases route as the seeded weights and inputs route;
"uniform" forces token n's j-th choice to expert (n*k + j) mod E (every expert gets N*k/E tokens),
the average tinspect models. Dropout is 0 in every config (the templates have none).

  hf_memory_moe.py [TINSPECT] --measure -o FILE [--only FAMILY]   measure every case into FILE
  hf_memory_moe.py [TINSPECT] --compare FILE [--misses FILE]      estimate each case again with
        `tinspect memory CONFIG --batch B --context T`; fails when a case is more than 5 % from its
        measurement or outside the printed peak_range, unless it is a known miss (the misses file:
        case -> error, cause) no worse by 2 points
  hf_memory_moe.py [TINSPECT] --export [--only FAMILY]             tinspect-export each
        re-implementation and compare `tinspect memory` on the export with the config-built one
  hf_memory_moe.py --trace FAMILY/MODE                             one case's aten ops under memshim,
        each with the live bytes after it and its high-water mark, under the module that ran it
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

from memory_judge import LIMIT, SLACK, judge, load_misses, run_json, save_cases  # noqa: E402

SEEDS = (0, 1, 2)

# Each family: its config.json (what tinspect describes), the bindings, which kind it is.
CONFIGS = {
    "mixtral": ({"model_type": "mixtral", "architectures": ["MixtralForCausalLM"], "vocab_size": 2000,
                 "hidden_size": 128, "intermediate_size": 512, "num_hidden_layers": 2,
                 "num_attention_heads": 4, "num_key_value_heads": 2, "num_local_experts": 4,
                 "num_experts_per_tok": 2, "rms_norm_eps": 1e-5, "rope_theta": 1e6,
                 "attention_dropout": 0.0, "tie_word_embeddings": False},
                {"B": 8, "T": 256}, "decoder"),
    "qwen2_moe": ({"model_type": "qwen2_moe", "architectures": ["Qwen2MoeForCausalLM"], "vocab_size": 2000,
                   "hidden_size": 128, "intermediate_size": 512, "moe_intermediate_size": 256,
                   "shared_expert_intermediate_size": 512, "num_hidden_layers": 2,
                   "num_attention_heads": 4, "num_key_value_heads": 2, "num_experts": 8,
                   "num_experts_per_tok": 2, "norm_topk_prob": False, "decoder_sparse_step": 1,
                   "mlp_only_layers": [], "rms_norm_eps": 1e-6, "rope_theta": 1e6,
                   "attention_dropout": 0.0, "tie_word_embeddings": False},
                  {"B": 8, "T": 256}, "decoder"),
    "qwen3_moe": ({"model_type": "qwen3_moe", "architectures": ["Qwen3MoeForCausalLM"], "vocab_size": 2000,
                   "hidden_size": 128, "intermediate_size": 512, "moe_intermediate_size": 256,
                   "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
                   "head_dim": 48, "num_experts": 8, "num_experts_per_tok": 2, "norm_topk_prob": True,
                   "decoder_sparse_step": 1, "mlp_only_layers": [], "rms_norm_eps": 1e-6,
                   "rope_theta": 1e6, "attention_bias": False, "attention_dropout": 0.0,
                   "tie_word_embeddings": False},
                  {"B": 8, "T": 256}, "decoder"),
    "deepseek_v3": ({"model_type": "deepseek_v3", "architectures": ["DeepseekV3ForCausalLM"], "vocab_size": 2000,
                     "hidden_size": 128, "intermediate_size": 512, "moe_intermediate_size": 128,
                     "num_hidden_layers": 3, "first_k_dense_replace": 1, "moe_layer_freq": 1,
                     "num_attention_heads": 4, "num_key_value_heads": 4, "q_lora_rank": 96,
                     "kv_lora_rank": 64, "qk_nope_head_dim": 32, "qk_rope_head_dim": 16,
                     "v_head_dim": 32, "n_routed_experts": 8, "n_shared_experts": 1,
                     "num_experts_per_tok": 2, "n_group": 2, "topk_group": 1, "norm_topk_prob": True,
                     "routed_scaling_factor": 2.5, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
                     "rope_interleave": False, "attention_bias": False, "attention_dropout": 0.0,
                     "tie_word_embeddings": False},
                    {"B": 8, "T": 256}, "decoder"),
    "bert": ({"model_type": "bert", "architectures": ["BertModel"], "vocab_size": 2000, "hidden_size": 128,
              "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 512,
              "max_position_embeddings": 512, "type_vocab_size": 2, "layer_norm_eps": 1e-12,
              "hidden_act": "gelu", "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0},
             {"B": 16, "T": 256}, "encoder"),
    "roberta": ({"model_type": "roberta", "architectures": ["RobertaModel"], "vocab_size": 2000,
                 "hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
                 "intermediate_size": 512, "max_position_embeddings": 514, "type_vocab_size": 1,
                 "layer_norm_eps": 1e-5, "pad_token_id": 1, "hidden_act": "gelu",
                 "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0},
                {"B": 16, "T": 256}, "encoder"),
    "vit": ({"model_type": "vit", "architectures": ["ViTModel"], "hidden_size": 192, "num_hidden_layers": 3,
             "num_attention_heads": 3, "intermediate_size": 768, "image_size": 96, "patch_size": 8,
             "num_channels": 3, "layer_norm_eps": 1e-12, "qkv_bias": True, "hidden_act": "gelu",
             "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0},
            {"B": 16}, "encoder"),
    "t5": ({"model_type": "t5", "architectures": ["T5ForConditionalGeneration"], "vocab_size": 2000,
            "d_model": 128, "d_kv": 32, "d_ff": 512, "num_layers": 2, "num_decoder_layers": 2,
            "num_heads": 4, "relative_attention_num_buckets": 32, "relative_attention_max_distance": 128,
            "layer_norm_epsilon": 1e-6, "feed_forward_proj": "relu", "dropout_rate": 0.0,
            "tie_word_embeddings": True, "is_encoder_decoder": True, "decoder_start_token_id": 0},
           {"B": 8, "T": 256, "U": 128}, "decoder"),
}
MOE = ("mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v3")


# ==========================================================================
# The re-implementations (written after transformers' modeling_*.py)
# ==========================================================================
def models():
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Cfg:
        def __init__(self, d):
            self.__dict__.update(d)

    class RMSNorm(nn.Module):  # LlamaRMSNorm / T5LayerNorm
        def __init__(self, n, eps, t5=False):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(n))
            self.eps, self.t5 = eps, t5

        def forward(self, x):
            dt = x.dtype
            x = x.to(torch.float32)
            var = x.pow(2).mean(-1, keepdim=True)
            x = x * torch.rsqrt(var + self.eps)
            return self.weight * x.to(dt)

    def rotate_half(x):
        x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
        return torch.cat((-x2, x1), dim=-1)

    def apply_rope(q, k, cos, sin):
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin

    class Rotary(nn.Module):
        def __init__(self, dim, theta):
            super().__init__()
            inv = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
            self.register_buffer("inv_freq", inv, persistent=False)

        def forward(self, x, pos):  # pos: (B, T) int64
            inv = self.inv_freq[None, :, None].float().expand(pos.shape[0], -1, 1)
            freqs = (inv @ pos[:, None, :].float()).transpose(1, 2)
            emb = torch.cat((freqs, freqs), dim=-1)
            return emb.cos().to(x.dtype), emb.sin().to(x.dtype)

    def repeat_kv(x, n):
        if n == 1:
            return x
        b, h, t, d = x.shape
        return x[:, :, None, :, :].expand(b, h, n, t, d).reshape(b, h * n, t, d)

    def eager_attention(q, k, v, mask, scaling, groups, training):
        k, v = repeat_kv(k, groups), repeat_kv(v, groups)
        w = torch.matmul(q, k.transpose(2, 3)) * scaling
        if mask is not None:
            w = w + mask[:, :, :, : k.shape[-2]]
        w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        w = F.dropout(w, p=0.0, training=training)
        o = torch.matmul(w, v)
        return o.transpose(1, 2).contiguous()

    class Attention(nn.Module):  # Mixtral / Qwen2-MoE / Qwen3-MoE
        def __init__(self, c, i, bias=False, obias=False, qk_norm=False):
            super().__init__()
            self.hd = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
            self.h, self.kvh, self.i = c.num_attention_heads, c.num_key_value_heads, i
            self.q_proj = nn.Linear(c.hidden_size, self.h * self.hd, bias=bias)
            self.k_proj = nn.Linear(c.hidden_size, self.kvh * self.hd, bias=bias)
            self.v_proj = nn.Linear(c.hidden_size, self.kvh * self.hd, bias=bias)
            self.o_proj = nn.Linear(self.h * self.hd, c.hidden_size, bias=obias)
            self.qk_norm = qk_norm
            if qk_norm:
                self.q_norm = RMSNorm(self.hd, c.rms_norm_eps)
                self.k_norm = RMSNorm(self.hd, c.rms_norm_eps)

        def forward(self, x, cos, sin, mask, cache):
            b, t, _ = x.shape
            q = self.q_proj(x).view(b, t, -1, self.hd)
            k = self.k_proj(x).view(b, t, -1, self.hd)
            if self.qk_norm:
                q, k = self.q_norm(q), self.k_norm(k)
            q, k = q.transpose(1, 2), k.transpose(1, 2)
            v = self.v_proj(x).view(b, t, -1, self.hd).transpose(1, 2)
            q, k = apply_rope(q, k, cos, sin)
            if cache is not None:
                k, v = cache.update(k, v, self.i)
            o = eager_attention(q, k, v, mask, self.hd ** -0.5, self.h // self.kvh, self.training)
            return self.o_proj(o.reshape(b, t, -1))

    class GatedMLP(nn.Module):  # w2(silu(w1 x) * w3 x); names as each family's
        def __init__(self, hidden, inter, names=("gate_proj", "up_proj", "down_proj")):
            super().__init__()
            self.names = names
            setattr(self, names[0], nn.Linear(hidden, inter, bias=False))
            setattr(self, names[1], nn.Linear(hidden, inter, bias=False))
            setattr(self, names[2], nn.Linear(inter, hidden, bias=False))

        def forward(self, x):
            g, u, d = (getattr(self, n) for n in self.names)
            return d(F.silu(g(x)) * u(x))

    def uniform_choice(n, k, e, device):
        """Token i's j-th expert: (i*k + j) mod e (the forced-uniform routing)."""
        base = torch.arange(n, device=device)[:, None] * k + torch.arange(k, device=device)[None, :]
        return base % e

    class SparseMoe(nn.Module):  # MixtralSparseMoeBlock / Qwen2MoeSparseMoeBlock / Qwen3MoeSparseMoeBlock
        def __init__(self, c, family):
            super().__init__()
            self.family = family
            if family == "mixtral":
                self.e, self.k, inter, self.norm = c.num_local_experts, c.num_experts_per_tok, c.intermediate_size, True
                names = ("w1", "w3", "w2")
            else:
                self.e, self.k, inter = c.num_experts, c.num_experts_per_tok, c.moe_intermediate_size
                self.norm = c.norm_topk_prob
                names = ("gate_proj", "up_proj", "down_proj")
            self.gate = nn.Linear(c.hidden_size, self.e, bias=False)
            self.experts = nn.ModuleList([GatedMLP(c.hidden_size, inter, names) for _ in range(self.e)])
            if family == "qwen2_moe":
                self.shared_expert = GatedMLP(c.hidden_size, c.shared_expert_intermediate_size)
                self.shared_expert_gate = nn.Linear(c.hidden_size, 1, bias=False)
            self.uniform = False

        def forward(self, x):
            b, t, hdim = x.shape
            x = x.view(-1, hdim)
            logits = self.gate(x)
            w = F.softmax(logits, dim=1, dtype=torch.float)
            w, sel = torch.topk(w, self.k, dim=-1)
            if self.uniform:
                sel = uniform_choice(x.shape[0], self.k, self.e, x.device)
            if self.norm:
                w = w / w.sum(dim=-1, keepdim=True)
            w = w.to(x.dtype)
            out = torch.zeros((b * t, hdim), dtype=x.dtype, device=x.device)
            mask = F.one_hot(sel, num_classes=self.e).permute(2, 1, 0)
            for ei in range(self.e):
                idx, top_x = torch.where(mask[ei])
                cur = x[None, top_x].reshape(-1, hdim)
                h = self.experts[ei](cur) * w[top_x, idx, None]
                out.index_add_(0, top_x, h.to(x.dtype))
            if self.family == "qwen2_moe":
                s = self.shared_expert(x)
                s = torch.sigmoid(self.shared_expert_gate(x)) * s
                out = out + s
            return out.reshape(b, t, hdim)

    class DecoderLayer(nn.Module):
        def __init__(self, c, i, family):
            super().__init__()
            if family == "qwen2_moe":  # q, k, v with biases, o without
                bias, obias = True, False
            else:
                bias = obias = getattr(c, "attention_bias", False)
            self.self_attn = Attention(c, i, bias, obias, qk_norm=family == "qwen3_moe")
            moe = SparseMoe(c, family)
            if family == "mixtral":
                self.block_sparse_moe = moe
            else:
                self.mlp = moe
            self.input_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
            self.post_attention_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
            self.moe = moe

        def forward(self, x, cos, sin, mask, cache):
            r = x
            x = self.input_layernorm(x)
            x = self.self_attn(x, cos, sin, mask, cache)
            x = r + x
            r = x
            x = self.post_attention_layernorm(x)
            x = self.moe(x)
            return r + x

    # ---- DeepSeek-V3 ----
    class DSAttention(nn.Module):
        def __init__(self, c, i):
            super().__init__()
            self.i, self.h = i, c.num_attention_heads
            self.nope, self.rope, self.vd = c.qk_nope_head_dim, c.qk_rope_head_dim, c.v_head_dim
            self.qk = self.nope + self.rope
            self.kv_rank = c.kv_lora_rank
            self.q_a_proj = nn.Linear(c.hidden_size, c.q_lora_rank, bias=c.attention_bias)
            self.q_a_layernorm = RMSNorm(c.q_lora_rank, c.rms_norm_eps)
            self.q_b_proj = nn.Linear(c.q_lora_rank, self.h * self.qk, bias=False)
            self.kv_a_proj_with_mqa = nn.Linear(c.hidden_size, c.kv_lora_rank + self.rope, bias=c.attention_bias)
            self.kv_a_layernorm = RMSNorm(c.kv_lora_rank, c.rms_norm_eps)
            self.kv_b_proj = nn.Linear(c.kv_lora_rank, self.h * (self.nope + self.vd), bias=False)
            self.o_proj = nn.Linear(self.h * self.vd, c.hidden_size, bias=c.attention_bias)
            self.scaling = self.qk ** -0.5

        def forward(self, x, cos, sin, mask, cache):
            b, t = x.shape[:-1]
            q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(x)))
            q = q.view(b, t, -1, self.qk).transpose(1, 2)
            q_pass, q_rot = torch.split(q, [self.nope, self.rope], dim=-1)
            ckv = self.kv_a_proj_with_mqa(x)
            k_pass, k_rot = torch.split(ckv, [self.kv_rank, self.rope], dim=-1)
            k_pass = self.kv_b_proj(self.kv_a_layernorm(k_pass)).view(b, t, -1, self.nope + self.vd).transpose(1, 2)
            k_pass, v = torch.split(k_pass, [self.nope, self.vd], dim=-1)
            k_rot = k_rot.view(b, 1, t, self.rope)
            q_rot, k_rot = apply_rope(q_rot, k_rot, cos, sin)
            k_rot = k_rot.expand(*k_pass.shape[:-1], -1)
            q = torch.cat((q_pass, q_rot), dim=-1)
            k = torch.cat((k_pass, k_rot), dim=-1)
            if cache is not None:
                k, v = cache.update(k, v, self.i)
            o = eager_attention(q, k, v, mask, self.scaling, 1, self.training)
            return self.o_proj(o.reshape(b, t, -1))

    class DSRouter(nn.Module):  # DeepseekV3TopkRouter
        def __init__(self, c):
            super().__init__()
            self.c = c
            self.weight = nn.Parameter(torch.empty(c.n_routed_experts, c.hidden_size))
            self.register_buffer("e_score_correction_bias", torch.zeros(c.n_routed_experts))
            self.uniform = False

        @torch.no_grad()
        def topk_indices(self, scores):
            c = self.c
            choice = scores.view(-1, c.n_routed_experts) + self.e_score_correction_bias.unsqueeze(0)
            gs = choice.view(-1, c.n_group, c.n_routed_experts // c.n_group).topk(2, dim=-1)[0].sum(dim=-1)
            gi = torch.topk(gs, k=c.topk_group, dim=-1, sorted=False)[1]
            gm = torch.zeros_like(gs)
            gm.scatter_(1, gi, 1)
            sm = gm.unsqueeze(-1).expand(-1, c.n_group, c.n_routed_experts // c.n_group).reshape(-1, c.n_routed_experts)
            choice = choice.masked_fill(~sm.bool(), 0.0)
            return torch.topk(choice, k=c.num_experts_per_tok, dim=-1, sorted=False)[1]

        def forward(self, x):
            c = self.c
            x = x.view(-1, c.hidden_size)
            logits = F.linear(x.type(torch.float32), self.weight.type(torch.float32))
            scores = logits.sigmoid()
            idx = self.topk_indices(scores)
            if self.uniform:
                idx = uniform_choice(x.shape[0], c.num_experts_per_tok, c.n_routed_experts, x.device)
            w = scores.gather(1, idx)
            if c.norm_topk_prob:
                w = w / (w.sum(dim=-1, keepdim=True) + 1e-20)
            w = w * c.routed_scaling_factor
            return idx, w

    class DSMoE(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.experts = nn.ModuleList([GatedMLP(c.hidden_size, c.moe_intermediate_size)
                                          for _ in range(c.n_routed_experts)])
            self.gate = DSRouter(c)
            self.shared_experts = GatedMLP(c.hidden_size, c.moe_intermediate_size * c.n_shared_experts)

        def moe(self, x, idx, w):
            out = torch.zeros_like(x, dtype=w.dtype)
            mask = F.one_hot(idx, num_classes=len(self.experts)).permute(2, 0, 1)
            for ei in range(len(self.experts)):
                tok, wi = torch.where(mask[ei])
                if tok.numel() > 0:
                    ew = w[tok, wi]
                    h = self.experts[ei](x[tok])
                    out.index_add_(0, tok, h * ew.unsqueeze(-1))
            return out.type(x.dtype)

        def forward(self, x):
            res, shape = x, x.shape
            idx, w = self.gate(x)
            x = x.view(-1, x.shape[-1])
            x = self.moe(x, idx, w).view(*shape)
            return x + self.shared_experts(res)

    class DSLayer(nn.Module):
        def __init__(self, c, i):
            super().__init__()
            self.self_attn = DSAttention(c, i)
            self.mlp = DSMoE(c) if i >= c.first_k_dense_replace else GatedMLP(c.hidden_size, c.intermediate_size)
            self.input_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
            self.post_attention_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
            self.moe = self.mlp

        def forward(self, x, cos, sin, mask, cache):
            r = x
            x = r + self.self_attn(self.input_layernorm(x), cos, sin, mask, cache)
            return x + self.mlp(self.post_attention_layernorm(x))

    class CausalLM(nn.Module):
        def __init__(self, c, family):
            super().__init__()
            self.c = c
            self.model = nn.Module()
            self.model.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
            if family == "deepseek_v3":
                layers = [DSLayer(c, i) for i in range(c.num_hidden_layers)]
                rdim = c.qk_rope_head_dim
            else:
                layers = [DecoderLayer(c, i, family) for i in range(c.num_hidden_layers)]
                rdim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
            self.model.layers = nn.ModuleList(layers)
            self.model.norm = RMSNorm(c.hidden_size, c.rms_norm_eps)
            self.model.rotary_emb = Rotary(rdim, c.rope_theta)
            self.lm_head = nn.Linear(c.hidden_size, c.vocab_size, bias=False)

        def set_uniform(self, on):
            for m in self.modules():
                if hasattr(m, "uniform"):
                    m.uniform = on

        def forward(self, ids, cache=None):
            b, t = ids.shape
            past = cache.length() if cache is not None else 0
            inputs_embeds = self.model.embed_tokens(ids)  # a local of the model's forward: it lives to the end
            h = inputs_embeds
            pos = torch.arange(past, past + t).unsqueeze(0).expand(b, -1)
            # the eager causal mask: (B, 1, T, past + T), the dtype's minimum above the diagonal
            mask = torch.full((t, past + t), torch.finfo(h.dtype).min)
            mask = torch.triu(mask, diagonal=past + 1)[None, None].expand(b, 1, -1, -1)
            cos, sin = self.model.rotary_emb(h, pos)
            for layer in self.model.layers:
                h = layer(h, cos, sin, mask, cache)
            h = self.model.norm(h)
            return self.lm_head(h)

    # ---- BERT / RoBERTa ----
    class BertSelfAttention(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.h, self.d = c.num_attention_heads, c.hidden_size // c.num_attention_heads
            self.query = nn.Linear(c.hidden_size, c.hidden_size, bias=getattr(c, "qkv_bias", True))
            self.key = nn.Linear(c.hidden_size, c.hidden_size, bias=getattr(c, "qkv_bias", True))
            self.value = nn.Linear(c.hidden_size, c.hidden_size, bias=getattr(c, "qkv_bias", True))

        def split(self, x):
            return x.view(x.size()[:-1] + (self.h, self.d)).permute(0, 2, 1, 3)

        def forward(self, x, mask):
            q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
            s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.d)
            if mask is not None:
                s = s + mask
            p = F.softmax(s, dim=-1)
            p = F.dropout(p, 0.0, self.training)
            o = torch.matmul(p, v).permute(0, 2, 1, 3).contiguous()
            return o.view(o.size()[:-2] + (self.h * self.d,))

    class DenseNorm(nn.Module):  # BertSelfOutput / BertOutput
        def __init__(self, i, o, eps):
            super().__init__()
            self.dense = nn.Linear(i, o)
            self.LayerNorm = nn.LayerNorm(o, eps=eps)

        def forward(self, h, x):
            return self.LayerNorm(F.dropout(self.dense(h), 0.0, self.training) + x)

    class Dense(nn.Module):
        def __init__(self, i, o, act=None):
            super().__init__()
            self.dense, self.act = nn.Linear(i, o), act

        def forward(self, x):
            h = self.dense(x)
            return self.act(h) if self.act else h

    class BertLayer(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.attention = nn.Module()
            self.attention.self = BertSelfAttention(c)
            self.attention.output = DenseNorm(c.hidden_size, c.hidden_size, c.layer_norm_eps)
            self.intermediate = Dense(c.hidden_size, c.intermediate_size, F.gelu)
            self.output = DenseNorm(c.intermediate_size, c.hidden_size, c.layer_norm_eps)

        def forward(self, x, mask):
            a = self.attention.output(self.attention.self(x, mask), x)
            return self.output(self.intermediate(a), a)

    class BertModel(nn.Module):
        def __init__(self, c, roberta):
            super().__init__()
            self.c, self.roberta = c, roberta
            self.embeddings = nn.Module()
            e = self.embeddings
            pad = c.pad_token_id if roberta else None
            e.word_embeddings = nn.Embedding(c.vocab_size, c.hidden_size, padding_idx=pad)
            e.position_embeddings = nn.Embedding(c.max_position_embeddings, c.hidden_size, padding_idx=pad)
            e.token_type_embeddings = nn.Embedding(c.type_vocab_size, c.hidden_size)
            e.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
            e.register_buffer("position_ids", torch.arange(c.max_position_embeddings).expand((1, -1)),
                              persistent=False)
            e.register_buffer("token_type_ids", torch.zeros((1, c.max_position_embeddings), dtype=torch.long),
                              persistent=False)
            self.encoder = nn.Module()
            self.encoder.layer = nn.ModuleList([BertLayer(c) for _ in range(c.num_hidden_layers)])
            self.pooler = Dense(c.hidden_size, c.hidden_size, torch.tanh)

        def forward(self, ids):
            b, t = ids.shape
            e = self.embeddings
            if self.roberta:  # create_position_ids_from_input_ids
                m = ids.ne(self.c.pad_token_id).int()
                pos = (torch.cumsum(m, dim=1).type_as(m) * m).long() + self.c.pad_token_id
            else:
                pos = e.position_ids[:, :t]
            tt = e.token_type_ids[:, :t].expand(b, t)
            h = e.word_embeddings(ids) + e.token_type_embeddings(tt)
            h = h + e.position_embeddings(pos)
            embedding_output = e.LayerNorm(h)  # BertModel.forward holds it while the encoder runs
            h = embedding_output
            am = torch.ones(b, t)
            mask = (1.0 - am[:, None, None, :]) * torch.finfo(torch.float32).min
            for layer in self.encoder.layer:
                h = layer(h, mask)
            return h, self.pooler(h[:, 0])

    # ---- ViT ----
    class ViTLayer(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.attention = nn.Module()
            self.attention.attention = BertSelfAttention(c)
            self.attention.output = Dense(c.hidden_size, c.hidden_size)
            self.intermediate = Dense(c.hidden_size, c.intermediate_size, F.gelu)
            self.output = Dense(c.intermediate_size, c.hidden_size)
            self.layernorm_before = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
            self.layernorm_after = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)

        def forward(self, x):
            a = self.attention.output(self.attention.attention(self.layernorm_before(x), None))
            x = a + x
            h = self.intermediate(self.layernorm_after(x))
            return self.output(h) + x

    class ViTModel(nn.Module):
        def __init__(self, c):
            super().__init__()
            n = (c.image_size // c.patch_size) ** 2
            self.embeddings = nn.Module()
            e = self.embeddings
            e.cls_token = nn.Parameter(torch.randn(1, 1, c.hidden_size))
            e.position_embeddings = nn.Parameter(torch.randn(1, n + 1, c.hidden_size))
            e.patch_embeddings = nn.Module()
            e.patch_embeddings.projection = nn.Conv2d(c.num_channels, c.hidden_size, c.patch_size, c.patch_size)
            self.encoder = nn.Module()
            self.encoder.layer = nn.ModuleList([ViTLayer(c) for _ in range(c.num_hidden_layers)])
            self.layernorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
            self.pooler = Dense(c.hidden_size, c.hidden_size, torch.tanh)

        def forward(self, px):
            e = self.embeddings
            h = e.patch_embeddings.projection(px).flatten(2).transpose(1, 2)
            cls = e.cls_token.expand(h.shape[0], -1, -1)
            h = torch.cat((cls, h), dim=1)
            embedding_output = h + e.position_embeddings  # ViTModel.forward holds it while the encoder runs
            h = embedding_output
            for layer in self.encoder.layer:
                h = layer(h)
            h = self.layernorm(h)
            return h, self.pooler(h[:, 0])

    # ---- T5 ----
    def rel_bucket(rel, bidirectional, nb, maxd):
        ret = 0
        if bidirectional:
            nb //= 2
            ret += (rel > 0).to(torch.long) * nb
            rel = torch.abs(rel)
        else:
            rel = -torch.min(rel, torch.zeros_like(rel))
        exact = nb // 2
        small = rel < exact
        large = exact + (torch.log(rel.float() / exact) / math.log(maxd / exact) * (nb - exact)).to(torch.long)
        large = torch.min(large, torch.full_like(large, nb - 1))
        return ret + torch.where(small, rel, large)

    class T5Attention(nn.Module):
        def __init__(self, c, decoder, has_bias):
            super().__init__()
            self.c, self.decoder, self.has_bias = c, decoder, has_bias
            self.h, self.d = c.num_heads, c.d_kv
            inner = self.h * self.d
            self.q = nn.Linear(c.d_model, inner, bias=False)
            self.k = nn.Linear(c.d_model, inner, bias=False)
            self.v = nn.Linear(c.d_model, inner, bias=False)
            self.o = nn.Linear(inner, c.d_model, bias=False)
            if has_bias:
                self.relative_attention_bias = nn.Embedding(c.relative_attention_num_buckets, self.h)

        def compute_bias(self, ql, kl):
            ctx = torch.arange(ql, dtype=torch.long)[:, None] + (kl - ql)
            mem = torch.arange(kl, dtype=torch.long)[None, :]
            b = rel_bucket(mem - ctx, not self.decoder, self.c.relative_attention_num_buckets,
                           self.c.relative_attention_max_distance)
            return self.relative_attention_bias(b).permute([2, 0, 1]).unsqueeze(0)

        def forward(self, x, mask, bias, kv=None, cache=None, idx=None):
            b, t = x.shape[:2]

            def shape(s):
                return s.view(b, -1, self.h, self.d).transpose(1, 2)
            q = shape(self.q(x))
            if kv is not None:  # cross attention: its keys and values once, then from the cache
                if cache is not None and idx in cache:
                    k, v = cache[idx]
                else:
                    k, v = shape(self.k(kv)), shape(self.v(kv))
                    if cache is not None:
                        cache[idx] = (k, v)
            else:
                k, v = shape(self.k(x)), shape(self.v(x))
                if cache is not None:
                    if idx in cache:
                        k = torch.cat([cache[idx][0], k], dim=2)
                        v = torch.cat([cache[idx][1], v], dim=2)
                    cache[idx] = (k, v)
            scores = torch.matmul(q, k.transpose(3, 2))
            if bias is None:
                kl = k.shape[2]
                if self.has_bias:
                    bias = self.compute_bias(kl, kl)[:, :, -t:, :]
                else:
                    bias = torch.zeros((1, self.h, t, kl), dtype=scores.dtype, requires_grad=self.training)
                if mask is not None:
                    bias = bias + mask
            scores = scores + bias
            w = F.softmax(scores.float(), dim=-1).type_as(scores)
            w = F.dropout(w, 0.0, self.training)
            o = torch.matmul(w, v).transpose(1, 2).contiguous().view(b, -1, self.h * self.d)
            return self.o(o), bias

    class T5Sub(nn.Module):  # T5LayerSelfAttention / T5LayerCrossAttention / T5LayerFF
        def __init__(self, c, kind, decoder=False, has_bias=False):
            super().__init__()
            self.kind = kind
            if kind == "self":
                self.SelfAttention = T5Attention(c, decoder, has_bias)
            elif kind == "cross":
                self.EncDecAttention = T5Attention(c, True, False)
            else:
                self.DenseReluDense = nn.Module()
                self.DenseReluDense.wi = nn.Linear(c.d_model, c.d_ff, bias=False)
                self.DenseReluDense.wo = nn.Linear(c.d_ff, c.d_model, bias=False)
            self.layer_norm = RMSNorm(c.d_model, c.layer_norm_epsilon, t5=True)

        def forward(self, x, mask=None, bias=None, kv=None, cache=None, idx=None):
            h = self.layer_norm(x)
            if self.kind == "ff":
                d = self.DenseReluDense
                return x + F.dropout(d.wo(F.dropout(F.relu(d.wi(h)), 0.0, self.training)), 0.0, self.training), None
            att = self.SelfAttention if self.kind == "self" else self.EncDecAttention
            y, bias = att(h, mask, bias, kv, cache, idx)
            return x + F.dropout(y, 0.0, self.training), bias

    class T5Block(nn.Module):
        def __init__(self, c, decoder, has_bias):
            super().__init__()
            subs = [T5Sub(c, "self", decoder, has_bias)]
            if decoder:
                subs.append(T5Sub(c, "cross"))
            subs.append(T5Sub(c, "ff"))
            self.layer = nn.ModuleList(subs)

        def forward(self, x, mask, bias, enc=None, emask=None, ebias=None, cache=None, i=0):
            x, bias = self.layer[0](x, mask, bias, cache=cache, idx=("self", i))
            if enc is not None:
                x, ebias = self.layer[1](x, emask, ebias, kv=enc, cache=cache, idx=("cross", i))
            x, _ = self.layer[-1](x)
            return x, bias, ebias

    class T5Stack(nn.Module):
        def __init__(self, c, embed, decoder):
            super().__init__()
            self.embed_tokens = embed
            n = c.num_decoder_layers if decoder else c.num_layers
            self.block = nn.ModuleList([T5Block(c, decoder, i == 0) for i in range(n)])
            self.final_layer_norm = RMSNorm(c.d_model, c.layer_norm_epsilon, t5=True)
            self.decoder = decoder

        def forward(self, ids, enc=None, cache=None):
            b, t = ids.shape
            inputs_embeds = self.embed_tokens(ids)  # T5Stack.forward holds it to the end
            h = F.dropout(inputs_embeds, 0.0, self.training)
            past = cache[("self", 0)][0].shape[2] if cache and ("self", 0) in cache else 0
            am = torch.ones(b, past + t)
            if self.decoder:  # get_extended_attention_mask, causal
                seq = torch.arange(past + t)
                causal = (seq[None, None, :].repeat(b, past + t, 1) <= seq[None, :, None]).to(am.dtype)
                causal = causal[:, None, -t:, :] * am[:, None, None, :]
                mask = (1.0 - causal) * torch.finfo(torch.float32).min
                emask = (1.0 - torch.ones(b, enc.shape[1])[:, None, None, :]) * torch.finfo(torch.float32).min
            else:
                mask = (1.0 - am[:, None, None, :]) * torch.finfo(torch.float32).min
                emask = None
            bias = ebias = None
            for i, blk in enumerate(self.block):
                h, bias, ebias = blk(h, mask, bias, enc, emask, ebias, cache, i)
            return F.dropout(self.final_layer_norm(h), 0.0, self.training)

    class T5(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.c = c
            self.shared = nn.Embedding(c.vocab_size, c.d_model)
            self.encoder = T5Stack(c, self.shared, False)
            self.decoder = T5Stack(c, self.shared, True)
            self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False)
            self.lm_head.weight = self.shared.weight

        def forward(self, ids, dec_ids, cache=None, enc=None):
            if enc is None:
                enc = self.encoder(ids)
            h = self.decoder(dec_ids, enc, cache)
            h = h * (self.c.d_model ** -0.5)
            return self.lm_head(h), enc

    def build(family, cfg):
        c = Cfg(cfg)
        if family in MOE:
            return CausalLM(c, family)
        if family in ("bert", "roberta"):
            return BertModel(c, family == "roberta")
        if family == "vit":
            return ViTModel(c)
        return T5(c)
    return build


def init_weights(model, seed):
    """transformers' _init_weights: normal(0, 0.02) for Linear and Embedding weights, zero biases,
    ones for the norms; then the seed decides the routing."""
    import torch
    import torch.nn as nn
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias"):
                p.zero_()
            elif p.dim() == 1 and ("norm" in name.lower()):
                p.fill_(1.0)
            else:
                p.copy_(torch.randn(p.shape, generator=g) * 0.02)
        for m in model.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.fill_(1.0)


def make_inputs(family, cfg, bind, seed):
    import torch
    g = torch.Generator().manual_seed(1000 + seed)
    if family == "vit":
        return [torch.randn(bind["B"], cfg["num_channels"], cfg["image_size"], cfg["image_size"], generator=g)]
    ids = torch.randint(2, cfg["vocab_size"], (bind["B"], bind["T"]), generator=g)
    if family == "t5":
        return [ids, torch.randint(2, cfg["vocab_size"], (bind["B"], bind["U"]), generator=g)]
    return [ids]


# ==========================================================================
# The measuring child
# ==========================================================================
def worker(spec):
    import gc
    import torch
    import memshim_run
    shim = memshim_run.Shim()
    base = memshim_run.baseline(shim)
    family, mode, seed, routing = spec["family"], spec["mode"], spec["seed"], spec["routing"]
    cfg, bind, kind = CONFIGS[family]
    torch.manual_seed(seed)
    model = models()(family, cfg)
    init_weights(model, seed)
    if routing == "uniform":
        model.set_uniform(True)
    inputs = make_inputs(family, cfg, bind, seed)
    res = {"weights": memshim_run.uniq_bytes(list(model.parameters()) + list(model.buffers())),
           "routing": routing, "seed": seed}
    counts = {}

    def count_hook(mod, inp, out):  # the tokens each expert got (the routing the case had)
        counts.setdefault(id(mod), []).append(inp[0].shape[0])

    if mode == "infer":
        model.eval()
        new = torch.randint(2, 100, (bind["B"], 1), generator=torch.Generator().manual_seed(7))

        def prefill():
            if family == "t5":
                cache = {}
                logits, enc = model(inputs[0], inputs[1], cache)
                return logits, (cache, enc)
            cache = Cache()
            logits = model(inputs[0], cache)
            return logits, cache

        def decode(state):
            if family == "t5":
                cache, enc = state
                logits, _ = model(None, new, cache, enc)
                return logits
            return model(new, state)

        if kind == "encoder":
            def step():
                with torch.no_grad():
                    model(*inputs)  # its outputs die as it returns
            for _ in range(2):
                step()
            gc.collect()
            shim.reset()
            step()
            res["peak"] = shim.peak() - base
        else:
            for _ in range(2):
                with torch.no_grad():
                    logits, state = prefill()
                    del logits
                    decode(state)
                del state
            gc.collect()
            shim.reset()
            with torch.no_grad():
                logits, state = prefill()
                res["peak"] = shim.peak() - base
                del logits
                gc.collect()
                shim.reset()
                decode(state)
                res["decode_peak"] = shim.peak() - base
                del state
    else:
        model.train()
        opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3, foreach=False)

        def step():
            out = model(*inputs)
            ts = [t for t in (out if isinstance(out, tuple) else (out,)) if t.is_floating_point()]
            if family == "t5":
                ts = ts[:1]  # the logits (the encoder's output is an input of the decoder, not an output)
            loss = ts[0].sum()
            for t in ts[1:]:
                loss = loss + t.sum()
            loss.backward()  # the outputs live through it (out = model(x); loss = f(out); loss.backward())
            del out, ts
            opt.step()
            opt.zero_grad(set_to_none=True)
        for _ in range(2):
            step()
        gc.collect()
        shim.reset()
        step()
        res["peak"] = shim.peak() - base
    if family in MOE:  # the routing of one more forward, at this seed
        hooks = []
        for m in model.modules():
            if hasattr(m, "experts"):
                for e in m.experts:
                    hooks.append(e.register_forward_hook(count_hook))
        with torch.no_grad():
            model(inputs[0])
        for h in hooks:
            h.remove()
        res["expert_tokens"] = [v[0] for v in counts.values()]
    print(json.dumps(res))


class Cache:
    """transformers' DynamicCache: a layer's keys and values, concatenated along the sequence at each
    decode step (the new tensor replaces the old)."""

    def __init__(self):
        self.k, self.v = [], []

    def update(self, k, v, i):
        import torch
        if len(self.k) <= i:
            self.k.append(k)
            self.v.append(v)
        else:
            self.k[i] = torch.cat([self.k[i], k], dim=-2)
            self.v[i] = torch.cat([self.v[i], v], dim=-2)
        return self.k[i], self.v[i]

    def length(self):
        return self.k[0].shape[-2] if self.k else 0


# ==========================================================================
# Driver
# ==========================================================================
def cases(only=None):
    for family, (cfg, bind, kind) in CONFIGS.items():
        if only and family not in only:
            continue
        for mode in ("infer", "train"):
            if family in MOE:
                yield family, mode, 0, "uniform"
                for s in SEEDS:
                    yield family, mode, s, "seeded"
            else:
                yield family, mode, 0, "none"


def case_name(family, mode, seed, routing):
    tail = {"uniform": "/uniform", "seeded": "/seed%d" % seed, "none": ""}[routing]
    return "%s/%s%s" % (family, mode, tail)


def write_config(tmp, family):
    d = os.path.join(tmp, family)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(CONFIGS[family][0], f, indent=1)
    return d


def has_loss_option(binary):
    """Whether `tinspect memory` takes --loss (the measured steps' loss is the sum of the outputs)."""
    p = subprocess.run([binary, "memory", "--help"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    return "--loss" in p.stdout + p.stderr


def tinspect_argv(binary, path, family, mode, cpu_isa=None, loss_sum=False):
    bind = CONFIGS[family][1]
    argv = [binary, "memory", path, "--batch", str(bind["B"])]
    if "T" in bind:
        argv += ["--context", str(bind["T"])]
    if "U" in bind:
        argv += ["--bind", "U=%d" % bind["U"]]
    argv += ["--mode", mode]
    if mode == "train":
        argv += ["--optimizer", "adamw", "--impl", "for-loop"]
        if loss_sum:
            argv += ["--loss", "sum"]
    if cpu_isa:
        argv += ["--cpu-isa", cpu_isa]
    return argv + ["--json"]


def measure_cmd(a):
    import torch
    import memshim_run
    tmp, so = memshim_run.build_shim()
    import memory_conformance as mc
    out = {"torch": torch.__version__, "device": "cpu", "threads": 1, "dtype": "float32",
           "cpu_isa": mc.tinspect_cpu_isa(a.tinspect), "measured": datetime.date.today().isoformat(),
           "generator": "tests/conformance/hf_memory_moe.py", "configs": {}, "cases": []}
    if os.path.exists(a.output):
        with open(a.output) as f:
            old = json.load(f)
        out["cases"] = [c for c in old["cases"] if a.only and c["family"] not in a.only]
        out["configs"] = old.get("configs", {})
    for family, mode, seed, routing in cases(a.only):
        res = memshim_run.run_worker(so, os.path.abspath(__file__),
                                     [json.dumps({"family": family, "mode": mode, "seed": seed, "routing": routing})])
        name = case_name(family, mode, seed, routing)
        if "error" in res:
            print("FAIL %s: %s" % (name, res["error"]), flush=True)
            continue
        out["configs"][family] = {"config": CONFIGS[family][0], "bind": CONFIGS[family][1]}
        out["cases"].append(dict(case=name, family=family, mode=mode, seed=seed, routing=routing, torch=res))
        print("measured %-28s peak %8.3f MiB%s" % (name, res["peak"] / 2 ** 20, "  decode %8.3f MiB" % (
            res["decode_peak"] / 2 ** 20) if "decode_peak" in res else ""), flush=True)
    order = {n: i for i, n in enumerate(CONFIGS)}
    out["cases"].sort(key=lambda c: (order[c["family"]], c["mode"], c["routing"] != "uniform", c["seed"]))
    save_cases(a.output, {k: v for k, v in out.items() if k != "cases"}, out["cases"], sort_keys=True, separators=None)
    print("%d cases into %s" % (len(out["cases"]), a.output))
    return 0


def compare_cmd(a):
    import memory_conformance as mc
    with open(a.compare) as f:
        data = json.load(f)
    misses = load_misses(a.misses)
    tmp = tempfile.mkdtemp(prefix="hf-memory-moe-")
    failed, known, rows, est = [], [], [], {}
    loss_sum = has_loss_option(a.tinspect)
    within = 0
    for c in data["cases"]:
        fam = c["family"]
        if fam not in data["configs"]:
            continue
        key = (fam, c["mode"])
        if key not in est:
            d = os.path.join(tmp, fam)
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "config.json"), "w") as f:
                json.dump(data["configs"][fam]["config"], f)
            CONFIGS[fam] = (data["configs"][fam]["config"], data["configs"][fam]["bind"], CONFIGS[fam][2])
            est[key] = run_json(tinspect_argv(a.tinspect, d, fam, c["mode"], data.get("cpu_isa"), loss_sum))
        doc, err = est[key]
        if err:
            failed.append("%s: %s" % (c["case"], err))
            continue
        checks = [("peak", doc["peak"], c["torch"]["peak"], doc.get("peak_range"))]
        if "decode_peak" in c["torch"]:
            checks.append(("decode", doc.get("decode_peak"), c["torch"]["decode_peak"], None))
        for what, got, want, rng in checks:
            name = "%s:%s" % (c["case"], what)
            if not isinstance(got, int):
                failed.append("%s: tinspect gave no %s" % (name, what))
                continue
            verdict, e, words = judge(name, got, want, misses)
            rows.append((name, want, got, e))
            if verdict == "known":
                known.append((name, 100 * e, words))
            elif verdict == "failed":
                failed.append("%s: %s" % (name, words))
            elif verdict == "mended":
                print("  %s is within 5 %% now: take it out of %s" % (name, a.misses))
            beyond = verdict in ("known", "failed")
            within += not beyond
            if rng is not None and not beyond:
                verdict, words = mc.range_verdict(doc, want, SLACK)
                if verdict == "outside":
                    failed.append("%s: %s" % (name, words))
        if doc.get("weights") != c["torch"]["weights"]:
            failed.append("%s: weights %r, torch %r" % (c["case"], doc.get("weights"), c["torch"]["weights"]))
    print("hf memory (MoE and encoder families): %d checks from %s (PyTorch %s, %s, float32, 1 thread)" % (
        len(rows), os.path.basename(a.compare), data.get("torch"), data.get("cpu_isa")))
    print("  %-34s %10s %10s %8s" % ("case", "torch MiB", "tinspect", "error"))
    for name, want, got, e in rows:
        print("  %-34s %10.3f %10.3f %+7.1f %%" % (name, want / 2 ** 20, got / 2 ** 20, 100 * e))
    spread = {}
    for c in data["cases"]:
        if c["routing"] == "seeded":
            for what in ("peak", "decode_peak"):
                if what in c["torch"]:
                    spread.setdefault((c["family"], c["mode"], what), []).append(c["torch"][what])
    for (fam, mode, what), vs in sorted(spread.items()):
        print("  seeds' spread %-12s %-5s %-11s %.2f %% (%.3f-%.3f MiB)" % (
            fam, mode, what, 100.0 * (max(vs) - min(vs)) / min(vs), min(vs) / 2 ** 20, max(vs) / 2 ** 20))
    for name, e, cause in known:
        print("  known miss %-32s %+6.1f %%  %s" % (name, e, cause))
    for f in failed:
        print("FAIL " + f)
    print("hf memory moe: %d of %d checks within %d %% of their measurement, %d known misses, %d failed" % (
        within, len(rows), round(100 * LIMIT), len(known), len(failed)))
    return 1 if failed else 0


def export_cmd(a):
    """tinspect-export each re-implementation (on the CPU, the forced-uniform routing: the reference
    run's routing is what a trace records) and compare `tinspect memory` on the export with the
    config-built estimate: inference without a KV cache (the export has no cache) and the training
    step, at the same bindings."""
    import torch
    sys.path.insert(0, os.path.join(ROOT, "tools", "export"))
    import tinspect_export
    torch.set_num_threads(1)
    tmp = tempfile.mkdtemp(prefix="hf-memory-moe-export-")
    loss_sum = has_loss_option(a.tinspect)
    bad = 0
    print("%-12s %-6s %12s %12s %8s  %s" % ("family", "mode", "config MiB", "export MiB", "diff", "notes"))
    for family, (cfg, bind, kind) in CONFIGS.items():
        if a.only and family not in a.only:
            continue
        model = models()(family, cfg)
        init_weights(model, 0)
        if family in MOE:
            model.set_uniform(True)
        model.eval()
        if family == "vit":
            inputs = {"px": (["B", cfg["num_channels"], cfg["image_size"], cfg["image_size"]], "float32")}
        elif family == "t5":
            inputs = {"ids": (["B", "T"], "int64"), "dec_ids": (["B", "U"], "int64")}
        else:
            inputs = {"ids": (["B", "T"], "int64")}
        path = os.path.join(tmp, family + ".json")
        try:
            res = tinspect_export.export(model, inputs, path, symbolic=dict(bind))
        except Exception as e:  # noqa: BLE001 (reported, counted)
            print("%-12s %-6s export failed: %s" % (family, "-", str(e).splitlines()[0][:150]))
            bad += 1
            continue
        notes = "%s, %d steps, %d opaque" % (res.tracer, len(res.description.get("graph", [])), len(res.opaque))
        cdir = write_config(tmp, family)
        for mode in ("infer", "train"):
            off = ["--kv-cache", "off"] if mode == "infer" else []
            argv_c = tinspect_argv(a.tinspect, cdir, family, mode, None, loss_sum) + off
            argv_e = [a.tinspect, "memory", path, "--mode", mode, "--json"] + off
            for k, v in bind.items():
                argv_e += ["--bind", "%s=%d" % (k, v)]
            if mode == "train":
                argv_e += ["--optimizer", "adamw", "--impl", "for-loop"] + (["--loss", "sum"] if loss_sum else [])
            dc, ec = run_json(argv_c)
            de, ee = run_json(argv_e)
            if ec or ee:
                print("%-12s %-6s %s" % (family, mode, ec or ee))
                bad += 1
                continue
            d = (de["peak"] - dc["peak"]) / float(dc["peak"])
            bad += abs(d) > LIMIT
            print("%-12s %-6s %12.3f %12.3f %+7.1f%%  %s" % (family, mode, dc["peak"] / 2 ** 20, de["peak"] / 2 ** 20,
                                                          100 * d, notes))
    return 1 if bad else 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tinspect", nargs="?", default=os.path.join(ROOT, "tinspect"))
    ap.add_argument("--worker")
    ap.add_argument("--measure", action="store_true")
    ap.add_argument("-o", "--output")
    ap.add_argument("--only", action="append")
    ap.add_argument("--compare")
    ap.add_argument("--misses")
    ap.add_argument("--export", action="store_true")
    ap.add_argument("--trace", metavar="FAMILY/MODE", help="print a case's ops with the live bytes after each")
    a = ap.parse_args(argv[1:])
    if a.worker:
        spec = json.loads(a.worker)
        (trace_worker if spec.get("trace") else worker)(spec)
        return 0
    if a.trace:  # FAMILY/MODE
        import memshim_run
        tmp, so = memshim_run.build_shim()
        fam, mode = a.trace.split("/")
        spec = json.dumps({"family": fam, "mode": mode, "trace": True})
        return subprocess.call([sys.executable, os.path.abspath(__file__), "--worker", spec],
                               env=memshim_run.child_env(so))
    if a.compare:
        return compare_cmd(a)
    import memshim_run
    memshim_run.need_torch(["torch"], "hf memory moe: skipped (no PyTorch in %s)")
    if a.measure:
        return measure_cmd(a)
    if a.export:
        return export_cmd(a)
    ap.error("give --measure -o FILE, --compare FILE or --export")



def trace_worker(spec):
    """--trace: one case's step under memshim, every aten op with the live bytes after it and the
    high-water mark it reached, under the module that ran it (printed, for finding where a case differs)."""
    import torch
    import memshim_run
    from torch.utils._python_dispatch import TorchDispatchMode
    shim = memshim_run.Shim()
    base = memshim_run.baseline(shim)
    family, mode = spec["family"], spec["mode"]
    cfg, bind, kind = CONFIGS[family]
    model = models()(family, cfg)
    init_weights(model, 0)
    if family in MOE:
        model.set_uniform(True)
    inputs = make_inputs(family, cfg, bind, 0)
    where = ["-"]
    for name, m in model.named_modules():
        m.register_forward_pre_hook(lambda m, i, n=name: where.__setitem__(0, n))
    rows = []

    class Mode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            shim.reset()
            out = func(*args, **(kwargs or {}))
            rows.append((where[0], str(func.overloadpacket.__name__), shim.live(False) - base, shim.peak() - base))
            return out
    if mode == "train":
        model.train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
        for _ in range(2):
            out = model(*inputs)
            out = out if isinstance(out, tuple) else (out,)
            out = out[:1] if family == "t5" else out
            sum(t.sum() for t in out).backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            del out
        with Mode():
            out = model(*inputs)
            out = out if isinstance(out, tuple) else (out,)
            out = out[:1] if family == "t5" else out
            loss = sum(t.sum() for t in out)
            where[0] = "backward"
            loss.backward()
            del out
            where[0] = "step"
            opt.step()
    else:
        model.eval()
        with torch.no_grad(), Mode():
            if family == "t5":
                cache = {}
                logits, enc = model(inputs[0], inputs[1], cache)
                del logits
                where[0] = "DECODE"
                model(None, inputs[1][:, :1], cache, enc)
            elif kind == "decoder":
                cache = Cache()
                model(inputs[0], cache)
                where[0] = "DECODE"
                model(inputs[0][:, :1], cache)
            else:
                model(*inputs)
    for w, op, live, peak in rows:
        print("%-50s %-28s live %9.3f high %9.3f" % (w, op, live / 2 ** 20, peak / 2 ** 20))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
