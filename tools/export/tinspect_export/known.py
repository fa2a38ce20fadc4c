"""The module types and operator names tinspect models (its C tables).

A static copy, so the exporter works where the tinspect binary is not at hand;
tools/export/check_known.py checks it against `tinspect ops --json`.
PYTHON_OPS are the Python-level steps a traced model records (sizes, items,
int arithmetic, indexing) and torchvision's stochastic_depth.
"""

KNOWN_MODULES = frozenset((
    'AdaptiveAvgPool1d', 'AdaptiveAvgPool2d', 'AdaptiveAvgPool3d', 'AdaptiveMaxPool1d',
    'AdaptiveMaxPool2d', 'AdaptiveMaxPool3d', 'AlphaDropout', 'AvgPool1d', 'AvgPool2d',
    'AvgPool3d', 'BatchNorm1d', 'BatchNorm2d', 'BatchNorm3d', 'Bilinear', 'CELU',
    'CircularPad1d', 'CircularPad2d', 'CircularPad3d', 'ConstantPad1d', 'ConstantPad2d',
    'ConstantPad3d', 'Conv1d', 'Conv2d', 'Conv3d', 'ConvTranspose1d', 'ConvTranspose2d',
    'ConvTranspose3d', 'Dropout', 'Dropout1d', 'Dropout2d', 'Dropout3d', 'ELU', 'Embedding',
    'EmbeddingBag', 'FeatureAlphaDropout', 'Flatten', 'GELU', 'GLU', 'GRU', 'GroupNorm',
    'Hardshrink', 'Hardsigmoid', 'Hardswish', 'Hardtanh', 'Identity', 'InstanceNorm1d',
    'InstanceNorm2d', 'InstanceNorm3d', 'LSTM', 'LayerNorm', 'LeakyReLU', 'Linear',
    'LocalResponseNorm', 'LogSigmoid', 'LogSoftmax', 'MaxPool1d', 'MaxPool2d', 'MaxPool3d',
    'Mish', 'MultiheadAttention', 'PReLU', 'PixelShuffle', 'PixelUnshuffle', 'RMSNorm', 'RNN',
    'RReLU', 'ReLU', 'ReLU6', 'ReflectionPad1d', 'ReflectionPad2d', 'ReflectionPad3d',
    'ReplicationPad1d', 'ReplicationPad2d', 'ReplicationPad3d', 'SELU', 'SiLU', 'Sigmoid',
    'Softmax', 'Softmax2d', 'Softmin', 'Softplus', 'Softshrink', 'Softsign', 'Tanh',
    'Tanhshrink', 'Threshold', 'Transformer', 'TransformerDecoder', 'TransformerDecoderLayer',
    'TransformerEncoder', 'TransformerEncoderLayer', 'Unflatten', 'Upsample',
    'UpsamplingBilinear2d', 'UpsamplingNearest2d', 'ZeroPad1d', 'ZeroPad2d', 'ZeroPad3d',
))

