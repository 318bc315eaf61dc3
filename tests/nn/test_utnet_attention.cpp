// UTNet's efficient attention and transformer blocks (Gao et al. 2021, Sec. 2.2-2.4): a
// head-by-head reference with explicit channel lists (head m owns channels m, m + heads, ...)
// at sizes other than the vectors, the token interface "utnet", linear memory at a 256 x 256
// map, float64 gradchecks, parameter names and errors.
#include <cmath>

#include "nn/utnet/trans_blocks.h"
#include "utnet_testing.h"

using namespace lumen;
using namespace lumen::testing;
using namespace lumen::nn::attention;
using namespace lumen::nn::utnet;

namespace {

// softmax((Q K^T + P) / sqrt(d)) V per head, Q (B, D, H, W) and K, V before the reduction,
// merged with channel j heads + m; then to_out. Positions from the naive loops.
AttentionResult reference_attend(EfficientAttention& m, const Tensor& Q, const Tensor& K,
                                 const Tensor& V) {
    const LinearAttentionOptions& o = m.options;
    const int64_t B = Q.size(0), H = Q.size(2), W = Q.size(3), r = o.reduce_size;
    auto reduce = [&](const Tensor& t) {
        if (t.size(2) == r && t.size(3) == r) return t;
        if (o.projection == "maxpool") return adaptive_max_pool2d(t, {r, r});
        return interpolate(t, {r, r}, {}, "bilinear", true);
    };
    Tensor Kr = reduce(K), Vr = reduce(V);
    std::vector<Tensor> outs, attns;
    for (int64_t head = 0; head < o.heads; ++head) {
        std::vector<int64_t> channels;
        for (int64_t j = 0; j < o.dim_head; ++j) channels.push_back(j * o.heads + head);
        Tensor index = from_vector(channels);
        auto tokens = [&](const Tensor& t) {  // (B, n, d)
            return index_select(t, 1, index).flatten(2).transpose(1, 2);
        };
        Tensor logits = matmul(tokens(Q), tokens(Kr).transpose(1, 2));
        if (m.position_bias) {
            Tensor table = m.position_bias->relative_position_bias_table;
            logits = add(logits, naive_bias(table, o.heads, r, H, W).select(1, head));
        } else if (m.position_embedding) {
            Tensor q = tokens(Q).unsqueeze(1).contiguous();  // (B, 1, HW, d)
            auto [rel_w, rel_h] = naive_relative_logits(q, m.position_embedding->key_rel_w,
                                                        m.position_embedding->key_rel_h, r, H, W);
            logits = add(logits, add(rel_w, rel_h).select(1, 0));
        }
        Tensor attn = softmax(div(logits, std::sqrt(double(o.dim_head))), -1);
        attns.push_back(attn);
        outs.push_back(matmul(attn, tokens(Vr)));  // (B, HW, d)
    }
    // stack -> (B, HW, d, heads): flattening (j, m) gives channel j heads + m.
    Tensor merged = stack(outs, 3).reshape({B, H * W, m.inner_dim}).transpose(1, 2);
    return {m.to_out->forward(merged.reshape({B, m.inner_dim, H, W})), stack(attns, 1)};
}

AttentionResult reference_encoder(LinearAttention& m, const Tensor& x) {
    std::vector<Tensor> qkv = chunk(m.to_qkv->forward(x), 3, 1);
    return reference_attend(m, qkv[0], qkv[1], qkv[2]);
}

void require_same(const AttentionResult& got, const AttentionResult& want) {
    require_close(got.y, want.y, 1e-10, 1e-12);
    require_close(got.attn, want.attn, 1e-10, 1e-12);
}

LinearAttentionOptions options(int64_t heads, int64_t dim_head, int64_t r,
                               const std::string& projection = "interp", bool rel_pos = true,
                               const std::string& rel_pos_type = "bias") {
    LinearAttentionOptions o;
    o.heads = heads;
    o.dim_head = dim_head;
    o.reduce_size = r;
    o.projection = projection;
    o.rel_pos = rel_pos;
    o.rel_pos_type = rel_pos_type;
    return o;
}

}  // namespace

TEST_CASE("LinearAttention equals a head-by-head reference (head index fastest)", "[nn][utnet]") {
    struct Case {
        LinearAttentionOptions options;
        Shape x;
    };
    const Case cases[] = {
        {options(3, 2, 2), {2, 5, 4, 6}},                               // bias, interp, D != dim
        {options(2, 3, 3, "maxpool"), {1, 4, 9, 6}},                    // adaptive max pool
        {options(2, 2, 2, "interp", false), {2, 4, 3, 5}},              // no positions, odd map
        {options(2, 2, 3), {1, 4, 3, 3}},                               // map == r: no resize
        {options(2, 2, 2, "interp", true, "embedding"), {2, 4, 6, 2}},  // eq. 4, W == r
        {options(1, 3, 3, "interp", false), {1, 3, 2, 2}},              // H < r: K, V up-sampled
    };
    for (const Case& c : cases) {
        INFO(c.options.heads << " heads, r " << c.options.reduce_size << ", "
                             << c.options.projection << ", x " << text(c.x));
        LinearAttention attention(c.x[1], c.options);
        attention.to(DType::float64);
        Tensor x = random_input(c.x, 20);
        AttentionResult got = attention.forward_attn(x);
        CHECK(got.attn.shape() == Shape{c.x[0], c.options.heads, c.x[2] * c.x[3],
                                        c.options.reduce_size * c.options.reduce_size});
        require_same(got, reference_encoder(attention, x));
    }
}

