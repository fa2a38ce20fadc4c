#!/usr/bin/python3
"""memory_optim.py - what PyTorch 1.13's optimizers and the pieces of a training step
allocate on the CPU.

Usage: /usr/bin/python3 tests/conformance/memory_optim.py [--out DIR] [--only SUBSTR] [-j N]

Uses the team's LD_PRELOAD allocation tracker (tests/tools/memshim.c, built here
into a temporary directory), one thread, each measurement in a fresh process.

Optimizers: for two models of Linear layers (M1 = 8 x Linear(2048,2048): 8 equal
weights, 134 MB; M2 = 4 x Linear(1024,1024) + Linear(1024,16384): one 64 MiB
weight next to 4 MiB ones, to tell "max over params" from "sum over params"),
with every .grad present (random), each optimizer x foreach=False/True:
  state        live after step 1 - live before step 1 (the optimizer state)
  peak1        peak during step 1 - live before it
  trans1       peak during step 1 - live after it (temporaries beyond the state)
  peak2/trans2 the same for step 2 (state already there)
Pieces of a step (M1, batch 64): how backward first allocates .grad (steal or
copy), the second backward (accumulation), out.sum() as the loss,
zero_grad(set_to_none=True/False).
Each formula in EXPECT is checked on both models (tolerance 64 KiB + 0.2%).
Writes DIR/optim.txt and DIR/optim.json. Exit 0, 1 on a mismatch, 77 without torch.
"""
import argparse
import json
import os
import sys

try:
    import torch
    import torch.nn as nn
except ImportError:
    print("memory optim: skipped (no torch for %s)" % sys.executable)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from memshim_run import Shim, build_shim, run_worker, mb  # noqa: E402


def model(k):
    if k == "M1":
        return nn.Sequential(*[nn.Linear(2048, 2048) for _ in range(8)])
    return nn.Sequential(*[nn.Linear(1024, 1024) for _ in range(4)], nn.Linear(1024, 16384))


MODELS = {"M1": "8 x Linear(2048,2048)", "M2": "4 x Linear(1024,1024) + Linear(1024,16384)"}

OPTS = []
for fe in (False, True):
    OPTS += [
        ("SGD", dict(lr=0.01)),
        ("SGD", dict(lr=0.01, momentum=0.9)),
        ("SGD", dict(lr=0.01, momentum=0.9, nesterov=True)),
        ("SGD", dict(lr=0.01, momentum=0.9, weight_decay=1e-4)),
        ("Adam", dict(lr=1e-3)),
        ("Adam", dict(lr=1e-3, weight_decay=0.01)),
        ("Adam", dict(lr=1e-3, amsgrad=True)),
        ("AdamW", dict(lr=1e-3)),
        ("Adagrad", dict(lr=0.01)),
        ("RMSprop", dict(lr=0.01)),
        ("RMSprop", dict(lr=0.01, momentum=0.9)),
        ("RMSprop", dict(lr=0.01, centered=True)),
    ]
    OPTS = OPTS[:len(OPTS) - 12] + [(n, dict(kw, foreach=fe)) for n, kw in OPTS[len(OPTS) - 12:]]
OPTS.append(("Adam", dict(lr=1e-3, fused=True)))


def opt_name(n, kw):
    return "%s(%s)" % (n, ", ".join("%s=%s" % kv for kv in kw.items() if kv[0] != "lr"))


# Formulas in bytes: P = all param bytes, PMAX = the largest param.
EXPECT = {}
NOTES = {}


def orule(names, note, **f):
    for fe in ("False", "True"):
        for n in names.split("|"):
            k = n.replace(")", "%sforeach=%s)" % (", " if "(" in n and not n.endswith("()") else "", fe))
            k = k.replace("(, ", "(")
            EXPECT[k] = {m: v[fe == "True"] if isinstance(v, tuple) else v for m, v in f.items()}
            NOTES[k] = note[fe == "True"]


orule("SGD()", ("no state, no temporaries", "no state, no temporaries"),
      ctor="0", state="0", trans1="0", trans2="0")
orule("SGD(momentum=0.9)", ("momentum_buffer = clone(grad) at step 1 (P); in place afterwards",) * 2,
      ctor="0", state="P", trans1="0", trans2="0")
orule("SGD(momentum=0.9, nesterov=True)", ("state P; for-loop: grad.add(buf) is a new tensor per param: "
      "temporaries = PMAX", "state P; foreach nesterov adds into the grads in place: no temporaries"),
      ctor="0", state="P", trans1=("PMAX", "0"), trans2=("PMAX", "0"))
