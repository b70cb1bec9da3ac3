"""The public names of JAX 0.1.62 (April 2020), module by module: the table that
tests/test_api_names_2020.py checks tracejax against.

SEED_API: the API listing pages of the 0.1.62 documentation, transcribed from
shared/seeds/001_fcb1b54ab7c47412.txt (lines 4687-6224: the jax.numpy, fft, linalg,
scipy, experimental, lax, nn, ops and random tables; FEATURES.md C.1-C.3, D, E-T).
The jax.random page of the seed is cut off after `categorical`.

EXTRA_API: names the seeds use or mention outside those tables (FEATURES.md: A-*
for the top-level transformations, C-X, E-02b, E-06e, E-07, the 2020 internals of
FEATURES B and issue 10), and the parts of 0.1.62's public modules that the seed
listing lost (the rest of jax.random, jax.tree_util, the top-level `jax` namespace
that 0.1.62 filled with `from jax.api import *`), from 0.1.62's own module contents.

MODULES: the modules (and subpackages) a 2020 program imports.
"""

SEED_API = {
    'jax.numpy': [
        'abs', 'absolute', 'add', 'all', 'allclose', 'alltrue', 'amax', 'amin', 'angle',
        'any', 'append', 'arange', 'arccos', 'arccosh', 'arcsin', 'arcsinh', 'arctan',
        'arctan2', 'arctanh', 'argmax', 'argmin', 'argsort', 'around', 'array',
        'array_repr', 'array_str', 'asarray', 'atleast_1d', 'atleast_2d', 'atleast_3d',
        'bartlett', 'bitwise_and', 'bitwise_not', 'bitwise_or', 'bitwise_xor', 'blackman',
        'block', 'broadcast_arrays', 'broadcast_to', 'can_cast', 'ceil', 'clip',
        'column_stack', 'concatenate', 'conj', 'conjugate', 'corrcoef', 'cos', 'cosh',
        'count_nonzero', 'cov', 'cross', 'cumsum', 'cumprod', 'cumproduct', 'deg2rad',
        'degrees', 'diag', 'diag_indices', 'diagonal', 'divide', 'divmod', 'dot', 'dsplit',
        'dstack', 'einsum', 'equal', 'empty', 'empty_like', 'exp', 'exp2', 'expand_dims',
        'expm1', 'eye', 'fabs', 'fix', 'flip', 'fliplr', 'flipud', 'float_power', 'floor',
        'floor_divide', 'fmod', 'full', 'full_like', 'gcd', 'geomspace', 'greater',
        'greater_equal', 'hamming', 'hanning', 'heaviside', 'hsplit', 'hstack', 'hypot',
        'identity', 'imag', 'inner', 'isclose', 'iscomplex', 'isfinite', 'isinf', 'isnan',
        'isneginf', 'isposinf', 'isreal', 'isscalar', 'issubdtype', 'issubsctype', 'ix_',
        'kaiser', 'kron', 'lcm', 'left_shift', 'less', 'less_equal', 'linspace', 'log',
        'log10', 'log1p', 'log2', 'logaddexp', 'logaddexp2', 'logical_and', 'logical_not',
        'logical_or', 'logical_xor', 'logspace', 'matmul', 'max', 'maximum', 'mean',
        'median', 'meshgrid', 'min', 'minimum', 'mod', 'moveaxis', 'msort', 'multiply',
        'nan_to_num', 'nancumprod', 'nancumsum', 'nanmax', 'nanmin', 'nanprod', 'nansum',
        'negative', 'nextafter', 'nonzero', 'not_equal', 'ones', 'ones_like', 'outer',
        'pad', 'percentile', 'polyval', 'power', 'positive', 'prod', 'product',
        'promote_types', 'ptp', 'quantile', 'rad2deg', 'radians', 'ravel', 'real',
        'reciprocal', 'remainder', 'repeat', 'reshape', 'result_type', 'right_shift',
        'roll', 'rot90', 'round', 'row_stack', 'select', 'sign', 'signbit', 'sin', 'sinc',
        'sinh', 'sometrue', 'sort', 'split', 'sqrt', 'square', 'squeeze', 'stack', 'std',
        'subtract', 'sum', 'swapaxes', 'take', 'take_along_axis', 'tan', 'tanh',
        'tensordot', 'tile', 'trace', 'transpose', 'tri', 'tril', 'tril_indices', 'triu',
        'triu_indices', 'true_divide', 'vander', 'var', 'vdot', 'vsplit', 'vstack', 'where',
        'zeros', 'zeros_like',
    ],
    'jax.numpy.fft': [
        'fft', 'ifft', 'fft2', 'ifft2', 'fftn', 'ifftn', 'rfft', 'irfft', 'rfft2', 'irfft2',
        'rfftn', 'irfftn', 'fftfreq', 'rfftfreq', 'fftshift', 'ifftshift',
    ],
    'jax.numpy.linalg': [
        'cholesky', 'det', 'eig', 'eigh', 'eigvals', 'eigvalsh', 'inv', 'matrix_power',
        'matrix_rank', 'norm', 'pinv', 'qr', 'slogdet', 'solve', 'svd',
    ],
    'jax.scipy.linalg': [
        'block_diag', 'cho_factor', 'cho_solve', 'cholesky', 'det', 'eigh', 'expm', 'inv',
        'lu', 'lu_factor', 'lu_solve', 'qr', 'solve', 'solve_triangular', 'svd', 'tril',
        'triu',
    ],
    'jax.scipy.ndimage': [
        'map_coordinates',
    ],
    'jax.scipy.special': [
        'betainc', 'digamma', 'entr', 'erf', 'erfc', 'erfinv', 'expit', 'gammainc',
        'gammaincc', 'gammaln', 'i0e', 'i1e', 'log_ndtr', 'logit', 'logsumexp',
        'multigammaln', 'ndtr', 'ndtri', 'xlog1py', 'xlogy',
    ],
    'jax.scipy.stats.beta': [
        'logpdf', 'pdf',
    ],
    'jax.scipy.stats.expon': [
        'logpdf', 'pdf',
    ],
    'jax.scipy.stats.gamma': [
        'logpdf', 'pdf',
    ],
    'jax.scipy.stats.laplace': [
        'cdf', 'logpdf', 'pdf',
    ],
    'jax.scipy.stats.logistic': [
        'cdf', 'isf', 'logpdf', 'pdf', 'ppf', 'sf',
    ],
    'jax.scipy.stats.norm': [
        'cdf', 'logcdf', 'logpdf', 'pdf', 'ppf',
    ],
    'jax.lax': [
        'abs', 'add', 'acos', 'asin', 'atan', 'atan2', 'batch_matmul', 'bessel_i0e',
        'bessel_i1e', 'betainc', 'bitcast_convert_type', 'bitwise_not', 'bitwise_and',
        'bitwise_or', 'bitwise_xor', 'broadcast', 'broadcasted_iota', 'broadcast_in_dim',
        'ceil', 'clamp', 'collapse', 'complex', 'concatenate', 'conj', 'conv',
        'convert_element_type', 'conv_general_dilated', 'conv_with_general_padding',
        'conv_transpose', 'cos', 'cosh', 'digamma', 'div', 'dot', 'dot_general',
        'dynamic_index_in_dim', 'dynamic_slice', 'dynamic_slice_in_dim',
        'dynamic_update_index_in_dim', 'dynamic_update_slice_in_dim', 'eq', 'erf', 'erfc',
        'erf_inv', 'exp', 'expm1', 'fft', 'floor', 'full', 'full_like', 'gather', 'ge',
        'gt', 'igamma', 'igammac', 'imag', 'index_in_dim', 'index_take', 'iota',
        'is_finite', 'le', 'lt', 'lgamma', 'log', 'log1p', 'max', 'min', 'mul', 'ne', 'neg',
        'nextafter', 'pad', 'pow', 'real', 'reciprocal', 'reduce', 'reduce_window',
        'reshape', 'rem', 'rev', 'round', 'rsqrt', 'scatter', 'scatter_add', 'select',
        'shift_left', 'shift_right_arithmetic', 'shift_right_logical', 'slice',
        'slice_in_dim', 'sign', 'sin', 'sinh', 'sort', 'sort_key_val', 'sqrt', 'square',
        'sub', 'tan', 'tie_in', 'transpose', 'cond', 'fori_loop', 'map', 'scan',
        'while_loop', 'stop_gradient', 'custom_linear_solve', 'custom_root', 'all_gather',
        'all_to_all', 'psum', 'pmax', 'pmin', 'ppermute', 'pswapaxes', 'axis_index',
    ],
    'jax.nn': [
        'relu', 'sigmoid', 'softplus', 'soft_sign', 'swish', 'log_sigmoid', 'leaky_relu',
        'hard_tanh', 'elu', 'celu', 'selu', 'gelu', 'glu', 'softmax', 'log_softmax',
        'normalize',
    ],
    'jax.nn.initializers': [
        'zeros', 'ones', 'uniform', 'normal', 'variance_scaling', 'glorot_uniform',
        'glorot_normal', 'lecun_uniform', 'lecun_normal', 'he_uniform', 'he_normal',
    ],
    'jax.ops': [
        'index', 'index_update', 'index_add', 'index_min', 'index_max', 'segment_sum',
    ],
    'jax.random': [
        'PRNGKey', 'bernoulli', 'beta', 'categorical',
    ],
    'jax.experimental.loops': [
        'Scope',
    ],
    'jax.experimental.optimizers': [
        'JoinPoint', 'OptimizerState', 'adagrad', 'adam', 'clip_grads',
        'inverse_time_decay', 'l2_norm', 'momentum', 'nesterov', 'optimizer',
        'pack_optimizer_state', 'polynomial_decay', 'rmsprop', 'rmsprop_momentum', 'sgd',
        'sm3', 'unpack_optimizer_state',
    ],
    'jax.experimental.optix': [
        'AddNoiseState', 'ApplyEvery', 'InitUpdate', 'ScaleByAdamState',
        'ScaleByRStdDevState', 'ScaleByScheduleState', 'add_noise', 'apply_every',
        'apply_updates', 'chain', 'clip', 'clip_by_global_norm', 'scale', 'scale_by_adam',
        'scale_by_rms', 'scale_by_schedule', 'scale_by_stddev',
    ],
    'jax.experimental.stax': [
        'AvgPool', 'BatchNorm', 'Conv', 'Conv1DTranspose', 'ConvTranspose', 'Dense',
        'Dropout', 'FanInConcat', 'GeneralConv', 'GeneralConvTranspose', 'MaxPool',
        'SumPool', 'elementwise', 'glorot', 'glorot_normal', 'parallel', 'serial',
        'shape_dependent',
    ],
}

