// The process group's collectives, the gradient buckets and the config check, written for any
// number of ranks: plain `lumen_tests "[dist]"` runs them as one process, and ctest's
// dist_collectives runs them under `mpirun -np 2` (tests/CMakeLists.txt, when MPI is built).
// Each rank puts rank-dependent values in and checks the closed form of the result.
#include <cstdlib>
#include <string>

#include <catch2/catch.hpp>

#include "nn/module.h"
#include "support/gradcheck.h"
#include "train/dist/backends.h"
#include "train/dist/data_parallel.h"
#include "train/dist/process_group.h"

using namespace lumen;
using namespace lumen::testing;
namespace dist = lumen::train::dist;

namespace {

dist::ProcessGroup& group() { return *dist::ProcessGroup::from_environment(); }

}  // namespace

TEST_CASE("process group: lumen info's backend line", "[dist]") {
    const std::string line = train::dist::backends_linked();
    CHECK((line.rfind("MPI linked, ", 0) == 0 || line.rfind("MPI not linked, ", 0) == 0));
    // NCCL comes only with the CUDA backend; a group of several ranks needs MPI.
    if (!cuda_built()) CHECK(line.find("NCCL not linked") != std::string::npos);
    if (train::dist::launcher_world_size() > 1) CHECK(line.rfind("MPI linked", 0) == 0);
}

TEST_CASE("process group: all_reduce sums every dtype over the ranks", "[dist]") {
    dist::ProcessGroup& g = group();
    const int n = g.world_size(), r = g.rank();
    REQUIRE(dist::launcher_world_size() == n);
    const double expected = n * (n + 1) / 2.0;  // sum of rank + 1
    for (DType dtype : {DType::float32, DType::float64, DType::int64}) {
        INFO(dtype);
        Tensor x = full({2, 3}, double(r + 1), dtype);
        g.all_reduce(x);
        require_close(x.to(DType::float64), full({2, 3}, expected, DType::float64), 0, 0);
    }
}

TEST_CASE("process group: broadcast copies the root's tensor, all_gather stacks by rank",
          "[dist]") {
    dist::ProcessGroup& g = group();
    const int n = g.world_size(), r = g.rank(), root = n - 1;
    Tensor x = tensor({10.0 * r, 10.0 * r + 1}, {2}, DType::float32);
    g.broadcast(x, root);
    require_close(x, {10.0 * root, 10.0 * root + 1}, 0, 0);

    Tensor mine = from_vector<int64_t>({r, 2 * r, 3 * r}, {3});
    Tensor all = g.all_gather(mine);
    REQUIRE(all.shape() == Shape{n, 3});
    std::vector<int64_t> values = all.to_vector<int64_t>();
    for (int k = 0; k < n; ++k)
        for (int j = 0; j < 3; ++j) CHECK(values[size_t(k * 3 + j)] == (j + 1) * k);
    g.barrier();
    CHECK(dist::broadcast_string(g, r == 0 ? "from rank 0" : "") == "from rank 0");
}

TEST_CASE("process group: bad tensors are refused with the op's name on every rank", "[dist]") {
    dist::ProcessGroup& g = group();
    Tensor strided = zeros({4, 3}).transpose(0, 1);
    require_error([&] { g.all_reduce(strided); }, {"[all_reduce]", "contiguous", "strides"});
    Tensor ints = zeros({3}, DType::int32);
    require_error([&] { g.all_reduce(ints); }, {"[all_reduce]", "int32"});
    Tensor x = zeros({3});
    require_error([&] { g.broadcast(x, g.world_size()); }, {"[broadcast]", "root"});
}

TEST_CASE("LUMEN_DIST_TIMEOUT sets every backend's collective deadline", "[dist]") {
    const char* before = std::getenv("LUMEN_DIST_TIMEOUT");
    const std::string saved = before ? before : "";
    unsetenv("LUMEN_DIST_TIMEOUT");
    CHECK(dist::collective_timeout_seconds() == 1800.0);
    setenv("LUMEN_DIST_TIMEOUT", "2.5", 1);
    CHECK(dist::collective_timeout_seconds() == 2.5);
    for (const char* bad : {"abc", "0", "-3", "5s"}) {
        setenv("LUMEN_DIST_TIMEOUT", bad, 1);
        require_error([] { dist::collective_timeout_seconds(); },
                      {"[dist]", "LUMEN_DIST_TIMEOUT", bad});
    }
    require_error([] { dist::fail_timeout("all_reduce", 3); },
                  {"[dist]", "all_reduce did not complete within 3 s", "LUMEN_DIST_TIMEOUT"});
    if (before) {
        setenv("LUMEN_DIST_TIMEOUT", saved.c_str(), 1);
    } else {
        unsetenv("LUMEN_DIST_TIMEOUT");
    }
}

