// Hyena: positional tables, the implicit filter and the multi-head operator; autograd flows
// through the ops (fftconv has its own FFT backward).
#include "nn/attention/hyena.h"

#include <cmath>

#include "nn/attention/mhsa.h"
#include "nn/init.h"
#include "ops/conv.h"
#include "ops/elementwise.h"
#include "ops/fft.h"

namespace lumen::nn::attention {

std::pair<Tensor, Tensor> hyena_positional_table(int64_t l_max, int64_t emb_dim) {
    LUMEN_CHECK(l_max >= 2, "HyenaFilter", "l_max must be at least 2, got ", l_max);
    LUMEN_CHECK(emb_dim >= 3 && emb_dim % 2 == 1, "HyenaFilter",
                "emb_dim must be odd and >= 3 (t plus cos/sin bands), got ", emb_dim);
    int64_t bands = (emb_dim - 1) / 2;
    std::vector<double> t(static_cast<size_t>(l_max)), z(static_cast<size_t>(l_max * emb_dim));
    const double pi = 3.14159265358979323846;
    for (int64_t i = 0; i < l_max; ++i) {
        t[size_t(i)] = double(i) / double(l_max - 1);
        double w = 2.0 * pi * double(i) / double(l_max);
        double* row = &z[size_t(i * emb_dim)];
        row[0] = t[size_t(i)];
        for (int64_t b = 0; b < bands; ++b) {
            // linspace(1e-4, bands - 1, bands): a single band is 1e-4.
            double f = bands == 1 ? 1e-4 : 1e-4 + (double(bands - 1) - 1e-4) * b / (bands - 1);
            row[1 + b] = std::cos(f * w);
            row[1 + bands + b] = -std::sin(f * w);
        }
    }
    return {from_vector(t, {1, l_max, 1}).to(DType::float32),
            from_vector(z, {1, l_max, emb_dim}).to(DType::float32)};
}

Tensor hyena_decay_rates(int64_t d) {
    LUMEN_CHECK(d > 0, "HyenaFilter", "width must be positive, got ", d);
    // fast_decay_pct 0.3, slow_decay_pct 1.5, target 1e-2 (zoology's ExponentialModulation).
    double start = std::log(1e-2) / 1.5, end = std::log(1e-2) / 0.3;
    std::vector<double> v(static_cast<size_t>(d));
    for (int64_t i = 0; i < d; ++i)
        v[size_t(i)] = d == 1 ? start : start + (end - start) * i / (d - 1);
    return from_vector(v, {1, 1, d}).to(DType::float32);
}

Sin::Sin(int64_t dim, double w) : Module("Sin") {
    freq = register_parameter("freq", full({1, dim}, w));
}

Tensor Sin::forward(const Tensor& x) { return sin(mul(freq, x)); }

HyenaPositionalEmbedding::HyenaPositionalEmbedding(int64_t emb_dim, int64_t l_max)
    : Module("PositionalEmbedding") {
    auto [t_table, z_table] = hyena_positional_table(l_max, emb_dim);
    z = register_parameter("z", z_table);
    t = register_buffer("t", t_table);
}

ExponentialModulation::ExponentialModulation(int64_t d) : Module("ExponentialModulation") {
    deltas = register_buffer("deltas", hyena_decay_rates(d));
}

Tensor ExponentialModulation::forward(const Tensor& t, const Tensor& h) {
    return mul(h, exp(neg(mul(t, abs(deltas)))));
}

HyenaImplicitFilter::HyenaImplicitFilter(int64_t emb_dim, int64_t order, int64_t d,
                                         int64_t num_inner_mlps, double w)
    : Module("Sequential") {
    LUMEN_CHECK(num_inner_mlps >= 0, "HyenaFilter", "num_inner_mlps must be >= 0, got ",
                num_inner_mlps);
    linears.push_back(register_module("0", make<Linear>(emb_dim, order)));
    act = register_module("1", make<Sin>(order, w));
    for (int64_t i = 0; i < num_inner_mlps; ++i)
        linears.push_back(register_module(std::to_string(2 + 2 * i), make<Linear>(order, order)));
    linears.push_back(
        register_module(std::to_string(2 + 2 * num_inner_mlps), make<Linear>(order, d, false)));
}

Tensor HyenaImplicitFilter::forward(const Tensor& z) {
    Tensor h = z;
    for (size_t i = 0; i + 1 < linears.size(); ++i) h = act->forward(linears[i]->forward(h));
    return linears.back()->forward(h);
}

HyenaFilter::HyenaFilter(int64_t d_, int64_t order_, int64_t l_max_, int64_t emb_dim,
                         int64_t num_inner_mlps, double w)
    : Module("HyenaFilter"), d(d_), order(order_), l_max(l_max_) {
    LUMEN_CHECK(d > 0 && order > 0, "HyenaFilter", "d and order must be positive, got d ", d,
                ", order ", order);
    bias = register_parameter("bias", empty({d}));
    init::normal_(bias);
    pos_emb = register_module("pos_emb", make<HyenaPositionalEmbedding>(emb_dim, l_max));
    implicit_filter = register_module(
        "implicit_filter", make<HyenaImplicitFilter>(emb_dim, order, d, num_inner_mlps, w));
    modulation = register_module("modulation", make<ExponentialModulation>(d));
}

Tensor HyenaFilter::forward(int64_t length) {
    LUMEN_CHECK(length >= 1 && length <= l_max, "HyenaFilter",
                "length must be in [1, l_max = ", l_max, "], got ", length);
    Tensor z = pos_emb->z.narrow(1, 0, length), t = pos_emb->t.narrow(1, 0, length);
    Tensor h = modulation->forward(t, implicit_filter->forward(z));  // (1, L, d)
    return h.select(0, 0).transpose(0, 1);                           // (d, L)
}

std::string HyenaFilter::extra_repr() const {
    return "d=" + std::to_string(d) + ", order=" + std::to_string(order) +
           ", l_max=" + std::to_string(l_max);
}

HyenaOperator::HyenaOperator(int64_t d_model_, int64_t l_max_, int64_t filter_order,
                             int64_t num_heads_, int64_t short_filter_order_, double proj_p)
    : Attention("HyenaOperator"),
      d_model(d_model_),
      num_heads(num_heads_),
      l_max(l_max_),
      short_filter_order(short_filter_order_) {
    LUMEN_CHECK(d_model > 0 && num_heads > 0 && d_model % num_heads == 0, "HyenaOperator",
                "d_model ", d_model, " must be a positive multiple of num_heads ", num_heads);
    LUMEN_CHECK(short_filter_order > 0, "HyenaOperator",
                "short_filter_order must be positive, got ", short_filter_order);
    head_dim = d_model / num_heads;
    in_proj = register_module("in_proj", make<Linear>(d_model, 3 * d_model));
    out_proj = register_module("out_proj", make<Linear>(d_model, d_model));
    short_filter = register_module(
        "short_filter",
        make<Conv1d>(3 * d_model, 3 * d_model, std::vector<int64_t>{short_filter_order},
                     ConvOptions{.padding = {short_filter_order - 1}, .groups = 3 * d_model}));
    filter_fn = register_module("filter_fn", make<HyenaFilter>(head_dim, filter_order, l_max));
    if (proj_p > 0) proj_drop = register_module("proj_drop", make<Dropout>(proj_p));
}

Tensor HyenaOperator::forward(const Tensor& u, const AttentionContext& context) {
    LUMEN_CHECK(u.ndim() == 3 && u.size(2) == d_model, "HyenaOperator", "expects u (B, L, ",
                d_model, "), got shape ", u.shape());
    LUMEN_CHECK(!context.key_padding_mask.defined(), "HyenaOperator",
                "a key padding mask cannot be honoured by a long convolution");
    int64_t batch = u.size(0), length = u.size(1), hd = head_dim;
    LUMEN_CHECK(length >= 1 && length <= l_max, "HyenaOperator", "sequence length ", length,
                " must be in [1, l_max = ", l_max, "]");
    // Causal short filter: zero padding K-1 on both sides, keep the first L outputs.
    Tensor p = in_proj->forward(u).transpose(1, 2);  // (B, 3D, L)
    Tensor s = short_filter->forward(p).narrow(2, 0, length);
    Tensor heads = s.reshape({batch, num_heads, 3 * hd, length});  // per head [x1 | x2 | v]
    Tensor x1 = heads.narrow(2, 0, hd), x2 = heads.narrow(2, hd, hd);
    Tensor v = mul(heads.narrow(2, 2 * hd, hd), x1);
    Tensor y = mul(fftconv(v, filter_fn->forward(length), filter_fn->bias), x2);  // (B, H, hd, L)
    Tensor out = out_proj->forward(y.reshape({batch, d_model, length}).transpose(1, 2));
    return proj_drop ? proj_drop->forward(out) : out;
}

std::string HyenaOperator::extra_repr() const {
    return "d_model=" + std::to_string(d_model) + ", num_heads=" + std::to_string(num_heads) +
           ", l_max=" + std::to_string(l_max) +
           ", short_filter_order=" + std::to_string(short_filter_order);
}

std::shared_ptr<Attention> make_hyena_attention(const AttentionConfig& config) {
    check_attention_options(config, {"l_max", "filter_order", "short_filter_order"}, "hyena");
    LUMEN_CHECK(config.num_heads > 0 && config.dim % config.num_heads == 0, "hyena", "dim ",
                config.dim, " must be a positive multiple of num_heads ", config.num_heads);
    LUMEN_CHECK(config.head_dim < 0 || config.head_dim == config.dim / config.num_heads, "hyena",
                "head_dim must be dim / num_heads = ", config.dim / config.num_heads, ", got ",
                config.head_dim);
    LUMEN_CHECK(config.attn_drop == 0.0, "hyena",
                "has no attention map to drop: attn_drop must be 0, got ", config.attn_drop);
    return make<HyenaOperator>(config.dim, int64_t(config.option("l_max", 66000)),
                               int64_t(config.option("filter_order", 64)), config.num_heads,
                               int64_t(config.option("short_filter_order", 5)), config.proj_drop);
}

}  // namespace lumen::nn::attention
