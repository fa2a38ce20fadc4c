#!/usr/bin/env python3
"""
Measures `tinspect memory` against the time PyTorch needs to measure the same
thing, and prints a table and ratios.

    python3 bench/measure_memory.py --tinspect ./tinspect [--python /usr/bin/python3]
                                    [--runs 5] [--no-torch] CACHE_DIR

CACHE_DIR holds mlp100.json (bench/gen_models.py); GPT-2 is
fixtures/models/gpt2_small.json.

tinspect's side is measure_shapes.py's method (its helpers are imported):
wall time is the best of N runs of the whole process, output to /dev/null,
after one untimed warm-up run; CPU time and peak RSS as there.

  mlp100     `tinspect memory mlp100.json --bind N=16`, inference and
             `--mode train --optimizer adam` (goal: under 50 ms each).
  gpt2 --fit `tinspect memory gpt2_small.json --mode train --optimizer adam --device cuda
             --device-memory 80GiB --fit B --bind T=1024` (goal: under 500 ms).

PyTorch's side is what a user runs to measure memory instead: build the model
and take one step on real tensors, the model built from the same description
by the interpreter of tests/conformance/shapes_conformance.py (Interpreter(desc,
bind, "cpu").build_model(), weights then drawn from N(0, 0.02), inputs from
N(0, 1) so that no kernel meets all-zero operands). For mlp100 at N=16 that is
a forward under no_grad (inference) or forward, backward of mean(output) and
one Adam step (training), on the CPU: each a whole process (import torch,
build, step), best of N after a warm-up; the process prints its own split
(import, build, step; perf_counter), and the best of each part is shown too.

--fit has no PyTorch counterpart to time directly: a user finds the largest
batch by measuring training steps at a sequence of batch sizes. The figure
printed is computed, not measured, and the script says so: the probes are
tinspect's own search (double B from 1 while the step fits, then bisect), which
depends only on the answer, here the B that tinspect finds; each probe costs
one build plus one measured training step of GPT-2 at B x 1024 tokens. A
step that large does not fit this machine's memory or time (B=24 is 79 GiB),
so one step is measured at B=1, T=16 on the CPU (once: it takes seconds) and
scaled by tokens: B * 1024 / 16. That scaling is linear, so it leaves out
attention's T^2 part and understates the time at T=1024 (the ratio errs in
PyTorch's favour). Probes that do not fit are counted as whole steps (on a GPU
they would stop at the out-of-memory error partway). The sum is import +
probes * build + the scaled steps. A floor for a GPU follows: the probes'
6 * parameters * tokens FLOPs at an H100's 989 TFLOP/s dense bf16 peak, with
no import, build or launch cost at all.

Debian's torch 1.13 (/usr/bin/python3) is built with the reference BLAS
(BLAS_INFO=generic), several times slower than MKL or OpenBLAS; the PyTorch
times here are this machine's, and the script prints torch's BLAS.

Needs only the Python standard library (torch for the baseline).
"""
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
from goals import record  # noqa: E402
from measure import GNU_TIME, bench_args, mb, measure, ms, rss_gnu_time  # noqa: E402

GPT2 = os.path.join(ROOT, "fixtures", "models", "gpt2_small.json")
GPT2_T = 1024
PROBE_B, PROBE_T = 1, 16          # the GPT-2 step measured on the CPU, then scaled by tokens
H100_BF16_DENSE = 989e12          # FLOP/s, NVIDIA's H100 SXM datasheet (dense, no sparsity)
MAX_BIND = 1 << 40                # the ceiling of --fit's doubling (CLI_MODEL_MAX_BIND); never reached here

# One measured step, as a user writes it: prints "import_s build_s step_s".
# argv: description, bind as JSON, infer|train
TORCH_STEP = r"""
import json, sys, time
t0 = time.perf_counter()
sys.path.insert(0, %r)
import torch
import shapes_conformance as sc
t1 = time.perf_counter()
path, bind, mode = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
with open(path) as f:
    desc = json.load(f)
it = sc.Interpreter(desc, bind, "cpu")
model = it.build_model()
with torch.no_grad():
    for p in model.parameters():
        p.normal_(0, 0.02)
env = it.make_inputs()
for k, v in env.items():
    if v.is_floating_point():
        env[k] = torch.randn_like(v)
if mode == "train":
    model.train()
    opt = torch.optim.Adam(model.parameters())
t2 = time.perf_counter()
if mode == "train":
    y = it.run_graph(model, desc, dict(env), None)
    y = y[0] if isinstance(y, (tuple, list)) else y
    y.float().mean().backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
else:
    with torch.no_grad():
        y = it.run_graph(model, desc, dict(env), None)
t3 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2, sum(p.numel() for p in model.parameters()))
""" % os.path.join(ROOT, "tests", "conformance")

