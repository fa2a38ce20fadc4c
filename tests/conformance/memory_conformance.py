#!/usr/bin/env python3
"""
Conformance test: `tinspect memory` against what PyTorch 1.13 really allocates on the CPU.

Usage:  /usr/bin/python3 tests/conformance/memory_conformance.py [./tinspect] [options]

For each model of the corpus (CORPUS below: fixtures/models/*.json and
tests/conformance/memory_models/*.json at realistic sizes) and each mode
(`infer`, `train` with `momentum`, `train` with `adam`), a worker process
started with LD_PRELOAD=memshim.so (tests/tools/memshim.c, built into a
temporary directory at run time) and OMP_NUM_THREADS=1:

  1. imports torch, torch.set_num_threads(1), runs a small warm-up op (so
     that lazy library buffers exist), and takes the baseline B = live bytes;
  2. builds the model on the CPU from the description with the interpreter of
     shapes_conformance.py (TransformerEncoder/Decoder stacks as
     state_dict_conformance.py builds them), initialises it (each module's
     reset_parameters), and makes the inputs as the interpreter does (zeros:
     integer inputs are valid indices);
  3. infer: model.eval(), forward under torch.no_grad().
     train: model.train(), SGD(lr=0.01, momentum=0.9) or Adam(lr=1e-3), both
     foreach=False (the 1.13 CPU default); one step is forward, loss = the sum
     of .sum() of every floating output tensor (tuples flattened),
     loss.backward(), opt.step(), opt.zero_grad(set_to_none=True). The
     outputs and the loss are locals of the step: alive until it returns;
  4. two warm-up steps, then two measured steps. Measured step 1: memshim
     peak := live just before the call, peak read after it. Measured step 2:
     the same, with the peak reset at the start of each phase (forward + loss,
     backward, optimizer step + zero_grad) and read at its end, which gives the
     breakdown; its whole-step peak is the largest phase peak (exactly the
     peak a single reset would give). `peak` is step 1's peak minus B: it
     includes weights, buffers, inputs, optimizer state, gradients,
     activations and temporaries. Both steps are reported; they must agree
     within 1 % (a NOTE otherwise).

Also recorded (exact, from the tensors, not from memshim):
  weights          bytes of the unique storages of parameters and buffers
                   (a tied weight counted once);
  optimizer_state  sum of the bytes of every tensor in opt.state, Adam's 0-dim
                   float32 `step` tensors included (4 B per parameter: below
                   memshim's 4 KiB threshold, so invisible in `peak`, but a real
                   tensor of the optimizer's state_dict); opt_state_no_step is
                   the same without them;
  gradients        bytes of the unique .grad tensors after backward;
  live_before      live bytes just before the measured step, minus B.

Then runs `tinspect memory FILE --bind K=V ... --mode infer|train
[--optimizer momentum|adam] --device cpu [--cpu-isa ISA] --json` and reads the top-level
integer keys peak, weights, gradients, optimizer_state, activations, and peak_range.
Fails a case when |tinspect - torch| / torch > 10 % for peak (5 % on cuda, where a case beyond
it passes only inside the range a covered uncertainty such as cudnn-workspace gives, and says
so), when torch's peak lies
outside tinspect's peak_range (low, high) - above a high end tinspect itself leaves
open (high_open, an uncertainty not covered such as cudnn-workspace) is a NOTE and
counted apart - or when weights or optimizer_state differ at all from the exact values
above (a tinspect optimizer_state equal to opt_state_no_step fails with a message
saying so). A case of CPU_KNOWN that fails any of these is "known"; the GPU has none.
gradients is compared too (a NOTE when it differs). Fails the run when the median peak
error is over 5 %. When the binary has no `memory` command (exit 2, "not a tinspect
command"), prints PyTorch's figures only and marks the cases "measured only" (not
failures).

Like with like: PyTorch's CPU convolutions are oneDNN's, whose kernels (and
their scratch) depend on the processor's instruction set, which oneDNN reads
with cpuid and lowers to ONEDNN_MAX_CPU_ISA when that is set; a live run
leaves tinspect to read the same (no --cpu-isa: the host's, at most
ONEDNN_MAX_CPU_ISA), and prints and records the set it assumed (--json:
cpu_isa, threads). A --measured FILE measured on the CPU carries the set and
the thread count it was taken with, and tinspect is run with that --cpu-isa.

Prints one line per case: model, mode, torch peak MiB, tinspect peak MiB,
error %. Exits 0 with "skipped" when torch is not importable.

Runtime of the default run (31 cases): about 235 s of CPU in the workers,
4 to 5 minutes on two idle cores; 9 minutes measured with the two cores
shared by other jobs (load average 7 to 8). --full takes much longer.

Options:
  --only SUBSTR  run only the cases whose name ("resnet18/train-adam") contains SUBSTR
  --json OUT     write every measurement (and tinspect's answers) to OUT
  --table OUT    write the measured table to OUT, rewritten after every case
  --torch-only   no tinspect: measure and print PyTorch's figures only
  --full         the realistic bindings of the issue (CORPUS's last column): GPT-2
                 at T=256, encoders at batch 8, the MLP at batch 256 (about 30+
                 minutes with the reference BLAS; the default run is about 6)
  --bind NAME=N  override the binding of NAME in every case that has it (a
                 quick run: --bind N=2 --bind T=16 --bind B=1)
  -v             print the breakdown of each case

With --device cuda, MEMCONF_NO_CUDNN=1 in the environment turns cuDNN off and
MEMCONF_MATH_SDPA=1 leaves scaled_dot_product_attention its math kernel: the
measurements that tell what a kernel adds (tests/device/cuda_memory_probe.py records such runs).
"""
import argparse
import concurrent.futures
import ctypes
import gc
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import memshim_run  # need_torch, uniq_bytes

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
MEMSHIM_SRC = os.path.join(ROOT, "tests", "tools", "memshim.c")
MIB = 1024.0 * 1024.0

