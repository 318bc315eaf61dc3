// CPU/CUDA parity of the reductions (sum, mean, amax/amin, max/min with indices, argmax/argmin,
// var/std, logsumexp, sum_to): random inputs over single, several and all dims, keepdim,
// non-contiguous inputs, long reductions split across blocks, many short ones, integer sums,
// NaN/inf, ties, corrections, and the gradients. Skips with a message without a GPU.
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "support/parity.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

using Reduction = std::function<Tensor(const Tensor&)>;

double tolerance(DType dtype) { return dtype == DType::float64 ? 1e-10 : 1e-4; }

// f on the CPU and on the GPU from the same values; same dtype, shape and values (NaN == NaN).
void require_same(const Reduction& f, const Tensor& x, double tol) {
    require_same_on_gpu(f(x.cuda()), f(x), tol);
}

struct Named {
    std::string name;
    std::function<Tensor(const Tensor&, const Dims&, bool)> f;
};

std::vector<Named> float_reductions() {
    return {
        {"sum", [](const Tensor& x, const Dims& d, bool k) { return sum(x, d, k); }},
        {"mean", [](const Tensor& x, const Dims& d, bool k) { return mean(x, d, k); }},
        {"amax", [](const Tensor& x, const Dims& d, bool k) { return amax(x, d, k); }},
        {"amin", [](const Tensor& x, const Dims& d, bool k) { return amin(x, d, k); }},
        {"var", [](const Tensor& x, const Dims& d, bool k) { return var(x, d, 1.0, k); }},
        {"std", [](const Tensor& x, const Dims& d, bool k) { return lumen::std(x, d, 0.0, k); }},
        {"logsumexp", [](const Tensor& x, const Dims& d, bool k) { return logsumexp(x, d, k); }},
    };
}

// Inputs of one shape: contiguous, a permuted (non-contiguous) view, a narrowed view whose
// data pointer is not 16-byte aligned.
struct Layout {
    std::string name;
    Tensor x;
};

std::vector<Layout> layouts(const Tensor& x) {
    std::vector<Layout> out;
    out.emplace_back(Layout{"contiguous", x});
    if (x.ndim() == 0) return out;
    std::vector<int64_t> reversed;
    for (int64_t d = x.ndim() - 1; d >= 0; --d) reversed.push_back(d);
    out.emplace_back(Layout{"permuted", x.permute(reversed).contiguous().permute(reversed)});
    if (x.size(-1) > 1) out.emplace_back(Layout{"offset", x.narrow(-1, 1, x.size(-1) - 1)});
    return out;
}

}  // namespace

TEST_CASE("float reductions match the CPU over single, several and all dims on the GPU",
          "[cuda][ops][reduce]") {
    if (!have_gpu()) return;
    std::vector<std::pair<Shape, std::vector<Dims>>> cases = {
        {{37, 53}, {{}, {0}, {1}, {-1}, {0, 1}}},
        {{4, 5, 6, 7}, {{}, {0}, {2}, {3}, {0, 2}, {1, 3}, {0, 1, 3}}},
        {{1, 9, 1, 33}, {{0}, {1}, {0, 2}, {3}}},
        {{}, {{}}},
    };
    for (DType dtype : {DType::float32, DType::float64}) {
        for (const auto& [shape, dim_lists] : cases) {
            Tensor base = random_input(shape, 3, -2, 2).to(dtype);
            for (const Layout& layout : layouts(base)) {
                const Tensor& x = layout.x;
                for (const Dims& dims : dim_lists) {
                    for (bool keepdim : {false, true}) {
                        for (const Named& op : float_reductions()) {
                            INFO(op.name << " " << dtype_name(dtype) << " " << layout.name
                                         << " shape " << text(x.shape()) << " dims " << text(dims)
                                         << " keepdim " << keepdim);
                            require_same([&](const Tensor& t) { return op.f(t, dims, keepdim); }, x,
                                         tolerance(dtype));
                        }
                    }
                }
            }
        }
    }
}

