// The attentions of Khader et al. (vitpt_softmax, seqnorm, vitpt_sima) and the official SimA
// attention: registry, parameter names, independent references written with plain ops in the
// straightforward (N x N) order, float64 gradchecks, the equality of SimA's two products, linear
// memory at N = 20000, and the error messages.
#include <chrono>
#include <cmath>

#include "nn/attention/prenorm_softmax_attention.h"
#include "nn/attention/seqnorm_attention.h"
#include "nn/attention/sima_attention.h"
#include "nn/attention/vitpt_sima_attention.h"
#include "nn/init.h"
#include "sfree_testing.h"

using namespace lumen;
using namespace lumen::testing;
using nn::attention::PreNormAttentionOptions;

namespace {

// Every parameter to random values, so gamma = 1 / beta = 0 hide nothing.
void randomize(nn::Module& m, uint64_t seed) {
    Generator generator(seed);
    for (auto& [name, p] : m.named_parameters()) nn::init::uniform_(p, -0.8, 0.8, &generator);
}

PreNormAttentionOptions frame(int64_t heads, int64_t dim_head) {
    return {.heads = heads, .dim_head = dim_head};
}

// (X - mean_n) / sqrt(var_n + eps) * gamma + beta over dim 1 of (B, N, D), from reductions.
Tensor seq_norm_reference(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps) {
    Tensor centered = sub(x, mean(x, {1}, true));
    Tensor var = mean(mul(centered, centered), {1}, true);
    return add(mul(div(centered, sqrt(add(var, eps))), gamma), beta);
}

Tensor l1_reference(const Tensor& x, double eps) {
    return div(x, clamp(sum(abs(x), {1}, true), eps, std::nullopt));
}

// The frame computed head by head from the module's tensors; `kind` picks the mix, always in
// the N x N order: 0 softmax, 1 seqnorm, 2 SimA.
Tensor frame_reference(nn::attention::PreNormAttention& m, const Tensor& x, int kind) {
    Tensor u = layer_norm(x, {m.dim}, m.norm->weight, m.norm->bias, 1e-5);
    Tensor qkv = linear(u, m.to_qkv->weight, m.to_qkv->bias);
    int64_t d = m.dim_head, inner = m.inner_dim, n = x.size(1);
    Tensor q = qkv.narrow(2, 0, inner), k = qkv.narrow(2, inner, inner);
    Tensor v = qkv.narrow(2, 2 * inner, inner);
    if (kind == 1) {
        auto& s = dynamic_cast<nn::attention::SeqNormAttention&>(m);
        q = seq_norm_reference(q, s.q_norm->weight, s.q_norm->bias, 1e-5);
        k = seq_norm_reference(k, s.k_norm->weight, s.k_norm->bias, 1e-5);
        v = seq_norm_reference(v, s.v_norm->weight, s.v_norm->bias, 1e-5);
    }
    std::vector<Tensor> heads;
    for (int64_t h = 0; h < m.heads; ++h) {
        Tensor qh = q.narrow(2, h * d, d), kh = k.narrow(2, h * d, d), vh = v.narrow(2, h * d, d);
        Tensor scores;
        if (kind == 0)
            scores = softmax(div(matmul(qh, kh.transpose(1, 2)), std::sqrt(double(d))), -1);
        if (kind == 1) scores = div(matmul(qh, kh.transpose(1, 2)), double(n));
        if (kind == 2)
            scores = matmul(l1_reference(qh, 1e-12), l1_reference(kh, 1e-12).transpose(1, 2));
        heads.push_back(matmul(scores, vh));
    }
    return linear(cat(heads, 2), m.to_out->tensor("0.weight"), m.to_out->tensor("0.bias"));
}

}  // namespace

