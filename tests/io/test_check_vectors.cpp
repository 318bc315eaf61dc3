// The conformance runner (conformance/check_vectors.h) on vectors written here: a passing op,
// wrong outputs and gradients, parameters, an unknown module, bad config and broken files.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

#include "conformance/check_vectors.h"
#include "conformance/op_vectors.h"
#include "core/safetensors.h"
#include "support/gradcheck.h"

namespace fs = std::filesystem;
using namespace lumen;
using lumen::testing::TempDir;
using namespace lumen::conformance;

namespace {

// A relu vector computed by hand: y = max(x, 0), grad = dout where x > 0.
std::map<std::string, Tensor> relu_tensors() {
    return {{"in.input", tensor({-1.5, 2.0, 0.5, -3.0}, {2, 2})},
            {"out.y", tensor({0.0, 2.0, 0.5, 0.0}, {2, 2})},
            {"dout.y", tensor({0.25, -1.0, 3.0, 7.0}, {2, 2})},
            {"grad.in.input", tensor({0.0, -1.0, 3.0, 0.0}, {2, 2})}};
}

std::map<std::string, std::string> metadata(const std::string& module,
                                            const std::string& config = "{}") {
    return {{"module", module},
            {"config", config},
            {"rtol", "0.0001"},
            {"atol", "1e-05"},
            {"note", ""}};
}

VectorResult run_one(const std::string& path) {
    return check_vector_file(path, fs::path(path).filename().string(), Device::cpu());
}

bool contains(const std::string& text, const std::string& fragment) {
    return text.find(fragment) != std::string::npos;
}

}  // namespace

TEST_CASE("check-vectors: a correct relu vector passes", "[io][check_vectors]") {
    TempDir dir("cv_pass");
    save_safetensors(dir.file("relu.safetensors"), relu_tensors(), metadata("op.relu"));
    VectorResult result = run_one(dir.file("relu.safetensors"));
    INFO(result.reason);
    REQUIRE(result.passed);
    REQUIRE(result.module == "op.relu");
    REQUIRE(result.max_abs <= 1e-6);
    REQUIRE(contains(format_result(result), "PASS  relu.safetensors  module=op.relu  max_abs="));

    std::ostringstream out;
    CheckSummary summary = check_vectors({dir.path.string()}, Device::cpu(), out);
    REQUIRE(summary.passed == 1);
    REQUIRE(summary.failed == 0);
    REQUIRE(contains(out.str(), "PASS  relu.safetensors  module=op.relu"));
    REQUIRE(contains(out.str(), "1 passed, 0 failed"));
}

TEST_CASE("check-vectors: wrong outputs and gradients fail naming the tensor",
          "[io][check_vectors]") {
    TempDir dir("cv_wrong");
    auto tensors = relu_tensors();
    tensors["out.y"] = tensor({0.0, 2.0, 0.5, 0.1}, {2, 2});
    save_safetensors(dir.file("bad_out.safetensors"), tensors, metadata("op.relu"));
    VectorResult result = run_one(dir.file("bad_out.safetensors"));
    REQUIRE_FALSE(result.passed);
    INFO(result.reason);
    REQUIRE(contains(result.reason, "out.y: max_abs=1.00e-01 at [1, 1] (got 0, want 0.1"));

    tensors = relu_tensors();
    tensors["grad.in.input"] = tensor({0.0, -1.0, 2.0, 0.0}, {2, 2});
    save_safetensors(dir.file("bad_grad.safetensors"), tensors, metadata("op.relu"));
    result = run_one(dir.file("bad_grad.safetensors"));
    REQUIRE_FALSE(result.passed);
    INFO(result.reason);
    REQUIRE(contains(result.reason, "grad.in.input: max_abs=1.00e+00 at [1, 0]"));

    tensors = relu_tensors();
    tensors["out.z"] = tensors["out.y"];
    save_safetensors(dir.file("extra_out.safetensors"), tensors, metadata("op.relu"));
    result = run_one(dir.file("extra_out.safetensors"));
    REQUIRE_FALSE(result.passed);
    REQUIRE(contains(result.reason, "the adapter returned no output 'z'"));

    std::ostringstream out;
    CheckSummary summary = check_vectors({dir.path.string()}, Device::cpu(), out);
    REQUIRE(summary.failed == 3);
    REQUIRE(contains(out.str(), "FAIL  bad_grad.safetensors  module=op.relu  grad.in.input"));
    REQUIRE(contains(out.str(), "0 passed, 3 failed"));
}

