// CPU/CUDA parity of matmul and linear (cuBLAS): outputs and gradients for 2-D, batched,
// broadcast-batch and vector products, transposed and strided operands read in place or
// copied, sizes that are multiples of nothing, float32 and float64; the TF32 switch;
// float16/bfloat16 against float32 on the CPU; errors. The non-[cuda] cases run anywhere.
#include <cmath>
#include <string>
#include <vector>

#include "support/parity.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

// How an operand is laid out on the device: its own row-major tensor, a transposed view of a
// tensor stored (..., cols, rows) (read in place as column-major), or every other row and
// column of a larger tensor (no unit stride: ops/matmul.cpp copies it).
enum class Layout { plain, transposed, strided };

struct Operand {
    Shape shape;  // as the op sees it
    Layout layout = Layout::plain;
};

// The stored tensor behind an operand, and the view of it that the op gets.
Shape stored_shape(const Operand& op) {
    Shape stored = op.shape;
    size_t n = stored.size();
    if (op.layout == Layout::transposed && n >= 2) std::swap(stored[n - 2], stored[n - 1]);
    if (op.layout == Layout::strided)
        for (size_t d = n >= 2 ? n - 2 : 0; d < n; ++d) stored[d] *= 2;
    return stored;
}
Tensor view_of(const Tensor& stored, const Operand& op) {
    int64_t n = stored.ndim();
    if (op.layout == Layout::transposed && n >= 2) return stored.transpose(-1, -2);
    if (op.layout != Layout::strided) return stored;
    Tensor view = stored;
    for (int64_t d = std::max<int64_t>(0, n - 2); d < n; ++d)
        view = view.slice(d, 0, stored.size(d), 2);
    return view;
}

std::string describe(const Operand& op) {
    const char* names[] = {"plain", "transposed", "strided"};
    return text(op.shape) + " " + names[int(op.layout)];
}

double tolerance(DType dtype) { return dtype == DType::float64 ? 1e-10 : 2e-4; }

// matmul(a, b) on the CPU and the GPU from the same values in `dtype`: the outputs and the
// gradients of both stored tensors for the same upstream gradient.
void require_matmul_parity(const Operand& a, const Operand& b, DType dtype, uint64_t seed) {
    INFO("matmul " << describe(a) << " @ " << describe(b) << " " << dtype_name(dtype));
    Tensor a_host = random_input(stored_shape(a), seed).to(dtype);
    Tensor b_host = random_input(stored_shape(b), seed + 1).to(dtype);
    require_cuda_parity(
        [&](const std::vector<Tensor>& in) { return matmul(view_of(in[0], a), view_of(in[1], b)); },
        {a_host, b_host}, tolerance(dtype), tolerance(dtype));
}

// Restores the TF32 switch when a case ends, failed or not.
struct Tf32Guard {
    bool saved = matmul_allow_tf32();
    ~Tf32Guard() { set_matmul_allow_tf32(saved); }
};

}  // namespace

TEST_CASE("matmul on the GPU matches the CPU for 2-D and batched products in every layout",
          "[cuda][ops][matmul]") {
    if (!have_gpu()) return;
    const Layout layouts[] = {Layout::plain, Layout::transposed, Layout::strided};
    std::vector<std::pair<Shape, Shape>> shapes = {
        {{37, 53}, {53, 29}},           {{1, 1}, {1, 1}},           {{5, 300}, {300, 1}},
        {{1, 77}, {77, 130}},           {{129, 257}, {257, 65}},    {{3, 17, 23}, {3, 23, 19}},
        {{2, 3, 9, 40}, {2, 3, 40, 7}}, {{300, 4, 5}, {300, 5, 6}},
    };
    for (DType dtype : {DType::float32, DType::float64})
        for (const auto& [a_shape, b_shape] : shapes)
            for (Layout la : layouts)
                for (Layout lb : layouts)
                    require_matmul_parity({a_shape, la}, {b_shape, lb}, dtype, 11);
}

