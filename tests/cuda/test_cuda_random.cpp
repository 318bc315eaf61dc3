// CPU/CUDA parity of the counter-based random ops: with the same seed and offset, rand,
// randint, bernoulli and dropout masks are bit-identical on both devices and randn agrees to
// the last bits of the device's log / sin / cos; generators advance identically over a
// sequence of calls; dropout's gradient uses the same mask; under a sample shard
// (core/sample_shard.h) both devices draw the same rows. Skips with a message without a GPU.
#include <cmath>
#include <vector>

#include "core/sample_shard.h"
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

// Sizes that end mid-block (4 float32 or 2 float64 elements per Philox block), a single
// element, and 600011 elements (hundreds of thread blocks; the grid-stride loops only wrap
// beyond 65535 x 256 Philox blocks, too large for a test).
const std::vector<Shape> kShapes = {{1}, {7}, {3, 5}, {2, 3, 67}, {600011}};

void require_identical(const Tensor& got, const Tensor& want) {
    REQUIRE(got.is_cuda());
    CHECK(got.shape() == want.shape());
    CHECK(got.dtype() == want.dtype());
    Tensor host = got.cpu();
    if (want.dtype() == DType::float32 || want.dtype() == DType::float64) {
        CHECK(host.to_vector<double>() == want.to_vector<double>());
    } else {  // 64-bit integers beyond 2^53 would round as doubles
        CHECK(host.to_vector<int64_t>() == want.to_vector<int64_t>());
    }
}

}  // namespace

TEST_CASE("rand, randint, bernoulli: the same seed gives the same bits on CPU and CUDA",
          "[cuda][ops][random]") {
    if (!have_gpu()) return;
    for (const Shape& shape : kShapes) {
        INFO("shape " << text(shape));
        for (DType dtype : {DType::float32, DType::float64}) {
            INFO(dtype_name(dtype));
            Generator cpu_gen(42), gpu_gen(42);
            require_identical(rand(shape, dtype, &gpu_gen, Device::cuda()),
                              rand(shape, dtype, &cpu_gen));
            Tensor p = rand(shape, dtype, &cpu_gen);
            rand(shape, dtype, &gpu_gen);  // keep the generators in step
            require_identical(bernoulli(p.cuda(), &gpu_gen), bernoulli(p, &cpu_gen));
            require_identical(bernoulli(shape, 0.3, dtype, &gpu_gen, Device::cuda()),
                              bernoulli(shape, 0.3, dtype, &cpu_gen));
            CHECK(gpu_gen.offset() == cpu_gen.offset());
        }
        for (DType dtype : {DType::int64, DType::int32, DType::uint8, DType::float32}) {
            INFO("randint " << dtype_name(dtype));
            Generator cpu_gen(7), gpu_gen(7);
            int64_t small_low = dtype == DType::uint8 ? 0 : -3;  // randint checks the range fits
            require_identical(randint(small_low, 250, shape, dtype, &gpu_gen, Device::cuda()),
                              randint(small_low, 250, shape, dtype, &cpu_gen));
            if (dtype == DType::uint8) continue;
            // The full int32 range and a range wider than INT64_MAX (unsigned arithmetic).
            int64_t low = dtype == DType::int32 ? -2147483648LL : -(int64_t(1) << 62) * 2;
            int64_t high = dtype == DType::int32 ? 2147483647LL : (int64_t(1) << 62);
            require_identical(randint(low, high, shape, dtype, &gpu_gen, Device::cuda()),
                              randint(low, high, shape, dtype, &cpu_gen));
        }
        for (DType dtype : {DType::bool_, DType::uint8, DType::int64}) {
            INFO("bernoulli into " << dtype_name(dtype));
            Generator cpu_gen(9), gpu_gen(9);
            require_identical(bernoulli(shape, 0.7, dtype, &gpu_gen, Device::cuda()),
                              bernoulli(shape, 0.7, dtype, &cpu_gen));
        }
    }
}

TEST_CASE("randn: CUDA matches the CPU up to the last bits", "[cuda][ops][random]") {
    if (!have_gpu()) return;
    for (const Shape& shape : kShapes) {
        for (DType dtype : {DType::float32, DType::float64}) {
            INFO("shape " << text(shape) << " " << dtype_name(dtype));
            Generator cpu_gen(5), gpu_gen(5);
            Tensor got = randn(shape, dtype, &gpu_gen, Device::cuda());
            Tensor want = randn(shape, dtype, &cpu_gen);
            REQUIRE(got.is_cuda());
            // Box-Muller in double: the device's log / sin / cos are within a few ulp of glibc's.
            double tol = dtype == DType::float32 ? 1e-6 : 1e-14;
            require_close(got.cpu(), want, tol, tol);
            CHECK(gpu_gen.offset() == cpu_gen.offset());
        }
    }
}