TEST_CASE("check-vectors: an unknown module is a failure, never a skip", "[io][check_vectors]") {
    TempDir dir("cv_unknown");
    save_safetensors(dir.file("foo.safetensors"), relu_tensors(), metadata("op.foo"));
    VectorResult result = run_one(dir.file("foo.safetensors"));
    REQUIRE_FALSE(result.passed);
    REQUIRE(result.reason == "unknown module 'op.foo'");
    REQUIRE(format_result(result) ==
            "FAIL  foo.safetensors  module=op.foo  unknown module 'op.foo'");
}

TEST_CASE("check-vectors: unsupported config keys and unused inputs fail", "[io][check_vectors]") {
    TempDir dir("cv_config");
    save_safetensors(dir.file("key.safetensors"), relu_tensors(),
                     metadata("op.relu", "{\"foo\": 1}"));
    VectorResult result = run_one(dir.file("key.safetensors"));
    REQUIRE_FALSE(result.passed);
    REQUIRE(contains(result.reason, "[op.relu] unsupported config key 'foo'"));

    save_safetensors(dir.file("json.safetensors"), relu_tensors(), metadata("op.relu", "{dim"));
    result = run_one(dir.file("json.safetensors"));
    REQUIRE(contains(result.reason, "metadata 'config': not valid JSON"));

    auto tensors = relu_tensors();
    tensors["in.other"] = ones({1});
    save_safetensors(dir.file("input.safetensors"), tensors, metadata("op.relu"));
    result = run_one(dir.file("input.safetensors"));
    REQUIRE(contains(result.reason, "input 'in.other' that this adapter does not take"));

    tensors = relu_tensors();
    tensors["weird"] = ones({1});
    save_safetensors(dir.file("name.safetensors"), tensors, metadata("op.relu"));
    result = run_one(dir.file("name.safetensors"));
    REQUIRE(contains(result.reason, "unexpected tensor 'weird'"));
}

TEST_CASE("check-vectors: parameters are leaves whose gradients are compared",
          "[io][check_vectors]") {
    // y = input * weight (broadcast over rows): grad.p.weight = sum over rows of dout * input.
    if (find_vector_adapter("test.scale") == nullptr) {
        register_vector_adapter("test.scale", [](VectorCall& call) {
            return TensorMap{{"y", mul(call.input("input"), call.params.at("weight"))}};
        });
    }
    TempDir dir("cv_param");
    std::map<std::string, Tensor> tensors = {{"in.input", tensor({1, 2, 3, 4}, {2, 2})},
                                             {"p.weight", tensor({0.5, -2}, {2})},
                                             {"out.y", tensor({0.5, -4, 1.5, -8}, {2, 2})},
                                             {"dout.y", tensor({1, 1, 2, 0}, {2, 2})},
                                             {"grad.p.weight", tensor({7, 2}, {2})}};
    save_safetensors(dir.file("scale.safetensors"), tensors, metadata("test.scale"));
    VectorResult result = run_one(dir.file("scale.safetensors"));
    INFO(result.reason);
    REQUIRE(result.passed);

    tensors["grad.p.weight"] = tensor({7, 3}, {2});
    save_safetensors(dir.file("scale_bad.safetensors"), tensors, metadata("test.scale"));
    result = run_one(dir.file("scale_bad.safetensors"));
    REQUIRE(contains(result.reason, "grad.p.weight: max_abs=1.00e+00 at [1]"));
}

TEST_CASE("check-vectors: unreadable files fail with the loader's message", "[io][check_vectors]") {
    TempDir dir("cv_corrupt");
    save_safetensors(dir.file("a_good.safetensors"), relu_tensors(), metadata("op.relu"));
    // The 8-byte length field reads as a huge header length.
    std::ofstream(dir.file("b_corrupt.safetensors"), std::ios::binary)
        << std::string("\x10\0\0\0garbage", 11);
    std::ostringstream out;
    CheckSummary summary = check_vectors({dir.path.string()}, Device::cpu(), out);
    REQUIRE(summary.passed == 1);
    REQUIRE(summary.failed == 1);
    INFO(out.str());
    REQUIRE(contains(out.str(), "FAIL  b_corrupt.safetensors  module=?  [safetensors] "));
    REQUIRE(contains(out.str(), "runs past the end of the file"));
    // Lines come in sorted order.
    REQUIRE(out.str().find("a_good") < out.str().find("b_corrupt"));
}

