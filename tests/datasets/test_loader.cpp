// DataLoader: every index once per epoch, drop_last, seeded shuffling, bit-identical batches
// for 0, 1 and 3 workers with random transforms, exceptions from workers, the queue's bound,
// and shutdown in the middle of an epoch.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <set>
#include <thread>

#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;
using namespace lumen::datasets;

namespace {

// n examples {image (1, 6, 5) filled with varied values, label () = index}.
std::shared_ptr<TensorDataset> numbered_dataset(int64_t n) {
    Tensor images = random_input({n, 1, 6, 5}, 3, 0.0, 1.0).to(DType::float32);
    return std::make_shared<TensorDataset>(std::vector<Tensor>{images, arange(double(n))});
}

// The label column of every batch of one epoch, concatenated.
std::vector<int64_t> epoch_labels(DataLoader& loader, int64_t epoch) {
    std::vector<int64_t> labels;
    for (Batch& batch : loader.epoch(epoch)) {
        for (int64_t label : batch[1].to_vector<int64_t>()) labels.push_back(label);
    }
    return labels;
}

std::vector<std::vector<float>> epoch_images(DataLoader& loader, int64_t epoch) {
    std::vector<std::vector<float>> images;
    for (Batch& batch : loader.epoch(epoch)) images.push_back(batch[0].to_vector<float>());
    return images;
}

// Throws at one index; counts calls (from any thread) and can sleep in each.
class TestDataset : public Dataset {
  public:
    TestDataset(int64_t n, int64_t throw_at = -1, int sleep_ms = 0)
        : n_(n), throw_at_(throw_at), sleep_ms_(sleep_ms) {}
    int64_t size() const override { return n_; }
    Example get(int64_t index) const override {
        ++calls;
        if (sleep_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms_));
        LUMEN_CHECK(index != throw_at_, "TestDataset", "cannot read example ", index);
        return {full({2}, double(index)), scalar_tensor(double(index), DType::int64)};
    }
    mutable std::atomic<int64_t> calls{0};

  private:
    int64_t n_, throw_at_;
    int sleep_ms_;
};

}  // namespace

TEST_CASE("loader: every index once per epoch, in order without shuffle", "[datasets][loader]") {
    auto dataset = numbered_dataset(23);
    for (int64_t workers : {0, 2}) {
        DataLoader loader(dataset, {.batch_size = 5, .num_workers = workers});
        CHECK(loader.num_batches() == 5);
        std::vector<int64_t> labels = epoch_labels(loader, 0);
        std::vector<int64_t> want(23);
        std::iota(want.begin(), want.end(), 0);
        CHECK(labels == want);
        loader.start_epoch(1);
        Batch first = *loader.next();
        CHECK(first[0].shape() == Shape{5, 1, 6, 5});
        CHECK(first[1].shape() == Shape{5});
        CHECK(first[0].to_vector<float>() ==
              dataset->tensors()[0].narrow(0, 0, 5).to_vector<float>());
    }
}

TEST_CASE("loader: shuffled epochs cover every index once; drop_last drops the rest",
          "[datasets][loader]") {
    auto dataset = numbered_dataset(103);
    DataLoader loader(dataset, {.batch_size = 10, .shuffle = true, .seed = 7});
    for (int64_t epoch = 0; epoch < 3; ++epoch) {
        std::vector<int64_t> labels = epoch_labels(loader, epoch);
        CHECK(labels.size() == 103);
        CHECK(std::set<int64_t>(labels.begin(), labels.end()).size() == 103);
    }
    DataLoader dropping(dataset, {.batch_size = 10, .shuffle = true, .drop_last = true, .seed = 7});
    CHECK(dropping.num_batches() == 10);
    int64_t batches = 0;
    for (Batch& batch : dropping.epoch(0)) {
        CHECK(batch[1].numel() == 10);
        ++batches;
    }
    CHECK(batches == 10);
    // The kept 100 are the first 100 of the same permutation.
    std::vector<int64_t> full_order = epoch_labels(loader, 0);
    std::vector<int64_t> dropped_order = epoch_labels(dropping, 0);
    CHECK(dropped_order == std::vector<int64_t>(full_order.begin(), full_order.begin() + 100));
}

