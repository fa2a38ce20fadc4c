#!/usr/bin/python3
"""memory_ops.py - what PyTorch 1.13 really allocates on the CPU, operator by operator.

Usage: /usr/bin/python3 tests/conformance/memory_ops.py [--out DIR] [--only SUBSTR] [-j N]

Measures, with the team's LD_PRELOAD allocation tracker (tests/tools/memshim.c,
built here into a temporary directory; it counts heap blocks >= 4096 bytes),
each operator / module of CASES at fp32 shapes of a few tens of MB, one thread,
every case variant in its own fresh python process, after 2 warm-up repetitions:

INFER (module.eval(), torch.no_grad()):
  out_bytes      bytes of the output storages that are new (not the input's)
  alias          'view' / 'inplace' / 'identity' when an output shares the input's storage
  fwd_transient  peak during the call - live after it (= peak - live before - out_live):
                 scratch beyond the output
  first_call     live growth that the first call leaves behind (caches) - informational
TRAIN (module.train(), floating inputs requires_grad=True; '(non-leaf)' cases
       feed x = leaf.clone() so that in-place ops are legal):
  out_bytes_tr   new output bytes
  saved          live after forward - live before - out_bytes_tr: what autograd keeps
                 beyond the output
  kept_del_out   live after `gf = out.grad_fn; del out` - live before: what the graph
                 keeps once the output itself is dropped (saved == kept_del_out means
                 the output is not saved; kept_del_out == saved + out means it is)
  fwd_peak_tr    peak during forward - live before
  fwd_trans_tr   peak during forward - live after forward (scratch beyond output+saved)
  bwd_peak       peak during torch.autograd.backward(outs, grads) - live at its start
                 (grads preallocated before the forward)
  after_bwd      live after backward - live at its start (= new .grad tensors minus
                 the saved tensors that backward frees)
  grads          bytes of the .grad of the inputs and parameters after backward
Every row has two shape variants, and each formula in EXPECT is checked on both
(tolerance 64 KiB + 0.2% for malloc's page rounding). Results go to
DIR/ops.txt and DIR/ops.json (rewritten after each case) and to stdout.
Exit status: 0, 1 when a formula does not match, 77 without torch.
"""
import argparse
import json
import os
import sys

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    print("memory ops: skipped (no torch for %s)" % sys.executable)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from memshim_run import Shim, build_shim, run_worker, mb  # noqa: E402

B = 4  # bytes per fp32 element


class Case:
    def __init__(self, name, variants, build, note="", nonleaf=False, bwd_first=False,
                 expect=None, nograd=()):
        self.name, self.variants, self.build, self.note = name, variants, build, note
        self.nonleaf, self.bwd_first, self.expect, self.nograd = nonleaf, bwd_first, expect or {}, nograd


def R(*shape):
    return torch.randn(*shape)


CASES = []


def case(*a, **k):
    CASES.append(Case(*a, **k))


def mod(m, *shapes):
    return lambda **v: (m(**v) if callable(m) else m, lambda: [R(*s(**v)) for s in shapes], None)


# ---------------------------------------------------------------- the cases
LIN2 = [dict(N=65536, I=128, O=128), dict(N=32768, I=64, O=256)]
LIN3 = [dict(A=64, N=1024, I=128, O=128), dict(A=32, N=512, I=256, O=64)]
for bias in (True, False):
    case("nn.Linear 2D bias=%s" % bias, LIN2,
         lambda N, I, O, bias=bias: (nn.Linear(I, O, bias=bias), lambda: [R(N, I)], None))
    case("nn.Linear 3D bias=%s" % bias, LIN3,
         lambda A, N, I, O, bias=bias: (nn.Linear(I, O, bias=bias), lambda: [R(A, N, I)], None))

CONV = [dict(N=8, C=32, H=128, W=128, O=32), dict(N=4, C=24, H=96, W=160, O=48)]
case("nn.Conv2d 3x3 s1 p1", CONV,
     lambda N, C, H, W, O: (nn.Conv2d(C, O, 3, 1, 1), lambda: [R(N, C, H, W)], None))
case("nn.Conv2d 1x1", [dict(N=8, C=32, H=128, W=128, O=64), dict(N=4, C=96, H=64, W=80, O=48)],
     lambda N, C, H, W, O: (nn.Conv2d(C, O, 1), lambda: [R(N, C, H, W)], None))
case("nn.Conv2d 7x7 s2 p3", [dict(N=8, C=3, H=384, W=384, O=32), dict(N=4, C=3, H=320, W=448, O=16)],
     lambda N, C, H, W, O: (nn.Conv2d(C, O, 7, 2, 3), lambda: [R(N, C, H, W)], None))
case("nn.Conv2d depthwise 3x3 g=C", [dict(N=8, C=64, H=128, W=128), dict(N=4, C=96, H=80, W=96)],
     lambda N, C, H, W: (nn.Conv2d(C, C, 3, 1, 1, groups=C), lambda: [R(N, C, H, W)], None))
case("nn.Conv2d 3x3 s1 p1 no-bias N=1", [dict(N=1, C=64, H=256, W=256, O=64), dict(N=1, C=32, H=320, W=256, O=48)],
     lambda N, C, H, W, O: (nn.Conv2d(C, O, 3, 1, 1, bias=False), lambda: [R(N, C, H, W)], None))
