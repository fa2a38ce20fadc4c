"""Tests of tinspect_export on small models (python3 -m unittest in tools/export/tests).

With TINSPECT set to a tinspect binary, the exports also go through
`tinspect shapes` and `tinspect params` and are compared with PyTorch.
"""
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import torch  # noqa: E402
import torch.fx  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "tests", "conformance"))
import small_models  # noqa: E402
from safetensors_io import load_safetensors, save_safetensors  # noqa: E402
from tinspect_export import ExportError, export, parse_input  # noqa: E402
from tinspect_export.cli import main  # noqa: E402
from tinspect_export.meta import meta_factories  # noqa: E402
from tinspect_export.steps import fit  # noqa: E402

TINSPECT = os.environ.get("TINSPECT")


def pad_to_eight(x):
    """A function tinspect does not know, wrapped so fx keeps it whole."""
    n = x.shape[-1]
    return F.pad(x, (0, 8 - n % 8 if n % 8 else 0))


torch.fx.wrap("pad_to_eight")


class Padded(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)
        self.unfold = nn.Unfold(2)   # a torch.nn leaf tinspect does not model

    def forward(self, x, img):
        return {"y": self.fc(pad_to_eight(x)), "patches": self.unfold(img)}


class ZeroedKeyBias(nn.Module):
    """Swin v2's q/k/v bias: a copy whose middle third is zeroed through a slice view."""

    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(4, 12)

    def forward(self, x):
        bias = self.qkv.bias.clone()
        bias[4:8].zero_()
        return F.linear(x, self.qkv.weight, bias)


class Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(16, 8, num_layers=2, batch_first=True, bidirectional=True)
        self.head = nn.Linear(16, 3)

    def forward(self, x, mask=None):
        o, (hn, cn) = self.lstm(x)
        return self.head(o), hn.sum(0) + cn.mean(0)


def state_dict_names(desc):
    from verify_torchvision import description_state_dict
    return description_state_dict(desc)


class ParseInput(unittest.TestCase):
    def test_forms(self):
        self.assertEqual(parse_input("N,3,224,224"), (["N", 3, 224, 224], torch.float32))
        self.assertEqual(parse_input("8x3x32x32:float16"), ([8, 3, 32, 32], torch.float16))
        self.assertEqual(parse_input(("B,T", "int64")), (["B", "T"], torch.int64))
        self.assertEqual(parse_input((2, 3)), ([2, 3], torch.float32))
        self.assertEqual(parse_input((("N", 3), torch.int32)), (["N", 3], torch.int32))
        self.assertEqual(parse_input(torch.zeros(2, 5, dtype=torch.long)), ([2, 5], torch.int64))
        with self.assertRaises(ValueError):
            parse_input("3x?")


class Fit(unittest.TestCase):
    def test_formulas(self):
        runs = [{"N": 2, "T": 5}, {"N": 3, "T": 5}, {"N": 4, "T": 5}, {"N": 2, "T": 6}, {"N": 2, "T": 7},
                {"N": 3, "T": 6}]
        self.assertEqual(fit([b["N"] * 197 for b in runs], runs), "197*N")
        self.assertEqual(fit([2 * b["N"] + 1 for b in runs], runs), "2*N + 1")
        self.assertEqual(fit([b["N"] * b["T"] for b in runs], runs), "N*T")
        self.assertIsNone(fit([b["T"] ** 2 for b in runs], runs))


