// The attentions of the DGSA paper and its baselines (MHSA, MultiheadDiffAttn, MultiheadDGSA) and
// RoPE: head-by-head references at sizes other than the vectors', float64 gradchecks, key-padding
// and causal semantics, lambda_init by layer, the constant-gate equivalence of DGSA and Diff, the
// registry and the error messages. The oracle vectors themselves run in test_blocks_diff.cpp.
#include <algorithm>
#include <cmath>

#include "diff_testing.h"
#include "nn/attention/dgsa.h"
#include "nn/attention/diff_attn.h"
#include "nn/attention/mhsa.h"
#include "nn/rope.h"

using namespace lumen;
using namespace lumen::testing;
using namespace lumen::testing::diff_check;

namespace {

nn::attention::AttentionContext masked(const Tensor& mask) { return {.key_padding_mask = mask}; }

// Outputs of queries 0..keep-1 of sample b on the full input vs on the input cut to `keep`
// tokens: equal when the removed keys are masked (padding) or in the future (causal).
void require_prefix_independent(nn::attention::Attention& attn, const Tensor& x, int64_t b,
                                int64_t keep, const nn::attention::AttentionContext& full_context,
                                bool causal) {
    Tensor full = attn.forward(x, full_context).select(0, b).narrow(0, 0, keep);
    Tensor cut = x.select(0, b).narrow(0, 0, keep).unsqueeze(0);
    nn::attention::AttentionContext cut_context{.causal = causal};
    require_close(attn.forward(cut, cut_context).select(0, 0), full, 1e-10, 1e-12);
}

}  // namespace

TEST_CASE("MHSA: timm layout, equal to a head-by-head reference, float64 gradients",
          "[nn][attention][diff]") {
    nn::attention::MHSA attn(20, 5);
    CHECK(attn.head_dim == 4);
    CHECK(attn.qkv->weight.shape() == Shape{60, 20});
    CHECK(attn.state_dict().count("proj.bias") == 1);
    attn.to(DType::float64);
    Tensor x = random_input({3, 6, 20}, 1);
    Tensor mask = padding_mask(6, {6, 4, 1});
    require_close(attn.forward(x), reference_mhsa(attn, x, Tensor()), 1e-10, 1e-12);
    require_close(attn.forward(x, masked(mask)), reference_mhsa(attn, x, mask), 1e-10, 1e-12);
    nn::attention::AttentionContext causal{.causal = true};
    require_close(attn.forward(x, causal), reference_mhsa(attn, x, Tensor(), true), 1e-10, 1e-12);
    // A single token attends to itself only: y = proj(v).
    Tensor one = random_input({2, 1, 20}, 2);
    Tensor v = linear(one, attn.qkv->weight, attn.qkv->bias).narrow(-1, 40, 20);
    require_close(attn.forward(one), linear(v, attn.proj->weight, attn.proj->bias), 1e-10, 1e-12);

    nn::attention::MHSA small(6, 2);
    Tensor mask2 = padding_mask(4, {4, 2});
    module_gradcheck(
        small, [&](const std::vector<Tensor>& in) { return small.forward(in[0], masked(mask2)); },
        {random_input({2, 4, 6}, 3)});
}

TEST_CASE("MHSA: padded keys and future keys do not reach other outputs", "[nn][attention][diff]") {
    nn::attention::MHSA attn(12, 3);
    attn.to(DType::float64);
    Tensor x = random_input({2, 7, 12}, 4);
    Tensor mask = padding_mask(7, {7, 4});
    require_prefix_independent(attn, x, 1, 4, masked(mask), false);
    nn::attention::AttentionContext causal{.causal = true};
    require_prefix_independent(attn, x, 0, 3, causal, true);
    nn::attention::MHSA built_causal(12, 3, -1, true, 0.0, 0.0, true);
    built_causal.to(DType::float64);
    require_prefix_independent(built_causal, x, 0, 5, {}, true);
    // Changing a padded token changes its own output only.
    Tensor changed = x.clone();
    changed.select(0, 1).select(0, 5).copy_(random_input({12}, 5));
    Tensor before = attn.forward(x, masked(mask)), after = attn.forward(changed, masked(mask));
    require_close(after.select(0, 1).narrow(0, 0, 5), before.select(0, 1).narrow(0, 0, 5), 0,
                  1e-14);
    require_close(after.select(0, 0), before.select(0, 0), 0, 0);
}

