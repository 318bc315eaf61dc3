// Random tensors: argument checks, reserving Philox blocks from the generator, and dispatch.
// Each op advances its generator by the number of blocks its elements use (ops/random_kernels.h
// gives the mapping), so consecutive calls never reuse a counter. None is differentiable.
#include "ops/random.h"

#include <limits>
#include <type_traits>

#include "core/cuda_guard.h"
#include "core/dispatch.h"
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

// A fresh output and the first of the `per_block`-packed blocks reserved for it.
Tensor allocate(const Shape& shape, DType dtype, Device device, Generator& generator,
                int64_t per_block, uint64_t& offset) {
    Tensor out = empty(shape, dtype, device);
    offset = generator.advance(philox_blocks(out.numel(), per_block));
    return out;
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
    uint64_t offset = 0;
    Tensor out = allocate(shape, dtype, device, gen, uniform_per_block(dtype), offset);
    LUMEN_DISPATCH(device, rand_forward, gen.seed(), offset, strided(out, "rand"));
    return out;
}

Tensor randn(const Shape& shape, DType dtype, Generator* generator, Device device) {
    check_floating(dtype, "randn");
    Generator& gen = generator_or_default(generator);
    uint64_t offset = 0;
    // Box-Muller turns one block (two 53-bit uniforms) into two normals.
    Tensor out = allocate(shape, dtype, device, gen, 2, offset);
    LUMEN_DISPATCH(device, randn_forward, gen.seed(), offset, strided(out, "randn"));
    return out;
}

Tensor randint(int64_t low, int64_t high, const Shape& shape, DType dtype, Generator* generator,
               Device device) {
    LUMEN_CHECK(high > low, "randint", "high must be greater than low, got low ", low, " and high ",
                high);
    LUMEN_CHECK(range_fits(low, high, dtype), "randint", "the range [", low, ", ", high,
                ") does not fit in ", dtype);
    Generator& gen = generator_or_default(generator);
    uint64_t offset = 0;
    Tensor out = allocate(shape, dtype, device, gen, 2, offset);  // one 64-bit draw per element
    StridedView view = strided(out, "randint");
    LUMEN_DISPATCH(device, randint_forward, gen.seed(), offset, low, high, view);
    return out;
}

Tensor bernoulli(const Tensor& p, Generator* generator) {
    LUMEN_CHECK(p.defined(), "bernoulli", "got an undefined tensor");
    check_floating(p.dtype(), "bernoulli");
    Tensor prob = p.detach().contiguous();
    Generator& gen = generator_or_default(generator);
    uint64_t offset = 0;
    Tensor out =
        allocate(p.shape(), p.dtype(), p.device(), gen, uniform_per_block(p.dtype()), offset);
    StridedView p_view = strided(prob, "bernoulli"), out_view = strided(out, "bernoulli");
    int64_t invalid = -1;
    invalid = LUMEN_DISPATCH(p, bernoulli_forward, gen.seed(), offset, p_view, out_view);
    LUMEN_CHECK(invalid < 0, "bernoulli", "probabilities must lie in [0, 1], got ",
                read_element(prob.cpu(), invalid), " at flat index ", invalid,
                " of a tensor of shape ", p.shape());
    return out;
}

Tensor bernoulli(const Shape& shape, double p, DType dtype, Generator* generator, Device device) {
    LUMEN_CHECK(p >= 0 && p <= 1, "bernoulli", "p must lie in [0, 1], got ", p);
    LUMEN_CHECK(dtype != DType::float16 && dtype != DType::bfloat16, "bernoulli",
                "not implemented for dtype ", dtype);
    // float64 outputs compare against 53-bit uniforms, the others against 24-bit ones.
    DType precision = dtype == DType::float64 ? DType::float64 : DType::float32;
    Generator& gen = generator_or_default(generator);
    uint64_t offset = 0;
    Tensor out = allocate(shape, dtype, device, gen, uniform_per_block(precision), offset);
    StridedView view = strided(out, "bernoulli");
    LUMEN_DISPATCH(device, bernoulli_scalar_forward, gen.seed(), offset, p, precision, view);
    return out;
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