TEST_CASE("long reductions split across blocks and many short ones match the CPU on the GPU",
          "[cuda][ops][reduce]") {
    if (!have_gpu()) return;
    // (shape, dims): a whole-tensor sum (two-stage), long rows, a long leading dim with few
    // outputs (outer split), many short rows, several reduced dims that do not merge (the
    // multiply-shift divisions), and odd sizes that leave vector-load tails.
    std::vector<std::pair<Shape, Dims>> cases = {
        {{1000003}, {}},    {{3, 100000}, {1}}, {{100000, 3}, {0}},     {{2, 300001}, {0}},
        {{4096, 7}, {1}},   {{7, 4096}, {0}},   {{64, 48, 65}, {0, 2}}, {{33, 17, 5, 9}, {1, 3}},
        {{512, 1024}, {0}}, {{512, 1024}, {1}}, {{250, 4000}, {}},      {{3, 5, 70000}, {0, 2}},
    };
    for (DType dtype : {DType::float32, DType::float64}) {
        for (const auto& [shape, dims] : cases) {
            Tensor x = random_input(shape, 5, -1, 3).to(dtype);
            for (const Named& op : float_reductions()) {
                INFO(op.name << " " << dtype_name(dtype) << " shape " << text(shape) << " dims "
                             << text(dims));
                // float32 sums of 1e6 terms: both sides are accurate to ~1e-6 relative
                double tol = dtype == DType::float64 ? 1e-9 : 2e-4;
                require_same([&](const Tensor& t) { return op.f(t, dims, false); }, x, tol);
                require_same([&](const Tensor& t) { return op.f(t, dims, true); }, x, tol);
            }
        }
    }
    // A transposed big input: the reduced dim is strided, the kept one contiguous.
    Tensor big = random_input({300, 2000}, 6).to(DType::float32).t();
    require_same([](const Tensor& t) { return sum(t, {1}); }, big, 1e-4);
    require_same([](const Tensor& t) { return sum(t, {0}); }, big, 1e-4);
}

TEST_CASE("integer and bool sums give int64, and integer extrema, on the GPU",
          "[cuda][ops][reduce]") {
    if (!have_gpu()) return;
    // Rows of 301 (element loads) and of 320 (whole 16-byte packs for every integer type).
    for (int64_t last : {301, 320}) {
        Tensor values = mul(random_input({6, 7, last}, 9, -50, 50), 1.0).to(DType::int64);
        for (DType dtype : {DType::int64, DType::int32, DType::uint8, DType::bool_}) {
            Tensor x = dtype == DType::uint8   ? abs(values).to(dtype)
                       : dtype == DType::bool_ ? gt(values, 0.0)
                                               : values.to(dtype);
            for (const Dims& dims : std::vector<Dims>{{}, {0}, {2}, {0, 2}, {1}}) {
                INFO(dtype_name(dtype) << " rows of " << last << " dims " << text(dims));
                Tensor want = sum(x, dims), got = sum(x.cuda(), dims);
                CHECK(got.dtype() == DType::int64);
                CHECK(got.cpu().to_vector<int64_t>() == want.to_vector<int64_t>());
                if (dtype == DType::bool_) continue;
                CHECK(amax(x.cuda(), dims).cpu().to(DType::int64).to_vector<int64_t>() ==
                      amax(x, dims).to(DType::int64).to_vector<int64_t>());
                CHECK(amin(x.cuda(), dims, true).cpu().to(DType::int64).to_vector<int64_t>() ==
                      amin(x, dims, true).to(DType::int64).to_vector<int64_t>());
            }
            // sum_to reduces integer tensors too (broadcast gradients of integer ops need it)
            Tensor reduced = sum_to(x.cuda(), {7, 1});
            CHECK(reduced.cpu().to_vector<int64_t>() == sum_to(x, {7, 1}).to_vector<int64_t>());
        }
    }
}