PEAK_TOLERANCE = 0.10
MEDIAN_TOLERANCE = 0.05
NOISE_TOLERANCE = 0.01

# The corpus: (name, description relative to the repository root, bindings of the default
# run, bindings of --full). The default bindings keep the whole run near 6 minutes on two
# cores with torch 1.13's Debian build, whose CPU matmul is the reference (netlib) BLAS at
# about 5 GFLOP/s on one thread; --full uses the realistic sizes of the issue (ResNet at
# batch 16 and 224x224, GPT-2 at sequence 256, batch 8 for the encoders, an MLP at batch
# 256), which take several times longer there. See memory_models/README.md.
FM = "fixtures/models/"
MM = "tests/conformance/memory_models/"
CORPUS = [
    ("resnet18", FM + "resnet18.json", {"N": 16}, {"N": 16}),
    ("mobilenet_v2", FM + "mobilenet_v2.json", {"N": 16}, {"N": 16}),
    ("gpt2_small", FM + "gpt2_small.json", {"B": 1, "T": 16}, {"B": 1, "T": 256}),
    ("vit_small", FM + "vit_small.json", {"N": 1}, {"N": 8}),
    ("lstm_tagger", FM + "lstm_tagger.json", {"N": 16, "T": 64}, {"N": 32, "T": 128}),
    ("unet_small", FM + "unet_small.json", {"N": 64}, {"N": 64}),
    ("mlp_large", MM + "mlp_large.json", {"N": 32}, {"N": 256}),
    ("conv1d_audio", MM + "conv1d_audio.json", {"N": 16}, {"N": 32}),
    ("mha_blocks", MM + "mha_blocks.json", {"N": 1, "T": 128}, {"N": 8, "T": 256}),
    ("transformer_encoder", MM + "transformer_encoder.json", {"N": 1, "T": 64}, {"N": 8, "T": 256}),
    ("llama_decoder", MM + "llama_decoder.json", {"B": 1, "T": 64}, {"B": 2, "T": 512}),
]
MODES = [("infer", None), ("train", "momentum"), ("train", "adam")]
# Left out of the default run for time (--full runs them): the optimizer changes only the
# optimizer state and the step's temporaries, which the other models cover.
NOT_IN_DEFAULT_RUN = {"gpt2_small/train-momentum", "vit_small/train-momentum"}

# On a GPU (PyTorch 2.x), every case is held to 5 % of max_memory_allocated (CUDA_TOLERANCE), with
# no case left out. Where the kernel's memory is the library's own choice (cuDNN's convolution engines,
# its RNN workspace), the estimate says so with a covered uncertainty and a range: a case beyond 5 %
# passes only when the measurement lies inside that range, and is reported with the cause
# (ranged_cause); any other case beyond 5 % fails.
CUDA_TOLERANCE = 0.05


# On the CPU, a case whose measurement lies outside the estimate's range (the rules' 5 % band) for a
# cause not yet found: reported "known", with what was measured.
CPU_KNOWN = {}  # none: U-Net training, 5.0 % under when the range came, is 4.4 % under and inside it now


def known_gap(name, device):
    """Why a case of this device is a known miss (CPU_KNOWN; the GPU has none), or None."""
    return next((why for k, why in (CPU_KNOWN if device == "cpu" else {}).items() if name.startswith(k)), None)