TEST_CASE("check-vectors: missing paths and empty directories are errors", "[io][check_vectors]") {
    TempDir dir("cv_empty");
    std::ostringstream out;
    lumen::testing::require_error([&] { check_vectors({dir.path.string()}, Device::cpu(), out); },
                                  {"[check-vectors]", "no *.safetensors vectors found"});
    std::string missing = dir.file("nope");
    lumen::testing::require_error([&] { check_vectors({missing}, Device::cpu(), out); },
                                  {"[check-vectors]", "no such file or directory", missing});
}

// `lumen check-vectors --device cuda` over everything ctest runs on the CPU: every op, module
// and model vector committed under tests/data/oracle, outputs and gradients on the GPU.
TEST_CASE("check-vectors: every committed oracle vector passes on the GPU",
          "[cuda][io][check_vectors]") {
    if (!lumen::testing::have_gpu()) return;
    std::ostringstream out;
    CheckSummary summary =
        check_vectors({std::string(LUMEN_TEST_DATA) + "/oracle"}, Device::cuda(), out);
    INFO(out.str());
    CHECK(summary.failed == 0);
    CHECK(summary.passed > 0);
}

TEST_CASE("check-vectors: infinities and NaNs must match exactly, position by position",
          "[io][check_vectors]") {
    // relu(-inf, inf, NaN, 1.5) = (0, inf, NaN, 1.5). With want = +-inf, atol + rtol * inf
    // allowed anything, and |got - want| - allowed = NaN never exceeded it; a NaN want passed
    // any number the same way.
    TempDir dir("cv_nonfinite");
    auto vector = [&](const std::string& name, const std::vector<double>& want) {
        std::map<std::string, Tensor> tensors = {
            {"in.input", tensor({-INFINITY, INFINITY, NAN, 1.5}, {4})},
            {"out.y", from_vector(want, {4})}};
        save_safetensors(dir.file(name), tensors, metadata("op.relu"));
        return run_one(dir.file(name));
    };
    VectorResult result = vector("right.safetensors", {0.0, INFINITY, NAN, 1.5});
    INFO(result.reason);
    REQUIRE(result.passed);
    REQUIRE(result.max_abs == 0.0);

    result = vector("want_minus_inf.safetensors", {-INFINITY, INFINITY, NAN, 1.5});
    REQUIRE_FALSE(result.passed);
    REQUIRE(contains(result.reason, "out.y: max_abs=inf at [0] (got 0, want -inf"));
    result = vector("want_inf_got_number.safetensors", {0.0, INFINITY, NAN, INFINITY});
    REQUIRE_FALSE(result.passed);
    REQUIRE(contains(result.reason, "at [3] (got 1.5, want inf"));
    result = vector("want_nan.safetensors", {0.0, INFINITY, NAN, NAN});
    REQUIRE_FALSE(result.passed);
    REQUIRE(contains(result.reason, "at [3] (got 1.5, want nan"));
    result = vector("got_inf.safetensors", {0.0, 1e30, NAN, 1.5});
    REQUIRE_FALSE(result.passed);
    REQUIRE(contains(result.reason, "at [1] (got inf, want 1e+30"));
    result = vector("got_nan.safetensors", {0.0, INFINITY, 2.0, 1.5});
    REQUIRE_FALSE(result.passed);
    REQUIRE(contains(result.reason, "at [2] (got nan, want 2"));
    result = vector("wrong_sign.safetensors", {0.0, -INFINITY, NAN, 1.5});
    REQUIRE_FALSE(result.passed);
    REQUIRE(contains(result.reason, "at [1] (got inf, want -inf"));
}

