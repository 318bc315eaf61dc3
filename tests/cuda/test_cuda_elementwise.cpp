// CPU/CUDA parity of the elementwise ops: outputs on random inputs (contiguous, strided and
// broadcast, float32, float64 and integers) and the gradients of the fused unary backward and
// of same-shape binary ops. Skips with a message without a GPU.
#include <functional>
#include <string>
#include <vector>

#include "support/parity.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

using Unary = std::function<Tensor(const Tensor&)>;

struct NamedUnary {
    std::string name;
    Unary f;
    double low, high;  // input range
};

std::vector<NamedUnary> unary_ops() {
    return {
        {"neg", [](const Tensor& x) { return neg(x); }, -2, 2},
        {"abs", [](const Tensor& x) { return abs(x); }, -2, 2},
        {"exp", [](const Tensor& x) { return exp(x); }, -2, 2},
        {"log", [](const Tensor& x) { return log(x); }, 0.2, 3},
        {"sqrt", [](const Tensor& x) { return sqrt(x); }, 0.2, 3},
        {"rsqrt", [](const Tensor& x) { return rsqrt(x); }, 0.2, 3},
        {"square", [](const Tensor& x) { return square(x); }, -2, 2},
        {"sin", [](const Tensor& x) { return sin(x); }, -3, 3},
        {"cos", [](const Tensor& x) { return cos(x); }, -3, 3},
        {"tanh", [](const Tensor& x) { return tanh(x); }, -3, 3},
        {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, -5, 5},
        {"relu", [](const Tensor& x) { return relu(x); }, -2, 2},
        {"gelu", [](const Tensor& x) { return gelu(x); }, -4, 4},
        {"gelu_tanh", [](const Tensor& x) { return gelu(x, "tanh"); }, -4, 4},
        {"silu", [](const Tensor& x) { return silu(x); }, -4, 4},
        {"elu", [](const Tensor& x) { return elu(x, 0.7); }, -3, 3},
        {"softplus", [](const Tensor& x) { return softplus(x, 1.5, 2.0); }, -3, 3},
        {"clamp", [](const Tensor& x) { return clamp(x, -0.5, 0.8); }, -2, 2},
        {"pow", [](const Tensor& x) { return pow(x, 2.5); }, 0.2, 3},
        {"leaky_relu", [](const Tensor& x) { return leaky_relu(x, 0.1); }, -2, 2},
        {"hardtanh", [](const Tensor& x) { return hardtanh(x, -0.6, 0.9); }, -2, 2},
    };
}

// Inputs kept away from the kinks (|x| >= 0.05) so both devices take the same branch.
Tensor input_for(const NamedUnary& op, DType dtype, uint64_t seed) {
    Tensor x = random_input({37, 53}, seed, op.low, op.high);
    Tensor away = where(lt(abs(x), 0.05), add(x, 0.1), x);
    return away.to(dtype);
}

double tolerance(DType dtype) { return dtype == DType::float32 ? 2e-5 : 1e-12; }

using Binary = std::function<Tensor(const Tensor&, const Tensor&)>;

// The arithmetic binary ops by name; pow takes |a| and |b| (an integer to a negative power is
// an error in PyTorch).
std::vector<std::pair<std::string, Binary>> arithmetic_ops() {
    return {
        {"add", [](const Tensor& a, const Tensor& b) { return add(a, b); }},
        {"sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); }},
        {"mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); }},
        {"div", [](const Tensor& a, const Tensor& b) { return div(a, b); }},
        {"pow", [](const Tensor& a, const Tensor& b) { return pow(abs(a), abs(b)); }},
        {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }},
        {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }},
    };
}

}  // namespace