TEST_CASE("LinearAttentionDecoder takes queries from the skip, keys from the low-res map",
          "[nn][utnet]") {
    LinearAttentionDecoder decoder(6, 4, options(2, 3, 2));
    CHECK(decoder.to_kv->pointwise->weight.shape() == Shape{12, 6, 1, 1});
    CHECK(decoder.to_q->pointwise->weight.shape() == Shape{6, 4, 1, 1});
    CHECK(decoder.to_out->pointwise->weight.shape() == Shape{4, 6, 1, 1});
    decoder.to(DType::float64);
    decoder.store_attn = true;  // the map, from the unfused path, to compare too
    Tensor q = random_input({2, 4, 4, 6}, 21), x = random_input({2, 6, 2, 3}, 22);
    std::vector<Tensor> kv = chunk(decoder.to_kv->forward(x), 2, 1);
    require_same(decoder.forward(q, x),
                 reference_attend(decoder, decoder.to_q->forward(q), kv[0], kv[1]));
    require_error([&] { decoder.forward(x, x); }, {"[LinearAttentionDecoder]", "q"});
    require_error([&] { decoder.forward(q, q); }, {"[LinearAttentionDecoder]", "x"});
}

TEST_CASE("UTNet attention gradients match finite differences", "[nn][utnet]") {
    LinearAttention bias(4, options(2, 2, 2));
    module_gradcheck(bias,
                     [&](const std::vector<Tensor>& in) {
                         AttentionResult r = bias.forward_attn(in[0]);
                         return cat({r.y.flatten(), r.attn.flatten()}, 0);
                     },
                     {random_input({2, 4, 4, 4}, 23)});
    LinearAttention embedding(4, options(2, 2, 2, "interp", true, "embedding"));
    module_gradcheck(embedding, random_input({1, 4, 4, 2}, 24));
    LinearAttention maxpool(4, options(1, 4, 2, "maxpool", false));
    module_gradcheck(maxpool, random_input({1, 4, 4, 6}, 25));
    LinearAttentionDecoder decoder(4, 2, options(2, 1, 2));
    module_gradcheck(decoder,
                     [&](const std::vector<Tensor>& in) { return decoder.forward(in[0], in[1]).y; },
                     {random_input({2, 2, 4, 4}, 26), random_input({2, 4, 2, 2}, 27)});
}

TEST_CASE("LinearAttention memory is linear in the map: a 256 x 256 map runs", "[nn][utnet]") {
    // 65,536 queries: an N x N logit matrix would need 17 GB; the reduced one is 8 MB.
    LinearAttention attention(8, options(2, 4, 4));
    NoGradGuard no_grad;
    AttentionResult out = attention.forward_attn(ones({1, 8, 256, 256}));
    CHECK(out.attn.shape() == Shape{1, 2, 65536, 16});
    CHECK(out.y.shape() == Shape{1, 8, 256, 256});
}

TEST_CASE("LinearAttention checks its options and input", "[nn][utnet]") {
    LinearAttention attention(4, options(2, 2, 2));
    CHECK(attention.state_dict().count("relative_position_encoding.relative_position_bias_table"));
    CHECK(attention.to_qkv->pointwise->weight.shape() == Shape{12, 4, 1, 1});
    require_error(
        [&] {
            attention.forward(ones({1, 3, 4, 4}));
        },
        {"[LinearAttention]", "[1, 3, 4, 4]"});
    require_error(
        [&] {
            attention.forward(ones({1, 4, 5, 4}));
        },
        {"[RelativePositionBias]", "5 x 4"});
    require_error([] { LinearAttention bad(4, options(2, 2, 2, "avgpool")); },
                  {"[LinearAttention]", "avgpool"});
    require_error([] { LinearAttention bad(4, options(2, 2, 2, "interp", true, "rope")); },
                  {"[LinearAttention]", "rope"});
    require_error([] { LinearAttention bad(4, options(0, 2, 2)); },
                  {"[LinearAttention]", "positive"});
}