TORCH_BLAS = "import torch, re; print(re.search(r'BLAS_INFO=(\\w+)', torch.__config__.show()).group(1))"


def torch_step(python, path, bind, mode, runs, warm_up=True):
    """Best whole-process wall and best (import, build, step) over runs, or None and why."""
    argv = [python, "-c", TORCH_STEP, path, json.dumps(bind), mode]
    best, parts, params = None, None, 0
    for i in range(runs + (1 if warm_up else 0)):
        t0 = time.perf_counter()
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
        t = time.perf_counter() - t0
        if p.returncode != 0:
            return None, None, 0, p.stderr.decode(errors="replace").strip().splitlines()[-1:]
        if warm_up and i == 0:
            continue
        fields = p.stdout.split()
        got = tuple(float(x) for x in fields[:3])
        params = int(fields[3])
        best = t if best is None else min(best, t)
        parts = got if parts is None else tuple(min(a, b) for a, b in zip(parts, got))
    return best, parts, params, None


def fit_probes(answer):
    """The values tinspect's --fit tries (cmd_memory.c, fit_search) when `answer` is the largest that fits."""
    probes, lo, hi, v = [], 0, 0, 1
    while v <= MAX_BIND:
        probes.append(v)
        if v > answer:
            hi = v
            break
        lo, v = v, v * 2
    while hi - lo > 1:
        mid = lo + (hi - lo) // 2
        probes.append(mid)
        lo, hi = (mid, hi) if mid <= answer else (lo, mid)
    return probes