case("nn.Conv1d k3 p1", [dict(N=16, C=64, L=4096, O=64), dict(N=8, C=96, L=3000, O=48)],
     lambda N, C, L, O: (nn.Conv1d(C, O, 3, 1, 1), lambda: [R(N, C, L)], None))
case("nn.ConvTranspose2d k4 s2 p1", [dict(N=8, C=32, H=64, W=64, O=32), dict(N=4, C=48, H=48, W=80, O=24)],
     lambda N, C, H, W, O: (nn.ConvTranspose2d(C, O, 4, 2, 1), lambda: [R(N, C, H, W)], None))

ACT4 = [dict(N=8, C=64, H=128, W=128), dict(N=4, C=96, H=80, W=96)]
case("nn.BatchNorm2d", ACT4, lambda N, C, H, W: (nn.BatchNorm2d(C), lambda: [R(N, C, H, W)], None))
case("nn.BatchNorm1d 2D", [dict(N=65536, C=128), dict(N=16384, C=384)],
     lambda N, C: (nn.BatchNorm1d(C), lambda: [R(N, C)], None))
case("nn.BatchNorm1d 3D", [dict(N=32, C=256, L=1024), dict(N=16, C=96, L=3000)],
     lambda N, C, L: (nn.BatchNorm1d(C), lambda: [R(N, C, L)], None))
case("nn.LayerNorm", [dict(A=64, N=1024, D=128), dict(A=16, N=512, D=768)],
     lambda A, N, D: (nn.LayerNorm(D), lambda: [R(A, N, D)], None))
case("nn.GroupNorm", [dict(N=8, C=64, H=128, W=128, G=32), dict(N=4, C=96, H=80, W=96, G=8)],
     lambda N, C, H, W, G: (nn.GroupNorm(G, C), lambda: [R(N, C, H, W)], None))

ELT = [dict(N=8, C=64, H=128, W=128), dict(N=3, C=100, H=100, W=200)]
for nm, mk_m, nl in [("nn.ReLU", lambda: nn.ReLU(), False),
                     ("nn.ReLU(inplace=True) (non-leaf)", lambda: nn.ReLU(inplace=True), True),
                     ("nn.ReLU6", lambda: nn.ReLU6(), False),
                     ("nn.GELU", lambda: nn.GELU(), False),
                     ("nn.GELU(approximate='tanh')", lambda: nn.GELU(approximate="tanh"), False),
                     ("nn.SiLU", lambda: nn.SiLU(), False),
                     ("nn.Sigmoid", lambda: nn.Sigmoid(), False),
                     ("nn.Tanh", lambda: nn.Tanh(), False),
                     ("nn.Dropout(0.1)", lambda: nn.Dropout(0.1), False),
                     ("nn.Dropout(0.1, inplace=True) (non-leaf)", lambda: nn.Dropout(0.1, inplace=True), True),
                     ("nn.MaxPool2d(3,2,1)", lambda: nn.MaxPool2d(3, 2, 1), False),
                     ("nn.AvgPool2d(2)", lambda: nn.AvgPool2d(2), False),
                     ("nn.AvgPool2d(3,2,1)", lambda: nn.AvgPool2d(3, 2, 1), False),
                     ("nn.AdaptiveAvgPool2d(1)", lambda: nn.AdaptiveAvgPool2d(1), False)]:
    case(nm, ELT, lambda N, C, H, W, mk_m=mk_m: (mk_m(), lambda: [R(N, C, H, W)], None), nonleaf=nl)

case("nn.Embedding", [dict(V=32768, D=256, N=64, T=512), dict(V=20000, D=384, N=32, T=384)],
     lambda V, D, N, T: (nn.Embedding(V, D), lambda: [torch.randint(0, V, (N, T))], None))
case("nn.LSTM 2 layers bidir batch_first (out only)", [dict(N=16, T=128, I=128, H=128), dict(N=8, T=192, I=96, H=160)],
     lambda N, T, I, H: (nn.LSTM(I, H, 2, batch_first=True, bidirectional=True), lambda: [R(N, T, I)],
                         lambda m, x: m(x)[0]))
case("nn.GRU 2 layers bidir batch_first (out only)", [dict(N=16, T=128, I=128, H=128), dict(N=8, T=192, I=96, H=160)],
     lambda N, T, I, H: (nn.GRU(I, H, 2, batch_first=True, bidirectional=True), lambda: [R(N, T, I)],
                         lambda m, x: m(x)[0]))
MHA = [dict(N=16, T=256, E=256, Hd=8), dict(N=8, T=384, E=192, Hd=4), dict(N=4, T=512, E=256, Hd=8)]
case("nn.MultiheadAttention self, need_weights=False", MHA,
     lambda N, T, E, Hd: (nn.MultiheadAttention(E, Hd, batch_first=True), lambda: [R(N, T, E)],
                          lambda m, x: m(x, x, x, need_weights=False)[0]))
case("nn.MultiheadAttention self, need_weights=True (avg)", MHA,
     lambda N, T, E, Hd: (nn.MultiheadAttention(E, Hd, batch_first=True), lambda: [R(N, T, E)],
                          lambda m, x: m(x, x, x, need_weights=True)), bwd_first=True)
case("nn.TransformerEncoderLayer batch_first relu", [dict(N=16, T=256, E=256, Hd=8, FF=1024), dict(N=8, T=384, E=192, Hd=4, FF=768),
                                                   dict(N=4, T=512, E=256, Hd=8, FF=512)],
     lambda N, T, E, Hd, FF: (nn.TransformerEncoderLayer(E, Hd, FF, batch_first=True), lambda: [R(N, T, E)], None))

