"""Building and running models on the meta device.

PyTorch 2.x: `with torch.device("meta")`. PyTorch 1.13: a TorchFunctionMode
that adds device="meta" to factory calls that name no device.
"""
import contextlib

import torch

FACTORIES = frozenset((
    "empty", "zeros", "ones", "full", "rand", "randn", "randint", "randperm", "arange", "range",
    "tensor", "as_tensor", "eye", "linspace", "logspace", "empty_strided", "scalar_tensor",
    "normal", "bartlett_window", "hann_window", "hamming_window", "blackman_window", "tril_indices",
    "triu_indices", "zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like",
))


@contextlib.contextmanager
def meta_factories():
    """Factory calls without a device create meta tensors, while inside."""
    if hasattr(torch, "device") and hasattr(torch.device, "__enter__"):  # PyTorch >= 2.0
        with torch.device("meta"):
            yield
        return
    from torch.overrides import TorchFunctionMode

    class _Meta(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            name = getattr(func, "__name__", None)
            if name in FACTORIES and kwargs.get("device") is None and not name.endswith("_like"):
                kwargs["device"] = "meta"
            return func(*args, **kwargs)

    with _Meta():
        yield


def model_device(model):
    """The device of the model's first tensor (meta when it has none)."""
    for t in list(model.parameters()) + list(model.buffers()):
        return t.device
    return torch.device("meta")


def make_input(shape, dtype, device):
    """An input tensor of that shape: empty on meta, small values elsewhere."""
    if device.type == "meta":
        return torch.empty(shape, dtype=dtype, device=device)
    if dtype.is_floating_point or dtype.is_complex:
        return torch.randn(shape, device=device).to(dtype)
    return torch.zeros(shape, dtype=dtype, device=device)



@contextlib.contextmanager
def meta_parameters():
    """Parameters and buffers move to the meta device as modules register them.

    For factories that compute with tensors (regnet's torch.arange(...).tolist())
    and so fail under meta_factories: the computing happens on the CPU, while
    each parameter is allocated there only until it is registered (never
    touched: its initialisation then runs on meta).
    """
    Module = torch.nn.Module
    old_param, old_buffer = Module.register_parameter, Module.register_buffer

    def register_parameter(self, name, param):
        old_param(self, name, param)
        p = self._parameters.get(name)
        if p is not None and p.device.type != "meta":
            self._parameters[name] = type(p)(p.to("meta"), requires_grad=p.requires_grad)

    def register_buffer(self, name, tensor, *args, **kwargs):
        old_buffer(self, name, tensor, *args, **kwargs)
        b = self._buffers.get(name)
        if b is not None and b.device.type != "meta":
            self._buffers[name] = b.to("meta")

    Module.register_parameter, Module.register_buffer = register_parameter, register_buffer
    try:
        yield
    finally:
        Module.register_parameter, Module.register_buffer = old_param, old_buffer
