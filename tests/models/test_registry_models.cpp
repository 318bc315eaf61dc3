// Every registered model through the registry's options: each architecture and each variant it
// offers (decoders, encoders, tokenizers, attention, token mixers, heads, 2-D / 3-D) builds
// from options alone, takes the input its entry describes, gives the output it describes, and
// one training step reaches every parameter with a finite gradient. Small sizes; the papers'
// sizes are the defaults (checked against the parameter counts of the specs where given).
#include <cmath>

#include "models/registry.h"
#include "nn/attention/attention.h"
#include "ops/loss.h"
#include "ops/random.h"
#include "ops/reduce.h"
#include "support/gradcheck.h"

using namespace lumen;

namespace {

// A random input the entry's ModelInput describes, batch 2 (spatial sizes from `size` when the
// model takes any size).
Tensor input_for(const models::ModelInput& in, const std::vector<int64_t>& size) {
    if (in.kind == "tokens") return randint(1, std::max<int64_t>(2, in.vocab_size), {2, 7});
    if (in.kind == "bag")
        return testing::random_input({2, 5, in.feature_dim}, 3).to(DType::float32);
    Shape shape{2, in.in_chans};
    for (int64_t s : in.img_size.empty() ? size : in.img_size) shape.push_back(s);
    return testing::random_input(shape, 4).to(DType::float32);
}

// Builds `name` with `overrides`, runs forward + cross-entropy (or MSE for a dense model with
// one channel) + backward, checks shapes and gradients.
void one_step(const std::string& name, const nn::Options& overrides,
              const std::vector<int64_t>& size = {}) {
    INFO(name << " " << [&] {
        std::string text;
        for (const auto& [key, value] : overrides.values())
            text += key + "=" + nn::format_option(value) + " ";
        return text;
    }());
    nn::Options options = models::model_options(name, overrides);
    const models::ModelInput in = models::find_model(name).input(options);
    std::shared_ptr<nn::Module> model = models::build_model(name, options);
    model->train();
    Tensor x = input_for(in, size);
    std::vector<Tensor> outputs = model->forward_outputs(x);
    REQUIRE(!outputs.empty());
    CHECK(outputs.size() == std::max<size_t>(1, in.deep_supervision.size()));
    Tensor loss;
    for (const Tensor& y : outputs) {
        Shape expected{2, in.num_classes};
        if (in.output == "dense")
            for (int64_t d = 2; d < x.ndim(); ++d) expected.push_back(x.size(d));
        REQUIRE(y.shape() == expected);
        Shape target_shape(expected.begin(), expected.end());
        target_shape.erase(target_shape.begin() + 1);  // (B, *spatial) class ids
        Tensor term = in.output == "dense" && in.num_classes == 1
                          ? mse_loss(y, zeros(y.shape()))
                          : cross_entropy(y, zeros(target_shape, DType::int64));
        loss = loss.defined() ? add(loss, term) : term;
    }
    loss.backward();
    REQUIRE(std::isfinite(loss.item<double>()));
    int64_t without = 0;
    for (const auto& [key, p] : model->named_parameters()) {
        if (!p.requires_grad()) continue;
        if (!p.grad().defined()) {
            ++without;
            continue;
        }
        INFO(key);
        CHECK(std::isfinite(sum(p.grad()).item<double>()));
    }
    // Every parameter takes part (the text models' padding row still gets a zero gradient).
    CHECK(without == 0);
}

nn::Options opts(std::initializer_list<std::pair<const std::string, nn::OptionValue>> values) {
    nn::Options o;
    for (const auto& [key, value] : values) o.set(key, value);
    return o;
}

}  // namespace

TEST_CASE("the registry lists every architecture of the five papers", "[registry]") {
    for (const char* name : {"vit", "dgvit", "transformer", "diff_transformer", "dgt", "sfree_vit",
                             "sima_vit", "utnet", "pvt_segnet", "context_vit", "context_swin"})
        CHECK_NOTHROW(models::find_model(name));
}

TEST_CASE("pvt_segnet: every decoder, with and without deep supervision", "[registry]") {
    for (const char* decoder : {"gdla", "sa", "la", "da"})
        one_step("pvt_segnet",
                 opts({{"decoder", std::string(decoder)},
                       {"encoder", std::string("b0")},
                       {"in_chs", int64_t(3)},
                       {"n_classes", int64_t(3)}}),
                 {64, 64});
    one_step(
        "pvt_segnet",
        opts({{"encoder", std::string("b0")}, {"deepsupervision", false}, {"in_chs", int64_t(1)}}),
        {32, 64});
    // The paper's model (Synapse, gdla, b2, deep supervision): Zheng et al. 2026, Sec. 4.
    CHECK(
        models::build_model("pvt_segnet", models::model_options("pvt_segnet"))->num_parameters() ==
        32134607);
}

