// scaled_dot_product_attention: argument checks, the operand views the kernels take
// (ops/attention_kernels.h), and the backward, which recomputes the map tile by tile from the
// saved log-sum-exp. attention_reference is the same computation through the unfused ops.
#include "ops/attention.h"

#include <cmath>
#include <limits>

#include "core/autograd.h"
#include "core/cuda_guard.h"
#include "core/profiler.h"
#include "core/sample_shard.h"
#include "ops/attention_kernels.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/layout.h"
#include "ops/matmul.h"
#include "ops/random_kernels.h"
#include "ops/softmax.h"

namespace lumen {

namespace {

constexpr const char* kOp = "scaled_dot_product_attention";

// The map's shape (..., N, M); checks every argument.
Shape check_arguments(const Tensor& q, const Tensor& k, const Tensor& v,
                      const AttentionOptions& options) {
    LUMEN_CHECK(q.defined() && k.defined() && v.defined(), kOp, "got an undefined q, k or v");
    LUMEN_CHECK(q.dtype() == DType::float32 || q.dtype() == DType::float64, kOp,
                "expects float32 or float64, got q of dtype ", q.dtype());
    LUMEN_CHECK(k.dtype() == q.dtype() && v.dtype() == q.dtype(), kOp,
                "q, k and v must share a dtype, got ", q.dtype(), ", ", k.dtype(), ", ", v.dtype());
    LUMEN_CHECK(k.device() == q.device() && v.device() == q.device(), kOp,
                "q, k and v must be on one device, got ", q.device(), ", ", k.device(), ", ",
                v.device());
    LUMEN_CHECK(q.ndim() >= 3 && k.ndim() == q.ndim() && v.ndim() == q.ndim(), kOp,
                "expects q (..., N, D), k (..., M, D), v (..., M, Dv) with at least one batch dim, "
                "got shapes ",
                q.shape(), ", ", k.shape(), ", ", v.shape());
    const int64_t r = q.ndim();
    Shape batch(q.shape().begin(), q.shape().end() - 2);
    LUMEN_CHECK(Shape(k.shape().begin(), k.shape().end() - 2) == batch &&
                    Shape(v.shape().begin(), v.shape().end() - 2) == batch &&
                    k.size(r - 1) == q.size(r - 1) && v.size(r - 2) == k.size(r - 2),
                kOp,
                "expects q (..., N, D), k (..., M, D), v (..., M, Dv) with equal batch dims, got ",
                q.shape(), ", ", k.shape(), ", ", v.shape());
    Shape map = batch;
    map.push_back(q.size(r - 2));
    map.push_back(k.size(r - 2));
    LUMEN_CHECK(!options.causal || q.size(r - 2) == k.size(r - 2), kOp,
                "causal attention needs as many queries as keys, got N = ", q.size(r - 2),
                ", M = ", k.size(r - 2));
    const AttentionDropout& drop = options.dropout;
    LUMEN_CHECK(drop.p >= 0.0 && drop.p <= 1.0, kOp, "dropout p must be in [0, 1], got ", drop.p);
    if (options.bias.defined()) {
        const Tensor& b = options.bias;
        LUMEN_CHECK(b.dtype() == q.dtype() && b.device() == q.device(), kOp, "bias must be ",
                    q.dtype(), " on ", q.device(), ", got ", b.dtype(), " on ", b.device());
        bool fits = b.ndim() <= int64_t(map.size());
        for (int64_t d = 1; fits && d <= b.ndim(); ++d) {
            int64_t have = b.size(b.ndim() - d), want = map[map.size() - size_t(d)];
            fits = have == want || have == 1;
        }
        LUMEN_CHECK(fits, kOp, "bias of shape ", b.shape(),
                    " does not broadcast to the scores' shape ", map);
    }
    return map;
}

// t itself when the kernels can read it in place (unit column stride, rows apart by at least a
// row), else a contiguous copy.
Tensor readable(const Tensor& t) {
    const int64_t r = t.ndim();
    if (t.stride(r - 1) == 1 && t.stride(r - 2) >= t.size(r - 1) && t.size(r - 1) > 0) return t;
    return t.contiguous();
}

}  // namespace

AttentionDropout draw_attention_dropout(double p, int64_t map_numel, DType dtype,
                                        Generator* generator) {
    LUMEN_CHECK(p >= 0.0 && p <= 1.0, "attention dropout", "p must be in [0, 1], got ", p);
    if (p == 0.0) return {};
    Generator& gen = generator ? *generator : default_generator();
    // The blocks dropout(map) reserves (ops/dropout.cpp), so the masks are the same: sharded,
    // those of the global map.
    const ShardMap shard = sample_shard_map("attention dropout", {map_numel});
    uint64_t offset = gen.advance(philox_blocks(map_numel * shard.world, uniform_per_block(dtype)));
    return {p, gen.seed(), offset};
}

Tensor attention_reference(const Tensor& q, const Tensor& k, const Tensor& v,
                           const AttentionOptions& options) {
    check_arguments(q, k, v, options);
    const int64_t r = q.ndim();
    double scale = options.scale < 0 ? 1.0 / std::sqrt(double(q.size(r - 1))) : options.scale;
    Tensor scores = matmul(mul(q, scale), k.transpose(-2, -1));
    if (options.bias.defined()) scores = add(scores, options.bias);
    if (options.causal) scores = add(scores, causal_mask(q.size(r - 2), q.dtype(), q.device()));
    Tensor weights = softmax(scores, -1);
    if (options.dropout.p > 0.0) {
        // Under a sample-shard context dropout takes this rank's rows of the global map's mask.
        Generator replay(options.dropout.seed);
        replay.set_offset(options.dropout.offset);
        weights = dropout(weights, options.dropout.p, true, &replay);
    }
    return matmul(weights, v);
}

Tensor scaled_dot_product_attention(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in,
                                    const AttentionOptions& options) {
    profiler::Scope profile(profiler::Kind::op, kOp, q_in);
    Shape map = check_arguments(q_in, k_in, v_in, options);
    const int64_t r = q_in.ndim();
    const int64_t n = q_in.size(r - 2), m = k_in.size(r - 2);
    // No keys (the product of an empty map is 0) or nothing to compute: the unfused ops are
    // exact and cost nothing.
    if (m == 0 || n == 0 || q_in.size(r - 1) == 0 || v_in.size(r - 1) == 0 || q_in.numel() == 0)
        return attention_reference(q_in, k_in, v_in, options);

    AttentionProblem p;
    p.n = n, p.m = m, p.d = q_in.size(r - 1), p.dv = v_in.size(r - 1);
    p.batch = q_in.numel() / (n * p.d);
    p.scale = options.scale < 0 ? 1.0 / std::sqrt(double(p.d)) : options.scale;
    p.causal = options.causal;
    p.has_bias = options.bias.defined();
    p.dropout_p = options.dropout.p;
    p.seed = options.dropout.seed, p.offset = options.dropout.offset;
    // The draw was made under the calling thread's context (the modules draw right before the
    // call), so the same map applies; the backward keeps it in p.
    if (p.dropout_p > 0.0) p.shard = sample_shard_map(kOp, map);
    LUMEN_CHECK(p.shard.is_identity() || p.shard.per % (n * m) == 0, kOp,
                "data-parallel sample sharding splits the map ", map, " into ", p.shard.per,
                " entries per sample; expected whole (N, M) maps");

    Tensor q, k, v, bias;
    {
        NoGradGuard no_grad;
        q = readable(q_in.detach()), k = readable(k_in.detach()), v = readable(v_in.detach());
        if (p.has_bias) bias = options.bias.detach().contiguous();
    }
    Shape out_shape(map.begin(), map.end() - 1);
    Shape lse_shape = out_shape;
    out_shape.push_back(p.dv);
    lse_shape.pop_back();
    lse_shape.push_back(n);
    Tensor out = empty(out_shape, q.dtype(), q.device());
    Tensor lse = empty(lse_shape, q.dtype(), q.device());
    StridedView bias_view = p.has_bias ? strided_as(bias, map, kOp) : StridedView{};
    LUMEN_DISPATCH(q, attention_forward, p, strided(q, kOp), strided(k, kOp), strided(v, kOp),
                   bias_view, strided(out, kOp), strided(lse, kOp));

    const bool need_bias = p.has_bias && options.bias.requires_grad();
    record_backward(
        kOp, {q_in, k_in, v_in, options.bias}, out,
        [p, map, need_bias, sq = save(q), sk = save(k), sv = save(v), sb = save(bias),
         so = save(out), sl = save(lse)](const Tensor& grad_out) {
            Tensor q = sq.get(), k = sk.get(), v = sv.get(), out = so.get(), lse = sl.get();
            Tensor bias = p.has_bias ? sb.get() : Tensor();
            Tensor g = grad_out.contiguous();
            Tensor gq = empty(q.shape(), q.dtype(), q.device());
            Tensor gk = empty(k.shape(), k.dtype(), k.device());
            Tensor gv = empty(v.shape(), v.dtype(), v.device());
            Tensor gb = need_bias ? zeros(bias.shape(), bias.dtype(), bias.device()) : Tensor();
            StridedView bias_view = p.has_bias ? strided_as(bias, map, kOp) : StridedView{};
            StridedView gb_view = need_bias ? strided_as(gb, map, kOp) : StridedView{};
            LUMEN_DISPATCH(q, attention_backward, p, strided(q, kOp), strided(k, kOp),
                           strided(v, kOp), bias_view, strided(out, kOp), strided(lse, kOp),
                           strided(g, kOp), strided(gq, kOp), strided(gk, kOp), strided(gv, kOp),
                           gb_view);
            return std::vector<Tensor>{gq, gk, gv, gb};
        });
    return out;
}

}  // namespace lumen