def ranged_cause(doc, measured):
    """The uncertainties (besides the rules' own tolerance) whose range holds a measurement beyond the
    tolerance, as "name: why", or None when the measurement lies outside the range or no such
    uncertainty widened it."""
    rng = doc.get("peak_range") if isinstance(doc, dict) else None
    if not isinstance(rng, dict) or not rng.get("low", 1) <= measured <= rng.get("high", 0):
        return None
    causes = ["%s: %s" % (u.get("name"), u.get("why")) for u in rng.get("uncertain", [])
              if u.get("covered") and u.get("name") != "rules"]
    return "; ".join(causes) or None


def case_name(model, mode, opt):
    return "%s/%s" % (model, mode if opt is None else "%s-%s" % (mode, opt))


# ==========================================================================
# Worker: runs in a process with LD_PRELOAD=memshim.so; measures one case
# ==========================================================================
def worker(spec):
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)
    device = spec.get("device", "cpu")
    if device == "cuda" and (os.environ.get("MEMCONF_NO_CUDNN") or spec.get("no_cudnn")):
        torch.backends.cudnn.enabled = False  # to test what cuDNN's kernels add
    if device == "cuda":  # each case its own choice: the process measures several
        torch.backends.cudnn.benchmark = bool(spec.get("cudnn_benchmark"))
    if device == "cuda" and (os.environ.get("MEMCONF_MATH_SDPA") or spec.get("math_sdpa")):
        for flag in ("enable_flash_sdp", "enable_mem_efficient_sdp", "enable_cudnn_sdp"):
            if hasattr(torch.backends.cuda, flag):
                getattr(torch.backends.cuda, flag)(False)
    if device == "cuda":  # the caching allocator's own counters: what max_memory_allocated reports
        def live():
            torch.cuda.synchronize()
            return torch.cuda.memory_allocated()

        def peak():
            torch.cuda.synchronize()
            return torch.cuda.max_memory_allocated()
        reset = torch.cuda.reset_peak_memory_stats
    else:
        lib = ctypes.CDLL(None)
        if not hasattr(lib, "memshim_live"):
            raise SystemExit("memshim is not preloaded")
        lib.memshim_live.restype = ctypes.c_longlong
        lib.memshim_peak.restype = ctypes.c_longlong
        live, peak, reset = lib.memshim_live, lib.memshim_peak, lib.memshim_reset

    sys.path.insert(0, HERE)
    import shapes_conformance as sc  # noqa: F401  (the interpreter)
    import state_dict_conformance  # noqa: F401  (patches the interpreter's build for stacks)

    # warm-up op: lazy library buffers (BLAS, oneDNN, autograd engine) exist before the baseline
    a = torch.randn(64, 64, requires_grad=True, device=device)
    (a @ a).relu().sum().backward()
    del a
    gc.collect()
    base = live()
    reserved = torch.cuda.memory_reserved if device == "cuda" else None
    base_reserved = reserved() if reserved else 0

    with open(os.path.join(ROOT, spec["path"])) as f:
        desc = json.load(f)
    t_build = time.process_time()
    interp = sc.Interpreter(desc, spec["bind"], device)
    model = interp.build_model()
    with torch.no_grad():
        for m in model.modules():  # realistic values: to_empty leaves the storage uninitialised
            for fn in ("reset_parameters", "_reset_parameters"):
                if callable(getattr(m, fn, None)):
                    getattr(m, fn)()
                    break
    inputs = interp.make_inputs()
    if spec.get("dtype"):  # the floating weights and inputs in this dtype (model.to(dtype))
        dt = getattr(torch, spec["dtype"])
        model.to(dt)
        inputs = {k: v.to(dt) if torch.is_tensor(v) and v.is_floating_point() else v for k, v in inputs.items()}
    t_build = time.process_time() - t_build

    weights = memshim_run.uniq_bytes(list(model.parameters()) + list(model.buffers()))
    input_bytes = memshim_run.uniq_bytes(inputs.values())
    n_params = sum(p.numel() for p in model.parameters())
    mode, optname = spec["mode"], spec["optimizer"]

    def forward():
        return interp.run_graph(model, desc, dict(inputs), None)

    def loss_of(out):
        ts = [t for t in sc.flatten_tensors(out) if t.is_floating_point()]
        loss = ts[0].sum()
        for t in ts[1:]:
            loss = loss + t.sum()
        return loss

    res = {"weights": weights, "inputs": input_bytes, "params": n_params}
    if mode == "infer":
        model.eval()

        def step():
            with torch.no_grad():
                out = forward()
            del out

        def phased_step():
            reset()
            with torch.no_grad():
                out = forward()
            ph = {"forward_peak": peak(), "after_forward": live()}
            del out
            return ph
        opt = None
    else:
        model.train()
        params = [p for p in model.parameters() if p.requires_grad]
        if optname == "sgd":
            opt = torch.optim.SGD(params, lr=0.01, foreach=False)
        elif optname == "momentum":
            opt = torch.optim.SGD(params, lr=0.01, momentum=0.9, foreach=False)
        elif optname == "adam":
            opt = torch.optim.Adam(params, lr=1e-3, foreach=False)
        else:
            raise SystemExit("unknown optimizer %r" % optname)

        def step():
            out = forward()
            loss = loss_of(out)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

        def phased_step():
            ph = {}
            reset()
            out = forward()
            loss = loss_of(out)
            ph["forward_peak"], ph["after_forward"] = peak(), live()
            reset()
            loss.backward()
            ph["backward_peak"], ph["after_backward"] = peak(), live()
            ph["gradients"] = memshim_run.uniq_bytes(p.grad for p in params)
            reset()
            opt.step()
            ph["optimizer_peak"] = peak()
            opt.zero_grad(set_to_none=True)
            ph["after_step"] = live()
            return ph

    times, reserved_steps = [], []
    for _ in range(2):  # warm-up
        t0 = time.process_time()
        step()
        times.append(time.process_time() - t0)
        if reserved:  # the caching allocator's segments after each step (they only grow)
            reserved_steps.append(reserved() - base_reserved)
    gc.collect()
    before1 = live()
    reset()
    t0 = time.process_time()
    step()
    times.append(time.process_time() - t0)
    peak1 = peak()
    gc.collect()
    before2 = live()
    ph = phased_step()
    peaks = [v for k, v in ph.items() if k.endswith("_peak")]
    peak2 = max(peaks)

    res.update({
        "peak": peak1 - base, "peak_run2": peak2 - base,
        "live_before": before1 - base, "live_before_run2": before2 - base,
        "step_seconds": times, "build_seconds": t_build,
    })
    for k, v in ph.items():
        res[k] = v if k == "gradients" else v - base
    if reserved:  # max_memory_reserved over the case: the segments never shrink between empty_cache calls
        res["reserved_base"] = base_reserved
        res["reserved_steps"] = reserved_steps
        res["reserved_peak"] = reserved() - base_reserved
    if opt is not None:
        state = [t for s in opt.state.values() for t in s.values() if isinstance(t, torch.Tensor)]
        res["optimizer_state"] = sum(t.numel() * t.element_size() for t in state)
        res["opt_state_no_step"] = sum(t.numel() * t.element_size() for s in opt.state.values()
                                       for k, t in s.items() if isinstance(t, torch.Tensor) and k != "step")
        res["activations_kept"] = res["after_forward"] - res["live_before_run2"]
    else:
        res["optimizer_state"] = 0
        res["opt_state_no_step"] = 0
        res["gradients"] = 0
    return res


