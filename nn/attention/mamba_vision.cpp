// MambaVisionMixer and MambaVisionBlock; autograd flows through the ops (the selective scan
// has its own backward kernel).
#include "nn/attention/mamba_vision.h"

#include <cmath>
#include <vector>

#include "core/autograd.h"
#include "nn/attention/mhsa.h"
#include "nn/init.h"
#include "ops/conv.h"
#include "ops/elementwise.h"
#include "ops/scan.h"
#include "ops/shape.h"

namespace lumen::nn::attention {

namespace {

// Mamba's dt_proj init: weight U(+-R^-0.5); dt = exp(U[ln 1e-3, ln 0.1]) floored at 1e-4,
// bias = dt + log(-expm1(-dt)) so that softplus(bias) = dt.
void init_dt_proj(Linear& dt_proj, int64_t dt_rank) {
    double bound = 1.0 / std::sqrt(double(dt_rank));
    init::uniform_(dt_proj.weight, -bound, bound);
    Tensor u = empty({dt_proj.out_features}, DType::float64);
    init::uniform_(u);
    std::vector<double> bias = u.to_vector<double>();
    double low = std::log(1e-3), high = std::log(0.1);
    for (double& b : bias) {
        double dt = std::max(std::exp(low + b * (high - low)), 1e-4);
        b = dt + std::log(-std::expm1(-dt));
    }
    NoGradGuard no_grad;
    dt_proj.bias.copy_(from_vector(bias));
}

}  // namespace

MambaVisionMixer::MambaVisionMixer(int64_t d_model_, int64_t d_state_, int64_t d_conv_,
                                   int64_t expand, std::optional<int64_t> rank, double proj_p)
    : Attention("MambaVisionMixer"),
      d_model(d_model_),
      d_state(d_state_),
      d_conv(d_conv_),
      d_inner(expand * d_model_),
      dt_rank(rank ? *rank : (d_model_ + 15) / 16) {
    LUMEN_CHECK(d_model > 0 && d_state > 0 && d_conv > 0 && expand > 0 && dt_rank > 0,
                "MambaVisionMixer", "sizes must be positive, got d_model ", d_model, ", d_state ",
                d_state, ", d_conv ", d_conv, ", expand ", expand, ", dt_rank ", dt_rank);
    LUMEN_CHECK(d_inner % 2 == 0, "MambaVisionMixer", "the x | z split needs an even d_inner ",
                "(expand * d_model), got ", d_inner);
    int64_t half = d_inner / 2;
    in_proj = register_module("in_proj", make<Linear>(d_model, d_inner, false));
    x_proj = register_module("x_proj", make<Linear>(half, dt_rank + 2 * d_state, false));
    dt_proj = register_module("dt_proj", make<Linear>(dt_rank, half, true));
    init_dt_proj(*dt_proj, dt_rank);
    std::vector<float> a_log(size_t(half * d_state));
    for (size_t i = 0; i < a_log.size(); ++i) a_log[i] = float(std::log(double(i % d_state + 1)));
    A_log = register_parameter("A_log", from_vector(a_log, {half, d_state}));
    D = register_parameter("D", ones({half}));
    out_proj = register_module("out_proj", make<Linear>(d_inner, d_model, false));
    ConvOptions depthwise{.padding_mode = "same", .groups = half, .bias = false};
    conv1d_x =
        register_module("conv1d_x", make<Conv1d>(half, half, std::vector{d_conv}, depthwise));
    conv1d_z =
        register_module("conv1d_z", make<Conv1d>(half, half, std::vector{d_conv}, depthwise));
    if (proj_p > 0) proj_drop = register_module("proj_drop", make<Dropout>(proj_p));
}

Tensor MambaVisionMixer::forward(const Tensor& u, const AttentionContext& context) {
    LUMEN_CHECK(u.ndim() == 3 && u.size(2) == d_model, "MambaVisionMixer", "expects u (B, L, ",
                d_model, "), got shape ", u.shape());
    LUMEN_CHECK(!context.key_padding_mask.defined() && !context.causal, "MambaVisionMixer",
                "cannot honour a key padding mask or causal masking (its convs look both ways)");
    int64_t half = d_inner / 2;
    // Both depthwise convs at once: one grouped conv over the d_inner channels of [x | z].
    Tensor weight = cat({conv1d_x->weight, conv1d_z->weight}, 0);
    Tensor xz = silu(conv1d(in_proj->forward(u).transpose(1, 2), weight, Tensor(), {1}, "same", {1},
                            d_inner));  // (B, d_inner, L)
    Tensor x = xz.narrow(1, 0, half), z = xz.narrow(1, half, half);
    Tensor x_dbl = x_proj->forward(x.transpose(1, 2));  // (B, L, R + 2N)
    Tensor dt = x_dbl.narrow(2, 0, dt_rank);
    Tensor bm = x_dbl.narrow(2, dt_rank, d_state).transpose(1, 2);  // (B, N, L)
    Tensor cm = x_dbl.narrow(2, dt_rank + d_state, d_state).transpose(1, 2);
    Tensor delta = dt_proj->forward(dt).transpose(1, 2);  // (B, e, L), bias included once
    Tensor y = selective_scan(x, delta, neg(exp(A_log)), bm, cm, D, Tensor(), dt_proj->bias, true);
    Tensor out = out_proj->forward(cat({y, z}, 1).transpose(1, 2));
    return proj_drop ? proj_drop->forward(out) : out;
}

std::string MambaVisionMixer::extra_repr() const {
    return "d_model=" + std::to_string(d_model) + ", d_state=" + std::to_string(d_state) +
           ", d_conv=" + std::to_string(d_conv) + ", d_inner=" + std::to_string(d_inner) +
           ", dt_rank=" + std::to_string(dt_rank);
}

std::shared_ptr<Attention> make_mamba_attention(const AttentionConfig& config) {
    check_attention_options(config, {"d_state", "d_conv", "expand", "dt_rank"}, "mamba");
    LUMEN_CHECK(config.attn_drop == 0.0, "mamba",
                "has no attention map to drop: attn_drop must be 0, got ", config.attn_drop);
    std::optional<int64_t> rank;
    double dt_rank = config.option("dt_rank", -1.0);
    if (dt_rank > 0) rank = int64_t(dt_rank);
    return make<MambaVisionMixer>(config.dim, int64_t(config.option("d_state", 8)),
                                  int64_t(config.option("d_conv", 3)),
                                  int64_t(config.option("expand", 1)), rank, config.proj_drop);
}

MambaVisionBlock::MambaVisionBlock(int64_t dim_, double mlp_ratio,
                                   std::optional<double> layer_scale)
    : Module("MambaVisionBlock"), dim(dim_) {
    norm1 = register_module("norm1", make<LayerNorm>(Shape{dim}, 1e-5));
    mixer = register_module("mixer", make<MambaVisionMixer>(dim, 8, 3, 1));
    norm2 = register_module("norm2", make<LayerNorm>(Shape{dim}, 1e-5));
    mlp = register_module("mlp", make<Mlp>(dim, int64_t(double(dim) * mlp_ratio)));
    if (layer_scale) {
        gamma_1 = register_parameter("gamma_1", full({dim}, *layer_scale));
        gamma_2 = register_parameter("gamma_2", full({dim}, *layer_scale));
    }
}

Tensor MambaVisionBlock::forward(const Tensor& x) {
    LUMEN_CHECK(x.ndim() == 3 && x.size(2) == dim, "MambaVisionBlock", "expects x (B, N, ", dim,
                "), got shape ", x.shape());
    Tensor mixed = mixer->forward(norm1->forward(x));
    Tensor h = add(x, gamma_1.defined() ? mul(gamma_1, mixed) : mixed);
    Tensor ffn = mlp->forward(norm2->forward(h));
    return add(h, gamma_2.defined() ? mul(gamma_2, ffn) : ffn);
}

}  // namespace lumen::nn::attention