TEST_CASE("loader: the order depends only on (seed, epoch)", "[datasets][loader]") {
    auto dataset = numbered_dataset(50);
    DataLoader a(dataset, {.batch_size = 8, .shuffle = true, .seed = 1});
    DataLoader b(dataset, {.batch_size = 8, .shuffle = true, .seed = 1, .num_workers = 2});
    DataLoader c(dataset, {.batch_size = 8, .shuffle = true, .seed = 2});
    CHECK(epoch_labels(a, 0) != epoch_labels(a, 1));
    CHECK(epoch_labels(a, 4) == epoch_labels(b, 4));
    CHECK(epoch_labels(a, 1) == epoch_labels(a, 1));  // replaying an epoch
    CHECK(epoch_labels(a, 0) != epoch_labels(c, 0));
    CHECK(a.epoch_order(3) == b.epoch_order(3));
}

TEST_CASE("loader: 0, 1 and 3 workers give bit-identical transformed batches",
          "[datasets][loader]") {
    auto dataset = numbered_dataset(61);
    TransformPtr augment = std::make_shared<Compose>(
        RandomHorizontalFlip(0.5), RandomVerticalFlip(0.5),
        RandomAffine({.degrees = 20, .translate = {0.1, 0.1}, .scale = {0.9, 1.1}, .shear = 10}),
        GaussianNoise(0.1), SaltAndPepper(0.05));
    std::vector<std::vector<std::vector<float>>> runs;
    for (int64_t workers : {0, 1, 3}) {
        DataLoader loader(dataset, {.batch_size = 4,
                                    .shuffle = true,
                                    .seed = 11,
                                    .num_workers = workers,
                                    .prefetch_factor = 1,
                                    .transform = augment});
        std::vector<std::vector<float>> images = epoch_images(loader, 0);
        std::vector<std::vector<float>> second = epoch_images(loader, 1);
        images.insert(images.end(), second.begin(), second.end());
        runs.push_back(images);
    }
    CHECK(runs[0] == runs[1]);
    CHECK(runs[0] == runs[2]);
    // The transform did something, and differently in the two epochs.
    DataLoader plain(dataset, {.batch_size = 4, .shuffle = true, .seed = 11});
    CHECK(epoch_images(plain, 0)[0] != runs[0][0]);
    CHECK(runs[0][0] != runs[0][16]);
}

TEST_CASE("loader: an epoch started at batch k gives the rest of the full epoch",
          "[datasets][loader]") {
    auto dataset = numbered_dataset(37);
    TransformPtr augment = std::make_shared<RandomRotation>(30);
    for (int64_t workers : {0, 2}) {
        INFO("workers " << workers);
        DataLoader loader(dataset, {.batch_size = 5,
                                    .shuffle = true,
                                    .seed = 4,
                                    .num_workers = workers,
                                    .transform = augment});
        std::vector<std::vector<float>> full = epoch_images(loader, 2);
        REQUIRE(full.size() == 8);
        std::vector<std::vector<float>> rest;
        for (Batch& batch : loader.epoch(2, 3)) rest.push_back(batch[0].to_vector<float>());
        CHECK(rest == std::vector<std::vector<float>>(full.begin() + 3, full.end()));
        loader.start_epoch(2, 8);  // resumed at the end: nothing left
        CHECK_FALSE(loader.next().has_value());
        require_error([&] { loader.start_epoch(0, 9); }, {"[DataLoader]", "first_batch 9", "0..8"});
    }
}

TEST_CASE("loader: an exception while making a batch reaches the consumer", "[datasets][loader]") {
    auto dataset = std::make_shared<TestDataset>(40, 17);
    for (int64_t workers : {0, 1, 3}) {
        INFO("workers " << workers);
        DataLoader loader(dataset, {.batch_size = 4, .num_workers = workers});
        loader.start_epoch(0);
        for (int b = 0; b < 4; ++b) CHECK(loader.next().has_value());
        require_error([&] { loader.next(); }, {"[TestDataset]", "cannot read example 17"});
        CHECK_FALSE(loader.next().has_value());  // the epoch ended
        int64_t seen = 0;                        // a fresh epoch runs up to the error again
        require_error(
            [&] {
                for (Batch& batch : loader.epoch(1)) seen += batch[1].numel();
            },
            {"cannot read example 17"});
        CHECK(seen == 16);
    }
}

