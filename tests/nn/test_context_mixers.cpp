// The token mixers of the context-length study (Hooper & Xue): Hyena (tables against the oracle's
// initial values, a direct O(L^2) causal convolution as reference, causality, heads) and the
// MambaVision mixer and block (init, a separate-conv reference), float64 gradchecks, the
// registry entries, errors, and the oracle vectors.
#include <cmath>
#include <numbers>

#include "core/safetensors.h"
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

std::string oracle_file(const std::string& name) {
    return std::string(LUMEN_TEST_DATA) + "/oracle/context/" + name + ".safetensors";
}

// y[c, t] = sum_{s <= t} k[c, t - s] u[c, s] + bias[c] u[c, t] over the last dim of u
// (..., C, L), by an explicit lower-triangular Toeplitz matrix per channel.
Tensor direct_causal_conv(const Tensor& u, const Tensor& k, const Tensor& bias) {
    int64_t channels = k.size(0), length = k.size(1);
    std::vector<double> kv = k.contiguous().to_vector<double>();
    std::vector<double> toeplitz(size_t(channels * length * length), 0.0);
    for (int64_t c = 0; c < channels; ++c)
        for (int64_t t = 0; t < length; ++t)
            for (int64_t s = 0; s <= t; ++s)
                toeplitz[size_t((c * length + s) * length + t)] = kv[size_t(c * length + t - s)];
    Tensor matrix = from_vector(toeplitz, {channels, length, length});  // [c, s, t]
    Tensor y = matmul(u.unsqueeze(-2), matrix).squeeze(-2);
    return add(y, mul(u, bias.unsqueeze(-1)));
}

bool has_key(const nn::Module& m, const std::string& key) { return m.state_dict().count(key) > 0; }

}  // namespace

TEST_CASE("hyena: positional tables and decay rates are the oracle's initial values",
          "[nn][context][hyena]") {
    SafetensorsFile file = load_safetensors(oracle_file("hyena_filter"));
    nn::attention::HyenaFilter filter(6, 16, 64);  // the vector's d, order, l_max
    require_close(filter.pos_emb->z, file.tensors.at("p.pos_emb.z"), 1e-6, 1e-7);
    require_close(filter.pos_emb->t, file.tensors.at("b.pos_emb.t"), 1e-6, 1e-7);
    require_close(filter.modulation->deltas, file.tensors.at("b.modulation.deltas"), 1e-6, 1e-7);
    CHECK(filter.pos_emb->z.requires_grad());  // a parameter (zoology's code)
    // Three-band table: z = [t, cos(f w) x2, -sin(f w) x2], f = (1e-4, 1).
    auto [t, z] = nn::attention::hyena_positional_table(10, 5);
    std::vector<double> row = z.select(1, 3).contiguous().to_vector<double>();
    double w = 2.0 * std::numbers::pi * 3.0 / 10.0;
    require_close(from_vector(row),
                  {3.0 / 9.0, std::cos(1e-4 * w), std::cos(w), -std::sin(1e-4 * w), -std::sin(w)},
                  1e-6, 1e-7);
    require_error([] { nn::attention::hyena_positional_table(8, 4); }, {"[HyenaFilter]", "odd"});
}

TEST_CASE("hyena: the filter shares one Sin and keeps the reference's names",
          "[nn][context][hyena]") {
    nn::attention::HyenaOperator hyena(12, 40, 8, 3, 5);
    std::map<std::string, Tensor> state = hyena.state_dict();
    for (const char* key :
         {"in_proj.weight", "in_proj.bias", "out_proj.weight", "out_proj.bias",
          "short_filter.weight", "short_filter.bias", "filter_fn.bias", "filter_fn.pos_emb.z",
          "filter_fn.pos_emb.t", "filter_fn.implicit_filter.0.weight",
          "filter_fn.implicit_filter.1.freq", "filter_fn.implicit_filter.4.bias",
          "filter_fn.implicit_filter.6.weight", "filter_fn.modulation.deltas"})
        CHECK(state.count(key));
    CHECK(!state.count("filter_fn.implicit_filter.3.freq"));
    CHECK(!state.count("filter_fn.implicit_filter.6.bias"));
    CHECK(state.size() == 18);
    CHECK(state.at("short_filter.weight").shape() == Shape{36, 1, 5});
    CHECK(state.at("filter_fn.implicit_filter.6.weight").shape() == Shape{4, 8});
    CHECK(hyena.filter_fn->forward(17).shape() == Shape{4, 17});
    // One freq drives all three sines: scaling it changes the filter everywhere.
    CHECK(hyena.filter_fn->implicit_filter->act->freq.shape() == Shape{1, 8});
}

