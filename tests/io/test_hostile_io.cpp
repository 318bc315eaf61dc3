// Files from hostile or broken sources: strict JSON (depth cap, duplicate keys) in linear time,
// opening refuses FIFOs and directories at once, size caps before reading, write errors that
// give the failing call's own reason (a full disk, injected or real), and the fault points.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <sys/stat.h>

#include "core/fault.h"
#include "core/file_io.h"
#include "core/json_strict.h"
#include "support/gradcheck.h"

using namespace lumen;
using lumen::testing::require_error;
using lumen::testing::TempDir;
namespace fs = std::filesystem;

namespace {

// Not a speed target (those live in bench/): a bound that only a hang, a blocking open or the
// quadratic behaviour these tests guard against can exceed, even under a sanitizer on a loaded
// machine. The quadratic parse of 200,000 entries takes minutes.
constexpr double kHangGuard = 30.0;

double seconds_of(const std::function<void()>& body) {
    auto start = std::chrono::steady_clock::now();
    body();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string nested(const std::string& open, const std::string& close, int depth) {
    std::string text;
    for (int i = 0; i < depth; ++i) text += open;
    for (int i = 0; i < depth; ++i) text += close;
    return text;
}

}  // namespace

TEST_CASE("parse_json_strict refuses deep nesting at the cap, in linear time", "[io][json]") {
    // 100,000 levels (about 200 KB) overflowed the stack of recursive walkers before.
    for (const auto& [open, close] : {std::pair<std::string, std::string>{"[", "]"},
                                      std::pair<std::string, std::string>{"{\"a\":", "}"}}) {
        std::string text = nested(open, close, 100000);
        double seconds = seconds_of([&] {
            require_error([&] { parse_json_strict(text, "config", "deep.json", 32); },
                          {"[config] deep.json: JSON nested deeper than 32 levels"});
        });
        CHECK(seconds < kHangGuard);
    }
    CHECK(parse_json_strict(nested("[", "]", 32), "t", "ok", 32).is_array());
    require_error([&] { parse_json_strict(nested("[", "]", 33), "t", "x", 32); },
                  {"nested deeper than 32 levels"});
}

TEST_CASE("parse_json_strict refuses repeated keys and names their path", "[io][json]") {
    require_error([&] { parse_json_strict(R"({"a": 1, "a": 2})", "config", "c.json", 8); },
                  {"[config] c.json: duplicate key 'a'"});
    require_error(
        [&] {
            parse_json_strict(R"({"optim": {"lr": 1, "x": [1, {"b": 1}], "lr": 2}})", "config",
                              "c.json", 8);
        },
        {"duplicate key 'optim.lr'"});
    // The same key in different objects is fine.
    nlohmann::json ok = parse_json_strict(R"({"a": {"x": 1}, "b": {"x": 2}})", "t", "ok", 8);
    CHECK(ok["b"]["x"] == 2);
    require_error([&] { parse_json_strict("{\"a\": ", "config", "c.json", 8); },
                  {"[config] c.json: not valid JSON:"});
}

TEST_CASE("parse_json_strict is linear in the number of entries", "[io][json]") {
    // nlohmann's callback parser rescans the parent at each closing bracket (quadratic); a
    // header of 200,000 small objects must parse in well under a second or two.
    std::string text = "{";
    for (int i = 0; i < 200000; ++i)
        text += (i ? ",\"" : "\"") + std::to_string(i) + "\":{\"s\":[1,2]}";
    text += "}";
    double seconds =
        seconds_of([&] { CHECK(parse_json_strict(text, "t", "big", 8).size() == 200000); });
    CHECK(seconds < kHangGuard);
    CHECK(json_excerpt(parse_json_strict(text, "t", "big", 8), 20).size() == 23);
}

TEST_CASE("open_regular_file refuses FIFOs and directories without blocking", "[io][file]") {
    TempDir dir("hostile_open");
    const std::string fifo = dir.file("pipe.safetensors");
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    double seconds = seconds_of([&] {
        require_error([&] { open_regular_file(fifo, "safetensors"); },
                      {"[safetensors] ", fifo, ": is a FIFO, not a regular file"});
        require_error([&] { read_file(fifo, "config", 1 << 20); }, {"is a FIFO"});
    });
    CHECK(seconds < kHangGuard);
    require_error([&] { open_regular_file(dir.path.string(), "idx"); },
                  {"[idx]", "is a directory, not a file"});
    require_error([&] { open_regular_file(dir.file("absent"), "idx"); },
                  {"cannot open: No such file or directory"});
    const std::string big = dir.file("big.json");
    std::ofstream(big) << std::string(5000, ' ');
    require_error([&] { read_file(big, "config", 4096, "a config"); },
                  {"[config] ", big, ": is 4.9 KB, over the limit of 4.0 KB for a config"});
    CHECK(read_file(big, "config", 5000).size() == 5000);
}

TEST_CASE("FileWriter reports the failing call's own reason", "[io][file]") {
    // A real full device: every write to /dev/full fails with ENOSPC.
    if (fs::exists("/dev/full")) {
        FileWriter full("/dev/full", "run_log");
        require_error([&] { full.write(std::string(100, 'x')); },
                      {"[run_log] /dev/full: write failed: No space left on device"});
    }
    TempDir dir("hostile_write");
    require_error([&] { FileWriter(dir.file("no/such/dir/f"), "atomic_file"); },
                  {"[atomic_file] ", "open for writing failed: No such file or directory"});
    // An injected full disk at the second write.
    const std::string path = dir.file("f.txt");
    {
        FileWriter out(path, "run_log");
        fault::arm("write", fault::Action::fail, 2);
        out.write("one");
        require_error([&] { out.write("two"); },
                      {"[run_log] ", path, ": write failed: No space left on device"});
        out.close();
    }
    fault::disarm();
    CHECK(read_file(path, "t", 100) == "one");
    {
        FileWriter out(path, "t", FileWriter::Mode::append);
        CHECK(out.bytes_written() == 3);
        out.write("four");
        out.close();
    }
    {
        FileWriter out(path, "t");
        out.write("twelve");
        out.write_at(0, "TW", 2);
        out.close();
    }
    CHECK(read_file(path, "t", 100) == "TWelve");
}

TEST_CASE("fault points count passes and disarm after acting", "[io][fault]") {
    fault::arm("a.point", fault::Action::fail, 3);
    CHECK_FALSE(fault::at("other"));
    CHECK_FALSE(fault::at("a.point"));
    CHECK_FALSE(fault::at("a.point"));
    CHECK(fault::at("a.point"));
    CHECK_FALSE(fault::at("a.point"));  // disarmed after acting
    fault::arm("a.point", fault::Action::fail, 1);
    fault::disarm();
    CHECK_FALSE(fault::at("a.point"));
    require_error([&] { fault::arm("", fault::Action::kill); }, {"[fault]"});
    require_error([&] { fault::arm("x", fault::Action::kill, 0); }, {"[fault]"});
}
