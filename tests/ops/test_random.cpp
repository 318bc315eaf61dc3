// rand, randn, randint, bernoulli: determinism, independence from the thread count, the
// generator's offset bookkeeping, moments of 1e6 samples, ranges and errors.
#include <cmath>

#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

struct Moments {
    double mean = 0, variance = 0;
};

Moments moments_of(const Tensor& x) {
    std::vector<double> values = x.to_vector<double>();
    Moments m;
    for (double v : values) m.mean += v;
    m.mean /= double(values.size());
    for (double v : values) m.variance += (v - m.mean) * (v - m.mean);
    m.variance /= double(values.size() - 1);
    return m;
}

bool same_values(const Tensor& a, const Tensor& b) {
    return a.shape() == b.shape() && a.dtype() == b.dtype() &&
           a.to_vector<double>() == b.to_vector<double>();
}

// One draw of every kind from a generator seeded with `seed`, large enough to be split across
// threads (more elements than the parallel grain).
std::vector<Tensor> draw_all(uint64_t seed) {
    Generator generator(seed);
    Shape shape{300001};
    Tensor p = rand(shape, DType::float32, &generator);
    return {rand(shape, DType::float32, &generator),
            rand(shape, DType::float64, &generator),
            randn(shape, DType::float32, &generator),
            randn(shape, DType::float64, &generator),
            randint(-5, 1000, shape, DType::int64, &generator),
            bernoulli(p, &generator),
            bernoulli(shape, 0.25, DType::bool_, &generator)};
}

}  // namespace

TEST_CASE("random: the same seed gives the same tensor, another seed another", "[ops][random]") {
    Generator first(42), second(42), other(43);
    CHECK(same_values(rand({4, 5}, DType::float32, &first), rand({4, 5}, DType::float32, &second)));
    CHECK(same_values(randn({7}, DType::float64, &first), randn({7}, DType::float64, &second)));
    CHECK(!same_values(rand({4, 5}, DType::float32, &first), rand({4, 5}, DType::float32, &other)));
    manual_seed(5);
    Tensor a = randn({3, 3});
    manual_seed(5);
    CHECK(same_values(a, randn({3, 3})));
    CHECK(!same_values(a, randn({3, 3})));  // the default generator moved on
}

TEST_CASE("random: results do not depend on the number of threads", "[ops][random]") {
    set_num_threads(1);
    std::vector<Tensor> single = draw_all(7);
    set_num_threads(2);
    std::vector<Tensor> two = draw_all(7);
    set_num_threads(0);
    REQUIRE(single.size() == two.size());
    for (size_t i = 0; i < single.size(); ++i) {
        INFO("draw " << i);
        CHECK(same_values(single[i], two[i]));
    }
}

TEST_CASE("random: each call advances the generator past the blocks it used", "[ops][random]") {
    Generator generator(9);
    rand({5}, DType::float32, &generator);  // 4 float32 per block: 2 blocks
    CHECK(generator.offset() == 2);
    rand({5}, DType::float64, &generator);  // 2 float64 per block: 3 blocks
    CHECK(generator.offset() == 5);
    randn({3}, DType::float32, &generator);  // 2 normals per block
    CHECK(generator.offset() == 7);
    randint(0, 10, {4}, DType::int64, &generator);  // 2 draws per block
    CHECK(generator.offset() == 9);
    rand({0}, DType::float32, &generator);
    CHECK(generator.offset() == 9);

    // With whole blocks, two consecutive draws are the two halves of one draw twice the size.
    auto check_split = [](const char* name, int64_t n, auto draw) {
        INFO(name);
        Generator twice(11), once(11);
        Tensor head = draw(n, twice), tail = draw(n, twice);
        Tensor whole = draw(2 * n, once);
        CHECK(!same_values(head, tail));
        CHECK(same_values(whole.narrow(0, 0, n), head));
        CHECK(same_values(whole.narrow(0, n, n), tail));
        CHECK(twice.offset() == once.offset());
    };
    check_split("rand float32", 8,
                [](int64_t n, Generator& g) { return rand({n}, DType::float32, &g); });
    check_split("rand float64", 6,
                [](int64_t n, Generator& g) { return rand({n}, DType::float64, &g); });
    check_split("randn", 6, [](int64_t n, Generator& g) { return randn({n}, DType::float32, &g); });
    check_split("randint", 6,
                [](int64_t n, Generator& g) { return randint(0, 1 << 30, {n}, DType::int64, &g); });
    check_split("bernoulli", 8,
                [](int64_t n, Generator& g) { return bernoulli({n}, 0.5, DType::float32, &g); });
}

