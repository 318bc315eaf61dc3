// float16 and bfloat16 on the GPU: elementwise ops, where, comparisons and promotion,
// reductions and softmax, each against the float32 CPU result on the same (exactly
// representable) values, with tolerances of a few half-precision ulps; a few gradients; and
// the CPU's refusal of half-precision compute. GPU cases skip with a message without a GPU.
#include <functional>
#include <string>
#include <vector>

#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

using Unary = std::function<Tensor(const Tensor&)>;

const DType kHalfTypes[] = {DType::float16, DType::bfloat16};

// Relative size of a rounding step: 2^-10 (float16), 2^-7 (bfloat16).
double ulp(DType dtype) { return dtype == DType::float16 ? 1.0 / 1024 : 1.0 / 128; }

// Values in [low, high) that the half type holds exactly, as float32 on the CPU.
Tensor half_exact(const Shape& shape, DType half, uint64_t seed, double low = -2, double high = 2) {
    return random_input(shape, seed, low, high).to(half).to(DType::float32);
}

// f on the GPU in `half` against f in float32 on the CPU: the only difference should be the
// final rounding (half an ulp) plus float32 noise.
void require_half_matches(const Unary& f, const Tensor& x32, DType half, DType expected,
                          double ulps = 1.0) {
    Tensor got = f(x32.to(half).cuda());
    REQUIRE(got.is_cuda());
    CHECK(got.dtype() == expected);
    double tol = ulps * ulp(half);
    require_close(got.cpu().to(DType::float32), f(x32), tol, 1e-5);
}

// The gradient of f on the GPU in `half` (a half gradient) against the float32 CPU one, for
// the same input and upstream gradient (float32 values that `half` holds exactly).
void require_half_grad_matches(const Unary& f, const Tensor& x32, const Tensor& g32, DType half,
                               double rtol, double atol) {
    Tensor xc = x32.detach().requires_grad_();
    f(xc).backward(g32);
    Tensor xg = x32.to(half).cuda().detach().requires_grad_();
    f(xg).backward(g32.to(half).cuda());
    CHECK(xg.grad().dtype() == half);
    require_close(xg.grad().cpu().to(DType::float32), xc.grad(), rtol, atol);
}

}  // namespace

TEST_CASE("unary ops compute float16 and bfloat16 in float on the GPU", "[cuda][ops][half]") {
    if (!have_gpu()) return;
    std::vector<std::pair<std::string, Unary>> ops = {
        {"neg", [](const Tensor& x) { return neg(x); }},
        {"abs", [](const Tensor& x) { return abs(x); }},
        {"exp", [](const Tensor& x) { return exp(x); }},
        {"log", [](const Tensor& x) { return log(abs(x)); }},
        {"sqrt", [](const Tensor& x) { return sqrt(abs(x)); }},
        {"tanh", [](const Tensor& x) { return tanh(x); }},
        {"sigmoid", [](const Tensor& x) { return sigmoid(x); }},
        {"relu", [](const Tensor& x) { return relu(x); }},
        {"gelu", [](const Tensor& x) { return gelu(x); }},
        {"silu", [](const Tensor& x) { return silu(x); }},
        {"sin", [](const Tensor& x) { return sin(x); }},
        {"clamp", [](const Tensor& x) { return clamp(x, -0.5, 0.75); }},
        {"pow", [](const Tensor& x) { return pow(abs(x), 1.5); }},
        {"square", [](const Tensor& x) { return square(x); }},
    };
    for (DType half : kHalfTypes) {
        // odd size (vector tail) and a transposed view (strided path)
        Tensor x = half_exact({37, 41}, half, 1);
        for (const auto& [name, f] : ops) {
            INFO(name << " " << dtype_name(half));
            require_half_matches(f, x, half, half, 2.0);
            require_half_matches([&](const Tensor& t) { return f(t.t()); }, x, half, half, 2.0);
        }
        Tensor flags = logical_not(gt(x.to(half).cuda(), 0.0));
        CHECK(flags.cpu().to_vector<bool>() == logical_not(gt(x, 0.0)).to_vector<bool>());
    }
}

