"""What a submission may import and touch: data, not code, so it is easy to review and extend.

Drill authors: to expose one more torch/numpy name, add it to the right string below (one name per word)
and run ``pytest tests/graders/test_sandbox_policy.py``; the reachability test there fails if the new
name leads to a module, a frame or a file API.  Names are resolved against the real module in the zygote
once; a name that does not exist in the installed version is skipped silently.

Everything not listed here is withheld, in particular every file, serialisation, native-code, process and
introspection API (``torch.load/save/from_file/hub/ops/classes/library/compile/jit/_C``, ``numpy.load/save/
fromfile/ctypeslib/memmap/f2py/lib``, ``torch.os``, ``torch.builtins`` ...).
"""

from __future__ import annotations


def words(text: str) -> tuple[str, ...]:
    """Split a whitespace-separated block of names (keeps the lists below one-name-per-word data)."""
    return tuple(text.split())


# Modules a submission may name in an import statement.  Each maps to a proxy spec key in MODULES.
IMPORTABLE: frozenset[str] = frozenset(
    words(
        """
        torch torch.nn torch.nn.functional torch.nn.init torch.optim torch.optim.lr_scheduler
        torch.utils.data torch.autograd torch.autograd.functional torch.linalg torch.fft torch.special
        numpy numpy.random numpy.linalg math
        """
    )
)

TORCH_OPS = words(
    """
    abs abs_ absolute acos acos_ acosh acosh_ add addbmm addcdiv addcmul addmm addmv addmv_ addr adjoint all
    allclose amax amin aminmax angle any arange arccos arccos_ arccosh arccosh_ arcsin arcsin_ arcsinh arcsinh_
    arctan arctan2 arctan_ arctanh arctanh_ argmax argmin argsort argwhere as_tensor asarray asin asin_ asinh
    asinh_ atan atan2 atan_ atanh atanh_ atleast_1d atleast_2d atleast_3d avg_pool1d baddbmm bartlett_window
    batch_norm bernoulli bilinear binary_cross_entropy_with_logits bincount binomial bitwise_and
    bitwise_left_shift bitwise_not bitwise_or bitwise_right_shift bitwise_xor blackman_window block_diag bmm
    broadcast_tensors broadcast_to bucketize can_cast cartesian_prod cat cdist ceil ceil_ celu celu_ chain_matmul
    channel_shuffle cholesky cholesky_inverse cholesky_solve chunk clamp clamp_ clamp_max clamp_max_ clamp_min
    clamp_min_ clip clip_ clone column_stack combinations complex concat concatenate conj conj_physical
    conj_physical_ conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d convolution copysign
    corrcoef cos cos_ cosh cosh_ cosine_similarity count_nonzero cov cross cummax cummin cumprod cumsum
    cumulative_trapezoid deg2rad deg2rad_ det detach detach_ diag diag_embed diagflat diagonal diagonal_scatter
    diff digamma dist div divide dot dropout dropout_ dsplit dstack einsum embedding embedding_bag empty
    empty_like eq equal erf erf_ erfc erfc_ erfinv exp exp2 exp2_ exp_ expm1 expm1_ eye fill fill_ fix fix_
    flatten flip fliplr flipud float_power floor floor_ floor_divide fmax fmin fmod frac frac_ frexp
    frobenius_norm from_numpy full full_like gather gcd gcd_ ge geqrf ger gradient greater greater_equal
    group_norm gt hamming_window hann_window hardshrink heaviside hinge_embedding_loss histc histogram
    histogramdd hsplit hstack hypot i0 i0_ igamma igammac imag index_add index_copy index_fill index_put
    index_put_ index_reduce index_select inner inverse is_complex is_conj is_floating_point is_inference is_neg
    is_nonzero is_same_size is_signed isclose isfinite isin isinf isnan isneginf isposinf isreal kaiser_window
    kl_div kron kthvalue layer_norm lcm lcm_ ldexp ldexp_ le lerp less less_equal lgamma linspace log log10
    log10_ log1p log1p_ log2 log2_ log_ log_softmax logaddexp logaddexp2 logcumsumexp logdet logical_and
    logical_not logical_or logical_xor logit logit_ logspace logsumexp lt lu_solve lu_unpack margin_ranking_loss
    masked_fill masked_scatter masked_select matmul matrix_exp matrix_power max max_pool1d
    max_pool1d_with_indices max_pool2d max_pool3d maximum mean median meshgrid min minimum mm mode moveaxis
    movedim msort mul multinomial multiply mv mvlgamma nan_to_num nan_to_num_ nanmean nanmedian nanquantile
    nansum narrow narrow_copy ne neg neg_ negative negative_ nextafter nonzero norm normal not_equal nuclear_norm
    numel ones ones_like outer pairwise_distance pdist permute pinverse pixel_shuffle pixel_unshuffle poisson
    poisson_nll_loss polar polygamma positive pow prelu prod promote_types put qr quantile rad2deg rad2deg_ rand
    rand_like randint randint_like randn randn_like randperm range ravel real reciprocal reciprocal_ relu relu_
    remainder renorm repeat_interleave reshape resolve_conj resolve_neg rms_norm roll rot90 round round_
    row_stack rrelu rrelu_ rsqrt rsqrt_ rsub scalar_tensor scatter scatter_add scatter_reduce searchsorted select
    select_scatter selu selu_ sgn sigmoid sigmoid_ sign signbit sin sin_ sinc sinc_ sinh sinh_ slice_scatter
    slogdet softmax sort split split_with_sizes sqrt sqrt_ square square_ squeeze stack std std_mean stft sub
    subtract sum svd swapaxes swapdims t take take_along_dim tan tan_ tanh tanh_ tensor tensor_split tensordot
    threshold threshold_ tile topk trace transpose trapezoid trapz triangular_solve tril tril_indices
    triplet_margin_loss triu triu_indices true_divide trunc trunc_ unbind unflatten unique unique_consecutive
    unravel_index unsqueeze vander var var_mean vdot view_as_complex view_as_real vsplit vstack where xlogy
    xlogy_ zero_ zeros zeros_like
    broadcast_shapes get_default_dtype is_tensor is_grad_enabled manual_seed initial_seed typename finfo iinfo
    no_grad enable_grad inference_mode set_grad_enabled
    Tensor Size dtype device Generator
    float float32 float64 double float16 half bfloat16 int int8 int16 int32 int64 long short uint8 bool
    complex64 complex128 cfloat cdouble
    pi e inf nan
    """
)

