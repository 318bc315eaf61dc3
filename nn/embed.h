// Token front ends of the vision transformers: patch embedding (timm PatchEmbed, 2-D and 3-D),
// the fixed sinusoidal position table of Vaswani et al., and prepending a class token.
#pragma once

#include <memory>
#include <vector>

#include "nn/conv.h"

namespace lumen::nn {

// x (B, C, H, W) -> tokens (B, (H/p)(W/p), D) in row-major patch order, via
// proj = Conv2d(C, D, kernel p, stride p) (Conv3d and (B, C, D, H, W) for nd = 3, tokens
// ordered depth, height, width). Throws [PatchEmbed] when a spatial size is not a multiple of
// its patch size or the channels differ.
class PatchEmbed : public Module {
  public:
    PatchEmbed(int nd, int64_t in_chans, int64_t embed_dim, const std::vector<int64_t>& patch_size,
               bool bias = true);
    Tensor forward(const Tensor& x) override;
    // The token grid of an input's spatial sizes ((H/p, W/p) or (D/p, H/p, W/p)).
    std::vector<int64_t> grid_size(const Shape& input_shape) const;

    std::shared_ptr<Conv> proj;
    std::vector<int64_t> patch_size;

  private:
    int nd_;
};

// PE (N, D) float32 on `device`: PE[t, 2i] = sin(t / base^(2i/D)), PE[t, 2i+1] = cos(same).
// For odd D the last column is a sin. Constant (no gradient).
Tensor sinusoidal_position_table(int64_t length, int64_t dim, double base = 10000.0,
                                 Device device = Device::cpu());

// cat([token expanded to (B, 1, D), x], dim 1): x (B, N, D), token (1, 1, D) -> (B, N+1, D).
Tensor prepend_token(const Tensor& x, const Tensor& token);

}  // namespace lumen::nn
