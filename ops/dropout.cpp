// dropout (fused mask draw and scaling, dedicated backward from the saved uint8 mask) and
// drop_path (a composite of bernoulli and a broadcast mul: its mask has one value per sample).
// Kernels in ops/cpu/dropout.cpp and ops/cuda/dropout.cu. Under a sample-shard context
// (core/sample_shard.h) the masks are this rank's rows of the global batch's masks: dropout's
// kernels take the map, bernoulli draws the global mask and keeps this rank's samples.
#include "ops/dropout.h"

#include "core/autograd.h"
#include "core/cuda_guard.h"
#include "core/profiler.h"
#include "core/sample_shard.h"
#include "ops/dropout_kernels.h"
#include "ops/elementwise.h"
#include "ops/random.h"
#include "ops/random_kernels.h"

namespace lumen {

namespace {

void check_probability(double p, const char* name, const char* op) {
    LUMEN_CHECK(p >= 0.0 && p <= 1.0, op, name, " must be between 0 and 1, got ", p);
}

void check_float(const Tensor& x, const char* op) {
    LUMEN_CHECK(x.defined(), op, "got an undefined input");
    LUMEN_CHECK(x.dtype() == DType::float32 || x.dtype() == DType::float64, op,
                "expects a float32 or float64 input, got ", x.dtype());
}

}  // namespace

Tensor dropout(const Tensor& input, double p, bool training, Generator* generator) {
    const char* op = "dropout";
    profiler::Scope profile(profiler::Kind::op, op, input);
    check_float(input, op);
    check_probability(p, "p", op);
    if (!training || p == 0.0) return input;
    Generator& gen = generator ? *generator : default_generator();
    // The blocks bernoulli(shape, 1 - p, dtype) would reserve, so masks match it; sharded,
    // those of the global tensor (world times the elements).
    const ShardMap shard = sample_shard_map(op, input.shape());
    uint64_t offset =
        gen.advance(philox_blocks(input.numel() * shard.world, uniform_per_block(input.dtype())));
    double scale = p < 1.0 ? 1.0 / (1.0 - p) : 0.0;
    Tensor x;
    {
        NoGradGuard no_grad;
        x = input.detach().contiguous();
    }
    Tensor out = empty(x.shape(), x.dtype(), x.device());
    Tensor mask = empty(x.shape(), DType::uint8, x.device());
    StridedView x_view = strided(x, op), out_view = strided(out, op), mask_view = strided(mask, op);
    if (x.numel() > 0)
        LUMEN_DISPATCH(x, dropout_forward, gen.seed(), offset, 1.0 - p, scale, shard, x_view,
                       out_view, mask_view);
    // grad_x = grad_y * mask / (1 - p)
    record_backward(op, {input}, out, [scale, op, saved_mask = save(mask)](const Tensor& grad_out) {
        Tensor mask = saved_mask.get();
        Tensor g = grad_out.contiguous();
        Tensor grad_x = empty(g.shape(), g.dtype(), g.device());
        StridedView g_view = strided(g, op), mask_view = strided(mask, op);
        StridedView grad_view = strided(grad_x, op);
        if (g.numel() > 0) LUMEN_DISPATCH(g, dropout_backward, g_view, mask_view, scale, grad_view);
        return std::vector<Tensor>{grad_x};
    });
    return out;
}

Tensor drop_path(const Tensor& x, double drop_prob, bool training, bool scale_by_keep,
                 Generator* generator) {
    const char* op = "drop_path";
    check_float(x, op);
    check_probability(drop_prob, "drop_prob", op);
    LUMEN_CHECK(x.ndim() >= 1, op, "expects x of shape (B, ...), got a 0-d tensor");
    if (!training || drop_prob == 0.0) return x;
    double keep_prob = 1.0 - drop_prob;
    Shape mask_shape(size_t(x.ndim()), 1);
    mask_shape[0] = x.size(0);
    // As timm: bernoulli(keep_prob) per sample, divided by keep_prob unless that is 0.
    Tensor mask = bernoulli(mask_shape, keep_prob, x.dtype(), generator, x.device());
    if (keep_prob > 0.0 && scale_by_keep) mask = div(mask, keep_prob);
    return mul(x, mask);
}

Tensor channel_dropout(const Tensor& x, int64_t spatial_dims, double p, bool training,
                       Generator* generator) {
    const std::string op = "dropout" + std::to_string(spatial_dims) + "d";
    check_float(x, op.c_str());
    check_probability(p, "p", op.c_str());
    LUMEN_CHECK(x.ndim() == spatial_dims + 1 || x.ndim() == spatial_dims + 2, op,
                "expects x of shape (B, C, *spatial) or (C, *spatial) with ", spatial_dims,
                " spatial dims, got shape ", x.shape());
    if (!training || p == 0.0) return x;
    // One draw per channel (of each sample), broadcast over the spatial dims.
    Shape mask_shape = x.shape();
    for (int64_t d = x.ndim() - spatial_dims; d < x.ndim(); ++d) mask_shape[size_t(d)] = 1;
    Tensor mask = bernoulli(mask_shape, 1.0 - p, x.dtype(), generator, x.device());
    if (p < 1.0) mask = div(mask, 1.0 - p);
    return mul(x, mask);
}

}  // namespace lumen
