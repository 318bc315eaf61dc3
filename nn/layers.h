// Parameter-free layers every network uses, as torch.nn has them: max, average and adaptive
// pooling in 1-D, 2-D and 3-D, Upsample, Flatten and channel dropout (Dropout1d/2d/3d). Each
// calls its op (ops/pool.h, ops/interpolate.h, ops/dropout.h); the 1-D pools run the 2-D op on
// a (B, C, 1, L) view. Shapes as torch's: (B, C, *spatial) or unbatched (C, *spatial).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "nn/int_list.h"
#include "nn/module.h"
#include "ops/reduce.h"

namespace lumen::nn {

// Every Dims holds one value (for every spatial dim) or one per spatial dim, as PyTorch's
// `int | tuple`.
struct PoolOptions {
    Dims stride;  // empty: kernel_size
    Dims padding = {0};
    Dims dilation = {1};  // max pools only
    bool ceil_mode = false;
    bool count_include_pad = true;            // average pools only
    std::optional<int64_t> divisor_override;  // average pools only
};

// torch.nn.MaxPool{1,2,3}d and AvgPool{1,2,3}d (named by nd and average). Throws [<type>]
// for a kernel, stride, padding or dilation of the wrong length when built, [Pool] for nd
// outside 1..3, and the op's errors (ops/pool.h) in forward.
class Pool : public Module {
  public:
    Pool(int nd, bool average, Dims kernel_size, PoolOptions options);
    Tensor forward(const Tensor& x) override;
    std::string extra_repr() const override;
    Dims kernel_size;
    PoolOptions options;

  private:
    int nd_;
    bool average_;
};

template <int ND>
struct MaxPoolNd : Pool {
    explicit MaxPoolNd(IntList kernel, PoolOptions o = {})
        : Pool(ND, false, std::move(kernel.values), std::move(o)) {}
};
template <int ND>
struct AvgPoolNd : Pool {
    explicit AvgPoolNd(IntList kernel, PoolOptions o = {})
        : Pool(ND, true, std::move(kernel.values), std::move(o)) {}
};
using MaxPool1d = MaxPoolNd<1>;
using MaxPool2d = MaxPoolNd<2>;
using MaxPool3d = MaxPoolNd<3>;
using AvgPool1d = AvgPoolNd<1>;
using AvgPool2d = AvgPoolNd<2>;
using AvgPool3d = AvgPoolNd<3>;

// torch.nn.AdaptiveAvgPool{1,2,3}d and AdaptiveMaxPool{1,2,3}d (the max forms return the
// values only). Throws [<type>] for an output_size of the wrong length, [AdaptivePool] for nd
// outside 1..3.
class AdaptivePool : public Module {
  public:
    AdaptivePool(int nd, bool average, IntList output_size);
    Tensor forward(const Tensor& x) override;
    std::string extra_repr() const override;
    Dims output_size;

  private:
    int nd_;
    bool average_;
};

template <int ND>
struct AdaptiveAvgPoolNd : AdaptivePool {
    explicit AdaptiveAvgPoolNd(IntList size) : AdaptivePool(ND, true, std::move(size)) {}
};
template <int ND>
struct AdaptiveMaxPoolNd : AdaptivePool {
    explicit AdaptiveMaxPoolNd(IntList size) : AdaptivePool(ND, false, std::move(size)) {}
};
using AdaptiveAvgPool1d = AdaptiveAvgPoolNd<1>;
using AdaptiveAvgPool2d = AdaptiveAvgPoolNd<2>;
using AdaptiveAvgPool3d = AdaptiveAvgPoolNd<3>;
using AdaptiveMaxPool1d = AdaptiveMaxPoolNd<1>;
using AdaptiveMaxPool2d = AdaptiveMaxPoolNd<2>;
using AdaptiveMaxPool3d = AdaptiveMaxPoolNd<3>;

// torch.nn.Upsample: interpolate(x, size or scale_factor, mode, align_corners) (exactly one of
// size and scale_factor). Throws [Upsample] when both or neither are given.
struct UpsampleOptions {
    Dims size;
    std::vector<double> scale_factor;
    std::string mode = "nearest";  // nearest, nearest-exact, linear, bilinear, trilinear, area
    std::optional<bool> align_corners;
};
class Upsample : public Module {
  public:
    explicit Upsample(UpsampleOptions options);
    Tensor forward(const Tensor& x) override;
    std::string extra_repr() const override;
    UpsampleOptions options;
};

// torch.nn.Flatten: x.flatten(start_dim, end_dim), by default (B, *) -> (B, prod(*)).
class Flatten : public Module {
  public:
    explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1);
    Tensor forward(const Tensor& x) override { return x.flatten(start_dim, end_dim); }
    std::string extra_repr() const override;
    int64_t start_dim, end_dim;
};

// torch.nn.Dropout1d/2d/3d (Dropout<nd>d): channel_dropout (ops/dropout.h) in training mode;
// identity in eval. Throws [Dropout<nd>d] for p outside [0, 1], [ChannelDropout] for nd outside
// 1..3.
class ChannelDropout : public Module {
  public:
    ChannelDropout(int nd, double p);
    Tensor forward(const Tensor& x) override;
    std::string extra_repr() const override;
    double p;

  private:
    int nd_;
};

template <int ND>
struct DropoutNd : ChannelDropout {
    explicit DropoutNd(double p = 0.5) : ChannelDropout(ND, p) {}
};
using Dropout1d = DropoutNd<1>;
using Dropout2d = DropoutNd<2>;
using Dropout3d = DropoutNd<3>;

}  // namespace lumen::nn