TEST_CASE("reductions handle NaN, inf and empty inputs like the CPU on the GPU",
          "[cuda][ops][reduce]") {
    if (!have_gpu()) return;
    double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
    // row 0: NaN in the middle; row 1: all -inf; row 2: +inf and -inf; row 3: finite
    Tensor x = tensor({1, nan, 3, -2, -inf, -inf, -inf, -inf, inf, -inf, 0, 1, 0.5, -1, 2, 7},
                      {4, 4}, DType::float32);
    for (const Named& op : float_reductions()) {
        for (const Dims& dims : std::vector<Dims>{{}, {0}, {1}}) {
            INFO(op.name << " dims " << text(dims));
            require_same([&](const Tensor& t) { return op.f(t, dims, false); }, x, 1e-6);
            require_same([&](const Tensor& t) { return op.f(t, dims, false); },
                         x.to(DType::float64), 1e-12);
        }
    }
    // A long row with one NaN near its end: every share of a split reduction must carry it.
    Tensor long_row = random_input({3, 200000}, 4).to(DType::float32);
    Tensor marked = where(eq(arange(0, 200000, 1, DType::int64).view({1, 200000}), 199990),
                          tensor({nan}, {1}, DType::float32), long_row);
    for (const Named& op : float_reductions()) {
        INFO(op.name << " long row with a NaN");
        require_same([&](const Tensor& t) { return op.f(t, {1}, false); }, marked, 1e-4);
    }
    // Zero elements: sum 0, mean NaN, var NaN, logsumexp -inf; kept dims of size 0 are empty.
    Tensor empty_rows = zeros({0, 5}, DType::float32);
    require_same([](const Tensor& t) { return sum(t, {0}); }, empty_rows, 0);
    require_same([](const Tensor& t) { return mean(t, {0}); }, empty_rows, 0);
    require_same([](const Tensor& t) { return var(t, {0}); }, empty_rows, 0);
    require_same([](const Tensor& t) { return logsumexp(t, {0}); }, empty_rows, 0);
    require_same([](const Tensor& t) { return sum(t, {1}); }, empty_rows, 0);
    require_error([&] { amax(empty_rows.cuda(), {0}); }, {"[amax]", "zero elements"});
    require_error([&] { argmax(empty_rows.cuda(), 0); }, {"[argmax]", "size 0"});
}

TEST_CASE("max, min, argmax and argmin give the first extremum like the CPU on the GPU",
          "[cuda][ops][reduce]") {
    if (!have_gpu()) return;
    // Rounded values make ties frequent; the long row is split across blocks.
    Tensor base = mul(random_input({5, 6, 7}, 13, -3, 3), 1.0).to(DType::int64).to(DType::float64);
    Tensor long_ties = mul(random_input({2, 70000}, 14, -2, 2), 1.0).to(DType::int64);
    for (DType dtype : {DType::float32, DType::float64, DType::int64, DType::int32, DType::uint8}) {
        Tensor x = dtype == DType::uint8 ? abs(base).to(dtype) : base.to(dtype);
        Tensor xt = x.permute({2, 0, 1});
        for (const Tensor& input :
             {x, xt, long_ties.to(dtype == DType::uint8 ? DType::int64 : dtype)}) {
            for (int64_t dim = -1; dim < input.ndim(); ++dim) {
                for (bool keepdim : {false, true}) {
                    INFO(dtype_name(dtype) << " shape " << text(input.shape()) << " dim " << dim
                                           << " keepdim " << keepdim);
                    ValuesIndices want = max(input, dim, keepdim);
                    ValuesIndices got = max(input.cuda(), dim, keepdim);
                    CHECK(got.indices.cpu().to_vector<int64_t>() ==
                          want.indices.to_vector<int64_t>());
                    require_close(got.values.cpu().to(DType::float64),
                                  want.values.to(DType::float64), 0, 0);
                    ValuesIndices low = min(input.cuda(), dim, keepdim);
                    CHECK(low.indices.cpu().to_vector<int64_t>() ==
                          min(input, dim, keepdim).indices.to_vector<int64_t>());
                    CHECK(argmax(input.cuda(), dim).cpu().to_vector<int64_t>() ==
                          argmax(input, dim).to_vector<int64_t>());
                    CHECK(argmin(input.cuda(), dim, keepdim).cpu().to_vector<int64_t>() ==
                          argmin(input, dim, keepdim).to_vector<int64_t>());
                }
            }
        }
    }
    // NaN counts as the extremum of both kinds; the first NaN wins. bool reduces too.
    double nan = std::nan("");
    Tensor with_nan = tensor({1, nan, 5, nan, 2, 9, 9, 1}, {2, 4}, DType::float32);
    for (int64_t dim : {0, 1}) {
        CHECK(argmax(with_nan.cuda(), dim).cpu().to_vector<int64_t>() ==
              argmax(with_nan, dim).to_vector<int64_t>());
        CHECK(argmin(with_nan.cuda(), dim).cpu().to_vector<int64_t>() ==
              argmin(with_nan, dim).to_vector<int64_t>());
    }
    Tensor flags = tensor({0, 1, 1, 0, 0, 0}, {2, 3}, DType::bool_);
    CHECK(argmax(flags.cuda(), 1).cpu().to_vector<int64_t>() ==
          argmax(flags, 1).to_vector<int64_t>());
    CHECK(max(flags.cuda()).cpu().to_vector<bool>() == max(flags).to_vector<bool>());
}