orule("SGD(momentum=0.9, weight_decay=0.0001)", ("state P; weight decay grad.add(param) is a new tensor per "
      "param: PMAX", "state P; foreach weight decay makes a new list of all grads: P"),
      ctor="0", state="P", trans1=("PMAX", "P"), trans2=("PMAX", "P"))
orule("Adam()|AdamW()", ("exp_avg + exp_avg_sq = 2P (+ a 1-element step tensor per param); for-loop "
      "temporaries: denom = (exp_avg_sq.sqrt() / bc2).add_(eps) -> 2 x the param's size, max over params = "
      "2*PMAX", "state 2P; foreach temporaries: sqrt and div over the whole list = 2P"),
      ctor="0", state="2*P", trans1=("2*PMAX", "2*P"), trans2=("2*PMAX", "2*P"))
orule("Adam(weight_decay=0.01)", ("state 2P; for-loop: grad.add(param) adds one more param-size temporary: "
      "3*PMAX", "state 2P; foreach: 2P (the weight-decayed grad list is freed before the sqrt/div pair peaks)"),
      ctor="0", state="2*P", trans1=("3*PMAX", "2*P"), trans2=("3*PMAX", "2*P"))
orule("Adam(amsgrad=True)", ("state 3P (max_exp_avg_sq); temporaries 2*PMAX", "state 3P; temporaries 2P"),
      ctor="0", state="3*P", trans1=("2*PMAX", "2*P"), trans2=("2*PMAX", "2*P"))
orule("Adagrad()", ("the state 'sum' (P) is made in the CONSTRUCTOR (full_like(p, initial_accumulator_value)), "
      "not at step 1; for-loop temporaries: std = sum.sqrt().add_(eps): PMAX", "state P at construction; foreach "
      "temporaries 3P"), ctor="P", state="0", trans1=("PMAX", "3*P"), trans2=("PMAX", "3*P"))
orule("RMSprop()", ("square_avg = P; for-loop temporary avg = square_avg.sqrt().add_(eps): PMAX",
      "state P; foreach temporaries P"), ctor="0", state="P", trans1=("PMAX", "P"), trans2=("PMAX", "P"))
orule("RMSprop(momentum=0.9)|RMSprop(centered=True)", ("square_avg + momentum_buffer (or grad_avg) = 2P; "
      "temporaries PMAX", "state 2P; foreach temporaries P"), ctor="0", state="2*P", trans1=("PMAX", "P"),
      trans2=("PMAX", "P"))


def measure_opt(i, mk):
    torch.manual_seed(0)
    torch.set_num_threads(1)
    S = Shim()
    n, kw = OPTS[i]
    m = model(mk)
    params = list(m.parameters())
    r = {"opt": opt_name(n, kw), "model": mk, "P": sum(p.numel() * 4 for p in params),
         "PMAX": max(p.numel() * 4 for p in params), "nparams": len(params)}
    for p in params:
        p.grad = torch.randn_like(p)
    try:
        c0 = S.live()
        o = getattr(torch.optim, n)(params, **kw)
        before = S.live()
        r["ctor"] = before - c0
        S.reset()
        o.step()
    except Exception as e:  # e.g. fused=True on the CPU
        r["error"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0])
        return r
    pk, after = S.peak(), S.live(collect=False)
    r["state"], r["peak1"], r["trans1"] = after - before, pk - before, pk - after
    b2 = S.live()
    S.reset()
    o.step()
    pk, after = S.peak(), S.live(collect=False)
    r["peak2"], r["trans2"], r["growth2"] = pk - b2, pk - after, after - b2
    r["state_tensors"] = {k: [tuple(v.shape) for v in o.state[params[0]].values() if torch.is_tensor(v)]
                          for k in ["param0"]}
    return r


