#!/usr/bin/env python3
"""check.py - every #include under src/ and include/ runs down LAYERS, and no
files include each other in a ring.

usage: check.py [--root DIR] [--objects DIR]
    --root     a tree with LAYERS, src/, include/ (the repository by default)
    --objects  the objects built from src/ (build/src under the root by default;
               without them, rings of calls are not looked for)

1. Layers. LAYERS (at the root) lists the folders of src/ a line per layer, top
   first. A file may include its own folder's files and those of a lower line.
   A public header, include/tinspect/NAME.h, is the folder's whose .c files
   define the functions it declares (the most of them); a header whose
   functions are defined in more than one folder is reported too: one header,
   one layer.
2. Rings. Files are nodes (src/F/x.c and src/F/x.h are one node, F/x; a public
   header is a node of its own: it declares, it calls nothing); an include is
   an edge. Every strongly connected set of more than one node is a
   ring of files that depend on each other.
3. Calls. From the built objects (nm), an edge from a file to each file
   whose functions it calls or takes the address of (a registry's table of
   handlers calls them; a table of another file's rule data is no call): no
   call may go up LAYERS (whatever it declared to make it), and no files may
   call each other in a ring, whatever headers they share.

What is not mended yet is listed in tests/layers/known (one entry a line: an
include as 'FILE: HEADER', a ring as 'ring: NODE ...' or 'calls: NODE ...'). An entry not
found any more fails too, so the list only shrinks. Prints each problem as
FILE:LINE: what and why; exits 1 on any.
"""
import argparse
import collections
import os
import re
import sys

INCLUDE = re.compile(r'\s*#\s*include\s+"([^"]+)"')
# a definition or a prototype starts at column 0 with its type: "int ti_x(" / "ti_status ti_y("
DECLARED = re.compile(r'^(?!static\b)[A-Za-z_][\w \t\*]*?\b(ti_\w+)\s*\(', re.M)


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def load_layers(root):
    rank = {}
    for n, line in enumerate(read(os.path.join(root, "LAYERS")).splitlines()):
        line = line.split("#", 1)[0].split()
        for folder in line:
            rank[folder] = n
    return rank


def sources(root):
    for top in ("src", "include"):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(d, f), root)


def node_of(path):
    """src/run/kernels/conv.c -> run/kernels/conv"""
    return os.path.splitext(path[len("src/"):])[0]


def folder_of(path):
    return path.split("/")[1]


def public_owners(root, files):
    """include/tinspect/x.h -> (its folder, the file defining most of its functions, the folders defining them)"""
    defined = {}
    for p in files:
        if p.startswith("src/") and p.endswith(".c"):
            text = read(os.path.join(root, p))
            for m in DECLARED.finditer(text):
                end = text.find("\n", m.end())
                if not text[m.end():end].rstrip().endswith(";"):
                    defined.setdefault(m.group(1), p)
    owners = {}
    for p in files:
        if not p.startswith("include/"):
            continue
        names = set(DECLARED.findall(read(os.path.join(root, p))))
        where = collections.Counter(defined[n] for n in names if n in defined)
        if not where:
            continue  # types and inline functions only: below everything that may use them
        top = where.most_common(1)[0][0]
        folders = sorted({folder_of(f) for f in where})
        owners[p[len("include/"):]] = (folder_of(top), node_of(top), folders)
    return owners


def resolve(root, path, inc, owners):
    """What an include names: (folder, node), or None for a system or unknown header."""
    if inc in owners:  # a public header: its folder's layer, a node of its own
        return owners[inc][0], "include/" + os.path.splitext(inc)[0]
    for cand in (os.path.join(os.path.dirname(path), inc), os.path.join("src", inc)):
        cand = os.path.normpath(cand)
        if cand.startswith("src/") and os.path.exists(os.path.join(root, cand)):
            return folder_of(cand), node_of(cand)
    return None


