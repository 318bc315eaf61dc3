"""The case builders of gen_random_ops.py: one per `op.*` module that check-vectors knows
(conformance/op_vectors.cpp, conformance/ops/*.cpp), each drawing shapes, kwargs and values
from an R (random_values.py). Keyword names and defaults are PyTorch 1.13's; a kwarg is
sometimes left out so that the adapter's default is exercised too. A builder raises Skip
for a draw it cannot use; record() raises it for a draw PyTorch rejects.

ulps (see oracle_record.py): 16 for ops that only move, add or multiply a few values, 32
for convolutions and pooling (longer sums), 64 for transcendental functions, reductions
and normalizations. linear=True where the op is linear in each floating input (the
absolute-value evaluation then bounds every summation's rounding)."""
from random_cases_index_loss import (bce, bce_with_logits, class_loss, embedding, flip, gather,
                                     index_add, index_select, one_hot, regression_loss,
                                     repeat_interleave, roll, scatter_add, triangle)
from random_cases_math import (activation, batch_norm, cumsum, group_norm, instance_norm,
                               layer_norm, matmul, normalize, rms_norm, softmax, var)
from random_cases_spatial import (adaptive_pool, avg_pool, conv, conv_transpose, interpolate,
                                  max_pool, pad)

BUILDERS = {
    "gelu": activation, "silu": activation, "elu": activation, "sigmoid": activation,
    "tanh": activation, "relu": activation, "softplus": activation,
    "leaky_relu": activation, "hardtanh": activation,
    "softmax": softmax, "log_softmax": softmax,
    "matmul": matmul, "var": var, "cumsum": cumsum,
    "layer_norm": layer_norm, "rms_norm": rms_norm, "group_norm": group_norm,
    "instance_norm": instance_norm, "batch_norm": batch_norm, "normalize": normalize,
    "conv1d": conv, "conv2d": conv, "conv3d": conv,
    "conv_transpose2d": conv_transpose, "conv_transpose3d": conv_transpose,
    "max_pool2d": max_pool, "max_pool3d": max_pool,
    "avg_pool2d": avg_pool, "avg_pool3d": avg_pool,
    "adaptive_avg_pool2d": adaptive_pool, "adaptive_avg_pool3d": adaptive_pool,
    "adaptive_max_pool2d": adaptive_pool, "adaptive_max_pool3d": adaptive_pool,
    "interpolate": interpolate, "pad": pad,
    "embedding": embedding, "gather": gather, "index_select": index_select,
    "scatter_add": scatter_add, "index_add": index_add, "tril": triangle, "triu": triangle,
    "roll": roll, "flip": flip, "repeat_interleave": repeat_interleave, "one_hot": one_hot,
    "cross_entropy": class_loss, "nll_loss": class_loss,
    "binary_cross_entropy_with_logits": bce_with_logits, "binary_cross_entropy": bce,
    "mse_loss": regression_loss, "l1_loss": regression_loss,
    "smooth_l1_loss": regression_loss, "huber_loss": regression_loss,
}