SM = [dict(A=16, H=8, T=256, S=256), dict(A=8, H=6, T=384, S=320)]
case("softmax(dim=-1)", SM, lambda A, H, T, S: (None, lambda: [R(A, H, T, S)], lambda m, x: torch.softmax(x, -1)))
case("log_softmax(dim=-1)", SM, lambda A, H, T, S: (None, lambda: [R(A, H, T, S)], lambda m, x: torch.log_softmax(x, -1)))
case("masked_fill(causal bool [T,S], -inf)", SM,
     lambda A, H, T, S: (None, lambda: [R(A, H, T, S), torch.ones(T, S, dtype=torch.bool).triu(1)],
                         lambda m, x, k: x.masked_fill(k, float("-inf"))))
case("triu(diagonal=1)", SM, lambda A, H, T, S: (None, lambda: [R(A, H, T, S)], lambda m, x: torch.triu(x, 1)))
case("bmm 3D [A,T,K]@[A,K,S]", [dict(A=128, T=256, K=64, S=256), dict(A=96, T=320, K=48, S=256)],
     lambda A, T, K, S: (None, lambda: [R(A, T, K), R(A, K, S)], lambda m, a, b: torch.bmm(a, b)))
case("matmul 4D [A,H,T,K]@[A,H,K,S]", [dict(A=16, H=8, T=256, K=64, S=256), dict(A=8, H=6, T=384, K=32, S=320)],
     lambda A, H, T, K, S: (None, lambda: [R(A, H, T, K), R(A, H, K, S)], lambda m, a, b: torch.matmul(a, b)))
case("matmul 3D@2D [A,T,K]@[K,S]", [dict(A=64, T=1024, K=128, S=128), dict(A=32, T=512, K=256, S=96)],
     lambda A, T, K, S: (None, lambda: [R(A, T, K), R(K, S)], lambda m, a, b: torch.matmul(a, b)))
case("add same shape", ELT, lambda N, C, H, W: (None, lambda: [R(N, C, H, W), R(N, C, H, W)], lambda m, a, b: a + b))
case("mul same shape", ELT, lambda N, C, H, W: (None, lambda: [R(N, C, H, W), R(N, C, H, W)], lambda m, a, b: a * b))
case("add broadcast [N,C,H,W]+[C,1,1]", ELT,
     lambda N, C, H, W: (None, lambda: [R(N, C, H, W), R(C, 1, 1)], lambda m, a, b: a + b))
case("mul broadcast [N,C,H,W]*[N,C,1,1]", ELT,
     lambda N, C, H, W: (None, lambda: [R(N, C, H, W), R(N, C, 1, 1)], lambda m, a, b: a * b))
case("add alpha=2", ELT, lambda N, C, H, W: (None, lambda: [R(N, C, H, W), R(N, C, H, W)],
                                               lambda m, a, b: torch.add(a, b, alpha=2)))
case("x.add_(y) inplace (non-leaf)", ELT, lambda N, C, H, W: (None, lambda: [R(N, C, H, W), R(N, C, H, W)],
                                                            lambda m, a, b: a.add_(b)), nonleaf=True)
case("x*0.5", ELT, lambda N, C, H, W: (None, lambda: [R(N, C, H, W)], lambda m, x: x * 0.5))
case("x+1", ELT, lambda N, C, H, W: (None, lambda: [R(N, C, H, W)], lambda m, x: x + 1))
case("cat([x,y],dim=1)", ELT, lambda N, C, H, W: (None, lambda: [R(N, C, H, W), R(N, C, H, W)],
                                                   lambda m, a, b: torch.cat([a, b], 1)))
case("flatten(1)", ELT, lambda N, C, H, W: (None, lambda: [R(N, C, H, W)], lambda m, x: x.flatten(1)))
case("view(N,-1)", ELT, lambda N, C, H, W: (None, lambda: [R(N, C, H, W)], lambda m, x: x.view(N, -1)))
case("reshape(N,-1) contiguous", ELT, lambda N, C, H, W: (None, lambda: [R(N, C, H, W)], lambda m, x: x.reshape(N, -1)))
case("transpose(1,2)", ELT, lambda N, C, H, W: (None, lambda: [R(N, C, H, W)], lambda m, x: x.transpose(1, 2)))
case("permute(0,2,3,1)", ELT, lambda N, C, H, W: (None, lambda: [R(N, C, H, W)], lambda m, x: x.permute(0, 2, 3, 1)))
case("permute(0,2,3,1).contiguous()", ELT,
     lambda N, C, H, W: (None, lambda: [R(N, C, H, W)], lambda m, x: x.permute(0, 2, 3, 1).contiguous()))
case("transpose(1,2).reshape(N,-1) (copies)", ELT,
     lambda N, C, H, W: (None, lambda: [R(N, C, H, W)], lambda m, x: x.transpose(1, 2).reshape(N, -1)))
case("x[:,None].expand(N,4,C,H,W) (view)", [dict(N=8, C=64, H=64, W=128), dict(N=3, C=100, H=50, W=200)],
     lambda N, C, H, W: (None, lambda: [R(N, C, H, W)], lambda m, x: x[:, None].expand(N, 4, C, H, W)))