TEST_CASE("binary ops, comparisons and where promote and compute half types on the GPU",
          "[cuda][ops][half]") {
    if (!have_gpu()) return;
    for (DType half : kHalfTypes) {
        Tensor a = half_exact({5, 1, 33}, half, 2), b = half_exact({7, 33}, half, 3, 0.5, 2);
        std::vector<std::pair<std::string, std::function<Tensor(const Tensor&, const Tensor&)>>>
            ops = {{"add", [](const Tensor& x, const Tensor& y) { return add(x, y); }},
                   {"sub", [](const Tensor& x, const Tensor& y) { return sub(x, y); }},
                   {"mul", [](const Tensor& x, const Tensor& y) { return mul(x, y); }},
                   {"div", [](const Tensor& x, const Tensor& y) { return div(x, y); }},
                   {"maximum", [](const Tensor& x, const Tensor& y) { return maximum(x, y); }},
                   {"pow", [](const Tensor& x, const Tensor& y) { return pow(abs(x), y); }}};
        for (const auto& [name, f] : ops) {
            INFO(name << " " << dtype_name(half));
            Tensor want = f(a, b);
            Tensor got = f(a.to(half).cuda(), b.to(half).cuda());
            CHECK(got.dtype() == half);
            require_close(got.cpu().to(DType::float32), want, ulp(half), 1e-5);
            // dense same-shape operands (16-byte packs) and a scalar operand
            Tensor dense = f(b.to(half).cuda(), b.to(half).cuda());
            require_close(dense.cpu().to(DType::float32), f(b, b), ulp(half), 1e-5);
            Tensor scalar = f(b.to(half).cuda(), full({}, 1.5, half, Device::cuda()));
            require_close(scalar.cpu().to(DType::float32), f(b, full({}, 1.5)), ulp(half), 1e-5);
        }
        Tensor ah = a.to(half).cuda(), bh = b.to(half).cuda();
        CHECK(lt(ah, bh).cpu().to_vector<bool>() == lt(a, b).to_vector<bool>());
        CHECK(eq(ah, ah).cpu().to_vector<bool>() == eq(a, a).to_vector<bool>());
        CHECK(mul(ah, 2.5).dtype() == half);  // a Python-style scalar keeps the half type
        CHECK(add(ah, ones({33}, DType::int64, Device::cuda())).dtype() == half);
        CHECK(add(ah, bh.to(DType::float32)).dtype() == DType::float32);
        Tensor picked = where(gt(ah, 0.0), ah, bh);
        CHECK(picked.dtype() == half);
        require_close(picked.cpu().to(DType::float32), where(gt(a, 0.0), a, b), 0, 0);
    }
    // float16 with bfloat16 promotes to float32, as in PyTorch.
    Tensor x = half_exact({9}, DType::bfloat16, 4).to(DType::float16);  // exact in both
    Tensor mixed = add(x.to(DType::float16).cuda(), x.to(DType::bfloat16).cuda());
    CHECK(mixed.dtype() == DType::float32);
    require_close(mixed.cpu(), mul(x.to(DType::float32), 2.0), 0, 0);
}

TEST_CASE("half-precision gradients of elementwise ops run on the GPU", "[cuda][ops][half]") {
    if (!have_gpu()) return;
    // ops whose backward is well conditioned in half precision (no 1 - y^2 near y = 1)
    std::vector<std::pair<std::string, Unary>> ops = {
        {"exp", [](const Tensor& x) { return exp(x); }},
        {"sin", [](const Tensor& x) { return sin(x); }},
        {"silu", [](const Tensor& x) { return silu(x); }},
        {"square", [](const Tensor& x) { return square(x); }},
        {"mul", [](const Tensor& x) { return mul(x, x); }},
    };
    for (DType half : kHalfTypes) {
        Tensor x = half_exact({6, 35}, half, 5);
        Tensor g = half_exact({6, 35}, half, 6);
        for (const auto& [name, f] : ops) {
            INFO(name << " gradient " << dtype_name(half));
            require_half_grad_matches(f, x, g, half, 4 * ulp(half), 4 * ulp(half));
        }
    }
}