class Export(unittest.TestCase):
    def check(self, model, result):
        self.assertEqual(len(result.reference), len(result.description["graph"]))
        want = [(k, list(v.shape)) for k, v in model.state_dict().items()]
        self.assertEqual(state_dict_names(result.description), want)
        if TINSPECT:
            from verify_torchvision import compare_with_tinspect
            with tempfile.TemporaryDirectory() as d:
                path = os.path.join(d, "m.json")
                with open(path, "w") as f:
                    json.dump(result.description, f)
                self.assertEqual(compare_with_tinspect(TINSPECT, path, result, model), "")

    def test_gpt2_record_keeps_symbols(self):
        with meta_factories():
            model = small_models.gpt2().eval()
        r = export(model, {"idx": ("B,T", "int64")}, symbolic={"T": 8})
        self.assertEqual(r.tracer, "record")
        self.assertEqual(r.bindings, {"B": 2, "T": 8})
        text = json.dumps(r.description)
        self.assertIn('["split_1", "B", "T", 4, 16]', text.replace("view\", \"args\": ", ""))
        self.assertEqual(r.description["tied"], {"lm_head.weight": "transformer.wte.weight"})
        block = r.description["modules"]["transformer"]["modules"]["h"]["modules"]["0"]["modules"]
        self.assertEqual(block["attn"]["buffers"]["bias"], {"shape": [1, 1, 64, 64], "dtype": "float32"})
        self.assertEqual(block["mlp"]["type"], "Sequential")
        self.assertEqual(block["mlp"]["modules"]["1"], {"type": "GELU", "approximate": "tanh"})
        self.assertEqual(r.reference[-1], [((2, 8, 1000), "float32")])
        self.check(model, r)

    def test_llama_on_cpu(self):
        model = small_models.llama().eval()
        r = export(model, {"tokens": ("B,T", torch.int64)}, symbolic={"T": 6})
        self.assertEqual(r.tracer, "record")
        self.assertEqual(r.description["buffers"]["inv_freq"]["persistent"], False)
        self.assertEqual(r.reference[-1], [((2, 6, 1000), "float32")])
        self.check(model, r)

    def test_fx_expands_unknown_functions_and_opaque_leaves(self):
        model = Padded().eval()
        r = export(model, {"x": "N,5", "img": "N,3,4,4"})
        self.assertEqual(r.tracer, "fx")
        self.assertEqual(r.description["outputs"], ["y", "patches"])
        ops = [s.get("op") for s in r.description["graph"]]
        self.assertIn("pad", ops)
        opaque = [s for s in r.description["graph"] if "opaque" in s]
        self.assertEqual(len(opaque), 1)
        self.assertEqual(opaque[0]["module"], "unfold")
        self.assertEqual(opaque[0]["outputs"], [{"shape": ["N", 12, 9], "dtype": "float32"}])
        self.assertEqual([(i, w) for i, w, _ in r.opaque], [(len(ops) - 1, "unfold")])
        self.assertEqual(r.reference[-1], [((2, 12, 9), "float32")])
        self.check(model, r)

    def test_nested_results_are_taken_by_getitem(self):
        model = Recurrent().eval()
        r = export(model, {"x": "N,T,16"}, tracer="record", symbolic={"T": 5})
        graph = r.description["graph"]
        self.assertEqual(graph[0]["out"], ["lstm", "lstm_1"])
        self.assertEqual(r.reference[0], [((2, 5, 16), "float32"), ((4, 2, 8), "float32"), ((4, 2, 8), "float32")])
        self.assertIn({"out": "lstm_1_0", "op": "getitem", "args": ["lstm_1", 0]}, graph)
        self.check(model, r)

    def test_an_in_place_op_on_a_slice_writes_back_into_its_base(self):
        model = ZeroedKeyBias().eval()
        for tracer in ("fx", "record"):
            r = export(model, {"x": "N,4"}, tracer=tracer)
            graph = r.description["graph"]
            writes = [s for s in graph if s.get("op") == "setitem"]
            self.assertEqual(len(writes), 1, tracer)
            base = writes[0]["args"][0]
            self.assertEqual(writes[0]["out"], base, "x[i].zero_() changes x: its name carries the new value")
            linear = next(s for s in graph if s.get("op") == "linear")
            self.assertEqual(linear["args"][2], base, "the linear reads the bias with its middle third zeroed")
            if TINSPECT:
                with tempfile.TemporaryDirectory() as d:
                    path = os.path.join(d, "m.json")
                    with open(path, "w") as f:
                        json.dump(r.description, f)
                    x = torch.randn(2, 4)
                    save_safetensors(model.state_dict(), os.path.join(d, "w.safetensors"))
                    save_safetensors({"x": x}, os.path.join(d, "x.safetensors"))
                    subprocess.run([TINSPECT, "run", path, "--bind", "N=2", "--weights", os.path.join(d, "w.safetensors"),
                                    "--input", "x=" + os.path.join(d, "x.safetensors") + ":x", "--save",
                                    os.path.join(d, "y.safetensors")], check=True, capture_output=True)
                    got = next(iter(load_safetensors(os.path.join(d, "y.safetensors")).values()))
                    with torch.no_grad():
                        want = model(x)
                    self.assertTrue(torch.allclose(got, want, atol=1e-6), (tracer, got, want))

    def test_record_matches_fx_reference(self):
        model = Padded().eval()
        a = export(model, {"x": "N,5", "img": "N,3,4,4"}, tracer="fx")
        b = export(model, {"x": "N,5", "img": "N,3,4,4"}, tracer="record")
        self.assertEqual(a.reference, b.reference)

    def test_fx_only_fails_cleanly(self):
        with meta_factories():
            model = small_models.gpt2().eval()
        with self.assertRaises(ExportError):
            export(model, {"idx": ("B,T", "int64")}, tracer="fx")


