#!/usr/bin/env python3
"""Writes the model descriptions of the memory conformance corpus (this directory's *.json).

Usage:  python3 tests/conformance/memory_models/gen_memory_models.py   # standard library only; same bytes every time

Do not edit the .json files by hand; see README.md for what each one is.
"""
import json
import os

OUT = os.path.dirname(os.path.abspath(__file__))

def dump(name, d):
    with open(os.path.join(OUT, name), "w") as f:
        json.dump(d, f, indent=1)
        f.write("\n")

# MLP with large hidden sizes
dump("mlp_large.json", {
 "inputs": {"x": {"shape": ["N", 2048]}},
 "modules": {
  "fc1": {"type": "Linear", "in_features": 2048, "out_features": 4096},
  "act1": {"type": "GELU"},
  "fc2": {"type": "Linear", "in_features": 4096, "out_features": 4096},
  "act2": {"type": "ReLU"},
  "fc3": {"type": "Linear", "in_features": 4096, "out_features": 2048},
  "act3": {"type": "GELU"},
  "head": {"type": "Linear", "in_features": 2048, "out_features": 1000}}})

# M5-style raw-audio classifier (Dai et al. 2017), 128 channels
def stage(cin, cout, k, stride, pad):
    return {"type": "Sequential", "modules": [
        {"type": "Conv1d", "in_channels": cin, "out_channels": cout, "kernel_size": k, "stride": stride, "padding": pad},
        {"type": "BatchNorm1d", "num_features": cout},
        {"type": "ReLU"},
        {"type": "MaxPool1d", "kernel_size": 4}]}
dump("conv1d_audio.json", {
 "inputs": {"x": {"shape": ["N", 1, 16000]}},
 "modules": {
  "stage1": stage(1, 128, 80, 4, 38),
  "stage2": stage(128, 128, 3, 1, 1),
  "stage3": stage(128, 256, 3, 1, 1),
  "stage4": stage(256, 512, 3, 1, 1),
  "pool": {"type": "AdaptiveAvgPool1d", "output_size": 1},
  "flatten": {"type": "Flatten"},
  "head": {"type": "Linear", "in_features": 512, "out_features": 35}}})

# MultiheadAttention blocks (pre-norm), tokens in, class logits out
dump("mha_blocks.json", {
 "config": {"vocab": 8000, "d_model": 512, "n_head": 8, "d_ff": 2048, "n_layer": 4},
 "inputs": {"tokens": {"shape": ["N", "T"], "dtype": "int64"}},
 "defs": {"Block": {
   "inputs": ["x"],
   "modules": {
    "ln1": {"type": "LayerNorm", "normalized_shape": "$d_model"},
    "attn": {"type": "MultiheadAttention", "embed_dim": "$d_model", "num_heads": "$n_head", "batch_first": True},
    "ln2": {"type": "LayerNorm", "normalized_shape": "$d_model"},
    "ff": {"type": "Sequential", "modules": [
      {"type": "Linear", "in_features": "$d_model", "out_features": "$d_ff"},
      {"type": "GELU"},
      {"type": "Linear", "in_features": "$d_ff", "out_features": "$d_model"}]}},
   "graph": [
    {"out": "h", "call": "ln1", "args": ["x"]},
    {"out": ["a", "w"], "call": "attn", "args": ["h", "h", "h"], "need_weights": False},
    {"out": "x", "op": "add", "args": ["x", "a"]},
    {"out": "h", "call": "ln2", "args": ["x"]},
    {"out": "h", "call": "ff", "args": ["h"]},
    {"out": "x", "op": "add", "args": ["x", "h"]}]}},
 "modules": {
  "embed": {"type": "Embedding", "num_embeddings": "$vocab", "embedding_dim": "$d_model"},
  "blocks": {"type": "Sequential", "repeat": "$n_layer", "module": {"type": "Block"}},
  "norm": {"type": "LayerNorm", "normalized_shape": "$d_model"},
  "head": {"type": "Linear", "in_features": "$d_model", "out_features": 10}},
 "graph": [
  {"out": "h", "call": "embed", "args": ["tokens"]},
  {"out": "h", "call": "blocks", "args": ["h"]},
  {"out": "h", "call": "norm", "args": ["h"]},
  {"out": "h", "op": "mean", "args": ["h", 1]},
  {"out": "logits", "call": "head", "args": ["h"]}]})

