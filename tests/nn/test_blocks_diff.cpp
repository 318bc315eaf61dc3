// The pre-norm Block of the DGSA paper (Lygizou et al. 2025) and its presets (ViTBlock,
// DiffTransformerLayer, DGViTBlock, DGTLayer), attention rollout, and the committed diff oracle
// vectors (modules and models).
#include <cmath>

#include "diff_testing.h"
#include "nn/block.h"
#include "nn/mlp.h"
#include "nn/rollout.h"

using namespace lumen;
using namespace lumen::testing;
using namespace lumen::testing::diff_check;

namespace {

std::vector<std::string> parameter_names(const nn::Module& m) {
    std::vector<std::string> names;
    for (const auto& [name, p] : m.named_parameters()) names.push_back(name);
    return names;
}

}  // namespace

TEST_CASE("Block presets: timm names, norm/attention/FFN types and widths", "[nn][block][diff]") {
    nn::Block vit(16, 4, 0, nn::vit_block_options());
    CHECK(parameter_names(vit) ==
          std::vector<std::string>{"norm1.weight", "norm1.bias", "attn.qkv.weight", "attn.qkv.bias",
                                   "attn.proj.weight", "attn.proj.bias", "norm2.weight",
                                   "norm2.bias", "mlp.fc1.weight", "mlp.fc1.bias", "mlp.fc2.weight",
                                   "mlp.fc2.bias"});
    CHECK(vit.norm1->type_name() == "LayerNorm");
    CHECK(static_cast<nn::LayerNorm&>(*vit.norm1).eps == 1e-6);
    CHECK(vit.attn->type_name() == "MHSA");
    CHECK(vit.tensor("mlp.fc1.weight").shape() == Shape{64, 16});

    nn::Block diff(24, 3, 1, nn::diff_transformer_layer_options());
    CHECK(diff.norm1->type_name() == "RMSNorm");
    CHECK(static_cast<nn::RMSNorm&>(*diff.norm2).eps == 1e-5);
    CHECK(diff.attn->type_name() == "MultiheadDiffAttn");
    CHECK(static_cast<nn::attention::MultiheadDiffAttn&>(*diff.attn).lambda_init ==
          nn::attention::diff_lambda_init(1));
    CHECK(diff.tensor("mlp.fc2.weight").shape() == Shape{24, 64});  // floor(16/3 * 24 / 2)

    nn::Block dgvit(32, 4, 0, nn::dgvit_block_options(4.0));
    auto& dgsa = static_cast<nn::attention::MultiheadDGSA&>(*dgvit.attn);
    CHECK(dgsa.options.q_residual);
    CHECK(dgsa.lambda_init == 0.8);
    CHECK(dgvit.tensor("mlp.fc1.weight").shape() == Shape{128, 32});
    CHECK(dgvit.state_dict().count("norm1.bias") == 1);

    nn::Block dgt(24, 3, 2, nn::dgt_layer_options(2.0));
    CHECK(!static_cast<nn::attention::MultiheadDGSA&>(*dgt.attn).options.q_residual);
    CHECK(static_cast<nn::attention::MultiheadDGSA&>(*dgt.attn).lambda_init == 0.8);
    CHECK(dgt.tensor("mlp.fc2.weight").shape() == Shape{24, 24});
    CHECK(dgt.state_dict().count("norm1.bias") == 0);
}

TEST_CASE("SwiGLU widths from mlp_ratio follow floor(k dim / 2) exactly", "[nn][block][diff]") {
    struct Case {
        int64_t dim;
        double k;
        int64_t hidden;
    };
    for (Case c : {Case{24, 16.0 / 3.0, 64}, Case{20, 16.0 / 3.0, 53}, Case{256, 16.0 / 3.0, 682},
                   Case{48, 16.0 / 3.0, 128}, Case{256, 4.0, 512}, Case{256, 2.0, 256},
                   Case{38, 16.0 / 3.0, 101}, Case{34, 2.0, 34}}) {
        INFO(c.dim << " " << c.k);
        nn::Block block(c.dim, 1, 0, nn::dgt_layer_options(c.k));
        CHECK(static_cast<nn::SwiGLU&>(*block.mlp).hidden == c.hidden);
        CHECK(c.hidden == nn::swiglu_hidden(c.dim, int64_t(std::lround(c.k * 3)), 3));
    }
}

