#!/usr/bin/env python3
"""
Times `tinspect describe` and `tinspect memory` on a Hugging Face config of a
70B model (fixtures/hf/Llama-3.1-70B, the real config.json's values), the
issue's goal: a config.json to "will it fit" in under 100 ms.

    python3 bench/measure_hf.py --tinspect ./tinspect [--runs 5] CACHE_DIR

CACHE_DIR is taken for the common arguments and not read. The method is
measure.py's (its helpers are imported): wall time is the best of N runs of
the whole process, output to /dev/null, after one untimed warm-up run; CPU
time and peak RSS as there. The figures held to the goal include the
process's start-up (measure_startup.py times that floor on its own, and it
is printed here beside them):

  describe   `tinspect describe fixtures/hf/Llama-3.1-70B` (the description
             from the config: the llama template filled, 80 layers)
  memory     `tinspect memory fixtures/hf/Llama-3.1-70B --batch 1 --context
             8192`: the description built again, the prefill simulated, then
             the decode step (a second simulation at one token beside the
             KV cache): describe + memory, under 100 ms
  devices    the same with --device-memory H100-80GB,A100-80GB,A100-40GB,L4
             --dtype bfloat16 (a row per device; not held to a goal)

There is no PyTorch side: building a 70B model to measure it needs 140 GB
for its bf16 weights; the formulas people use instead (accelerate
estimate-memory) count the weights only.

Needs only the Python standard library.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from goals import record  # noqa: E402
from measure import GNU_TIME, bench_args, mb, measure, ms, rss_gnu_time  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
CONFIG = os.path.join(ROOT, "fixtures", "hf", "Llama-3.1-70B")
GOAL_MS = 100.0


def main():
    a = bench_args(5)
    ti = a.tinspect
    rss_method = "wait4"
    if os.access(GNU_TIME, os.X_OK) and rss_gnu_time(["/bin/true"]) is not None:
        rss_method = "time"
    print("== tinspect on a 70B config.json: %s" % os.path.relpath(CONFIG, ROOT))
    print("   load average %.1f on %d cores" % (os.getloadavg()[0], os.cpu_count() or 0))
    print("   %-44s %12s %12s %12s" % ("command", "best wall", "best CPU", "peak RSS"))
    floor, _, _, _, _ = measure(["/bin/true"], a.runs, rss_method)
    print("   %-44s %s" % ("/bin/true (the start-up floor)", ms(floor)))
    rows = [
        ("describe", [ti, "describe", CONFIG], True),
        ("memory --batch 1 --context 8192", [ti, "memory", CONFIG, "--batch", "1", "--context", "8192"], True),
        ("memory ... --device-memory (4 GPUs), bf16",
         [ti, "memory", CONFIG, "--batch", "1", "--context", "8192", "--dtype", "bfloat16",
          "--device-memory", "H100-80GB,A100-80GB,A100-40GB,L4"], False),
    ]
    status = 0
    for label, argv, goal in rows:
        # the device rows exit 1 when the step does not fit one of them (a 70B model does not fit an L4)
        t, cpu, rss, rc, err = measure(argv, a.runs, rss_method, expect=1 if "--device-memory" in argv else 0)
        ok = t is not None
        note = "" if ok else "FAILED exit %d: %s" % (rc, err.decode(errors="replace").strip()[:160])
        print("   %-44s %s %s %12s  %s" % (label, ms(t), ms(cpu), mb(rss) if ok else "n/a", note))
        if not ok:
            status = 1
        elif goal and not record("%s of Llama-3.1-70B config.json" % label, t * 1e3, "ms", "<=", GOAL_MS):
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
