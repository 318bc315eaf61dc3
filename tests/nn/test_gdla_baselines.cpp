// Spec gdla 3.5: MultiHeadSelfAttn and MultiHeadDiffAttn (RoPE over the flattened token index,
// the sub-head layout, lambda_init by depth) against head-by-head references, the value-gated
// SwiGLU, the pre-norm sa / la / da blocks, gradchecks, errors and the oracle vectors.
#include "gdla_testing.h"
#include "nn/gdla/blocks.h"
#include "nn/rope.h"

using namespace lumen;
using namespace lumen::testing;
using namespace lumen::testing::gdla_check;

namespace {

Tensor softmax_head(const Tensor& q, const Tensor& k, double scale) {
    return softmax(mul(matmul(q, k.transpose(1, 2)), scale), -1);
}

Tensor reference_pvt_sa(const nn::attention::MultiHeadSelfAttn& m, const Tensor& x) {
    int64_t c = m.dim, dh = m.head_dim;
    Tensor t = linear(x, m.qkv->weight, m.qkv->bias);
    std::vector<Tensor> heads;
    for (int64_t j = 0; j < m.n_heads; ++j) {
        Tensor q = channels(t, j * dh, dh), k = channels(t, c + j * dh, dh);
        if (m.use_rope) q = reference_rope(q, m.rope_base), k = reference_rope(k, m.rope_base);
        Tensor p = softmax_head(q, k, 1.0 / std::sqrt(double(dh)));
        heads.push_back(matmul(p, channels(t, 2 * c + j * dh, dh)));
    }
    return linear(cat(heads, -1), m.out_proj->weight, m.out_proj->bias);
}

Tensor reference_pvt_da(const nn::attention::MultiHeadDiffAttn& m, const Tensor& x) {
    int64_t c = m.dim, dh = m.head_dim, d = dh / 2;
    Tensor t = linear(x, m.qkv->weight, m.qkv->bias);
    Tensor lambda =
        add(sub(exp(sum(mul(m.lambda_q1, m.lambda_k1))), exp(sum(mul(m.lambda_q2, m.lambda_k2)))),
            m.lambda_init);
    std::vector<Tensor> heads;
    for (int64_t j = 0; j < m.n_heads; ++j) {
        Tensor maps[2];
        for (int64_t i = 0; i < 2; ++i) {
            Tensor q = channels(t, j * dh + i * d, d), k = channels(t, c + j * dh + i * d, d);
            if (m.use_rope) q = reference_rope(q, m.rope_base), k = reference_rope(k, m.rope_base);
            maps[i] = softmax_head(q, k, 1.0 / std::sqrt(double(d)));
        }
        Tensor mixed = matmul(sub(maps[0], mul(maps[1], lambda)), channels(t, 2 * c + j * dh, dh));
        heads.push_back(mul(rms_formula(mixed, m.subln->weight, 1e-5), 1.0 - m.lambda_init));
    }
    return linear(cat(heads, -1), m.out_proj->weight);
}

}  // namespace

TEST_CASE("rope: nn/rope.h is PVT-GDLA's 1-D interleaved RoPE over the token index",
          "[nn][attention][gdla]") {
    Tensor x = random_input({2, 9, 3, 6}, 1);
    auto [cos, sin] = nn::rope_cos_sin(9, 6, 10000.0, DType::float64);
    Tensor rotated = nn::apply_rope_interleaved(x, cos, sin);
    for (int64_t h = 0; h < 3; ++h)
        require_close(rotated.select(2, h), reference_rope(x.select(2, h)), 1e-13, 1e-14);
}

TEST_CASE("MultiHeadSelfAttn (gdla): qkv with bias, RoPE on q and k, float64 gradients",
          "[nn][attention][gdla]") {
    for (bool rope : {false, true}) {
        nn::attention::MultiHeadSelfAttn attn(12, 2, true, rope);
        attn.to(DType::float64);
        randomize(attn, 40);
        Tensor x = random_input({2, 7, 12}, 41);
        require_close(attn.forward(x), reference_pvt_sa(attn, x), 1e-11, 1e-12);
    }
    nn::attention::MultiHeadSelfAttn small(4, 2, true, true);
    randomize(small, 42);
    module_gradcheck(small, random_input({2, 3, 4}, 43));
    require_error([] { nn::attention::MultiHeadSelfAttn bad(6, 2, true, true); },
                  {"[MultiHeadSelfAttn]", "even"});
}