TEST_CASE("Block: x + attn(norm1 x) then + mlp(norm2 x), masks reach the attention; gradients",
          "[nn][block][diff]") {
    nn::Block block(12, 3, 2, nn::dgt_layer_options(16.0 / 3.0));
    block.to(DType::float64);
    randomize(block, 20);
    Tensor x = random_input({2, 6, 12}, 21);
    Tensor mask = padding_mask(6, {6, 3});
    nn::attention::AttentionContext context{.key_padding_mask = mask};
    Tensor h = add(x, block.attn->forward(block.norm1->forward(x), context));
    Tensor want = add(h, block.mlp->forward(block.norm2->forward(h)));
    require_close(block.forward(x, context), want, 1e-12, 1e-13);
    // Sample 1 only sees its first 3 tokens.
    Tensor cut = x.select(0, 1).narrow(0, 0, 3).unsqueeze(0);
    require_close(block.forward(cut).select(0, 0),
                  block.forward(x, context).select(0, 1).narrow(0, 0, 3), 1e-10, 1e-12);

    nn::Block small(8, 2, 1, nn::diff_transformer_layer_options(2.0));
    Tensor mask2 = padding_mask(4, {4, 2});
    module_gradcheck(small,
                     [&](const std::vector<Tensor>& in) {
                         return small.forward(in[0], {.key_padding_mask = mask2});
                     },
                     {random_input({2, 4, 8}, 22)});
    nn::Block vit(8, 2, 0, nn::vit_block_options());
    module_gradcheck(vit, [&](const std::vector<Tensor>& in) { return vit.forward(in[0]); },
                     {random_input({2, 3, 8}, 23)});
}

TEST_CASE("Block: dropout and drop path switch off in eval; bad configs name the value",
          "[nn][block][diff]") {
    nn::BlockOptions options = nn::dgvit_block_options(4.0);
    options.drop = 0.5;
    options.drop_path = 0.5;
    nn::Block block(8, 2, 0, options);
    Tensor x = random_input({2, 4, 8}, 24).to(DType::float32);
    block.eval();
    Tensor y = block.forward(x);
    require_close(block.forward(x), y, 0, 0);
    block.train();
    Tensor noisy = block.forward(x);
    CHECK(amax(abs(sub(noisy, y))).item<float>() > 1e-3);

    nn::BlockOptions bad = nn::vit_block_options();
    bad.norm_type = "batchnorm";
    require_error([&] { nn::Block b(8, 2, 0, bad); }, {"[Block]", "batchnorm", "rmsnorm"});
    bad = nn::vit_block_options();
    bad.mlp_type = "geglu";
    require_error([&] { nn::Block b(8, 2, 0, bad); }, {"[Block]", "geglu", "swiglu"});
    bad = nn::vit_block_options();
    bad.attn_type = "performer";  // not registered ("linear" is PVT-GDLA's linear attention)
    require_error([&] { nn::Block b(8, 2, 0, bad); }, {"[attention]", "performer", "mhsa"});
    bad = nn::dgt_layer_options();
    bad.ffn_dropouts = 3;
    require_error([&] { nn::Block b(8, 2, 0, bad); }, {"[Block]", "ffn_dropouts", "3"});
    require_error([&] { block.forward(ones({2, 4, 6})); }, {"[Block]", "[2, 4, 6]"});
}