case("x[:,None].expand(N,4,C,H,W)*2", [dict(N=8, C=64, H=64, W=128), dict(N=3, C=100, H=50, W=200)],
     lambda N, C, H, W: (None, lambda: [R(N, C, H, W)], lambda m, x: x[:, None].expand(N, 4, C, H, W) * 2))
case("chunk(4,dim=1)", ELT, lambda N, C, H, W: (None, lambda: [R(N, C, H, W)], lambda m, x: x.chunk(4, 1)))
case("split(16,dim=1)", [dict(N=8, C=64, H=128, W=128), dict(N=3, C=96, H=100, W=200)],
     lambda N, C, H, W: (None, lambda: [R(N, C, H, W)], lambda m, x: x.split(16, 1)))
case("split(16,dim=1)[0] only", [dict(N=8, C=64, H=128, W=128), dict(N=3, C=96, H=100, W=200)],
     lambda N, C, H, W: (None, lambda: [R(N, C, H, W)], lambda m, x: x.split(16, 1)[0]))
case("gelu tanh composite 0.5x(1+tanh(c(x+0.044715x^3)))", ELT,
     lambda N, C, H, W: (None, lambda: [R(N, C, H, W)],
                         lambda m, x: 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 * torch.pow(x, 3.0))))))
case("F.cross_entropy [N,C] long targets", [dict(N=8192, C=1024), dict(N=4096, C=1500)],
     lambda N, C: (None, lambda: [R(N, C), torch.randint(0, C, (N,))], lambda m, x, t: F.cross_entropy(x, t)))
case("F.cross_entropy [N,C,T] (seq)", [dict(N=16, C=1024, T=512), dict(N=8, C=1500, T=500)],
     lambda N, C, T: (None, lambda: [R(N, C, T), torch.randint(0, C, (N, T))], lambda m, x, t: F.cross_entropy(x, t)))
case("x.sum()", ELT, lambda N, C, H, W: (None, lambda: [R(N, C, H, W)], lambda m, x: x.sum()))
case("x.mean()", ELT, lambda N, C, H, W: (None, lambda: [R(N, C, H, W)], lambda m, x: x.mean()))
case("x.sum(dim=1)", ELT, lambda N, C, H, W: (None, lambda: [R(N, C, H, W)], lambda m, x: x.sum(1)))
case("x.mean(dim=(2,3))", ELT, lambda N, C, H, W: (None, lambda: [R(N, C, H, W)], lambda m, x: x.mean((2, 3))))
INTERP = [dict(N=8, C=64, H=64, W=64), dict(N=4, C=48, H=60, W=100)]
case("F.interpolate nearest x2", INTERP,
     lambda N, C, H, W: (None, lambda: [R(N, C, H, W)], lambda m, x: F.interpolate(x, scale_factor=2, mode="nearest")))
case("F.interpolate bilinear x2", INTERP,
     lambda N, C, H, W: (None, lambda: [R(N, C, H, W)],
                         lambda m, x: F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)))


# ---------------------------------------------------------------- measuring (child)
def flat(o):
    if isinstance(o, torch.Tensor):
        return [o]
    if isinstance(o, (tuple, list)):
        return [t for x in o for t in flat(x)]
    return []


def sptr(t):
    return t.storage().data_ptr()


def new_bytes(outs, old_ptrs):
    seen, n = set(), 0
    for t in outs:
        p = sptr(t)
        if p in old_ptrs or p in seen:
            continue
        seen.add(p)
        n += t.storage().nbytes()
    return n


def alias_kind(outs, ins):
    ptrs = {sptr(t): t for t in ins}
    kinds = set()
    for o in outs:
        t = ptrs.get(sptr(o))
        if t is None:
            continue
        if o is t:
            kinds.add("identity")
        elif o.data_ptr() == t.data_ptr() and o.shape == t.shape and o.stride() == t.stride():
            kinds.add("inplace")
        else:
            kinds.add("view")
    return "+".join(sorted(kinds)) or "no"