# ==========================================================================
# Driver
# ==========================================================================
def build_memshim(tmp):
    so = os.path.join(tmp, "memshim.so")
    cc = os.environ.get("CC", "cc")
    p = subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", so, MEMSHIM_SRC, "-ldl"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode:
        raise SystemExit("error: cannot build memshim: %s" % p.stderr.decode(errors="replace"))
    return so


def measure(so, path, bind, mode, optimizer, timeout=600, device="cpu"):
    if device == "cuda":  # in this process: the GPU's counters need no preload, and CUDA starts once
        t0 = time.time()
        res = worker({"path": path, "bind": bind, "mode": mode, "optimizer": optimizer, "device": device})
        gc.collect()
        __import__("torch").cuda.empty_cache()
        res["wall_seconds"] = time.time() - t0
        return res
    env = dict(os.environ, LD_PRELOAD=so, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    spec = json.dumps({"path": path, "bind": bind, "mode": mode, "optimizer": optimizer})
    t0 = time.time()
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", spec], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    wall = time.time() - t0
    if p.returncode:
        err = p.stderr.decode(errors="replace").strip().splitlines()
        raise RuntimeError("worker exited %d: %s" % (p.returncode, err[-1] if err else ""))
    res = json.loads(p.stdout.decode().strip().splitlines()[-1])
    res["wall_seconds"] = wall  # cpu_seconds: the worker's own (measure_many runs several at once)
    return res


def measure_many(so, specs, device="cpu", jobs=None):
    """measure() of each (path, bind, mode, optimizer), several at a time: a list in the
    specs' order, holding the exception where a measurement failed. Each CPU measurement is
    its own process with one thread, and memshim counts only its own process's allocations,
    so runs side by side measure the bytes they measure alone (only their wall time grows).
    jobs: default the number of CPUs; one on CUDA, where the runs are this process's."""
    if jobs is None:
        jobs = 1 if device == "cuda" else (os.cpu_count() or 1)

    def one(spec):
        try:
            return measure(so, *spec, device=device)
        except (RuntimeError, subprocess.TimeoutExpired, ValueError) as e:
            return e

    if jobs <= 1:
        return [one(s) for s in specs]
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, specs))