def measure_pieces(mk):
    torch.manual_seed(0)
    torch.set_num_threads(1)
    S = Shim()
    m = model(mk)
    params = list(m.parameters())
    P = sum(p.numel() * 4 for p in params)
    r = {"model": mk, "P": P, "PMAX": max(p.numel() * 4 for p in params)}
    x = torch.randn(64, params[0].shape[1])
    # warm-up
    m(x).sum().backward()
    m.zero_grad(set_to_none=True)
    # 1: first backward, loss = out.sum()
    out = m(x)
    loss = out.sum()
    b0 = S.live()
    S.reset()
    loss.backward()
    pk, b1 = S.peak(), S.live(collect=False)
    r["first_bwd_sum_peak"], r["first_bwd_sum_after"] = pk - b0, b1 - b0
    r["grad_bytes"] = sum(p.grad.storage().nbytes() for p in params)
    r["grad_layout_same"] = all(p.grad.stride() == p.stride() for p in params)
    del out, loss
    # 2: second backward: accumulation into existing .grad
    out = m(x)
    loss = out.sum()
    b0 = S.live()
    S.reset()
    loss.backward()
    pk, b1 = S.peak(), S.live(collect=False)
    r["second_bwd_peak"], r["second_bwd_after"] = pk - b0, b1 - b0
    del out, loss
    # 3: zero_grad(set_to_none=False) then True
    b0 = S.live()
    m.zero_grad(set_to_none=False)
    r["zero_grad_false_delta"] = S.live() - b0
    b0 = S.live()
    m.zero_grad(set_to_none=True)
    r["zero_grad_true_delta"] = S.live() - b0
    # 4: first backward with a preallocated ones gradient instead of .sum()
    out = m(x)
    g = torch.ones_like(out)
    b0 = S.live()
    S.reset()
    out.backward(g)
    pk, b1 = S.peak(), S.live(collect=False)
    r["first_bwd_ones_peak"], r["first_bwd_ones_after"] = pk - b0, b1 - b0
    m.zero_grad(set_to_none=True)
    del out, g
    # 5: steal or copy? a leaf w: (w*2).sum().backward() -> MulBackward makes a fresh
    # contiguous grad of w's layout: AccumulateGrad can keep it
    w = torch.randn(4096, 2048, requires_grad=True)
    W = w.numel() * 4
    r["W"] = W
    y = (w * 2).sum()
    b0 = S.live()
    S.reset()
    y.backward()
    pk, b1 = S.peak(), S.live(collect=False)
    r["leaf_mul_bwd_peak_over_W"], r["leaf_mul_bwd_after_over_W"] = (pk - b0) / W, (b1 - b0) / W
    w.grad = None
    # the gradient arrives as a transposed (non-contiguous) tensor: w.t() used in a matmul
    a = torch.randn(8, 4096)
    y = (a @ w).sum()  # grad of w = a.t() @ grad: contiguous, fresh
    b0 = S.live()
    S.reset()
    y.backward()
    pk, b1 = S.peak(), S.live(collect=False)
    r["leaf_matmul_bwd_peak_over_W"], r["leaf_matmul_bwd_after_over_W"] = (pk - b0) / W, (b1 - b0) / W
    w.grad = None
    wt = torch.randn(2048, 4096, requires_grad=True)  # used transposed, like nn.Linear's weight
    y = (a @ wt.t()).sum()
    b0 = S.live()
    S.reset()
    y.backward()
    pk, b1 = S.peak(), S.live(collect=False)
    r["leaf_t_matmul_bwd_peak_over_W"], r["leaf_t_matmul_bwd_after_over_W"] = (pk - b0) / W, (b1 - b0) / W
    r["leaf_t_grad_contig"] = wt.grad.is_contiguous()
    # the gradient is the caller's tensor, still referenced: AccumulateGrad must copy
    w.grad = None
    y = w * 1.0
    g = torch.randn_like(y)
    b0 = S.live()
    S.reset()
    y.backward(g)
    pk, b1 = S.peak(), S.live(collect=False)
    r["leaf_mul1_given_grad_peak_over_W"], r["leaf_mul1_given_grad_after_over_W"] = (pk - b0) / W, (b1 - b0) / W
    w.grad = None
    y = w.view(-1)  # ViewBackward hands on a view of g: shares g's storage
    g = torch.randn_like(y)
    b0 = S.live()
    S.reset()
    y.backward(g)
    pk, b1 = S.peak(), S.live(collect=False)
    r["leaf_view_given_grad_peak_over_W"], r["leaf_view_given_grad_after_over_W"] = (pk - b0) / W, (b1 - b0) / W
    r["leaf_view_given_grad_shares_g"] = w.grad.storage().data_ptr() == g.storage().data_ptr()
    return r


