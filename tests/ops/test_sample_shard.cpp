// Random draws keyed per sample (core/sample_shard.h): under a context {rank r, world N, local
// batch b}, dropout, drop_path, channel dropout, the fused attention's dropout and the random
// ops give rank r exactly (bit for bit) rows r, r + N, ... of what one process draws for the
// global batch of N b samples, gradients included, and leave the generator where that process
// leaves it; a draw that cannot be split per sample throws.
#include "core/sample_shard.h"
#include "nn/checkpoint.h"
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

// Rows r, r + world, ... of `global` (its leading dim world * b), as a contiguous tensor.
Tensor rows_of_rank(const Tensor& global, int64_t world, int64_t rank) {
    Shape local = global.shape();
    local[0] /= world;
    Shape split = local;
    split.insert(split.begin() + 1, world);
    return global.reshape(split).select(1, rank).contiguous().reshape(local);
}

void require_equal(const Tensor& got, const Tensor& want) {
    REQUIRE(got.shape() == want.shape());
    REQUIRE(got.dtype() == want.dtype());
    CHECK(got.to_vector<double>() == want.to_vector<double>());
}

using Forward = std::function<Tensor(const Tensor& x, Generator& generator)>;

// Runs `forward` on the global batch in one process, then on each rank's rows under its
// context, and requires equal outputs, input gradients and generator offsets (equal offsets:
// the next draw is in step too). x_global (world * b, ...); the output's leading dim is the
// batch as well.
void require_sharded_equal(const Forward& forward, const Tensor& x_global, int64_t world) {
    const int64_t batch = x_global.size(0) / world;
    Tensor x = x_global.detach().requires_grad_(true);
    Generator one(2024);
    one.set_offset(5);
    Tensor y = forward(x, one);
    Tensor grad_out = random_input(y.shape(), 77).to(y.dtype());
    sum(mul(y, grad_out)).backward();
    for (int64_t rank = 0; rank < world; ++rank) {
        Tensor x_local = rows_of_rank(x_global, world, rank).requires_grad_(true);
        Generator own(2024);
        own.set_offset(5);
        Tensor y_local;
        {
            SampleShardGuard shard(rank, world, batch);
            y_local = forward(x_local, own);
            sum(mul(y_local, rows_of_rank(grad_out, world, rank))).backward();
        }
        require_equal(y_local, rows_of_rank(y, world, rank));
        require_equal(x_local.grad(), rows_of_rank(x.grad(), world, rank));
        CHECK(own.offset() == one.offset());
    }
}

// A positive input (no zeros, so every kept entry shows) of `shape` in `dtype`.
Tensor positive_input(const Shape& shape, DType dtype) {
    return random_input(shape, 5, 0.5, 1.5).to(dtype);
}

}  // namespace

TEST_CASE("sample shard: dropout gives each rank its rows of the global batch's mask",
          "[ops][dropout][random]") {
    for (DType dtype : {DType::float32, DType::float64}) {
        for (int64_t world : {2, 3}) {
            const int64_t b = 4;
            INFO("dtype " << dtype << ", world " << world);
            auto drop = [](const Tensor& x, Generator& g) { return dropout(x, 0.4, true, &g); };
            // 8 elements per sample: a multiple of the elements per Philox block.
            require_sharded_equal(drop, positive_input({world * b, 8}, dtype), world);
            // 15 and 3 elements per sample: samples start inside a block.
            require_sharded_equal(drop, positive_input({world * b, 5, 3}, dtype), world);
            require_sharded_equal(drop, positive_input({world * b, 3}, dtype), world);
            // Runs of many 8-block batches per sample (the CPU kernel's unit).
            require_sharded_equal(drop, positive_input({world * b, 37, 11}, dtype), world);
        }
    }
}

