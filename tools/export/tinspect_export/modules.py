"""The module tree of a description, read from a live torch.nn.Module.

Every module of model.named_modules() appears under its own name, so the
description's state_dict names are the model's:
 - a leaf of a type tinspect knows: {"type": "Conv2d", <constructor args>}
   (only those that differ from the constructor's defaults);
 - Sequential / ModuleList / ModuleDict (exact classes): themselves, with
   their children as an object keyed by name;
 - anything else: {"type": "Module", "class": "pkg.mod.Class", "modules": ...}.
Tensors a module holds that its constructor does not create ("free" ones:
a ViT's class_token, a Swin block's relative_position_index) are listed
under "parameters" / "buffers". A known leaf's constructor arguments are
checked by building the same type on the meta device and comparing its
tensors with the live ones.
"""
import inspect

import torch

from .errors import ExportError
from .known import CONTAINERS, KNOWN_MODULES
from .names import dtype_name

# Arguments stored as tuples that read best as one int when uniform.
_COLLAPSE = {"kernel_size", "stride", "padding", "dilation", "output_padding"}
# Constructor arguments that are not kept as attributes of the same name.
_SKIP = {"device", "dtype", "self", "_weight", "_freeze", "init", "mode"}
# The transformer stacks: tinspect takes the layer's arguments flat.
_STACKS = {"TransformerEncoder", "TransformerDecoder", "Transformer"}


def known_type(m):
    """The tinspect type of module m, or None.

    A torch.nn class tinspect knows, or a subclass of one that keeps its
    forward (NonDynamicallyQuantizableLinear is a Linear).
    """
    cls = type(m)
    for c in cls.__mro__:
        name = c.__name__
        if name in KNOWN_MODULES and getattr(torch.nn, name, None) is c:
            return name if cls.forward is c.forward else None
    return None


def is_container(m):
    """Exactly Sequential, ModuleList or ModuleDict."""
    return type(m).__name__ in CONTAINERS and getattr(torch.nn, type(m).__name__, None) is type(m)


def is_library_leaf(m):
    """fx's default leaf policy: torch.nn modules other than Sequential."""
    mod = type(m).__module__
    return (mod.startswith("torch.nn") or mod.startswith("torch.ao.nn")) and not isinstance(m, torch.nn.Sequential)


def class_name(m):
    return type(m).__module__ + "." + type(m).__qualname__


def _plain(v):
    if isinstance(v, torch.Size):
        return list(v)
    if isinstance(v, tuple):
        return [_plain(x) for x in v]
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v


def _same(a, b):
    if isinstance(a, list) and not isinstance(b, list) and a and all(x == b for x in a):
        return True
    return a == b


def _read(m, name):
    """The value of constructor argument `name` as stored on module m."""
    if name == "bias":
        if isinstance(getattr(m, "bias", None), bool):
            return m.bias
        if hasattr(m, "in_proj_bias"):  # MultiheadAttention
            return m.in_proj_bias is not None
        if hasattr(m, "linear1"):  # transformer layers
            return m.linear1.bias is not None
        return getattr(m, "bias", None) is not None
    if name == "add_bias_kv":
        return m.bias_k is not None
    if name == "nonlinearity":
        return getattr(m, "nonlinearity", "tanh")
    if not hasattr(m, name):
        raise AttributeError(name)
    v = getattr(m, name)
    if callable(v) and not isinstance(v, torch.nn.Module):
        v = getattr(v, "__name__", v)
    return _plain(v)


def _layer_args(layer):
    """A transformer layer's constructor arguments."""
    act = layer.activation
    act = getattr(act, "__name__", None) or type(act).__name__.lower()
    return {
        "d_model": layer.self_attn.embed_dim, "nhead": layer.self_attn.num_heads,
        "dim_feedforward": layer.linear1.out_features, "dropout": layer.dropout.p,
        "activation": act, "layer_norm_eps": layer.norm1.eps,
        "batch_first": layer.self_attn.batch_first, "norm_first": getattr(layer, "norm_first", False),
        "bias": layer.linear1.bias is not None,
    }


_LAYER_DEFAULTS = {"dim_feedforward": 2048, "dropout": 0.1, "activation": "relu", "layer_norm_eps": 1e-05,
                   "batch_first": False, "norm_first": False, "bias": True}


def _stack_args(m, tname):
    if tname == "Transformer":
        enc, dec = m.encoder.layers, m.decoder.layers
        args = _layer_args(enc[0])
        args.update(num_encoder_layers=len(enc), num_decoder_layers=len(dec))
        return {k: v for k, v in args.items() if not (k in _LAYER_DEFAULTS and v == _LAYER_DEFAULTS[k])}
    args = _layer_args(m.layers[0])
    args["num_layers"] = len(m.layers)
    if m.norm is not None:
        args["norm"] = True
    for k in ("enable_nested_tensor", "mask_check"):
        if hasattr(m, k) and getattr(m, k) is False:
            args[k] = False
    return {k: v for k, v in args.items() if not (k in _LAYER_DEFAULTS and v == _LAYER_DEFAULTS[k])}


