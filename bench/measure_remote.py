#!/usr/bin/env python3
"""
Remote reads against the same files served locally (issue 28's goals).

    python3 bench/measure_remote.py [--tinspect T] [--runs N] CACHE_DIR

Starts Debian's nginx on a free localhost port (as tests/remote/run.sh does),
serving two checkpoints from CACHE_DIR, and measures `tinspect inspect URL
--json`:

  sharded/     a sharded safetensors model written here (8 shards of 32
               layers' worth of Llama-like tensors, their data sparse zeros)
               and its model.safetensors.index.json;
  big.bin      a multi-GB torch zip (pytorch_model.bin) written once with
               torch (uninitialised tensors), as bench/gen.py writes its files.

Goals (recorded with goals.record):
  - sharded: at most 2 requests and 1 MB a shard (the index's own request
    aside);
  - big.bin: at most 4 requests;
  - wall time within 2x of the requests' round trips: the same requests
    (taken from nginx's access log: method, path, Range) replayed by one curl
    process, best of N, against tinspect's best of N (--no-cache: cold reads);
  - read again through the remote-read cache (one of its own): at most one
    request a file.

Skips (exit 0, a message) when nginx or curl is missing; big.bin is skipped
when torch is not importable and the file is not cached.
"""
import argparse
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from goals import record  # noqa: E402

SHARDS, LAYERS, HIDDEN, INTER = 8, 32, 4096, 11008


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def write_sharded(root):
    """8 safetensors shards of a Llama-7B-like layout (float16, sparse zero data) and their index."""
    d = os.path.join(root, "sharded")
    index = os.path.join(d, "model.safetensors.index.json")
    if os.path.exists(index):
        return d
    os.makedirs(d, exist_ok=True)
    tensors = [("model.embed_tokens.weight", [32000, HIDDEN])]
    for i in range(LAYERS):
        p = "model.layers.%d." % i
        for n in ("q_proj", "k_proj", "v_proj", "o_proj"):
            tensors.append((p + "self_attn.%s.weight" % n, [HIDDEN, HIDDEN]))
        tensors += [(p + "mlp.gate_proj.weight", [INTER, HIDDEN]), (p + "mlp.up_proj.weight", [INTER, HIDDEN]),
                    (p + "mlp.down_proj.weight", [HIDDEN, INTER]), (p + "input_layernorm.weight", [HIDDEN]),
                    (p + "post_attention_layernorm.weight", [HIDDEN])]
    tensors += [("model.norm.weight", [HIDDEN]), ("lm_head.weight", [32000, HIDDEN])]
    per = (len(tensors) + SHARDS - 1) // SHARDS
    weight_map, total = {}, 0
    for s in range(SHARDS):
        name = "model-%05d-of-%05d.safetensors" % (s + 1, SHARDS)
        header, off = {"__metadata__": {"format": "pt"}}, 0
        for t, shape in tensors[s * per:(s + 1) * per]:
            n = 2
            for x in shape:
                n *= x
            header[t] = {"dtype": "F16", "shape": shape, "data_offsets": [off, off + n]}
            off += n
            weight_map[t] = name
        text = json.dumps(header, separators=(",", ":")).encode()
        text += b" " * (-len(text) % 8)
        with open(os.path.join(d, name), "wb") as f:
            f.write(struct.pack("<Q", len(text)) + text)
            f.truncate(8 + len(text) + off)  # sparse: the data reads as zeros
        total += off
    with open(index + ".tmp", "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f)
    os.replace(index + ".tmp", index)
    return d


def write_big(root, python):
    path = os.path.join(root, "big.bin")
    if os.path.exists(path):
        return path
    code = ("import sys, torch, collections\n"
            "sd = collections.OrderedDict(('layer%d.weight' % i, torch.empty(8192, 4096)) for i in range(24))\n"
            "torch.save(sd, sys.argv[1] + '.tmp')\n")
    if subprocess.run([python, "-c", code, path]).returncode:
        return None
    os.replace(path + ".tmp", path)
    return path


def start_nginx(root, tmp):
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None)
    if not nginx:
        return None, None, None
    port = free_port()
    for sub in ("logs", "temp"):
        os.makedirs(os.path.join(tmp, sub), exist_ok=True)
    conf = os.path.join(tmp, "nginx.conf")
    log = os.path.join(tmp, "logs", "access.log")
    with open(conf, "w") as f:
        f.write("""daemon off; master_process off; worker_processes 1; pid %(t)s/nginx.pid;
error_log %(t)s/logs/error.log;
events { worker_connections 64; }
http {
  default_type application/octet-stream;
  client_body_temp_path %(t)s/temp/body; proxy_temp_path %(t)s/temp/proxy;
  fastcgi_temp_path %(t)s/temp/fastcgi; uwsgi_temp_path %(t)s/temp/uwsgi; scgi_temp_path %(t)s/temp/scgi;
  log_format bench '$request_method $uri $http_range';
  server { listen 127.0.0.1:%(p)d; access_log %(l)s bench; location /files/ { alias %(r)s/; } }
}
""" % {"t": tmp, "p": port, "l": log, "r": os.path.abspath(root)})
    proc = subprocess.Popen([nginx, "-p", tmp, "-c", conf, "-e", os.path.join(tmp, "logs", "error.log")])
    for _ in range(50):
        try:
            socket.create_connection(("127.0.0.1", port), 1).close()
            return proc, "http://127.0.0.1:%d/files" % port, log
        except OSError:
            time.sleep(0.1)
    proc.kill()
    return None, None, None