EXTRA_API = {
    # The top-level namespace (0.1.62: `from jax.api import *`; FEATURES A-01..A-20,
    # E-10, issue 10 items 4-6). `partial` came along from jax.api's own imports and
    # 2020 code used it as `jax.partial(jax.jit, static_argnums=...)`.
    'jax': [
        'jit', 'disable_jit', 'grad', 'value_and_grad', 'vmap', 'pmap', 'soft_pmap', 'jvp',
        'vjp', 'linearize', 'jacfwd', 'jacrev', 'jacobian', 'hessian', 'make_jaxpr',
        'eval_shape', 'ShapeDtypeStruct', 'device_put', 'device_get', 'xla_computation',
        'checkpoint', 'remat', 'custom_jvp', 'custom_vjp', 'custom_transforms', 'defjvp',
        'defjvp_all', 'defvjp', 'defvjp_all', 'custom_gradient', 'jarrett', 'mask',
        'shapecheck', 'devices', 'local_devices', 'device_count', 'local_device_count',
        'host_id', 'host_ids', 'host_count', 'tree_flatten', 'tree_unflatten', 'tree_map',
        'tree_multimap', 'tree_leaves', 'tree_structure', 'tree_transpose',
        'treedef_is_leaf', 'partial', 'numpy', 'lax', 'random', 'nn', 'scipy', 'ops',
        'tree_util', 'api', 'core', 'util', 'abstract_arrays', 'test_util', 'config',
        'experimental', 'interpreters', 'linear_util', 'api_util', 'dtypes',
    ],
    # `jax.api`: the same transformations under their 2020 module (issue 10 item 6).
    'jax.api': [
        'jit', 'disable_jit', 'grad', 'value_and_grad', 'vmap', 'pmap', 'soft_pmap', 'jvp',
        'vjp', 'linearize', 'jacfwd', 'jacrev', 'jacobian', 'hessian', 'make_jaxpr',
        'eval_shape', 'ShapeDtypeStruct', 'device_put', 'device_get', 'xla_computation',
        'checkpoint', 'remat', 'custom_jvp', 'custom_vjp', 'custom_transforms', 'defjvp',
        'defjvp_all', 'defvjp', 'defvjp_all', 'custom_gradient', 'jarrett', 'mask',
        'shapecheck', 'devices', 'local_devices', 'device_count', 'local_device_count',
        'host_id', 'host_ids', 'host_count',
    ],
    # FEATURES C-X (used in examples, absent from the table) and the fft/linalg pages.
    # (the dtype names and `ndarray` are used throughout the seeds' examples), and the
    # 0.1.62 functions that issue 10 item 3 names beyond the table.
    'jax.numpy': ['bfloat16', 'pi', 'newaxis', 'fft', 'linalg', 'float32', 'int32',
                  'uint32', 'float64', 'complex64', 'bool_', 'ndarray', 'vectorize',
                  'convolve', 'correlate', 'gradient', 'nanmean'],
    'jax.numpy.fft': ['hfft', 'ihfft'],
    # The rest of jax.random in 0.1.62 (the seed page is truncated).
    'jax.random': [
        'PRNGKey', 'split', 'fold_in', 'uniform', 'randint', 'shuffle', 'permutation',
        'choice', 'normal', 'multivariate_normal', 'truncated_normal', 'bernoulli', 'beta',
        'cauchy', 'dirichlet', 'exponential', 'gamma', 'gumbel', 'categorical', 'laplace',
        'logistic', 'pareto', 't', 'threefry_2x32', 'threefry2x32_p',
    ],
    'jax.nn': ['one_hot', 'initializers', 'logsumexp'],                   # FEATURES E-02b
    'jax.scipy.stats.pareto': ['logpdf', 'pdf'],                           # issue 10 item 3
    'jax.experimental.jet': ['jet'],                                       # FEATURES E-06e
    'jax.experimental.ode': ['odeint'],                                    # FEATURES E-06e
    # FEATURES E-07 (tree_flatten, tree_unflatten, register_pytree_node) and the rest
    # of 0.1.62's tree_util.
    'jax.tree_util': [
        'tree_flatten', 'tree_unflatten', 'tree_map', 'tree_multimap', 'tree_leaves',
        'tree_structure', 'tree_transpose', 'tree_reduce', 'tree_all', 'build_tree',
        'treedef_is_leaf', 'treedef_children', 'treedef_tuple', 'register_pytree_node',
        'register_pytree_node_class', 'Partial',
    ],
    # The 2020 internals that the seeds' programs import (FEATURES B, issue 10 item 9).
    'jax.util': [
        'partial', 'curry', 'safe_map', 'safe_zip', 'unzip2', 'unzip3', 'prod',
        'split_list', 'split_merge', 'split_dict', 'concatenate', 'subvals', 'cache',
        'memoize', 'WrapHashably', 'Hashable', 'get_module_functions', 'wrap_name',
        'extend_name_stack', 'toposort', 'check_toposort', 'partition_list', 'unsafe_map',
        'unsafe_zip',
    ],
    'jax.abstract_arrays': [
        'ShapedArray', 'ConcreteArray', 'UnshapedArray', 'make_shaped_array',
        'raise_to_shaped', 'array_types', 'canonicalize_shape', 'abstractify',
        'zeros_like_array', 'zeros_like_shaped_array',
    ],
    'jax.core': [
        'Primitive', 'Jaxpr', 'TypedJaxpr', 'JaxprEqn', 'Var', 'Literal', 'ShapedArray',
        'ConcreteArray', 'Tracer', 'Trace', 'eval_jaxpr', 'unit', 'unitvar',
        'abstract_unit', 'jaxpr_as_fun', 'check_jaxpr',
    ],
    'jax.interpreters.xla': [
        'DeviceArray', 'xla_call', 'xla_call_p', 'backend_specific_translations',
        'translations', 'apply_primitive', 'abstractify', 'device_put', 'lower_fun',
        'register_translation',
    ],
    'jax.interpreters.pxla': ['ShardedDeviceArray', 'xla_pmap_p', 'xla_pmap'],
    'jax.interpreters.ad': ['primitive_jvps', 'primitive_transposes', 'defjvp', 'zero',
                            'Zero', 'UndefinedPrimal', 'is_undefined_primal'],
    'jax.interpreters.batching': ['primitive_batchers', 'not_mapped'],
    'jax.interpreters.partial_eval': ['PartialVal', 'trace_to_jaxpr'],
    'jax.test_util': ['check_grads', 'check_jvp', 'check_vjp'],
    'jax.config': ['config'],
    'jax.linear_util': ['wrap_init', 'transformation', 'transformation_with_aux',
                        'WrappedFun'],
    'jax.api_util': ['flatten_fun', 'flatten_fun_nokwargs'],
}

