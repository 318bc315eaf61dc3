// DataLoader. Workers claim batch numbers in order from a shared counter, never more than
// num_workers * prefetch_factor ahead of the consumer (the bound of the queue), and file the
// finished batch (or the exception that stopped it) under its number; next() waits for the
// number it needs, so batches come out in order whatever the timing.
#include "datasets/loader.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <numeric>
#include <thread>

#include "datasets/random_stream.h"

namespace lumen::datasets {

namespace {

// Index value reserved for the shuffle's seed: dataset indices never reach it.
constexpr uint64_t kShuffleStream = ~uint64_t(0);

void check_field(const Example& example, const Example& first, size_t j, size_t k) {
    const Tensor& t = example[k];
    LUMEN_CHECK(t.defined(), "collate", "example ", j, " tensor ", k, " is undefined");
    LUMEN_CHECK(t.is_cpu(), "collate", "example ", j, " tensor ", k,
                " must be on the CPU, got one on ", t.device());
    LUMEN_CHECK(t.shape() == first[k].shape() && t.dtype() == first[k].dtype(), "collate",
                "example ", j, " tensor ", k, " is ", t.dtype(), " ", t.shape(),
                " but example 0 has ", first[k].dtype(), " ", first[k].shape(),
                ": expected equal shapes and dtypes");
}

}  // namespace

std::vector<int64_t> random_permutation(int64_t n, Generator& generator) {
    LUMEN_CHECK(n >= 0, "random_permutation", "n must be >= 0, got ", n);
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), int64_t(0));
    RandomStream random(generator);
    for (int64_t i = n - 1; i > 0; --i) {
        std::swap(order[size_t(i)], order[size_t(random.below(uint64_t(i) + 1))]);
    }
    return order;
}

namespace {

void check_counts(const std::vector<Example>& examples) {
    LUMEN_CHECK(!examples.empty(), "collate", "needs at least one example, got none");
    for (size_t j = 0; j < examples.size(); ++j)
        LUMEN_CHECK(examples[j].size() == examples[0].size(), "collate", "example ", j, " has ",
                    examples[j].size(), " tensors but example 0 has ", examples[0].size());
}

// Field k of every example (all of one shape and dtype), stacked along a new first dim.
Tensor stack_field(const std::vector<Example>& examples, size_t k) {
    const Example& first = examples[0];
    for (size_t j = 0; j < examples.size(); ++j) check_field(examples[j], first, j, k);
    Shape shape = first[k].shape();
    shape.insert(shape.begin(), int64_t(examples.size()));
    Tensor out = empty(shape, first[k].dtype());
    size_t bytes = size_t(first[k].numel()) * first[k].element_size();
    auto* dst = static_cast<uint8_t*>(out.data_ptr());
    for (size_t j = 0; j < examples.size(); ++j) {
        Tensor t = examples[j][k].contiguous();
        if (bytes > 0) std::memcpy(dst + j * bytes, t.data_ptr(), bytes);
    }
    return out;
}

}  // namespace

Batch collate(const std::vector<Example>& examples) {
    check_counts(examples);
    Batch batch;
    for (size_t k = 0; k < examples[0].size(); ++k) batch.push_back(stack_field(examples, k));
    return batch;
}

Batch collate_padded(const std::vector<Example>& examples, double pad_value) {
    check_counts(examples);
    const Tensor& first = examples[0][0];
    LUMEN_CHECK(first.defined() && first.ndim() >= 1, "collate",
                "padding needs a first field with a length dim, got ",
                first.defined() ? first.shape() : Shape{});
    int64_t longest = 0;
    for (size_t j = 0; j < examples.size(); ++j) {
        const Tensor& t = examples[j][0];
        LUMEN_CHECK(
            t.defined() && t.is_cpu() && t.dtype() == first.dtype() && t.ndim() == first.ndim() &&
                std::equal(t.shape().begin() + 1, t.shape().end(), first.shape().begin() + 1),
            "collate", "example ", j, " field 0 is ", t.dtype(), " ", t.shape(),
            " but example 0 has ", first.dtype(), " ", first.shape(),
            ": expected equal shapes past the first (padded) dim and equal dtypes");
        longest = std::max(longest, t.size(0));
    }
    const int64_t batch_size = int64_t(examples.size());
    Shape shape = first.shape();
    shape[0] = longest;
    shape.insert(shape.begin(), batch_size);
    Tensor padded = full(shape, pad_value, first.dtype());
    Tensor mask = zeros({batch_size, longest}, DType::bool_);
    auto* dst = static_cast<uint8_t*>(padded.data_ptr());
    auto* real = static_cast<bool*>(mask.data_ptr());
    size_t row_bytes = first.element_size();  // one position of the first dim
    for (int64_t d = 1; d < first.ndim(); ++d) row_bytes *= size_t(first.size(d));
    for (int64_t j = 0; j < batch_size; ++j) {
        Tensor t = examples[size_t(j)][0].contiguous();
        size_t bytes = size_t(t.size(0)) * row_bytes;
        if (bytes > 0)
            std::memcpy(dst + size_t(j) * size_t(longest) * row_bytes, t.data_ptr(), bytes);
        std::fill(real + j * longest, real + j * longest + t.size(0), true);
    }
    Batch batch{padded};
    for (size_t k = 1; k < examples[0].size(); ++k) batch.push_back(stack_field(examples, k));
    batch.push_back(mask);
    return batch;
}

