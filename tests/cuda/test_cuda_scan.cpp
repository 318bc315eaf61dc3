// CPU/CUDA parity of selective_scan: outputs and the gradients of every input (u, delta, A, Bm,
// Cm, D, z, delta_bias) for shapes that exercise the CUDA launch layout (one and several
// chunks of 64 steps, L not a multiple of anything, state sizes below, at and above a warp,
// grouped Bm / Cm with and without the warp pre-sum), float32 and float64, contiguous and
// strided inputs, and the errors. Skips with a message without a GPU.
#include <string>
#include <vector>

#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

struct ScanShape {
    int64_t batch, channels, length, state, groups;  // groups 0: Bm, Cm (B, N, L)
    bool with_d, with_z, with_bias, softplus;
};

std::string describe(const ScanShape& s) {
    return "B " + std::to_string(s.batch) + " D " + std::to_string(s.channels) + " L " +
           std::to_string(s.length) + " N " + std::to_string(s.state) + " G " +
           std::to_string(s.groups) + " D? " + std::to_string(s.with_d) + " z? " +
           std::to_string(s.with_z) + " bias? " + std::to_string(s.with_bias) + " softplus " +
           std::to_string(s.softplus);
}

// u, delta, A, Bm, Cm, D, z, delta_bias as float64 CPU tensors (undefined when absent).
std::vector<Tensor> make_inputs(const ScanShape& s, uint64_t seed) {
    Shape ud{s.batch, s.channels, s.length};
    Shape bc = s.groups == 0 ? Shape{s.batch, s.state, s.length}
                             : Shape{s.batch, s.groups, s.state, s.length};
    return {
        random_input(ud, seed),
        s.softplus ? random_input(ud, seed + 1, -1.5, 1.0) : random_input(ud, seed + 1, 0.02, 0.3),
        random_input({s.channels, s.state}, seed + 2, -1.5, -0.05),
        random_input(bc, seed + 3),
        random_input(bc, seed + 4),
        s.with_d ? random_input({s.channels}, seed + 5) : Tensor(),
        s.with_z ? random_input(ud, seed + 6, -2, 2) : Tensor(),
        s.with_bias ? random_input({s.channels}, seed + 7, -0.5, 0.5) : Tensor()};
}

// y and the gradients of every defined input (in order) on the CPU, from running the scan in
// `dtype` on the CPU or the GPU with upstream gradient g. With `strided`, the GPU inputs of
// rank >= 2 are views whose last two dims are transposed in memory.
std::vector<Tensor> run_scan(const std::vector<Tensor>& inputs, const ScanShape& s, DType dtype,
                             const Tensor& g, bool on_gpu, bool strided) {
    std::vector<Tensor> leaves, args;
    for (const Tensor& t : inputs) {
        if (!t.defined()) {
            leaves.push_back(Tensor());
            args.push_back(Tensor());
            continue;
        }
        Tensor value = t.to(dtype);
        bool transpose = on_gpu && strided && value.ndim() >= 2;
        if (transpose) value = value.transpose(-1, -2).contiguous();
        Tensor leaf = (on_gpu ? value.cuda() : value).detach().requires_grad_();
        leaves.push_back(leaf);
        args.push_back(transpose ? leaf.transpose(-1, -2) : leaf);
    }
    Tensor y = selective_scan(args[0], args[1], args[2], args[3], args[4], args[5], args[6],
                              args[7], s.softplus);
    REQUIRE(y.is_cuda() == on_gpu);
    Tensor upstream = g.to(dtype);
    y.backward(on_gpu ? upstream.cuda() : upstream);
    std::vector<Tensor> out{y.cpu()};
    for (size_t i = 0; i < leaves.size(); ++i) {
        if (!leaves[i].defined()) continue;
        Tensor grad = leaves[i].grad();
        REQUIRE(grad.defined());
        bool transpose = on_gpu && strided && leaves[i].ndim() >= 2;
        out.push_back((transpose ? grad.transpose(-1, -2) : grad).cpu());
    }
    return out;
}

const char* kNames[] = {"y", "u", "delta", "A", "Bm", "Cm", "D", "z", "delta_bias"};

