// Random tensors: argument checks, reserving Philox blocks from the generator, and dispatch.
// Each op advances its generator by the number of blocks its elements use (ops/random_kernels.h
// gives the mapping), so consecutive calls never reuse a counter. None is differentiable.
// Under a sample-shard context (core/sample_shard.h) each op draws the global tensor, world
// times the elements, and keeps this rank's samples of it.
#include "ops/random.h"

#include <limits>
#include <type_traits>

#include "core/cuda_guard.h"
#include "core/dispatch.h"
#include "core/sample_shard.h"
#include "ops/random_kernels.h"

namespace lumen {

namespace {

Generator& generator_or_default(Generator* generator) {
    return generator ? *generator : default_generator();
}

void check_floating(DType dtype, const char* op) {
    LUMEN_CHECK(dtype == DType::float32 || dtype == DType::float64, op,
                "supports float32 and float64, got ", dtype);
}

// A fresh output for the draw and the first of the `per_block`-packed blocks reserved for it.
// Under a sample-shard context the draw is the global tensor, flat, world times the elements
// of `shape`, as one process with the global batch draws it; local_part keeps this rank's part.
struct Draw {
    Tensor out;
    uint64_t offset = 0;
    ShardMap shard;
};

Draw allocate(const char* op, const Shape& shape, DType dtype, Device device, Generator& generator,
              int64_t per_block) {
    Draw draw;
    draw.shard = sample_shard_map(op, shape);
    draw.out = draw.shard.is_identity()
                   ? empty(shape, dtype, device)
                   : empty({shape_numel(shape) * draw.shard.world}, dtype, device);
    draw.offset = generator.advance(philox_blocks(draw.out.numel(), per_block));
    return draw;
}

// The draw's elements of this rank, in `shape`: global (b, world, per) -> [:, rank, :]
// (ShardMap::global).
Tensor local_part(const Draw& draw, const Shape& shape) {
    const ShardMap& shard = draw.shard;
    if (shard.is_identity()) return draw.out;
    const int64_t batch = shape_numel(shape) / shard.per;
    return draw.out.view({batch, shard.world, shard.per}).select(1, shard.rank).reshape(shape);
}

// Whether every integer in [low, high) is representable in dtype (floats hold them all as
// values, rounded beyond 2^24 or 2^53, as torch.randint does).
bool range_fits(int64_t low, int64_t high, DType dtype) {
    return dispatch_numeric(dtype, "randint", [&]<typename T>() {
        if constexpr (std::is_floating_point_v<T>) {
            return true;
        } else {
            return low >= int64_t(std::numeric_limits<T>::lowest()) &&
                   high - 1 <= int64_t(std::numeric_limits<T>::max());
        }
    });
}

}  // namespace

Tensor rand(const Shape& shape, DType dtype, Generator* generator, Device device) {
    check_floating(dtype, "rand");
    Generator& gen = generator_or_default(generator);
    Draw draw = allocate("rand", shape, dtype, device, gen, uniform_per_block(dtype));
    LUMEN_DISPATCH(device, rand_forward, gen.seed(), draw.offset, strided(draw.out, "rand"));
    return local_part(draw, shape);
}

Tensor randn(const Shape& shape, DType dtype, Generator* generator, Device device) {
    check_floating(dtype, "randn");
    Generator& gen = generator_or_default(generator);
    // Box-Muller turns one block (two 53-bit uniforms) into two normals.
    Draw draw = allocate("randn", shape, dtype, device, gen, 2);
    LUMEN_DISPATCH(device, randn_forward, gen.seed(), draw.offset, strided(draw.out, "randn"));
    return local_part(draw, shape);
}

Tensor randint(int64_t low, int64_t high, const Shape& shape, DType dtype, Generator* generator,
               Device device) {
    LUMEN_CHECK(high > low, "randint", "high must be greater than low, got low ", low, " and high ",
                high);
    LUMEN_CHECK(range_fits(low, high, dtype), "randint", "the range [", low, ", ", high,
                ") does not fit in ", dtype);
    Generator& gen = generator_or_default(generator);
    Draw draw = allocate("randint", shape, dtype, device, gen, 2);  // one 64-bit draw per element
    StridedView view = strided(draw.out, "randint");
    LUMEN_DISPATCH(device, randint_forward, gen.seed(), draw.offset, low, high, view);
    return local_part(draw, shape);
}

Tensor bernoulli(const Tensor& p, Generator* generator) {
    LUMEN_CHECK(p.defined(), "bernoulli", "got an undefined tensor");
    check_floating(p.dtype(), "bernoulli");
    Tensor prob = p.detach().contiguous();
    Generator& gen = generator_or_default(generator);
    Draw draw =
        allocate("bernoulli", p.shape(), p.dtype(), p.device(), gen, uniform_per_block(p.dtype()));
    const ShardMap& shard = draw.shard;
    // Sharded: every rank's rows of the global probabilities are this rank's (only this rank's
    // part is kept), so a global index g maps back to local (g / (world per)) per + g % per.
    Tensor drawn_prob = prob;
    if (!shard.is_identity()) {
        const int64_t batch = p.numel() / shard.per;
        drawn_prob = prob.view({batch, 1, shard.per})
                         .expand({batch, shard.world, shard.per})
                         .contiguous()
                         .view({p.numel() * shard.world});
    }
    StridedView p_view = strided(drawn_prob, "bernoulli");
    StridedView out_view = strided(draw.out, "bernoulli");
    int64_t invalid = -1;
    invalid = LUMEN_DISPATCH(p, bernoulli_forward, gen.seed(), draw.offset, p_view, out_view);
    if (invalid >= 0 && !shard.is_identity())
        invalid = invalid / (shard.world * shard.per) * shard.per + invalid % shard.per;
    LUMEN_CHECK(invalid < 0, "bernoulli", "probabilities must lie in [0, 1], got ",
                read_element(prob.cpu(), invalid), " at flat index ", invalid,
                " of a tensor of shape ", p.shape());
    return local_part(draw, p.shape());
}

Tensor bernoulli(const Shape& shape, double p, DType dtype, Generator* generator, Device device) {
    LUMEN_CHECK(p >= 0 && p <= 1, "bernoulli", "p must lie in [0, 1], got ", p);
    LUMEN_CHECK(dtype != DType::float16 && dtype != DType::bfloat16, "bernoulli",
                "not implemented for dtype ", dtype);
    // float64 outputs compare against 53-bit uniforms, the others against 24-bit ones.
    DType precision = dtype == DType::float64 ? DType::float64 : DType::float32;
    Generator& gen = generator_or_default(generator);
    Draw draw = allocate("bernoulli", shape, dtype, device, gen, uniform_per_block(precision));
    StridedView view = strided(draw.out, "bernoulli");
    LUMEN_DISPATCH(device, bernoulli_scalar_forward, gen.seed(), draw.offset, p, precision, view);
    return local_part(draw, shape);
}

Tensor rand_like(const Tensor& like, Generator* generator) {
    LUMEN_CHECK(like.defined(), "rand_like", "got an undefined tensor");
    return rand(like.shape(), like.dtype(), generator, like.device());
}

Tensor randn_like(const Tensor& like, Generator* generator) {
    LUMEN_CHECK(like.defined(), "randn_like", "got an undefined tensor");
    return randn(like.shape(), like.dtype(), generator, like.device());
}

}  // namespace lumen
