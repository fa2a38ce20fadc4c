"""
run_cases_conv.py - run_conformance.py's cases of the conv family: conv1d/2d/3d,
conv_transpose1d/2d/3d, bilinear (src/run/kernels/conv.c), the pools
(pool.c) and the norms (norm.c), as operators and as the modules that run
through them.
"""
from run_cases import op_case, module_case, graph_case, GEMM, ELEMENTWISE, EXACT


def conv(name, type_, shape, **kw):
    return module_case(name, dict(type=type_, **kw), GEMM, {"x": shape})


CONV = [
    conv("Conv3d", "Conv3d", [2, 3, 6, 7, 5], in_channels=3, out_channels=4, kernel_size=3, stride=[1, 2, 1],
         padding=1),
    conv("Conv3d groups dilation no bias", "Conv3d", [1, 4, 7, 6, 8], in_channels=4, out_channels=6,
         kernel_size=[2, 3, 3], groups=2, dilation=[1, 2, 1], padding=[0, 2, 1], bias=False),
    conv("Conv3d 1x1x1 unbatched", "Conv3d", [3, 4, 5, 2], in_channels=3, out_channels=2, kernel_size=1),
    conv("Conv3d same", "Conv3d", [1, 2, 5, 6, 4], in_channels=2, out_channels=3, kernel_size=[2, 3, 4],
         padding="same"),
    conv("Conv1d unbatched dilation", "Conv1d", [3, 13], in_channels=3, out_channels=4, kernel_size=3, dilation=3,
         padding=2),
    conv("Conv1d valid groups", "Conv1d", [2, 6, 9], in_channels=6, out_channels=9, kernel_size=2, groups=3,
         padding="valid"),
    conv("ConvTranspose1d", "ConvTranspose1d", [2, 3, 7], in_channels=3, out_channels=5, kernel_size=3, stride=2),
    conv("ConvTranspose1d unbatched padding", "ConvTranspose1d", [4, 6], in_channels=4, out_channels=2,
         kernel_size=4, stride=3, padding=1, output_padding=2, bias=False),
    conv("ConvTranspose2d", "ConvTranspose2d", [2, 4, 5, 6], in_channels=4, out_channels=3, kernel_size=3, stride=2,
         padding=1, output_padding=1),
    conv("ConvTranspose2d groups dilation", "ConvTranspose2d", [1, 6, 4, 5], in_channels=6, out_channels=4,
         kernel_size=[3, 2], stride=[1, 2], padding=[2, 0], groups=2, dilation=[2, 3]),
    conv("ConvTranspose2d stride 1", "ConvTranspose2d", [2, 3, 4, 4], in_channels=3, out_channels=3, kernel_size=1),
    conv("ConvTranspose3d", "ConvTranspose3d", [2, 3, 3, 4, 5], in_channels=3, out_channels=2, kernel_size=[2, 3, 2],
         stride=2, padding=[0, 1, 1], output_padding=[1, 0, 1]),
    conv("ConvTranspose3d groups unbatched", "ConvTranspose3d", [4, 3, 3, 3], in_channels=4, out_channels=6,
         kernel_size=2, groups=2, dilation=2, bias=False),
    module_case("ConvTranspose2d output_size", {"type": "ConvTranspose2d", "in_channels": 2, "out_channels": 3,
                                                "kernel_size": 3, "stride": 2}, GEMM, {"x": [1, 2, 4, 5]},
                output_size=[10, 12]),
    op_case("conv3d op", "conv3d", ["x", "w", "b"], GEMM, {"x": [2, 2, 4, 5, 6], "w": [4, 2, 2, 2, 3], "b": [4]},
            stride=[2, 1, 2], padding=[1, 0, 1]),
    op_case("conv_transpose2d op", "conv_transpose2d", ["x", "w", "b"], GEMM,
            {"x": [2, 4, 3, 5], "w": [4, 3, 2, 3], "b": [6]}, stride=2, groups=2, output_padding=1, dilation=1),
    graph_case("conv2d on a permuted input", [{"out": "p", "op": "permute", "args": ["x", [0, 3, 1, 2]]},
                                              {"out": "y", "op": "conv2d", "args": ["p", "w"], "padding": 1}],
               ["y"], GEMM, {"x": [2, 6, 5, 3], "w": [4, 3, 3, 3]}),
    graph_case("conv_transpose1d on a transposed weight",
               [{"out": "t", "op": "transpose", "args": ["w", 0, 1]},
                {"out": "y", "op": "conv_transpose1d", "args": ["x", "t"], "stride": 2}],
               ["y"], GEMM, {"x": [2, 3, 6], "w": [5, 3, 3]}),
    module_case("Bilinear", {"type": "Bilinear", "in1_features": 5, "in2_features": 4, "out_features": 3}, GEMM,
                {"x": [2, 3, 5], "z": [2, 3, 4]}, args=("x", "z")),
    module_case("Bilinear no bias", {"type": "Bilinear", "in1_features": 3, "in2_features": 6, "out_features": 2,
                                     "bias": False}, GEMM, {"x": [7, 3], "z": [7, 6]}, args=("x", "z")),
    graph_case("bilinear on a transposed input", [{"out": "t", "op": "transpose", "args": ["x", 0, 1]},
                                                  {"out": "y", "op": "bilinear", "args": ["t", "z", "w"]}],
               ["y"], GEMM, {"x": [4, 5], "z": [5, 3], "w": [2, 4, 3]}),
]