def _signature(cls):
    if cls.__name__ in ("LSTM", "GRU", "RNN"):
        sig = inspect.signature(torch.nn.RNNBase.__init__)
        params = [p for p in sig.parameters.values() if p.name not in _SKIP]
        if cls.__name__ == "RNN":
            params.insert(3, inspect.Parameter("nonlinearity", inspect.Parameter.KEYWORD_ONLY, default="tanh"))
        if cls.__name__ != "LSTM":
            params = [p for p in params if p.name != "proj_size"]
        return params
    sig = inspect.signature(cls.__init__)
    return [p for p in sig.parameters.values()
            if p.name not in _SKIP and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def constructor_args(m, tname):
    """The constructor arguments of known leaf m that differ from the defaults."""
    if tname in _STACKS:
        return _stack_args(m, tname)
    cls = getattr(torch.nn, tname)
    args = {}
    for p in _signature(cls):
        try:
            v = _read(m, p.name)
        except AttributeError:
            if p.default is inspect.Parameter.empty:
                raise ExportError("constructor argument %r is not stored on the module" % p.name)
            continue
        if p.default is not inspect.Parameter.empty and _same(v, p.default):
            continue
        if p.name in _COLLAPSE and isinstance(v, list) and v and all(x == v[0] for x in v):
            v = v[0]
        args[p.name] = v
    if tname == "MultiheadAttention":  # kdim=None is stored as embed_dim
        for k in ("kdim", "vdim"):
            if args.get(k) == m.embed_dim:
                del args[k]
    floats = [t for t in _tensors(m).values() if t.is_floating_point()]
    if floats and floats[0].dtype != torch.float32 and "dtype" in inspect.signature(cls.__init__).parameters:
        args["dtype"] = dtype_name(floats[0].dtype)
    return args


def _tensors(m):
    """Module m's own parameters and buffers (not its children's) by full name."""
    out = {}
    for n, sub in m.named_modules():
        for k, t in list(sub._parameters.items()) + list(sub._buffers.items()):
            if t is not None:
                out[(n + "." if n else "") + k] = t
    return out


def _reference_tensors(m, tname, args):
    """Build type tname(**args) on the meta device: its tensors by name."""
    from .meta import meta_factories
    cls = getattr(torch.nn, tname)
    kwargs = {k: v for k, v in args.items() if k != "dtype"}
    params = inspect.signature(cls.__init__).parameters
    if tname == "TransformerEncoder" or tname == "TransformerDecoder":
        return None  # tinspect's flat signature; nothing in torch.nn to rebuild it from
    if "dtype" in params:
        ts = [t for t in _tensors(m).values() if t.is_floating_point()]
        if ts:
            kwargs["dtype"] = ts[0].dtype
    with meta_factories():
        ref = cls(**kwargs)
    return {k: (tuple(t.shape), t.dtype) for k, t in _tensors(ref).items()}


def _free_entry(t, buffer, persistent=True):
    e = {"shape": list(t.shape), "dtype": dtype_name(t.dtype)}
    if buffer:
        if not persistent:
            e["persistent"] = False
    else:
        e["requires_grad"] = bool(t.requires_grad)
    return e


def _free(m, skip):
    """{"parameters": ..., "buffers": ...} for m's own tensors not in skip."""
    out = {}
    params = {k: _free_entry(t, False) for k, t in m._parameters.items() if t is not None and k not in skip}
    nonpersistent = getattr(m, "_non_persistent_buffers_set", set())
    buffers = {k: _free_entry(t, True, k not in nonpersistent)
               for k, t in m._buffers.items() if t is not None and k not in skip}
    if params:
        out["parameters"] = params
    if buffers:
        out["buffers"] = buffers
    return out


def describe(m, path=""):
    """The description entry of module m (at dotted path, for messages)."""
    tname = known_type(m)
    if tname:
        return _describe_leaf(m, tname, path)
    if is_container(m):
        entry = {"type": type(m).__name__}
    else:
        entry = {"type": "Module", "class": class_name(m)}
    if m._modules:
        entry["modules"] = {k: describe(c, _join(path, k)) for k, c in m._modules.items() if c is not None}
    entry.update(_free(m, ()))
    return entry


def _join(path, name):
    return path + "." + name if path else name


def _describe_leaf(m, tname, path):
    where = "%s (%s)" % (path or "<root>", tname)
    try:
        args = constructor_args(m, tname)
        ref = _reference_tensors(m, tname, args)
    except ExportError as e:
        raise ExportError("%s: %s" % (where, e)) from None
    except Exception as e:
        raise ExportError("%s: cannot rebuild it from its constructor arguments: %s" % (where, e)) from None
    entry = {"type": tname}
    entry.update(args)
    if ref is None:
        return entry
    live = _tensors(m)
    for k, (shape, dt) in ref.items():
        t = live.get(k)
        if t is None or tuple(t.shape) != shape:
            raise ExportError("%s: constructor arguments %s give %s %s, the module has %s" % (
                where, args, k, list(shape), None if t is None else list(t.shape)))
    own = {k for k in ref if "." not in k}
    extra = [k for k in live if k not in ref and "." in k]
    if extra:
        raise ExportError("%s: submodule tensors its constructor does not make: %s" % (where, ", ".join(extra)))
    entry.update(_free(m, own))
    return entry


def describe_root(model):
    """(modules, root free tensors) of the description of model."""
    modules = {k: describe(c, k) for k, c in model._modules.items() if c is not None}
    return modules, _free(model, ())


def tied(model):
    """{name: first name} for parameters reachable under two names."""
    seen, out = {}, {}
    for path, sub in model.named_modules(remove_duplicate=False):
        for k, t in sub._parameters.items():
            if t is None:
                continue
            name = _join(path, k)
            first = seen.setdefault(id(t), name)
            if first != name:
                out[name] = first
    return out


def module_paths(model):
    """id(module) -> first dotted path, and id(tensor) -> first dotted path."""
    mods, tensors = {}, {}
    for path, sub in model.named_modules(remove_duplicate=False):
        mods.setdefault(id(sub), path)
        for k, t in list(sub._parameters.items()) + list(sub._buffers.items()):
            if t is not None:
                tensors.setdefault(id(t), _join(path, k))
    return mods, tensors
