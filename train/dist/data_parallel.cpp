// Data-parallel helpers over a ProcessGroup: broadcast of a module's state, the config check,
// and the bucketed gradient average.
#include "train/dist/data_parallel.h"

#include <algorithm>
#include <cstring>

#include "core/autograd.h"
#include "core/error.h"
#include "core/profiler.h"
#include "ops/elementwise.h"

namespace lumen::train::dist {

namespace {

// Every tensor from rank `root`, in place.
void broadcast_all(ProcessGroup& group, const std::vector<nn::NamedTensor>& tensors, int root) {
    NoGradGuard no_grad;
    for (const auto& [name, tensor] : tensors) {
        if (tensor.is_contiguous()) {
            Tensor alias = tensor.detach();
            group.broadcast(alias, root);
        } else {
            Tensor copy = tensor.contiguous();
            group.broadcast(copy, root);
            Tensor target = tensor;
            target.copy_(copy);
        }
    }
}

}  // namespace

void broadcast_module(ProcessGroup& group, nn::Module& module, int root) {
    if (group.world_size() == 1) return;
    std::vector<nn::NamedTensor> tensors = module.named_parameters();
    for (nn::NamedTensor& buffer : module.named_buffers()) tensors.push_back(buffer);
    broadcast_all(group, tensors, root);
}

void broadcast_buffers(ProcessGroup& group, nn::Module& module, int root) {
    if (group.world_size() == 1) return;
    broadcast_all(group, module.named_buffers(), root);
}

std::vector<std::vector<double>> all_gather_numbers(ProcessGroup& group,
                                                    const std::vector<double>& numbers) {
    if (group.world_size() == 1) return {numbers};
    // The lengths first, then every rank's numbers padded to the longest.
    std::vector<int64_t> lengths =
        group.all_gather(from_vector<int64_t>({int64_t(numbers.size())})).to_vector<int64_t>();
    const int64_t longest = *std::max_element(lengths.begin(), lengths.end());
    std::vector<std::vector<double>> out(lengths.size());
    if (longest == 0) return out;
    std::vector<double> padded = numbers;
    padded.resize(size_t(longest), 0.0);
    std::vector<double> all = group.all_gather(from_vector(padded, {longest})).to_vector<double>();
    for (size_t r = 0; r < out.size(); ++r) {
        auto begin = all.begin() + int64_t(r) * longest;
        out[r].assign(begin, begin + lengths[r]);
    }
    return out;
}

std::string broadcast_string(ProcessGroup& group, const std::string& text, int root) {
    if (group.world_size() == 1) return text;
    Tensor length = from_vector<int64_t>({int64_t(text.size())});
    group.broadcast(length, root);
    Tensor bytes = zeros({length.item<int64_t>()}, DType::uint8);
    if (group.rank() == root && !text.empty())
        std::memcpy(bytes.data_ptr(), text.data(), text.size());
    group.broadcast(bytes, root);
    return std::string(static_cast<const char*>(bytes.data_ptr()), size_t(bytes.numel()));
}

uint64_t fnv1a_hash(const std::string& text) {
    uint64_t hash = 14695981039346656037ull;
    for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
    return hash;
}

void check_same_config(ProcessGroup& group, const std::string& config_json) {
    if (group.world_size() == 1) return;
    Tensor hash = from_vector<int64_t>({int64_t(fnv1a_hash(config_json))});
    std::vector<int64_t> hashes = group.all_gather(hash).to_vector<int64_t>();
    std::string differing;
    for (size_t r = 1; r < hashes.size(); ++r)
        if (hashes[r] != hashes[0])
            differing += (differing.empty() ? "" : ", ") + std::to_string(r);
    LUMEN_CHECK(differing.empty(), "dist", "the resolved config of rank(s) ", differing,
                " differs from rank 0's (", group.world_size(),
                " ranks): start every rank with the same config file and --set flags");
}

GradientReducer::GradientReducer(std::shared_ptr<ProcessGroup> group,
                                 const std::vector<Tensor>& parameters, int64_t bucket_bytes)
    : group_(std::move(group)) {
    LUMEN_CHECK(group_ != nullptr, "GradientReducer", "needs a process group, got null");
    LUMEN_CHECK(bucket_bytes >= 1, "GradientReducer", "bucket_bytes must be >= 1, got ",
                bucket_bytes);
    // Backward reaches the last layers first, so buckets are filled from the end (as DDP's);
    // a bucket holds one dtype on one device, the buffer it is reduced in.
    Bucket current;
    for (auto it = parameters.rbegin(); it != parameters.rend(); ++it) {
        if (!it->requires_grad()) continue;
        const bool fits =
            current.parameters.empty() ||
            (it->dtype() == current.parameters[0].dtype() &&
             it->device() == current.parameters[0].device() &&
             (current.numel + it->numel()) * int64_t(it->element_size()) <= bucket_bytes);
        if (!fits) {
            buckets_.push_back(std::move(current));
            current = Bucket{};
        }
        current.parameters.push_back(*it);
        current.numel += it->numel();
    }
    if (!current.parameters.empty()) buckets_.push_back(std::move(current));
    for (size_t b = 0; b < buckets_.size(); ++b)
        for (size_t i = 0; i < buckets_[b].parameters.size(); ++i)
            where_.emplace(buckets_[b].parameters[i].impl().get(), std::make_pair(b, i));
    reset();
}

LeafReadyHook GradientReducer::hook() {
    if (group_->world_size() == 1) return {};
    return [this](const TensorImpl* leaf) { mark_ready(leaf); };
}

void GradientReducer::mark_ready(const TensorImpl* leaf) {
    auto it = where_.find(leaf);
    if (it == where_.end()) return;  // not a parameter (an input that requires grad)
    auto [b, i] = it->second;
    Bucket& bucket = buckets_[b];
    LUMEN_CHECK(!bucket.ready[i], "GradientReducer", "the gradient of a parameter of shape ",
                bucket.parameters[i].shape(),
                " was made again after its bucket's all-reduce had started: run one backward "
                "per step with the hook installed");
    bucket.ready[i] = true;
    --bucket.waiting;
    NoGradGuard no_grad;
    while (next_ < buckets_.size() && buckets_[next_].waiting == 0) start(buckets_[next_++]);
    for (size_t k = 0; k < next_; ++k) buckets_[k].work->poll();
}

void GradientReducer::average() {
    if (group_->world_size() == 1) return;
    NoGradGuard no_grad;
    started_in_backward_ = int64_t(next_);
    while (next_ < buckets_.size()) start(buckets_[next_++]);
    for (Bucket& bucket : buckets_) finish(bucket);
    reset();
}

void GradientReducer::reset() {
    next_ = 0;
    for (Bucket& bucket : buckets_) {
        bucket.waiting = int64_t(bucket.parameters.size());
        bucket.ready.assign(bucket.parameters.size(), false);
        bucket.work.reset();
        bucket.flat = Tensor();
    }
}

void GradientReducer::start(Bucket& bucket) {
    profiler::Scope profile(profiler::Kind::op, "grad all_reduce start");
    // Layout of the buffer: every gradient flattened, then one flag per parameter (1 where this
    // rank has a gradient), so that the sum also says whether any rank had one.
    const Tensor& first = bucket.parameters[0];
    const int64_t count = int64_t(bucket.parameters.size());
    bucket.flat = zeros({bucket.numel + count}, first.dtype(), first.device());
    int64_t offset = 0;
    for (int64_t i = 0; i < count; ++i) {
        const Tensor& parameter = bucket.parameters[size_t(i)];
        const int64_t n = parameter.numel();
        if (Tensor grad = parameter.grad(); grad.defined()) {
            bucket.flat.narrow(0, offset, n).copy_(grad.reshape({n}));
            bucket.flat.narrow(0, bucket.numel + i, 1).fill_(1.0);
        }
        offset += n;
    }
    bucket.work = group_->all_reduce_async(bucket.flat);
}

void GradientReducer::finish(Bucket& bucket) {
    {
        // The communication backward did not hide, in `lumen train --profile`'s table.
        profiler::Scope profile(profiler::Kind::op, "grad all_reduce wait", &bucket.flat);
        bucket.work->wait();
    }
    const Tensor& flat = bucket.flat;
    const int64_t count = int64_t(bucket.parameters.size());
    const std::vector<double> flags =
        flat.narrow(0, bucket.numel, count).to(DType::float64).cpu().to_vector<double>();
    const double ranks = double(group_->world_size());
    int64_t offset = 0;
    for (int64_t i = 0; i < count; ++i) {
        const Tensor& parameter = bucket.parameters[size_t(i)];
        const int64_t n = parameter.numel();
        if (flags[size_t(i)] > 0) {
            Tensor mean = div(flat.narrow(0, offset, n), ranks).view(parameter.shape());
            if (Tensor grad = parameter.grad(); grad.defined()) {
                grad.copy_(mean);
            } else {
                parameter.set_grad(mean.contiguous());
            }
        }
        offset += n;
    }
}

}  // namespace lumen::train::dist
