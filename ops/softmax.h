// softmax and log_softmax along one dim, numerically stable (the row maximum is subtracted).
#pragma once

#include "core/tensor.h"

namespace lumen {

// y = exp(x - max) / sum(exp(x - max)) along dim; backward y * (g - sum(g * y)).
Tensor softmax(const Tensor& x, int64_t dim);
// y = x - max - log(sum(exp(x - max))) along dim; backward g - exp(y) * sum(g).
Tensor log_softmax(const Tensor& x, int64_t dim);

}  // namespace lumen
