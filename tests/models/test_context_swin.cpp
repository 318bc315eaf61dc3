// The context-length paper's Swin models (Hooper & Xue, Table 7): the parameter counts of its
// Table 7 configurations, 2-D/3-D UPerNet and linear-head shapes, names, errors, a float64
// gradcheck of a tiny model, and the whole-model vectors.
#include "models/context_swin.h"
#include "nn/init.h"
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;
using lumen::models::ContextSwin;
using lumen::models::ContextSwinConfig;

namespace {

int64_t count(const nn::Module& m) { return m.num_parameters(); }

ContextSwinConfig tiny(const std::string& decoder, int64_t time) {
    ContextSwinConfig c;
    c.in_channels = 2;
    c.out_channels = 3;
    c.time = time;
    c.height = 12;
    c.width = 10;
    c.decoder = decoder;
    c.embed_dim = 2;
    c.depths = {2, 1, 1, 1};
    c.num_heads = {1, 1, 2, 2};
    c.window_size = {2};
    return c;
}

}  // namespace

TEST_CASE("ContextSwin reproduces the paper's Swin-T parameter counts", "[models][context]") {
    ContextSwinConfig vessel;  // 3 x 1024 x 1024 -> 2 classes, window 8, UPerNet
    ContextSwin w8(vessel);
    CHECK(count(*w8.encoder) == 32246634);
    CHECK(count(*w8.upernet) == 9263618);
    vessel.window_size = {4};
    CHECK(count(*ContextSwin(vessel).encoder) == 32222346);
    vessel.window_size = {16};
    CHECK(count(*ContextSwin(vessel).encoder) == 32348202);
    vessel.window_size = {8};
    vessel.mixer = {"hyena", {}};  // heads as the stage, l_max 66000, order 64 (defaults)
    CHECK(count(*ContextSwin(vessel).encoder) == 34799712);
    vessel.mixer = {"mamba", {}};  // d_state 8, d_conv 3, expand 1, dt_rank ceil(dim / 16)
    ContextSwin mamba(vessel);
    CHECK(count(*mamba.encoder) == 28090272);
    CHECK(count(*mamba.upernet) == 9263618);
    ContextSwinConfig pneumothorax;  // 1 x 1024 x 1024 -> 2, linear head
    pneumothorax.in_channels = 1;
    pneumothorax.decoder = "linear";
    ContextSwin linear(pneumothorax);
    CHECK(count(*linear.encoder) == 32245866);
    CHECK(count(*linear.linear) == 3074);
    ContextSwinConfig ct;  // 3-D abdominal CT: 1 x 64 x 256 x 256 -> 10 classes
    ct.in_channels = 1;
    ct.out_channels = 10;
    ct.time = 64;
    ct.height = ct.width = 256;
    ContextSwin ct_model(ct);
    CHECK(count(*ct_model.encoder) == 38959350);
    CHECK(count(*ct_model.upernet) == 12629770);
    ContextSwinConfig cmr = ct;  // 3-D CMR denoising: 2 x 32 x 128 x 128 -> 1, window 16
    cmr.in_channels = 2;
    cmr.out_channels = 1;
    cmr.time = 32;
    cmr.height = cmr.width = 128;
    cmr.window_size = {16};
    ContextSwin cmr_model(cmr);
    CHECK(count(*cmr_model.encoder) == 42605526);
    CHECK(count(*cmr_model.upernet) == 12583105);
}

TEST_CASE("ContextSwin: 2-D, 3-D and linear outputs, encoder./decoder. names",
          "[models][context]") {
    ContextSwin flat(tiny("upernet", 1));
    flat.eval();
    CHECK(flat.state_dict().count("encoder.layers1.0.blocks.1.attn.qkv.weight") == 1);
    CHECK(flat.state_dict().count("decoder.FPN.smooth_conv.0.weight") == 1);
    CHECK(flat.forward(ones({1, 2, 1, 12, 10})).shape() == Shape{1, 3, 1, 12, 10});
    ContextSwin volume(tiny("upernet", 6));
    volume.eval();
    CHECK(volume.forward(ones({1, 2, 6, 12, 10})).shape() == Shape{1, 3, 6, 12, 10});
    ContextSwin classifier(tiny("linear", 1));
    CHECK(classifier.state_dict().count("decoder.classification_head.0.weight") == 1);
    Tensor logits = classifier.forward(random_input({2, 2, 1, 12, 10}, 1).to(DType::float32));
    CHECK(logits.shape() == Shape{2, 3});
    CHECK(max(abs(logits)).item<double>() < 1.0);  // Tanh outputs
    require_error([&] { flat.forward(ones({1, 2, 2, 12, 10})); }, {"[ContextSwin]", "T = 1"});
    ContextSwinConfig bad = tiny("unetr", 1);
    require_error([&] { ContextSwin m(bad); }, {"[ContextSwin]", "decoder"});
}

TEST_CASE("ContextSwin gradients match finite differences", "[models][context]") {
    ContextSwin classifier(tiny("linear", 1));
    module_gradcheck(
        classifier, [&](const std::vector<Tensor>& in) { return classifier.forward(in[0]); },
        {random_input({1, 2, 1, 6, 5}, 2)}, 1e-5, 1e-6, 5);
    // Swin + UPerNet (eval BN) with Mamba windows, every 23rd parameter entry.
    ContextSwinConfig c = tiny("upernet", 1);
    c.height = 6;
    c.width = 5;
    c.mixer = {"mamba", {}};
    ContextSwin volume(c);
    volume.eval();
    // The decoder's 1-D parameters away from 0: at init the PSP bottleneck's border is
    // ReLU(BN(0)) = ReLU(0), a kink where finite differences disagree with the derivative.
    for (const Tensor& p : volume.upernet->parameters())
        if (p.ndim() == 1) nn::init::uniform_(p, 0.5, 1.5);
    module_gradcheck(
        volume, [&](const std::vector<Tensor>& in) { return volume.forward(in[0]); },
        {random_input({1, 2, 1, 6, 5}, 3)}, 1e-4, 1e-6, 23);
}

TEST_CASE("Swin whole-model vectors pass", "[models][context][vectors]") {
    require_oracle_vectors(
        {"model_swin_upernet_2d_attn", "model_swin_upernet_3d_attn", "model_swin_linear_2d_attn",
         "model_swin_upernet_2d_hyena", "model_swin_upernet_2d_mamba"},
        "context");
}