def rings(edges):
    """Tarjan: the strongly connected sets of more than one node, each sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        work = [(v, iter(sorted(edges[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            u, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in on:
                    low[u] = min(low[u], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[u])
            if low[u] == index[u]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == u:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(out)


def call_edges(objects):
    """F/x -> the F/y whose functions x.o uses, from nm; None without objects."""
    import subprocess
    if not os.path.isdir(objects):
        return None
    objs = sorted(os.path.join(d, f) for d, _, fs in os.walk(objects) for f in fs if f.endswith(".o"))
    defined, used = {}, collections.defaultdict(set)
    root = os.path.dirname(os.path.dirname(os.path.abspath(objects)))
    for o in objs:
        node = os.path.relpath(o, objects)[:-2]
        if not os.path.exists(os.path.join(root, "src", node + ".c")):
            continue  # left from a file since moved or removed
        out = subprocess.run(["nm", o], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "TW":  # functions: a table of another file's data is no call
                defined.setdefault(parts[2], node)
            elif len(parts) == 2 and parts[0] == "U":
                used[node].add(parts[1])
    edges = collections.defaultdict(set)
    for node in used:
        for sym in used[node]:
            if sym in defined and defined[sym] != node:
                edges[node].add(defined[sym])
                edges.setdefault(defined[sym], set())
    return edges


def check(root, objects):
    rank = load_layers(root)
    files = list(sources(root))
    owners = public_owners(root, files)
    known_path = os.path.join(root, "tests", "layers", "known")
    known = set()
    if os.path.exists(known_path):
        known = {l.strip() for l in read(known_path).splitlines() if l.strip() and not l.startswith("#")}
    seen, problems = set(), []
    layers_line = lambda f: "LAYERS: %s is on line %d" % (f, rank[f] + 1) if f in rank else "LAYERS has no %s" % f

    for inc, (_, _, folders) in sorted(owners.items()):
        if len(folders) > 1:
            key = "include/%s: %s" % (inc, " ".join(folders))
            seen.add(key)
            if key not in known:
                problems.append("include/%s: declares functions of %s: one header, one layer" % (inc, ", ".join(folders)))

    edges = collections.defaultdict(set)
    for p in files:
        if p.startswith("src/"):
            src_folder, me = folder_of(p), node_of(p)
        else:  # a public header stands where its functions are defined
            own = owners.get(p[len("include/"):])
            src_folder, me = (own[0], "include/" + os.path.splitext(p[len("include/"):])[0]) if own else (None, None)
        for n, line in enumerate(read(os.path.join(root, p)).splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            target = resolve(root, p, m.group(1), owners)
            if not target or not src_folder:
                continue
            folder, node = target
            if node != me:
                edges[me].add(node)
                edges.setdefault(node, set())
            if folder == src_folder:
                continue
            if folder in rank and src_folder in rank and rank[folder] > rank[src_folder]:
                continue
            key = "%s: %s" % (p, m.group(1))
            seen.add(key)
            if key in known:
                continue
            why = ("%s may not include %s (%s)" % (src_folder, folder, "same layer" if rank.get(folder) == rank.get(src_folder)
                                                   else "a higher layer")) if folder in rank and src_folder in rank \
                else "a folder LAYERS does not place"
            problems.append("%s:%d: includes %s (%s): %s; %s; %s" % (p, n, m.group(1), folder, why,
                                                                   layers_line(src_folder), layers_line(folder)))

    for ring in rings(edges):
        key = "ring: " + " ".join(ring)
        seen.add(key)
        if key not in known:
            problems.append("ring of files that include each other: %s" % " <-> ".join(ring))
    calls = call_edges(objects)
    if calls is None:
        print("layers: no objects in %s: rings of calls not looked for" % objects)
        known = {k for k in known if not k.startswith("calls: ")}
    for node, targets in sorted((calls or {}).items()):
        mine = node.split("/")[0]
        for t in sorted(targets):
            theirs = t.split("/")[0]
            if theirs == mine or rank.get(theirs, -1) > rank.get(mine, len(rank)):
                continue
            key = "src/%s.c: calls %s" % (node, t)
            seen.add(key)
            if key not in known:
                problems.append("src/%s.c: uses what src/%s.c defines: %s may not call %s; %s; %s" % (
                    node, t, mine, theirs, layers_line(mine), layers_line(theirs)))
    for ring in rings(calls or {}):
        key = "calls: " + " ".join(ring)
        seen.add(key)
        if key not in known:
            problems.append("ring of files that call each other: %s" % " <-> ".join(ring))

    for stale in sorted(known - seen):
        problems.append("tests/layers/known: '%s' is not found any more: take it off the list" % stale)
    return problems, len(seen & known)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    ap.add_argument("--objects")
    a = ap.parse_args()
    problems, waived = check(a.root, a.objects or os.path.join(a.root, "build", "src"))
    for p in problems:
        print(p)
    print("layers: %d problem%s, %d known and listed in tests/layers/known" % (
        len(problems), "" if len(problems) == 1 else "s", waived))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