// The gradients of a broadcast operand are summed over the batch with sum_to, so these cases
// also need the CUDA reduction kernels (ops/reduce.cpp).
TEST_CASE("matmul on the GPU matches the CPU for broadcast batches and vectors",
          "[cuda][ops][matmul]") {
    if (!have_gpu()) return;
    std::vector<std::pair<Operand, Operand>> cases = {
        {{{2, 3, 17, 23}}, {{23, 19}}},                        // folded into one GEMM
        {{{2, 3, 17, 23}, Layout::transposed}, {{23, 19}}},    // stays batched, read in place
        {{{17, 23}}, {{4, 23, 19}, Layout::transposed}},       // a repeated: batch stride 0
        {{{2, 1, 17, 23}}, {{3, 23, 19}}},                     // strides do not chain: a loop
        {{{4, 1, 5, 7}, Layout::transposed}, {{1, 6, 7, 3}}},  // both broadcast
        {{{23}}, {{23, 7}}},
        {{{7, 23}}, {{23}}},
        {{{23}}, {{23}}},
        {{{2, 5, 23}}, {{23}}},
        {{{23}}, {{2, 23, 5}, Layout::transposed}},
        {{{3, 0}}, {{0, 4}}},  // empty inner dim: zeros, and zero gradients
        {{{0, 5}}, {{5, 4}}},
    };
    for (DType dtype : {DType::float32, DType::float64})
        for (const auto& [a, b] : cases) require_matmul_parity(a, b, dtype, 21);
}

TEST_CASE("linear on the GPU matches the CPU with and without bias", "[cuda][ops][matmul]") {
    if (!have_gpu()) return;
    for (DType dtype : {DType::float32, DType::float64}) {
        for (bool with_bias : {true, false}) {
            for (const Shape& x_shape : {Shape{33}, Shape{13, 33}, Shape{2, 7, 33}}) {
                INFO("linear x " << text(x_shape) << " bias " << with_bias << " "
                                 << dtype_name(dtype));
                Tensor x = random_input(x_shape, 3).to(dtype);
                Tensor w = random_input({45, 33}, 4).to(dtype);
                Tensor bias = with_bias ? random_input({45}, 5).to(dtype) : Tensor();
                require_cuda_parity(
                    [](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); },
                    {x, w, bias}, tolerance(dtype), tolerance(dtype));
            }
        }
    }
}

TEST_CASE("matmul_allow_tf32 is off by default and switches float32 GEMMs to TF32",
          "[cuda][ops][matmul]") {
    if (!have_gpu()) return;
    Tf32Guard guard;
    Tensor a = random_input({4, 96, 512}, 31).to(DType::float32);
    Tensor b = random_input({512, 80}, 32).to(DType::float32);
    Tensor want = matmul(a.to(DType::float64), b.to(DType::float64));
    set_matmul_allow_tf32(false);
    INFO("TF32 off: full float32 (values up to ~25, 512 products each)");
    require_close(matmul(a.cuda(), b.cuda()).cpu(), want, 1e-4, 1e-4);
    set_matmul_allow_tf32(true);
    // TF32 rounds the inputs to 10 mantissa bits: errors ~ sqrt(512) * 2^-11 * |a||b|.
    INFO("TF32 on");
    require_close(matmul(a.cuda(), b.cuda()).cpu(), want, 1e-2, 5e-2);
    require_close(linear(a.cuda(), b.t().cuda()).cpu(), want, 1e-2, 5e-2);
    // float64 ignores the switch.
    require_close(matmul(a.to(DType::float64).cuda(), b.to(DType::float64).cuda()).cpu(), want,
                  1e-12, 1e-12);
}

