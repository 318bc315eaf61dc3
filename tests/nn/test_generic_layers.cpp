// The generic parameter-free layers of nn/layers.h against their ops and hand-computed values:
// 1-D/2-D/3-D max, average and adaptive pools (the 1-D ones through the 2-D ops, with float64
// finite-difference gradients), Upsample, Flatten, channel dropout (whole maps zeroed, identity
// in eval), the `int | tuple` shorthand (Conv2d(1, 16, 3)), PyTorch's printouts and errors.
#include <catch2/catch.hpp>

#include "core/random.h"
#include "nn/conv.h"
#include "nn/layers.h"
#include "ops/creation.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/interpolate.h"
#include "ops/pool.h"
#include "ops/random.h"
#include "ops/reduce.h"
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

bool same(const Tensor& a, const Tensor& b) {
    return a.shape() == b.shape() && a.to_vector<double>() == b.to_vector<double>();
}

}  // namespace

TEST_CASE("1-D pools: hand-computed windows and float64 gradients", "[nn][layers]") {
    // x = 0..6 in one channel: kernel 3, stride 2, padding 1 -> windows [-1, 1], [1, 3], [3, 5],
    // [5, 7] (padding skipped by max, counted as 0 by avg with count_include_pad).
    Tensor x = arange(0, 7, 1, DType::float32).reshape({1, 1, 7});
    nn::MaxPool1d max_pool(3, {.stride = {2}, .padding = {1}});
    CHECK(max_pool.forward(x).to_vector<float>() == std::vector<float>{1, 3, 5, 6});
    nn::AvgPool1d avg_pool(3, {.stride = {2}, .padding = {1}});
    auto avg = avg_pool.forward(x).to_vector<float>();
    REQUIRE(avg.size() == 4);
    CHECK(avg[0] == Approx(1.0 / 3));
    CHECK(avg[3] == Approx((5 + 6) / 3.0));
    CHECK(max_pool.forward(x.select(0, 0)).shape() == Shape{1, 4});  // unbatched (C, L)
    nn::AdaptiveAvgPool1d mean_pool(1);
    CHECK(mean_pool.forward(x).item<float>() == Approx(3.0));
    nn::AdaptiveMaxPool1d max_cells(2);  // cells [0, 4), [3, 7)
    CHECK(max_cells.forward(x).to_vector<float>() == std::vector<float>{3, 6});
    Generator generator(1);
    Tensor values = randn({2, 3, 9}, DType::float64, &generator);
    module_gradcheck(max_pool, values);
    module_gradcheck(avg_pool, values);
    module_gradcheck(mean_pool, values);
    module_gradcheck(max_cells, values);
}

TEST_CASE("2-D and 3-D pools call their ops", "[nn][layers]") {
    Generator generator(2);
    Tensor x2 = randn({2, 3, 8, 6}, DType::float32, &generator);
    Tensor x3 = randn({1, 2, 4, 6, 8}, DType::float32, &generator);
    CHECK(same(nn::MaxPool2d(2).forward(x2), max_pool2d(x2, {2})));
    CHECK(
        same(nn::MaxPool2d({3, 2}, {.stride = {1}, .padding = {1, 0}, .dilation = {1}}).forward(x2),
             max_pool2d(x2, {3, 2}, {1}, {1, 0})));
    CHECK(same(nn::AvgPool2d(2, {.ceil_mode = true}).forward(x2),
               avg_pool2d(x2, {2}, {}, {0}, true)));
    CHECK(same(nn::MaxPool3d(2).forward(x3), max_pool3d(x3, {2})));
    CHECK(same(nn::AvgPool3d({2, 2, 4}).forward(x3), avg_pool3d(x3, {2, 2, 4})));
    CHECK(same(nn::AdaptiveAvgPool2d(1).forward(x2), adaptive_avg_pool2d(x2, {1})));
    CHECK(same(nn::AdaptiveMaxPool2d({2, 3}).forward(x2), adaptive_max_pool2d(x2, {2, 3})));
    CHECK(same(nn::AdaptiveAvgPool3d({2, 3, 4}).forward(x3), adaptive_avg_pool3d(x3, {2, 3, 4})));
    CHECK(same(nn::AdaptiveMaxPool3d(1).forward(x3), adaptive_max_pool3d(x3, {1})));
}