TEST_CASE("MHSA: store_attn keeps the softmax map; errors name the module and shapes",
          "[nn][attention][diff]") {
    nn::attention::MHSA attn(8, 2);
    attn.store_attn = true;
    attn.forward(random_input({2, 5, 8}, 6).to(DType::float32));
    CHECK(attn.last_attn.shape() == Shape{2, 2, 5, 5});
    require_close(sum(attn.last_attn, {-1}), ones({2, 2, 5}), 1e-6, 1e-6);
    require_error([&] { attn.forward(ones({2, 5, 7})); }, {"[MHSA]", "[2, 5, 7]", "(B, N, 8)"});
    require_error([&] { attn.forward(ones({5, 8})); }, {"[MHSA]", "[5, 8]"});
    require_error(
        [&] {
            attn.forward(ones({2, 5, 8}), masked(ones({2, 5})));
        },
        {"[MHSA]", "key_padding_mask", "float32"});
    require_error(
        [&] {
            attn.forward(ones({2, 5, 8}), masked(padding_mask(4, {4, 4})));
        },
        {"[MHSA]", "key_padding_mask", "[2, 4]"});
    require_error([] { nn::attention::MHSA bad(10, 3); }, {"[MHSA]", "10", "num_heads 3"});
}

TEST_CASE("diff: lambda_init follows 0.8 - 0.6 exp(-0.3 l) for layers 0..7",
          "[nn][attention][diff]") {
    const double want[] = {0.2, 0.35551, 0.47071, 0.55606, 0.61928, 0.66612, 0.70082, 0.72653};
    for (int64_t l = 0; l < 8; ++l) {
        CHECK(std::abs(nn::attention::diff_lambda_init(l) - want[l]) < 5e-6);
        nn::attention::MultiheadDiffAttn attn(8, 2, {.layer_index = l});
        CHECK(attn.lambda_init == nn::attention::diff_lambda_init(l));
    }
    nn::attention::MultiheadDiffAttn fixed(8, 2, {.layer_index = 3, .lambda_init = 0.5});
    CHECK(fixed.lambda_init == 0.5);
    require_error([] { nn::attention::diff_lambda_init(-1); }, {"[diff]", "-1"});
}

TEST_CASE("MultiheadDiffAttn: equals the explicit P1 - lambda P2 reference, float64 gradients",
          "[nn][attention][diff]") {
    nn::attention::MultiheadDiffAttn attn(30, 3, {.layer_index = 4});  // d = 5: odd head dim
    CHECK(attn.head_dim == 5);
    CHECK(attn.lambda_q1.shape() == Shape{5});
    CHECK(attn.subln->weight.shape() == Shape{10});
    CHECK(attn.named_parameters().size() == 9);  // 4 projections, 4 lambdas, subln
    attn.to(DType::float64);
    Tensor x = random_input({2, 9, 30}, 7);
    Tensor mask = padding_mask(9, {5, 9});
    require_close(attn.forward(x), reference_diff(attn, x, Tensor()), 1e-10, 1e-12);
    require_close(attn.forward(x, masked(mask)), reference_diff(attn, x, mask), 1e-10, 1e-12);
    nn::attention::AttentionContext causal{.causal = true};
    require_close(attn.forward(x, causal), reference_diff(attn, x, Tensor(), true), 1e-10, 1e-12);
    // store_attn: the fused map, whose rows sum to 1 - lambda.
    attn.store_attn = true;
    attn.forward(x);
    double lambda = attn.lambda_full().item<double>();
    require_close(sum(attn.last_attn, {-1}), full({2, 3, 9}, 1.0 - lambda, DType::float64), 1e-10,
                  1e-12);
    // The fused-map path (attn_drop in training, p tiny) equals the two-product path.
    nn::attention::MultiheadDiffAttn dropping(30, 3, {.layer_index = 4, .attn_drop = 1e-12});
    dropping.to(DType::float64);
    dropping.load_state_dict(attn.state_dict());
    require_close(dropping.forward(x, masked(mask)), attn.forward(x, masked(mask)), 1e-9, 1e-12);

    nn::attention::MultiheadDiffAttn small(8, 2, {.layer_index = 1});
    Tensor mask2 = padding_mask(4, {3, 4});
    module_gradcheck(
        small, [&](const std::vector<Tensor>& in) { return small.forward(in[0], masked(mask2)); },
        {random_input({2, 4, 8}, 8)});
}