TEST_CASE("check-vectors: a 0-d result matches a scalar stored as [1]", "[io][check_vectors]") {
    // torch.matmul of two vectors and torch.var over all dims return 0-d tensors; the vectors
    // store every scalar with shape [1].
    TempDir dir("cv_scalar");
    std::map<std::string, Tensor> dot = {{"in.input", tensor({1.0, -2.0, 0.5}, {3})},
                                         {"in.other", tensor({0.25, 3.0, -1.0}, {3})},
                                         {"out.y", tensor({-6.25}, {1})},
                                         {"dout.y", tensor({2.0}, {1})},
                                         {"grad.in.input", tensor({0.5, 6.0, -2.0}, {3})},
                                         {"grad.in.other", tensor({2.0, -4.0, 1.0}, {3})}};
    save_safetensors(dir.file("dot.safetensors"), dot, metadata("op.matmul"));
    VectorResult result = run_one(dir.file("dot.safetensors"));
    INFO(result.reason);
    CHECK(result.passed);

    // var([1, 2, 3, 6]) = 14 / 3 (unbiased); d var / dx = 2 (x - 3) / 3.
    std::map<std::string, Tensor> var = {
        {"in.input", tensor({1.0, 2.0, 3.0, 6.0}, {2, 2})},
        {"out.y", tensor({14.0 / 3}, {1})},
        {"dout.y", tensor({1.0}, {1})},
        {"grad.in.input", tensor({-4.0 / 3, -2.0 / 3, 0.0, 2.0}, {2, 2})}};
    save_safetensors(dir.file("var.safetensors"), var, metadata("op.var", "{\"dim\": null}"));
    result = run_one(dir.file("var.safetensors"));
    INFO(result.reason);
    CHECK(result.passed);

    // Still compared: a wrong scalar fails, and [1] is the only shape a 0-d result matches.
    var["out.y"] = tensor({4.0}, {1});
    save_safetensors(dir.file("var_wrong.safetensors"), var, metadata("op.var"));
    result = run_one(dir.file("var_wrong.safetensors"));
    CHECK_FALSE(result.passed);
    CHECK(contains(result.reason, "out.y: max_abs=6.67e-01 at [0]"));
    var["out.y"] = tensor({14.0 / 3}, {1, 1});
    save_safetensors(dir.file("var_shape.safetensors"), var, metadata("op.var"));
    result = run_one(dir.file("var_shape.safetensors"));
    CHECK_FALSE(result.passed);
    CHECK(contains(result.reason, "out.y: shape [] but the vector has [1, 1]"));
}

TEST_CASE("check-vectors: metadata 'tolerance' sets a tensor's own rtol and atol",
          "[io][check_vectors]") {
    TempDir dir("cv_tolerance");
    auto tensors = relu_tensors();
    tensors["out.y"] = tensor({0.0, 2.0, 0.5, 0.001}, {2, 2});  // off by 1e-3 at [1, 1]
    auto meta = metadata("op.relu");
    meta["atol"] = "0.01";
    save_safetensors(dir.file("loose.safetensors"), tensors, meta);
    CHECK(run_one(dir.file("loose.safetensors")).passed);

    meta["tolerance"] = R"({"out.y": [0, 1e-4], "grad.in.input": [0, 0]})";
    save_safetensors(dir.file("tight.safetensors"), tensors, meta);
    VectorResult result = run_one(dir.file("tight.safetensors"));
    CHECK_FALSE(result.passed);
    CHECK(contains(result.reason,
                   "out.y: max_abs=1.00e-03 at [1, 1] (got 0, want 0.001, "
                   "allowed 1.00e-04)"));

    // A denormal tolerance is a number too (std::stod refused it as out of range).
    meta["tolerance"] = R"({"out.y": [0, 1.2e-322]})";
    meta["atol"] = "1.2e-322";
    save_safetensors(dir.file("denormal.safetensors"), relu_tensors(), meta);
    result = run_one(dir.file("denormal.safetensors"));
    INFO(result.reason);
    CHECK(result.passed);

    meta["tolerance"] = R"({"out.z": [0, 1]})";
    save_safetensors(dir.file("unknown.safetensors"), tensors, meta);
    CHECK(contains(run_one(dir.file("unknown.safetensors")).reason,
                   "metadata 'tolerance' names 'out.z', which is not an out.* or grad.* tensor"));
    meta["tolerance"] = R"({"out.y": [0, -1]})";
    save_safetensors(dir.file("negative.safetensors"), tensors, meta);
    CHECK(contains(run_one(dir.file("negative.safetensors")).reason,
                   "metadata 'tolerance' of 'out.y' must be [rtol, atol]"));
}