TEST_CASE("reductions of half types accumulate in float32 on the GPU", "[cuda][ops][half]") {
    if (!have_gpu()) return;
    // Positive values: no cancellation, so the half result is the float32 one rounded.
    std::vector<std::pair<std::string, Unary>> ops = {
        {"sum", [](const Tensor& x) { return sum(x, {1}); }},
        {"sum all", [](const Tensor& x) { return sum(x); }},
        {"mean", [](const Tensor& x) { return mean(x, {0}, true); }},
        {"amax", [](const Tensor& x) { return amax(x, {1}); }},
        {"amin", [](const Tensor& x) { return amin(x); }},
        {"var", [](const Tensor& x) { return var(x, {1}); }},
        {"std", [](const Tensor& x) { return lumen::std(x, {0}, 0.0); }},
        {"logsumexp", [](const Tensor& x) { return logsumexp(x, {1}); }},
        {"max values", [](const Tensor& x) { return max(x, 1).values; }},
    };
    for (DType half : kHalfTypes) {
        // 5000 columns: a float16 running sum would be off by many ulps; float32 is not.
        Tensor x = half_exact({7, 5000}, half, 7, 0.5, 2);
        for (const auto& [name, f] : ops) {
            INFO(name << " " << dtype_name(half));
            require_half_matches(f, x, half, half, 1.0);
        }
        Tensor xh = x.to(half).cuda();
        CHECK(argmax(xh, 1).cpu().to_vector<int64_t>() == argmax(x, 1).to_vector<int64_t>());
        CHECK(argmin(xh, 0).cpu().to_vector<int64_t>() == argmin(x, 0).to_vector<int64_t>());
        // the gradient of a half sum broadcasts back in the half type (2x is exact)
        Tensor leaf = xh.detach().requires_grad_();
        sum(mul(leaf, leaf)).backward();
        CHECK(leaf.grad().dtype() == half);
        require_close(leaf.grad().cpu().to(DType::float32), mul(x, 2.0), 0, 0);
    }
}

TEST_CASE("softmax and log_softmax of half types match float32 on the GPU", "[cuda][ops][half]") {
    if (!have_gpu()) return;
    for (DType half : kHalfTypes) {
        for (const auto& item : std::vector<std::pair<Shape, int64_t>>{
                 {{9, 37}, 1}, {{4, 512}, 1}, {{3, 3000}, 1}, {{6, 40, 5}, 1}}) {
            const Shape& shape = item.first;
            int64_t dim = item.second;
            Tensor x = half_exact(shape, half, 8, -4, 4);
            for (bool log : {false, true}) {
                INFO((log ? "log_softmax " : "softmax ")
                     << dtype_name(half) << " shape " << text(shape));
                auto f = [&](const Tensor& t) {
                    return log ? log_softmax(t, dim) : softmax(t, dim);
                };
                require_half_matches(f, x, half, half, 2.0);
                // backward reads the rounded output: a few ulps of |g| + |y| absolute
                require_half_grad_matches(f, x, half_exact(shape, half, 9), half, 4 * ulp(half),
                                          8 * ulp(half));
            }
        }
    }
}

TEST_CASE("the CPU refuses half-precision compute with the op's name", "[ops][half]") {
    Tensor x = full({3, 4}, 1.5, DType::float16);
    require_error([&] { sum(x); }, {"[sum]", "float16", "CUDA"});
    require_error([&] { mean(x, {0}); }, {"[mean]", "float16"});
    require_error([&] { amax(x.to(DType::bfloat16)); }, {"[amax]", "bfloat16", "CUDA"});
    require_error([&] { argmax(x, 1); }, {"[argmax]", "float16"});
    require_error([&] { var(x); }, {"[var]", "float16"});
    require_error([&] { logsumexp(x, {1}); }, {"[logsumexp]", "float16"});
    require_error([&] { softmax(x, 1); }, {"[softmax]", "float16"});
    require_error([&] { exp(x); }, {"float16"});
    require_error([&] { add(x, x); }, {"float16"});
}