TEST_CASE("MultiheadDiffAttn: causal + RoPE keeps the future out and is gradient-correct",
          "[nn][attention][diff]") {
    nn::attention::MultiheadDiffAttn attn(16, 2, {.layer_index = 2, .causal = true, .rope = true});
    attn.to(DType::float64);
    Tensor x = random_input({2, 8, 16}, 9);
    // RoPE uses absolute positions 0..N-1, so a prefix sees the same angles.
    require_prefix_independent(attn, x, 1, 5, {}, true);
    nn::attention::MultiheadDiffAttn small(8, 1, {.causal = true, .rope = true});
    module_gradcheck(small, [&](const std::vector<Tensor>& in) { return small.forward(in[0]); },
                     {random_input({1, 5, 8}, 10)});
    require_error([] { nn::attention::MultiheadDiffAttn odd(12, 2, {.rope = true}); },
                  {"[MultiheadDiffAttn]", "RoPE", "3"});
    require_error([] { nn::attention::MultiheadDiffAttn bad(12, 4); },
                  {"[MultiheadDiffAttn]", "2 * num_heads", "12", "4"});
    require_error(
        [&] {
            attn.forward(ones({2, 8, 15}, DType::float64));
        },
        {"[MultiheadDiffAttn]", "[2, 8, 15]"});
}

TEST_CASE("RoPE: tables, pair rotation, relative positions and the inverse rotation",
          "[nn][attention][diff]") {
    std::pair<Tensor, Tensor> tables = nn::rope_cos_sin(6, 8, 10000.0, DType::float64);
    Tensor cos = tables.first, sin = tables.second;
    CHECK(cos.shape() == Shape{6, 4});
    CHECK(std::abs(cos.at<double>({3, 1}) - std::cos(3.0 * std::pow(10000.0, -2.0 / 8))) < 1e-15);
    CHECK(std::abs(sin.at<double>({5, 3}) - std::sin(5.0 * std::pow(10000.0, -6.0 / 8))) < 1e-15);
    Tensor x = random_input({2, 6, 3, 8}, 11);
    Tensor y = nn::apply_rope_interleaved(x, cos, sin);
    // Token 0 is not rotated; every pair keeps its length.
    require_close(y.select(1, 0), x.select(1, 0), 0, 1e-15);
    auto pair_norms = [](const Tensor& t) { return sum(square(t.view({2, 6, 3, 4, 2})), {-1}); };
    require_close(pair_norms(y), pair_norms(x), 1e-12, 1e-14);
    // Rotating back by -angle (sin negated) restores x.
    require_close(nn::apply_rope_interleaved(y, cos, neg(sin)), x, 1e-12, 1e-14);
    // q.k after RoPE depends on positions only through their difference.
    Tensor q = random_input({8}, 12), k = random_input({8}, 13);
    auto rotated_dot = [&](int64_t m, int64_t n) {
        Tensor qs = zeros({1, 6, 1, 8}, DType::float64), ks = zeros({1, 6, 1, 8}, DType::float64);
        qs.select(1, m).select(1, 0).copy_(q);
        ks.select(1, n).select(1, 0).copy_(k);
        Tensor rq = nn::apply_rope_interleaved(qs, cos, sin).select(1, m).select(1, 0);
        Tensor rk = nn::apply_rope_interleaved(ks, cos, sin).select(1, n).select(1, 0);
        return sum(mul(rq, rk)).item<double>();
    };
    CHECK(std::abs(rotated_dot(1, 3) - rotated_dot(2, 4)) < 1e-12);
    CHECK(std::abs(rotated_dot(5, 2) - rotated_dot(3, 0)) < 1e-12);
    CHECK(std::abs(rotated_dot(1, 3) - rotated_dot(1, 4)) > 1e-6);
    gradcheck(
        [&](const std::vector<Tensor>& in) { return nn::apply_rope_interleaved(in[0], cos, sin); },
        {random_input({1, 6, 2, 8}, 14)});
    require_error([] { nn::rope_cos_sin(4, 5); }, {"[rope]", "rot_dim 5"});
    require_error(
        [&] {
            nn::apply_rope_interleaved(random_input({1, 5, 2, 8}), cos, sin);
        },
        {"[rope]", "(5, 4)", "[6, 4]"});
}