TEST_CASE("pvt_segnet: a tiny encoder through the encoder_* options", "[registry]") {
    using Ints = std::vector<int64_t>;
    // The oracle vectors' model (the committed vectors' configuration): one block per stage, widths
    // 8, 8, 12, 16.
    const nn::Options tiny = opts({{"encoder_depths", Ints{1, 1, 1, 1}},
                                   {"encoder_embed_dims", Ints{8, 8, 12, 16}},
                                   {"encoder_num_heads", Ints{1, 1, 2, 2}},
                                   {"encoder_sr_ratios", Ints{8, 4, 2, 1}},
                                   {"encoder_mlp_ratios", std::vector<double>{4, 4, 4, 4}},
                                   {"n_heads", Ints{2, 2, 3, 2}},
                                   {"n_classes", int64_t(3)}});
    one_step("pvt_segnet", tiny, {32, 64});
    std::shared_ptr<nn::Module> model =
        models::build_model("pvt_segnet", models::model_options("pvt_segnet", tiny));
    // PyTorch's count for that model (the p.* tensors of pvt_gdla_tiny_in1_K3_ds_32x64).
    CHECK(model->num_parameters() == 38187);
    CHECK(model->tensor("backbone.patch_embed.proj.weight").shape() == Shape{8, 3, 7, 7});
    CHECK(model->tensor("backbone.stages.3.blocks.0.mlp.fc1.weight").shape() == Shape{64, 16});

    nn::Options short_depths = tiny;
    short_depths.set("encoder_depths", Ints{1, 1, 1});
    CHECK_THROWS_WITH(
        models::build_model("pvt_segnet", models::model_options("pvt_segnet", short_depths)),
        Catch::Matchers::Contains("[pvt_segnet] encoder_depths needs one value per encoder "
                                  "stage (4), got 3: [1, 1, 1]"));
    CHECK_THROWS_WITH(
        models::model_options("pvt_segnet", opts({{"encoder_mlp_ratios", Ints{4, 0, 4, 4}}})),
        Catch::Matchers::Contains("encoder_mlp_ratios"));
    CHECK_THROWS_WITH(
        models::model_options("pvt_segnet", opts({{"encoder_depth", Ints{1, 1, 1, 1}}})),
        Catch::Matchers::Contains("did you mean 'encoder_depths'"));
}

TEST_CASE("utnet: relative positions, projections and deep supervision", "[registry]") {
    one_step("utnet",
             opts({{"base_chan", int64_t(8)},
                   {"reduce_size", int64_t(4)},
                   {"block_list", std::string("34")},
                   {"num_blocks", std::vector<int64_t>{1, 1}},
                   {"num_heads", std::vector<int64_t>{2, 2, 2, 2, 2}}}),
             {64, 64});
    one_step("utnet",
             opts({{"base_chan", int64_t(8)},
                   {"reduce_size", int64_t(2)},
                   {"block_list", std::string("234")},
                   {"num_blocks", std::vector<int64_t>{1, 1, 1}},
                   {"num_heads", std::vector<int64_t>{2, 2, 2, 2, 2}},
                   {"projection", std::string("maxpool")},
                   {"rel_pos_type", std::string("embedding")},
                   {"aux_loss", false}}),
             {32, 32});
    // The official training model (official yhygao/UTNet): 10,020,304 parameters.
    CHECK(models::build_model("utnet", models::model_options("utnet"))->num_parameters() ==
          10020304);
}

TEST_CASE("sfree_vit: 2-D, 3-D and bags with each attention", "[registry]") {
    for (const char* attn : {"softmax", "seqnorm", "sima"}) {
        nn::Options small = opts({{"attn", std::string(attn)},
                                  {"dim", int64_t(32)},
                                  {"depth", int64_t(1)},
                                  {"heads", int64_t(2)},
                                  {"dim_head", int64_t(8)},
                                  {"mlp_dim", int64_t(32)}});
        nn::Options image = small;
        image.set("image_size", std::vector<int64_t>{16, 16});
        image.set("patch_size", std::vector<int64_t>{4, 4});
        image.set("channels", int64_t(1));
        one_step("sfree_vit", image);
        nn::Options volume = image;
        volume.set("tokenizer", std::string("patch3d"));
        volume.set("frames", int64_t(4));
        volume.set("frame_patch_size", int64_t(2));
        one_step("sfree_vit", volume);
        nn::Options bag = small;
        bag.set("tokenizer", std::string("bag"));
        bag.set("feat_dim", int64_t(12));
        one_step("sfree_vit", bag);
    }
}

