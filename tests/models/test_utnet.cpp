// UTNet as a whole (Gao et al. 2021, Sec. 2.4): the paper configuration's parameter count and
// names, stage choice from block_list, outputs with and without deep supervision, input
// checks, and the whole-model vectors.
#include "models/utnet.h"
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;
using lumen::models::UTNet;
using lumen::models::UTNetConfig;

namespace {

UTNetConfig paper_config(bool aux) {
    UTNetConfig c;
    c.in_chan = 1;
    c.base_chan = 32;
    c.num_classes = 4;
    c.reduce_size = 8;
    c.block_list = "1234";
    c.num_blocks = {1, 1, 1, 1};
    c.num_heads = {4, 4, 4, 4};
    c.attn_drop = c.proj_drop = 0.1;
    c.aux_loss = aux;
    return c;
}

UTNetConfig tiny_config() {
    UTNetConfig c = paper_config(true);
    c.base_chan = 2;
    c.reduce_size = 2;
    c.num_heads = {2, 2, 2, 2};
    c.attn_drop = c.proj_drop = 0.0;
    return c;
}

}  // namespace

TEST_CASE("UTNet: the paper configuration has the official 10.02 M parameters", "[models][utnet]") {
    UTNet with_aux(paper_config(true));
    CHECK(with_aux.num_parameters() == 10020304);
    UTNet plain(paper_config(false));
    CHECK(plain.num_parameters() == 10018500);
    std::map<std::string, Tensor> state = with_aux.state_dict();
    // Every transformer attends to 8 x 8 reduced keys: (2 * 8 - 1)^2 = 225 offsets x 4 heads.
    CHECK(state.at("down4.blocks.2.attn.relative_position_encoding.relative_position_bias_table")
              .shape() == Shape{225, 4});
    CHECK(state.at("up1.attn_decoder.attn.to_kv.pointwise.weight").shape() ==
          Shape{512, 512, 1, 1});
    CHECK(state.at("up4.conv_ch.weight").shape() == Shape{32, 64, 1, 1});
    CHECK(state.at("up4.conv.1.conv2.weight").shape() == Shape{32, 32, 3, 3});
    CHECK(state.at("inc.0.bn1.running_var").shape() == Shape{1});
    CHECK(state.at("out1.weight").shape() == Shape{4, 256, 1, 1});
    CHECK(state.count("down1.blocks.0.num_batches_tracked") == 0);  // blocks.0 is the pool
    CHECK(state.count("down1.blocks.1.bn1.num_batches_tracked") == 1);
}

TEST_CASE("UTNet picks transformer or convolution stages from block_list", "[models][utnet]") {
    UTNetConfig c = tiny_config();
    c.block_list = "01234";
    c.num_blocks = {1, 1, 1, 1, 1};
    c.num_heads = {1, 2, 2, 2, 2};
    UTNet all(c);
    CHECK(all.state_dict().count("inc.1.attn.to_qkv.depthwise.weight"));
    CHECK(all.state_dict().count("up4.attn_decoder.attn.to_q.depthwise.weight"));
    CHECK(dynamic_cast<nn::utnet::BasicTransBlock&>((*all.inc)[1]).attn->options.heads == 1);
    c.block_list = "34";
    c.num_blocks = {1, 1};
    c.num_heads = {2, 2};
    UTNet deep(c);
    CHECK(deep.state_dict().count("down1.conv.2.conv1.weight"));  // down_block, 2 BasicBlocks
    CHECK(deep.state_dict().count("up3.conv.1.bn1.weight"));      // up_block
    CHECK(deep.state_dict().count("up1.attn_decoder.bn_l.weight"));
    CHECK(deep.forward(random_input({1, 1, 32, 32}, 1).to(DType::float32)).shape() ==
          Shape{1, 4, 32, 32});
    c.block_list = "1234";
    require_error([&] { UTNet bad(c); }, {"[UTNet]", "num_blocks"});
    c.block_list = "125";
    require_error([&] { UTNet bad(c); }, {"[UTNet]", "block_list"});
}

TEST_CASE("UTNet returns y, or y, out3, out2, out1 at the input size", "[models][utnet]") {
    UTNet net(tiny_config());
    Tensor x = random_input({2, 1, 32, 64}, 2).to(DType::float32);
    std::vector<Tensor> outs = net.forward_outputs(x);
    REQUIRE(outs.size() == 4);
    for (const Tensor& out : outs) CHECK(out.shape() == Shape{2, 4, 32, 64});
    require_close(net.forward(x), outs[0], 1e-5, 1e-6);
    // out1 is the 1x1 head on up1's output (level 3, 1/8 of the input), resized.
    UTNetConfig plain = tiny_config();
    plain.aux_loss = false;
    UTNet no_aux(plain);
    CHECK(no_aux.forward_outputs(x).size() == 1);
    CHECK(no_aux.state_dict().count("out1.weight") == 0);
    require_error([&] { net.forward(ones({2, 1, 24, 32})); }, {"[UTNet]", "multiples of 16"});
    require_error([&] { net.forward(ones({2, 3, 32, 32})); }, {"[UTNet]", "[2, 3, 32, 32]"});
    UTNetConfig coarse = tiny_config();
    coarse.reduce_size = 4;
    UTNet needs_64(coarse);
    require_error(
        [&] {
            needs_64.forward(ones({1, 1, 32, 32}));
        },
        {"[UTNet]", "level 4", "2 x 2", "reduce_size 4"});
}

TEST_CASE("UTNet trains: gradients reach every parameter", "[models][utnet]") {
    UTNet net(tiny_config());
    std::vector<Tensor> outs =
        net.forward_outputs(random_input({2, 1, 32, 32}, 3).to(DType::float32));
    Tensor loss;
    for (const Tensor& out : outs)
        loss = loss.defined() ? add(loss, sum(square(out))) : sum(square(out));
    loss.backward();
    for (const auto& [name, p] : net.named_parameters()) {
        INFO(name);
        CHECK(p.grad().defined());
    }
}

TEST_CASE("UTNet vectors: whole model, train and eval BN, aux outputs, non-square",
          "[models][utnet][oracle]") {
    require_oracle_vectors(
        {"utnet_full", "utnet_full_aux", "utnet_full_nonsquare", "utnet_full_eval"}, "sfree_utnet");
}