MODULES = [
    'jax', 'jax.numpy', 'jax.numpy.fft', 'jax.numpy.linalg', 'jax.scipy',
    'jax.scipy.linalg', 'jax.scipy.ndimage', 'jax.scipy.special', 'jax.scipy.stats',
    'jax.lax', 'jax.nn', 'jax.nn.initializers', 'jax.ops', 'jax.random', 'jax.tree_util',
    'jax.api', 'jax.core', 'jax.util', 'jax.abstract_arrays', 'jax.test_util',
    'jax.config', 'jax.linear_util', 'jax.api_util', 'jax.dtypes', 'jax.experimental',
    'jax.experimental.loops', 'jax.experimental.optimizers', 'jax.experimental.optix',
    'jax.experimental.stax', 'jax.experimental.jet', 'jax.experimental.ode',
    'jax.interpreters', 'jax.interpreters.xla', 'jax.interpreters.pxla',
    'jax.interpreters.ad', 'jax.interpreters.batching', 'jax.interpreters.partial_eval',
]


def api_table():
    """module -> sorted public names: SEED_API and EXTRA_API merged."""
    table = {}
    for part in (SEED_API, EXTRA_API):
        for mod, names in part.items():
            table.setdefault(mod, set()).update(names)
    return {mod: sorted(names) for mod, names in sorted(table.items())}