KNOWN_OPS = frozenset((
    'abs', 'absolute', 'acos', 'acosh', 'adaptive_avg_pool1d', 'adaptive_avg_pool2d',
    'adaptive_avg_pool3d', 'adaptive_max_pool1d', 'adaptive_max_pool2d', 'adaptive_max_pool3d',
    'add', 'addmm', 'addmv', 'all', 'alpha_dropout', 'amax', 'amin', 'any', 'arange', 'arccos',
    'arccosh', 'arcsin', 'arcsinh', 'arctan', 'arctan2', 'arctanh', 'argmax', 'argmin',
    'argsort', 'argwhere', 'asin', 'asinh', 'atan', 'atan2', 'atanh', 'avg_pool1d',
    'avg_pool2d', 'avg_pool3d', 'baddbmm', 'batch_norm', 'bfloat16', 'bilinear', 'bincount',
    'bitwise_and', 'bitwise_not', 'bitwise_or', 'bitwise_xor', 'bmm', 'bool', 'broadcast_to',
    'byte', 'cat', 'cdouble', 'ceil', 'celu', 'cfloat', 'char', 'chunk', 'clamp', 'clamp_max',
    'clamp_min', 'clip', 'clone', 'concat', 'concatenate', 'contiguous', 'conv1d', 'conv2d',
    'conv3d', 'conv_transpose1d', 'conv_transpose2d', 'conv_transpose3d', 'copysign', 'cos',
    'cosh', 'count_nonzero', 'cummax', 'cummin', 'cumprod', 'cumsum', 'deg2rad', 'digamma',
    'div', 'divide', 'dot', 'double', 'dropout', 'dropout1d', 'dropout2d', 'dropout3d',
    'dstack', 'einsum', 'elu', 'embedding', 'embedding_bag', 'empty', 'empty_like', 'eq',
    'erf', 'erfc', 'erfinv', 'exp', 'exp2', 'expand', 'expand_as', 'expm1', 'eye',
    'feature_alpha_dropout', 'fix', 'flatten', 'flip', 'float', 'float_power', 'floor',
    'floor_divide', 'fmax', 'fmin', 'fmod', 'frac', 'full', 'full_like', 'gather', 'ge',
    'gelu', 'ger', 'glu', 'greater', 'greater_equal', 'group_norm', 'gt', 'half', 'hardshrink',
    'hardsigmoid', 'hardswish', 'hardtanh', 'hstack', 'hypot', 'i0', 'index_select',
    'instance_norm', 'int', 'interpolate', 'isfinite', 'isinf', 'isnan', 'isneginf',
    'isposinf', 'item', 'kthvalue', 'layer_norm', 'le', 'leaky_relu', 'less', 'less_equal',
    'lgamma', 'linear', 'linspace', 'local_response_norm', 'log', 'log10', 'log1p', 'log2',
    'log_softmax', 'logcumsumexp', 'logical_and', 'logical_not', 'logical_or', 'logical_xor',
    'logit', 'logsigmoid', 'logspace', 'logsumexp', 'long', 'lt', 'mT', 'masked_fill',
    'masked_select', 'matmul', 'max', 'max_pool1d', 'max_pool2d', 'max_pool3d', 'maximum',
    'mean', 'median', 'min', 'minimum', 'mish', 'mm', 'mode', 'moveaxis', 'movedim', 'msort',
    'mul', 'multiply', 'mv', 'nan_to_num', 'nanmean', 'nanmedian', 'nansum', 'narrow', 'ne',
    'neg', 'negative', 'new_empty', 'new_full', 'new_ones', 'new_zeros', 'nonzero', 'norm',
    'normalize', 'not_equal', 'ones', 'ones_like', 'outer', 'pad', 'permute', 'pixel_shuffle',
    'pixel_unshuffle', 'positive', 'pow', 'prelu', 'prod', 'rad2deg', 'rand', 'rand_like',
    'randint', 'randint_like', 'randn', 'randn_like', 'randperm', 'ravel', 'reciprocal',
    'relu', 'relu6', 'remainder', 'repeat', 'repeat_interleave', 'reshape', 'reshape_as',
    'rms_norm', 'roll', 'round', 'rrelu', 'rsqrt', 'rsub', 'scaled_dot_product_attention',
    'select', 'selu', 'sgn', 'short', 'sigmoid', 'sign', 'signbit', 'silu', 'sin', 'sinc',
    'sinh', 'softmax', 'softmin', 'softplus', 'softshrink', 'softsign', 'sort', 'split',
    'split_with_sizes', 'sqrt', 'square', 'squeeze', 'stack', 'std', 'std_mean', 'sub',
    'subtract', 'sum', 'swapaxes', 'swapdims', 't', 'take_along_dim', 'tan', 'tanh',
    'tanhshrink', 'tensor_split', 'threshold', 'tile', 'to', 'tolist', 'topk', 'transpose',
    'tril', 'triu', 'true_divide', 'trunc', 'type', 'type_as', 'unbind', 'unflatten', 'unique',
    'unique_consecutive', 'unsqueeze', 'upsample', 'upsample_bilinear', 'upsample_nearest',
    'var', 'var_mean', 'view', 'view_as', 'vstack', 'where', 'xlogy', 'zeros', 'zeros_like',
))

PYTHON_OPS = frozenset((
    "size", "dim", "numel", "getitem", "setitem", "_assert", "stochastic_depth", "meshgrid",
    "operator.add", "operator.sub", "operator.mul", "operator.floordiv", "operator.truediv",
    "operator.mod", "operator.pow", "operator.neg", "operator.eq", "operator.ne", "operator.lt",
    "operator.le", "operator.gt", "operator.ge", "operator.getitem", "operator.setitem",
))

#: Containers tinspect runs element by element; not leaves.
CONTAINERS = frozenset(("Sequential", "ModuleList", "ModuleDict"))


def op_known(name):
    """True when tinspect models the operator `name`."""
    return name in KNOWN_OPS or name in PYTHON_OPS