TEST_CASE("hyena: the operator equals a direct causal convolution, head by head",
          "[nn][context][hyena]") {
    nn::attention::HyenaOperator hyena(6, 16, 8, 2, 3);
    hyena.to(DType::float64);
    Tensor x = random_input({2, 11, 6}, 3);
    int64_t length = 11, hd = 3;
    Tensor p = linear(x, hyena.in_proj->weight, hyena.in_proj->bias).transpose(1, 2);
    Tensor s = conv1d(p, hyena.short_filter->weight, hyena.short_filter->bias, {1}, {2}, {1}, 18)
                   .narrow(2, 0, length);
    Tensor heads = s.reshape({2, 2, 3 * hd, length});
    Tensor v = mul(heads.narrow(2, 2 * hd, hd), heads.narrow(2, 0, hd));
    Tensor y = direct_causal_conv(v, hyena.filter_fn->forward(length), hyena.filter_fn->bias);
    y = mul(y, heads.narrow(2, hd, hd)).reshape({2, 6, length}).transpose(1, 2);
    Tensor want = linear(y, hyena.out_proj->weight, hyena.out_proj->bias);
    require_close(hyena.forward(x), want, 1e-10, 1e-12);
}

TEST_CASE("hyena: outputs never depend on later tokens", "[nn][context][hyena]") {
    nn::attention::HyenaOperator hyena(8, 32, 8, 2);
    Tensor x = random_input({1, 9, 8}, 4).to(DType::float32);
    Tensor changed = x.clone();
    changed.narrow(1, 6, 3).fill_(5.0);
    Tensor a = hyena.forward(x), b = hyena.forward(changed);
    require_close(b.narrow(1, 0, 6), a.narrow(1, 0, 6), 1e-6, 1e-7);
    CHECK(max(abs(sub(b.narrow(1, 6, 3), a.narrow(1, 6, 3)))).item<float>() > 1e-3);
}

TEST_CASE("hyena: gradients match finite differences", "[nn][context][hyena]") {
    nn::attention::HyenaOperator hyena(6, 12, 4, 3, 5);
    module_gradcheck(hyena, random_input({2, 7, 6}, 5));
    nn::attention::HyenaFilter filter(3, 4, 10);
    module_gradcheck(filter, [&](const std::vector<Tensor>&) { return filter.forward(9); }, {});
}

TEST_CASE("hyena: registry entry and errors", "[nn][context][hyena]") {
    nn::attention::AttentionConfig config{.type = "hyena", .dim = 16, .num_heads = 4};
    config.options = {{"l_max", 64}, {"filter_order", 8}};
    auto attention = nn::attention::make_attention(config);
    auto* hyena = dynamic_cast<nn::attention::HyenaOperator*>(attention.get());
    REQUIRE(hyena != nullptr);
    CHECK(hyena->head_dim == 4);
    CHECK(hyena->filter_fn->pos_emb->z.shape() == Shape{1, 64, 3});
    CHECK(attention->forward(ones({1, 64, 16})).shape() == Shape{1, 64, 16});
    require_error(
        [&] {
            attention->forward(ones({1, 65, 16}));
        },
        {"[HyenaOperator]", "65", "l_max = 64"});
    require_error([&] { attention->forward(ones({1, 5, 15})); }, {"[HyenaOperator]", "[1, 5, 15]"});
    nn::attention::AttentionContext masked;
    masked.key_padding_mask = zeros({1, 5}, DType::bool_);
    require_error(
        [&] {
            attention->forward(ones({1, 5, 16}), masked);
        },
        {"[HyenaOperator]", "padding mask"});
    config.options = {{"window", 3}};
    require_error([&] { nn::attention::make_attention(config); }, {"[hyena]", "window"});
    require_error([] { nn::attention::HyenaOperator(10, 32, 8, 3); },
                  {"[HyenaOperator]", "num_heads 3"});
}