# nn.TransformerEncoder (tinspect's stack form: the layer's arguments plus num_layers)
dump("transformer_encoder.json", {
 "inputs": {"x": {"shape": ["N", "T", 512]}},
 "modules": {
  "encoder": {"type": "TransformerEncoder", "d_model": 512, "nhead": 8, "num_layers": 6,
              "dim_feedforward": 2048, "batch_first": True}}})

# LLaMA-style decoder: RMSNorm, rotary embeddings, SwiGLU, causal attention, untied lm_head
L = 4
dump("llama_decoder.json", {
 "config": {"vocab": 8000, "d_model": 512, "n_head": 8, "head_dim": 64, "half_dim": 32, "d_ff": 1408, "n_layer": L},
 "inputs": {"input_ids": {"shape": ["B", "T"], "dtype": "int64"}},
 "defs": {
  "LlamaRMSNorm": {
   "inputs": ["x"],
   "modules": {"scale": {"type": "Embedding", "num_embeddings": 1, "embedding_dim": "$d_model"}},
   "graph": [
    {"out": "i", "op": "arange", "args": [1]},
    {"out": "w", "call": "scale", "args": ["i"]},
    {"out": "v", "op": "pow", "args": ["x", 2]},
    {"out": "v", "op": "mean", "args": ["v", -1], "keepdim": True},
    {"out": "v", "op": "add", "args": ["v", 1e-6]},
    {"out": "v", "op": "rsqrt", "args": ["v"]},
    {"out": "y", "op": "mul", "args": ["x", "v"]},
    {"out": "y", "op": "mul", "args": ["y", "w"]}]},
  "LlamaAttention": {
   "inputs": ["x", "cos", "sin"],
   "modules": {
    "q_proj": {"type": "Linear", "in_features": "$d_model", "out_features": "$d_model", "bias": False},
    "k_proj": {"type": "Linear", "in_features": "$d_model", "out_features": "$d_model", "bias": False},
    "v_proj": {"type": "Linear", "in_features": "$d_model", "out_features": "$d_model", "bias": False},
    "o_proj": {"type": "Linear", "in_features": "$d_model", "out_features": "$d_model", "bias": False}},
   "graph": [
    {"out": "q", "call": "q_proj", "args": ["x"]},
    {"out": "k", "call": "k_proj", "args": ["x"]},
    {"out": "v", "call": "v_proj", "args": ["x"]},
    {"out": "q", "op": "unflatten", "args": ["q", -1, ["$n_head", "$head_dim"]]},
    {"out": "q", "op": "transpose", "args": ["q", 1, 2]},
    {"out": "k", "op": "unflatten", "args": ["k", -1, ["$n_head", "$head_dim"]]},
    {"out": "k", "op": "transpose", "args": ["k", 1, 2]},
    {"out": "v", "op": "unflatten", "args": ["v", -1, ["$n_head", "$head_dim"]]},
    {"out": "v", "op": "transpose", "args": ["v", 1, 2]},
    {"out": ["q1", "q2"], "op": "chunk", "args": ["q", 2], "dim": -1},
    {"out": "q2", "op": "neg", "args": ["q2"]},
    {"out": "qr", "op": "cat", "args": [["q2", "q1"]], "dim": -1},
    {"out": "q", "op": "mul", "args": ["q", "cos"]},
    {"out": "qr", "op": "mul", "args": ["qr", "sin"]},
    {"out": "q", "op": "add", "args": ["q", "qr"]},
    {"out": ["k1", "k2"], "op": "chunk", "args": ["k", 2], "dim": -1},
    {"out": "k2", "op": "neg", "args": ["k2"]},
    {"out": "kr", "op": "cat", "args": [["k2", "k1"]], "dim": -1},
    {"out": "k", "op": "mul", "args": ["k", "cos"]},
    {"out": "kr", "op": "mul", "args": ["kr", "sin"]},
    {"out": "k", "op": "add", "args": ["k", "kr"]},
    {"out": "kt", "op": "transpose", "args": ["k", -2, -1]},
    {"out": "att", "op": "matmul", "args": ["q", "kt"]},
    {"out": "att", "op": "mul", "args": ["att", 0.125]},
    {"out": "mask", "op": "ones_like", "args": ["att"]},
    {"out": "mask", "op": "triu", "args": ["mask"], "diagonal": 1},
    {"out": "mask", "op": "gt", "args": ["mask", 0]},
    {"out": "att", "op": "masked_fill", "args": ["att", "mask", -1000000000.0]},
    {"out": "att", "op": "softmax", "args": ["att"], "dim": -1},
    {"out": "y", "op": "matmul", "args": ["att", "v"]},
    {"out": "y", "op": "transpose", "args": ["y", 1, 2]},
    {"out": "y", "op": "flatten", "args": ["y"], "start_dim": 2},
    {"out": "y", "call": "o_proj", "args": ["y"]}]},
  "LlamaMLP": {
   "inputs": ["x"],
   "modules": {
    "gate_proj": {"type": "Linear", "in_features": "$d_model", "out_features": "$d_ff", "bias": False},
    "up_proj": {"type": "Linear", "in_features": "$d_model", "out_features": "$d_ff", "bias": False},
    "down_proj": {"type": "Linear", "in_features": "$d_ff", "out_features": "$d_model", "bias": False}},
   "graph": [
    {"out": "g", "call": "gate_proj", "args": ["x"]},
    {"out": "g", "op": "silu", "args": ["g"]},
    {"out": "u", "call": "up_proj", "args": ["x"]},
    {"out": "h", "op": "mul", "args": ["g", "u"]},
    {"out": "h", "call": "down_proj", "args": ["h"]}]},
  "LlamaDecoderLayer": {
   "inputs": ["x", "cos", "sin"],
   "modules": {
    "input_layernorm": {"type": "LlamaRMSNorm"},
    "self_attn": {"type": "LlamaAttention"},
    "post_attention_layernorm": {"type": "LlamaRMSNorm"},
    "mlp": {"type": "LlamaMLP"}},
   "graph": [
    {"out": "h", "call": "input_layernorm", "args": ["x"]},
    {"out": "h", "call": "self_attn", "args": ["h", "cos", "sin"]},
    {"out": "x", "op": "add", "args": ["x", "h"]},
    {"out": "h", "call": "post_attention_layernorm", "args": ["x"]},
    {"out": "h", "call": "mlp", "args": ["h"]},
    {"out": "x", "op": "add", "args": ["x", "h"]}]}},
 "modules": {
  "model": {"type": "ModuleDict", "modules": {
   "embed_tokens": {"type": "Embedding", "num_embeddings": "$vocab", "embedding_dim": "$d_model"},
   "layers": {"type": "ModuleList", "repeat": "$n_layer", "module": {"type": "LlamaDecoderLayer"}},
   "norm": {"type": "LlamaRMSNorm"}}},
  "lm_head": {"type": "Linear", "in_features": "$d_model", "out_features": "$vocab", "bias": False}},
 "graph": [
  {"out": "h", "call": "model.embed_tokens", "args": ["input_ids"]},
  {"out": "e", "op": "arange", "args": [0, "$head_dim", 2]},
  {"out": "e", "op": "to", "args": ["e"], "dtype": "float32"},
  {"out": "e", "op": "div", "args": ["e", "$head_dim"]},
  {"out": "inv_freq", "op": "pow", "args": [10000.0, "e"]},
  {"out": "inv_freq", "op": "reciprocal", "args": ["inv_freq"]},
  {"out": "t", "op": "arange", "args": ["T"]},
  {"out": "t", "op": "to", "args": ["t"], "dtype": "float32"},
  {"out": "freqs", "op": "outer", "args": ["t", "inv_freq"]},
  {"out": "emb", "op": "cat", "args": [["freqs", "freqs"]], "dim": -1},
  {"out": "cos", "op": "cos", "args": ["emb"]},
  {"out": "sin", "op": "sin", "args": ["emb"]}]
  + [{"out": "h", "call": "model.layers.%d" % i, "args": ["h", "cos", "sin"]} for i in range(L)]
  + [{"out": "h", "call": "model.norm", "args": ["h"]},
     {"out": "logits", "call": "lm_head", "args": ["h"]}],
 "outputs": ["logits"]})