def measured(result):
    """A result of measure_many, or its exception raised."""
    if isinstance(result, Exception):
        raise result
    return result


def tinspect_has_memory(binary):
    p = subprocess.run([binary, "memory", "--help"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    err = p.stderr.decode(errors="replace")
    if p.returncode == 2 and ("not a tinspect command" in err or "unknown command" in err):
        return False
    return True


# A measured case's own settings (memory_models/measured_cuda_h200*.json), as tinspect's options:
# the model in a dtype (model.to(dtype)), cuDNN's benchmark mode
CASE_OPTIONS = {"dtype": lambda v: ["--dtype", v], "cudnn_benchmark": lambda v: ["--cudnn-benchmark"] if v else []}


def run_tinspect(binary, path, bind, mode, optimizer, device="cpu", cpu_isa=None, case=None):
    argv = [binary, "memory", os.path.join(ROOT, path)]
    for k, v in bind.items():
        argv += ["--bind", "%s=%d" % (k, v)]
    argv += ["--mode", mode]
    if optimizer:  # the worker steps with foreach=False: PyTorch 2's default on CUDA is foreach
        argv += ["--optimizer", optimizer, "--impl", "for-loop"]
    if mode == "infer":  # the measured step is a plain forward: no generation loop holds a KV cache
        argv += ["--kv-cache", "off"]
    for key, opt in CASE_OPTIONS.items():
        if case and case.get(key):
            argv += opt(case[key])
    argv += ["--device", device, "--json"]
    if cpu_isa and device == "cpu":  # a measurement's own set; else tinspect reads the host's as oneDNN does
        argv += ["--cpu-isa", cpu_isa]
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    except subprocess.TimeoutExpired:
        return None, "timeout: %s" % " ".join(argv)
    err = p.stderr.decode(errors="replace").strip()
    if p.returncode != 0:
        return None, "exit %d: %s" % (p.returncode, err.splitlines()[-1] if err else "")
    try:
        doc = json.loads(p.stdout.decode())
    except ValueError:
        return None, "invalid JSON: %r" % p.stdout[:200]
    if not isinstance(doc, dict):
        return None, "JSON is not an object"
    return doc, None


def tinspect_cpu_isa(binary):
    """The instruction set `tinspect memory` assumes here without --cpu-isa: the one oneDNN uses."""
    doc, _ = run_tinspect(binary, MM + "mlp_large.json", {"N": 1}, "infer", None)
    return doc.get("cpu_isa") if doc else None


def range_verdict(doc, measured, slack=0):
    """Where the measured peak lies against the estimate's peak_range: ("inside" | "open" | "outside", words).

    "open": above a high end the estimate itself leaves open (an uncertainty its range does not cover,
    such as cuDNN's workspaces, which nothing bounds); the words name what it said was uncovered."""
    rng = doc.get("peak_range")
    if not isinstance(rng, dict) or not isinstance(rng.get("low"), int) or not isinstance(rng.get("high"), int):
        return "outside", "no peak_range in tinspect's answer"
    low, high = rng["low"], rng["high"]
    if low - slack <= measured <= high + slack:  # slack: bytes below the allocator's scale (memshim's)
        return "inside", ""
    words = "peak %.1f MiB outside tinspect's range %.1f-%.1f MiB" % (measured / MIB, low / MIB, high / MIB)
    uncovered = [u.get("name") for u in rng.get("uncertain", []) if not u.get("covered")]
    if measured > high and rng.get("high_open") and uncovered:
        return "open", "%s, whose high end is open (%s)" % (words, ", ".join(uncovered))
    return "outside", words


def compare(res, doc, device="cpu"):
    """-> (fails, notes, peak error or None)."""
    fails, notes = [], []
    err = None
    got = doc.get("peak")
    if not isinstance(got, int):
        fails.append("peak: %r is not an integer" % (got,))
    else:
        err = (got - res["peak"]) / float(res["peak"])
        tolerance = CUDA_TOLERANCE if device == "cuda" else PEAK_TOLERANCE
        cause = ranged_cause(doc, res["peak"]) if device == "cuda" else None
        if abs(err) > tolerance and cause:
            notes.append("peak %+.1f %%, beyond %.0f %% but inside the range its cause gives (%s)" % (
                100 * err, 100 * tolerance, cause))
        elif abs(err) > tolerance:
            fails.append("peak %.1f MiB, torch %.1f MiB (%+.1f %%)" % (got / MIB, res["peak"] / MIB, 100 * err))
    for key in ("weights", "optimizer_state"):
        g = doc.get(key)
        if g != res[key]:
            extra = ""
            if key == "optimizer_state" and g == res["opt_state_no_step"] and g != res[key]:
                extra = " (exactly torch's without Adam's 0-dim float32 `step` tensors, 4 B each)"
            fails.append("%s %r, torch %d%s" % (key, g, res[key], extra))
    if "gradients" in doc and doc["gradients"] != res["gradients"]:
        notes.append("gradients %r, torch %d" % (doc["gradients"], res["gradients"]))
    return fails, notes, err


def cuda_table(doc, results):
    """The measured GPU cases as a Markdown table: a row per model and binding, the error of each mode
    (with a mark where the measurement lies beyond 5 % but inside the range its cause gives)."""
    modes = [case_name("", m, o).lstrip("/") for m, o in MODES]
    dtypes = {c["case"]: c.get("dtype") for c in doc.get("cases", [])}
    rows = {}
    for e in results:
        model, mode = e["case"].split("/")
        if dtypes.get(e["case"]):
            model += " (%s)" % dtypes[e["case"]]
        key = (model, ", ".join("%s=%d" % kv for kv in e["bind"].items()))
        err = e.get("error")
        cell = "-" if err is None else "%+.1f %%" % (100 * err)
        if any("inside the range its cause gives" in n for n in e.get("notes", [])):
            cell += " (in range)"
        elif e.get("fails"):
            cell += " (fails)"
        rows.setdefault(key, {})[mode] = cell
    v = doc.get("cudnn")
    cudnn = "%d.%d.%d" % (v // 10000, v // 100 % 100, v % 100) if isinstance(v, int) else v
    gpu = "%s, PyTorch %s, CUDA %s, cuDNN %s" % (doc.get("gpu"), doc.get("torch"), doc.get("cuda"), cudnn)
    out = ["`tinspect memory --device cuda` against `torch.cuda.max_memory_allocated` (%s; `%s`):" % (
        gpu, doc.get("file")), "",
        "| model | binding | %s |" % " | ".join(modes), "| --- | --- |%s" % (" --- |" * len(modes))]
    for (model, bind), cells in rows.items():
        out.append("| %s | %s | %s |" % (model.replace("@benchmark", " (cudnn.benchmark)"), bind,
                                          " | ".join(cells.get(m, "-") for m in modes)))
    return "\n".join(out) + "\n"


def mib(v):
    return "%.1f" % (v / MIB) if isinstance(v, (int, float)) else "-"


TABLE_HEAD = ("%-22s %-12s %-13s %9s %9s %9s %9s %9s %9s %9s %9s %9s %6s" % (
    "model", "binding", "mode", "peak", "peak2", "weights", "optstate", "live_bef",
    "fwd_peak", "act_kept", "bwd_peak", "opt_peak", "step_s"))


def table_line(model, bind, mode, r):
    return "%-22s %-12s %-13s %9s %9s %9s %9s %9s %9s %9s %9s %9s %6.2f" % (
        model, ",".join("%s=%d" % kv for kv in bind.items()), mode, mib(r["peak"]), mib(r["peak_run2"]),
        mib(r["weights"]), mib(r["optimizer_state"]), mib(r["live_before"]), mib(r["forward_peak"]),
        mib(r.get("activations_kept", r["after_forward"] - r["live_before_run2"])),
        mib(r.get("backward_peak")), mib(r.get("optimizer_peak")), r["step_seconds"][-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("tinspect", nargs="?", default=os.path.join(ROOT, "tinspect"))
    ap.add_argument("--only", metavar="SUBSTR")
    ap.add_argument("--json", metavar="OUT")
    ap.add_argument("--table", metavar="OUT")
    ap.add_argument("--torch-only", action="store_true")
    ap.add_argument("--full", action="store_true", help="the realistic bindings (slow)")
    ap.add_argument("--bind", action="append", default=[], metavar="NAME=N",
                    help="override a symbol's binding in every case that has it")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                    help="cuda: measure torch.cuda.max_memory_allocated on the GPU (no memshim) and "
                         "compare with `tinspect memory --device cuda`")
    ap.add_argument("--measured", metavar="FILE",
                    help="no PyTorch run: take PyTorch's figures from FILE (a --json report, e.g. "
                         "measured on a GPU machine) and compare tinspect with them")
    ap.add_argument("--write-table", metavar="DOC",
                    help="with --measured on a GPU file: write its table between DOC's markers "
                         "<!-- memory-cuda:NAME:begin --> and <!-- memory-cuda:NAME:end --> (NAME: the file's)")
    ap.add_argument("--check-table", metavar="DOC", help="fail when DOC's table is not this run's")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    recorded = {}
    measured_isa = measured_threads = None
    if a.measured:
        with open(a.measured) as f:
            doc = json.load(f)
        a.device = doc.get("device", a.device)
        recorded = {e["case"]: e for e in doc["cases"]}
        measured_isa, measured_threads = doc.get("cpu_isa"), doc.get("threads")
        if a.device == "cpu" and (not measured_isa or not measured_threads):
            print("error: %s is a CPU measurement without the instruction set and thread count it was taken "
                  "with (cpu_isa, threads)" % a.measured)
            return 2

    override = {}
    for kv in a.bind:
        k, _, v = kv.partition("=")
        override[k] = int(v)
    names = None
    cases = [(m, p, dict((k, override.get(k, v)) for k, v in (full if a.full else b).items()), mode, opt)
             for m, p, b, full in CORPUS for mode, opt in MODES
             if a.full or case_name(m, mode, opt) not in NOT_IN_DEFAULT_RUN]
    if a.measured:
        cases = [(e["model"], e["path"], e["bind"], e["mode"], e["optimizer"]) for e in recorded.values()]
        names = list(recorded)  # a case's own name: "resnet18@benchmark/infer"
    if a.only:
        keep = [i for i, c in enumerate(cases) if a.only in (names[i] if a.measured else case_name(c[0], c[3], c[4]))]
        cases = [cases[i] for i in keep]
        names = [names[i] for i in keep] if a.measured else None

    check = not a.torch_only
    binary = None
    if check:
        binary = os.path.abspath(a.tinspect)
        if not os.access(binary, os.X_OK):
            print("error: %s is not an executable" % a.tinspect)
            return 2
        if not tinspect_has_memory(binary):
            print("note: %s has no 'memory' command: PyTorch's figures only (measured only)" % a.tinspect)
            check = False
        else:  # run a copy: a rebuild during the run would mix two versions
            snap = os.path.join(tempfile.mkdtemp(prefix="tinspect-bin-"), "tinspect")
            shutil.copy2(binary, snap)
            binary = snap

    tmp = tempfile.mkdtemp(prefix="tinspect-memconf-")
    t_start = time.time()
    results = []
    errors = []
    failed = passed = measured_only = known_count = 0
    ranges = {"inside": 0, "open": 0, "outside": 0}  # the measured peak against tinspect's peak_range
    isas = []  # the instruction sets tinspect assumed (one, unless the host's changed mid-run)
    table = [TABLE_HEAD, "(MiB above the baseline taken before the model is built; peak2 = second measured step;"
             " act_kept = live after forward+loss minus live before the step)"]
    try:
        so = build_memshim(tmp) if a.device == "cpu" and not a.measured else None
        pre = None if a.measured else measure_many(so, [c[1:] for c in cases], device=a.device)
        print("%-36s %10s %10s %8s  %s" % ("case", "torch MiB", "tinspect", "error", "result"))
        for i, (model, path, bind, mode, opt) in enumerate(cases):
            name = names[i] if a.measured else case_name(model, mode, opt)
            label = mode if opt is None else "%s-%s" % (mode, opt)
            try:
                r = recorded[name]["torch"] if a.measured else measured(pre[i])
            except (RuntimeError, subprocess.TimeoutExpired, ValueError) as e:
                print("%-36s %10s %10s %8s  FAIL (torch side) %s" % (name, "-", "-", "-", str(e)[:200]))
                failed += 1
                errors.append(name)
                continue
            entry = {"case": name, "model": model, "path": path, "bind": bind, "mode": mode,
                     "optimizer": opt, "torch": r}
            notes = []
            if abs(r["peak_run2"] - r["peak"]) > NOISE_TOLERANCE * r["peak"]:
                notes.append("noise: the two measured steps differ: %s vs %s MiB" % (
                    mib(r["peak"]), mib(r["peak_run2"])))
            tpeak, errtxt, result = "-", "-", "measured only"
            if check:
                doc, why = run_tinspect(binary, path, bind, mode, opt, a.device, measured_isa,
                                        recorded.get(name) if a.measured else None)
                entry["tinspect"] = doc
                if doc is not None and doc.get("cpu_isa") and doc["cpu_isa"] not in isas:
                    isas.append(doc["cpu_isa"])
                if doc is None:
                    fails, err = ["tinspect: " + why], None
                else:
                    fails, n2, err = compare(r, doc, a.device)
                    notes += n2
                    # the range must hold the measurement, unless the estimate left its high end open
                    verdict, words = range_verdict(doc, r["peak"])
                    ranges[verdict] += 1
                    entry["range"] = verdict
                    if verdict == "outside":
                        fails.append(words)
                    elif verdict == "open":
                        notes.append(words)
                    if isinstance(doc.get("peak"), int):
                        tpeak = mib(doc["peak"])
                entry["error"] = err
                entry["fails"] = fails
                if err is not None:
                    errtxt = "%+.1f%%" % (100 * err)
                known = known_gap(name, a.device)
                if fails and known:
                    known_count += 1
                    result = "known (%s): %s" % (known, "; ".join(fails))
                elif fails:
                    failed += 1
                    result = "FAIL " + "; ".join(fails)
                else:
                    passed += 1
                    result = "ok"
            else:
                measured_only += 1
            entry["notes"] = notes
            results.append(entry)
            print("%-36s %10s %10s %8s  %s" % (name, mib(r["peak"]), tpeak, errtxt, result))
            for n in notes:
                print("    NOTE " + n)
            if a.verbose:
                print("    " + TABLE_HEAD)
                print("    " + table_line(model, bind, label, r))
            table.append(table_line(model, bind, label, r))
            if a.table:
                d = os.path.dirname(os.path.abspath(a.table))
                os.makedirs(d, exist_ok=True)
                with open(a.table, "w") as f:
                    f.write("\n".join(table) + "\n")
            sys.stdout.flush()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if binary and check:
            shutil.rmtree(os.path.dirname(binary), ignore_errors=True)

    errs = [abs(e["error"]) for e in results if e.get("error") is not None]
    median = statistics.median(errs) if errs else None
    elapsed = time.time() - t_start
    if a.json:
        with open(a.json, "w") as f:
            torch = __import__("torch")
            gpu = torch.cuda.get_device_name() if a.device == "cuda" and not a.measured else None
            # the set oneDNN ran PyTorch's convolutions with (as tinspect reads it) and the thread count
            isa = measured_isa or (isas[0] if len(isas) == 1 else None)
            threads = measured_threads or 1
            json.dump({"torch": torch.__version__, "device": a.device, "gpu": gpu, "cpu_isa": isa,
                       "threads": threads, "seconds": elapsed,
                       "median_abs_peak_error": median, "cases": results}, f, indent=1)
    if median is not None:
        print("median |peak error| %.1f %% over %d cases (limit %.0f %%)" % (
            100 * median, len(errs), 100 * MEDIAN_TOLERANCE))
    median_fail = median is not None and median > MEDIAN_TOLERANCE
    if (a.write_table or a.check_table) and a.measured:
        from memory_judge import marked_table
        with open(a.measured) as f:
            head = json.load(f)
        head["file"] = os.path.relpath(a.measured, ROOT)
        name = os.path.splitext(os.path.basename(a.measured))[0]
        table_doc = a.write_table or a.check_table
        problems = marked_table(table_doc, "<!-- memory-cuda:%s:begin -->" % name, "<!-- memory-cuda:%s:end -->" % name,
                                "\n" + cuda_table(head, results), bool(a.write_table), "CUDA table", "--write-table")
        for p in problems:
            print("FAIL " + p)
        failed += len(problems)
    if median_fail:
        print("FAIL  the median peak error is over %.0f %%" % (100 * MEDIAN_TOLERANCE))
    if sum(ranges.values()):
        print("measured peak inside tinspect's range: %d of %d (%d above a high end it leaves open, %d outside: "
              "failed unless known)" % (ranges["inside"], sum(ranges.values()), ranges["open"], ranges["outside"]))
    if a.device == "cpu" and isas:
        print("instruction set %s (oneDNN's, %s), one thread" % (
            ", ".join(isas), "as measured" if measured_isa else "read from this machine as oneDNN reads it"))
    print("%d passed, %d failed, %d known, %d measured only (%.0f s)" % (
        passed, failed, known_count, measured_only, elapsed))
    return 1 if failed or median_fail else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        res = worker(json.loads(sys.argv[2]))
        ru = resource.getrusage(resource.RUSAGE_SELF)
        res["cpu_seconds"] = ru.ru_utime + ru.ru_stime
        print(json.dumps(res))
        sys.exit(0)
    memshim_run.need_torch(("torch",), "skipped: torch is not importable with %s (set PYTHON to an interpreter "
                                       "that has torch); memory conformance not run")
    sys.exit(main())
