// The profiler (core/profiler.h): ops, kernels, backward nodes and modules recorded per step
// with their bytes and input shapes; nested times (self <= total); a Chrome trace that parses;
// events of other threads on their own tracks; a scope that outlives its profiler; one
// profiler at a time; and nothing recorded while none is alive.
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/profiler.h"
#include "nn/holder.h"
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

struct TinyNet : nn::Module {
    TinyNet() : nn::Module("TinyNet") {
        conv =
            register_module("conv", nn::make<nn::Conv2d>(2, 4, 3, nn::ConvOptions{.padding = {1}}));
        fc = register_module("fc", nn::make<nn::Linear>(4 * 6 * 6, 3));
    }
    Tensor forward(const Tensor& x) override { return fc(relu(conv(x)).flatten(1)); }
    nn::Holder<nn::Conv2d> conv;
    nn::Holder<nn::Linear> fc;
};

const Profiler::Row* find_row(const std::vector<Profiler::Row>& rows, profiler::Kind kind,
                              const std::string& name) {
    for (const Profiler::Row& row : rows)
        if (row.kind == kind && row.name == name) return &row;
    return nullptr;
}

}  // namespace

TEST_CASE("the profiler records ops, kernels, backward nodes and modules per step",
          "[core][profiler]") {
    manual_seed(0);
    TinyNet net;
    Tensor x = randn({5, 2, 6, 6});
    CHECK_FALSE(profiler::recording());
    Profiler profile;
    CHECK(profiler::recording());
    for (int step = 0; step < 3; ++step) {
        Tensor loss = sum(square(net(x)));
        loss.backward();
        profile.step();
    }
    profile.stop();
    CHECK_FALSE(profiler::recording());
    CHECK(profile.steps() == 3);
    std::vector<Profiler::Row> rows = profile.summary();

    const Profiler::Row* conv_op = find_row(rows, profiler::Kind::op, "conv2d");
    const Profiler::Row* conv_kernel = find_row(rows, profiler::Kind::kernel, "conv_forward");
    const Profiler::Row* conv_backward =
        find_row(rows, profiler::Kind::backward, "conv2d backward");
    const Profiler::Row* conv_module = find_row(rows, profiler::Kind::module, "Conv2d");
    const Profiler::Row* relu_op = find_row(rows, profiler::Kind::op, "relu");
    REQUIRE(conv_op != nullptr);
    REQUIRE(conv_kernel != nullptr);
    REQUIRE(conv_backward != nullptr);
    REQUIRE(conv_module != nullptr);
    REQUIRE(relu_op != nullptr);
    CHECK(conv_op->calls == 3);
    CHECK(conv_module->calls == 3);
    CHECK(conv_backward->calls == 3);
    CHECK(relu_op->calls == 3);
    CHECK(conv_op->shape == "[5, 2, 6, 6]");
    CHECK(conv_kernel->shape == "[5, 4, 6, 6]");  // conv_forward dispatches on its output
    // The conv's output, 5 x 4 x 6 x 6 floats a call, is allocated inside the op.
    CHECK(conv_op->bytes >= 3 * 5 * 4 * 6 * 6 * 4);
    CHECK(relu_op->self_bytes == 3 * 5 * 4 * 6 * 6 * 4);
    // Nesting: the module contains the op, which contains its kernel.
    CHECK(conv_module->total_ms >= conv_op->total_ms);
    CHECK(conv_op->total_ms >= conv_kernel->total_ms);
    for (const Profiler::Row& row : rows) {
        INFO(row.name);
        CHECK(row.total_ms >= 0.0);
        CHECK(row.self_ms <= row.total_ms + 1e-9);
        CHECK(row.self_ms >= -1e-6);
        CHECK(row.max_ms <= row.total_ms + 1e-9);
        CHECK(row.bytes >= row.self_bytes);
    }

    std::ostringstream table;
    profile.print_table(table);
    const std::string text = table.str();
    CHECK(text.find("profile: 3 steps") != std::string::npos);
    CHECK(text.find("ops and backward nodes by total time") != std::string::npos);
    CHECK(text.find("kernels by total time") != std::string::npos);
    CHECK(text.find("by bytes allocated") != std::string::npos);
    CHECK(text.find("conv2d backward") != std::string::npos);
    CHECK(text.find("[5, 2, 6, 6]") != std::string::npos);
}

TEST_CASE("the Chrome trace parses and holds every event, thread tracks and steps",
          "[core][profiler]") {
    TempDir dir("profiler_trace");
    Tensor a = randn({64, 64});
    Profiler profile;
    Tensor b = matmul(a, a);
    profile.step();
    std::thread worker([&] { Tensor c = exp(a); });  // another thread: its own track
    worker.join();
    profile.step();
    profile.stop();
    const std::string path = dir.file("trace.json");
    profile.write_chrome_trace(path);
    std::ifstream file(path);
    nlohmann::json trace = nlohmann::json::parse(file);
    REQUIRE(trace["traceEvents"].is_array());
    std::set<int> tids;
    int steps = 0, matmuls = 0, exps = 0;
    for (const nlohmann::json& event : trace["traceEvents"]) {
        if (event["ph"] == "i") ++steps;
        if (event["ph"] != "X") continue;
        CHECK(event["dur"].get<double>() >= 0.0);
        CHECK(event["ts"].get<double>() >= 0.0);
        tids.insert(event["tid"].get<int>());
        if (event["name"] == "matmul" && event["cat"] == "op") {
            ++matmuls;
            CHECK(event["args"]["input shape"] == "[64, 64]");
            CHECK(event["args"]["bytes"].get<int64_t>() >= 64 * 64 * 4);
            CHECK(event["args"]["step"] == 0);
        }
        if (event["name"] == "exp") {
            ++exps;
            CHECK(event["args"]["step"] == 1);
        }
    }
    CHECK(steps == 2);
    CHECK(matmuls == 1);
    CHECK(exps == 1);
    CHECK(tids.size() == 2);
    require_error([&] { profile.write_chrome_trace(dir.file("missing/folder/trace.json")); },
                  {"[Profiler]", "missing/folder/trace.json"});
}

TEST_CASE("profilers: one at a time, nothing recorded without one, scopes may outlive them",
          "[core][profiler]") {
    {
        profiler::Scope outside(profiler::Kind::op, "not recorded");
        CHECK_FALSE(profiler::recording());
    }
    auto first = std::make_unique<Profiler>();
    require_error([] { Profiler second; }, {"[Profiler]", "another Profiler is recording"});
    auto scope = std::make_unique<profiler::Scope>(profiler::Kind::op, "outlives");
    Tensor x = ones({4});
    first->stop();
    first.reset();
    scope.reset();  // closes after its profiler is gone: nothing to write, nothing freed
    Profiler next;  // a new one may start once the first stopped
    Tensor y = add(x, x);
    next.stop();
    const std::vector<Profiler::Row> rows = next.summary();
    REQUIRE(find_row(rows, profiler::Kind::op, "add") != nullptr);
    CHECK(find_row(rows, profiler::Kind::op, "outlives") == nullptr);
    require_error(
        [] {
            Profiler running;
            running.summary();
        },
        {"[Profiler]", "stop()"});
}
