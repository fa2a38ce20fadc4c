#!/usr/bin/env python3
"""Write fixtures/hf/llama_cpp_tensor_names.json from a llama.cpp source tree.

llama.cpp's converter (convert_hf_to_gguf.py) maps the tensor names of
Hugging Face checkpoints to GGUF names for every architecture it supports,
and its tables are kept against real uploads. They are an independent check
of tinspect's templates (src/model/hf/*.json) for the families no real index
or header was found for; tests/unit/test_hf_describe.c reads the
fixture this script writes.

Usage:
    llama_cpp_tensor_names.py LLAMA_CPP_DIR COMMIT [-o OUT.json]

LLAMA_CPP_DIR is a checkout (or `git archive`) of ggml-org/llama.cpp; COMMIT
is its commit, recorded in the fixture. Standard library only: the Python
files are parsed with `ast`, never imported or run.

What is read, and how:
  * gguf-py/gguf/constants.py: MODEL_ARCH_NAMES (architecture -> name),
    TENSOR_NAMES (tensor -> GGUF name, with {bid}) and MODEL_TENSORS
    (architecture -> the tensors it has). Module-level dict literals whose
    keys and items are MODEL_ARCH.X / MODEL_TENSOR.Y attributes.
  * gguf-py/gguf/tensor_mapping.py: TensorNameMap's class-level dicts
    mappings_cfg (tensors outside blocks), block_mappings_cfg (per block, with
    {bid}) and arch_block_mappings_cfg (an architecture's overrides, applied
    over block_mappings_cfg as TensorNameMap.__init__ does). The Hugging Face
    names there are module names: the converter tries them with ".weight"
    and ".bias" appended (ModelBase.map_tensor_name's try_suffixes).
  * The converter's classes (convert_hf_to_gguf.py and, in newer trees, the
    conversion/ package): the class registered for each Hugging Face
    architecture (@ModelBase.register), its model_arch and its base classes,
    and in each class of that chain the name rules of filter_tensors,
    modify_tensors and prepare_tensors that drop or rename a tensor before
    the table is consulted, plus the per-expert names that the MoE classes
    stack into one tensor (f-strings with {xid}). A rule whose condition
    reads anything besides the name (a config field) is kept with its guard
    as text, so a reader can tell when it applies.

Each rule records the file and line it comes from. The script fails (rather
than writing a partial fixture) when a family's Hugging Face architecture is
not registered or its class chain has no model_arch.
"""

import argparse
import ast
import json
import os
import sys

# tinspect family (model_type) -> the Hugging Face architectures of its
# committed config (fixtures/hf/*/config.json "architectures") and of the
# base model class. The llama.cpp architecture is read from the converter
# class registered for them, not assumed here.
FAMILIES = {
    "bert": ["BertForMaskedLM", "BertModel"],
    "roberta": ["RobertaForMaskedLM", "RobertaModel"],
    "t5": ["T5WithLMHeadModel", "T5ForConditionalGeneration"],
    "olmo2": ["Olmo2ForCausalLM"],
    "qwen2_moe": ["Qwen2MoeForCausalLM"],
    "qwen3_moe": ["Qwen3MoeForCausalLM"],
    "deepseek_v3": ["DeepseekV3ForCausalLM"],
    "vit": ["ViTModel", "ViTForImageClassification"],
}

# Methods of a converter class whose name rules are recorded.
RULE_METHODS = ("filter_tensors", "modify_tensors", "prepare_tensors")


class ParseError(Exception):
    pass


def parse(path):
    with open(path, encoding="utf-8") as f:
        return ast.parse(f.read(), filename=path)


def attr_member(node, enum):
    """'X' for the expression ENUM.X (or gguf.ENUM.X), else None."""
    if isinstance(node, ast.Attribute):
        base = node.value
        if isinstance(base, ast.Name) and base.id == enum:
            return node.attr
        if isinstance(base, ast.Attribute) and base.attr == enum:
            return node.attr
    return None


def module_dict(tree, name):
    for node in tree.body:
        target = None
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            target, value = node.target.id, node.value
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
        if target == name and isinstance(value, ast.Dict):
            return value
    raise ParseError(f"no dict literal '{name}' at module level")


def class_dict(tree, cls, name):
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) \
                        and item.target.id == name and isinstance(item.value, ast.Dict):
                    return item.value
    raise ParseError(f"no dict literal '{cls}.{name}'")