TEST_CASE("MultiheadDGSA: equals Algorithm 1 head by head, with and without the Q residual",
          "[nn][attention][diff]") {
    nn::attention::MultiheadDGSA attn(28, 2, {.q_residual = true});  // d = 7
    CHECK(attn.gate_proj->weight.shape() == Shape{2, 28});
    CHECK(attn.gate_proj->bias.shape() == Shape{2});
    CHECK(attn.lambda_init == 0.8);
    attn.to(DType::float64);
    Tensor x = random_input({3, 6, 28}, 15);
    Tensor mask = padding_mask(6, {6, 2, 4});
    require_close(attn.forward(x, masked(mask)), reference_dgsa(attn, x, mask), 1e-10, 1e-12);
    nn::attention::AttentionContext causal{.causal = true};
    require_close(attn.forward(x, causal), reference_dgsa(attn, x, Tensor(), true), 1e-10, 1e-12);
    // The residual adds exactly x Wq^T.
    Tensor with = attn.forward(x);
    attn.options.q_residual = false;
    require_close(sub(with, attn.forward(x)), linear(x, attn.q_proj->weight), 1e-10, 1e-12);
    // Rows of the fused map sum to 2 g - 1.
    attn.store_attn = true;
    attn.forward(x);
    Tensor g = sigmoid(attn.gate_proj->forward(x)).transpose(1, 2);  // (B, nh, N)
    require_close(sum(attn.last_attn, {-1}), sub(mul(g, 2.0), 1.0), 1e-10, 1e-12);
    nn::attention::MultiheadDGSA schedule(8, 2, {.layer_index = 3, .lambda_schedule = true});
    CHECK(schedule.lambda_init == nn::attention::diff_lambda_init(3));
    require_error([] { nn::attention::MultiheadDGSA bad(10, 2); }, {"[MultiheadDGSA]", "10"});
}

TEST_CASE("MultiheadDGSA: float64 gradients with mask, residual and the fused-map path",
          "[nn][attention][diff]") {
    nn::attention::MultiheadDGSA attn(8, 2, {.q_residual = true});
    Tensor mask = padding_mask(5, {5, 3});
    module_gradcheck(
        attn, [&](const std::vector<Tensor>& in) { return attn.forward(in[0], masked(mask)); },
        {random_input({2, 5, 8}, 16)});
    nn::attention::MultiheadDGSA dropping(8, 2, {.q_residual = true, .attn_drop = 1e-12});
    dropping.to(DType::float64);
    dropping.load_state_dict(attn.state_dict());
    Tensor x = random_input({2, 5, 8}, 17);
    require_close(dropping.forward(x, masked(mask)), attn.forward(x, masked(mask)), 1e-9, 1e-12);
}

