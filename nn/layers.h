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

// torch.nn.MaxPool{1,2,3}d and AvgPool{1,2,3}d. Throws [<type>] for a kernel of the wrong
// length when built, and the op's errors (ops/pool.h) in forward.
class Pool : public Module {
  public:
    Pool(const char* type_name, int nd, bool average, Dims kernel_size, PoolOptions options);
    Tensor forward(const Tensor& x) override;
    std::string extra_repr() const override;
    Dims kernel_size;
    PoolOptions options;

  private:
    int nd_;
    bool average_;
};

struct MaxPool1d : Pool {
    explicit MaxPool1d(IntList kernel, PoolOptions o = {})
        : Pool("MaxPool1d", 1, false, std::move(kernel.values), std::move(o)) {}
};
struct MaxPool2d : Pool {
    explicit MaxPool2d(IntList kernel, PoolOptions o = {})
        : Pool("MaxPool2d", 2, false, std::move(kernel.values), std::move(o)) {}
};
struct MaxPool3d : Pool {
    explicit MaxPool3d(IntList kernel, PoolOptions o = {})
        : Pool("MaxPool3d", 3, false, std::move(kernel.values), std::move(o)) {}
};
struct AvgPool1d : Pool {
    explicit AvgPool1d(IntList kernel, PoolOptions o = {})
        : Pool("AvgPool1d", 1, true, std::move(kernel.values), std::move(o)) {}
};
struct AvgPool2d : Pool {
    explicit AvgPool2d(IntList kernel, PoolOptions o = {})
        : Pool("AvgPool2d", 2, true, std::move(kernel.values), std::move(o)) {}
};
struct AvgPool3d : Pool {
    explicit AvgPool3d(IntList kernel, PoolOptions o = {})
        : Pool("AvgPool3d", 3, true, std::move(kernel.values), std::move(o)) {}
};

// torch.nn.AdaptiveAvgPool{1,2,3}d and AdaptiveMaxPool{1,2,3}d (the max forms return the
// values only).
class AdaptivePool : public Module {
  public:
    AdaptivePool(const char* type_name, int nd, bool average, Dims output_size);
    // The nd-dimensional one (AdaptiveAvgPool2d for nd 2, average): for code generic over
    // 2-D and 3-D. Throws [AdaptivePool] for nd outside 1..3.
    AdaptivePool(int nd, bool average, IntList output_size);
    Tensor forward(const Tensor& x) override;
    std::string extra_repr() const override;
    Dims output_size;

  private:
    int nd_;
    bool average_;
};

struct AdaptiveAvgPool1d : AdaptivePool {
    explicit AdaptiveAvgPool1d(IntList size)
        : AdaptivePool("AdaptiveAvgPool1d", 1, true, size.values) {}
};
struct AdaptiveAvgPool2d : AdaptivePool {
    explicit AdaptiveAvgPool2d(IntList size)
        : AdaptivePool("AdaptiveAvgPool2d", 2, true, size.values) {}
};
struct AdaptiveAvgPool3d : AdaptivePool {
    explicit AdaptiveAvgPool3d(IntList size)
        : AdaptivePool("AdaptiveAvgPool3d", 3, true, size.values) {}
};
struct AdaptiveMaxPool1d : AdaptivePool {
    explicit AdaptiveMaxPool1d(IntList size)
        : AdaptivePool("AdaptiveMaxPool1d", 1, false, size.values) {}
};
struct AdaptiveMaxPool2d : AdaptivePool {
    explicit AdaptiveMaxPool2d(IntList size)
        : AdaptivePool("AdaptiveMaxPool2d", 2, false, size.values) {}
};
struct AdaptiveMaxPool3d : AdaptivePool {
    explicit AdaptiveMaxPool3d(IntList size)
        : AdaptivePool("AdaptiveMaxPool3d", 3, false, size.values) {}
};

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

// torch.nn.Dropout1d/2d/3d: channel_dropout (ops/dropout.h) in training mode; identity in eval.
class ChannelDropout : public Module {
  public:
    ChannelDropout(const char* type_name, int nd, double p);
    // Dropout<nd>d, for code generic over 2-D and 3-D. Throws [ChannelDropout] for nd outside
    // 1..3.
    ChannelDropout(int nd, double p);
    Tensor forward(const Tensor& x) override;
    std::string extra_repr() const override;
    double p;

  private:
    int nd_;
};
struct Dropout1d : ChannelDropout {
    explicit Dropout1d(double p = 0.5) : ChannelDropout("Dropout1d", 1, p) {}
};
struct Dropout2d : ChannelDropout {
    explicit Dropout2d(double p = 0.5) : ChannelDropout("Dropout2d", 2, p) {}
};
struct Dropout3d : ChannelDropout {
    explicit Dropout3d(double p = 0.5) : ChannelDropout("Dropout3d", 3, p) {}
};

}  // namespace lumen::nn