TEST_CASE("mamba: parameter names, shapes and Mamba's initialisation", "[nn][context][mamba]") {
    nn::attention::MambaVisionMixer mixer(40, 8, 3, 1);
    CHECK(mixer.dt_rank == 3);  // ceil(40 / 16)
    std::map<std::string, Tensor> state = mixer.state_dict();
    CHECK(state.size() == 9);
    CHECK(state.at("in_proj.weight").shape() == Shape{40, 40});
    CHECK(state.at("x_proj.weight").shape() == Shape{19, 20});
    CHECK(state.at("dt_proj.weight").shape() == Shape{20, 3});
    CHECK(state.at("conv1d_x.weight").shape() == Shape{20, 1, 3});
    CHECK(state.at("out_proj.weight").shape() == Shape{40, 40});
    CHECK(!has_key(mixer, "in_proj.bias"));
    std::vector<float> a_log = mixer.A_log.to_vector<float>();
    CHECK(a_log[8 + 5] == Approx(std::log(6.0)));
    CHECK(sum(mixer.D).item<float>() == Approx(20.0));
    // softplus(bias) is the drawn dt, in [1e-3, 0.1].
    for (float dt : softplus(mixer.dt_proj->bias).to_vector<float>()) {
        CHECK(dt >= 1e-3f * 0.999f);
        CHECK(dt <= 0.1f * 1.001f);
    }
    double bound = 1.0 / std::sqrt(3.0);
    CHECK(max(abs(mixer.dt_proj->weight)).item<float>() <= bound);
}

TEST_CASE("mamba: the mixer equals the reference's separate-conv formulation",
          "[nn][context][mamba]") {
    nn::attention::MambaVisionMixer mixer(12, 4, 3, 1, 2);
    mixer.to(DType::float64);
    Tensor u = random_input({2, 9, 12}, 6);
    int64_t e = 6;
    Tensor xz = linear(u, mixer.in_proj->weight).transpose(1, 2);
    Tensor x =
        silu(conv1d(xz.narrow(1, 0, e), mixer.conv1d_x->weight, Tensor(), {1}, "same", {1}, e));
    Tensor z =
        silu(conv1d(xz.narrow(1, e, e), mixer.conv1d_z->weight, Tensor(), {1}, "same", {1}, e));
    Tensor x_dbl = linear(x.transpose(1, 2), mixer.x_proj->weight);
    Tensor dt = linear(x_dbl.narrow(2, 0, 2), mixer.dt_proj->weight, mixer.dt_proj->bias);
    // Delta = softplus(W dt + 2 b): the bias enters twice (as in the official code).
    Tensor delta = add(dt.transpose(1, 2), mixer.dt_proj->bias.unsqueeze(-1));
    Tensor y =
        selective_scan(x, delta, neg(exp(mixer.A_log)), x_dbl.narrow(2, 2, 4).transpose(1, 2),
                       x_dbl.narrow(2, 6, 4).transpose(1, 2), mixer.D, Tensor(), Tensor(), true);
    Tensor want = linear(cat({y, z}, 1).transpose(1, 2), mixer.out_proj->weight);
    require_close(mixer.forward(u), want, 1e-10, 1e-12);
}