class Cli(unittest.TestCase):
    def run_cli(self, *argv):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            try:
                rc = main(list(argv))
            except SystemExit as e:
                rc = e.code
        return rc, out.getvalue(), err.getvalue()

    def test_usage_and_refusals(self):
        self.assertEqual(self.run_cli("small_models:gpt2")[0], 2)
        self.assertEqual(self.run_cli("small_models", "--input", "x=2")[0], 2)
        self.assertEqual(self.run_cli("small_models:nothing", "--input", "x=2")[0], 2)
        self.assertEqual(self.run_cli("small_models:gpt2", "--input", "idx=B,T:int64", "--symbolic", "Q=3")[0], 2)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "gpt.json")
            rc, _, err = self.run_cli("small_models:gpt2", "--input", "idx=B,T:int64", "-o", path)
            self.assertEqual(rc, 0, err)
            self.assertIn("tracer record", err)
            rc, _, err = self.run_cli("small_models:gpt2", "--input", "idx=B,T:int64", "-o", path)
            self.assertEqual(rc, 1)
            self.assertIn("exists", err)
            self.assertEqual(os.listdir(d), ["gpt.json"])

    def test_error_names_the_module(self):
        rc, _, err = self.run_cli("small_models:gpt2", "--input", "idx=B,T:float32")
        self.assertEqual(rc, 1)
        self.assertIn("transformer.wte (Embedding)", err)

    def test_an_error_is_one_line_and_writes_nothing(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "cnn.json")
            rc, _, err = self.run_cli("torchvision.models:resnet18", "--input", "x=1x5x64x64", "-o", path)
            self.assertEqual(rc, 1)
            self.assertEqual(err.count("\n"), 1, err)  # fx's "While executing ..." is left out
            self.assertIn("conv1 (Conv2d)", err)
            self.assertEqual(os.listdir(d), [])

    def test_script_help(self):
        script = os.path.join(os.path.dirname(HERE), "tinspect-export")
        p = subprocess.run([sys.executable, script, "--help"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0)
        self.assertIn("--input", p.stdout)

    def test_a_python_without_torch_gets_help_and_one_line_saying_which_python(self):
        script = os.path.join(os.path.dirname(HERE), "tinspect-export")
        with tempfile.TemporaryDirectory() as d:
            # a torch that cannot be imported, first on the path: the Python the user has on PATH
            os.mkdir(os.path.join(d, "torch"))
            with open(os.path.join(d, "torch", "__init__.py"), "w") as f:
                f.write("raise ImportError('No module named torch')\n")
            env = dict(os.environ, PYTHONPATH=d)
            env.pop("TINSPECT_PYTHON", None)
            p = subprocess.run([sys.executable, script, "--help"], capture_output=True, text=True, env=env)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("--input", p.stdout)
            p = subprocess.run([sys.executable, script, "torchvision.models:resnet18", "--input", "x=1x3x8x8"],
                               capture_output=True, text=True, env=env)
            self.assertEqual(p.returncode, 2)
            self.assertEqual(p.stderr.count("\n"), 1, p.stderr)  # one line, no traceback
            self.assertIn(sys.executable, p.stderr)
            self.assertIn("TINSPECT_PYTHON", p.stderr)
            self.assertIn("python -m tinspect_export", p.stderr)
            # TINSPECT_PYTHON names the Python to run instead: this one, without the broken torch
            env2 = dict(os.environ, TINSPECT_PYTHON=sys.executable)
            p = subprocess.run(["/bin/sh", "-c", 'PYTHONPATH= exec "$0" "$@"', script, "--help"],
                               capture_output=True, text=True, env=env2)
            self.assertEqual(p.returncode, 0, p.stderr)

    def test_a_factory_beside_you_imports_and_a_typo_gets_a_suggestion(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "mymodels_here.py"), "w") as f:
                f.write("import torch\ndef tiny():\n    return torch.nn.Linear(4, 2)\n")
            script = os.path.join(os.path.dirname(HERE), "tinspect-export")
            p = subprocess.run([sys.executable, script, "mymodels_here:tiny", "--input", "x=N,4"], cwd=d,
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(json.loads(p.stdout)["inputs"]["x"]["shape"], ["N", 4])
            p = subprocess.run([sys.executable, script, "mymodels_here:tinny", "--input", "x=N,4"], cwd=d,
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 2)
            self.assertIn("did you mean 'mymodels_here:tiny'?", p.stderr)


if __name__ == "__main__":
    unittest.main()
