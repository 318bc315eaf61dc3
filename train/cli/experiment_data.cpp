// The data half of the experiment builders: Fashion-MNIST (or a synthetic stand-in for tests)
// in memory, normalized once up front when no random transform follows, served by DataLoaders
// behind train::BatchSource.
#include <algorithm>

#include "core/error.h"
#include "datasets/fashion_mnist.h"
#include "datasets/loader.h"
#include "datasets/transforms.h"
#include "ops/elementwise.h"
#include "ops/interpolate.h"
#include "ops/random.h"
#include "train/cli/experiment.h"

namespace lumen::train::cli {

namespace {

constexpr double kMean = 0.2860, kStd = 0.3530;  // Fashion-MNIST's pixel mean and std

// A DataLoader seen as a BatchSource.
class LoaderSource : public train::BatchSource {
  public:
    LoaderSource(std::shared_ptr<const datasets::Dataset> data, datasets::DataLoaderOptions o)
        : examples_(data->size()), loader_(std::move(data), std::move(o)) {}
    int64_t num_batches() const override { return loader_.num_batches(); }
    int64_t num_examples() const override { return examples_; }
    int64_t batch_size() const override { return loader_.options().batch_size; }
    void start_epoch(int64_t epoch, int64_t first_batch) override {
        loader_.start_epoch(epoch, first_batch);
    }
    std::optional<std::vector<Tensor>> next() override { return loader_.next(); }