TEST_CASE("mamba: gradients match finite differences", "[nn][context][mamba]") {
    nn::attention::MambaVisionMixer mixer(8, 4, 3, 1);
    module_gradcheck(mixer, random_input({2, 6, 8}, 7));
    nn::attention::MambaVisionBlock block(6, 2.0, 0.5);
    module_gradcheck(block, random_input({1, 5, 6}, 8));
}

TEST_CASE("mamba: block layer scale, registry entry and errors", "[nn][context][mamba]") {
    nn::attention::MambaVisionBlock plain(8);
    CHECK(!has_key(plain, "gamma_1"));
    CHECK(has_key(plain, "mlp.fc1.weight"));
    CHECK(plain.mlp->fc1->weight.shape() == Shape{32, 8});
    nn::attention::MambaVisionBlock scaled(8, 4.0, 0.5);
    CHECK(scaled.gamma_2.to_vector<float>()[3] == Approx(0.5));
    nn::attention::AttentionConfig config{.type = "mamba", .dim = 24, .num_heads = 3};
    config.options = {{"d_state", 4}, {"dt_rank", 5}};
    auto attention = nn::attention::make_attention(config);
    auto* mixer = dynamic_cast<nn::attention::MambaVisionMixer*>(attention.get());
    REQUIRE(mixer != nullptr);
    CHECK(mixer->dt_rank == 5);
    CHECK(mixer->x_proj->weight.shape() == Shape{13, 12});
    CHECK(attention->forward(ones({2, 10, 24})).shape() == Shape{2, 10, 24});
    require_error([] { nn::attention::MambaVisionMixer(7); }, {"[MambaVisionMixer]", "even", "7"});
    require_error(
        [&] {
            attention->forward(ones({2, 10, 12}));
        },
        {"[MambaVisionMixer]", "[2, 10, 12]"});
    nn::attention::AttentionContext causal;
    causal.causal = true;
    require_error(
        [&] {
            attention->forward(ones({1, 4, 24}), causal);
        },
        {"[MambaVisionMixer]", "causal"});
    config.options = {{"heads", 2}};
    require_error([&] { nn::attention::make_attention(config); }, {"[mamba]", "heads"});
}

TEST_CASE("hyena and mamba: proj_drop drops the output, attn_drop is refused",
          "[nn][context][hyena][mamba]") {
    for (const char* type : {"hyena", "mamba"}) {
        INFO(type);
        nn::attention::AttentionConfig config{.type = type, .dim = 8, .num_heads = 2};
        config.options = {{std::string(type) == "hyena" ? "l_max" : "d_state", 16}};
        // Without dropout the module is the reference's: no proj_drop child.
        auto plain = nn::attention::make_attention(config);
        for (const auto& [name, child] : plain->named_children()) CHECK(name != "proj_drop");
        config.proj_drop = 0.5;
        auto attention = nn::attention::make_attention(config);
        Tensor x = random_input({2, 16, 8}, 3).to(DType::float32);
        attention->eval();
        Tensor kept = attention->forward(x);
        attention->train();
        Tensor dropped = attention->forward(x);
        // Inverted dropout: each output is 0 or twice the eval output.
        std::vector<float> a = kept.to_vector<float>(), b = dropped.to_vector<float>();
        int64_t zeros = 0, others = 0;
        for (size_t i = 0; i < a.size(); ++i) {
            zeros += b[i] == 0.0f;
            others += b[i] != 0.0f && std::abs(b[i] - 2 * a[i]) > 1e-5 * (1 + std::abs(a[i]));
        }
        CHECK(others == 0);
        CHECK(zeros > 0);
        CHECK(zeros < int64_t(a.size()));
        config.attn_drop = 0.1;
        require_error([&] { nn::attention::make_attention(config); },
                      {"[" + std::string(type) + "]", "attention map", "attn_drop", "0.1"});
    }
}

TEST_CASE("context mixers match the oracle vectors", "[nn][context][oracle]") {
    require_oracle_vectors({"hyena_filter", "hyena_operator_h1", "hyena_operator_h3",
                            "mamba_mixer_d12", "mamba_mixer_d40", "mambavision_block"},
                           "context");
}