TEST_CASE("var and std with corrections, and logsumexp with infinite rows, on the GPU",
          "[cuda][ops][reduce]") {
    if (!have_gpu()) return;
    // A large common offset: a one-pass sum of squares would lose everything in float32.
    Tensor x = add(random_input({9, 1001}, 21), 1000.0).to(DType::float32);
    for (double correction : {0.0, 1.0, 2.5, 1001.0, 2000.0}) {
        for (const Dims& dims : std::vector<Dims>{{}, {0}, {1}}) {
            INFO("correction " << correction << " dims " << text(dims));
            require_same([&](const Tensor& t) { return var(t, dims, correction); }, x, 1e-3);
            require_same([&](const Tensor& t) { return lumen::std(t, dims, correction, true); },
                         x.to(DType::float64), 1e-9);
        }
    }
    double inf = std::numeric_limits<double>::infinity();
    Tensor masked =
        tensor({-inf, -inf, -inf, 0.5, -inf, 2.0, inf, 1.0, 3.0}, {3, 3}, DType::float32);
    for (const Dims& dims : std::vector<Dims>{{}, {0}, {1}}) {
        INFO("logsumexp dims " << text(dims));
        require_same([&](const Tensor& t) { return logsumexp(t, dims); }, masked, 1e-6);
    }
}

TEST_CASE("reduction gradients match the CPU on the GPU", "[cuda][ops][reduce]") {
    if (!have_gpu()) return;
    Tensor base = random_input({6, 5, 7}, 31);
    // ties for amax / max: rounded copies of some entries
    Tensor tied = where(gt(base, 0.6), tensor({0.9}, {1}, DType::float64), base);
    std::vector<std::pair<std::string, Reduction>> ops = {
        {"sum",
         [](const Tensor& t) {
             return sum(t, {0, 2});
         }},
        {"mean", [](const Tensor& t) { return mean(t, {1}, true); }},
        {"amax", [](const Tensor& t) { return amax(t, {2}); }},
        {"max", [](const Tensor& t) { return max(t); }},
        {"max(dim)", [](const Tensor& t) { return max(t, 1).values; }},
        {"min(dim)", [](const Tensor& t) { return min(t, -1, true).values; }},
        {"var",
         [](const Tensor& t) {
             return var(t, {0, 1}, 1.0);
         }},
        {"std", [](const Tensor& t) { return lumen::std(t, {2}, 0.0, true); }},
        {"logsumexp", [](const Tensor& t) { return logsumexp(t, {1}); }},
        {"sum_to",
         [](const Tensor& t) {
             return sum_to(t, {t.size(1), 1});
         }},
    };
    for (const auto& [name, f] : ops) {
        for (const Tensor& input : {tied, tied.permute({2, 0, 1})}) {
            INFO(name << " shape " << text(input.shape()));
            Function on_vector = [&](const std::vector<Tensor>& in) { return f(in[0]); };
            std::vector<Tensor> want = output_and_grads(on_vector, {input}, Device::cpu());
            std::vector<Tensor> got = output_and_grads(on_vector, {input}, Device::cuda());
            require_close(got[1], want[1], 1e-10, 1e-12);
        }
    }
    // Broadcasting binary ops reduce their gradients with sum_to on the GPU.
    Function broadcast = [](const std::vector<Tensor>& in) {
        return sum(mul(add(in[0], in[1]), in[0]));
    };
    Tensor a = random_input({4, 1, 6}, 33), b = random_input({5, 1}, 34);
    std::vector<Tensor> want = output_and_grads(broadcast, {a, b}, Device::cpu());
    std::vector<Tensor> got = output_and_grads(broadcast, {a, b}, Device::cuda());
    require_close(got[1], want[1], 1e-10, 1e-12);
    require_close(got[2], want[2], 1e-10, 1e-12);
}