def measure(c, v):
    torch.manual_seed(0)
    torch.set_num_threads(1)
    S = Shim()
    m, mk, fn = c.build(**v)
    call = (lambda ins: fn(m, *ins)) if fn else (lambda ins: m(*ins))
    params = list(m.parameters()) if m is not None else []
    r = {"case": c.name, "shape": dict(v)}
    r["param_bytes"] = sum(p.numel() * p.element_size() for p in params)
    r["w0_bytes"] = params[0].numel() * params[0].element_size() if params else 0
    pptrs = {sptr(p) for p in params}
    # ---- INFER
    if m is not None:
        m.eval()
    with torch.no_grad():
        ins = mk()
        r["inputs"] = [[list(t.shape), str(t.dtype).replace("torch.", "")] for t in ins]
        r["in_bytes"] = sum(t.storage().nbytes() for t in ins)
        r["x_bytes"] = ins[0].storage().nbytes()
        l0 = S.live()
        out = call(ins)
        del out
        r["first_call"] = S.live() - l0
        out = call(ins)
        del out
        before = S.live()
        S.reset()
        out = call(ins)
        pk = S.peak()
        after = S.live(collect=False)
        outs = flat(out)
        r["outputs"] = [list(t.shape) for t in outs]
        r["out_bytes"] = new_bytes(outs, {sptr(t) for t in ins} | pptrs)
        r["out_live"] = after - before
        r["alias"] = alias_kind(outs, ins)
        r["fwd_transient"] = pk - after
        del out, outs, ins
    # ---- TRAIN
    if m is not None:
        m.train()
    keep = []

    def mk_train():
        ins, leaves = mk(), []
        for i, t in enumerate(ins):
            if t.is_floating_point() and i not in c.nograd:
                t.requires_grad_(True)
                leaves.append(t)
                if c.nonleaf:
                    ins[i] = t.clone()
        return ins, leaves

    def bwd_outs(out):
        o = [t for t in flat(out) if t.requires_grad]
        return o[:1] if c.bwd_first else o

    def clear():
        for p in params:
            p.grad = None

    for rep in range(2):
        clear()
        ins, leaves = mk_train()
        outs = bwd_outs(call(ins))
        shapes = [t.shape for t in outs]
        torch.autograd.backward(outs, [torch.randn(s) for s in shapes])
        del ins, leaves, outs
    clear()
    # run B: forward + backward
    ins, leaves = mk_train()
    grads = [torch.randn(s) for s in shapes]
    old = {sptr(t) for t in ins + leaves} | pptrs
    before = S.live()
    S.reset()
    out = call(ins)
    pk = S.peak()
    after = S.live(collect=False)
    allout = flat(out)
    r["out_bytes_tr"] = new_bytes(allout, old)
    r["alias_tr"] = alias_kind(allout, ins)
    r["fwd_peak_tr"] = pk - before
    r["fwd_trans_tr"] = pk - after
    r["saved"] = after - before - r["out_bytes_tr"]
    outs = bwd_outs(out)
    b0 = S.live()
    S.reset()
    torch.autograd.backward(outs, grads)
    bpk = S.peak()
    b1 = S.live(collect=False)
    r["bwd_peak"] = bpk - b0
    r["after_bwd"] = b1 - b0
    gl = [t.grad for t in leaves + params if t.grad is not None]
    r["grads"] = sum(g.storage().nbytes() for g in gl)
    gptrs = {sptr(g) for g in grads}
    r["grad_stolen"] = sum(1 for g in gl if sptr(g) in gptrs)
    del out, outs, allout, gl, grads, ins, leaves
    clear()
    # run A: what stays when the output is dropped but the graph is kept
    ins, leaves = mk_train()
    before = S.live()
    out = call(ins)
    gfs = [t.grad_fn for t in flat(out) if t.grad_fn is not None]
    del out
    r["kept_del_out"] = S.live() - before
    del gfs
    return r


# ---------------------------------------------------------------- expectations (bytes)
# Variables: the variant's shape names, X = bytes of input 0, IN = all inputs,
# OUT = out_bytes (OUTTR in train), P = param bytes, W0 = the first param (weight), B = 4.
EXPECT = {}
NOTES = {}


def rule(names, note, **f):
    for n in names.split("|"):
        EXPECT[n] = dict(f)
        NOTES[n] = note


Z = dict(fwd_transient="0", saved="0", kept_del_out="0", fwd_trans_tr="0")
for b in ("True", "False"):
    rule("nn.Linear 2D bias=%s|nn.Linear 3D bias=%s" % (b, b),
         "saves input and weight (both already live: 0 extra bytes); no scratch in fwd (addmm/matmul write "
         "the output directly, 3D input folded by a view); bwd allocates exactly grad_x + grad_W + grad_b "
         "(no transient)", bwd_peak="X+P", after_bwd="X+P", grads="X+P", **Z)
rule("nn.Conv2d 3x3 s1 p1|nn.Conv2d 3x3 s1 p1 no-bias N=1|nn.Conv1d k3 p1|nn.Conv2d depthwise 3x3 g=C",
     "oneDNN (mkldnn) conv: saves input+weight (0 extra); fwd scratch = max(in + weight, out) (a blocked-format "
     "copy of the input+weight, then of the output); the same in train. bwd peak = 2*in + out + weight "
     "(grad_in, a blocked grad_in, a blocked grad_out) - one variant off by ~2MB, see FAIL lines",
     fwd_transient="max(X+W0,OUT)", fwd_trans_tr="max(X+W0,OUT)", saved="0", kept_del_out="0",
     bwd_peak="2*X+OUT+W0", after_bwd="X+P", grads="X+P")
rule("nn.Conv2d 1x1", "1x1 stride-1 conv does not go to oneDNN here (THNN slow_conv2d, no im2col): no fwd "
     "scratch; bwd peak = grad_in + one sample's grad columns (C*H*W*4 = in/N), before grad_W is made",
     bwd_peak="X+X//N", after_bwd="X+P", grads="X+P", **Z)
rule("nn.Conv2d 7x7 s2 p3", "C_in=3 first-layer conv (oneDNN): fwd scratch = max(in+weight, out) as other convs;"
     " bwd peak NOT explained by a simple formula (3.0 x out and 5.0 x out at the two shapes): budget 5 x out",
     fwd_transient="max(X+W0,OUT)", fwd_trans_tr="max(X+W0,OUT)", saved="0", kept_del_out="0",
     after_bwd="X+P", grads="X+P")
rule("nn.ConvTranspose2d k4 s2 p1", "oneDNN deconv: fwd scratch = 2*in + weight; saves input+weight (0 extra); "
     "bwd peak = 3*in + weight", fwd_transient="2*X+W0", fwd_trans_tr="2*X+W0", saved="0", kept_del_out="0",
     bwd_peak="3*X+W0", after_bwd="X+P", grads="X+P")