NN = words(
    """
    Module Parameter Buffer ModuleDict ModuleList ParameterDict ParameterList Sequential Identity
    AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d AdaptiveMaxPool1d AdaptiveMaxPool2d AdaptiveMaxPool3d
    AlphaDropout AvgPool1d AvgPool2d AvgPool3d BCELoss BCEWithLogitsLoss BatchNorm1d BatchNorm2d BatchNorm3d
    Bilinear CELU CTCLoss ChannelShuffle CircularPad1d CircularPad2d CircularPad3d ConstantPad1d ConstantPad2d
    ConstantPad3d Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d CosineEmbeddingLoss
    CosineSimilarity CrossEntropyLoss Dropout Dropout1d Dropout2d Dropout3d ELU Embedding EmbeddingBag
    FeatureAlphaDropout Flatten Fold GELU GLU GRU GRUCell GaussianNLLLoss GroupNorm Hardshrink Hardsigmoid
    Hardswish Hardtanh HingeEmbeddingLoss HuberLoss InstanceNorm1d InstanceNorm2d InstanceNorm3d KLDivLoss L1Loss
    LPPool1d LPPool2d LSTM LSTMCell LayerNorm LazyLinear LeakyReLU Linear LocalResponseNorm LogSigmoid
    LogSoftmax MSELoss MarginRankingLoss MaxPool1d MaxPool2d MaxPool3d MaxUnpool1d MaxUnpool2d MaxUnpool3d Mish
    MultiLabelMarginLoss MultiLabelSoftMarginLoss MultiMarginLoss MultiheadAttention NLLLoss PReLU
    PairwiseDistance PixelShuffle PixelUnshuffle PoissonNLLLoss RMSNorm RNN RNNCell RReLU ReLU ReLU6
    ReflectionPad1d ReflectionPad2d ReflectionPad3d ReplicationPad1d ReplicationPad2d ReplicationPad3d SELU SiLU
    Sigmoid SmoothL1Loss SoftMarginLoss Softmax Softmax2d Softmin Softplus Softshrink Softsign Tanh Tanhshrink
    Threshold Transformer TransformerDecoder TransformerDecoderLayer TransformerEncoder TransformerEncoderLayer
    TripletMarginLoss TripletMarginWithDistanceLoss Unflatten Unfold Upsample UpsamplingBilinear2d
    UpsamplingNearest2d ZeroPad1d ZeroPad2d ZeroPad3d
    """
)