TEST_CASE("'utnet' behind the token interface equals LinearAttention on the map",
          "[nn][utnet][attention]") {
    nn::attention::AttentionConfig config;
    config.type = "utnet";
    config.dim = 6;
    config.num_heads = 3;
    config.options = {{"reduce_size", 2}};
    std::shared_ptr<nn::attention::Attention> attention = nn::attention::make_attention(config);
    auto* utnet = dynamic_cast<UTNetAttention*>(attention.get());
    REQUIRE(utnet != nullptr);
    CHECK(utnet->attention().options.dim_head == 2);
    CHECK(attention->state_dict().count("to_qkv.depthwise.weight"));
    CHECK(attention->state_dict().count("relative_position_encoding.relative_position_bias_table"));
    Tensor map = random_input({2, 6, 4, 6}, 28).to(DType::float32);
    Tensor tokens = map.flatten(2).transpose(1, 2);  // (B, N, C), row-major over the grid
    nn::attention::AttentionContext context;
    context.grid = {4, 6};
    Tensor want = utnet->attention().forward(map).flatten(2).transpose(1, 2);
    require_close(attention->forward(tokens, context), want, 1e-5, 1e-6);
    require_error([&] { attention->forward(tokens); }, {"[utnet]", "grid"});
    context.prefix_tokens = 1;
    require_error([&] { attention->forward(tokens, context); }, {"[utnet]", "prefix"});
    context.prefix_tokens = 0;
    context.causal = true;
    require_error([&] { attention->forward(tokens, context); }, {"[utnet]", "causal"});
    config.options = {{"maxpool", 1}, {"rel_pos", 0}};
    auto plain = std::dynamic_pointer_cast<UTNetAttention>(nn::attention::make_attention(config));
    CHECK(plain->attention().options.projection == "maxpool");
    CHECK(plain->state_dict().size() == 4);
    config.options = {{"window", 7}};
    require_error([&] { nn::attention::make_attention(config); }, {"[utnet]", "window"});
}

TEST_CASE("BasicTransBlock and BasicTransDecoderBlock: wiring, names, gradients", "[nn][utnet]") {
    BasicTransBlock block(4, options(2, 64, 2));
    CHECK(block.attn->options.dim_head == 2);  // in_ch / heads, the passed 64 is ignored
    CHECK(block.mlp->weight.shape() == Shape{4, 4, 1, 1});
    CHECK(!block.mlp->bias.defined());
    for (const char* key : {"bn1.weight", "bn2.running_mean", "attn.to_out.depthwise.weight"})
        CHECK(block.state_dict().count(key));
    module_gradcheck(block, random_input({2, 4, 4, 2}, 29));

    BasicTransDecoderBlock decoder(4, 2, options(2, 64, 2));
    CHECK(decoder.attn->options.dim_head == 1);
    CHECK(decoder.conv_ch->bias.defined());
    for (const char* key :
         {"bn_l.weight", "bn_h.weight", "conv_ch.bias", "attn.to_kv.pointwise.weight"})
        CHECK(decoder.state_dict().count(key));
    module_gradcheck(decoder,
                     [&](const std::vector<Tensor>& in) { return decoder.forward(in[0], in[1]); },
                     {random_input({2, 4, 2, 2}, 30), random_input({2, 2, 4, 2}, 31)});
    require_error(
        [&] {
            decoder.forward(ones({2, 2, 2, 2}, DType::float64), ones({2, 2, 4, 4}, DType::float64));
        },
        {"[BasicTransDecoderBlock]", "x1"});
    require_error([] { BasicTransBlock bad(2, options(4, 1, 2)); }, {"[BasicTransBlock]", "head"});
}

TEST_CASE("transformer stages keep the official names and shapes", "[nn][utnet]") {
    DownBlockTrans down(2, 4, 2, true, options(2, 0, 2));
    for (const char* key : {"blocks.1.shortcut.2.weight", "blocks.2.attn.to_qkv.pointwise.weight",
                            "blocks.3.mlp.weight"})
        CHECK(down.state_dict().count(key));
    CHECK(down.forward(random_input({2, 2, 8, 4}, 34).to(DType::float32)).shape() ==
          Shape{2, 4, 4, 2});
    DownBlockTrans strided(2, 4, 1, false, options(2, 0, 2));
    CHECK(strided.state_dict().count("blocks.0.conv1.weight"));
    CHECK(strided.blocks->size() == 2);
    UpBlockTrans up(8, 4, 0, options(2, 0, 2));
    CHECK(up.state_dict().count("attn_decoder.attn.to_q.depthwise.weight"));
    CHECK(up.state_dict().count("blocks.0.shortcut.0.weight"));  // BasicBlock(8, 4)
    Tensor x1 = random_input({2, 8, 2, 2}, 32).to(DType::float32);
    Tensor x2 = random_input({2, 4, 4, 4}, 33).to(DType::float32);
    CHECK(up.forward(x1, x2).shape() == Shape{2, 4, 4, 4});
    require_error([] { UpBlockTrans bad(8, 4, 1, options(2, 0, 2)); },
                  {"[UpBlockTrans]", "num_block"});
    require_error([] { DownBlockTrans bad(2, 4, 0, true, options(2, 0, 2)); },
                  {"[DownBlockTrans]", "num_block"});
}

TEST_CASE("UTNet vectors: attention, blocks and stages", "[nn][utnet][oracle]") {
    require_oracle_vectors(
        {"utnet_linear_attention", "utnet_linear_attention_noreduce",
         "utnet_linear_attention_maxpool", "utnet_linear_attention_norelpos",
         "utnet_linear_attention_relemb", "utnet_linear_attention_decoder", "utnet_trans_block",
         "utnet_trans_decoder_block", "utnet_down_block_trans", "utnet_up_block_trans"},
        "sfree_utnet");
}
