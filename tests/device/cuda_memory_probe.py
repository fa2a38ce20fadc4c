#!/usr/bin/env python3
"""cuda_memory_probe.py - what PyTorch 2.x allocates on a GPU, measured for tinspect's CUDA rules.

Usage (on a machine with an NVIDIA GPU and a python3 whose torch has CUDA):
    python3 tests/device/cuda_memory_probe.py PART OUTFILE [SECONDS]

PART is one of:
  corpus       the memory corpus (memory_conformance.py's CORPUS, default and --full bindings,
               every mode) with max_memory_allocated and the caching allocator's reserved bytes,
               plus the CUDA-only cases: sdpa_decoder.json in bfloat16, the convolution models
               under torch.backends.cudnn.benchmark=True, and the known cases again with cuDNN
               off and with the math attention kernel (what each kernel adds)
  random       memory_random.py's draw (seed 1), each model in inference and training, on CUDA
  profile      the known cases op by op: each aten op's inputs, the bytes its outputs keep and
               the scratch it takes beyond them (the allocator's peak during the op), and what
               each autograd node saves for backward (read from the graph after forward)
  grids        single kernels over grids of shapes: scaled_dot_product_attention (dtype, shape,
               mask, dropout: the backend chosen, what it saves, its scratch),
               MultiheadAttention and TransformerEncoderLayer (the ops each path runs), cuDNN's
               RNN (workspace and reserve), cuDNN's convolutions (workspace forward and
               backward, benchmark off and on)
Writes one JSON document to OUTFILE, rewritten after each case so that a run stopped at its
time limit (SECONDS, default 400) keeps what it measured. Prints a line per case.
"""
import gc
import json
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "conformance"))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

DEADLINE = None
DOC = {}
OUTFILE = None
# PROBE_DRY=1: run on the CPU (torch 1.13 here) with the GPU's counters stubbed at 0, to test the
# script itself before device time is spent on it; the figures of such a run mean nothing
DRY = bool(os.environ.get("PROBE_DRY"))
DEV = "cpu" if DRY else "cuda"
if DRY:
    for _n in ("memory_allocated", "max_memory_allocated", "memory_reserved"):
        setattr(torch.cuda, _n, lambda *a: 0)
    for _n in ("reset_peak_memory_stats", "empty_cache", "init", "synchronize"):
        setattr(torch.cuda, _n, lambda *a: None)
    torch.cuda.max_memory_reserved = lambda *a: 0
    torch.cuda.memory_snapshot = lambda *a: []
    torch.cuda.memory._record_memory_history = lambda *a, **k: None
    torch.cuda.memory._snapshot = lambda *a: {"segments": [], "device_traces": [[{"action": "alloc", "size": 512}]]}


def storage_of(t):
    return t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()


def save():
    tmp = OUTFILE + ".tmp"
    with open(tmp, "w") as f:
        json.dump(DOC, f, separators=(",", ":"))
    os.replace(tmp, OUTFILE)


def out_of_time():
    return time.time() > DEADLINE


def versions():
    p = torch.cuda.get_device_properties(0)
    return {"torch": torch.__version__, "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(), "gpu": torch.cuda.get_device_name(),
            "gpu_memory": p.total_memory, "sm": "%d.%d" % (p.major, p.minor),
            "measured": time.strftime("%Y-%m-%d"), "generator": "tests/device/cuda_memory_probe.py",
            "sdp_enabled": {f: getattr(torch.backends.cuda, f)() for f in (
                "flash_sdp_enabled", "mem_efficient_sdp_enabled", "math_sdp_enabled", "cudnn_sdp_enabled")
                if hasattr(torch.backends.cuda, f)},
            "allow_tf32": [torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32]}


def desc_of(t):
    if torch.is_tensor(t):
        return "%s%s" % (str(t.dtype).replace("torch.", ""), list(t.shape))
    if isinstance(t, (list, tuple)):
        return [desc_of(x) for x in t]
    if isinstance(t, (int, float, bool, str)) or t is None:
        return t
    return type(t).__name__


def storage_bytes(ts):
    seen, total = set(), 0
    for t in ts:
        if torch.is_tensor(t) and t.device.type == DEV:
            key = storage_of(t).data_ptr()
            if key not in seen:
                seen.add(key)
                total += storage_of(t).nbytes()
    return total