FUNCTIONAL = words(
    """
    adaptive_avg_pool1d adaptive_avg_pool2d adaptive_avg_pool3d adaptive_max_pool1d adaptive_max_pool2d
    adaptive_max_pool3d affine_grid alpha_dropout avg_pool1d avg_pool2d avg_pool3d batch_norm bilinear
    binary_cross_entropy binary_cross_entropy_with_logits celu channel_shuffle conv1d conv2d conv3d
    conv_transpose1d conv_transpose2d conv_transpose3d cosine_embedding_loss cosine_similarity cross_entropy
    ctc_loss dropout dropout1d dropout2d dropout3d elu embedding embedding_bag feature_alpha_dropout fold
    gaussian_nll_loss gelu glu grid_sample group_norm gumbel_softmax hardshrink hardsigmoid hardswish hardtanh
    hinge_embedding_loss huber_loss instance_norm interpolate kl_div l1_loss layer_norm leaky_relu linear
    local_response_norm log_softmax logsigmoid lp_pool1d lp_pool2d margin_ranking_loss max_pool1d max_pool2d
    max_pool3d max_unpool1d max_unpool2d max_unpool3d mish mse_loss multi_margin_loss multilabel_margin_loss
    multilabel_soft_margin_loss nll_loss normalize one_hot pad pairwise_distance pdist pixel_shuffle
    pixel_unshuffle poisson_nll_loss prelu relu relu6 rms_norm rrelu scaled_dot_product_attention selu sigmoid
    silu smooth_l1_loss soft_margin_loss softmax softmin softplus softshrink softsign tanh tanhshrink threshold
    triplet_margin_loss triplet_margin_with_distance_loss unfold
    """
)

INIT = words(
    """
    calculate_gain constant_ dirac_ eye_ kaiming_normal_ kaiming_uniform_ normal_ ones_ orthogonal_ sparse_
    trunc_normal_ uniform_ xavier_normal_ xavier_uniform_ zeros_
    """
)

OPTIM = words("ASGD Adadelta Adagrad Adam AdamW Adamax LBFGS NAdam Optimizer RAdam RMSprop Rprop SGD")

LR_SCHEDULER = words(
    """
    ChainedScheduler ConstantLR CosineAnnealingLR CosineAnnealingWarmRestarts CyclicLR ExponentialLR LRScheduler
    LambdaLR LinearLR MultiStepLR MultiplicativeLR OneCycleLR PolynomialLR ReduceLROnPlateau SequentialLR StepLR
    """
)

DATA = words("Dataset TensorDataset IterableDataset Subset ConcatDataset random_split default_collate")

AUTOGRAD = words("grad backward Function")
AUTOGRAD_FUNCTIONAL = words("vjp jvp jacobian hessian vhp hvp")
LINALG = words(
    """
    cholesky cond cross det diagonal eig eigh eigvals eigvalsh inv lstsq lu lu_factor lu_solve matmul matrix_exp
    matrix_norm matrix_power matrix_rank multi_dot norm pinv qr slogdet solve solve_triangular svd svdvals
    tensorinv tensorsolve vander vecdot vector_norm
    """
)
FFT = words("fft ifft fft2 ifft2 fftn ifftn rfft irfft rfft2 irfft2 rfftn irfftn fftfreq rfftfreq fftshift ifftshift")
SPECIAL = words(
    """
    erf erfc erfinv expit logit log_softmax softmax logsumexp xlogy xlog1py gammaln digamma psi polygamma
    i0 i0e i1 i1e ndtr ndtri log_ndtr sinc entr round exp2 expm1 log1p multigammaln
    """
)

NUMPY = words(
    """
    array asarray zeros ones full empty arange linspace logspace eye identity zeros_like ones_like full_like
    empty_like concatenate stack vstack hstack dstack column_stack split array_split reshape ravel transpose
    swapaxes moveaxis expand_dims squeeze broadcast_to tile repeat pad flip fliplr flipud roll rot90 take
    take_along_axis put where nonzero argwhere clip abs absolute exp exp2 expm1 log log2 log10 log1p sqrt square
    cbrt sin cos tan arcsin arccos arctan arctan2 sinh cosh tanh arcsinh arccosh arctanh floor ceil trunc rint
    round around sign maximum minimum fmax fmin add subtract multiply divide true_divide floor_divide power mod
    remainder negative reciprocal dot vdot matmul inner outer einsum tensordot kron trace diag diagonal triu tril
    sum prod mean std var median max min amax amin argmax argmin ptp cumsum cumprod diff sort argsort unique
    count_nonzero any all isnan isinf isfinite isclose allclose array_equal equal not_equal less less_equal
    greater greater_equal logical_and logical_or logical_not logical_xor nan_to_num meshgrid histogram bincount
    searchsorted interp convolve correlate polyfit polyval percentile quantile average cov corrcoef
    ndarray dtype float16 float32 float64 int8 int16 int32 int64 uint8 bool_ complex64 complex128
    pi e inf nan newaxis
    """
)
NUMPY_RANDOM = words("default_rng seed rand randn randint normal uniform choice permutation shuffle random")
NUMPY_LINALG = words("norm inv solve det eig eigh eigvals svd qr cholesky matrix_rank pinv lstsq matrix_power")