TEST_CASE("sfree attentions are registered under their names with vit-pytorch's parameters",
          "[nn][sfree][attention]") {
    for (const char* name : {"vitpt_softmax", "seqnorm", "vitpt_sima", "sima"}) {
        auto names = nn::attention::attention_names();
        CHECK(std::find(names.begin(), names.end(), name) != names.end());
    }
    nn::attention::AttentionConfig config{.type = "seqnorm",
                                          .dim = 12,
                                          .num_heads = 3,
                                          .head_dim = 5,
                                          .qkv_bias = false,
                                          .options = {{"eps", 1e-3}}};
    auto seqnorm = nn::attention::make_attention(config);
    std::vector<std::string> keys;
    for (auto& [key, value] : seqnorm->state_dict()) keys.push_back(key);
    CHECK(keys == std::vector<std::string>{"k_norm.bias", "k_norm.weight", "norm.bias",
                                           "norm.weight", "q_norm.bias", "q_norm.weight",
                                           "to_out.0.bias", "to_out.0.weight", "to_qkv.weight",
                                           "v_norm.bias", "v_norm.weight"});
    CHECK(seqnorm->tensor("to_qkv.weight").shape() == Shape{45, 12});
    CHECK(seqnorm->tensor("to_out.0.weight").shape() == Shape{12, 15});
    CHECK(dynamic_cast<nn::attention::SeqNormAttention&>(*seqnorm).q_norm->eps == 1e-3);
    config.type = "vitpt_softmax";
    config.options.clear();
    CHECK(nn::attention::make_attention(config)->num_parameters() == 24 + 45 * 12 + 12 * 15 + 12);
    config.type = "vitpt_sima";
    CHECK(nn::attention::make_attention(config)->num_parameters() == 24 + 45 * 12 + 12 * 15 + 12);
    // heads == 1 and dim_head == dim: vit-pytorch drops to_out
    nn::attention::PreNormSoftmaxAttention single(8, frame(1, 8));
    CHECK(single.num_parameters() == 16 + 24 * 8);
    nn::attention::AttentionConfig official{
        .type = "sima", .dim = 16, .num_heads = 4, .qkv_bias = true};
    CHECK(nn::attention::make_attention(official)->tensor("qkv.bias").shape() == Shape{48});
}

TEST_CASE("sfree attentions match head-by-head references in the N x N order",
          "[nn][sfree][attention]") {
    struct Case {
        int64_t batch, tokens, dim, heads, dim_head;
    };
    for (Case c : {Case{2, 9, 10, 3, 4}, Case{3, 3, 16, 2, 8}, Case{1, 21, 6, 1, 5}}) {
        INFO("N " << c.tokens << ", d " << c.dim_head);
        Tensor x = random_input({c.batch, c.tokens, c.dim}, 7, -2, 2).to(DType::float32);
        nn::attention::PreNormSoftmaxAttention soft(c.dim, frame(c.heads, c.dim_head));
        nn::attention::SeqNormAttention seq(c.dim, frame(c.heads, c.dim_head));
        nn::attention::PreNormSimAAttention sima(c.dim, frame(c.heads, c.dim_head));
        nn::attention::PreNormAttention* modules[] = {&soft, &seq, &sima};
        for (int kind = 0; kind < 3; ++kind) {
            randomize(*modules[kind], 10 + uint64_t(kind));
            require_close(modules[kind]->forward(x), frame_reference(*modules[kind], x, kind), 1e-4,
                          1e-5);
        }
    }
}

TEST_CASE("sfree attentions: float64 gradients match finite differences",
          "[nn][sfree][attention][gradcheck]") {
    Tensor x = random_input({2, 5, 6}, 3, -1.5, 1.5);
    nn::attention::PreNormSoftmaxAttention soft(6, frame(2, 4));
    nn::attention::SeqNormAttention seq(6, frame(2, 4));
    nn::attention::PreNormSimAAttention sima_long(6, frame(2, 3));   // N >= d: Q (K^T V)
    nn::attention::PreNormSimAAttention sima_short(6, frame(1, 7));  // N < d: (Q K^T) V
    nn::attention::SimA official(6, 2, true);
    nn::Module* modules[] = {&soft, &seq, &sima_long, &sima_short, &official};
    for (size_t i = 0; i < 5; ++i) {
        INFO(modules[i]->type_name() << " #" << i);
        randomize(*modules[i], 20 + i);
        modules[i]->to(DType::float64);
        module_gradcheck(*modules[i],
                         [&](const std::vector<Tensor>& in) { return modules[i]->forward(in[0]); },
                         {x});
    }
}

TEST_CASE("SimA: (Q K^T) V and Q (K^T V) give the same values and gradients",
          "[nn][sfree][attention][sima]") {
    using nn::attention::SimAOrder;
    for (int64_t tokens : {3, 12}) {
        INFO("N " << tokens);
        Tensor q = random_input({1, 2, tokens, 8}, 1), k = random_input({1, 2, tokens, 8}, 2);
        Tensor v = random_input({1, 2, tokens, 8}, 3);
        for (SimAOrder order : {SimAOrder::qk_first, SimAOrder::kv_first}) {
            gradcheck(
                [&](const std::vector<Tensor>& in) {
                    return nn::attention::sima_mix(in[0], in[1], in[2], order);
                },
                {q, k, v});
        }
        require_close(nn::attention::sima_mix(q, k, v, SimAOrder::qk_first),
                      nn::attention::sima_mix(q, k, v, SimAOrder::kv_first), 1e-12, 1e-13);
        // the module with each order: same output and parameter gradients (float32)
        Tensor x = random_input({2, tokens, 16}, 4).to(DType::float32);
        nn::attention::SimA a(16, 2, true), b(16, 2, true);
        b.load_state_dict(a.state_dict());
        a.order = SimAOrder::qk_first;
        b.order = SimAOrder::kv_first;
        Tensor ya = a.forward(x), yb = b.forward(x);
        require_close(ya, yb, 1e-5, 1e-6);
        sum(mul(ya, ya)).backward();
        sum(mul(yb, yb)).backward();
        require_close(a.qkv->weight.grad(), b.qkv->weight.grad(), 1e-4, 1e-5);
    }
}

