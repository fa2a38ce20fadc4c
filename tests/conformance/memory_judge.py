"""memory_judge.py - how the memory corpora hold tinspect's estimates to PyTorch's measurements.

hf_memory.py, hf_memory_moe.py and memory_random.py each compare `tinspect memory --json` with
peaks measured under memshim, and judge each case by one rule, kept here:

  - a case is beyond when it misses by more than LIMIT (5 %) and by more than SLACK bytes
    (below that, a miss is the allocator's rounding, not the estimate's);
  - a case beyond that is listed in the corpus's misses file (name -> {"error": percent, "cause"})
    is a known miss while its error has not grown by more than GREW points; otherwise it fails;
  - a listed case no longer beyond is mended: the file should lose it.

Also shared: running tinspect for its JSON, writing a measurement file whole (a case a line), and a
generated table between two markers in a document.
"""
import json
import os
import subprocess

LIMIT = 0.05         # a case further than this (and than SLACK) fails the comparison
GREW = 2.0           # points a known miss may move before it fails (the machine's noise is far less)
SLACK = 64 * 1024    # below this many bytes a miss is not counted (allocator scale)


def load_misses(path):
    """The misses file's cases ({} without one)."""
    if not path:
        return {}
    with open(path) as f:
        return json.load(f)["misses"]


def judge(name, got, want, misses):
    """(verdict, error, words) for one estimate against its measurement: verdict is "within",
    "mended" (within, but listed as a miss), "known" (beyond, as listed) or "failed" (words say how).

    >>> MiB = 2 ** 20
    >>> judge("a", 104 * MiB, 100 * MiB, {})
    ('within', 0.04, None)
    >>> judge("a", 110 * MiB, 100 * MiB, {})
    ('failed', 0.1, 'tinspect 110.000 MiB, torch 100.000 MiB (+10.0 %)')
    >>> judge("a", 110 * MiB, 100 * MiB, {"a": {"error": 9.0, "cause": "traced"}})
    ('known', 0.1, 'traced')
    >>> judge("a", 110 * MiB, 100 * MiB, {"a": {"error": 7.0, "cause": "traced"}})[2]
    'tinspect 110.000 MiB, torch 100.000 MiB (+10.0 %); a known miss of +7.0 % grew'
    >>> judge("a", 101 * MiB, 100 * MiB, {"a": {"error": 7.0, "cause": "traced"}})[0]
    'mended'
    >>> judge("a", 61000, 1000, {})[0]  # 60 times the measurement, but within SLACK bytes of it
    'within'
    """
    e = (got - want) / float(want)
    beyond = abs(e) > LIMIT and abs(got - want) > SLACK
    miss = misses.get(name)
    if beyond and miss and abs(100 * e) <= abs(miss["error"]) + GREW:
        return "known", e, miss["cause"]
    if beyond:
        return "failed", e, "tinspect %.3f MiB, torch %.3f MiB (%+.1f %%)%s" % (
            got / 2 ** 20, want / 2 ** 20, 100 * e, "; a known miss of %+.1f %% grew" % miss["error"] if miss else "")
    return ("mended" if miss else "within"), e, None


def run_json(argv, timeout=300):
    """(document, None) from a tinspect command's --json, or (None, its error in words)."""
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=timeout)
    if p.returncode:
        return None, "exit %d: %s" % (p.returncode, p.stderr.strip().splitlines()[-1:] if p.stderr.strip() else "")
    return json.loads(p.stdout), None


def save_cases(path, head, cases, sort_keys=False, separators=(",", ":")):
    """Writes a measurement file whole or not at all (a run stopped midway keeps what it finished): its
    head's fields, then its cases, one a line, so that a diff of the file shows the cases a run changed."""
    tmp = path + ".part"
    with open(tmp, "w") as f:
        f.write(json.dumps(head, sort_keys=sort_keys, separators=separators)[:-1] + ',"cases":[\n')
        f.write(",\n".join(json.dumps(c, sort_keys=sort_keys, separators=separators) for c in cases))
        f.write("\n]}\n")
    os.replace(tmp, path)


def marked_table(path, begin, end, new, write, what, option):
    """Writes new between path's begin and end markers (write), or says how the text there differs from
    it: [] when it is the same, else one line naming option, which writes it."""
    with open(path) as f:
        text = f.read()
    if begin not in text or end not in text:
        return ["%s has no %s ... %s markers" % (path, begin, end)]
    head, rest = text.split(begin, 1)
    old, tail = rest.split(end, 1)
    if write:
        with open(path, "w") as f:
            f.write(head + begin + new + end + tail)
        print("wrote the %s into %s" % (what, path))
        return []
    if old != new:
        return ["%s's %s is not this run's: write it with %s %s" % (path, what, option, path)]
    return []
