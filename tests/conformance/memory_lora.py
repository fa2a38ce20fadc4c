#!/usr/bin/env python3
"""memory_lora.py - `tinspect memory CONFIG --lora ...` against a LoRA training step measured in PyTorch 1.13.

The model is a small Llama written in plain PyTorch after transformers' LlamaForCausalLM (the module
tree and state_dict names of the llama template: model.embed_tokens, model.layers.N.self_attn.q_proj,
..., lm_head; RMSNorm with its float32 upcast; the rotary tables; repeat_kv and the eager attention
softmax(QK^T * scale + mask) V, since PyTorch 1.13 has no scaled_dot_product_attention).  LoRA is
peft's, re-implemented without the peft package after peft/tuners/lora/layer.py:

  Linear.update_layer   lora_A = nn.Linear(in, r, bias=False), lora_B = nn.Linear(r, out, bias=False),
                        lora_dropout = nn.Dropout(p) when p > 0 else nn.Identity(),
                        scaling = lora_alpha / r
  Linear.forward        result = self.base_layer(x)
                        result = result + lora_B(lora_A(dropout(x))) * scaling
  _mark_only_adapters_as_trainable   every parameter whose name lacks "lora_" is frozen (bias="none")

A module is targeted when its name equals a target or ends with "." + target (peft's
check_target_module_exists).  The step is measured as memory_conformance.py measures (one thread,
LD_PRELOAD memshim, the live bytes after a warm-up backward subtracted, two warm-up steps, the
third's peak): forward, loss = logits.sum() (tinspect's training step: the sum of the outputs),
backward, AdamW(foreach=False) over the adapters, zero_grad(set_to_none=True).  tinspect estimates
the same step from a config.json with --batch B --context T --mode train --optimizer adamw --impl
for-loop --lora SPEC --lora-targets LIST.

The estimates run 3.3 to 4.6 % under the measurements, the same 2 MiB in every case (twice the
logits, whatever B and T): the base model's, not the adapters' (a full fine-tune of the same model
is 6 MiB under), left to the llama template's own measurement.

  memory_lora.py TINSPECT --measure -o FILE     measure every case, write FILE
  memory_lora.py TINSPECT --compare FILE        estimate every case again; fail when one is more than
                                                5 % from its measurement (or the adapters' weights,
                                                gradients and AdamW state differ from the measured
                                                bytes by more than a 4 KiB allocation each)
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import memshim_run  # noqa: E402

LIMIT = 0.05

LLAMA = {"model_type": "llama", "vocab_size": 512, "hidden_size": 256, "intermediate_size": 688,
         "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2, "rms_norm_eps": 1e-6,
         "tie_word_embeddings": False}

# name, config changes, batch, context, lora spec, targets (None: peft's default for llama)
CASES = [
    ("qv-r8", {}, 2, 256, "r=8,alpha=16", "q_proj,v_proj"),
    ("default-r16-dropout", {}, 4, 128, "r=16,alpha=32,dropout=0.05", None),
    ("all-r32-dropout", {}, 2, 192, "r=32,alpha=64,dropout=0.1",
     "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj"),
    ("mlp-r4-mha", {"num_key_value_heads": 4, "num_hidden_layers": 2}, 4, 96, "r=4,dropout=0.1",
     "gate_proj,up_proj,down_proj"),
]

PEFT_DEFAULT = {"llama": ["q_proj", "v_proj"]}  # TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING


def parse_spec(spec):
    out = {"r": None, "alpha": 8.0, "dropout": 0.0}  # LoraConfig's defaults: lora_alpha=8, lora_dropout=0.0
    for part in spec.split(","):
        k, v = part.split("=")
        out[k] = float(v) if k != "r" else int(v)
    return out


def build(cfg):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    D, H, KV, I = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["intermediate_size"]
    hd = D // H

    class RMSNorm(nn.Module):  # LlamaRMSNorm
        def __init__(self, n):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(n))
            self.eps = cfg["rms_norm_eps"]

        def forward(self, x):
            dtype = x.dtype
            h = x.to(torch.float32)
            var = h.pow(2).mean(-1, keepdim=True)
            h = h * torch.rsqrt(var + self.eps)
            return self.weight * h.to(dtype)

    def rotate_half(x):
        x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
        return torch.cat((-x2, x1), dim=-1)

    def repeat_kv(x, n):
        b, kvh, s, d = x.shape
        if n == 1:
            return x
        return x[:, :, None, :, :].expand(b, kvh, n, s, d).reshape(b, kvh * n, s, d)

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.q_proj = nn.Linear(D, H * hd, bias=False)
            self.k_proj = nn.Linear(D, KV * hd, bias=False)
            self.v_proj = nn.Linear(D, KV * hd, bias=False)
            self.o_proj = nn.Linear(H * hd, D, bias=False)

        def forward(self, x, cos, sin, mask):
            B, T = x.shape[:2]
            q = self.q_proj(x).view(B, T, -1, hd).transpose(1, 2)
            k = self.k_proj(x).view(B, T, -1, hd).transpose(1, 2)
            v = self.v_proj(x).view(B, T, -1, hd).transpose(1, 2)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            k, v = repeat_kv(k, H // KV), repeat_kv(v, H // KV)
            w = torch.matmul(q, k.transpose(2, 3)) * hd ** -0.5
            w = w + mask
            w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
            o = torch.matmul(w, v).transpose(1, 2).contiguous()
            return self.o_proj(o.reshape(B, T, -1))

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.gate_proj = nn.Linear(D, I, bias=False)
            self.up_proj = nn.Linear(D, I, bias=False)
            self.down_proj = nn.Linear(I, D, bias=False)

        def forward(self, x):
            return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.self_attn = Attention()
            self.mlp = MLP()
            self.input_layernorm = RMSNorm(D)
            self.post_attention_layernorm = RMSNorm(D)

        def forward(self, x, cos, sin, mask):
            x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
            return x + self.mlp(self.post_attention_layernorm(x))

    class Rotary(nn.Module):
        def __init__(self):
            super().__init__()
            inv = 1.0 / (10000.0 ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
            self.register_buffer("inv_freq", inv, persistent=False)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed_tokens = nn.Embedding(cfg["vocab_size"], D)
            self.layers = nn.ModuleList([Layer() for _ in range(cfg["num_hidden_layers"])])
            self.norm = RMSNorm(D)
            self.rotary_emb = Rotary()

    class CausalLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.model = Model()
            self.lm_head = nn.Linear(D, cfg["vocab_size"], bias=False)

        def forward(self, ids):
            T = ids.shape[1]
            h = self.model.embed_tokens(ids)
            t = torch.arange(T, dtype=torch.float32)
            freqs = torch.outer(t, self.model.rotary_emb.inv_freq)
            emb = torch.cat((freqs, freqs), dim=-1)
            cos, sin = emb.cos(), emb.sin()
            mask = torch.full((T, T), float("-inf")).triu(1)
            for layer in self.model.layers:
                h = layer(h, cos, sin, mask)
            return self.lm_head(self.model.norm(h))

    return CausalLM()


def apply_lora(model, spec, targets):
    """peft's LoRA on every targeted nn.Linear; everything else frozen. Returns the adapters' parameters."""
    import math
    import torch.nn as nn

    class LoraLinear(nn.Module):  # peft.tuners.lora.layer.Linear, one adapter "default"
        def __init__(self, base, r, alpha, dropout):
            super().__init__()
            self.base_layer = base
            self.lora_dropout = nn.ModuleDict({"default": nn.Dropout(dropout) if dropout > 0 else nn.Identity()})
            self.lora_A = nn.ModuleDict({"default": nn.Linear(base.in_features, r, bias=False)})
            self.lora_B = nn.ModuleDict({"default": nn.Linear(r, base.out_features, bias=False)})
            self.scaling = {"default": alpha / r}
            nn.init.kaiming_uniform_(self.lora_A["default"].weight, a=math.sqrt(5))
            nn.init.zeros_(self.lora_B["default"].weight)

        def forward(self, x):
            result = self.base_layer(x)
            dtype = result.dtype
            lora_A, lora_B = self.lora_A["default"], self.lora_B["default"]
            x = x.to(lora_A.weight.dtype)
            result = result + lora_B(lora_A(self.lora_dropout["default"](x))) * self.scaling["default"]
            return result.to(dtype)

    names = [n for n, m in model.named_modules() if isinstance(m, nn.Linear)
             and any(n == t or n.endswith("." + t) for t in targets)]
    for n in names:
        parent, leaf = model, n
        if "." in n:
            parent = model.get_submodule(n.rsplit(".", 1)[0])
            leaf = n.rsplit(".", 1)[1]
        setattr(parent, leaf, LoraLinear(getattr(parent, leaf), spec["r"], spec["alpha"], spec["dropout"]))
    for n, p in model.named_parameters():
        p.requires_grad_("lora_" in n)
    return [p for p in model.parameters() if p.requires_grad]


def worker(spec):
    import torch
    torch.manual_seed(0)
    shim = memshim_run.Shim()
    base = memshim_run.baseline(shim)
    cfg = dict(LLAMA)
    cfg.update(spec["config"])
    model = build(cfg)
    lspec = parse_spec(spec["lora"])
    targets = spec["targets"].split(",") if spec["targets"] else PEFT_DEFAULT["llama"]
    params = apply_lora(model, lspec, targets)
    model.train()
    opt = torch.optim.AdamW(params, lr=1e-3, foreach=False)
    ids = torch.randint(0, cfg["vocab_size"], (spec["batch"], spec["context"]))

    def step():
        out = model(ids)
        loss = out.sum()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(2):
        step()
    before = shim.live()
    shim.reset()
    step()
    peak = shim.peak() - base
    state = [t for s in opt.state.values() for k, t in s.items() if isinstance(t, torch.Tensor) and k != "step"]
    return {"peak": peak, "live_before": before - base,
            "weights": memshim_run.uniq_bytes(list(model.parameters()) + list(model.buffers())),
            "adapter_weights": memshim_run.uniq_bytes(params),
            "adapter_params": sum(p.numel() for p in params), "adapter_tensors": len(params),
            "optimizer_state": sum(t.numel() * t.element_size() for t in state)}


def write_config(tmp, name, change, base):
    cfg = dict(base)
    cfg.update(change)
    d = os.path.join(tmp, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)
    return d


def estimate(binary, folder, case):
    argv = [binary, "memory", folder, "--batch", str(case["batch"]), "--context", str(case["context"]),
            "--mode", "train", "--optimizer", "adamw", "--impl", "for-loop", "--lora", case["lora"], "--json",
            "--loss", "sum"]  # the measured step's loss is logits.sum(), not the causal LM's cross-entropy
    if case["targets"]:
        argv += ["--lora-targets", case["targets"]]
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
    if p.returncode not in (0, 1):
        raise SystemExit("%s: exit %d: %s" % (" ".join(argv), p.returncode, p.stderr.strip()))
    return json.loads(p.stdout)


def term(doc, name):
    for t in doc.get("terms", []):
        if t.get("name") == name:
            return t.get("bytes", 0)
    return None


def measure_cmd(a):
    import torch
    tmp, so = memshim_run.build_shim()
    out = {"torch": torch.__version__, "device": "cpu", "threads": 1, "measured": datetime.date.today().isoformat(),
           "generator": "tests/conformance/memory_lora.py", "model": LLAMA, "cases": []}
    for name, change, batch, context, lora, targets in CASES:
        spec = {"config": change, "batch": batch, "context": context, "lora": lora, "targets": targets}
        res = memshim_run.run_worker(so, os.path.abspath(__file__), [json.dumps(spec)])
        if "error" in res:
            raise SystemExit("%s: %s" % (name, res["error"]))
        spec.update({"case": name, "torch": res})
        out["cases"].append(spec)
        print("measured %-24s %8.2f MiB (adapters %d params)" % (name, res["peak"] / 2 ** 20, res["adapter_params"]),
              flush=True)
    with open(a.output, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    return 0


def compare_cmd(a):
    with open(a.compare) as f:
        data = json.load(f)
    tmp = tempfile.mkdtemp(prefix="memory-lora-")
    failed = []
    print("%-24s %12s %12s %8s" % ("case", "torch", "tinspect", "error"))
    for c in data["cases"]:
        folder = write_config(tmp, c["case"], c["config"], data.get("model", LLAMA))  # the model measured
        doc = estimate(a.tinspect, folder, c)
        want = c["torch"]["peak"]
        e = (doc["peak"] - want) / float(want)
        print("%-24s %10.2f MiB %8.2f MiB %+7.2f %%" % (c["case"], want / 2 ** 20, doc["peak"] / 2 ** 20, 100 * e))
        if abs(e) > LIMIT:
            failed.append("%s: peak %d, torch %d (%+.1f %%)" % (c["case"], doc["peak"], want, 100 * e))
        lora = (doc.get("settings") or {}).get("lora") or {}
        # the adapters' parameters are the measured count exactly; AdamW keeps two float32 moments each
        if lora.get("params") != c["torch"]["adapter_params"]:
            failed.append("%s: %s adapter parameters, torch %d" % (c["case"], lora.get("params"),
                                                                    c["torch"]["adapter_params"]))
        # AdamW's exp_avg and exp_avg_sq per adapter (tinspect adds the 4-byte float32 step of each, which
        # the measurement leaves out), a .grad per adapter: the adapters' bytes exactly
        st, grads = term(doc, "optimizer_state"), term(doc, "gradients")
        if st is None or not 0 <= st - c["torch"]["optimizer_state"] <= 4 * c["torch"]["adapter_tensors"]:
            failed.append("%s: optimizer state %s, torch %d" % (c["case"], st, c["torch"]["optimizer_state"]))
        if grads != c["torch"]["adapter_weights"]:
            failed.append("%s: gradients %s, the adapters' bytes %d" % (c["case"], grads, c["torch"]["adapter_weights"]))
    for f in failed:
        print("FAIL " + f)
    print("memory_lora: %d cases, %d failed" % (len(data["cases"]), len(failed)))
    return 1 if failed else 0


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        print(json.dumps(worker(json.loads(sys.argv[2]))))
        return 0
    memshim_run.need_torch(["torch"], "memory_lora: skipped (PyTorch is not importable by %s)")
    ap = argparse.ArgumentParser()
    ap.add_argument("tinspect")
    ap.add_argument("--measure", action="store_true")
    ap.add_argument("-o", "--output")
    ap.add_argument("--compare")
    a = ap.parse_args()
    if a.measure:
        return measure_cmd(a)
    if a.compare:
        return compare_cmd(a)
    ap.error("give --measure -o FILE or --compare FILE")


if __name__ == "__main__":
    sys.exit(main())