TEST_CASE("sample shard: the batch merged with heads, (B * heads, ...), is split per sample",
          "[ops][dropout][random]") {
    const int64_t world = 2, b = 3, heads = 4;
    Tensor x = positive_input({world * b * heads, 7}, DType::float32);
    Generator one(8);
    Tensor y = dropout(x, 0.5, true, &one).view({world * b, heads, 7});
    for (int64_t rank = 0; rank < world; ++rank) {
        Generator own(8);
        SampleShardGuard shard(rank, world, b);
        Tensor x_local = rows_of_rank(x.view({world * b, heads, 7}), world, rank);
        Tensor y_local = dropout(x_local.view({b * heads, 7}), 0.5, true, &own);
        require_equal(y_local.view({b, heads, 7}), rows_of_rank(y, world, rank));
    }
}

TEST_CASE("sample shard: drop_path and channel dropout masks are the global batch's rows",
          "[ops][dropout][random]") {
    for (DType dtype : {DType::float32, DType::float64}) {
        for (int64_t world : {2, 3}) {
            INFO("dtype " << dtype << ", world " << world);
            auto path = [](const Tensor& x, Generator& g) {
                return drop_path(x, 0.5, true, true, &g);
            };
            require_sharded_equal(path, positive_input({world * 5, 3, 4}, dtype), world);
            auto channels = [](const Tensor& x, Generator& g) {
                return channel_dropout(x, 2, 0.5, true, &g);
            };
            require_sharded_equal(channels, positive_input({world * 3, 5, 2, 3}, dtype), world);
        }
    }
}

TEST_CASE("sample shard: rand, randn, randint and bernoulli draw the global rows",
          "[ops][random]") {
    const int64_t world = 3, b = 2;
    const Shape global{world * b, 5}, local{b, 5};
    using Draw = std::function<Tensor(const Shape&, Generator&)>;
    std::vector<Draw> draws = {
        [](const Shape& s, Generator& g) { return rand(s, DType::float32, &g); },
        [](const Shape& s, Generator& g) { return randn(s, DType::float64, &g); },
        [](const Shape& s, Generator& g) { return randint(0, 1000, s, DType::int64, &g); },
        [](const Shape& s, Generator& g) { return bernoulli(s, 0.3, DType::float32, &g); },
        [](const Shape& s, Generator& g) { return bernoulli(full(s, 0.6, DType::float64), &g); },
    };
    for (const Draw& draw : draws) {
        Generator one(31);
        Tensor want = draw(global, one);
        for (int64_t rank = 0; rank < world; ++rank) {
            Generator own(31);
            SampleShardGuard shard(rank, world, b);
            require_equal(draw(local, own), rows_of_rank(want, world, rank));
            CHECK(own.offset() == one.offset());
        }
    }
    // An invalid probability is reported at its local index.
    SampleShardGuard shard(1, world, b);
    std::vector<double> probabilities(10, 0.5);
    probabilities[7] = 1.5;
    Tensor p = from_vector(probabilities, local);
    require_error([&] { bernoulli(p); }, {"[bernoulli]", "1.5", "flat index 7"});
}

TEST_CASE("sample shard: the fused attention's dropout is the global map's rows",
          "[ops][attention][dropout]") {
    const int64_t heads = 2, b = 2;
    for (auto [dtype, world] :
         {std::pair<DType, int64_t>{DType::float32, 2}, {DType::float64, 2}, {DType::float32, 3}}) {
        // (N, M) = (5, 7): maps of 35 entries start inside Philox blocks; (4, 8): aligned.
        for (auto [n, m] : {std::pair<int64_t, int64_t>{5, 7}, {4, 8}}) {
            INFO("dtype " << dtype << ", world " << world << ", N " << n << ", M " << m);
            auto attend = [&](const Tensor& qkv, Generator& g) {
                const int64_t batch = qkv.size(0);
                Tensor q = qkv.narrow(-1, 0, 6), k = qkv.narrow(-1, 6, 6);
                Tensor v = qkv.narrow(-1, 12, 6);
                k = k.narrow(2, 0, m), v = v.narrow(2, 0, m), q = q.narrow(2, 0, n);
                AttentionDropout draw =
                    draw_attention_dropout(0.4, batch * heads * n * m, dtype, &g);
                Tensor out = scaled_dot_product_attention(q, k, v, {.dropout = draw});
                // The unfused reference draws the same mask under the same context.
                require_close(out, attention_reference(q, k, v, {.dropout = draw}), 1e-5, 1e-6);
                return out;
            };
            Tensor qkv = random_input({world * b, heads, std::max(n, m), 18}, 3).to(dtype);
            require_sharded_equal(attend, qkv, world);
        }
    }
}