def strings(node):
    """The str constants of a tuple/list literal (or one constant)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        out = []
        for elt in node.elts:
            out.extend(strings(elt))
        return out
    raise ParseError(f"line {node.lineno}: expected string literals")


def read_constants(path):
    tree = parse(path)
    d = module_dict(tree, "MODEL_ARCH_NAMES")
    arch_names = {attr_member(k, "MODEL_ARCH"): v.value for k, v in zip(d.keys, d.values)}
    d = module_dict(tree, "TENSOR_NAMES")
    tensor_names = {attr_member(k, "MODEL_TENSOR"): v.value for k, v in zip(d.keys, d.values)}
    d = module_dict(tree, "MODEL_TENSORS")
    arch_tensors = {attr_member(k, "MODEL_ARCH"): [attr_member(e, "MODEL_TENSOR") for e in v.elts]
                    for k, v in zip(d.keys, d.values)}
    return arch_names, tensor_names, arch_tensors


def tensor_table(node):
    """{MODEL_TENSOR member: [names]} from a dict literal; later keys win, as in Python."""
    out = {}
    for k, v in zip(node.keys, node.values):
        out[attr_member(k, "MODEL_TENSOR")] = strings(v)
    return out


def read_mapping(path):
    tree = parse(path)
    plain = tensor_table(class_dict(tree, "TensorNameMap", "mappings_cfg"))
    block = tensor_table(class_dict(tree, "TensorNameMap", "block_mappings_cfg"))
    per_arch = {}
    d = class_dict(tree, "TensorNameMap", "arch_block_mappings_cfg")
    for k, v in zip(d.keys, d.values):
        per_arch[attr_member(k, "MODEL_ARCH")] = tensor_table(v)
    return plain, block, per_arch


# ---- the converter's classes ----------------------------------------------

def converter_files(root):
    files = []
    if os.path.exists(os.path.join(root, "convert_hf_to_gguf.py")):
        files.append("convert_hf_to_gguf.py")
    pkg = os.path.join(root, "conversion")
    if os.path.isdir(pkg):
        files.extend(sorted(os.path.join("conversion", f) for f in os.listdir(pkg) if f.endswith(".py")))
    if not files:
        raise ParseError("no convert_hf_to_gguf.py or conversion/ package")
    return files


def read_classes(root):
    """name -> {file, node, bases, arch, registered}; the first definition of a name wins."""
    classes = {}
    for rel in converter_files(root):
        for node in parse(os.path.join(root, rel)).body:
            if not isinstance(node, ast.ClassDef) or node.name in classes:
                continue
            registered = []
            for dec in node.decorator_list:
                if isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute) and dec.func.attr == "register":
                    registered.extend(a.value for a in dec.args if isinstance(a, ast.Constant))
            arch = None
            for item in node.body:
                if isinstance(item, (ast.Assign, ast.AnnAssign)):
                    targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                    if any(isinstance(t, ast.Name) and t.id == "model_arch" for t in targets):
                        arch = attr_member(item.value, "MODEL_ARCH")
            bases = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", None) for b in node.bases]
            classes[node.name] = {"file": rel, "node": node, "bases": bases, "arch": arch, "registered": registered}
    return classes


def class_chain(classes, name):
    """The class and its converter bases, most derived first (single inheritance first-base order)."""
    chain = []
    while name in classes and name not in chain:
        chain.append(name)
        name = classes[name]["bases"][0] if classes[name]["bases"] else None
    return chain


def is_name(node):
    return isinstance(node, ast.Name) and node.id == "name"


def name_tests(cond):
    """[(match, value)] when cond only tests the tensor name, else None.

    match is prefix, suffix, equals or contains; an `or` of tests is their
    union."""
    if isinstance(cond, ast.BoolOp) and isinstance(cond.op, ast.Or):
        out = []
        for v in cond.values:
            part = name_tests(v)
            if part is None:
                return None
            out.extend(part)
        return out
    if isinstance(cond, ast.Call) and isinstance(cond.func, ast.Attribute) and is_name(cond.func.value) \
            and cond.func.attr in ("startswith", "endswith") and len(cond.args) == 1:
        kind = "prefix" if cond.func.attr == "startswith" else "suffix"
        return [(kind, s) for s in strings(cond.args[0])]
    if isinstance(cond, ast.Compare) and len(cond.ops) == 1:
        left, op, right = cond.left, cond.ops[0], cond.comparators[0]
        if is_name(left) and isinstance(op, ast.Eq) and isinstance(right, ast.Constant):
            return [("equals", right.value)]
        if is_name(left) and isinstance(op, ast.In) and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
            return [("equals", s) for s in strings(right)]
        if isinstance(left, ast.Constant) and isinstance(op, ast.In) and is_name(right):
            return [("contains", left.value)]
        # name.find("x") != -1
        if isinstance(left, ast.Call) and isinstance(left.func, ast.Attribute) and is_name(left.func.value) \
                and left.func.attr == "find" and isinstance(op, ast.NotEq):
            return [("contains", s) for s in strings(left.args[0])]
    return None


def is_drop(stmt):
    """True for a statement that ends the tensor: continue, return None, a bare return."""
    if isinstance(stmt, ast.Continue):
        return True
    return isinstance(stmt, ast.Return) and (
        stmt.value is None or (isinstance(stmt.value, ast.Constant) and stmt.value.value is None))


def yields(stmt):
    return any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(stmt))


def rename_of(stmt):
    """(kind, from, to) for a statement that renames `name`, else None."""
    if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
        return None
    value = stmt.value
    # X = name.replace("a", "b") (also into another variable: DeepSeek's k_b/v_b split)
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "replace" \
            and is_name(value.func.value) and all(isinstance(a, ast.Constant) for a in value.args):
        return ("replace", value.args[0].value, value.args[1].value)
    if not (isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id == "name"):
        return None
    # name = "x"
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return ("set", None, value.value)
    # name = name[N:] under name.startswith(P): P removed
    if isinstance(value, ast.Subscript) and is_name(value.value) and isinstance(value.slice, ast.Slice) \
            and value.slice.upper is None and value.slice.lower is not None:
        return ("strip_prefix", None, "")
    # name = name[:-N] + "x" under name.endswith(S): S replaced by "x"
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add) and isinstance(value.left, ast.Subscript) \
            and is_name(value.left.value) and isinstance(value.right, ast.Constant):
        return ("replace_suffix", None, value.right.value)
    return None


def walk_rules(stmts, rel, guards, tests, out):
    """Collect the drop and rename rules of a method body.

    tests are the name tests of the innermost enclosing `if` that tests the
    name alone; the conditions of other enclosing ifs are kept, as text, in
    the rule's guard. A return after a yield in the same block ends a
    handled tensor, not a dropped one, and is not a drop."""
    yielded = False
    for stmt in stmts:
        if isinstance(stmt, ast.If):
            t = name_tests(stmt.test)
            text = ast.unparse(stmt.test)
            if t is not None:
                walk_rules(stmt.body, rel, guards, t, out)
                walk_rules(stmt.orelse, rel, guards + [f"not ({text})"], tests, out)
            else:
                walk_rules(stmt.body, rel, guards + [text], tests, out)
                walk_rules(stmt.orelse, rel, guards + [f"not ({text})"], tests, out)
        elif isinstance(stmt, (ast.For, ast.While, ast.With)):
            walk_rules(stmt.body, rel, guards, tests, out)
        elif tests is not None:
            rule = None
            if is_drop(stmt) and not yielded:
                rule = {"rule": "drop"}
            elif (r := rename_of(stmt)) is not None:
                kind, old, new = r
                rule = {"rule": kind, "to": new}
                if old is not None:
                    rule["from"] = old
            if rule is not None:
                for match, value in tests:
                    out.append({**rule, "match": match, "value": value,
                                "guard": " and ".join(guards) or None, "where": f"{rel}:{stmt.lineno}"})
        yielded = yielded or yields(stmt)


def render_fstring(node, values):
    """The pattern of an f-string: {bid}/{xid} kept, loop variables substituted."""
    out = ""
    for part in node.values:
        if isinstance(part, ast.Constant):
            out += part.value
        elif isinstance(part, ast.FormattedValue) and isinstance(part.value, ast.Name):
            var = part.value.id
            out += values[var] if var in values else "{" + var + "}"
        else:
            return None
    return out


def expert_names(stmts, rel, values, out):
    """Per-expert names the class stacks: for each `for V in [literals]` enclosing an
    f-string with {xid}, the per-expert pattern and the stacked name it feeds."""
    for stmt in stmts:
        if isinstance(stmt, ast.For) and isinstance(stmt.target, ast.Name) \
                and isinstance(stmt.iter, (ast.List, ast.Tuple)):
            for v in strings(stmt.iter):
                found = []
                for node in ast.walk(stmt):
                    if isinstance(node, ast.JoinedStr):
                        p = render_fstring(node, {**values, stmt.target.id: v})
                        if p is not None:
                            found.append((node.lineno, p))
                per_expert = [p for _, p in found if "{xid}" in p]
                stacked = [p for _, p in found if "{xid}" not in p and "{bid}" in p]
                if per_expert and stacked:
                    out.append({"per_expert": per_expert[0], "stacked": stacked[0],
                                "where": f"{rel}:{min(ln for ln, p in found if p == per_expert[0])}"})
        elif hasattr(stmt, "body") and isinstance(stmt.body, list):
            expert_names(stmt.body, rel, values, out)
            expert_names(getattr(stmt, "orelse", []), rel, values, out)


def strip_suffix(name):
    for s in (".weight", ".bias"):
        if name.endswith(s):
            return name[: -len(s)]
    return name


def class_entry(classes, cls, tensors):
    """A converter class's rules, and the per-expert names it stacks (with the tensor
    each stack maps to, found by the stacked name in the tables)."""
    info = classes[cls]
    rules, stacks = [], []
    for item in info["node"].body:
        if isinstance(item, ast.FunctionDef) and item.name in RULE_METHODS:
            found = []
            walk_rules(item.body, info["file"], [], None, found)
            rules.extend({**r, "method": item.name} for r in found)
            expert_names(item.body, info["file"], {}, stacks)
    for st in stacks:
        stacked = strip_suffix(st["stacked"])
        st["tensor"] = next((t for t, e in tensors.items() if stacked in e["hf"]), None)
        st["per_expert"] = strip_suffix(st["per_expert"])
        st["stacked"] = stacked
    return {"file": info["file"], "registered": info["registered"],
            "model_arch": info["arch"], "rules": rules, "stacks": stacks}


def family_entry(family, hf_archs, classes, consts, per_arch):
    arch_names, _, arch_tensors = consts
    cls = next((c for c, info in classes.items() for a in hf_archs if a in info["registered"]), None)
    if cls is None:
        return {"hf_architectures": hf_archs, "llama_cpp_arch": None,
                "note": "no converter class is registered for " + ", ".join(hf_archs)}
    chain = class_chain(classes, cls)
    arch = next((classes[c]["arch"] for c in chain if classes[c]["arch"]), None)
    if arch is None:
        raise ParseError(f"{family}: no model_arch in the class chain {chain}")
    if arch in per_arch:
        # TensorNameMap.__init__ lays these over block_mappings_cfg; the fixture
        # keeps one table for all architectures, so say so rather than be wrong
        raise ParseError(f"{family}: {arch} has arch_block_mappings_cfg overrides, not supported")
    return {
        "hf_architectures": [a for a in hf_archs if a in classes[cls]["registered"]],
        "llama_cpp_arch": arch_names[arch],
        "converter_chain": chain,
        "tensors": arch_tensors[arch],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("llama_cpp_dir")
    ap.add_argument("commit")
    ap.add_argument("-o", "--output", default="fixtures/hf/llama_cpp_tensor_names.json")
    args = ap.parse_args()
    root = args.llama_cpp_dir
    try:
        consts = read_constants(os.path.join(root, "gguf-py/gguf/constants.py"))
        plain, block, per_arch = read_mapping(os.path.join(root, "gguf-py/gguf/tensor_mapping.py"))
        classes = read_classes(root)
        families = {f: family_entry(f, a, classes, consts, per_arch) for f, a in FAMILIES.items()}
        # the tables of the tensors the families have, once each
        used = sorted({t for f in families.values() for t in f.get("tensors", [])})
        tensors = {}
        for t in used:
            gguf = consts[1][t]
            # TensorNameMap.__init__ reads both tables for every tensor (T5's
            # encoder/decoder output norms sit in block_mappings_cfg, without {bid})
            tensors[t] = {"gguf": gguf, "hf": plain.get(t, []) + block.get(t, [])}
        chains = sorted({c for f in families.values() for c in f.get("converter_chain", [])})
        converter = {c: class_entry(classes, c, tensors) for c in chains}
    except (OSError, SyntaxError, ParseError) as e:
        print(f"llama_cpp_tensor_names: {e}", file=sys.stderr)
        return 1
    files = ["gguf-py/gguf/constants.py", "gguf-py/gguf/tensor_mapping.py"]
    files += sorted({c["file"] for c in converter.values()})
    doc = {
        "about": "The Hugging Face tensor names llama.cpp's converter maps, for tinspect's families; "
                 "written by tests/conformance/llama_cpp_tensor_names.py. Names are module names: "
                 "the converter tries each tensor name less '.weight' or '.bias'; {bid} is the block, "
                 "{xid} the expert.",
        "llama_cpp": {"repository": "ggml-org/llama.cpp", "commit": args.commit, "files": files},
        "families": families,
        "converter_classes": converter,
        "tensors": tensors,
    }
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
