#!/usr/bin/env python3
"""Write fixtures/hf/vit_converter_names.json from transformers' ViT converter.

transformers' src/transformers/models/vit/convert_vit_timm_to_pytorch.py is
the script that converted timm's (Google's) ViT weights into the google/vit-*
uploads. Its create_rename_keys(config, base_model) and
read_in_q_k_v(state_dict, config, base_model) give every name the converted
state_dict has; they are an independent check of tinspect's ViT template
(src/model/hf/vit.json), for which no real index or header was found.
tests/unit/test_hf_describe.c reads the fixture this script writes.

Usage:
    vit_converter_names.py SCRIPT COMMIT [-o OUT.json]

SCRIPT is that file, COMMIT the huggingface/transformers commit it was read
at (recorded in the fixture). Standard library only: the script is parsed
with `ast`, never imported or run (it imports torch and timm).

How: the two functions are interpreted over their syntax tree, with
base_model=True (what the converter passes for the *_in21k models, which it
saves as ViTModel: google/vit-base-patch16-224-in21k). Only the constructs
they use are understood: assignments, `for i in range(config.X)` (run once,
with i as the text "{i}", so a layer's names keep {i}), `if base_model`,
list append/extend, f-strings, slices of strings, str.startswith,
conditional expressions and a one-generator list comprehension (the step
that strips "vit." from every name for the base model). A subscript
assignment to state_dict records the name written (read_in_q_k_v's q/k/v);
state_dict.pop records a name taken away. Anything else is an error, so a
changed converter fails here rather than giving a partial fixture.
"""

import argparse
import ast
import json
import sys

FUNCTIONS = ("create_rename_keys", "read_in_q_k_v")
LAYER = "{i}"


class ParseError(Exception):
    pass


class Opaque:
    """A value the names do not depend on (a tensor taken from state_dict)."""