// The half types accumulate in float32 and round once: compared with float32 on the CPU from
// the same (half-rounded) values, errors stay within about one half ulp of the result.
TEST_CASE("float16 and bfloat16 matmul and linear on the GPU match float32 on the CPU",
          "[cuda][ops][matmul]") {
    if (!have_gpu()) return;
    for (DType half : {DType::float16, DType::bfloat16}) {
        double rtol = half == DType::float16 ? 2e-3 : 1.6e-2, atol = rtol;
        INFO(dtype_name(half));
        Tensor a = random_input({3, 65, 130}, 41).to(half),
               b = random_input({130, 47}, 42).to(half);
        Tensor bias = random_input({47}, 43).to(half);
        Tensor a32 = a.to(DType::float32), b32 = b.to(DType::float32);
        Tensor got = matmul(a.cuda(), b.cuda());
        CHECK(got.dtype() == half);
        require_close(got.cpu(), matmul(a32, b32), rtol, atol);
        require_close(matmul(a.cuda().transpose(-1, -2).contiguous().transpose(-1, -2),
                             b.cuda().t().contiguous().t())
                          .cpu(),
                      matmul(a32, b32), rtol, atol);
        Tensor with_bias = linear(a.cuda(), b.t().cuda(), bias.cuda());
        require_close(with_bias.cpu(), linear(a32, b32.t(), bias.to(DType::float32)), rtol, atol);
        // Gradients of a 2-D product are half products too (no reduction involved).
        Tensor x = a.select(0, 0).cuda().detach().requires_grad_();
        Tensor w = b.cuda().detach().requires_grad_();
        Tensor g = random_input({65, 47}, 44).to(half);
        matmul(x, w).backward(g.cuda());
        Tensor g32 = g.to(DType::float32);
        require_close(x.grad().cpu(), matmul(g32, b32.t()), rtol, atol);
        require_close(w.grad().cpu(), matmul(a32.select(0, 0).t(), g32), rtol, atol);
    }
}

TEST_CASE("matmul and linear on the GPU refuse mixed devices", "[cuda][ops][matmul]") {
    if (!have_gpu()) return;
    Tensor a = random_input({4, 3}, 51), b = random_input({3, 2}, 52);
    require_error([&] { matmul(a.cuda(), b); }, {"[matmul]", "different devices"});
    require_error([&] { linear(a.cuda(), b.t().cuda(), zeros({2}, DType::float64)); },
                  {"[linear]", "bias", "cpu", "cuda:0"});
}

TEST_CASE("the TF32 switch round-trips and half-precision matmul is refused on the CPU",
          "[ops][matmul]") {
    Tf32Guard guard;
    set_matmul_allow_tf32(true);
    CHECK(matmul_allow_tf32());
    set_matmul_allow_tf32(false);
    CHECK_FALSE(matmul_allow_tf32());
    for (DType half : {DType::float16, DType::bfloat16})
        require_error(
            [&] {
                matmul(zeros({2, 3}, half), zeros({3, 2}, half));
            },
            {"[matmul]", dtype_name(half), "CUDA only"});
}

#if LUMEN_CUDA
#include <dlfcn.h>

#include "ops/cuda/blas.cuh"

// cuBLAS is opened on first use (ops/cuda/blas.cu); loading it needs the library, not a GPU,
// so this runs on any machine with the toolkit lumen was built against.
TEST_CASE("cuBLAS is opened on first use and has every function lumen calls",
          "[ops][matmul][cublas]") {
    const cuda::CublasApi& api = cuda::cublas();
    CHECK(&api == &cuda::cublas());  // opened once
    CHECK(api.create != nullptr);
    CHECK(api.set_stream != nullptr);
    CHECK(api.set_workspace != nullptr);
    CHECK(api.gemm != nullptr);
    CHECK(api.gemm_strided_batched != nullptr);
    REQUIRE(api.status_string != nullptr);
    CHECK(std::string(api.status_string(CUBLAS_STATUS_NOT_INITIALIZED)) ==
          "the library was not initialized");
    std::string soname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    CHECK(dlopen(soname.c_str(), RTLD_NOW | RTLD_NOLOAD) != nullptr);  // now in the process
}
#endif