def flat(x):
    if torch.is_tensor(x):
        return [x]
    if isinstance(x, (list, tuple)):
        return [y for v in x for y in flat(v)]
    if isinstance(x, dict):
        return [y for v in x.values() for y in flat(v)]
    return []


class OpProfile(TorchDispatchMode):
    """Each aten op: its name, inputs, what it leaves allocated, the scratch above that."""

    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        out = func(*args, **kwargs)
        after = torch.cuda.memory_allocated()
        peak = torch.cuda.max_memory_allocated()
        self.ops.append({"op": str(func), "at": before, "in": desc_of(list(args)),
                         "kw": {k: desc_of(v) for k, v in kwargs.items()},
                         "out": desc_of(out), "kept": after - before, "scratch": peak - after})
        return out


def saved_by_graph(roots):
    """What each autograd node reachable from roots saves: [{node, name, shape, bytes, ptr}]."""
    seen, todo, rows = set(), [r for r in roots if r is not None], []
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        for attr in dir(n):
            if not attr.startswith("_saved_"):
                continue
            try:
                v = getattr(n, attr)
            except Exception as e:  # noqa: BLE001 (a freed buffer, an unsupported type)
                rows.append({"node": type(n).__name__, "name": attr, "error": str(e)[:80]})
                continue
            for t in flat(v):
                if t.device.type != DEV:
                    continue
                rows.append({"node": type(n).__name__, "name": attr[7:], "t": desc_of(t),
                             "bytes": storage_of(t).nbytes(), "ptr": storage_of(t).data_ptr()})
        for nxt, _ in n.next_functions:
            if nxt is not None:
                todo.append(nxt)
    return rows


# ==========================================================================
# corpus
# ==========================================================================
def corpus_specs():
    import memory_conformance as mc
    specs = []
    for full in (False, True):
        for name, path, bind, fbind in mc.CORPUS:
            for mode, opt in mc.MODES:
                specs.append({"case": mc.case_name(name, mode, opt), "model": name, "path": path,
                              "bind": fbind if full else bind, "mode": mode, "optimizer": opt,
                              "full": full})
    mm = "tests/conformance/memory_models/"
    fm = "fixtures/models/"
    extra = [("sdpa_decoder", mm + "sdpa_decoder.json", {"B": 2, "T": 512}, {"B": 4, "T": 2048},
              {"dtype": "bfloat16"})]
    for name, path, bind in (("resnet18", fm + "resnet18.json", {"N": 32}),
                             ("unet_small", fm + "unet_small.json", {"N": 64}),
                             ("mobilenet_v2", fm + "mobilenet_v2.json", {"N": 32}),
                             ("conv1d_audio", mm + "conv1d_audio.json", {"N": 32})):
        extra.append((name + "@benchmark", path, {"N": 16}, bind, {"cudnn_benchmark": True}))
    for name, path, bind, fbind, opts in extra:
        for full in (False, True):
            for mode, opt in mc.MODES:
                s = {"case": mc.case_name(name, mode, opt), "model": name, "path": path,
                     "bind": fbind if full else bind, "mode": mode, "optimizer": opt, "full": full}
                s.update(opts)
                specs.append(s)
    # the causes: the known cases again without the kernel each gap was traced to
    for name, path, bind, fbind in mc.CORPUS:
        if name in ("lstm_tagger", "unet_small"):
            var = {"no_cudnn": True}
        elif name in ("vit_small", "mha_blocks", "transformer_encoder"):
            var = {"math_sdpa": True}
        else:
            continue
        for full in (False, True):
            for mode, opt in (("infer", None), ("train", "adam")):
                s = {"case": mc.case_name(name, mode, opt) + "@" + next(iter(var)), "model": name,
                     "path": path, "bind": fbind if full else bind, "mode": mode, "optimizer": opt,
                     "full": full}
                s.update(var)
                specs.append(s)
    return specs