  private:
    int64_t examples_;
    datasets::DataLoader loader_;
};

struct Split {
    Tensor images, labels;  // (N, C, H, W) float32 in [0, 1], (N) int64
};

// 1x28x28 images of 10 classes whose brightness level is the class: uniform noise in [0, 0.3)
// plus 0.07 * label. Learnable in a few steps; for tests and smoke runs without the files.
Split synthetic_split(int64_t n, uint64_t seed) {
    Generator g(seed);
    Tensor labels = randint(0, 10, {n}, DType::int64, &g);
    Tensor level = mul(labels.to(DType::float32).view({n, 1, 1, 1}), 0.07);
    return {add(mul(rand({n, 1, 28, 28}, DType::float32, &g), 0.3), level).contiguous(), labels};
}

Split load_split(const nn::Options& config, bool train) {
    const int64_t subset = config.get_int(train ? "data.train_subset" : "data.test_subset");
    Split split;
    if (config.get_string("data.dataset") == "synthetic") {
        split = synthetic_split(subset > 0 ? subset : (train ? 512 : 256), train ? 11 : 12);
    } else {
        datasets::FashionMnist data = datasets::load_fashion_mnist(
            train ? datasets::Split::train : datasets::Split::test, config.get_string("data.dir"));
        split = {data.images, data.labels};
    }
    LUMEN_CHECK(subset >= 0, "config", "data.", train ? "train" : "test",
                "_subset must be >= 0, got ", subset);
    const int64_t n = std::min(subset > 0 ? subset : split.labels.numel(), split.labels.numel());
    Tensor images = split.images.narrow(0, 0, n);
    // data.resize: once for the whole split (bilinear, as the layouts' Resize).
    if (std::vector<int64_t> size = config.get_ints("data.resize"); !size.empty()) {
        LUMEN_CHECK(size.size() == 2, "config", "data.resize ", nn::format_option(size),
                    " needs one size per spatial dim (2)");
        images = interpolate(images, size, {}, "bilinear", false);
    }
    return {images.contiguous(), split.labels.narrow(0, 0, n).contiguous()};
}

// The random training transforms in torchvision order (geometry, noise), then normalize.
std::vector<datasets::TransformPtr> random_transforms(const nn::Options& config) {
    std::vector<datasets::TransformPtr> list;
    if (double p = config.get_double("data.hflip"); p > 0)
        list.push_back(std::make_shared<datasets::RandomHorizontalFlip>(p));
    if (double degrees = config.get_double("data.rotation"); degrees > 0)
        list.push_back(std::make_shared<datasets::RandomRotation>(degrees));
    if (double sigma = config.get_double("data.gaussian_noise"); sigma > 0)
        list.push_back(std::make_shared<datasets::GaussianNoise>(sigma));
    if (double amount = config.get_double("data.salt_pepper"); amount > 0)
        list.push_back(std::make_shared<datasets::SaltAndPepper>(amount));
    return list;
}

// `shard`: this rank's part of the data (DataShard).
std::shared_ptr<train::BatchSource> make_source(const nn::Options& config, Split split, bool train,
                                                DataShard shard = {}) {
    datasets::DataLoaderOptions o{
        .batch_size = config.get_int(train ? "data.batch_size" : "data.eval_batch_size"),
        .shuffle = train,
        .seed = uint64_t(config.get_int("seed")),
        .num_workers = config.get_int("data.num_workers"),
        .num_replicas = shard.world_size,
        .rank = shard.rank,
        .contiguous_shards = !train};
    std::vector<datasets::TransformPtr> transforms;
    if (train) transforms = random_transforms(config);
    const bool normalize = config.get_bool("data.normalize");
    if (normalize && transforms.empty()) {
        // Once for the whole split instead of once per image and epoch.
        split.images = div(sub(split.images, kMean), kStd);
    } else if (normalize) {
        transforms.push_back(std::make_shared<datasets::Normalize>(std::vector<double>{kMean},
                                                                   std::vector<double>{kStd}));
    }
    if (!transforms.empty()) o.transform = std::make_shared<datasets::Compose>(transforms);
    auto data =
        std::make_shared<datasets::TensorDataset>(std::vector<Tensor>{split.images, split.labels});
    return with_config_keys("data.*", [&] { return std::make_shared<LoaderSource>(data, o); });
}

DataShape shape_of(const nn::Options& config, const Split& split) {
    DataShape shape;
    shape.dataset = config.get_string("data.dataset");
    shape.channels = split.images.size(1);
    shape.img_size = shape.eval_size = {split.images.size(2), split.images.size(3)};
    shape.num_classes = 10;
    return shape;
}

// The first `subset` examples (0: all).
std::shared_ptr<const datasets::Dataset> first_n(std::shared_ptr<const datasets::Dataset> data,
                                                 int64_t subset) {
    if (subset <= 0 || subset >= data->size()) return data;
    std::vector<int64_t> indices(static_cast<size_t>(subset));
    for (int64_t i = 0; i < subset; ++i) indices[size_t(i)] = i;
    return std::make_shared<datasets::Subset>(std::move(data), std::move(indices));
}

// A split of a layout as a BatchSource: cached, cut to the subset keys, with the joint
// transforms (the random ones for training only). Token sequences are padded to the batch's
// longest with <pad> (0); 3-D evaluation examples (volumes of differing sizes) come one by one.
std::shared_ptr<train::BatchSource> layout_source(const nn::Options& config,
                                                  const datasets::LayoutData& layout,
                                                  const std::string& split, bool train,
                                                  DataShard shard = {}) {
    auto data = cached(config, layout.split(split).dataset);
    data = first_n(data, config.get_int(train ? "data.train_subset" : "data.test_subset"));
    int64_t batch = config.get_int(train ? "data.batch_size" : "data.eval_batch_size");
    if (!train && data->size() > 0 && data->get(0)[0].ndim() == 4) batch = 1;
    // sfree_vit's bag tokenizer has no padding mask (the paper's WSI batch is 1).
    LUMEN_CHECK(layout.layout != "bags" || !train || batch == 1, "config",
                "data.batch_size must be 1 for feature bags (slides hold different numbers of "
                "instances and the bag models take no padding mask), got ",
                batch);
    if (layout.layout == "bags") batch = 1;
    datasets::DataLoaderOptions o{.batch_size = batch,
                                  .shuffle = train,
                                  .seed = uint64_t(config.get_int("seed")),
                                  .num_workers = config.get_int("data.num_workers"),
                                  .num_replicas = shard.world_size,
                                  .rank = shard.rank,
                                  .contiguous_shards = !train};
    if (layout.layout == "text_csv") o.collate = datasets::Collate::pad;
    if (train) {
        std::vector<datasets::TransformPtr> transforms = random_transforms(config);
        if (!transforms.empty()) o.transform = std::make_shared<datasets::Compose>(transforms);
    }
    o.sample_transform = build_sample_pipeline(config, layout.spatial_dims, train);
    return with_config_keys("data.*", [&] { return std::make_shared<LoaderSource>(data, o); });
}

// The first example of a layout's split through the split's pipeline.
datasets::Example first_example(const nn::Options& config, const datasets::LayoutData& layout,
                                const std::string& split, bool train) {
    datasets::Example example = layout.split(split).dataset->get(0);
    if (layout.spatial_dims == 0) return example;
    datasets::SampleTransformPtr pipeline =
        build_sample_pipeline(config, layout.spatial_dims, train);
    if (!pipeline) return example;
    Generator generator(uint64_t(config.get_int("seed")));
    return datasets::example_of((*pipeline)(datasets::sample_of(example), generator), example);
}

std::vector<int64_t> spatial_size(const Tensor& image) {
    std::vector<int64_t> size;
    for (int64_t d = 1; d < image.ndim(); ++d) size.push_back(image.size(d));
    return size;
}

}  // namespace

std::string eval_split(const datasets::LayoutData& layout) {
    return layout.has_split("test") ? "test" : "val";
}

DataShape layout_shape(const nn::Options& config, const datasets::LayoutData& layout,
                       const std::string& eval) {
    DataShape shape;
    const std::string& name = layout.layout;
    shape.dataset = name;
    shape.task = name == "image_mask" || name == "decathlon" || name == "npz_slices"
                     ? "segmentation"
                 : name == "npz_pairs" ? "enhancement"
                                       : "classification";
    shape.kind = name == "bags" ? "bag" : name == "text_csv" ? "tokens" : "image";
    shape.channels = layout.channels;
    shape.num_classes = layout.num_classes;
    shape.class_names = layout.class_names;
    shape.feature_dim = layout.feature_dim;
    if (layout.vocabulary) {
        shape.vocab_size = layout.vocabulary->size();
        shape.max_length = config.get_int("data.max_length");
    }
    if (shape.kind == "image") {
        shape.img_size = spatial_size(first_example(config, layout, "train", true)[0]);
        shape.eval_size = spatial_size(first_example(config, layout, eval, false)[0]);
    }
    return shape;
}

DataSplits build_data(const nn::Options& config, const std::string& run_dir, DataShard shard) {
    if (is_layout(config.get_string("data.dataset"))) {
        datasets::LayoutData layout = load_config_layout(config, run_dir);
        const std::string test = eval_split(layout);
        DataSplits splits;
        splits.shape = layout_shape(config, layout, test);
        splits.train = layout_source(config, layout, "train", true, shard);
        splits.test = layout_source(config, layout, test, false, shard);
        splits.train_examples = splits.train->num_examples();
        splits.test_examples = splits.test->num_examples();
        splits.test_cases = layout.split(test).cases;
        splits.vocabulary = layout.vocabulary;
        return splits;
    }
    Split train = load_split(config, true), test = load_split(config, false);
    DataSplits splits;
    splits.shape = shape_of(config, train);
    splits.train_examples = train.labels.numel();
    splits.test_examples = test.labels.numel();
    splits.train = make_source(config, train, true, shard);
    splits.test = make_source(config, test, false, shard);
    return splits;
}

std::shared_ptr<train::BatchSource> build_eval_data(const nn::Options& config,
                                                    const std::string& split, DataShape* shape,
                                                    std::vector<datasets::CaseInfo>* cases,
                                                    const std::string& run_dir, DataShard shard) {
    LUMEN_CHECK(split == "train" || split == "test", "lumen",
                "--split must be train or test, got '", split, "'");
    if (is_layout(config.get_string("data.dataset"))) {
        datasets::LayoutData layout = load_config_layout(config, run_dir);
        const std::string name = split == "train" ? "train" : eval_split(layout);
        if (shape) *shape = layout_shape(config, layout, name);
        if (cases) *cases = layout.split(name).cases;
        return layout_source(config, layout, name, false, shard);
    }
    Split data = load_split(config, split == "train");
    if (shape) *shape = shape_of(config, data);
    return make_source(config, data, false, shard);
}

}  // namespace lumen::train::cli