# GPT-style decoder on F.scaled_dot_product_attention (is_causal), the LLM case PyTorch 2 runs
# through its fused kernels: measured in bfloat16 on CUDA (the worker's "dtype"), where flash
# attention keeps the output and its logsumexp for backward, not the T x T scores
L = 8
dump("sdpa_decoder.json", {
 "config": {"vocab": 32000, "d_model": 1024, "n_head": 16, "head_dim": 64, "d_ff": 4096, "n_layer": L},
 "inputs": {"input_ids": {"shape": ["B", "T"], "dtype": "int64"}},
 "defs": {
  "SdpaBlock": {
   "inputs": ["x"],
   "modules": {
    "ln_1": {"type": "LayerNorm", "normalized_shape": ["$d_model"]},
    "qkv": {"type": "Linear", "in_features": "$d_model", "out_features": 3 * 1024},
    "proj": {"type": "Linear", "in_features": "$d_model", "out_features": "$d_model"},
    "ln_2": {"type": "LayerNorm", "normalized_shape": ["$d_model"]},
    "fc": {"type": "Linear", "in_features": "$d_model", "out_features": "$d_ff"},
    "act": {"type": "GELU"},
    "out": {"type": "Linear", "in_features": "$d_ff", "out_features": "$d_model"}},
   "graph": [
    {"out": "h", "call": "ln_1", "args": ["x"]},
    {"out": "h", "call": "qkv", "args": ["h"]},
    {"out": "h", "op": "unflatten", "args": ["h", -1, [3, "$n_head", "$head_dim"]]},
    {"out": ["q", "k", "v"], "op": "unbind", "args": ["h", 2]},
    {"out": "q", "op": "transpose", "args": ["q", 1, 2]},
    {"out": "k", "op": "transpose", "args": ["k", 1, 2]},
    {"out": "v", "op": "transpose", "args": ["v", 1, 2]},
    {"out": "y", "op": "scaled_dot_product_attention", "args": ["q", "k", "v"], "is_causal": True},
    {"out": "y", "op": "transpose", "args": ["y", 1, 2]},
    {"out": "y", "op": "flatten", "args": ["y"], "start_dim": 2},
    {"out": "y", "call": "proj", "args": ["y"]},
    {"out": "x", "op": "add", "args": ["x", "y"]},
    {"out": "h", "call": "ln_2", "args": ["x"]},
    {"out": "h", "call": "fc", "args": ["h"]},
    {"out": "h", "call": "act", "args": ["h"]},
    {"out": "h", "call": "out", "args": ["h"]},
    {"out": "x", "op": "add", "args": ["x", "h"]}]}},
 "modules": {
  "wte": {"type": "Embedding", "num_embeddings": "$vocab", "embedding_dim": "$d_model"},
  "h": {"type": "ModuleList", "repeat": "$n_layer", "module": {"type": "SdpaBlock"}},
  "ln_f": {"type": "LayerNorm", "normalized_shape": ["$d_model"]},
  "lm_head": {"type": "Linear", "in_features": "$d_model", "out_features": "$vocab", "bias": False}},
 "graph": [{"out": "x", "call": "wte", "args": ["input_ids"]}]
  + [{"out": "x", "call": "h.%d" % i, "args": ["x"]} for i in range(L)]
  + [{"out": "x", "call": "ln_f", "args": ["x"]},
     {"out": "logits", "call": "lm_head", "args": ["x"]}],
 "outputs": ["logits"]})
