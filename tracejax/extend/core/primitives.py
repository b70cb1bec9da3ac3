"""`jax.extend.core.primitives`: the primitives of `lax` and of the transformations,
for libraries that inspect jaxprs (`eqn.primitive is primitives.sin_p`).

Re-exports only. `jit_p` is tracejax's nested-jit primitive (`xla_call`, as the 2020
jaxprs print it), `remat_p` its checkpoint primitive, `add_jaxvals_p` the addition
of tangents (`add_any`).
"""
# flake8: noqa: F401
from tracejax._src.ad_checkpoint import (
    name_p as name_p,
    checkpoint_p as remat_p,
)
from tracejax._src.control_flow import (
    cond_p as cond_p,
    linear_solve_p as linear_solve_p,
    scan_p as scan_p,
    while_p as while_p,
)
from tracejax._src.custom_derivatives import (
    custom_jvp_call_p as custom_jvp_call_p,
    custom_lin_p as custom_lin_p,
    custom_vjp_call_p as custom_vjp_call_p,
)
from tracejax._src.interpreters.ad import (
    add_any_p as add_jaxvals_p,
)
from tracejax._src.jit import (
    xla_call_p as jit_p,
)
from tracejax._src.lax.convolution import (
    conv_general_dilated_p as conv_general_dilated_p,
)
from tracejax._src.lax.dot import (
    dot_general_p as dot_general_p,
)
from tracejax._src.lax.elementwise import (
    abs_p as abs_p,
    acos_p as acos_p,
    acosh_p as acosh_p,
    add_p as add_p,
    and_p as and_p,
    asin_p as asin_p,
    asinh_p as asinh_p,
    atan2_p as atan2_p,
    atan_p as atan_p,
    atanh_p as atanh_p,
    bitcast_convert_type_p as bitcast_convert_type_p,
    cbrt_p as cbrt_p,
    ceil_p as ceil_p,
    clamp_p as clamp_p,
    clz_p as clz_p,
    complex_p as complex_p,
    conj_p as conj_p,
    convert_element_type_p as convert_element_type_p,
    cos_p as cos_p,
    cosh_p as cosh_p,
    div_p as div_p,
    eq_p as eq_p,
    exp2_p as exp2_p,
    exp_p as exp_p,
    expm1_p as expm1_p,
    floor_p as floor_p,
    ge_p as ge_p,
    gt_p as gt_p,
    imag_p as imag_p,
    integer_pow_p as integer_pow_p,
    is_finite_p as is_finite_p,
    le_p as le_p,
    log1p_p as log1p_p,
    log_p as log_p,
    logistic_p as logistic_p,
    lt_p as lt_p,
    max_p as max_p,
    min_p as min_p,
    mul_p as mul_p,
    ne_p as ne_p,
    neg_p as neg_p,
    nextafter_p as nextafter_p,
    not_p as not_p,
    or_p as or_p,
    population_count_p as population_count_p,
    pow_p as pow_p,
    real_p as real_p,
    reduce_precision_p as reduce_precision_p,
    rem_p as rem_p,
    round_p as round_p,
    rsqrt_p as rsqrt_p,
    select_n_p as select_n_p,
    shift_left_p as shift_left_p,
    shift_right_arithmetic_p as shift_right_arithmetic_p,
    shift_right_logical_p as shift_right_logical_p,
    sign_p as sign_p,
    sin_p as sin_p,
    sinh_p as sinh_p,
    sqrt_p as sqrt_p,
    square_p as square_p,
    sub_p as sub_p,
    tan_p as tan_p,
    tanh_p as tanh_p,
    xor_p as xor_p,
)
from tracejax._src.lax.fft import (
    fft_p as fft_p,
)
from tracejax._src.lax.gather import (
    gather_p as gather_p,
    scatter_add_p as scatter_add_p,
    scatter_max_p as scatter_max_p,
    scatter_min_p as scatter_min_p,
    scatter_mul_p as scatter_mul_p,
    scatter_p as scatter_p,
)
from tracejax._src.lax.linalg import (
    cholesky_p as cholesky_p,
    eig_p as eig_p,
    eigh_p as eigh_p,
    lu_p as lu_p,
    qr_p as qr_p,
    schur_p as schur_p,
    svd_p as svd_p,
    triangular_solve_p as triangular_solve_p,
)
from tracejax._src.lax.linalg_extra import (
    tridiagonal_solve_p as tridiagonal_solve_p,
)
from tracejax._src.lax.linalg_householder import (
    hessenberg_p as hessenberg_p,
    householder_product_p as householder_product_p,
    tridiagonal_p as tridiagonal_p,
)
from tracejax._src.lax.misc import (
    stop_gradient_p as stop_gradient_p,
)
from tracejax._src.lax.parallel import (
    all_gather_p as all_gather_p,
    all_to_all_p as all_to_all_p,
    axis_index_p as axis_index_p,
    pmax_p as pmax_p,
    pmin_p as pmin_p,
    ppermute_p as ppermute_p,
    psum_p as psum_p,
)
from tracejax._src.lax.random_bits import (
    rng_bit_generator_p as rng_bit_generator_p,
    threefry2x32_p as threefry2x32_p,
)
from tracejax._src.lax.reductions import (
    argmax_p as argmax_p,
    argmin_p as argmin_p,
    reduce_and_p as reduce_and_p,
    reduce_max_p as reduce_max_p,
    reduce_min_p as reduce_min_p,
    reduce_or_p as reduce_or_p,
    reduce_p as reduce_p,
    reduce_prod_p as reduce_prod_p,
    reduce_sum_p as reduce_sum_p,
    reduce_xor_p as reduce_xor_p,
)
from tracejax._src.lax.slicing import (
    dynamic_slice_p as dynamic_slice_p,
    dynamic_update_slice_p as dynamic_update_slice_p,
    slice_p as slice_p,
)
from tracejax._src.lax.sorting import (
    sort_p as sort_p,
    top_k_p as top_k_p,
)
from tracejax._src.lax.special import (
    bessel_i0e_p as bessel_i0e_p,
    bessel_i1e_p as bessel_i1e_p,
    digamma_p as digamma_p,
    erf_inv_p as erf_inv_p,
    erf_p as erf_p,
    erfc_p as erfc_p,
    igamma_grad_a_p as igamma_grad_a_p,
    igamma_p as igamma_p,
    igammac_p as igammac_p,
    lgamma_p as lgamma_p,
    polygamma_p as polygamma_p,
    regularized_incomplete_beta_p as regularized_incomplete_beta_p,
    zeta_p as zeta_p,
)
from tracejax._src.lax.structural import (
    broadcast_in_dim_p as broadcast_in_dim_p,
    concatenate_p as concatenate_p,
    iota_p as iota_p,
    pad_p as pad_p,
    reshape_p as reshape_p,
    rev_p as rev_p,
    squeeze_p as squeeze_p,
    transpose_p as transpose_p,
)
from tracejax._src.lax.windowed import (
    cumlogsumexp_p as cumlogsumexp_p,
    cummax_p as cummax_p,
    cummin_p as cummin_p,
    cumprod_p as cumprod_p,
    cumsum_p as cumsum_p,
    reduce_window_max_p as reduce_window_max_p,
    reduce_window_min_p as reduce_window_min_p,
    reduce_window_p as reduce_window_p,
    reduce_window_sum_p as reduce_window_sum_p,
    select_and_gather_add_p as select_and_gather_add_p,
    select_and_scatter_add_p as select_and_scatter_add_p,
)
from tracejax._src.random_samplers import (
    random_gamma_p as random_gamma_p,
)
