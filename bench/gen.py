#!/usr/bin/env python3
"""
Generates the benchmark checkpoints into a cache directory (idempotent).

    $PYTHON bench/gen.py CACHE_DIR

  vit_l_16.pt    torchvision.models.vit_l_16() state dict, random init, no
                 download (~1.2 GB)
  small20k.pt    20,000 small tensors in one flat state dict

A file is written to NAME.tmp and renamed, so an interrupted run never leaves
a half-written checkpoint behind. Exits 3 if torch is not importable.
"""
import os
import sys
import time

try:
    import torch
except Exception:
    print("gen.py: torch is not importable with %s" % sys.executable)
    sys.exit(3)


def save(obj, path):
    tmp = path + ".tmp"
    torch.save(obj, tmp)
    os.replace(tmp, path)


def vit(path):
    import torchvision
    torch.manual_seed(0)
    with torch.no_grad():
        m = torchvision.models.vit_l_16()        # weights=None: random init
    save(m.state_dict(), path)


def small(path, n=20000):
    import collections
    dtypes = [torch.float32, torch.float16, torch.bfloat16, torch.int64]
    sd = collections.OrderedDict()
    for i in range(n):
        shape = [(4,), (2, 3), (8,), (1,)][i % 4]
        sd["blocks.%d.sub.%d.%s" % (i // 40, (i // 4) % 10,
                                    ("weight", "bias", "scale", "step")[i % 4])] = \
            torch.zeros(shape, dtype=dtypes[i % 4])
    save(sd, path)


def main():
    cache = sys.argv[1] if len(sys.argv) > 1 else "bench/.cache"
    os.makedirs(cache, exist_ok=True)
    torch.set_num_threads(os.cpu_count() or 1)
    for name, fn in (("vit_l_16.pt", vit), ("small20k.pt", small)):
        path = os.path.join(cache, name)
        if os.path.exists(path):
            print("cached     %s (%.1f MB)" % (path, os.path.getsize(path) / 1e6))
            continue
        t0 = time.time()
        print("generating %s ..." % path, end="", flush=True)
        fn(path)
        print(" %.1f s, %.1f MB" % (time.time() - t0, os.path.getsize(path) / 1e6))


if __name__ == "__main__":
    main()