def main():
    a = bench_args(5)

    ti = a.tinspect
    mlp = os.path.join(a.cache, "mlp100.json")
    if not a.no_torch and subprocess.run(
            [a.python, "-c", "import torch"], stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode != 0:
        print("measure_memory: torch is not importable with %s: skipping the PyTorch side"
              % a.python)
        a.no_torch = True

    rss_method = "wait4"
    if os.access(GNU_TIME, os.X_OK) and rss_gnu_time(["/bin/true"]) is not None:
        rss_method = "time"
    res = {}
    failed = []

    def line(label, t, cpu, rss, note=""):
        print("   %-44s %s %s %12s  %s" % (label, ms(t), ms(cpu), rss, note))
        sys.stdout.flush()

    def row(label, argv, goal=None):
        t, cpu, rss, rc, err = measure(argv, a.runs, rss_method)
        res[label] = t if rc == 0 else None
        note = ""
        if rc != 0:
            failed.append(label)
            note = "FAILED exit %d: %s" % (rc, err.decode(errors="replace").strip()[:160])
        elif goal is not None:
            ok = record("%s of %s" % (label.replace("tinspect ", ""), os.path.basename(argv[2])), t * 1e3, "ms", "<=", goal * 1e3)
            note = "goal < %d ms: %s" % (goal * 1e3, "ok" if ok else "ABOVE GOAL")
        line(label, t, cpu, mb(rss) if rc == 0 else "n/a", note)
        return t if rc == 0 else None

    header = "   %-44s %12s %12s %12s" % ("command", "best wall", "best CPU", "peak RSS")
    blas = ""
    if not a.no_torch:
        p = subprocess.run([a.python, "-c", TORCH_BLAS], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL)
        blas = "; torch's BLAS: %s" % (p.stdout.decode().strip() or "?")

    print("== tinspect memory: %s (100 blocks Linear+LayerNorm+GELU, N=16)" % mlp)
    print("   peak RSS via %s; load average %.1f on %d cores%s"
          % ("/usr/bin/time -f %M" if rss_method == "time" else "wait4() ru_maxrss",
             os.getloadavg()[0], os.cpu_count() or 0, blas))
    print(header)
    mlp_infer = [ti, "memory", mlp, "--bind", "N=16"]
    mlp_train = mlp_infer + ["--mode", "train", "--optimizer", "adam"]
    ti_infer = row("tinspect memory (infer)", mlp_infer, 0.050)
    ti_train = row("tinspect memory --mode train --optimizer adam", mlp_train, 0.050)
    row("tinspect memory --mode train ... --json", mlp_train + ["--json"], 0.050)
    tf = {}
    if not a.no_torch:
        for mode, label in (("infer", "torch: build + forward (no_grad), CPU"),
                            ("train", "torch: build + fwd + bwd + Adam step, CPU")):
            t, parts, params, err = torch_step(a.python, mlp, {"N": 16}, mode, a.runs)
            if t is None:
                failed.append(label)
                line(label, None, None, "n/a", "FAILED: %s" % " ".join(err))
                continue
            tf[mode] = (t, parts)
            line(label, t, None, "", "(%.1f M parameters)" % (params / 1e6))
            print("   %-44s import %.0f ms, build %.0f ms, step %.0f ms (best of each)"
                  % ("  (inside the process)", parts[0] * 1e3, parts[1] * 1e3, parts[2] * 1e3))
    line("  (floor: tinspect --version)", *measure([ti, "--version"], a.runs, rss_method)[:2],
         rss="")
    print("   ratios:")
    if a.no_torch:
        print("     torch / tinspect: skipped (torch not importable)")
    for mode, t_ti in (("infer", ti_infer), ("train", ti_train)):
        if mode in tf and t_ti:
            t, parts = tf[mode]
            print("     %-5s torch process / tinspect: %8.0fx; torch's step alone / tinspect: %.0fx"
                  % (mode, t / t_ti, parts[2] / t_ti))

    print("== tinspect memory --fit: %s, train, adam, cuda, 80GiB, T=%d"
          % (os.path.relpath(GPT2), GPT2_T))
    print(header)
    fit_argv = [ti, "memory", GPT2, "--mode", "train", "--optimizer", "adam", "--device", "cuda",
                "--device-memory", "80GiB", "--fit", "B", "--bind", "T=%d" % GPT2_T]
    ti_fit = row("tinspect memory --fit B", fit_argv, 0.500)
    row("  (one probe: --bind B=8 T=1024, no --fit)",
        [ti, "memory", GPT2, "--mode", "train", "--optimizer", "adam", "--device", "cuda", "--bind", "B=8",
         "--bind", "T=%d" % GPT2_T])
    p = subprocess.run(fit_argv + ["--json"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    answer = None
    if p.returncode == 0:
        answer = json.loads(p.stdout)["fit"]["value"]
    if answer is None:
        failed.append("fit answer")
        print("   (no answer from --fit --json: PyTorch's side not computed)")
    elif a.no_torch:
        print("   largest B: %d; PyTorch's side skipped (torch not importable)" % answer)
    else:
        probes = fit_probes(answer)
        t, parts, params, err = torch_step(a.python, GPT2, {"B": PROBE_B, "T": PROBE_T}, "train",
                                           1, warm_up=False)
        if t is None:
            failed.append("torch gpt2 step")
            print("   torch: GPT-2 step at B=%d, T=%d FAILED: %s" % (PROBE_B, PROBE_T, " ".join(err)))
        else:
            imp, build, step = parts
            per_token = step / (PROBE_B * PROBE_T)
            steps = sum(b * GPT2_T * per_token for b in probes)
            total = imp + len(probes) * build + steps
            flops = sum(6.0 * params * b * GPT2_T for b in probes)
            print("   largest B: %d; a search measuring each probe tries B = %s (%d steps, %d tokens)"
                  % (answer, ", ".join(map(str, probes)), len(probes), sum(probes) * GPT2_T))
            print("   torch: one GPT-2 training step at B=%d, T=%d on the CPU, measured once: "
                  "import %.1f s, build %.1f s, step %.1f s (%.0f ms a token)"
                  % (PROBE_B, PROBE_T, imp, build, step, per_token * 1e3))
            print("   torch: the search, computed: import + %d builds + steps scaled by tokens = "
                  "%.0f s (%.1f h)" % (len(probes), total, total / 3600))
            print("   floor on an H100: 6 x %.1f M parameters x tokens = %.0f TFLOP at 989 TFLOP/s "
                  "= %.2f s (no import, build or launch)" % (params / 1e6, flops / 1e12, flops / H100_BF16_DENSE))
            if ti_fit:
                print("   ratios: the CPU search (computed) / tinspect --fit: %.0fx; "
                      "the H100 floor / tinspect --fit: %.0fx"
                      % (total / ti_fit, flops / H100_BF16_DENSE / ti_fit))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
