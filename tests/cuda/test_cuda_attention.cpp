// The fused attention kernels on the GPU (ops/cuda/attention.cu) against the CPU's
// (ops/cpu/attention.cpp): outputs and the gradients of q, k, v and a broadcast bias, over several
// tiles, with causal masking, a key padding bias with -inf, dropout (the same mask on both
// devices), head widths that are not multiples of 32, and non-contiguous operands. float64 to
// 1e-10; float32 to 1e-4 (dQ and dBias are summed with atomics on the GPU, in another order).
#include <limits>

#include "support/parity.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

Function attention_with(AttentionOptions options) {
    return [options](const std::vector<Tensor>& in) {
        AttentionOptions o = options;
        if (in.size() > 3) o.bias = in[3];
        return scaled_dot_product_attention(in[0], in[1], in[2], o);
    };
}

std::vector<Tensor> inputs(int64_t b, int64_t h, int64_t n, int64_t m, int64_t d, int64_t dv,
                           DType dtype, uint64_t seed) {
    return {random_input({b, h, n, d}, seed, -2, 2).to(dtype),
            random_input({b, h, m, d}, seed + 1, -2, 2).to(dtype),
            random_input({b, h, m, dv}, seed + 2).to(dtype)};
}

}  // namespace

TEST_CASE("cuda: fused attention matches the CPU", "[cuda][attention]") {
    if (!have_gpu()) return;
    for (DType dtype : {DType::float64, DType::float32}) {
        double tol = dtype == DType::float64 ? 1e-10 : 1e-4;
        INFO(dtype);
        require_cuda_parity(attention_with({}), inputs(2, 3, 150, 300, 40, 72, dtype, 1), tol, tol);
        require_cuda_parity(attention_with({.causal = true}),
                            inputs(1, 2, 200, 200, 64, 64, dtype, 2), tol, tol);
        std::vector<Tensor> with_bias = inputs(2, 2, 70, 130, 16, 8, dtype, 3);
        with_bias.push_back(random_input({2, 70, 130}, 4, -3, 3).to(dtype));
        require_cuda_parity(attention_with({}), with_bias, tol, tol);
        AttentionDropout draw{0.3, 7, 11};
        require_cuda_parity(attention_with({.dropout = draw}),
                            inputs(2, 2, 100, 100, 32, 32, dtype, 5), tol, tol);
        // q transposed in memory (noncontiguous_first), keys padded by a -inf bias.
        std::vector<Tensor> padded = inputs(2, 1, 33, 65, 8, 8, dtype, 6);
        std::vector<double> values(2 * 65, 0.0);
        for (size_t j = 65 + 40; j < 130; ++j) values[j] = -std::numeric_limits<double>::infinity();
        padded.push_back(from_vector(values, {2, 1, 1, 65}).to(dtype));
        require_cuda_parity(attention_with({}), padded, tol, tol, true);
    }
}