// One epoch in progress. Workers touch the fields below `mutex` only while holding it.
struct DataLoader::Run {
    int64_t epoch = 0;
    std::vector<int64_t> order;
    int64_t num_batches = 0;
    int64_t capacity = 0;  // batches claimed but not yet delivered, at most
    std::atomic<bool> stopping{false};

    std::mutex mutex;
    std::condition_variable filed;  // a batch was filed
    std::condition_variable freed;  // the consumer took one, or stop
    int64_t next_claim = 0;
    int64_t next_deliver = 0;
    std::map<int64_t, Batch> done;
    std::map<int64_t, std::exception_ptr> failed;
    std::vector<std::thread> workers;
};

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options)
    : dataset_(std::move(dataset)), options_(std::move(options)) {
    LUMEN_CHECK(dataset_ != nullptr, "DataLoader", "needs a dataset, got null");
    LUMEN_CHECK(options_.batch_size >= 1, "DataLoader", "batch_size must be >= 1, got ",
                options_.batch_size);
    LUMEN_CHECK(options_.num_workers >= 0, "DataLoader", "num_workers must be >= 0, got ",
                options_.num_workers);
    LUMEN_CHECK(options_.prefetch_factor >= 1, "DataLoader", "prefetch_factor must be >= 1, got ",
                options_.prefetch_factor);
    LUMEN_CHECK(
        options_.num_replicas >= 1 && options_.rank >= 0 && options_.rank < options_.num_replicas,
        "DataLoader", "rank must be in 0..num_replicas-1 with num_replicas >= 1, got rank ",
        options_.rank, " of ", options_.num_replicas);
}

DataLoader::~DataLoader() {
    if (run_) stop(*run_);
}

int64_t DataLoader::num_examples() const {
    const int64_t n = dataset_->size(), replicas = options_.num_replicas, r = options_.rank;
    if (options_.contiguous_shards) return (r + 1) * n / replicas - r * n / replicas;
    return (n + replicas - 1) / replicas;
}

int64_t DataLoader::num_batches() const {
    int64_t n = num_examples(), b = options_.batch_size;
    return options_.drop_last ? n / b : (n + b - 1) / b;
}

std::vector<int64_t> DataLoader::epoch_order(int64_t epoch) const {
    std::vector<int64_t> order(size_t(dataset_->size()));
    if (options_.shuffle) {
        Generator generator(
            derive_seed(derive_seed(options_.seed, uint64_t(epoch)), kShuffleStream));
        order = random_permutation(dataset_->size(), generator);
    } else {
        std::iota(order.begin(), order.end(), int64_t(0));
    }
    if (options_.num_replicas == 1 || order.empty()) return order;
    if (options_.contiguous_shards) {
        const int64_t n = int64_t(order.size()), r = options_.rank;
        auto begin = order.begin() + r * n / options_.num_replicas;
        return std::vector<int64_t>(begin, begin + num_examples());
    }
    // This rank's shard of the order padded by wrapping around (DistributedSampler's rule).
    std::vector<int64_t> shard(static_cast<size_t>(num_examples()));
    for (size_t i = 0; i < shard.size(); ++i) {
        const int64_t position = int64_t(i) * options_.num_replicas + options_.rank;
        shard[i] = order[size_t(position) % order.size()];
    }
    return shard;
}