def fmt_opt(r):
    if "error" in r:
        return "%-58s %s  ERROR %s\n" % (r["opt"], r["model"], r["error"])
    P, PM = r["P"], r["PMAX"]

    def f(k):
        v = r[k]
        return "%s=%d (%s = %.3f P, %.3f PMAX)" % (k, v, mb(v), v / P, v / PM)
    s = "%-58s %s P=%d (%s) PMAX=%d\n" % (r["opt"], r["model"], P, mb(P), PM)
    s += "   " + f("ctor") + "\n"
    s += "   " + f("state") + "  " + f("peak1") + "  " + f("trans1") + "\n"
    s += "   " + f("peak2") + "  " + f("trans2") + "  growth2=%d\n" % r["growth2"]
    for k, (fo, want, got, ok) in sorted(r.get("check", {}).items()):
        s += "   %s %s = %s -> want %d got %d\n" % ("ok  " if ok else "FAIL", k, fo, want, got)
    if r.get("note"):
        s += "   note: %s\n" % r["note"]
    return s


def fmt_pieces(r):
    if "error" in r:
        return "pieces %s ERROR %s\n" % (r.get("model"), r["error"])
    P = r["P"]
    s = "pieces of a step, model %s = %s, P=%d (%s), batch 64\n" % (r["model"], MODELS[r["model"]], P, mb(P))
    for k, v in r.items():
        if k in ("model", "P"):
            continue
        if isinstance(v, int) and not isinstance(v, bool) and abs(v) > 4096:
            s += "   %-36s %d (%s = %.4f P)\n" % (k, v, mb(v), v / P)
        else:
            s += "   %-36s %s\n" % (k, v)
    return s



def check(r):
    res = {}
    env = dict(P=r["P"], PMAX=r["PMAX"], S=r.get("state", 0), N=r.get("nparams", 0))
    for k, fo in EXPECT.get(r["opt"], {}).items():
        want = eval(fo, {}, env)
        got = r[k]
        res[k] = [fo, want, got, abs(got - want) <= 65536 + 0.002 * max(abs(want), abs(got))]
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--out")
    ap.add_argument("--only")
    ap.add_argument("-j", type=int, default=1)
    ap.add_argument("args", nargs="*")
    a = ap.parse_args()
    if a.worker:
        if a.args[0] == "pieces":
            print(json.dumps(measure_pieces(a.args[1])))
        else:
            print(json.dumps(measure_opt(int(a.args[0]), a.args[1])))
        return 0
    tmp, so = build_shim()
    jobs = [("pieces", mk) for mk in MODELS] if not a.only or a.only in "pieces" else []
    jobs += [(str(i), mk) for i, (n, kw) in enumerate(OPTS) if not a.only or a.only in opt_name(n, kw)
             for mk in MODELS]
    header = ("memory_optim: torch %s, CPU, 1 thread, fp32; bytes (MB = 2^20); P = bytes of all params, "
              "PMAX = the largest param.\nModels: %s\n" % (torch.__version__, "; ".join(
                  "%s = %s" % kv for kv in MODELS.items())))
    results, bad = {}, 0

    def write():
        if not a.out:
            return
        os.makedirs(a.out, exist_ok=True)
        txt = header + "".join((fmt_pieces if k[0] == "pieces" else fmt_opt)(results[k]) for k in jobs if k in results)
        for name, data in (("optim.txt", txt), ("optim.json", json.dumps([results[k] for k in jobs if k in results], indent=1))):
            with open(os.path.join(a.out, name + ".tmp"), "w") as f:
                f.write(data)
            os.replace(os.path.join(a.out, name + ".tmp"), os.path.join(a.out, name))

    print(header, end="")
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max(1, a.j)) as ex:
        futs = [(k, ex.submit(run_worker, so, os.path.abspath(__file__), list(k))) for k in jobs]
        for k, fu in futs:
            r = fu.result()
            if k[0] == "pieces":
                r.setdefault("model", k[1])
                bad += "error" in r
                print(fmt_pieces(r), end="", flush=True)
            else:
                n, kw = OPTS[int(k[0])]
                r.setdefault("opt", opt_name(n, kw))
                r.setdefault("model", k[1])
                if "error" not in r:
                    r["check"] = check(r)
                    r["note"] = NOTES.get(r["opt"], "")
                    bad += sum(1 for x in r["check"].values() if not x[3])
                elif "fused" not in r["opt"]:
                    bad += 1
                print(fmt_opt(r), end="", flush=True)
            results[k] = r
            write()
    import shutil
    shutil.rmtree(tmp, ignore_errors=True)
    print("memory_optim: %d measurements, %d formula mismatches or errors" % (len(jobs), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