def run_specs(specs, key):
    import memory_conformance as mc
    DOC[key] = []
    for s in specs:
        if out_of_time():
            DOC.setdefault("skipped", []).append(s["case"])
            continue
        t0 = time.time()
        w = dict(s, device=DEV)
        try:
            res = mc.worker(w)
        except Exception as e:  # noqa: BLE001 (report it and go on)
            res = {"error": "%s: %s" % (type(e).__name__, str(e)[:300])}
        gc.collect()
        torch.cuda.empty_cache()
        torch.backends.cudnn.enabled = True
        for flag in ("enable_flash_sdp", "enable_mem_efficient_sdp", "enable_cudnn_sdp"):
            if hasattr(torch.backends.cuda, flag):
                getattr(torch.backends.cuda, flag)(True)
        res["wall_seconds"] = round(time.time() - t0, 3)
        row = {k: v for k, v in s.items() if k != "desc"}
        row["torch"] = res
        if "desc" in s:
            row["desc"] = s["desc"]
        DOC[key].append(row)
        print("%-44s %-22s %10s MiB  reserved %10s MiB  %.1fs" % (
            s["case"], ",".join("%s=%d" % kv for kv in s["bind"].items()),
            "%.1f" % (res["peak"] / 2 ** 20) if "peak" in res else res.get("error", "?")[:40],
            "%.1f" % (res["reserved_peak"] / 2 ** 20) if "reserved_peak" in res else "-",
            res["wall_seconds"]), flush=True)
        save()


# ==========================================================================
# fresh: each case in a new process, as a user's script runs it
# ==========================================================================
def fresh_one(spec):
    """One case in this (new) process: no warm-up, so the CUDA libraries' own buffers (cuBLAS's
    workspaces) are allocated inside the step as in a user's first step. Absolute figures:
    max_memory_allocated and max_memory_reserved over the whole run, per step and per phase,
    the segments at the end, and the allocator's events of the last step (action, size)."""
    import shapes_conformance as sc
    import state_dict_conformance  # noqa: F401
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = bool(spec.get("cudnn_benchmark"))
    cu = torch.cuda
    with open(os.path.join(ROOT, spec["path"])) as f:
        desc = json.load(f)
    dt = getattr(torch, spec["dtype"]) if spec.get("dtype") else None
    # built on the CPU and moved, as model.to("cuda") moves a user's model: each parameter allocated
    # on the GPU once, in order, tied ones once (to_empty on the GPU would allocate a tied weight
    # twice and leave a freed segment in the reserved figure)
    interp = sc.Interpreter(desc, spec["bind"], "cpu")
    model = interp.build_model()
    with torch.no_grad():
        for m in model.modules():
            for fn in ("reset_parameters", "_reset_parameters"):
                if callable(getattr(m, fn, None)):
                    getattr(m, fn)()
                    break
    inputs = interp.make_inputs()
    if dt is not None:
        model.to(dt)
        inputs = {k: v.to(dt) if torch.is_tensor(v) and v.is_floating_point() else v for k, v in inputs.items()}
    model.to(DEV)
    inputs = {k: v.to(DEV) if torch.is_tensor(v) else v for k, v in inputs.items()}
    interp.device = torch.device(DEV)  # what the graph creates (arange, masks) is made there
    row = {"after_build": cu.memory_allocated(), "reserved_after_build": cu.memory_reserved(),
           "build_peak": cu.max_memory_allocated()}
    params = [p for p in model.parameters() if p.requires_grad]
    opt = None
    if spec["mode"] == "train":
        model.train()
        o = spec["optimizer"]
        opt = (torch.optim.SGD(params, lr=0.01, foreach=False) if o == "sgd" else
               torch.optim.SGD(params, lr=0.01, momentum=0.9, foreach=False) if o == "momentum" else
               torch.optim.Adam(params, lr=1e-3, foreach=False))
    else:
        model.eval()

    def forward():
        return interp.run_graph(model, desc, dict(inputs), None)

    steps = []
    for i in range(4):
        if i == 3:
            cu.memory._record_memory_history(max_entries=400000)
        cu.reset_peak_memory_stats()
        st = {}
        if opt is None:
            with torch.no_grad():
                out = forward()
            st["forward_peak"] = cu.max_memory_allocated()
            del out
        else:
            out = forward()
            ts = [t for t in flat(out) if t.is_floating_point()]
            loss = ts[0].sum()
            for t in ts[1:]:
                loss = loss + t.sum()
            st["forward_peak"] = cu.max_memory_allocated()
            cu.reset_peak_memory_stats()
            loss.backward()
            st["backward_peak"] = cu.max_memory_allocated()
            cu.reset_peak_memory_stats()
            opt.step()
            opt.zero_grad(set_to_none=True)
            st["optimizer_peak"] = cu.max_memory_allocated()
            del out, ts, loss
        st["allocated_after"] = cu.memory_allocated()
        st["reserved_after"] = cu.memory_reserved()
        st["peak"] = max(v for k, v in st.items() if k.endswith("_peak"))
        steps.append(st)
    snap = cu.memory._snapshot()
    cu.memory._record_memory_history(enabled=None)
    codes = {"alloc": 0, "free_requested": 1, "free_completed": 2, "segment_alloc": 3, "segment_free": 4,
             "segment_map": 5, "segment_unmap": 6, "oom": 7, "snapshot": 8}
    trace = []
    for dev in snap.get("device_traces", []):
        for e in dev:
            trace.append([codes.get(e.get("action"), 9), e.get("size", 0), e.get("addr", 0) & 0xffffffffff])
    row["steps"] = steps
    row["segments"] = [[sg["total_size"], sg["allocated_size"], sg["segment_type"] == "small"]
                       for sg in snap.get("segments", [])]
    row["last_step_trace"] = trace
    row["max_allocated"] = max([row["build_peak"]] + [s["peak"] for s in steps])
    row["max_reserved"] = cu.max_memory_reserved()
    row["weights"] = storage_bytes(list(model.parameters()) + list(model.buffers()))
    return row