TEST_CASE("seqnorm and SimA stay linear in N: 20000 tokens in little memory and time",
          "[nn][sfree][attention][memory]") {
    // Structurally: seqnorm always forms K^T V (d x d) and SimA does so whenever N >= d, so the
    // largest intermediate is (B, N, 3D). An N x N float matrix per head would be 1.6 GB here.
    const int64_t tokens = 20000;
    Tensor x = random_input({1, tokens, 16}, 5).to(DType::float32);
    nn::attention::SeqNormAttention seq(16, frame(2, 8));
    nn::attention::PreNormSimAAttention sima(16, frame(2, 8));
    nn::attention::SimA official(16, 2);
    bool can_measure = sfree::reset_peak_rss();
    int64_t before = sfree::proc_status_kb("VmRSS");
    auto start = std::chrono::steady_clock::now();
    for (nn::attention::Attention* m :
         std::vector<nn::attention::Attention*>{&seq, &sima, &official}) {
        Tensor y = m->forward(x);
        CHECK(y.shape() == Shape{1, tokens, 16});
        sum(y).backward();
    }
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK(seconds < 20.0);
    if (can_measure && before > 0) {
        int64_t grown_mb = (sfree::proc_status_kb("VmHWM") - before) / 1024;
        INFO("peak RSS grew by " << grown_mb << " MB");
        CHECK(grown_mb < 200);
    } else {
        WARN("peak RSS not measurable here (no /proc/self/clear_refs)");
    }
}

TEST_CASE("sfree attentions: errors name the module and the offending values",
          "[nn][sfree][attention][errors]") {
    nn::attention::SeqNormAttention seq(12, frame(3, 5));
    require_error([&] { seq.forward(ones({2, 7, 10})); }, {"[SeqNormAttention]", "[2, 7, 10]"});
    require_error([&] { seq.forward(ones({7, 12})); }, {"[SeqNormAttention]", "[7, 12]"});
    nn::attention::AttentionContext causal;
    causal.causal = true;
    require_error([&] { seq.forward(ones({1, 3, 12}), causal); }, {"[SeqNormAttention]", "causal"});
    nn::attention::PreNormSimAAttention sima(12, frame(3, 5));
    nn::attention::AttentionContext masked;
    masked.key_padding_mask = zeros({1, 3}, DType::bool_);
    require_error(
        [&] {
            sima.forward(ones({1, 3, 12}), masked);
        },
        {"[PreNormSimAAttention]", "mask"});
    nn::attention::SimA official(16, 4);
    require_error([&] { official.forward(ones({2, 5, 12})); }, {"[SimA]", "[2, 5, 12]"});
    require_error([] { nn::attention::SimA bad(10, 4); }, {"[SimA]", "num_heads 4"});
    require_error(
        [] {
            nn::attention::SeqNormAttention bad(8, {.heads = 2, .dim_head = 4, .attn_drop = 0.1});
        },
        {"[SeqNormAttention]", "attn_drop"});
    require_error([] { nn::attention::PreNormSoftmaxAttention bad(8, frame(0, 4)); },
                  {"[PreNormSoftmaxAttention]", "heads 0"});
    nn::attention::AttentionConfig config{.type = "seqnorm", .dim = 8, .num_heads = 3};
    require_error([&] { nn::attention::make_attention(config); },
                  {"[seqnorm]", "dim 8", "num_heads 3"});
    config = {.type = "vitpt_softmax", .dim = 8, .num_heads = 2, .options = {{"eps", 1e-3}}};
    require_error([&] { nn::attention::make_attention(config); },
                  {"[vitpt_softmax]", "unknown option 'eps'"});
    require_error(
        [] {
            nn::attention::sima_qkv_attention(ones({1, 4, 10}), 3);
        },
        {"[sima]", "[1, 4, 10]"});
}