TEST_CASE("GradientReducer averages gradients over the ranks, bucket by bucket", "[dist]") {
    dist::ProcessGroup& g = group();
    const int n = g.world_size(), r = g.rank();
    std::vector<Tensor> parameters;
    for (int64_t size : {5, 3, 7, 2}) parameters.push_back(zeros({size}).requires_grad_());
    Tensor frozen = zeros({4});  // no requires_grad: not reduced
    parameters.push_back(frozen);
    // Gradient rank + 1 + i on the first two; only rank 0 has one on the third; none on the
    // fourth anywhere.
    for (int i = 0; i < 2; ++i)
        parameters[size_t(i)].set_grad(full(parameters[size_t(i)].shape(), r + 1.0 + i));
    if (r == 0) parameters[2].set_grad(full({7}, 6.0));
    // 16 bytes: no two of these parameters fit one bucket, so each is a bucket of its own.
    dist::GradientReducer reducer(dist::ProcessGroup::from_environment(), parameters, 16);
    CHECK(reducer.num_buckets() == 4);
    reducer.average();
    for (int i = 0; i < 2; ++i)
        require_close(parameters[size_t(i)].grad(),
                      full(parameters[size_t(i)].shape(), (n + 1) / 2.0 + i), 1e-6, 0);
    REQUIRE(parameters[2].grad().defined());
    require_close(parameters[2].grad(), full({7}, 6.0 / n), 1e-6, 0);
    CHECK_FALSE(parameters[3].grad().defined());
    CHECK_FALSE(frozen.grad().defined());
    dist::GradientReducer one_bucket(dist::ProcessGroup::from_environment(), parameters);
    CHECK(one_bucket.num_buckets() == 1);
}

TEST_CASE("process group: all_reduce_async runs while the caller goes on", "[dist]") {
    dist::ProcessGroup& g = group();
    const int n = g.world_size(), r = g.rank();
    Tensor a = full({1000}, r + 1.0), b = full({5}, 2.0 * (r + 1), DType::float64);
    std::unique_ptr<dist::Work> first = g.all_reduce_async(a), second = g.all_reduce_async(b);
    while (!first->poll()) {
    }
    second->wait();
    first->wait();  // again: finished work returns at once
    require_close(a, full({1000}, n * (n + 1) / 2.0), 0, 0);
    require_close(b, full({5}, double(n * (n + 1)), DType::float64), 0, 0);
    Tensor ints = zeros({3}, DType::int32);
    require_error([&] { g.all_reduce_async(ints); }, {"[all_reduce]", "int32"});
}

TEST_CASE("GradientReducer's hook starts the buckets during backward, with the same averages",
          "[dist]") {
    dist::ProcessGroup& g = group();
    const int n = g.world_size(), r = g.rank();
    std::vector<Tensor> weights;
    for (int k = 0; k < 4; ++k) weights.push_back(full({3}, 0.3 * (k + 1)).requires_grad_());
    // 16 bytes: each 12-byte weight is a bucket of its own.
    dist::GradientReducer reducer(dist::ProcessGroup::from_environment(), weights, 16);
    REQUIRE(reducer.num_buckets() == 4);
    auto loss_of = [&](double input) {
        Tensor h = full({3}, input);
        for (const Tensor& w : weights) h = tanh(mul(h, w));
        return sum(h);
    };
    for (int step = 0; step < 2; ++step) {
        INFO("step " << step);
        const double input = r + 1.0 + step;
        // What the average must be: every rank's own gradients, gathered and averaged.
        std::vector<Tensor> own = grad({loss_of(input)}, weights);
        for (const Tensor& w : weights) w.set_grad(Tensor());
        {
            LeafReadyHookGuard hook(reducer.hook());
            loss_of(input).backward();
        }
        reducer.average();
        CHECK(reducer.started_in_backward() == (n > 1 ? 4 : 0));
        for (size_t k = 0; k < weights.size(); ++k) {
            Tensor all = g.all_gather(own[k].contiguous());
            require_close(weights[k].grad(), div(sum(all, {0}), double(n)), 1e-6, 0);
        }
    }
    if (n > 1) {
        // A second backward with the hook in one step would reduce some gradients twice.
        Tensor loss = loss_of(1.0);
        LeafReadyHookGuard hook(reducer.hook());
        loss.backward(Tensor(), true);
        require_error([&] { loss.backward(); }, {"[GradientReducer]", "made again", "[3]"});
        reducer.average();  // ends the buckets the first backward started, on every rank alike
    }
}

TEST_CASE("broadcast_module gives every rank rank 0's parameters and buffers", "[dist]") {
    struct Tiny : nn::Module {
        Tensor weight, running;
        explicit Tiny(double value) : nn::Module("Tiny") {
            weight = register_parameter("weight", full({2, 3}, value));
            running = register_buffer("running", full({3}, -value));
        }
    };
    dist::ProcessGroup& g = group();
    Tiny module(g.rank() + 1.0);
    dist::broadcast_module(g, module);
    require_close(module.weight, full({2, 3}, 1.0), 0, 0);
    require_close(module.running, full({3}, -1.0), 0, 0);

    Tiny buffers_only(g.rank() + 1.0);
    dist::broadcast_buffers(g, buffers_only);
    require_close(buffers_only.weight, full({2, 3}, g.rank() + 1.0), 0, 0);
    require_close(buffers_only.running, full({3}, -1.0), 0, 0);
}

TEST_CASE("check_same_config names the ranks whose config differs", "[dist]") {
    dist::ProcessGroup& g = group();
    dist::check_same_config(g, "{\"seed\": 0}");
    const std::string mine = "{\"seed\": " + std::to_string(g.rank()) + "}";
    if (g.world_size() == 1) {
        dist::check_same_config(g, mine);
    } else {
        require_error([&] { dist::check_same_config(g, mine); },
                      {"[dist]", "rank(s) 1", "differs from rank 0's"});
    }
    CHECK(dist::fnv1a_hash("") == 14695981039346656037ull);
    CHECK(dist::fnv1a_hash("a") != dist::fnv1a_hash("b"));
}
