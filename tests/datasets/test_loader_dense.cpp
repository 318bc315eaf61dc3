// The loader's dense-task parts: examples seen as samples (image with its label map or
// target), a joint transform on the workers that keeps image and mask aligned for any number
// of workers, padded collation of varying-length inputs with masks, and the byte-bounded
// cache of decoded examples.
#include <atomic>

#include "datasets/cache.h"
#include "datasets/loader.h"
#include "datasets/random_stream.h"
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;
using namespace lumen::datasets;

namespace {

// Mirrors the last axis of the image and of the label map together, with probability 1/2.
class TestJointFlip : public SampleTransform {
  public:
    Sample operator()(const Sample& sample, Generator& generator) const override {
        RandomStream random(generator);
        if (random.uniform() < 0.5) return sample;
        Sample out = sample;
        out.image = flip(sample.image, {-1});
        if (sample.label.defined()) out.label = flip(sample.label, {-1});
        if (sample.target.defined()) out.target = flip(sample.target, {-1});
        return out;
    }
};

// n examples {image (1, 4, 6), label (4, 6)} whose image is the label map as float.
std::shared_ptr<TensorDataset> mask_dataset(int64_t n) {
    Generator generator(5);
    Tensor labels = randint(0, 5, {n, 4, 6}, DType::int64, &generator);
    Tensor images = labels.to(DType::float32).view({n, 1, 4, 6}).contiguous();
    return std::make_shared<TensorDataset>(std::vector<Tensor>{images, labels});
}

// Counts reads, for the cache tests: example i is {full((i + 1), i) float32, label i}.
class CountingDataset : public Dataset {
  public:
    int64_t size() const override { return 8; }
    Example get(int64_t index) const override {
        ++reads;
        return {full({index + 1}, double(index)), full({}, double(index), DType::int64)};
    }
    mutable std::atomic<int64_t> reads{0};
};

}  // namespace

TEST_CASE("sample_of finds the label map or the target and example_of puts them back",
          "[datasets][loader]") {
    Tensor image = zeros({2, 3, 4}), mask = ones({3, 4}, DType::uint8);
    Sample with_mask = sample_of({image, mask});
    CHECK(with_mask.label.dtype() == DType::int64);
    CHECK_FALSE(with_mask.target.defined());
    CHECK(example_of(with_mask, {image, mask})[1].dtype() == DType::uint8);  // dtype kept

    Tensor clean = ones({1, 3, 4});
    Sample denoise = sample_of({image, clean});
    CHECK(denoise.target.defined());
    CHECK_FALSE(denoise.label.defined());

    Tensor class_label = full({}, 3.0, DType::int64);
    Sample classify = sample_of({image, class_label});
    CHECK_FALSE(classify.label.defined());
    CHECK_FALSE(classify.target.defined());
    CHECK(example_of(classify, {image, class_label})[1].item<int64_t>() == 3);

    Sample volume = sample_of({zeros({1, 2, 3, 4}), zeros({2, 3, 4}, DType::int32)});
    CHECK(volume.spatial_dims() == 3);
    CHECK(volume.label.defined());

    // A float64 (4, 4) tensor after the label is the affine; example_of writes it back.
    Tensor affine =
        from_vector(std::vector<double>{2, 0, 0, 5, 0, 3, 0, 6, 0, 0, 4, 7, 0, 0, 0, 1}, {4, 4});
    Example with_affine{zeros({1, 2, 3, 4}), zeros({2, 3, 4}, DType::int64), affine};
    Sample placed = sample_of(with_affine);
    CHECK(placed.affine[3] == 5.0);
    CHECK(placed.affine[10] == 4.0);
    placed.affine[3] = -1.0;
    Example back = example_of(placed, with_affine);
    CHECK(back[2].to_vector<double>()[3] == -1.0);
    CHECK(sample_of({zeros({1, 2, 3, 4}), affine}).affine[7] == 6.0);  // no label

    require_error([] { sample_of({}); }, {"[Sample]", "needs an image"});
    require_error([] { sample_of({zeros({3, 4})}); }, {"[Sample]", "(C, H, W)", "[3, 4]"});
    require_error([] { sample_of({zeros({1, 3, 4}, DType::float64)}); }, {"[Sample]", "float64"});
    require_error([] { SampleCompose({nullptr}); }, {"[SampleCompose]", "transform 0 is null"});
}