CASES = CONV


def pool(name, type_, shape, tol=EXACT, **kw):
    return module_case(name, dict(type=type_, **kw), tol, {"x": shape})


def pool_with_indices(name, op, shape, **kw):
    return graph_case(name, [dict(out=["y", "i"], op=op, args=["x"], return_indices=True, **kw)], ["y", "i"], EXACT,
                      {"x": shape})


POOL = [
    pool("MaxPool1d", "MaxPool1d", [2, 3, 11], kernel_size=3, stride=2, padding=1),
    pool("MaxPool1d unbatched dilation ceil", "MaxPool1d", [4, 12], kernel_size=2, stride=3, dilation=2,
         ceil_mode=True),
    pool("MaxPool2d dilation ceil", "MaxPool2d", [2, 3, 9, 10], kernel_size=[3, 2], stride=[2, 3], padding=[1, 1],
         dilation=[2, 1], ceil_mode=True),
    pool("MaxPool3d", "MaxPool3d", [2, 3, 5, 6, 7], kernel_size=[2, 3, 3], stride=2, padding=[1, 1, 0]),
    pool("MaxPool3d unbatched dilation ceil", "MaxPool3d", [3, 7, 6, 8], kernel_size=2, stride=[2, 1, 3],
         dilation=[2, 1, 2], ceil_mode=True),
    pool_with_indices("max_pool1d indices", "max_pool1d", [2, 3, 10], kernel_size=3, stride=2, padding=1),
    pool_with_indices("max_pool2d indices", "max_pool2d", [2, 3, 7, 8], kernel_size=3, stride=2, padding=1,
                      dilation=1, ceil_mode=True),
    pool_with_indices("max_pool3d indices", "max_pool3d", [1, 2, 5, 6, 5], kernel_size=[3, 2, 2], stride=2,
                      padding=1, dilation=[1, 2, 1]),
    pool_with_indices("adaptive_max_pool1d indices", "adaptive_max_pool1d", [2, 3, 10], output_size=[4]),
    pool_with_indices("adaptive_max_pool2d indices", "adaptive_max_pool2d", [2, 3, 7, 9], output_size=[3, 4]),
    pool_with_indices("adaptive_max_pool3d indices", "adaptive_max_pool3d", [2, 6, 5, 7], output_size=[4, 3, 5]),
    pool("MaxPool2d return_indices", "MaxPool2d", [1, 2, 6, 6], kernel_size=2, return_indices=True),
    pool("AvgPool1d", "AvgPool1d", [2, 3, 11], ELEMENTWISE, kernel_size=3, stride=2, padding=1),
    pool("AvgPool1d ceil no pad count", "AvgPool1d", [3, 10], ELEMENTWISE, kernel_size=4, stride=3, padding=2,
         ceil_mode=True, count_include_pad=False),
    pool("AvgPool1d ceil count pad", "AvgPool1d", [2, 2, 10], ELEMENTWISE, kernel_size=4, stride=3, padding=2,
         ceil_mode=True),
    pool("AvgPool2d divisor", "AvgPool2d", [2, 3, 8, 7], ELEMENTWISE, kernel_size=[3, 2], stride=[2, 1],
         padding=[1, 1], divisor_override=5),
    pool("AvgPool2d ceil count pad", "AvgPool2d", [1, 2, 7, 8], ELEMENTWISE, kernel_size=3, stride=2, padding=1,
         ceil_mode=True),
    pool("AvgPool3d", "AvgPool3d", [2, 3, 6, 5, 7], ELEMENTWISE, kernel_size=[2, 3, 3], stride=[2, 1, 2],
         padding=1),
    pool("AvgPool3d ceil no pad count", "AvgPool3d", [3, 7, 6, 8], ELEMENTWISE, kernel_size=3, stride=2, padding=1,
         ceil_mode=True, count_include_pad=False),
    pool("AvgPool3d divisor", "AvgPool3d", [1, 2, 5, 5, 5], ELEMENTWISE, kernel_size=2, divisor_override=3),
    pool("AdaptiveAvgPool1d", "AdaptiveAvgPool1d", [2, 3, 11], ELEMENTWISE, output_size=4),
    pool("AdaptiveAvgPool1d to 1", "AdaptiveAvgPool1d", [3, 9], ELEMENTWISE, output_size=1),
    pool("AdaptiveAvgPool2d None", "AdaptiveAvgPool2d", [2, 3, 10, 7], ELEMENTWISE, output_size=[None, 2]),
    pool("AdaptiveAvgPool2d larger", "AdaptiveAvgPool2d", [1, 2, 3, 4], ELEMENTWISE, output_size=[5, 7]),
    pool("AdaptiveAvgPool3d", "AdaptiveAvgPool3d", [2, 3, 7, 6, 9], ELEMENTWISE, output_size=[3, 4, 5]),
    pool("AdaptiveAvgPool3d None unbatched", "AdaptiveAvgPool3d", [3, 5, 6, 7], ELEMENTWISE,
         output_size=[2, None, 3]),
    pool("AdaptiveAvgPool3d to 1", "AdaptiveAvgPool3d", [2, 3, 4, 5, 6], ELEMENTWISE, output_size=1),
    pool("AdaptiveMaxPool1d", "AdaptiveMaxPool1d", [2, 3, 11], output_size=4),
    pool("AdaptiveMaxPool2d", "AdaptiveMaxPool2d", [2, 3, 11, 5], output_size=[3, None]),
    pool("AdaptiveMaxPool3d", "AdaptiveMaxPool3d", [2, 3, 5, 7, 6], output_size=[2, 3, 4]),
    pool("AdaptiveMaxPool3d indices", "AdaptiveMaxPool3d", [2, 3, 5, 7, 6], output_size=2, return_indices=True),
    graph_case("max_pool2d on a permuted input", [{"out": "p", "op": "permute", "args": ["x", [0, 3, 1, 2]]},
                                                  {"out": "y", "op": "max_pool2d", "args": ["p", 3],
                                                   "stride": 2}], ["y"], EXACT, {"x": [2, 7, 8, 3]}),
    graph_case("avg_pool3d on a transposed input", [{"out": "p", "op": "transpose", "args": ["x", 1, 4]},
                                                    {"out": "y", "op": "avg_pool3d", "args": ["p", 2]}],
               ["y"], ELEMENTWISE, {"x": [2, 4, 5, 6, 3]}),
]