TEST_CASE("random: rand and randn have the right moments over 1e6 samples", "[ops][random]") {
    Generator generator(2024);
    for (DType dtype : {DType::float32, DType::float64}) {
        INFO(dtype);
        Tensor uniform = rand({1000, 1000}, dtype, &generator);
        CHECK(uniform.dtype() == dtype);
        Moments u = moments_of(uniform);
        // Standard errors: mean 0.29 / 1000, variance about 0.075 / 1000; allow ~7 of them.
        CHECK(u.mean == Approx(0.5).margin(0.002));
        CHECK(u.variance == Approx(1.0 / 12).margin(0.0005));
        Moments z = moments_of(randn({1000, 1000}, dtype, &generator));
        CHECK(z.mean == Approx(0.0).margin(0.006));
        CHECK(z.variance == Approx(1.0).margin(0.01));
    }
}

TEST_CASE("random: values stay in range and randint covers it", "[ops][random]") {
    Generator generator(3);
    std::vector<double> uniform = rand({100000}, DType::float32, &generator).to_vector<double>();
    CHECK(*std::min_element(uniform.begin(), uniform.end()) >= 0.0);
    CHECK(*std::max_element(uniform.begin(), uniform.end()) < 1.0);
    // float64 uniforms carry more than float32's 24 bits.
    double fine = rand({1}, DType::float64, &generator).item<double>();
    CHECK(fine * 16777216.0 != std::floor(fine * 16777216.0));
    std::vector<double> normals = randn({100001}, DType::float32, &generator).to_vector<double>();
    CHECK(std::all_of(normals.begin(), normals.end(), [](double v) { return std::isfinite(v); }));

    Tensor ints = randint(-3, 4, {70000}, DType::int64, &generator);
    CHECK(ints.dtype() == DType::int64);
    std::vector<int64_t> counts(7, 0);
    for (int64_t v : ints.to_vector<int64_t>()) {
        REQUIRE(v >= -3);
        REQUIRE(v < 4);
        ++counts[size_t(v + 3)];
    }
    for (int64_t c : counts) CHECK(c == Approx(10000).margin(500));
    for (DType dtype : {DType::int32, DType::uint8, DType::float32}) {
        std::vector<double> values = randint(0, 256, {1000}, dtype, &generator).to_vector<double>();
        CHECK(*std::min_element(values.begin(), values.end()) >= 0);
        CHECK(*std::max_element(values.begin(), values.end()) <= 255);
    }
    // The full int64 range (high - low overflows int64) still works.
    int64_t low = std::numeric_limits<int64_t>::min(), high = std::numeric_limits<int64_t>::max();
    CHECK(randint(low, high, {100}, DType::int64, &generator).numel() == 100);
}

TEST_CASE("bernoulli: frequencies follow p, and equal rand < p", "[ops][random]") {
    Generator generator(4);
    Tensor draws = bernoulli({1000000}, 0.3, DType::float32, &generator);
    CHECK(moments_of(draws).mean == Approx(0.3).margin(0.003));
    CHECK(bernoulli({100}, 0.0, DType::float32, &generator).to_vector<double>() ==
          std::vector<double>(100, 0.0));
    CHECK(bernoulli({100}, 1.0, DType::int64, &generator).to_vector<double>() ==
          std::vector<double>(100, 1.0));

    for (DType dtype : {DType::float32, DType::float64}) {
        Tensor p = rand({5000}, dtype, &generator);
        Generator a(8), b(8);
        Tensor sample = bernoulli(p, &a);
        CHECK(sample.dtype() == dtype);
        CHECK(same_values(sample, lt(rand_like(p, &b), p).to(dtype)));
    }
    Tensor mixed = tensor({0, 1, 0, 1}, {2, 2}).t();  // non-contiguous p
    CHECK(bernoulli(mixed, &generator).to_vector<double>() == std::vector<double>{0, 0, 1, 1});
}

TEST_CASE("random: errors name the op and the offending values", "[ops][random]") {
    require_error([] { rand({2}, DType::int64); }, {"[rand]", "int64"});
    require_error([] { randn({2}, DType::float16); }, {"[randn]", "float16"});
    require_error([] { randint(5, 5, {2}); }, {"[randint]", "low 5", "high 5"});
    require_error([] { randint(0, 300, {2}, DType::uint8); }, {"[randint]", "300", "uint8"});
    require_error([] { bernoulli({2}, 1.5); }, {"[bernoulli]", "1.5"});
    require_error([] { bernoulli(tensor({0.5, -0.25, 2})); }, {"[bernoulli]", "-0.25", "index 1"});
    require_error([] { bernoulli(tensor({1, 0}).to(DType::int64)); }, {"[bernoulli]", "int64"});
}