TEST_CASE("sample shard: a checkpoint recomputes its masks under the forward's context",
          "[nn][checkpoint][dropout]") {
    const int64_t world = 2, b = 3;
    Tensor x_global = positive_input({world * b, 9}, DType::float64);
    auto fn = [](const std::vector<Tensor>& in) { return mul(dropout(in[0], 0.5), in[0]); };
    manual_seed(4);
    Tensor x = x_global.detach().requires_grad_(true);
    sum(nn::checkpoint(fn, {x}, {})).backward();
    for (int64_t rank = 0; rank < world; ++rank) {
        manual_seed(4);
        Tensor x_local = rows_of_rank(x_global, world, rank).requires_grad_(true);
        Tensor y;
        {
            SampleShardGuard shard(rank, world, b);
            y = nn::checkpoint(fn, {x_local}, {});
        }
        sum(y).backward();  // outside the context: the node restores the forward's
        require_equal(x_local.grad(), rows_of_rank(x.grad(), world, rank));
    }
}

TEST_CASE("sample shard: inactive by default, nested guards restore, world 1 is inactive",
          "[ops][random]") {
    CHECK_FALSE(sample_shard().active());
    {
        SampleShardGuard outer(1, 2, 4);
        CHECK(sample_shard().rank == 1);
        {
            SampleShardGuard none(0, 1, 4);
            CHECK_FALSE(sample_shard().active());
            Generator a(3), b(3);
            require_equal(dropout(ones({4, 5}), 0.5, true, &a),
                          dropout(ones({4, 5}), 0.5, true, &b));
        }
        CHECK(sample_shard().batch == 4);
    }
    CHECK_FALSE(sample_shard().active());
    require_error([] { SampleShardGuard bad(2, 2, 4); }, {"[sample shard]", "rank 2 of 2"});
    require_error([] { SampleShardGuard bad(0, 2, 0); }, {"[sample shard]", "got 0"});
}

TEST_CASE("sample shard: a draw whose size is not a multiple of the local batch throws",
          "[ops][dropout][random]") {
    SampleShardGuard shard(0, 2, 3);
    require_error(
        [] {
            dropout(ones({4, 5}), 0.5);
        },
        {"[dropout]", "shape [4, 5]", "20 elements", "local batch 3"});
    require_error([] { rand({7}); }, {"[rand]", "shape [7]"});
    require_error([] { drop_path(ones({4, 2}), 0.5, true); }, {"[bernoulli]", "shape [4, 1]"});
    require_error([] { draw_attention_dropout(0.1, 10, DType::float32); },
                  {"[attention dropout]", "10 elements"});
    {
        // 8 map entries over a local batch of 4: half a (2, 2) map per sample.
        SampleShardGuard quarter(0, 2, 4);
        Tensor q = ones({2, 2, 3});
        AttentionDropout draw = draw_attention_dropout(0.1, 8, DType::float32);
        require_error([&] { scaled_dot_product_attention(q, q, q, {.dropout = draw}); },
                      {"[scaled_dot_product_attention]", "expected whole (N, M) maps"});
    }
    // Nothing drawn, nothing to split: p = 0, eval and empty tensors pass.
    CHECK(dropout(ones({4, 5}), 0.0).numel() == 20);
    CHECK(dropout(ones({4, 5}), 0.5, false).numel() == 20);
    CHECK(dropout(ones({0, 5}), 0.5).numel() == 0);
}