CASES = CONV + POOL


def norm(name, type_, shape, **kw):
    return module_case(name, dict(type=type_, **kw), ELEMENTWISE, {"x": shape})


NORM = [
    norm("InstanceNorm1d", "InstanceNorm1d", [2, 3, 9], num_features=3),
    norm("InstanceNorm1d unbatched affine", "InstanceNorm1d", [4, 7], num_features=4, affine=True),
    norm("InstanceNorm2d affine", "InstanceNorm2d", [2, 3, 5, 6], num_features=3, affine=True),
    norm("InstanceNorm2d running stats", "InstanceNorm2d", [2, 3, 5, 6], num_features=3, track_running_stats=True),
    norm("InstanceNorm3d", "InstanceNorm3d", [2, 4, 3, 5, 4], num_features=4, eps=1e-3),
    norm("InstanceNorm3d running stats affine unbatched", "InstanceNorm3d", [3, 4, 5, 2], num_features=3,
         affine=True, track_running_stats=True),
    op_case("instance_norm weight bias", "instance_norm", ["x"], ELEMENTWISE,
            {"x": [2, 3, 4, 5], "w": [3], "b": [3]}, weight="w", bias="b"),
    op_case("instance_norm running stats", "instance_norm", ["x"], ELEMENTWISE,
            {"x": [2, 3, 7], "m": [3], "w": [3]}, running_mean="m", running_var="w", use_input_stats=False),
    norm("BatchNorm1d 2d input", "BatchNorm1d", [5, 4], num_features=4),
    norm("BatchNorm1d 3d input", "BatchNorm1d", [2, 4, 6], num_features=4),
    norm("BatchNorm3d", "BatchNorm3d", [2, 3, 4, 3, 5], num_features=3),
    norm("BatchNorm2d batch statistics", "BatchNorm2d", [3, 4, 5, 2], num_features=4, track_running_stats=False),
    norm("BatchNorm1d batch statistics no affine", "BatchNorm1d", [6, 3], num_features=3, affine=False,
         track_running_stats=False),
    op_case("batch_norm training weight bias", "batch_norm", ["x", None, None, "w", "b"], ELEMENTWISE,
            {"x": [3, 4, 5], "w": [4], "b": [4]}, training=True),
    graph_case("batch_norm on a permuted input", [{"out": "p", "op": "permute", "args": ["x", [0, 3, 1, 2]]},
                                                  {"out": "y", "op": "batch_norm",
                                                   "args": ["p", None, None], "training": True}],
               ["y"], ELEMENTWISE, {"x": [2, 4, 5, 3]}),
    norm("GroupNorm 3d input", "GroupNorm", [2, 6, 7], num_groups=3, num_channels=6),
    norm("GroupNorm 5d input", "GroupNorm", [2, 4, 3, 2, 5], num_groups=2, num_channels=4, eps=1e-3),
    norm("GroupNorm 2d input no affine", "GroupNorm", [3, 8], num_groups=4, num_channels=8, affine=False),
    norm("LocalResponseNorm 3d", "LocalResponseNorm", [2, 7, 5], size=3),
    norm("LocalResponseNorm 4d even size", "LocalResponseNorm", [2, 6, 4, 5], size=4, alpha=0.01, beta=0.5, k=2.0),
    norm("LocalResponseNorm 5d", "LocalResponseNorm", [1, 5, 3, 4, 2], size=2),
    op_case("local_response_norm size beyond channels", "local_response_norm", ["x", 7], ELEMENTWISE,
            {"x": [2, 3, 6]}, alpha=0.1),
    op_case("normalize", "normalize", ["x"], ELEMENTWISE, {"x": [2, 3, 4]}),
    op_case("normalize p1 dim -1", "normalize", ["x"], ELEMENTWISE, {"x": [2, 3, 4]}, p=1.0, dim=-1),
    op_case("normalize p3 dim 0", "normalize", ["x"], ELEMENTWISE, {"x": [4, 3, 2]}, p=3.0, dim=0),
    graph_case("normalize on a transposed input", [{"out": "t", "op": "transpose", "args": ["x", 0, 2]},
                                                   {"out": "y", "op": "normalize", "args": ["t"], "dim": 2}],
               ["y"], ELEMENTWISE, {"x": [4, 3, 5]}),
]

# padding_mode other than 'zeros' runs F.pad first: these skip while 'pad' has no kernel
PADDED = [
    conv("Conv2d reflect", "Conv2d", [2, 3, 7, 6], in_channels=3, out_channels=4, kernel_size=3, padding=[1, 2],
         padding_mode="reflect"),
    conv("Conv1d circular", "Conv1d", [2, 3, 9], in_channels=3, out_channels=2, kernel_size=3, padding=2,
         padding_mode="circular"),
    conv("Conv3d replicate", "Conv3d", [1, 2, 4, 5, 4], in_channels=2, out_channels=3, kernel_size=2, padding=1,
         padding_mode="replicate"),
]

# a module whose output nothing reads still runs through its parts (skips until the executor allows it)
UNREAD = [
    graph_case("AdaptiveAvgPool2d output unread", [{"out": "u", "call": "p", "args": ["x"]},
                                                   {"out": "y", "op": "adaptive_max_pool2d", "args": ["x", [3, None]]}],
               ["y"], EXACT, {"x": [2, 3, 10, 7]},
               modules={"p": {"type": "AdaptiveAvgPool2d", "output_size": [None, 2]}}),
]

CASES = CONV + POOL + NORM + PADDED + UNREAD
