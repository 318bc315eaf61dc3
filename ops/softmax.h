// softmax and log_softmax along one dim, numerically stable (the row maximum is subtracted).
// float32/float64 (and float16/bfloat16 on CUDA, computed in float32), any dim (negative
// counts from the end); other dtypes throw [softmax] / [log_softmax] naming the dtype.
// Backward runs a dedicated kernel from the saved output (the input is not kept).
#pragma once

#include "core/tensor.h"

namespace lumen {

// y = exp(x - max) / sum(exp(x - max)) along dim; backward y * (g - sum(g * y)).
// -inf entries give exactly 0; a row of only -inf gives NaN, as in PyTorch.
Tensor softmax(const Tensor& x, int64_t dim);
// y = (x - max) - log(sum(exp(x - max))) along dim; backward g - exp(y) * sum(g).
Tensor log_softmax(const Tensor& x, int64_t dim);

}  // namespace lumen
