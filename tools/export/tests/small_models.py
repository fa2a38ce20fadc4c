"""The exporter tests' GPT-2-like and LLaMA-like models (`small_models:gpt2` on the command line).

They are export_models.py's (tests/conformance), the one copy of each test model, built
in the small configurations these tests were written for: written the way such models
are usually written (B, T, C = x.shape, a causal mask buffer sliced by T, rotary
embeddings, weight tying), so fx cannot trace them and the record tracer must keep T
and B symbolic. The GPT-2 attends by hand on every PyTorch, keeps its causal mask in the
state_dict and writes its MLP as an nn.Sequential with a tanh GELU. The LLaMA repeats its key/value heads with repeat_interleave (which
PyTorch 1.13 cannot run on meta) and computes cos/sin from an inv_freq buffer in every
forward. Keyword arguments override the configuration's fields.
"""
import os
import sys

CONFORMANCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tests", "conformance")
if CONFORMANCE not in sys.path:
    sys.path.insert(0, CONFORMANCE)

from export_models import GPT, GPTConfig, Llama, LlamaConfig  # noqa: E402

GPT2_SMALL = dict(vocab_size=1000, block_size=64, n_layer=2, n_head=4, n_embd=64, dropout=0.1, gelu="tanh",
                  attention="manual", mask_persistent=True, mlp_sequential=True)
LLAMA_SMALL = dict(vocab_size=1000, dim=64, n_layers=2, n_heads=4, n_kv_heads=2, ffn_hidden_dim=172, max_seq_len=128,
                   norm_eps=1e-6, kv_repeat="interleave", rope_cache=False)


def gpt2(**kwargs):
    return GPT(GPTConfig(**dict(GPT2_SMALL, **kwargs)))


def llama(**kwargs):
    return Llama(LlamaConfig(**dict(LLAMA_SMALL, **kwargs)))