TEST_CASE("MultiheadDGSA with a constant gate c is MultiheadDiffAttn with lambda = (1-c)/c",
          "[nn][attention][diff]") {
    // g A+ - (1-g) A- = c (A1 - (1-c)/c A2), and RMSNorm with eps 0 ignores the factor c.
    const double c = 0.7;
    nn::attention::MultiheadDGSA dgsa(
        12, 3, {.layer_index = 2, .lambda_schedule = true, .subln_eps = 0.0});
    nn::attention::MultiheadDiffAttn diff(12, 3, {.layer_index = 2, .subln_eps = 0.0});
    dgsa.to(DType::float64);
    diff.to(DType::float64);
    randomize(dgsa, 18);
    {
        NoGradGuard no_grad;
        dgsa.gate_proj->weight.zero_();
        dgsa.gate_proj->bias.fill_(std::log(c / (1.0 - c)));
        for (const char* name :
             {"q_proj.weight", "k_proj.weight", "v_proj.weight", "out_proj.weight", "subln.weight"})
            diff.tensor(name).copy_(dgsa.tensor(name));
        // lambda = exp(s1) - exp(0) + lambda_init = (1 - c) / c.
        double s1 = std::log((1.0 - c) / c + 1.0 - diff.lambda_init);
        diff.lambda_q1.fill_(0.0);
        diff.lambda_k1.fill_(0.0);
        diff.lambda_q1.select(0, 0).fill_(1.0);
        diff.lambda_k1.select(0, 0).fill_(s1);
        diff.lambda_q2.fill_(0.0);
    }
    CHECK(std::abs(diff.lambda_full().item<double>() - (1.0 - c) / c) < 1e-14);
    Tensor x = random_input({2, 7, 12}, 19);
    Tensor mask = padding_mask(7, {7, 5});
    require_close(dgsa.forward(x, masked(mask)), diff.forward(x, masked(mask)), 1e-9, 1e-12);
}

TEST_CASE("attention registry: mhsa, diff and dgsa by name, options and errors",
          "[nn][attention][diff]") {
    std::vector<std::string> names = nn::attention::attention_names();
    for (const char* name : {"mhsa", "diff", "dgsa"})
        CHECK(std::find(names.begin(), names.end(), name) != names.end());
    auto mhsa = nn::attention::make_attention(
        {.type = "mhsa", .dim = 16, .num_heads = 4, .options = {{"causal", 1.0}}});
    CHECK(mhsa->type_name() == "MHSA");
    CHECK(static_cast<nn::attention::MHSA&>(*mhsa).causal);
    auto diff = nn::attention::make_attention(
        {.type = "diff", .dim = 16, .num_heads = 2, .layer_index = 5, .options = {{"rope", 1.0}}});
    auto& diff_ref = static_cast<nn::attention::MultiheadDiffAttn&>(*diff);
    CHECK(diff_ref.lambda_init == nn::attention::diff_lambda_init(5));
    CHECK(diff_ref.options.rope);
    CHECK(diff->state_dict().count("lambda_k2") == 1);
    auto dgsa =
        nn::attention::make_attention({.type = "dgsa",
                                       .dim = 16,
                                       .num_heads = 2,
                                       .layer_index = 3,
                                       .options = {{"q_residual", 1.0}, {"lambda_init", 0.5}}});
    auto& dgsa_ref = static_cast<nn::attention::MultiheadDGSA&>(*dgsa);
    CHECK(dgsa_ref.options.q_residual);
    CHECK(dgsa_ref.lambda_init == 0.5);
    CHECK(dgsa->forward(ones({1, 3, 16})).shape() == Shape{1, 3, 16});
    require_error([] { nn::attention::make_attention({.type = "softmaxx", .dim = 8}); },
                  {"[attention]", "softmaxx", "dgsa", "diff", "mhsa"});
    require_error(
        [] {
            nn::attention::make_attention(
                {.type = "dgsa", .dim = 8, .num_heads = 2, .options = {{"gate", 1}}});
        },
        {"[dgsa]", "unknown option 'gate'", "q_residual"});
    // head_dim may be -1, the channels of a head (2d) or the official d; nothing else.
    for (int64_t head_dim : {-1, 8, 4})
        CHECK(nn::attention::make_attention(
                  {.type = "diff", .dim = 16, .num_heads = 2, .head_dim = head_dim})
                  ->forward(ones({1, 2, 16}))
                  .shape() == Shape{1, 2, 16});
    require_error(
        [] {
            nn::attention::make_attention(
                {.type = "dgsa", .dim = 16, .num_heads = 2, .head_dim = 6});
        },
        {"[dgsa]", "head_dim", "8", "6"});
}