def log_lines(log):
    """The access log's lines, once nginx has written them (it logs after the response is sent)."""
    last = None
    for _ in range(40):
        with open(log) as f:
            lines = f.read().splitlines()
        if lines == last:
            return lines
        last = lines
        time.sleep(0.05)
    return last


def best(argv, runs):
    t = None
    for _ in range(runs):
        t0 = time.perf_counter()
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        dt = time.perf_counter() - t0
        if p.returncode:
            raise RuntimeError("%s: exit %d: %s" % (argv[0], p.returncode, p.stderr.decode(errors="replace")[-300:]))
        t = dt if t is None or dt < t else t
    return t, p.stdout


def replay_argv(lines, base):
    """One curl process making the same requests in the same order: the requests' round trips."""
    argv = ["curl", "-s", "-o", "/dev/null"]
    first = True
    for line in lines:
        parts = line.split(" ", 2)
        method, uri, rng = parts[0], parts[1], parts[2] if len(parts) > 2 else "-"
        if not first:
            argv += ["--next", "-s", "-o", "/dev/null"]
        first = False
        if method == "HEAD":
            argv.append("-I")
        if rng not in ("-", ""):
            argv += ["-H", "Range: " + rng]
        argv.append(base.rsplit("/files", 1)[0] + uri)
    return argv


def measure(name, url, base, log, a, shards=0):
    before = len(log_lines(log))
    t, out = best([a.tinspect, url, "--json", "--no-cache"], a.runs)  # cold reads, the user's cache untouched
    lines = log_lines(log)[before:]
    per_run = len(lines) // a.runs
    fetched = json.loads(out).get("fetched", {})
    requests, nbytes = fetched.get("requests", 0), fetched.get("bytes", 0)
    print("   %-10s %d requests, %d bytes, best of %d %.1f ms (nginx logged %d a run)"
          % (name, requests, nbytes, a.runs, t * 1e3, per_run))
    ok = True
    if shards:
        rq, by = (requests - 1) / shards, nbytes / shards  # the index's own request aside
        ok &= record("remote inspect sharded safetensors: requests a shard", rq, "", "<=", 2)
        ok &= record("remote inspect sharded safetensors: bytes a shard, MB", by / 1e6, "MB", "<=", 1.0)
        print("     a shard: %.2f requests (goal <= 2), %.3f MB (goal <= 1 MB)" % (rq, by / 1e6))
    else:
        ok &= record("remote inspect %s: requests" % name, requests, "", "<=", 4)
        print("     requests: %d (goal <= 4)" % requests)
    floor, _ = best(replay_argv(lines[:per_run], base), a.runs)
    r = t / floor if floor else 0
    ok &= record("remote inspect %s: tinspect / curl replaying its requests" % name, r, "x", "<=", 2)
    print("     wall %.1f ms, the same %d requests by one curl %.1f ms: %.2fx (goal <= 2x)"
          % (t * 1e3, per_run, floor * 1e3, r))
    # read again through the remote-read cache (a cache of its own): one conditional request
    cache = tempfile.mkdtemp(prefix="tinspect-bench-cache.")
    env = dict(os.environ, XDG_CACHE_HOME=cache)
    subprocess.run([a.tinspect, url, "--json"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    p = subprocess.run([a.tinspect, url, "--json"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    shutil.rmtree(cache, ignore_errors=True)
    again = json.loads(p.stdout).get("fetched", {}).get("requests", -1) if p.returncode == 0 else -1
    files = shards + 1 if shards else 1  # a sharded model: its index and its shards
    ok &= record("remote inspect %s again, cached: requests a file" % name, again / files if again >= 0 else 99,
                 "", "<=", 1)
    print("     again through the cache: %d requests for %d files (goal <= 1 a file)" % (again, files))
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cache")
    ap.add_argument("--tinspect", default="./tinspect")
    ap.add_argument("--python", default=os.environ.get("PYTHON", "/usr/bin/python3"))
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    if not shutil.which("curl"):
        print("remote: skipped (curl is not installed)")
        return 0
    root = os.path.join(a.cache, "remote")
    os.makedirs(root, exist_ok=True)
    write_sharded(root)
    big = write_big(root, a.python)
    tmp = tempfile.mkdtemp(prefix="tinspect-bench-remote.")
    proc, base, log = start_nginx(root, tmp)
    if not proc:
        print("remote: skipped (nginx is not installed or did not start)")
        shutil.rmtree(tmp, ignore_errors=True)
        return 0
    ok = True
    try:
        print("== remote reads, nginx on localhost")
        ok &= measure("sharded", base + "/sharded/model.safetensors.index.json", base, log, a, shards=SHARDS)
        if big:
            print("   big.bin %.1f GB" % (os.path.getsize(big) / 1e9))
            ok &= measure("big.bin", base + "/big.bin", base, log, a)
        else:
            print("   big.bin: skipped (torch is not importable)")
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