TEST_CASE("MultiHeadDiffAttn (gdla): sub-heads, lambda_init by depth, float64 gradients",
          "[nn][attention][gdla]") {
    // depth 0..3 (official code: lambda_init by decoder depth)
    const double want[] = {0.2, 0.35551, 0.47071, 0.55606};
    for (int64_t depth = 0; depth < 4; ++depth)
        CHECK(std::abs(nn::attention::pvt_lambda_init(depth) - want[depth]) < 5e-6);
    for (bool rope : {false, true}) {
        nn::attention::MultiHeadDiffAttn attn(16, 2, 2, true, rope);
        CHECK(attn.lambda_q1.shape() == Shape{8});
        CHECK(attn.subln->weight.shape() == Shape{8});
        CHECK(attn.state_dict().count("out_proj.bias") == 0);
        attn.to(DType::float64);
        randomize(attn, 50);
        Tensor x = random_input({2, 5, 16}, 51);
        require_close(attn.forward(x), reference_pvt_da(attn, x), 1e-11, 1e-12);
    }
    nn::attention::MultiHeadDiffAttn small(8, 2, 1, true, true);
    randomize(small, 52);
    module_gradcheck(small, random_input({2, 3, 8}, 53));
    require_error([] { nn::attention::MultiHeadDiffAttn bad(12, 2, 1, true, true); },
                  {"[MultiHeadDiffAttn]", "d = head_dim / 2 = 3"});
    require_error([] { nn::attention::MultiHeadDiffAttn bad(6, 2, 1); },
                  {"[MultiHeadDiffAttn]", "dim 6"});
}

TEST_CASE("SwiGLU (gdla): the first half is the value, the second half is gated", "[nn][gdla]") {
    nn::gdla::SwiGLU ffn(4, 6);
    CHECK(ffn.fc1->weight.shape() == Shape{12, 4});
    ffn.to(DType::float64);
    Tensor x = random_input({3, 4}, 60);
    Tensor u = linear(x, ffn.fc1->weight, ffn.fc1->bias);
    Tensor want =
        linear(mul(channels(u, 0, 6), silu(channels(u, 6, 6))), ffn.fc2->weight, ffn.fc2->bias);
    require_close(ffn.forward(x), want, 1e-14, 1e-15);
}

TEST_CASE("PreNormBlock: sa / la / da layouts, residual structure, float64 gradients",
          "[nn][gdla]") {
    nn::gdla::PreNormBlock sa("sa", 8, 2, {.use_rope = true});
    CHECK(sa.attn->type_name() == "MultiHeadSelfAttn");
    CHECK(sa.tensor("mlp.fc1.weight").shape() == Shape{32, 8});
    nn::gdla::PreNormBlock la("la", 8, 2, {.qkv_bias = false});
    CHECK(la.attn->type_name() == "MultiHeadLinearAttn");
    CHECK(la.state_dict().count("attn.qkv.bias") == 0);
    nn::gdla::PreNormBlock da("da", 8, 2, {.hidden_ratio = 2.0, .depth = 3});
    CHECK(da.attn->type_name() == "MultiHeadDiffAttn");
    CHECK(da.tensor("mlp.fc1.weight").shape() == Shape{32, 8});
    CHECK(std::abs(dynamic_cast<nn::attention::MultiHeadDiffAttn&>(*da.attn).lambda_init -
                   0.55606) < 5e-6);
    for (nn::gdla::PreNormBlock* block : {&sa, &la, &da}) {
        block->to(DType::float64);
        randomize(*block, 70);
        Tensor x = random_input({2, 8, 2, 3}, 71);
        Tensor t = to_tokens(x);
        t = add(t, block->attn->forward(block->norm1->forward(t)));
        t = add(t, block->mlp->forward(block->norm2->forward(t)));
        require_close(block->forward(x), to_map(t, 2, 3), 1e-12, 1e-13);
    }
    nn::gdla::PreNormBlock small("da", 4, 1, {.use_rope = true});
    randomize(small, 72);
    module_gradcheck(small, random_input({1, 4, 2, 2}, 73));
    require_error([] { nn::gdla::PreNormBlock bad("xa", 8, 2); }, {"[PreNormBlock]", "'xa'"});
    require_error(
        [&] {
            sa.forward(ones({2, 6, 2, 3}, DType::float64));
        },
        {"[PreNormBlock]", "[2, 6, 2, 3]"});
}

TEST_CASE("attention registry: pvt_sa and pvt_da take rope and depth options",
          "[nn][attention][gdla]") {
    nn::attention::AttentionConfig config{
        .type = "pvt_da", .dim = 16, .num_heads = 2, .layer_index = 1, .options = {{"rope", 1.0}}};
    auto built = nn::attention::make_attention(config);
    auto& da = dynamic_cast<nn::attention::MultiHeadDiffAttn&>(*built);
    CHECK(da.use_rope);
    CHECK(da.depth == 1);
    config.options.push_back({"depth", 3.0});
    CHECK(dynamic_cast<nn::attention::MultiHeadDiffAttn&>(*nn::attention::make_attention(config))
              .depth == 3);
    config.type = "pvt_sa";
    require_error([&] { nn::attention::make_attention(config); }, {"[pvt_sa]", "depth"});
}

TEST_CASE("gdla oracle vectors: softmax and differential mixers and pre-norm blocks pass",
          "[nn][gdla][oracle]") {
    require_oracle_vectors({"mhsa_rope_C12_h2_N20", "mhda_rope_depth2_C16_h2_N16",
                            "block_sa_rope_C12_h2_4x5", "block_sa_C8_h2_3x3", "block_la_C12_h3_5x4",
                            "block_da_rope_depth3_C16_h2_4x4", "block_da_depth1_C8_h2_3x5"},
                           "gdla");
}