MATH = words(
    """
    acos acosh asin asinh atan atan2 atanh ceil comb copysign cos cosh degrees dist e erf erfc exp expm1 fabs
    factorial floor fmod frexp fsum gamma gcd hypot inf isclose isfinite isinf isnan isqrt lcm ldexp lgamma
    log log10 log1p log2 modf nan perm pi pow prod radians remainder sin sinh sqrt tan tanh tau trunc
    """
)

# Each proxy: dotted name -> (real module, names, child proxies).  Built by proxies.build_modules().
MODULES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "torch": ("torch", TORCH_OPS, ("nn", "optim", "utils", "autograd", "linalg", "fft", "special", "cuda")),
    "torch.nn": ("torch.nn", NN, ("functional", "init", "utils")),
    "torch.nn.functional": ("torch.nn.functional", FUNCTIONAL, ()),
    "torch.nn.init": ("torch.nn.init", INIT, ()),
    "torch.nn.utils": ("torch.nn.utils", words("clip_grad_norm_ clip_grad_value_ parameters_to_vector"), ("rnn",)),
    "torch.nn.utils.rnn": ("torch.nn.utils.rnn", words("pad_sequence pack_padded_sequence pad_packed_sequence"), ()),
    "torch.optim": ("torch.optim", OPTIM, ("lr_scheduler",)),
    "torch.optim.lr_scheduler": ("torch.optim.lr_scheduler", LR_SCHEDULER, ()),
    "torch.utils": ("torch.utils", (), ("data",)),
    "torch.utils.data": ("torch.utils.data", DATA, ()),
    "torch.autograd": ("torch.autograd", AUTOGRAD, ("functional",)),
    "torch.autograd.functional": ("torch.autograd.functional", AUTOGRAD_FUNCTIONAL, ()),
    "torch.linalg": ("torch.linalg", LINALG, ()),
    "torch.fft": ("torch.fft", FFT, ()),
    "torch.special": ("torch.special", SPECIAL, ()),
    "torch.cuda": ("torch.cuda", words("is_available"), ()),
    "numpy": ("numpy", NUMPY, ("random", "linalg")),
    "numpy.random": ("numpy.random", NUMPY_RANDOM, ()),
    "numpy.linalg": ("numpy.linalg", NUMPY_LINALG, ()),
    "math": ("math", MATH, ()),
}

# Attribute names refused on every object (not only modules): they reach files, shared memory, raw
# pointers, pickles, the compiler, frames or the class hierarchy.  Underscore names are refused anyway.
DENIED_ATTRIBUTES: frozenset[str] = frozenset(
    words(
        """
        storage untyped_storage share_memory_ share_memory is_shared pin_memory is_pinned data_ptr from_file
        tofile dump dumps ctypes cffi load save compile format format_map mro register_at_fork
        gi_frame gi_code gi_yieldfrom gi_suspended cr_frame cr_code cr_await cr_origin ag_frame ag_code ag_await
        tb_frame tb_next f_back f_globals f_locals f_builtins f_code f_trace f_generator co_code with_traceback
        """
    )
)

# Dunder methods a class body may define.  Everything else (__eq__, __hash__, __torch_function__, __del__,
# __getattr__, __reduce__, __init_subclass__, __format__ ...) is refused: they would let data run code in
# our own helpers.  __init__ covers nn.Module; the rest are what torch.utils.data.Dataset subclasses need.
DEFINABLE_DUNDERS: frozenset[str] = frozenset(words("__init__ __len__ __getitem__ __iter__ __next__"))

# Keys the compiler itself puts in a class namespace.
CLASS_NAMESPACE_DUNDERS: frozenset[str] = frozenset(
    words("__module__ __qualname__ __doc__ __classcell__ __annotations__ __static_attributes__ __firstlineno__")
)