TEST_CASE("random: generators advance identically over a sequence of calls on both devices",
          "[cuda][ops][random]") {
    if (!have_gpu()) return;
    Generator cpu_gen(123), gpu_gen(123);
    Device gpu = Device::cuda();
    for (int round = 0; round < 3; ++round) {
        INFO("round " << round);
        require_identical(rand({5}, DType::float32, &gpu_gen, gpu),
                          rand({5}, DType::float32, &cpu_gen));
        require_close(randn({3}, DType::float64, &gpu_gen, gpu).cpu(),
                      randn({3}, DType::float64, &cpu_gen), 1e-14, 1e-14);
        require_identical(randint(0, 10, {9}, DType::int64, &gpu_gen, gpu),
                          randint(0, 10, {9}, DType::int64, &cpu_gen));
        require_identical(bernoulli({6}, 0.5, DType::float64, &gpu_gen, gpu),
                          bernoulli({6}, 0.5, DType::float64, &cpu_gen));
        Tensor x = random_input({11, 3}, uint64_t(round)).to(DType::float32);
        require_identical(dropout(x.cuda(), 0.4, true, &gpu_gen), dropout(x, 0.4, true, &cpu_gen));
        CHECK(gpu_gen.offset() == cpu_gen.offset());
    }
    // The default generator too.
    manual_seed(77);
    Tensor on_gpu = rand({13}, DType::float32, nullptr, gpu);
    manual_seed(77);
    require_identical(on_gpu, rand({13}, DType::float32));
}

TEST_CASE("dropout: CUDA masks, outputs and gradients equal the CPU's", "[cuda][ops][dropout]") {
    if (!have_gpu()) return;
    for (const Shape& shape : kShapes) {
        for (DType dtype : {DType::float32, DType::float64}) {
            for (double p : {0.1, 0.5, 1.0}) {
                INFO("shape " << text(shape) << " " << dtype_name(dtype) << " p " << p);
                Tensor x = random_input(shape, 31).to(dtype);
                Tensor g = random_input(shape, 32).to(dtype);
                Generator cpu_gen(2024), gpu_gen(2024);
                Tensor xc = x.detach().requires_grad_();
                Tensor yc = dropout(xc, p, true, &cpu_gen);
                yc.backward(g);
                Tensor xg = x.cuda().detach().requires_grad_();
                Tensor yg = dropout(xg, p, true, &gpu_gen);
                yg.backward(g.cuda());
                require_identical(yg, yc);
                require_identical(xg.grad(), xc.grad());
            }
        }
    }
}

TEST_CASE("dropout and drop_path: CUDA on strided inputs, drop_path masks",
          "[cuda][ops][dropout]") {
    if (!have_gpu()) return;
    Tensor x = random_input({40, 9}, 41).to(DType::float32);
    Generator cpu_gen(3), gpu_gen(3);
    require_identical(dropout(x.cuda().t(), 0.3, true, &gpu_gen),
                      dropout(x.t(), 0.3, true, &cpu_gen));
    Tensor samples = random_input({16, 3, 5}, 42).to(DType::float32);
    require_identical(drop_path(samples.cuda(), 0.5, true, true, &gpu_gen),
                      drop_path(samples, 0.5, true, true, &cpu_gen));
}

TEST_CASE("bernoulli: CUDA reports an invalid probability like the CPU", "[cuda][ops][random]") {
    if (!have_gpu()) return;
    Tensor p = tensor({0.5, 0.2, 1.5, -1.0, 0.3}, {5}, DType::float32).cuda();
    require_error([&] { bernoulli(p); }, {"[bernoulli]", "got 1.5", "flat index 2"});
    Tensor nan = tensor({0.5, std::nan("")}, {2}, DType::float64).cuda();
    require_error([&] { bernoulli(nan); }, {"[bernoulli]", "flat index 1"});
}

TEST_CASE("sample shard: CUDA draws the rows the CPU draws (dropout, drop_path, attention)",
          "[cuda][ops][dropout]") {
    if (!have_gpu()) return;
    const int64_t world = 3, b = 2, heads = 2, n = 5, m = 7;
    for (DType dtype : {DType::float32, DType::float64}) {
        INFO(dtype_name(dtype));
        Tensor x = random_input({b, 5, 7}, 43, 0.5, 1.5).to(dtype);
        // q = k = 0: every weight is 1 / M, so with v = I the output is the map's z / M.
        Tensor q = zeros({b, heads, n, 4}, dtype), k = zeros({b, heads, m, 4}, dtype);
        Tensor v = eye(m, -1, dtype).expand({b, heads, m, m}).contiguous();
        for (int64_t rank = 0; rank < world; ++rank) {
            SampleShardGuard shard(rank, world, b);
            Generator cpu_gen(9), gpu_gen(9);
            require_identical(dropout(x.cuda(), 0.4, true, &gpu_gen),
                              dropout(x, 0.4, true, &cpu_gen));
            require_identical(drop_path(x.cuda(), 0.5, true, true, &gpu_gen),
                              drop_path(x, 0.5, true, true, &cpu_gen));
            AttentionDropout draw = draw_attention_dropout(0.5, b * heads * n * m, dtype, &cpu_gen);
            Tensor on_cpu = scaled_dot_product_attention(q, k, v, {.dropout = draw});
            Tensor on_gpu =
                scaled_dot_product_attention(q.cuda(), k.cuda(), v.cuda(), {.dropout = draw});
            // The same entries dropped, whatever the last bits of the kept ones.
            Tensor dropped_gpu = eq(on_gpu.cpu(), 0.0).to(DType::float64);
            CHECK(dropped_gpu.to_vector<double>() ==
                  eq(on_cpu, 0.0).to(DType::float64).to_vector<double>());
            require_close(on_gpu.cpu(), on_cpu, 1e-6, 0);
        }
    }
}