TEST_CASE("loader: workers stay within the prefetch bound", "[datasets][loader]") {
    auto dataset = std::make_shared<TestDataset>(100);
    DataLoader loader(dataset, {.batch_size = 1, .num_workers = 1, .prefetch_factor = 2});
    loader.start_epoch(0);
    CHECK(loader.next().has_value());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    // Delivered 1, and at most 2 claimed beyond it.
    CHECK(dataset->calls.load() <= 3);
}

TEST_CASE("loader: destroying or restarting mid-epoch stops the workers", "[datasets][loader]") {
    auto dataset = std::make_shared<TestDataset>(400, -1, 20);  // a full epoch: >= 2.6 s
    auto start = std::chrono::steady_clock::now();
    {
        DataLoader loader(dataset, {.batch_size = 8, .num_workers = 3});
        loader.start_epoch(0);
        CHECK(loader.next().has_value());
        loader.start_epoch(1);  // abandons epoch 0
        CHECK(loader.next().has_value());
    }
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK(seconds < 1.5);  // two batches of 8 on 3 workers take about 0.35 s
    CHECK(dataset->calls.load() < 120);
}

TEST_CASE("loader: options and collate are checked", "[datasets][loader]") {
    auto dataset = numbered_dataset(4);
    require_error([&] { DataLoader bad(dataset, {.batch_size = 0}); },
                  {"[DataLoader]", "batch_size"});
    require_error([&] { DataLoader bad(dataset, {.num_workers = -1}); },
                  {"[DataLoader]", "num_workers"});
    require_error([&] { DataLoader bad(nullptr); }, {"[DataLoader]", "null"});
    DataLoader loader(dataset);
    require_error([&] { loader.next(); }, {"[DataLoader]", "before start_epoch"});
    require_error(
        [] {
            collate(std::vector<Example>{Example{zeros({2})}, Example{zeros({3})}});
        },
        {"[collate]", "example 1 tensor 0", "[3]", "[2]"});
    require_error([] { collate({}); }, {"[collate]", "no"});
    require_error(
        [] {
            TensorDataset({zeros({2, 3}), zeros({3})});
        },
        {"[TensorDataset]", "tensor 1", "[3]", "[2, 3]"});
}

TEST_CASE("loader: Subset picks examples by index", "[datasets][loader]") {
    auto dataset = numbered_dataset(10);
    auto subset = std::make_shared<Subset>(dataset, std::vector<int64_t>{7, 2, 2, 9});
    CHECK(subset->size() == 4);
    DataLoader loader(subset, {.batch_size = 3});
    CHECK(epoch_labels(loader, 0) == std::vector<int64_t>{7, 2, 2, 9});
    CHECK(subset->get(0)[0].to_vector<float>() == dataset->get(7)[0].to_vector<float>());
    require_error([&] { subset->get(4); }, {"[Subset]", "index 4", "4 examples"});
    require_error([&] { Subset(dataset, {0, 10}); }, {"[Subset]", "index 1 is 10", "10 examples"});
    require_error([] { Subset(nullptr, {}); }, {"[Subset]", "null"});
}

TEST_CASE("loader: random_permutation is a seeded permutation", "[datasets][loader]") {
    Generator a(5), b(5);
    std::vector<int64_t> p = random_permutation(1000, a);
    CHECK(p == random_permutation(1000, b));
    CHECK(a.offset() == b.offset());
    CHECK(p != random_permutation(1000, a));  // the generator advanced
    std::vector<int64_t> sorted = p;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t i = 0; i < 1000; ++i) REQUIRE(sorted[size_t(i)] == i);
    CHECK(random_permutation(0, a).empty());
}