rule("nn.BatchNorm2d|nn.BatchNorm1d 2D|nn.BatchNorm1d 3D", "train saves input + per-channel save_mean/"
     "save_invstd (C floats: tiny); no fwd scratch; bwd peak = 2*in (grad_in + one input-sized temporary)",
     bwd_peak="2*X", after_bwd="X", **Z)
rule("nn.LayerNorm", "saves input + mean and rstd (one float each per normalized row: 2*rows*4 bytes), which "
     "no_grad also allocates (transient); bwd peak = grad_in", fwd_transient="2*A*N*4", saved="2*A*N*4",
     kept_del_out="2*A*N*4", fwd_trans_tr="0", bwd_peak="X", after_bwd="X-2*A*N*4")
rule("nn.GroupNorm", "saves input + mean/rstd [N,G] (tiny); no scratch; bwd = grad_in only",
     bwd_peak="X", after_bwd="X", **Z)
rule("nn.ReLU|nn.Sigmoid|nn.Tanh|softmax(dim=-1)|log_softmax(dim=-1)",
     "saves its OUTPUT (kept after del out = out bytes, nothing beyond it); bwd = grad_in only",
     fwd_transient="0", saved="0", kept_del_out="OUTTR", fwd_trans_tr="0", bwd_peak="X", after_bwd="X")
rule("nn.ReLU6|nn.GELU|nn.GELU(approximate='tanh')|nn.SiLU|masked_fill(causal bool [T,S], -inf)|"
     "triu(diagonal=1)|x*0.5|x+1|permute(0,2,3,1).contiguous()|transpose(1,2).reshape(N,-1) (copies)",
     "saves its INPUT (or nothing): 0 extra bytes, the output is not kept; bwd = grad_in only",
     bwd_peak="X", after_bwd="X", **Z)
rule("nn.ReLU(inplace=True) (non-leaf)", "in place: output is the input, saves it (0 new bytes); bwd = grad_in",
     bwd_peak="X", after_bwd="X", **Z)
rule("nn.Dropout(0.1)", "eval: returns the input itself. train: a FLOAT mask (4 bytes/element, already "
     "scaled by 1/(1-p)) is saved, then out = x*mask: fwd peak = 2*in; after backward the mask is freed and "
     "grad_x (in) is made", fwd_transient="0", saved="X", kept_del_out="X", fwd_trans_tr="0", bwd_peak="X",
     after_bwd="0")
rule("nn.Dropout(0.1, inplace=True) (non-leaf)", "as Dropout but the product is written into x: only the "
     "float mask (4 B/element) is new", fwd_transient="0", saved="X", kept_del_out="X", fwd_trans_tr="0",
     bwd_peak="X", after_bwd="0")
rule("nn.MaxPool2d(3,2,1)", "int64 indices (8 B per OUTPUT element = 2*out) made even under no_grad "
     "(transient there), saved in train; bwd = grad_in", fwd_transient="2*OUT", saved="2*OUT",
     kept_del_out="2*OUT", fwd_trans_tr="0", bwd_peak="X", after_bwd="X-2*OUT")
rule("nn.AvgPool2d(2)|nn.AvgPool2d(3,2,1)|nn.AdaptiveAvgPool2d(1)", "saves input only (0 extra); bwd = grad_in",
     bwd_peak="X", after_bwd="X", **Z)
rule("nn.Embedding", "saves the index tensor (an input); bwd makes a DENSE weight grad (V*D*4 = P), "
     "no other scratch", bwd_peak="P", after_bwd="P", grads="P", **Z)
rule("bmm 3D [A,T,K]@[A,K,S]|matmul 4D [A,H,T,K]@[A,H,K,S]|matmul 3D@2D [A,T,K]@[K,S]",
     "saves both inputs (0 extra); bwd = the two input grads", bwd_peak="IN", after_bwd="IN", grads="IN", **Z)
rule("add same shape|mul same shape|add alpha=2|cat([x,y],dim=1)",
     "add/cat save nothing, mul saves both inputs (0 extra); bwd = both grads (2*in); the incoming grad is "
     "copied into each .grad here because the caller holds it", bwd_peak="IN", after_bwd="IN", **Z)
rule("x.add_(y) inplace (non-leaf)", "in place, nothing new; bwd = both grads", bwd_peak="IN", after_bwd="IN", **Z)
rule("add broadcast [N,C,H,W]+[C,1,1]", "bwd: grad for the small operand is a sum (tiny); big grad = in",
     bwd_peak="X", after_bwd="X", **Z)
rule("mul broadcast [N,C,H,W]*[N,C,1,1]", "bwd: the small operand's grad is (grad*x).sum(): one in-sized "
     "temporary; peak = 2*in", bwd_peak="2*X", after_bwd="X", **Z)
rule("flatten(1)|view(N,-1)|reshape(N,-1) contiguous", "a view: nothing allocated; in backward the leaf's .grad "
     "becomes a view of the incoming grad (AccumulateGrad steals it, 0 bytes)", bwd_peak="0", after_bwd="0",
     grads="X", **Z)
rule("transpose(1,2)|permute(0,2,3,1)", "a view: nothing allocated; bwd: the incoming grad arrives transposed, "
     "AccumulateGrad copies it into the leaf's layout (= in bytes)", bwd_peak="X", after_bwd="X", **Z)

