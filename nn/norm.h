// Normalization layers with PyTorch's names: LayerNorm, RMSNorm, GroupNorm, BatchNorm1d/2d/3d
// (running statistics as buffers `running_mean`, `running_var`, `num_batches_tracked`).
// The math and backward are in ops/norm.h.
#pragma once

#include <optional>

#include "nn/module.h"
#include "ops/norm.h"

namespace lumen::nn {

// Over the trailing `normalized_shape`: (x - mean) / sqrt(var + eps) * weight + bias, biased
// variance. weight 1 and bias 0 at init (absent without elementwise_affine; bias alone can be
// switched off as in PyTorch 2.1+).
class LayerNorm : public Module {
  public:
    explicit LayerNorm(Shape normalized_shape, double eps = 1e-5, bool elementwise_affine = true,
                       bool bias = true);
    Tensor forward(const Tensor& x) override;
    std::string extra_repr() const override;
    Tensor weight, bias;
    Shape normalized_shape;
    double eps;
};

// x * rsqrt(mean(x^2) + eps) * weight over the trailing `normalized_shape` (eps inside the
// square root). weight 1 at init; no bias.
class RMSNorm : public Module {
  public:
    explicit RMSNorm(Shape normalized_shape, double eps = 1e-6, bool elementwise_affine = true);
    Tensor forward(const Tensor& x) override;
    std::string extra_repr() const override;
    Tensor weight;
    Shape normalized_shape;
    double eps;
};

// x (B, C, *): C channels in num_groups groups, each normalized over its channels and
// positions; per-channel weight (1) and bias (0).
class GroupNorm : public Module {
  public:
    GroupNorm(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true);
    Tensor forward(const Tensor& x) override;
    std::string extra_repr() const override;
    Tensor weight, bias;
    int64_t num_groups, num_channels;
    double eps;
};

// Batch normalization over every dim but C. Training (with track_running_stats): batch
// statistics, running_mean/var updated in place with `momentum` (nullopt = cumulative average
// 1 / num_batches_tracked) and num_batches_tracked += 1. Eval: running statistics. Without
// track_running_stats the batch statistics are always used and there are no buffers. The
// recomputation of a checkpointed block (nn/checkpoint.h) uses the batch statistics and leaves
// the running ones as the first forward left them.
// `input_ndims` lists the accepted ranks (BatchNorm1d: 2 or 3, 2d: 4, 3d: 5).
// With `sync_all_reduce` set (convert_sync_batchnorm), training uses the statistics of the
// samples of every process it spans (ops/norm.h sync_batch_norm, nn.SyncBatchNorm).
class BatchNorm : public Module {
  public:
    BatchNorm(const char* type_name, std::vector<int64_t> input_ndims, int64_t num_features,
              double eps, std::optional<double> momentum, bool affine, bool track_running_stats);
    Tensor forward(const Tensor& x) override;
    std::string extra_repr() const override;
    Tensor weight, bias, running_mean, running_var, num_batches_tracked;
    int64_t num_features;
    double eps;
    std::optional<double> momentum;
    AllReduceSum sync_all_reduce;  // empty: this process's batch only

  private:
    std::vector<int64_t> input_ndims_;
};

struct BatchNorm1d : BatchNorm {
    explicit BatchNorm1d(int64_t num_features, double eps = 1e-5,
                         std::optional<double> momentum = 0.1, bool affine = true,
                         bool track_running_stats = true)
        : BatchNorm("BatchNorm1d", {2, 3}, num_features, eps, momentum, affine,
                    track_running_stats) {}
};
struct BatchNorm2d : BatchNorm {
    explicit BatchNorm2d(int64_t num_features, double eps = 1e-5,
                         std::optional<double> momentum = 0.1, bool affine = true,
                         bool track_running_stats = true)
        : BatchNorm("BatchNorm2d", {4}, num_features, eps, momentum, affine, track_running_stats) {}
};
struct BatchNorm3d : BatchNorm {
    explicit BatchNorm3d(int64_t num_features, double eps = 1e-5,
                         std::optional<double> momentum = 0.1, bool affine = true,
                         bool track_running_stats = true)
        : BatchNorm("BatchNorm3d", {5}, num_features, eps, momentum, affine, track_running_stats) {}
};

// Sets sync_all_reduce of every BatchNorm in `module` (itself included) to `all_reduce`, as
// PyTorch's SyncBatchNorm.convert_sync_batchnorm: in training their batch statistics then
// cover every process's samples. An empty all_reduce makes them plain batch norms again.
// Returns the number of BatchNorm modules set.
int64_t convert_sync_batchnorm(Module& module, const AllReduceSum& all_reduce);

}  // namespace lumen::nn