TEST_CASE("Upsample, Flatten and the int | tuple shorthand", "[nn][layers]") {
    Generator generator(3);
    Tensor x = randn({2, 3, 4, 5}, DType::float32, &generator);
    nn::Upsample twice({.scale_factor = {2.0}});
    CHECK(same(twice.forward(x), interpolate(x, {}, {2.0})));
    nn::Upsample sized({.size = {6, 7}, .mode = "bilinear", .align_corners = false});
    CHECK(same(sized.forward(x), interpolate(x, {6, 7}, {}, "bilinear", false)));
    CHECK(nn::Flatten().forward(x).shape() == Shape{2, 60});
    CHECK(nn::Flatten(0, 1).forward(x).shape() == Shape{6, 4, 5});
    nn::Conv2d conv(1, 16, 3);
    CHECK(conv.kernel_size == std::vector<int64_t>{3, 3});
    CHECK(conv.weight.shape() == Shape{16, 1, 3, 3});
    CHECK(nn::Conv3d(2, 4, {3, 1, 1}).weight.shape() == Shape{4, 2, 3, 1, 1});
}

TEST_CASE("Dropout1d/2d/3d zero whole channels in training only", "[nn][layers]") {
    Tensor x = ones({4, 8, 5, 5});
    nn::Dropout2d drop(0.5);
    manual_seed(7);
    Tensor y = drop.forward(x);
    auto values = y.to_vector<float>();
    int64_t dropped = 0;
    for (int64_t map = 0; map < 32; ++map) {
        const float first = values[size_t(map * 25)];
        REQUIRE((first == 0.0f || first == 2.0f));  // kept maps are scaled by 1 / (1 - p)
        for (int64_t i = 1; i < 25; ++i) REQUIRE(values[size_t(map * 25 + i)] == first);
        dropped += first == 0.0f;
    }
    CHECK((dropped > 4 && dropped < 28));
    drop.eval();
    CHECK(drop.forward(x).impl() == x.impl());
    nn::Dropout1d drop1(0.25);
    CHECK(drop1.forward(ones({3, 4})).shape() == Shape{3, 4});  // unbatched (C, L)
    nn::Dropout3d drop3(1.0);
    CHECK(max(drop3.forward(ones({1, 2, 2, 2, 2}))).item<float>() == 0.0f);
    // The gradient flows through the kept maps (the mask fixed by the seed).
    Tensor values64 = randn({2, 3, 4}, DType::float64);
    gradcheck(
        [&](const std::vector<Tensor>& in) {
            manual_seed(11);
            return channel_dropout(in[0], 1, 0.3);
        },
        {values64});
    require_error([&] { drop.forward(ones({2, 3})); }, {"[dropout2d]", "2 spatial dims", "[2, 3]"});
    require_error([] { nn::Dropout2d bad(1.5); }, {"[Dropout2d]", "1.5"});
}

TEST_CASE("generic layers print as PyTorch and refuse bad sizes", "[nn][layers]") {
    CHECK(nn::MaxPool2d(2).str() ==
          "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)");
    CHECK(nn::AvgPool3d({2, 2, 1}, {.stride = {1}}).str() ==
          "AvgPool3d(kernel_size=(2, 2, 1), stride=1, padding=0)");
    CHECK(nn::AdaptiveAvgPool2d({1, 1}).str() == "AdaptiveAvgPool2d(output_size=(1, 1))");
    CHECK(nn::Upsample({.scale_factor = {2.0}, .mode = "nearest"}).str() ==
          "Upsample(scale_factor=2.0, mode='nearest')");
    CHECK(nn::Upsample({.size = {4, 4}, .mode = "bilinear"}).str() ==
          "Upsample(size=(4, 4), mode='bilinear')");
    CHECK(nn::Flatten().str() == "Flatten(start_dim=1, end_dim=-1)");
    CHECK(nn::Dropout2d(0.2).str() == "Dropout2d(p=0.2, inplace=False)");
    require_error([] { nn::MaxPool2d bad({2, 2, 2}); }, {"[MaxPool2d]", "kernel_size", "1 or 2"});
    require_error(
        [] {
            nn::AdaptiveAvgPool3d bad({1, 1});
        },
        {"[AdaptiveAvgPool3d]", "output_size"});
    require_error([] { nn::Upsample bad({}); }, {"[Upsample]", "exactly one of size"});
    require_error(
        [] {
            nn::MaxPool1d(2).forward(ones({2, 3, 4, 5}));
        },
        {"[MaxPool1d]", "(B, C, L) or (C, L)"});
}