rule("x[:,None].expand(N,4,C,H,W) (view)", "a view: nothing in fwd; bwd sums the expanded grad back: "
     "peak = 2*in, leaves grad_x = in", bwd_peak="2*X", after_bwd="X", **Z)
rule("x[:,None].expand(N,4,C,H,W)*2", "mul by a scalar saves nothing; out = 4*in is materialised; bwd: grad*2 "
     "(out bytes) + the sum back to x (in)", bwd_peak="OUTTR+X", after_bwd="X", **Z)
rule("chunk(4,dim=1)|split(16,dim=1)", "views; bwd (all pieces get grads) cats them into one grad_x = in",
     bwd_peak="X", after_bwd="X", **Z)
rule("split(16,dim=1)[0] only", "views; bwd with only the first piece used: zeros are made for the unused "
     "pieces (in - piece) and then cat into grad_x (in): peak = 2*in - piece", bwd_peak="2*X-X*16//C",
     after_bwd="X", **Z)
rule("gelu tanh composite 0.5x(1+tanh(c(x+0.044715x^3)))", "6 elementwise ops: no_grad peak = out + 2*in "
     "scratch; train keeps 3 in-sized tensors (tanh output, 0.5*x, 1+tanh) beyond the output; bwd peak 3*in",
     fwd_transient="2*X", saved="3*X", kept_del_out="3*X", fwd_trans_tr="0", bwd_peak="3*X", after_bwd="-2*X")
rule("F.cross_entropy [N,C] long targets|F.cross_entropy [N,C,T] (seq)", "= log_softmax (in-sized output, "
     "saved; a transient under no_grad) + nll_loss (scalar); bwd: nll grad (in) + log_softmax grad (in) = 2*in "
     "peak, the saved log-probs are freed so after = 0", fwd_transient="X", saved="X", kept_del_out="X",
     fwd_trans_tr="0", bwd_peak="2*X", after_bwd="0")
rule("x.sum()|x.mean()|x.sum(dim=1)|x.mean(dim=(2,3))", "reductions save nothing (shape only); bwd expands "
     "the grad (a view) and AccumulateGrad materialises grad_x = in", bwd_peak="X", after_bwd="X", **Z)
rule("F.interpolate nearest x2|F.interpolate bilinear x2", "saves nothing big (sizes only); bwd = grad_in",
     bwd_peak="X", after_bwd="X", **Z)
ATT = "N*Hd*T*T*4"  # the attention matrix, bytes
rule("nn.MultiheadAttention self, need_weights=False", "A = attention matrix N*heads*T*T*4. no_grad (1.13 "
     "fast path): scratch A + 2*in. train saves A (softmax output) + 5*in (q,k,v from in_proj = 3*in, "
     "scaled q, attn@v); fwd scratch beyond that A - in (pre-softmax scores); bwd peak 2*A - in + E*E*4",
     fwd_transient=ATT + "+2*X", saved=ATT + "+5*X", kept_del_out=ATT + "+5*X", fwd_trans_tr=ATT + "-X",
     bwd_peak="2*" + ATT + "-X+E*E*4", after_bwd="X+P-" + ATT + "-5*X")
rule("nn.MultiheadAttention self, need_weights=True (avg)", "as need_weights=False; the head-averaged weights "
     "[N,T,T] (A/heads) are an extra output; no_grad scratch A + 3*in, the same saved A + 5*in",
     fwd_transient=ATT + "+3*X", saved=ATT + "+5*X", kept_del_out=ATT + "+5*X",
     fwd_trans_tr=ATT + "-X-N*T*T*4", bwd_peak="2*" + ATT + "-X+E*E*4", after_bwd="X+P-" + ATT + "-5*X")
rule("nn.TransformerEncoderLayer batch_first relu", "dropout=0.1 by default, so train keeps FLOAT dropout "
     "masks: saves 3*A (softmax out, its dropout mask, dropout out) + 3*H (H = N*T*FF*4: relu out, mask, "
     "dropout out) + 10*in; no_grad (fast path): scratch A + 2*in; bwd peak: no simple formula (4.2-7.6 x in)",
     fwd_transient=ATT + "+2*X", saved="3*" + ATT + "+3*N*T*FF*4+10*X",
     kept_del_out="3*" + ATT + "+3*N*T*FF*4+10*X", fwd_trans_tr="0")
rule("nn.LSTM 2 layers bidir batch_first (out only)", "CPU LSTM in 1.13 is the native per-timestep cell with "
     "autograd: per layer, per direction, per step it keeps 7*N*H*4 bytes (the [N,4H] gates, c, tanh(c), h); "
     "plus the batch_first input copied to [T,N,I] once per direction of layer 1, plus layer 2's input "
     "[T,N,2H]; no_grad scratch ~5 x out. Approximate: 0.7% (215 KB) short at the 2nd shape", saved="2*2*7*N*H*4*T+2*X+T*N*2*H*4",
     kept_del_out="2*2*7*N*H*4*T+2*X+T*N*2*H*4")
rule("nn.GRU 2 layers bidir batch_first (out only)", "CPU GRU: the same per-step 7*N*H*4 bytes as LSTM "
     "(gates [N,3H], new gate, h-n copy, h), the same input copies", saved="2*2*7*N*H*4*T+2*X+T*N*2*H*4",
     kept_del_out="2*2*7*N*H*4*T+2*X+T*N*2*H*4")