def libraries_one():
    """What the CUDA libraries allocate through the caching allocator: cuBLAS's workspace on the
    first matmul, another for the autograd thread's stream, cuBLASLt's for addmm."""
    cu = torch.cuda
    out = {}
    x = torch.randn(256, 256, device=DEV, requires_grad=True)
    a0 = cu.memory_allocated()
    y = x @ x
    out["matmul"] = cu.memory_allocated() - a0 - storage_bytes([y])
    a1 = cu.memory_allocated()
    b = torch.randn(256, device=DEV)
    z = torch.addmm(b, x, x)
    out["addmm"] = cu.memory_allocated() - a1 - storage_bytes([z, b])
    a2 = cu.memory_allocated()
    y.sum().backward()
    out["backward"] = cu.memory_allocated() - a2 - storage_bytes([x.grad])
    out["reserved"] = cu.memory_reserved()
    out["segments"] = [[sg["total_size"], sg["allocated_size"], sg["segment_type"] == "small"]
                       for sg in cu.memory_snapshot()]
    return out


def part_fresh():
    import memory_conformance as mc  # noqa: F401
    import subprocess
    import concurrent.futures
    specs = [s for s in corpus_specs() if not (s.get("no_cudnn") or s.get("math_sdpa"))]
    DOC["cases"] = []
    DOC["libraries"] = json.loads(subprocess.run([sys.executable, os.path.abspath(__file__), "libraries_one", "-"],
                                                 stdout=subprocess.PIPE, timeout=120).stdout.decode() or "{}")

    def one(s):
        if out_of_time():
            return s, {"error": "out of time"}
        try:
            p = subprocess.run([sys.executable, os.path.abspath(__file__), "fresh_one", json.dumps(s)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=240)
            if p.returncode:
                return s, {"error": p.stderr.decode(errors="replace").strip().splitlines()[-1][:300]}
            return s, json.loads(p.stdout.decode().strip().splitlines()[-1])
        except Exception as e:  # noqa: BLE001
            return s, {"error": str(e)[:300]}
    jobs = int(os.environ.get("PROBE_JOBS", "10"))
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for s, res in pool.map(one, specs):
            row = dict(s)
            row["torch"] = res
            DOC["cases"].append(row)
            print("fresh %-44s %-20s %s" % (s["case"], ",".join("%s=%d" % kv for kv in s["bind"].items()),
                  "max_allocated %.1f MiB max_reserved %.1f MiB" % (res["max_allocated"] / 2 ** 20,
                  res["max_reserved"] / 2 ** 20) if "max_allocated" in res else res.get("error")), flush=True)
    save()


def part_corpus():
    full = os.environ.get("PROBE_FULL")  # "0": the default bindings only, "1": --full's only
    run_specs([s for s in corpus_specs() if full is None or s["full"] == (full == "1")], "cases")


def part_random():
    import memory_random as mr
    import tempfile
    tmp = tempfile.mkdtemp(prefix="probe-random-")
    specs = []
    for i in range(200):
        name, desc, bind, opt = mr.draw(1, i)
        path = os.path.join(tmp, name + ".json")
        with open(path, "w") as f:
            json.dump(desc, f)
        for mode, o in (("infer", None), ("train", opt)):
            specs.append({"case": "%s/%s" % (name, mode if o is None else "%s-%s" % (mode, o)), "seed": 1,
                          "index": i, "path": os.path.relpath(path, ROOT), "bind": bind, "mode": mode,
                          "optimizer": o, "desc": desc})
    run_specs(specs, "cases")


# ==========================================================================
# profile
# ==========================================================================
def profile_case(path, bind, mode):
    import shapes_conformance as sc
    import state_dict_conformance  # noqa: F401
    torch.manual_seed(0)
    with open(os.path.join(ROOT, path)) as f:
        desc = json.load(f)
    interp = sc.Interpreter(desc, bind, DEV)
    model = interp.build_model()
    inputs = interp.make_inputs()
    base = torch.cuda.memory_allocated()

    def forward():
        return interp.run_graph(model, desc, dict(inputs), None)

    row = {}
    if mode == "infer":
        model.eval()
        with torch.no_grad():
            forward()  # warm-up
            prof = OpProfile()
            with prof:
                out = forward()
        row["ops"] = prof.ops
        del out
    else:
        model.train()
        out = forward()
        sum(t.float().sum() for t in flat(out) if t.is_floating_point()).backward()
        for p in model.parameters():
            p.grad = None
        prof = OpProfile()
        with prof:
            out = forward()
        row["after_forward"] = torch.cuda.memory_allocated() - base
        ts = [t for t in flat(out) if t.is_floating_point()]
        row["saved"] = saved_by_graph([t.grad_fn for t in ts])
        fwd_ops = len(prof.ops)
        with prof:
            loss = ts[0].sum()
            for t in ts[1:]:
                loss = loss + t.sum()
            loss.backward()
        row["ops"] = prof.ops
        row["forward_ops"] = fwd_ops
    del model, inputs
    gc.collect()
    torch.cuda.empty_cache()
    return row


def part_profile():
    import memory_conformance as mc
    DOC["profiles"] = []
    known = ("lstm_tagger", "unet_small", "vit_small", "mha_blocks", "transformer_encoder")
    for full in (False, True):
        for name, path, bind, fbind in mc.CORPUS:
            if name not in known:
                continue
            for mode in ("infer", "train"):
                if out_of_time():
                    return
                t0 = time.time()
                b = fbind if full else bind
                try:
                    row = profile_case(path, b, mode)
                except Exception as e:  # noqa: BLE001
                    row = {"error": "%s: %s" % (type(e).__name__, str(e)[:300])}
                row.update({"model": name, "bind": b, "mode": mode, "full": full})
                DOC["profiles"].append(row)
                print("profile %-22s %-6s %-5s %5d ops %.1fs" % (name, mode, full, len(row.get("ops", [])),
                                                                time.time() - t0), flush=True)
                save()


# ==========================================================================
# grids
# ==========================================================================
def op_run(fn, train):
    """Runs fn() (returning a tensor), profiled; in training its backward too."""
    gc.collect()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    prof = OpProfile()
    with prof:
        out = fn()
    row = {"fwd_peak": max([o["at"] + o["kept"] + o["scratch"] for o in prof.ops] or [base]) - base,
           "after_fwd": torch.cuda.memory_allocated() - base, "fwd_ops": prof.ops}
    if train:
        row["saved"] = saved_by_graph([t.grad_fn for t in flat(out)])
        for r in row["saved"]:
            r.pop("ptr", None)
        g = [torch.ones_like(t) for t in flat(out) if t.requires_grad]
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        prof2 = OpProfile()
        with prof2:
            torch.autograd.backward([t for t in flat(out) if t.requires_grad], g)
        row["bwd_peak"] = max([o["at"] + o["kept"] + o["scratch"] for o in prof2.ops] or [before]) - before
        row["bwd_ops"] = prof2.ops
    del out
    return row


def grid_sdpa(rows):
    shapes = [(2, 8, 128, 64), (4, 16, 512, 64), (1, 16, 2048, 128), (8, 8, 256, 32), (8, 6, 197, 64),
              (1, 8, 1000, 80), (2, 4, 64, 256), (1, 32, 4096, 64)]
    for dt in (torch.bfloat16, torch.float16, torch.float32):
        for (B, H, T, D) in shapes:
            for mask in ("none", "causal", "bool", "float", "bool_pad"):
                for p in (0.0, 0.1):
                    for train in (False, True):
                        if out_of_time():
                            return
                        q, k, v = (torch.randn(B, H, T, D, device=DEV, dtype=dt, requires_grad=train)
                                   for _ in range(3))
                        kw = {"dropout_p": p}
                        if mask == "causal":
                            kw["is_causal"] = True
                        elif mask == "bool":
                            kw["attn_mask"] = torch.ones(T, T, device=DEV, dtype=torch.bool).tril()
                        elif mask == "float":
                            kw["attn_mask"] = torch.zeros(B, 1, T, T, device=DEV, dtype=dt)
                        elif mask == "bool_pad":
                            kw["attn_mask"] = torch.ones(B, 1, 1, T, device=DEV, dtype=torch.bool)
                        try:
                            with torch.set_grad_enabled(train):
                                row = op_run(lambda: F.scaled_dot_product_attention(q, k, v, **kw), train)
                        except Exception as e:  # noqa: BLE001
                            row = {"error": str(e)[:200]}
                        row.update({"kind": "sdpa", "dtype": str(dt)[6:], "shape": [B, H, T, D], "mask": mask,
                                    "dropout": p, "train": train})
                        rows.append(row)
                        del q, k, v, kw


def grid_modules(rows):
    for dt in (torch.float32, torch.bfloat16):
        for kind in ("mha", "mha_weights", "mha_kpm", "mha_seqfirst", "enc", "enc_normfirst", "enc_kpm",
                     "enc_gelu"):
            for train in (False, True):
                if out_of_time():
                    return
                E, H, N, T = 256, 8, 4, 100
                x = torch.randn(N, T, E, device=DEV, dtype=dt)
                kpm = torch.zeros(N, T, dtype=torch.bool, device=DEV)
                kpm[:, T - 10:] = True
                if kind.startswith("mha"):
                    m = nn.MultiheadAttention(E, H, dropout=0.1, batch_first=kind != "mha_seqfirst").to(DEV, dt)
                    if kind == "mha_seqfirst":
                        x = x.transpose(0, 1).contiguous()

                    def fn():
                        return m(x, x, x, need_weights=kind == "mha_weights",
                                 key_padding_mask=kpm if kind == "mha_kpm" else None)[0]
                else:
                    m = nn.TransformerEncoderLayer(E, H, 1024, 0.1, activation="gelu" if kind == "enc_gelu" else "relu",
                                                   batch_first=True, norm_first=kind == "enc_normfirst").to(DEV, dt)

                    def fn():
                        return m(x, src_key_padding_mask=kpm if kind == "enc_kpm" else None)
                m.train(train)
                try:
                    with torch.set_grad_enabled(train):
                        row = op_run(fn, train)
                except Exception as e:  # noqa: BLE001
                    row = {"error": str(e)[:200]}
                row.update({"kind": kind, "dtype": str(dt)[6:], "shape": [N, T, E, H], "train": train})
                rows.append(row)
                del m, x


def rnn_grid():
    """Every mode at 1 and 2 layers, both directions, then 160 random configurations (seed 5)."""
    rng = random.Random(5)
    configs = [(mode, 64, 256, layers, bi, 32, 128, torch.float32, 0.0)
               for mode in ("LSTM", "GRU", "RNN") for layers in (1, 2) for bi in (False, True)]
    for _ in range(160):
        configs.append((rng.choice(["LSTM", "LSTM", "GRU", "RNN"]), rng.choice([16, 64, 100, 256, 512]),
                        rng.choice([32, 64, 128, 200, 256, 512, 1024]), rng.choice([1, 1, 2, 3]),
                        rng.random() < 0.5, rng.choice([1, 3, 8, 16, 32, 64]), rng.choice([1, 7, 16, 64, 128, 300]),
                        rng.choice([torch.float32, torch.float32, torch.float16]), rng.choice([0.0, 0.0, 0.3])))
    return configs


def grid_rnn(rows, configs):
    """Each (mode, input, hidden, layers, bidirectional, N, T, dtype, dropout) in inference and training."""
    for (mode, inp, hid, layers, bi, N, T, dt, drop) in configs:
        for train in (False, True):
            if out_of_time():
                return
            m = getattr(nn, mode)(inp, hid, layers, bidirectional=bi, batch_first=True,
                                  dropout=drop if layers > 1 else 0.0).to(DEV, dt)
            m.train(train)
            x = torch.randn(N, T, inp, device=DEV, dtype=dt, requires_grad=train)
            try:
                with torch.set_grad_enabled(train):
                    row = op_run(lambda: m(x)[0], train)
            except Exception as e:  # noqa: BLE001
                row = {"error": str(e)[:200]}
            row.update({"kind": "rnn", "mode": mode, "input": inp, "hidden": hid, "layers": layers, "bi": bi,
                        "N": N, "T": T, "dtype": str(dt)[6:], "dropout": drop, "train": train})
            rows.append(row)
            del m, x


def conv_grid():
    """220 random convolutions (seed 7); those whose kernel overruns its padded input are left out."""
    rng = random.Random(7)
    configs = []
    for _ in range(220):
        dim = rng.choice([2, 2, 2, 1, 3])
        cin = rng.choice([1, 3, 8, 16, 32, 64, 128, 256, 512])
        groups = 1
        if rng.random() < 0.15:
            groups = cin  # depthwise
        cout = rng.choice([8, 16, 32, 64, 128, 256, 512]) if groups == 1 else cin * rng.choice([1, 1, 2])
        k = rng.choice([1, 3, 3, 5, 7]) if dim != 1 else rng.choice([1, 3, 5, 9, 80])
        stride = rng.choice([1, 1, 2]) if dim != 1 else rng.choice([1, 2, 4])
        dil = rng.choice([1, 1, 1, 2])
        size = {1: rng.choice([64, 1000, 4000, 16000]), 2: rng.choice([7, 14, 28, 56, 112, 224]),
                3: rng.choice([8, 16, 32])}[dim]
        N = rng.choice([1, 4, 16, 32, 64]) if dim != 3 else rng.choice([1, 2, 4])
        dt = rng.choice([torch.float32, torch.float32, torch.float16, torch.bfloat16])
        transpose = dim == 2 and rng.random() < 0.1 and groups == 1
        bench = rng.random() < 0.35
        if size + 2 * (k // 2) < dil * (k - 1) + 1:
            continue
        configs.append((dim, cin, cout, k, stride, dil, groups, size, N, dt, transpose, bench))
    return configs


def grid_conv(rows, configs):
    """Each (dim, cin, cout, k, stride, dilation, groups, size, N, dtype, transpose, benchmark), both modes."""
    for (dim, cin, cout, k, stride, dil, groups, size, N, dt, transpose, bench) in configs:
        for train in (False, True):
            if out_of_time():
                return
            torch.backends.cudnn.benchmark = bench
            cls = {1: nn.Conv1d, 2: nn.ConvTranspose2d if transpose else nn.Conv2d, 3: nn.Conv3d}[dim]
            kw = {} if transpose else {"dilation": dil}
            m = cls(cin, cout, k, stride=stride, padding=k // 2, groups=groups, **kw).to(DEV, dt)
            x = torch.randn(N, cin, *([size] * dim), device=DEV, dtype=dt, requires_grad=train)
            row = {}
            try:
                with torch.set_grad_enabled(train):
                    row["first"] = op_run(lambda: m(x), train)  # with benchmark: the search
                    m.zero_grad(set_to_none=True)
                    x.grad = None
                    row["again"] = op_run(lambda: m(x), train)
            except Exception as e:  # noqa: BLE001
                row["error"] = str(e)[:200]
            row.update({"kind": "conv", "dim": dim, "cin": cin, "cout": cout, "k": k, "stride": stride,
                        "dilation": dil, "groups": groups, "size": size, "N": N, "dtype": str(dt)[6:],
                        "transpose": transpose, "benchmark": bench, "train": train,
                        "reserved": torch.cuda.memory_reserved()})
            rows.append(row)
            del m, x
            torch.backends.cudnn.benchmark = False


def rnn_sweep():
    """One dimension at a time from LSTM(256, 256), N 32, T 128, float32: what the workspace follows."""
    base = dict(mode="LSTM", inp=256, hid=256, layers=1, bi=False, N=32, T=128, dt=torch.float32, drop=0.0)
    vary = [("N", [1, 2, 4, 8, 16, 24, 48, 64, 96, 128, 256]), ("T", [1, 2, 4, 8, 16, 32, 64, 256, 512, 1024]),
            ("hid", [32, 64, 96, 128, 160, 192, 320, 384, 512, 768, 1024, 1536, 2048]),
            ("inp", [16, 64, 100, 128, 512, 1024]), ("layers", [2, 3, 4]), ("bi", [True]),
            ("dt", [torch.float16, torch.bfloat16])]
    out = [base]
    for mode in ("LSTM", "GRU", "RNN"):
        for key, values in vary:
            for v in values:
                c = dict(base, mode=mode)
                c[key] = v
                out.append(c)
        for n, t in ((8, 512), (64, 16), (128, 64), (16, 1024)):
            out.append(dict(base, mode=mode, N=n, T=t))
    return [(c["mode"], c["inp"], c["hid"], c["layers"], c["bi"], c["N"], c["T"], c["dt"], c["drop"]) for c in out]


def conv_sweep():
    """One dimension at a time from Conv2d(64, 64, 3, padding 1) on 32 x 64 x 56 x 56, float32, benchmark off."""
    base = dict(dim=2, cin=64, cout=64, k=3, stride=1, dil=1, groups=1, size=56, N=32, dt=torch.float32,
                transpose=False, bench=False)
    vary = [("N", [1, 2, 4, 8, 16, 64, 128, 256]), ("cin", [3, 8, 16, 32, 128, 256, 512]),
            ("cout", [8, 16, 32, 128, 256, 512]), ("size", [7, 14, 28, 112, 224]), ("k", [1, 5, 7]),
            ("stride", [2]), ("dil", [2]), ("groups", [2, 4, 64]), ("dt", [torch.float16, torch.bfloat16])]
    out = [base]
    for key, values in vary:
        for v in values:
            c = dict(base)
            c[key] = v
            if key == "groups" and v == 64:
                c["cout"] = 64
            out.append(c)
    for c in list(out):  # the same under benchmark mode
        out.append(dict(c, bench=True))
    for n in (1, 8, 32, 128):  # 1x1 and a wide 3x3, both modes
        for bench in (False, True):
            out.append(dict(base, k=1, N=n, bench=bench))
            out.append(dict(base, cin=256, cout=256, size=28, N=n, bench=bench))
    return [(c["dim"], c["cin"], c["cout"], c["k"], c["stride"], c["dil"], c["groups"], c["size"], c["N"], c["dt"],
             c["transpose"], c["bench"]) for c in out]


def part_sweeps():
    global DEADLINE
    end, start = DEADLINE, time.time()
    DEADLINE = start + 0.4 * (end - start)
    DOC["rnn"] = []
    grid_rnn(DOC["rnn"], rnn_sweep())
    print("sweep rnn %d rows %.1fs" % (len(DOC["rnn"]), time.time() - start), flush=True)
    save()
    DEADLINE = end
    DOC["conv"] = []
    grid_conv(DOC["conv"], conv_sweep())
    print("sweep conv %d rows %.1fs" % (len(DOC["conv"]), time.time() - start), flush=True)


def part_grids():
    global DEADLINE
    end = DEADLINE
    start = time.time()
    share = 0.0
    only = os.environ.get("PROBE_GRIDS", "sdpa,modules,rnn,conv").split(",")
    for name, fn, part in (("sdpa", grid_sdpa, 0.25), ("modules", grid_modules, 0.1),
                           ("rnn", lambda rows: grid_rnn(rows, rnn_grid()), 0.3),
                           ("conv", lambda rows: grid_conv(rows, conv_grid()), 0.35)):
        share += part  # each grid its own part of the time: a slow one leaves the others theirs
        if name not in only:
            continue
        DEADLINE = min(end, start + share * (end - start))
        DOC[name] = []
        t0 = time.time()
        fn(DOC[name])
        print("grid %-8s %4d rows %.1fs" % (name, len(DOC[name]), time.time() - t0), flush=True)
        save()


def main():
    global DEADLINE, OUTFILE
    if sys.argv[1] in ("fresh_one", "libraries_one"):  # a child of part_fresh: one JSON line on stdout
        os.chdir(ROOT)
        res = fresh_one(json.loads(sys.argv[2])) if sys.argv[1] == "fresh_one" else libraries_one()
        print(json.dumps(res, separators=(",", ":")))
        return
    part, OUTFILE = sys.argv[1], sys.argv[2]
    DEADLINE = time.time() + (float(sys.argv[3]) if len(sys.argv) > 3 else 400)
    os.chdir(ROOT)
    torch.cuda.init()
    DOC.update(versions() if not DRY else {"dry": True})
    DOC["part"] = part
    save()
    {"corpus": part_corpus, "random": part_random, "profile": part_profile, "grids": part_grids,
     "fresh": part_fresh, "sweeps": part_sweeps}[part]()
    DOC["complete"] = not out_of_time() and "skipped" not in DOC
    save()


if __name__ == "__main__":
    main()