TEST_CASE("unary ops and their backward match the CPU on the GPU", "[cuda][ops][elementwise]") {
    if (!have_gpu()) return;
    for (DType dtype : {DType::float32, DType::float64}) {
        for (const NamedUnary& op : unary_ops()) {
            INFO(op.name << " " << dtype_name(dtype));
            Tensor x = input_for(op, dtype, 7);
            double tol = tolerance(dtype);
            // forward and backward (through the fused kernel); forward of a transposed input
            require_cuda_parity(op.f, x, tol, tol);
            require_close(op.f(x.cuda().t()).cpu(), op.f(x.t()), tol, tol);
        }
    }
}

TEST_CASE("integer unary ops and logical_not match the CPU on the GPU",
          "[cuda][ops][elementwise]") {
    if (!have_gpu()) return;
    Tensor values = tensor({-7, -1, 0, 2, 5, 100, -3, 9}, {8}, DType::float64);
    for (DType dtype : {DType::int64, DType::int32}) {
        Tensor x = values.to(dtype);
        Tensor d = x.cuda();
        require_same_on_gpu(neg(d), neg(x));
        require_same_on_gpu(abs(d), abs(x));
        require_same_on_gpu(sign(d), sign(x));
        require_same_on_gpu(square(d), square(x));
        require_same_on_gpu(relu(d), relu(x));
        require_same_on_gpu(clamp(d, -2.0, 4.0), clamp(x, -2.0, 4.0));
        CHECK(logical_not(d).cpu().to_vector<bool>() == logical_not(x).to_vector<bool>());
        // float-only ops compute integers in float32 on both devices
        require_close(exp(d.narrow(0, 0, 3)).cpu(), exp(x.narrow(0, 0, 3)), 1e-6, 1e-6);
    }
}

TEST_CASE("binary ops broadcast, promote and compare like the CPU on the GPU",
          "[cuda][ops][elementwise]") {
    if (!have_gpu()) return;
    std::vector<std::pair<std::string, Binary>> ops = arithmetic_ops();
    std::vector<std::pair<std::string, Binary>> comparisons = {
        {"eq", [](const Tensor& a, const Tensor& b) { return eq(a, b); }},
        {"ne", [](const Tensor& a, const Tensor& b) { return ne(a, b); }},
        {"lt", [](const Tensor& a, const Tensor& b) { return lt(a, b); }},
        {"le", [](const Tensor& a, const Tensor& b) { return le(a, b); }},
        {"gt", [](const Tensor& a, const Tensor& b) { return gt(a, b); }},
        {"ge", [](const Tensor& a, const Tensor& b) { return ge(a, b); }},
        {"logical_and", [](const Tensor& a, const Tensor& b) { return logical_and(a, b); }},
        {"logical_or", [](const Tensor& a, const Tensor& b) { return logical_or(a, b); }},
    };
    ops.insert(ops.end(), comparisons.begin(), comparisons.end());
    // (3, 1, 5) against a transposed (4, 5) view; rounded values make ties and zeros likely.
    Tensor a64 = mul(random_input({3, 1, 5}, 11, -3, 3), 2.0).to(DType::int64).to(DType::float64);
    Tensor b64 = mul(random_input({5, 4}, 12, -3, 3), 2.0).to(DType::int64).to(DType::float64).t();
    std::vector<std::pair<DType, DType>> dtype_pairs = {
        {DType::float32, DType::float32}, {DType::float64, DType::float64},
        {DType::int64, DType::int64},     {DType::int32, DType::int64},
        {DType::int64, DType::float32},   {DType::uint8, DType::uint8}};
    for (auto [da, db] : dtype_pairs) {
        Tensor a = da == DType::uint8 ? abs(a64).to(da) : a64.to(da);
        Tensor b = db == DType::uint8 ? abs(b64).to(db) : b64.to(db);
        for (const auto& [name, f] : ops) {
            if (name == "pow" && da == DType::uint8) continue;
            INFO(name << " " << dtype_name(da) << " " << dtype_name(db));
            require_same_on_gpu(f(a.cuda(), b.cuda()), f(a, b), 1e-6);
        }
    }
    // NaN propagates through maximum like on the CPU.
    Tensor nan = tensor({std::nan(""), 1.0}, {2}, DType::float32);
    Tensor one = tensor({0.0, 2.0}, {2}, DType::float32);
    CHECK(std::isnan(maximum(nan.cuda(), one.cuda()).cpu().to_vector<double>()[0]));
}