// Compares y and every gradient between the CPU and the GPU.
void check_parity(const ScanShape& s, DType dtype, bool strided, uint64_t seed) {
    std::vector<Tensor> inputs = make_inputs(s, seed);
    Tensor g = random_input({s.batch, s.channels, s.length}, seed + 9);
    std::vector<Tensor> want = run_scan(inputs, s, dtype, g, false, false);
    std::vector<Tensor> got = run_scan(inputs, s, dtype, g, true, strided);
    REQUIRE(got.size() == want.size());
    // float32: the chunked scan sums in another order than the CPU's sequential one.
    double tol = dtype == DType::float32 ? 2e-4 : 1e-10;
    std::vector<std::string> names{"y", "u", "delta", "A", "Bm", "Cm"};
    for (size_t i = 5; i < inputs.size(); ++i)
        if (inputs[i].defined()) names.push_back(kNames[i + 1]);
    for (size_t i = 0; i < got.size(); ++i) {
        INFO(describe(s) << " " << dtype_name(dtype) << (strided ? " strided" : "") << ": "
                         << (i == 0 ? "output " : "gradient of ") << names[i]);
        require_close(got[i], want[i].to(DType::float64), tol, tol);
    }
}

}  // namespace

TEST_CASE("selective_scan: CUDA output and gradients match the CPU", "[cuda][ops][scan]") {
    if (!have_gpu()) return;
    std::vector<ScanShape> shapes = {
        {2, 5, 37, 16, 0, true, true, true, true},      // one chunk, N = 16 (16 lanes)
        {1, 3, 200, 4, 0, true, false, true, false},    // 4 chunks, the last one partial
        {2, 8, 130, 12, 2, true, true, false, true},    // N padded to 16 lanes; warp pre-sum of Bm
        {3, 7, 129, 8, 1, false, true, true, true},     // 7 channels per group: atomics per lane
        {1, 6, 65, 40, 3, true, true, true, true},      // N > 32: two states per thread
        {2, 4, 64, 1, 0, true, false, false, false},    // N = 1, exactly one chunk
        {1, 3, 1, 8, 0, true, true, true, true},        // L = 1
        {2, 33, 100, 3, 0, false, false, false, true},  // channels beyond a block, odd N
    };
    uint64_t seed = 1000;
    for (const ScanShape& s : shapes) {
        for (DType dtype : {DType::float64, DType::float32}) check_parity(s, dtype, false, seed);
        seed += 20;
    }
}

TEST_CASE("selective_scan: CUDA takes strided inputs like the CPU", "[cuda][ops][scan]") {
    if (!have_gpu()) return;
    check_parity({2, 5, 70, 16, 0, true, true, true, true}, DType::float64, true, 2000);
    check_parity({1, 4, 90, 6, 2, true, false, true, false}, DType::float32, true, 2100);
}

TEST_CASE("selective_scan: CUDA state sizes up to the limit, long sequences", "[cuda][ops][scan]") {
    if (!have_gpu()) return;
    // 4 and 8 states per thread; a long sequence of many chunks (carry over 16 chunks).
    check_parity({1, 2, 70, 100, 0, true, true, true, true}, DType::float64, false, 3000);
    check_parity({1, 2, 33, 256, 0, true, false, false, true}, DType::float64, false, 3100);
    check_parity({1, 4, 1000, 16, 0, true, true, true, true}, DType::float64, false, 3200);
    check_parity({1, 4, 1000, 16, 0, true, true, true, true}, DType::float32, false, 3300);
}

TEST_CASE("selective_scan: CUDA zero-size inputs give zero gradients", "[cuda][ops][scan]") {
    if (!have_gpu()) return;
    for (ScanShape s : {ScanShape{2, 3, 0, 4, 0, true, false, true, false},
                        ScanShape{0, 3, 5, 4, 0, true, true, true, true}}) {
        INFO(describe(s));
        std::vector<Tensor> inputs = make_inputs(s, 4000);
        std::vector<Tensor> got =
            run_scan(inputs, s, DType::float32, random_input({s.batch, s.channels, s.length}, 1),
                     true, false);
        CHECK(got[0].shape() == Shape{s.batch, s.channels, s.length});
        for (const Tensor& grad : got) require_close(grad, zeros_like(grad), 0, 0);
    }
}

TEST_CASE("selective_scan: CUDA errors name the op", "[cuda][ops][scan]") {
    if (!have_gpu()) return;
    ScanShape s{1, 2, 5, 3, 0, false, false, false, false};
    std::vector<Tensor> in = make_inputs(s, 5000);
    Tensor u = in[0].cuda(), delta = in[1].cuda(), Bm = in[3].cuda(), Cm = in[4].cuda();
    require_error([&] { selective_scan(u, delta, in[2], Bm, Cm); },
                  {"[selective_scan]", "different devices"});
    Tensor big_a = random_input({2, 257}, 1, -1, -0.1).cuda();
    Tensor big_b = random_input({1, 257, 5}, 2).cuda();
    require_error([&] { selective_scan(u, delta, big_a, big_b, big_b); },
                  {"[selective_scan]", "d_state <= 256", "[2, 257]"});
}
