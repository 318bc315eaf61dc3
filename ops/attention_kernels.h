// Internal: the fused attention kernels (ops/cpu/attention.cpp, ops/cuda/attention.cu) and the
// problem description ops/attention.cpp hands them.
//
// Every operand is a StridedView of rank r >= 3 whose first r - 2 dims are the batch dims
// (shape equal to the problem's batch shape; stride 0 where the tensor is broadcast) and whose
// last two are (rows, cols). q, k, v, out, grad_out, grad_q, grad_k, grad_v have column stride
// 1; out, lse and the gradients are contiguous. The bias view may have any strides (0 where
// broadcast, including its last two dims); grad_bias has the bias view's strides over a buffer
// of the bias's own (unbroadcast) shape, so batch elements that share a bias slice add into the
// same memory: the kernel serialises those (lse is (batch..., N), float dtype of q).
//
// Element (e, i, j) of the map (e the row-major batch index) is dropped when the uniform of
// Philox element idx = shard.global(e N M + i M + j) (ops/dropout_kernels.h: word (idx % 4) of
// block offset + idx / 4 in float32, words 2 (idx % 2), +1 of block offset + idx / 2 in
// float64) is >= 1 - p; kept entries are scaled by 1 / (1 - p). shard.per is a multiple of
// N M (ops/attention.cpp checks it), so a row of the map is a run of M global elements.
#pragma once

#include <cstdint>

#include "core/cuda_guard.h"
#include "core/sample_shard.h"
#include "core/strided.h"

namespace lumen {

struct AttentionProblem {
    int64_t batch = 1;  // product of the batch dims
    int64_t n = 0, m = 0, d = 0, dv = 0;
    double scale = 1.0;
    bool causal = false;
    bool has_bias = false;
    double dropout_p = 0.0;
    uint64_t seed = 0, offset = 0;
    ShardMap shard;  // the identity unless the dropout was drawn under a sample shard
};

namespace cpu {
// out = softmax(scale q k^T + bias) (dropped) v, lse = the rows' log-sum-exp of the scores.
void attention_forward(const AttentionProblem& p, const StridedView& q, const StridedView& k,
                       const StridedView& v, const StridedView& bias, const StridedView& out,
                       const StridedView& lse);
// grad_q, grad_k, grad_v (and grad_bias when its data is not null, zeroed by the caller) from
// the saved inputs, out and lse. delta = rowsum(grad_out * out) is computed inside.
void attention_backward(const AttentionProblem& p, const StridedView& q, const StridedView& k,
                        const StridedView& v, const StridedView& bias, const StridedView& out,
                        const StridedView& lse, const StridedView& grad_out,
                        const StridedView& grad_q, const StridedView& grad_k,
                        const StridedView& grad_v, const StridedView& grad_bias);
}  // namespace cpu

namespace cuda {
LUMEN_CUDA_API void attention_forward(const AttentionProblem& p, const StridedView& q,
                                      const StridedView& k, const StridedView& v,
                                      const StridedView& bias, const StridedView& out,
                                      const StridedView& lse);
LUMEN_CUDA_API void attention_backward(const AttentionProblem& p, const StridedView& q,
                                       const StridedView& k, const StridedView& v,
                                       const StridedView& bias, const StridedView& out,
                                       const StridedView& lse, const StridedView& grad_out,
                                       const StridedView& grad_q, const StridedView& grad_k,
                                       const StridedView& grad_v, const StridedView& grad_bias);
}  // namespace cuda

}  // namespace lumen