TEST_CASE("dense and scalar float32 operands take the 16-byte binary kernel like the CPU",
          "[cuda][ops][elementwise]") {
    if (!have_gpu()) return;
    const std::vector<std::pair<std::string, Binary>> ops = arithmetic_ops();
    // 1001 elements: 250 packs of 4 and a tail of 1. `shifted` starts one float into its
    // buffer on the GPU (dense, not 16-byte aligned: the element-wise kernel).
    Tensor a = random_input({7, 143}, 41, 0.5, 2).to(DType::float32);
    Tensor b = random_input({7, 143}, 42, 0.5, 2).to(DType::float32);
    Tensor scalar = full({}, 1.25, DType::float32);
    Tensor padded = random_input({1002}, 43, 0.5, 2).to(DType::float32);
    Tensor shifted = padded.narrow(0, 1, 1001).view({7, 143});
    Tensor shifted_gpu = padded.cuda().narrow(0, 1, 1001).view({7, 143});
    for (const auto& [name, f] : ops) {
        INFO(name);
        require_same_on_gpu(f(a.cuda(), b.cuda()), f(a, b), 2e-6);
        require_same_on_gpu(f(a.cuda(), scalar.cuda()), f(a, scalar), 2e-6);
        require_same_on_gpu(f(scalar.cuda(), b.cuda()), f(scalar, b), 2e-6);
        require_same_on_gpu(f(shifted_gpu, b.cuda()), f(shifted, b), 2e-6);
    }
}

TEST_CASE("same-shape binary backward, where and masked_fill run on the GPU",
          "[cuda][ops][elementwise]") {
    if (!have_gpu()) return;
    Tensor a = random_input({6, 7}, 21, 0.5, 2.0);
    Tensor b = random_input({6, 7}, 22, 0.5, 2.0);
    require_cuda_parity(
        [](const std::vector<Tensor>& in) {
            const Tensor &x = in[0], &y = in[1];
            return add(sub(mul(x, y), div(x, y)), maximum(pow(x, y), y));
        },
        {a, b}, 1e-12, 1e-12);

    Tensor mask = gt(a, 1.2);
    require_close(where(mask.cuda(), a.cuda(), b.cuda()).cpu(), where(mask, a, b), 0, 0);
    require_close(masked_fill(a.cuda(), mask.narrow(0, 0, 1).cuda(), -5.0).cpu(),
                  masked_fill(a, mask.narrow(0, 0, 1), -5.0), 0, 0);
    // where's backward routes the gradient by the condition (same shapes: no reduction).
    require_cuda_parity(
        [&](const Tensor& t) { return where(mask.to(t.device()), t, b.to(t.device())); }, a, 0, 0);
}

TEST_CASE("relu, maximum and minimum propagate NaN on the GPU as on the CPU",
          "[cuda][ops][elementwise]") {
    if (!have_gpu()) return;
    for (DType dtype : {DType::float32, DType::float64}) {
        INFO(dtype);
        Tensor a = tensor({1.0, NAN, NAN, 2.0, -0.0, -3.0}, {6}, dtype);
        Tensor b = tensor({NAN, 1.0, NAN, -1.0, 0.0, 4.0}, {6}, dtype);
        require_close(maximum(a.cuda(), b.cuda()).cpu(), maximum(a, b), 0, 0);
        require_close(minimum(a.cuda(), b.cuda()).cpu(), minimum(a, b), 0, 0);
        require_close(maximum(b.cuda(), a.cuda()).cpu(), maximum(b, a), 0, 0);
        require_cuda_parity([](const Tensor& t) { return relu(t); }, a, 0, 0);
    }
}