class Interpreter:
    def __init__(self, function):
        self.env = {"base_model": True}
        self.written = []  # (name, line) assigned to state_dict[...]
        self.popped = []  # (name, line) taken by state_dict.pop(...)
        self.pair_lines = {}  # source name -> line of the first (source, target) literal met
        self.function = function

    def fail(self, node, what):
        raise ParseError(f"{self.function}, line {node.lineno}: {what}: {ast.unparse(node)}")

    # statements
    def run(self, stmts):
        for stmt in stmts:
            if isinstance(stmt, ast.Return):
                return self.value(stmt.value)
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                self.assign(stmt)
            elif isinstance(stmt, ast.For):
                self.loop(stmt)
            elif isinstance(stmt, ast.If):
                result = self.run(stmt.body if self.value(stmt.test) else stmt.orelse)
                if result is not None:
                    return result
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                self.value(stmt.value)
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                continue  # a docstring
            else:
                self.fail(stmt, "statement not understood")
        return None

    def assign(self, stmt):
        target = stmt.targets[0]
        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) \
                and target.value.id == "state_dict":
            self.written.append((self.value(target.slice), stmt.lineno))
        elif isinstance(target, ast.Name):
            self.env[target.id] = self.value(stmt.value)
        else:
            self.fail(stmt, "assignment not understood")

    def loop(self, stmt):
        it = stmt.iter
        if not (isinstance(stmt.target, ast.Name) and isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
                and it.func.id == "range" and len(it.args) == 1 and isinstance(it.args[0], ast.Attribute)
                and isinstance(it.args[0].value, ast.Name) and it.args[0].value.id == "config"):
            self.fail(stmt, "loop not over range(config.X)")
        if stmt.orelse:
            self.fail(stmt, "for ... else")
        self.env[stmt.target.id] = LAYER
        self.run(stmt.body)

    # expressions
    def value(self, node):
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in self.env:
                self.fail(node, "unknown name")
            return self.env[node.id]
        if isinstance(node, ast.JoinedStr):
            return "".join(self.value(part) for part in node.values)
        if isinstance(node, ast.FormattedValue):
            if node.format_spec is not None or node.conversion != -1:
                self.fail(node, "formatted value with a format")
            return str(self.value(node.value))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.value(node.left), self.value(node.right)
            if not (isinstance(left, str) and isinstance(right, str)):
                self.fail(node, "+ of anything but strings")
            return left + right
        if isinstance(node, ast.Tuple):
            t = tuple(self.value(e) for e in node.elts)
            if len(t) == 2 and isinstance(t[0], str):
                self.pair_lines.setdefault(t[0], node.lineno)
            return t
        if isinstance(node, ast.List):
            return [self.value(e) for e in node.elts]
        if isinstance(node, ast.Subscript):
            return self.subscript(node)
        if isinstance(node, ast.IfExp):
            return self.value(node.body) if self.value(node.test) else self.value(node.orelse)
        if isinstance(node, ast.ListComp):
            return self.comprehension(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        self.fail(node, "expression not understood")

    def subscript(self, node):
        base = self.value(node.value)
        if isinstance(base, Opaque):
            return base  # in_proj_weight[: config.hidden_size, :]: a tensor, not a name
        if not isinstance(base, (str, tuple, list)):
            self.fail(node, "subscript of a non-sequence")
        s = node.slice
        if isinstance(s, ast.Slice):
            if s.step is not None:
                self.fail(node, "slice with a step")
            lower = self.value(s.lower) if s.lower is not None else None
            upper = self.value(s.upper) if s.upper is not None else None
            return base[lower:upper]
        return base[self.value(s)]

    def comprehension(self, node):
        if len(node.generators) != 1 or node.generators[0].ifs or node.generators[0].is_async \
                or not isinstance(node.generators[0].target, ast.Name):
            self.fail(node, "comprehension not understood")
        gen = node.generators[0]
        out = []
        for item in self.value(gen.iter):
            self.env[gen.target.id] = item
            out.append(self.value(node.elt))
        del self.env[gen.target.id]
        return out

    def call(self, node):
        func = node.func
        if node.keywords or not isinstance(func, ast.Attribute):
            self.fail(node, "call not understood")
        if isinstance(func.value, ast.Name) and func.value.id == "state_dict":
            if func.attr != "pop" or len(node.args) != 1:
                self.fail(node, "state_dict call not understood")
            self.popped.append((self.value(node.args[0]), node.lineno))
            return Opaque()
        obj = self.value(func.value)
        args = [self.value(a) for a in node.args]
        if isinstance(obj, list) and func.attr in ("append", "extend") and len(args) == 1:
            getattr(obj, func.attr)(args[0])
            return None
        if isinstance(obj, str) and func.attr == "startswith" and len(args) == 1 and isinstance(args[0], str):
            return obj.startswith(args[0])
        self.fail(node, "method not understood")


def find_function(tree, name):
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise ParseError(f"no function '{name}' at module level")


def read_converter(path):
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    fn = find_function(tree, "create_rename_keys")
    interp = Interpreter(fn.name)
    rename_keys = interp.run(fn.body)
    if not isinstance(rename_keys, list) or not all(isinstance(p, tuple) and len(p) == 2 for p in rename_keys):
        raise ParseError("create_rename_keys does not return a list of pairs")
    renamed = [{"from": src, "to": dst, "line": interp.pair_lines[src]} for src, dst in rename_keys]
    fn = find_function(tree, "read_in_q_k_v")
    interp = Interpreter(fn.name)
    interp.run(fn.body)
    if not interp.written:
        raise ParseError("read_in_q_k_v writes no name")
    q_k_v = {
        "from": [{"name": n, "line": line} for n, line in interp.popped],
        "to": [{"name": n, "line": line} for n, line in interp.written],
    }
    return renamed, q_k_v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("script", help="src/transformers/models/vit/convert_vit_timm_to_pytorch.py")
    ap.add_argument("commit", help="the huggingface/transformers commit it was read at")
    ap.add_argument("-o", "--output", default="fixtures/hf/vit_converter_names.json")
    args = ap.parse_args()
    try:
        renamed, q_k_v = read_converter(args.script)
    except (OSError, SyntaxError, ParseError) as e:
        print(f"vit_converter_names.py: {e}", file=sys.stderr)
        return 1
    doc = {
        "about": "The state_dict names transformers' ViT converter writes for the base model (base_model=True: "
                 "ViTModel, the *_in21k uploads); written by tests/conformance/vit_converter_names.py. "
                 "{i} is the layer; each line is the script's.",
        "source": {
            "repository": "huggingface/transformers",
            "commit": args.commit,
            "file": "src/transformers/models/vit/convert_vit_timm_to_pytorch.py",
        },
        "base_model": True,
        "create_rename_keys": renamed,
        "read_in_q_k_v": q_k_v,
    }
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