def check(c, r):
    env = dict(r["shape"])
    env.update(X=r["x_bytes"], IN=r["in_bytes"], OUT=r["out_bytes"], OUTTR=r.get("out_bytes_tr", 0),
               P=r["param_bytes"], W0=r["w0_bytes"], B=4)
    res = {}
    for k, f in EXPECT.get(c.name, {}).items():
        want = eval(f, {}, env)
        got = r[k]
        res[k] = [f, want, got, abs(got - want) <= 65536 + 0.002 * max(abs(want), abs(got))]
    return res


KEYS = ["fwd_transient", "saved", "kept_del_out", "fwd_trans_tr", "bwd_peak", "after_bwd", "grads"]


def fmt(c, r):
    if "error" in r:
        return "== %s %s\n   ERROR %s\n" % (c.name, r.get("shape"), r["error"])
    X, O = r["x_bytes"], r["out_bytes"]

    def one(k):
        n = r[k]
        s = "%s=%d (%s" % (k, n, mb(n))
        if X:
            s += ", %.3f x in0" % (n / X)
        if O and O != X:
            s += ", %.3f x out" % (n / O)
        return s + ")"
    lines = ["== %s  %s" % (c.name, " ".join("%s=%s" % kv for kv in r["shape"].items())),
             "   inputs=%s in_bytes=%d (%s) in0=%d  outputs=%s out_bytes=%d (%s) params=%d (%s)" % (
                 r["inputs"], r["in_bytes"], mb(r["in_bytes"]), X, r["outputs"], O, mb(O),
                 r["param_bytes"], mb(r["param_bytes"])),
             "   INFER  alias=%s out_live=%d %s first_call=%d" % (r["alias"], r["out_live"], one("fwd_transient"),
                                                                 r["first_call"]),
             "   TRAIN  alias=%s out_bytes_tr=%d fwd_peak_tr=%d" % (r["alias_tr"], r["out_bytes_tr"], r["fwd_peak_tr"]),
             "          " + one("saved") + "  " + one("kept_del_out"),
             "          " + one("fwd_trans_tr"),
             "          " + one("bwd_peak") + "  " + one("after_bwd"),
             "          " + one("grads") + " grad_stolen=%d" % r["grad_stolen"]]
    for k, (f, want, got, ok) in sorted(r.get("check", {}).items()):
        lines.append("   %s %s = %s -> want %d got %d" % ("ok  " if ok else "FAIL", k, f, want, got))
    note = NOTES.get(c.name, c.note)
    if note:
        lines.append("   note: " + note)
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--out")
    ap.add_argument("--only")
    ap.add_argument("-j", type=int, default=1)
    ap.add_argument("--from-json", help="re-check and re-render an earlier ops.json instead of measuring")
    ap.add_argument("args", nargs="*")
    a = ap.parse_args()
    if a.from_json:
        byname = {c.name: c for c in CASES}
        bad = 0
        for r in json.load(open(a.from_json)):
            c = byname[r["case"]]
            if "error" not in r:
                r["check"] = check(c, r)
                r["note"] = NOTES.get(c.name, c.note)
                bad += sum(1 for x in r["check"].values() if not x[3])
            print(fmt(c, r), end="")
        print("memory_ops: %d formula mismatches" % bad)
        return 1 if bad else 0
    if a.worker:
        c = CASES[int(a.args[0])]
        print(json.dumps(measure(c, c.variants[int(a.args[1])])))
        return 0
    tmp, so = build_shim()
    jobs = [(i, j) for i, c in enumerate(CASES) if not a.only or a.only in c.name
            for j in range(len(c.variants))]
    results, bad = {}, 0
    from concurrent.futures import ThreadPoolExecutor
    header = ("memory_ops: torch %s, CPU, 1 thread, fp32; bytes (MB = 2^20). See the docstring of "
              "tests/conformance/memory_ops.py for the column meanings.\n" % torch.__version__)

    def write():
        if not a.out:
            return
        os.makedirs(a.out, exist_ok=True)
        txt = header + "".join(fmt(CASES[i], results[(i, j)]) for (i, j) in jobs if (i, j) in results)
        with open(os.path.join(a.out, "ops.txt.tmp"), "w") as f:
            f.write(txt)
        os.replace(os.path.join(a.out, "ops.txt.tmp"), os.path.join(a.out, "ops.txt"))
        with open(os.path.join(a.out, "ops.json.tmp"), "w") as f:
            json.dump([results[k] for k in jobs if k in results], f, indent=1)
        os.replace(os.path.join(a.out, "ops.json.tmp"), os.path.join(a.out, "ops.json"))

    print(header, end="")
    with ThreadPoolExecutor(max(1, a.j)) as ex:
        futs = [(k, ex.submit(run_worker, so, os.path.abspath(__file__), [str(k[0]), str(k[1])])) for k in jobs]
        for k, fu in futs:
            r = fu.result()
            c = CASES[k[0]]
            if "error" not in r:
                r["check"] = check(c, r)
                r["note"] = NOTES.get(c.name, c.note)
                bad += sum(1 for x in r["check"].values() if not x[3])
            else:
                bad += 1
                r.setdefault("case", c.name)
                r.setdefault("shape", c.variants[k[1]])
            results[k] = r
            print(fmt(c, r), end="", flush=True)
            write()
    import shutil
    shutil.rmtree(tmp, ignore_errors=True)
    print("memory_ops: %d cases, %d formula mismatches or errors" % (len(jobs), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
