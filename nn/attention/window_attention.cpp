// Swin window attention: the relative position bias gathered from its table, the shift mask
// folded into it once per call (one add over the scores instead of two), and the grid forward
// that windows the tokens itself. Autograd flows through the ops.
#include "nn/attention/window_attention.h"

#include <cmath>

#include "core/shape.h"
#include "nn/attention/mhsa.h"
#include "nn/init.h"
#include "ops/elementwise.h"
#include "ops/index.h"
#include "ops/matmul.h"

namespace lumen::nn::attention {

WindowAttention::WindowAttention(int64_t dim_, int64_t num_heads_,
                                 std::vector<int64_t> window_size_, bool qkv_bias,
                                 std::string mixer_,
                                 std::vector<std::pair<std::string, double>> mixer_options,
                                 std::vector<int64_t> shift_size_)
    : Attention("WindowAttention"),
      dim(dim_),
      num_heads(num_heads_),
      head_dim(0),
      scale(1.0),
      window_size(std::move(window_size_)),
      shift_size(std::move(shift_size_)),
      mixer(std::move(mixer_)) {
    const char* who = "WindowAttention";
    LUMEN_CHECK(dim > 0 && num_heads > 0 && dim % num_heads == 0, who,
                "dim must be a positive multiple of num_heads, got dim ", dim, ", num_heads ",
                num_heads);
    LUMEN_CHECK(window_size.size() == 2 || window_size.size() == 3, who,
                "window_size must have 2 or 3 entries, got ", window_size);
    for (int64_t w : window_size)
        LUMEN_CHECK(w > 0, who, "window sizes must be positive, got ", window_size);
    if (shift_size.empty()) shift_size.assign(window_size.size(), 0);
    LUMEN_CHECK(shift_size.size() == window_size.size(), who, "shift_size ", shift_size,
                " must have one entry per window dim ", window_size);
    if (mixer != "attn") {
        AttentionConfig config;
        config.type = mixer;
        config.dim = dim;
        config.num_heads = num_heads;
        config.options = std::move(mixer_options);
        mixer_module = register_module(mixer, make_attention(config));
        return;
    }
    LUMEN_CHECK(mixer_options.empty(), who, "the \"attn\" mixer takes no mixer options, got ",
                mixer_options.size());
    head_dim = dim / num_heads;
    scale = 1.0 / std::sqrt(double(head_dim));
    int64_t table = 1;
    for (int64_t w : window_size) table *= 2 * w - 1;
    relative_position_bias_table =
        register_parameter("relative_position_bias_table", zeros({table, num_heads}));
    init::trunc_normal_(relative_position_bias_table, 0.0, 0.02);
    relative_position_index =
        register_buffer("relative_position_index", attention::relative_position_index(window_size));
    qkv = register_module("qkv", make<Linear>(dim, 3 * dim, qkv_bias));
    proj = register_module("proj", make<Linear>(dim, dim));
}

Tensor WindowAttention::position_bias(int64_t n) const {
    // The top-left n x n block of the full window's index [quirk], flattened for the gather.
    Tensor index = relative_position_index.slice(0, 0, n).slice(1, 0, n).reshape({n * n});
    return index_select(relative_position_bias_table, 0, index)
        .view({n, n, num_heads})
        .permute({2, 0, 1});
}

Tensor WindowAttention::attention_windows(const Tensor& windows, const Tensor& mask) {
    int64_t count = windows.size(0), n = windows.size(1);
    int64_t groups = mask.defined() ? mask.size(0) : 1;
    // Windows come image by image, so (count) splits into (images, groups) and the mask's
    // window w lines up with group w. qkv channel c: part c / dim, head (c % dim) / Hd.
    Tensor parts = qkv->forward(windows)
                       .view({count / groups, groups, n, 3, num_heads, head_dim})
                       .permute({3, 0, 1, 4, 2, 5});  // (3, images, groups, heads, n, Hd)
    Tensor q = parts.select(0, 0), k = parts.select(0, 1), v = parts.select(0, 2);
    Tensor bias = position_bias(n);                                        // (heads, n, n)
    if (mask.defined()) bias = add(bias.unsqueeze(0), mask.unsqueeze(1));  // (nW, heads, n, n)
    Tensor heads =
        attend(q, k, v, {scale, bias, false, 0.0, fused});  // (images, groups, heads, n, Hd)
    return proj->forward(heads.permute({0, 1, 3, 2, 4}).reshape({count, n, dim}));
}

Tensor WindowAttention::forward_windows(const Tensor& windows, const Tensor& mask) {
    const char* who = "WindowAttention";
    LUMEN_CHECK(windows.ndim() == 3 && windows.size(2) == dim, who, "expects windows (B*nW, n, ",
                dim, "), got shape ", windows.shape());
    if (mixer_module) {
        LUMEN_CHECK(!mask.defined(), who, "the \"", mixer, "\" mixer takes no mask");
        return mixer_module->forward(windows);
    }
    int64_t n = windows.size(1);
    LUMEN_CHECK(n >= 1 && n <= relative_position_index.size(0), who, "a window of ", n,
                " tokens does not fit window_size ", window_size);
    if (mask.defined()) {
        LUMEN_CHECK(mask.ndim() == 3 && mask.size(1) == n && mask.size(2) == n &&
                        mask.size(0) > 0 && windows.size(0) % mask.size(0) == 0,
                    who, "mask must be (nW, ", n, ", ", n, ") with nW dividing the ",
                    windows.size(0), " windows, got shape ", mask.shape());
        LUMEN_CHECK(mask.device() == windows.device(), who, "mask is on ", mask.device(),
                    " but the windows are on ", windows.device());
    }
    return attention_windows(windows, mask.defined() ? mask.to(windows.dtype()) : mask);
}

Tensor WindowAttention::forward(const Tensor& x, const AttentionContext& context) {
    const char* who = "WindowAttention";
    const std::vector<int64_t>& grid = context.grid;
    LUMEN_CHECK(grid.size() == window_size.size(), who, "needs context.grid with ",
                window_size.size(), " sizes (window_size ", window_size, "), got ", grid);
    LUMEN_CHECK(x.ndim() == 3 && x.size(2) == dim && x.size(1) == shape_numel(grid) &&
                    context.prefix_tokens == 0,
                who, "expects x (B, prod(grid) = ", shape_numel(grid), ", ", dim,
                ") without prefix tokens, got shape ", x.shape(), " and ", context.prefix_tokens,
                " prefix tokens");
    LUMEN_CHECK(!context.key_padding_mask.defined() && !context.causal, who,
                "takes no key padding mask and no causal mask");
    WindowShift ws = get_window_size(grid, window_size, shift_size);
    Tensor mask = masks_.get(grid, ws, x.dtype(), x.device());
    Shape map = {x.size(0)};
    map.insert(map.end(), grid.begin(), grid.end());
    map.push_back(dim);
    Tensor y = window_mix(x.view(map), ws.window, ws.shift,
                          [&](const Tensor& windows) { return forward_windows(windows, mask); });
    return y.reshape({x.size(0), x.size(1), dim});
}

std::string WindowAttention::extra_repr() const {
    std::string w;
    for (int64_t v : window_size) w += (w.empty() ? "" : ", ") + std::to_string(v);
    return "dim=" + std::to_string(dim) + ", num_heads=" + std::to_string(num_heads) +
           ", window_size=(" + w + "), mixer=" + mixer;
}

std::shared_ptr<Attention> make_swin_window_attention(const AttentionConfig& config) {
    check_attention_options(config, {"window", "shift", "spatial_dims"}, "swin_window");
    double window = config.option("window", 7), shift = config.option("shift", 0);
    double spatial_dims = config.option("spatial_dims", 2);
    LUMEN_CHECK(
        window >= 1 && shift >= 0 && shift < window && (spatial_dims == 2 || spatial_dims == 3),
        "swin_window", "needs window >= 1, 0 <= shift < window and spatial_dims 2 or 3, ",
        "got window ", window, ", shift ", shift, ", spatial_dims ", spatial_dims);
    size_t k = size_t(spatial_dims);
    return make<WindowAttention>(config.dim, config.num_heads,
                                 std::vector<int64_t>(k, int64_t(window)), config.qkv_bias, "attn",
                                 std::vector<std::pair<std::string, double>>{},
                                 std::vector<int64_t>(k, int64_t(shift)));
}

}  // namespace lumen::nn::attention
