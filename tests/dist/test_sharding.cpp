// Sharded data: the loader's training shards (DataLoaderOptions::num_replicas, as
// DistributedSampler: disjoint, together the epoch's permutation, padded by wrapping around,
// the same batches whatever the workers) and evaluation blocks (contiguous_shards), and the
// task meters' states, which put a sharded evaluation back together (TaskMeter::merge).
#include <cmath>

#include <catch2/catch.hpp>

#include "datasets/loader.h"
#include "support/gradcheck.h"
#include "train/task.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

std::shared_ptr<datasets::TensorDataset> numbers(int64_t n) {
    std::vector<int64_t> values(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) values[size_t(i)] = i;
    return std::make_shared<datasets::TensorDataset>(
        std::vector<Tensor>{from_vector<int64_t>(values, {n})});
}

}  // namespace

TEST_CASE("loader shards: rank r takes positions r, r + N, ... of the padded permutation",
          "[datasets][loader][dist]") {
    const int64_t replicas = 3;
    datasets::DataLoaderOptions options{.batch_size = 2, .shuffle = true, .seed = 5};
    datasets::DataLoader whole(numbers(10), options);
    for (int64_t epoch : {0, 1}) {
        const std::vector<int64_t> order = whole.epoch_order(epoch);
        for (int64_t rank = 0; rank < replicas; ++rank) {
            options.num_replicas = replicas;
            options.rank = rank;
            options.num_workers = rank;  // workers change nothing
            datasets::DataLoader shard(numbers(10), options);
            CHECK(shard.num_examples() == 4);  // ceil(10 / 3): 12 positions, 2 of them repeats
            CHECK(shard.num_batches() == 2);
            std::vector<int64_t> expected;
            for (int64_t i = 0; i < 4; ++i) expected.push_back(order[size_t((i * 3 + rank) % 10)]);
            CHECK(shard.epoch_order(epoch) == expected);
            std::vector<int64_t> seen;
            for (datasets::Batch& batch : shard.epoch(epoch)) {
                std::vector<int64_t> values = batch[0].to_vector<int64_t>();
                seen.insert(seen.end(), values.begin(), values.end());
            }
            CHECK(seen == expected);
        }
    }
}

TEST_CASE("loader shards: a rank outside 0..num_replicas-1 is refused", "[datasets][loader]") {
    require_error([] { datasets::DataLoader loader(numbers(4), {.num_replicas = 2, .rank = 2}); },
                  {"[DataLoader]", "rank 2 of 2"});
    require_error([] { datasets::DataLoader loader(numbers(4), {.num_replicas = 0}); },
                  {"[DataLoader]", "num_replicas >= 1"});
}

TEST_CASE("loader shards: contiguous shards are consecutive unpadded blocks",
          "[datasets][loader][dist]") {
    datasets::DataLoaderOptions options{.batch_size = 2, .shuffle = true, .seed = 7};
    const std::vector<int64_t> order = datasets::DataLoader(numbers(10), options).epoch_order(0);
    std::vector<int64_t> joined;
    for (int64_t rank = 0; rank < 3; ++rank) {
        options.num_replicas = 3;
        options.rank = rank;
        options.contiguous_shards = true;
        datasets::DataLoader block(numbers(10), options);
        CHECK(block.num_examples() == (rank == 2 ? 4 : 3));  // 3, 3, 4
        std::vector<int64_t> part = block.epoch_order(0);
        joined.insert(joined.end(), part.begin(), part.end());
    }
    CHECK(joined == order);
    options.num_replicas = 4;  // more ranks than examples: some blocks are empty
    options.rank = 0;
    CHECK(datasets::DataLoader(numbers(2), options).num_examples() == 0);
}

namespace {

// The result of a meter fed batches [0, 2), nothing and [2, 6) of (output, target) against one
// made from the merged states of three meters fed those parts.
void require_merge_matches(const train::Task& task, const Tensor& output, const Tensor& target) {
    std::unique_ptr<train::TaskMeter> whole = task.meter(), merged = task.meter();
    std::vector<std::unique_ptr<train::TaskMeter>> parts;
    for (int i = 0; i < 3; ++i) parts.push_back(task.meter());
    whole->add(output, {output, target}, 4.5);
    parts[0]->add(output.narrow(0, 0, 2), {output, target.narrow(0, 0, 2)}, 1.5);
    parts[2]->add(output.narrow(0, 2, 4), {output, target.narrow(0, 2, 4)}, 3.0);
    for (const auto& part : parts) merged->merge(part->state());
    train::EvalResult want, got;
    whole->finish(want);
    merged->finish(got);
    CHECK(got.loss == want.loss);
    CHECK(got.count == want.count);
    CHECK(got.metrics.size() == want.metrics.size());
    for (const auto& [name, value] : want.metrics) {
        INFO(name);
        CHECK(
            (std::isnan(value) ? std::isnan(got.metrics.at(name)) : got.metrics.at(name) == value));
    }
    CHECK(got.confusion == want.confusion);
    REQUIRE(got.case_rows.size() == want.case_rows.size());
    for (size_t i = 0; i < want.case_rows.size(); ++i)
        for (size_t j = 0; j < want.case_rows[i].size(); ++j)
            CHECK((std::isnan(want.case_rows[i][j]) ? std::isnan(got.case_rows[i][j])
                                                    : got.case_rows[i][j] == want.case_rows[i][j]));
}

}  // namespace

TEST_CASE("task meters: merged states of consecutive parts finish as the whole",
          "[train][task][dist]") {
    train::TaskOptions classify{.num_classes = 3, .top_k = 2};
    require_merge_matches(*train::make_task(classify), random_input({6, 3}, 4),
                          from_vector<int64_t>({0, 2, 1, 1, 0, 2}, {6}));
    train::TaskOptions segment{.kind = "segmentation", .num_classes = 3};
    require_merge_matches(*train::make_task(segment), random_input({6, 3, 4, 4}, 5),
                          random_index({6, 4, 4}, 3, 6));
    train::TaskOptions enhance{.kind = "enhancement"};
    require_merge_matches(*train::make_task(enhance), random_input({6, 1, 4, 4}, 7),
                          random_input({6, 1, 4, 4}, 8));
    std::unique_ptr<train::TaskMeter> meter = train::make_task(segment)->meter();
    require_error([&] { meter->merge({0.0, 5.0, 1.0}); }, {"[evaluate]", "rows of 6"});
}