uint64_t DataLoader::sample_seed(int64_t epoch, int64_t index) const {
    return derive_seed(derive_seed(options_.seed, uint64_t(epoch)), uint64_t(index));
}

// Batch `batch` of the run; an empty batch when the run is stopped meanwhile.
Batch DataLoader::make_batch(const Run& run, int64_t batch) const {
    int64_t begin = batch * options_.batch_size;
    int64_t end = std::min<int64_t>(begin + options_.batch_size, int64_t(run.order.size()));
    std::vector<Example> examples;
    examples.reserve(size_t(end - begin));
    for (int64_t i = begin; i < end; ++i) {
        if (run.stopping.load(std::memory_order_relaxed)) return {};
        int64_t index = run.order[size_t(i)];
        Example example = dataset_->get(index);
        LUMEN_CHECK(!example.empty(), "DataLoader", "dataset example ", index, " has no tensors");
        Generator generator(sample_seed(run.epoch, index));
        if (options_.transform) example[0] = (*options_.transform)(example[0], generator);
        if (options_.sample_transform)
            example =
                example_of((*options_.sample_transform)(sample_of(example), generator), example);
        examples.push_back(std::move(example));
    }
    return options_.collate == Collate::pad ? collate_padded(examples, options_.pad_value)
                                            : collate(examples);
}

void DataLoader::work(Run& run) const {
    while (true) {
        int64_t batch = 0;
        {
            std::unique_lock lock(run.mutex);
            run.freed.wait(lock, [&] {
                return run.stopping || run.next_claim >= run.num_batches ||
                       run.next_claim < run.next_deliver + run.capacity;
            });
            if (run.stopping || run.next_claim >= run.num_batches) return;
            batch = run.next_claim++;
        }
        Batch made;
        std::exception_ptr error;
        try {
            made = make_batch(run, batch);
        } catch (...) {
            error = std::current_exception();
        }
        {
            std::lock_guard lock(run.mutex);
            if (error) {
                run.failed.emplace(batch, error);
            } else {
                run.done.emplace(batch, std::move(made));
            }
        }
        run.filed.notify_all();
    }
}

void DataLoader::stop(Run& run) {
    {
        std::lock_guard lock(run.mutex);
        run.stopping = true;
        run.next_deliver = run.num_batches;  // the epoch delivers nothing more
    }
    run.freed.notify_all();
    for (std::thread& worker : run.workers) worker.join();
    run.workers.clear();
    run.done.clear();
    run.failed.clear();
}

void DataLoader::start_epoch(int64_t epoch, int64_t first_batch) {
    LUMEN_CHECK(first_batch >= 0 && first_batch <= num_batches(), "DataLoader", "first_batch ",
                first_batch, " is out of range (expected 0..", num_batches(), ")");
    if (run_) stop(*run_);
    run_ = std::make_unique<Run>();
    run_->epoch = epoch;
    run_->order = epoch_order(epoch);
    run_->num_batches = num_batches();
    run_->next_claim = run_->next_deliver = first_batch;
    run_->capacity = options_.num_workers * options_.prefetch_factor;
    for (int64_t w = 0; w < options_.num_workers && first_batch < run_->num_batches; ++w) {
        run_->workers.emplace_back([this, run = run_.get()] { work(*run); });
    }
}

std::optional<Batch> DataLoader::next() {
    LUMEN_CHECK(run_ != nullptr, "DataLoader", "next() called before start_epoch()");
    Run& run = *run_;
    if (run.next_deliver >= run.num_batches) return std::nullopt;
    if (options_.num_workers == 0) {
        try {
            return make_batch(run, run.next_deliver++);
        } catch (...) {
            run.next_deliver = run.num_batches;
            throw;
        }
    }
    std::unique_lock lock(run.mutex);
    int64_t batch = run.next_deliver;
    run.filed.wait(lock, [&] { return run.done.count(batch) || run.failed.count(batch); });
    if (auto it = run.failed.find(batch); it != run.failed.end()) {
        std::exception_ptr error = it->second;
        lock.unlock();
        stop(run);
        std::rethrow_exception(error);
    }
    Batch out = std::move(run.done.at(batch));
    run.done.erase(batch);
    run.next_deliver = batch + 1;
    lock.unlock();
    run.freed.notify_all();
    return out;
}

}  // namespace lumen::datasets