TEST_CASE("a joint transform on the workers keeps every mask on its image, for any workers",
          "[datasets][loader]") {
    auto data = mask_dataset(10);
    auto transform =
        std::make_shared<SampleCompose>(TestJointFlip(), TestJointFlip(), TestJointFlip());
    std::vector<std::vector<float>> runs;
    for (int64_t workers : {0, 1, 3}) {
        DataLoader loader(data, {.batch_size = 3,
                                 .shuffle = true,
                                 .seed = 9,
                                 .num_workers = workers,
                                 .sample_transform = transform});
        std::vector<float> images;
        for (Batch& batch : loader.epoch(2)) {
            REQUIRE(batch.size() == 2);
            CHECK(batch[1].dtype() == DType::int64);
            // The image is still the mask as float: each flip moved both.
            CHECK(batch[0].squeeze(1).to_vector<float>() ==
                  batch[1].to(DType::float32).to_vector<float>());
            for (float v : batch[0].to_vector<float>()) images.push_back(v);
        }
        runs.push_back(images);
    }
    CHECK(runs[1] == runs[0]);  // bit-identical whatever the number of workers
    CHECK(runs[2] == runs[0]);
    // Some examples were flipped: the epoch differs from the untransformed one.
    DataLoader plain(data, {.batch_size = 3, .shuffle = true, .seed = 9});
    std::vector<float> untouched;
    for (Batch& batch : plain.epoch(2))
        for (float v : batch[0].to_vector<float>()) untouched.push_back(v);
    CHECK(untouched != runs[0]);
}

TEST_CASE("collate_padded pads varying lengths and appends the mask", "[datasets][loader]") {
    Tensor a = arange(3.0).to(DType::int64), b = arange(5.0).to(DType::int64);
    Tensor la = full({}, 1.0, DType::int64), lb = full({}, 0.0, DType::int64);
    Batch batch = collate_padded({{a, la}, {b, lb}}, -1.0);
    REQUIRE(batch.size() == 3);
    CHECK(batch[0].shape() == Shape{2, 5});
    CHECK(batch[0].to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, -1, -1, 0, 1, 2, 3, 4});
    CHECK(batch[1].to_vector<int64_t>() == std::vector<int64_t>{1, 0});
    CHECK(batch[2].dtype() == DType::bool_);
    CHECK(batch[2].to(DType::int64).to_vector<int64_t>() ==
          std::vector<int64_t>{1, 1, 1, 0, 0, 1, 1, 1, 1, 1});

    // Feature bags (N, D): padded along N, rows of D copied whole; an empty bag is all padding.
    Tensor bag1 = ones({2, 3}), bag2 = full({1, 3}, 2.0), empty_bag = zeros({0, 3});
    Batch bags = collate_padded({{bag1, la}, {bag2, lb}, {empty_bag, la}});
    CHECK(bags[0].shape() == Shape{3, 2, 3});
    CHECK(bags[0].to_vector<float>() ==
          std::vector<float>{1, 1, 1, 1, 1, 1, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0});
    CHECK(bags[2].to(DType::int64).to_vector<int64_t>() == std::vector<int64_t>{1, 1, 1, 0, 0, 0});

    // Equal lengths still get their (all-true) mask: every batch has the same fields.
    CHECK(collate_padded({{a, la}, {a, lb}}).size() == 3);

    require_error([&] { collate_padded({{la}, {lb}}); }, {"[collate]", "length dim"});
    require_error(
        [&] {
            collate_padded({{bag1, la}, {ones({2, 4}), lb}});
        },
        {"[collate]", "example 1 field 0", "[2, 4]", "past the first"});
    require_error([&] { collate_padded({{a, la}, {b, ones({2})}}); }, {"[collate]", "tensor 1"});
    require_error([&] { collate_padded({}); }, {"[collate]", "at least one"});
}