TEST_CASE("attention_rollout: mean over heads + I, row-normalised, multiplied last-first",
          "[nn][rollout][diff]") {
    Tensor maps = random_input({3, 2, 4, 5, 5}, 25, 0.0, 1.0);
    Tensor got = nn::attention_rollout(maps);
    CHECK(got.shape() == Shape{2, 5, 5});
    // Naive loops: R_l[b] = (mean_h maps + I) / rowsum; rollout = R_3 R_2 R_1.
    for (int64_t b = 0; b < 2; ++b) {
        std::vector<double> rollout;
        for (int64_t l = 0; l < 3; ++l) {
            std::vector<double> r(25, 0.0);
            for (int64_t i = 0; i < 5; ++i) {
                double row = 0.0;
                for (int64_t j = 0; j < 5; ++j) {
                    double m = i == j ? 1.0 : 0.0;
                    for (int64_t h = 0; h < 4; ++h) m += maps.at<double>({l, b, h, i, j}) / 4.0;
                    r[size_t(i * 5 + j)] = m;
                    row += m;
                }
                for (int64_t j = 0; j < 5; ++j) r[size_t(i * 5 + j)] /= row;
            }
            if (rollout.empty()) {
                rollout = r;
                continue;
            }
            std::vector<double> product(25, 0.0);
            for (int64_t i = 0; i < 5; ++i)
                for (int64_t j = 0; j < 5; ++j)
                    for (int64_t k = 0; k < 5; ++k)
                        product[size_t(i * 5 + j)] +=
                            r[size_t(i * 5 + k)] * rollout[size_t(k * 5 + j)];
            rollout = product;
        }
        require_close(got.select(0, b), from_vector(rollout, {5, 5}), 1e-12, 1e-14);
    }
    std::vector<Tensor> layers = {maps.select(0, 0), maps.select(0, 1), maps.select(0, 2)};
    require_close(nn::attention_rollout(layers), got, 0, 0);
    // Softmax maps: each layer is 0.5 A + 0.5 I, rows of the rollout sum to 1.
    Tensor softmax_maps = softmax(random_input({1, 1, 2, 4, 4}, 26), -1);
    Tensor a = mean(softmax_maps.select(0, 0), {1});
    require_close(nn::attention_rollout(softmax_maps),
                  add(mul(a, 0.5), mul(eye(4, -1, DType::float64), 0.5)), 1e-12, 1e-14);
    require_close(sum(got, {-1}), ones({2, 5}, DType::float64), 1e-12, 1e-12);
    gradcheck([](const std::vector<Tensor>& in) { return nn::attention_rollout(in[0]); },
              {random_input({2, 1, 2, 3, 3}, 27, 0.1, 1.0)});
    require_error(
        [] {
            nn::attention_rollout(ones({2, 1, 3, 4}));
        },
        {"[attention_rollout]", "(L, B, nh, N, N)", "[2, 1, 3, 4]"});
    require_error(
        [] {
            nn::attention_rollout({ones({1, 2, 3, 3}), ones({1, 2, 4, 4})});
        },
        {"[attention_rollout]", "layer 1", "[1, 2, 4, 4]"});
}

TEST_CASE("rollout heatmaps: class-token row on the grid, text scores over non-pad tokens",
          "[nn][rollout][diff]") {
    Tensor rollout = random_input({2, 7, 7}, 28);
    Tensor map = nn::rollout_class_token_map(rollout, {2, 3});
    CHECK(map.shape() == Shape{2, 2, 3});
    CHECK(map.at<double>({1, 1, 2}) == rollout.at<double>({1, 0, 6}));
    CHECK(map.at<double>({0, 0, 0}) == rollout.at<double>({0, 0, 1}));
    Tensor mask = padding_mask(7, {7, 4});
    Tensor scores = nn::rollout_token_scores(rollout, mask);
    CHECK(scores.shape() == Shape{2, 7});
    double want = 0.0;
    for (int64_t i = 0; i < 4; ++i) want += rollout.at<double>({1, i, 2}) / 4.0;
    CHECK(std::abs(scores.at<double>({1, 2}) - want) < 1e-14);
    CHECK(scores.at<double>({1, 5}) == 0.0);
    require_error(
        [&] {
            nn::rollout_class_token_map(rollout, {2, 2});
        },
        {"[attention_rollout]", "[2, 2]", "[2, 7, 7]"});
    require_error(
        [&] {
            nn::rollout_token_scores(rollout, ones({2, 7}));
        },
        {"[attention_rollout]", "float32"});
}

TEST_CASE("diff oracle vectors: attentions, blocks, rollout and models pass check-vectors",
          "[nn][diff][oracle]") {
    require_oracle_vectors({"mhsa",
                            "mhsa_mask",
                            "vit_block",
                            "diffattn_d0",
                            "diffattn_d5_h2",
                            "diffattn_mask",
                            "diffattn_causal_rope",
                            "difftransformer_layer",
                            "dgsa",
                            "dgsa_qres",
                            "dgsa_lambda_schedule",
                            "dgsa_mask",
                            "dgvit_block",
                            "dgt_layer",
                            "rollout",
                            "vit_tiny",
                            "dgvit_tiny",
                            "dgvit_tiny_x2",
                            "transformer_cls_tiny",
                            "difftransformer_cls_tiny",
                            "dgt_tiny"},
                           "diff");
}