TEST_CASE("sima_vit: both patch sizes", "[registry]") {
    for (int64_t patch : {8, 16})
        one_step("sima_vit",
                 opts({{"patch_size", patch},
                       {"embed_dim", int64_t(32)},
                       {"depth", int64_t(1)},
                       {"num_heads", int64_t(2)},
                       {"in_chans", int64_t(1)}}),
                 {32, 32});
}

TEST_CASE("context_vit: heads, mixers, 2-D and 3-D", "[registry]") {
    for (const char* mixer : {"attn", "hyena", "mamba"})
        for (const char* head : {"unetr", "linear"})
            for (bool volume : {false, true}) {
                nn::Options o = opts({{"decoder", std::string(head)},
                                      {"mixer", std::string(mixer)},
                                      {"hidden_size", int64_t(16)},
                                      {"mlp_dim", int64_t(16)},
                                      {"num_layers", int64_t(10)},
                                      {"num_heads", int64_t(2)},
                                      {"feature_size", int64_t(4)},
                                      {"patch_size", int64_t(4)},
                                      {"hyena_filter_order", int64_t(8)}});
                o.set("img_size",
                      volume ? std::vector<int64_t>{8, 8, 8} : std::vector<int64_t>{16, 16});
                one_step("context_vit", o);
            }
}

TEST_CASE("context_swin: heads, mixers, 2-D and 3-D", "[registry]") {
    for (const char* mixer : {"attn", "hyena", "mamba"})
        for (const char* head : {"upernet", "linear"})
            for (bool volume : {false, true}) {
                nn::Options o = opts({{"decoder", std::string(head)},
                                      {"mixer", std::string(mixer)},
                                      {"embed_dim", int64_t(8)},
                                      {"depths", std::vector<int64_t>{1, 1, 1, 1}},
                                      {"num_heads", std::vector<int64_t>{1, 1, 2, 2}},
                                      {"window_size", std::vector<int64_t>{2}},
                                      {"in_channels", int64_t(1)},
                                      {"hyena_filter_order", int64_t(8)}});
                o.set("img_size",
                      volume ? std::vector<int64_t>{16, 16, 16} : std::vector<int64_t>{32, 32});
                one_step("context_swin", o);
            }
}

TEST_CASE("the text classifiers", "[registry]") {
    for (const char* name : {"transformer", "diff_transformer", "dgt"})
        one_step(name, opts({{"vocab_size", int64_t(50)},
                             {"embed_dim", int64_t(16)},
                             {"depth", int64_t(2)},
                             {"num_heads", int64_t(2)},
                             {"num_classes", int64_t(3)}}));
    CHECK_THROWS_WITH(models::build_model("dgt", models::model_options("dgt")),
                      Catch::Matchers::Contains("vocab_size is 0"));
}

TEST_CASE("registry options: unknown values and keys are named", "[registry]") {
    CHECK_THROWS_WITH(models::model_options("pvt_segnet", opts({{"decodr", std::string("gdla")}})),
                      Catch::Matchers::Contains("did you mean 'decoder'"));
    CHECK_THROWS_WITH(
        models::model_options("context_vit", opts({{"mixer", std::string("mamaba")}})),
        Catch::Matchers::Contains("mamba"));
}

TEST_CASE("vit: every attention variant it offers trains, with the default dropout", "[registry]") {
    // lumen models offers every registered variant for model.attn_type.
    for (const std::string& type : nn::attention::attention_names())
        // 32 x 32 images in 4 x 4 patches: an 8 x 8 grid, which UTNet's relative positions
        // (reduce_size 8) and the windows of swin_window need.
        one_step("vit", opts({{"attn_type", type},
                              {"embed_dim", int64_t(32)},
                              {"depth", int64_t(1)},
                              {"num_heads", int64_t(2)},
                              {"img_size", std::vector<int64_t>{32, 32}}}));
    for (const char* pool : {"cls", "mean"})
        one_step("dgvit", opts({{"pool", std::string(pool)},
                                {"embed_dim", int64_t(32)},
                                {"depth", int64_t(1)},
                                {"num_heads", int64_t(2)}}));
    // A grid-only variant cannot take the class token.
    CHECK_THROWS_WITH(
        models::build_model("vit",
                            models::model_options("vit", opts({{"attn_type", std::string("gdla")},
                                                               {"pool", std::string("cls")}}))),
        Catch::Matchers::Contains("needs pool 'mean'"));
}