TEST_CASE("the loader pads token sequences when asked", "[datasets][loader]") {
    struct Sequences : Dataset {
        int64_t size() const override { return 5; }
        Example get(int64_t i) const override {
            return {arange(double(i + 1)).to(DType::int64), full({}, double(i), DType::int64)};
        }
    };
    DataLoader loader(std::make_shared<Sequences>(),
                      {.batch_size = 2, .num_workers = 2, .collate = Collate::pad});
    std::vector<Shape> shapes;
    for (Batch& batch : loader.epoch(0)) {
        REQUIRE(batch.size() == 3);
        shapes.push_back(batch[0].shape());
        CHECK(batch[2].shape() == batch[0].shape());
    }
    CHECK(shapes == std::vector<Shape>{{2, 2}, {2, 4}, {1, 5}});
}

TEST_CASE("CachedDataset reads each example once within its budget and evicts the oldest",
          "[datasets][loader]") {
    auto counting = std::make_shared<CountingDataset>();
    // Example i holds (i + 1) float32 + one int64: 4 (i + 1) + 8 bytes. Budget: 60 bytes.
    CachedDataset cache(counting, 60);
    CHECK(cache.size() == 8);
    for (int pass = 0; pass < 3; ++pass) {
        CHECK(cache.get(0)[0].to_vector<float>() == std::vector<float>{0.0f});
        CHECK(cache.get(2)[1].item<int64_t>() == 2);
    }
    CHECK(counting->reads == 2);  // 12 + 20 bytes cached
    CHECK(cache.stats().hits == 4);
    CHECK(cache.stats().bytes == 32);
    cache.get(0);  // 0 is now the most recent
    cache.get(3);  // 24 bytes: 56 in all
    cache.get(4);  // 28 bytes: evicts 2 and then 0, the least recent
    CHECK(cache.stats().entries == 2);
    CHECK(cache.stats().bytes == 52);
    const int64_t reads = counting->reads;
    cache.get(3);
    CHECK(counting->reads == reads);
    cache.get(0);
    CHECK(counting->reads == reads + 1);
    // An example over the whole budget is served but never cached.
    CachedDataset tiny(counting, 4);
    tiny.get(7);
    tiny.get(7);
    CHECK(tiny.stats().entries == 0);
    CHECK(tiny.stats().misses == 2);

    // Concurrent readers through a loader with workers get the same batches as without.
    auto cached = std::make_shared<CachedDataset>(counting, 1 << 20);
    DataLoader threaded(
        cached, {.batch_size = 3, .shuffle = true, .num_workers = 3, .collate = Collate::pad});
    DataLoader direct(counting, {.batch_size = 3, .shuffle = true, .collate = Collate::pad});
    for (int64_t epoch = 0; epoch < 2; ++epoch) {
        std::vector<Batch> a, b;
        for (Batch& batch : threaded.epoch(epoch)) a.push_back(batch);
        for (Batch& batch : direct.epoch(epoch)) b.push_back(batch);
        REQUIRE(a.size() == b.size());
        for (size_t i = 0; i < a.size(); ++i)
            for (size_t k = 0; k < 3; ++k)
                CHECK(a[i][k].to(DType::float64).to_vector<double>() ==
                      b[i][k].to(DType::float64).to_vector<double>());
    }
    require_error([&] { CachedDataset(nullptr, 1); }, {"[CachedDataset]", "null"});
    require_error([&] { CachedDataset(counting, -1); }, {"[CachedDataset]", "-1"});
}
