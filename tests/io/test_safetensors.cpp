// safetensors: round trips of every dtype and layout, the committed oracle file, and rejection
// of damaged or hostile files with messages that name the file and the problem.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "core/safetensors.h"
#include "support/gradcheck.h"

namespace fs = std::filesystem;
using namespace lumen;
using lumen::testing::require_error;
using lumen::testing::TempDir;

namespace {

// Writes a file made of a declared header length, header text and data bytes.
void write_raw(const std::string& path, uint64_t declared_length, const std::string& header,
               const std::string& data) {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(&declared_length), 8);
    f << header << data;
}

// A well-formed length followed by `header` and `data_bytes` zero bytes.
void write_header(const std::string& path, const std::string& header, size_t data_bytes) {
    write_raw(path, header.size(), header, std::string(data_bytes, '\0'));
}

std::string read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
}

void require_same(const Tensor& got, const Tensor& want) {
    REQUIRE(got.dtype() == want.dtype());
    REQUIRE(got.shape() == want.shape());
    REQUIRE(got.to_vector<double>() == want.to_vector<double>());
}

}  // namespace

TEST_CASE("safetensors: every dtype round-trips bit for bit", "[io][safetensors]") {
    TempDir dir("st_dtypes");
    std::map<std::string, Tensor> tensors = {
        {"f32", tensor({1.5, -2.25, 3e-8, 1e30}, {2, 2})},
        {"f64", tensor({0.1, -1e-300, 1e300}, {3}, DType::float64)},
        {"f16", tensor({0.5, -2.0, 65504.0}, {3}).to(DType::float16)},
        {"bf16", tensor({1.0, -3.5, 1e38}, {1, 3}).to(DType::bfloat16)},
        {"i64", from_vector<int64_t>({int64_t(1) << 40, -5, 0}, {3})},
        {"i32", from_vector<int32_t>({-7, 2147483647}, {2})},
        {"u8", from_vector<uint8_t>({0, 255, 17}, {3})},
        {"bool", from_vector<bool>({true, false, true, true}, {4})},
    };
    std::string path = dir.file("all.safetensors");
    save_safetensors(path, tensors);
    SafetensorsFile loaded = load_safetensors(path);
    REQUIRE(loaded.tensors.size() == tensors.size());
    REQUIRE(loaded.metadata.empty());
    REQUIRE(loaded.checksum_verified);
    for (const auto& [name, want] : tensors) {
        INFO(name);
        REQUIRE(loaded.tensors.count(name) == 1);
        require_same(loaded.tensors.at(name), want);
        REQUIRE(loaded.tensors.at(name).is_contiguous());
    }
    // The data section starts 8-byte aligned: header length is a multiple of 8.
    uint64_t header_length = 0;
    std::string bytes = read_file(path);
    std::memcpy(&header_length, bytes.data(), 8);
    REQUIRE(header_length % 8 == 0);
}

TEST_CASE("safetensors: 0-d, empty and non-contiguous tensors and metadata round-trip",
          "[io][safetensors]") {
    TempDir dir("st_shapes");
    Tensor base = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
    Tensor transposed = base.transpose(0, 1);  // (3, 2), not contiguous
    REQUIRE_FALSE(transposed.is_contiguous());
    std::map<std::string, Tensor> tensors = {
        {"scalar", scalar_tensor(3.25)},
        {"empty", zeros({0, 3})},
        {"empty_i64", zeros({4, 0}, DType::int64)},
        {"transposed", transposed},
        {"leaf", ones({2}).requires_grad_()},
    };
    std::map<std::string, std::string> metadata = {
        {"module", "op.relu"}, {"config", "{\"dim\": -1}"}, {"empty", ""}};
    std::string path = dir.file("shapes.safetensors");
    save_safetensors(path, tensors, metadata);
    SafetensorsFile loaded = load_safetensors(path);
    REQUIRE(loaded.metadata == metadata);
    REQUIRE(loaded.tensors.at("scalar").shape() == Shape{});
    REQUIRE(loaded.tensors.at("scalar").item<double>() == 3.25);
    REQUIRE(loaded.tensors.at("empty").shape() == Shape{0, 3});
    REQUIRE(loaded.tensors.at("empty_i64").shape() == Shape{4, 0});
    REQUIRE(loaded.tensors.at("empty_i64").dtype() == DType::int64);
    require_same(loaded.tensors.at("transposed"), transposed.contiguous());
    REQUIRE(loaded.tensors.at("transposed").to_vector<double>() ==
            std::vector<double>{1, 4, 2, 5, 3, 6});
    REQUIRE_FALSE(loaded.tensors.at("leaf").requires_grad());
    REQUIRE_FALSE(fs::exists(path + ".tmp"));
}

TEST_CASE("safetensors: loaded tensors outlive the file object and writes stay private",
          "[io][safetensors]") {
    TempDir dir("st_alias");
    std::string path = dir.file("alias.safetensors");
    save_safetensors(path, {{"x", tensor({1, 2, 3})}});
    std::string before = read_file(path);
    Tensor x;
    {
        SafetensorsFile loaded = load_safetensors(path);
        x = loaded.tensors.at("x");
    }
    REQUIRE(x.to_vector<double>() == std::vector<double>{1, 2, 3});
    x.fill_(7.0);  // copy-on-write mapping: the process sees the write, the file does not
    REQUIRE(x.to_vector<double>() == std::vector<double>{7, 7, 7});
    REQUIRE(read_file(path) == before);
    REQUIRE(load_safetensors(path).tensors.at("x").to_vector<double>() ==
            std::vector<double>{1, 2, 3});
}

TEST_CASE("safetensors: unaligned data offsets are copied, bool bytes are normalized",
          "[io][safetensors]") {
    TempDir dir("st_unaligned");
    std::string path = dir.file("unaligned.safetensors");
    // u8 at [0, 1) pushes f32 to offset 1; the header (length 8k) keeps the section aligned.
    std::string header = R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                         R"("b":{"dtype":"F32","shape":[1],"data_offsets":[1,5]},)"
                         R"("c":{"dtype":"BOOL","shape":[2],"data_offsets":[5,7]}})";
    header.append((8 - header.size() % 8) % 8, ' ');
    float value = 2.5f;
    std::string data(7, '\0');
    data[0] = 9;
    std::memcpy(&data[1], &value, 4);
    data[5] = 0;
    data[6] = 2;  // not a valid C++ bool byte
    write_raw(path, header.size(), header, data);
    SafetensorsFile loaded = load_safetensors(path);
    REQUIRE(loaded.tensors.at("a").item<int64_t>() == 9);
    REQUIRE(loaded.tensors.at("b").item<float>() == 2.5f);
    REQUIRE(loaded.tensors.at("c").to_vector<int64_t>() == std::vector<int64_t>{0, 1});
}

TEST_CASE("safetensors: the committed softmax oracle vector loads", "[io][safetensors]") {
    std::string path = std::string(LUMEN_TEST_DATA) + "/oracle/ops/softmax_last.safetensors";
    SafetensorsFile file = load_safetensors(path);
    std::vector<std::string> names;
    for (const auto& [name, t] : file.tensors) {
        names.push_back(name);
        REQUIRE(t.shape() == Shape{2, 7, 5});
        REQUIRE(t.dtype() == DType::float32);
    }
    REQUIRE(names == std::vector<std::string>{"dout.y", "grad.in.input", "in.input", "out.y"});
    REQUIRE(file.metadata.at("module") == "op.softmax");
    REQUIRE(file.metadata.at("config") == "{\"dim\": -1}");
    REQUIRE(file.metadata.count("rtol") == 1);
    REQUIRE(file.metadata.count("atol") == 1);
    // softmax rows sum to one: the data was read from the right place.
    std::vector<double> out = file.tensors.at("out.y").to_vector<double>();
    double row = 0;
    for (int i = 0; i < 5; ++i) row += out[i];
    REQUIRE(std::abs(row - 1.0) < 1e-5);
}

TEST_CASE("safetensors: missing, short and truncated files are rejected", "[io][safetensors]") {
    TempDir dir("st_truncated");
    std::string missing = dir.file("missing.safetensors");
    require_error([&] { load_safetensors(missing); },
                  {"[safetensors]", missing, "cannot open", "No such file"});

    std::string tiny = dir.file("tiny.safetensors");
    std::ofstream(tiny, std::ios::binary) << "abcde";
    require_error([&] { load_safetensors(tiny); },
                  {tiny, "file is 5 bytes, shorter than the 8-byte header length"});

    std::string good = std::string(LUMEN_TEST_DATA) + "/oracle/ops/softmax_last.safetensors";
    std::string bytes = read_file(good);
    std::string header_cut = dir.file("header_cut.safetensors");
    std::ofstream(header_cut, std::ios::binary) << bytes.substr(0, 100);
    require_error([&] { load_safetensors(header_cut); },
                  {header_cut, "header length 384 runs past the end of the file (92 bytes"});

    std::string data_cut = dir.file("data_cut.safetensors");
    std::ofstream(data_cut, std::ios::binary) << bytes.substr(0, bytes.size() - 10);
    require_error([&] { load_safetensors(data_cut); },
                  {data_cut,
                   "tensor 'out.y' data_offsets [840, 1120] run past the end of the "
                   "data section (1110 bytes)"});

    std::string huge = dir.file("huge_length.safetensors");
    write_raw(huge, uint64_t(1) << 60, "{}", "");
    require_error([&] { load_safetensors(huge); }, {huge, "runs past the end of the file"});

    require_error([&] { load_safetensors(dir.path.string()); }, {"is a directory, not a file"});
}

TEST_CASE("safetensors: malformed headers are rejected with the offending entry",
          "[io][safetensors]") {
    TempDir dir("st_header");
    std::string path = dir.file("bad.safetensors");
    auto expect = [&](const std::string& header, size_t data_bytes,
                      const std::vector<std::string>& fragments) {
        INFO(header);
        write_header(path, header, data_bytes);
        std::vector<std::string> all = fragments;
        all.push_back("[safetensors] " + path + ": ");
        require_error([&] { load_safetensors(path); }, all);
    };
    expect("{\"a\": {\"dtype\": ", 0, {"header: not valid JSON"});
    expect("[1, 2]", 0, {"header must be a JSON object, got a array"});
    expect(R"({"a": [1]})", 0, {"tensor 'a' must be an object"});
    expect(R"({"a": {"dtype": "F32", "shape": [1]}})", 4, {"tensor 'a' has no 'data_offsets'"});
    expect(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4], "x": 1}})", 4,
           {"tensor 'a' has unknown key 'x'"});
    expect(R"({"a": {"dtype": "F33", "shape": [1], "data_offsets": [0, 4]}})", 4,
           {"tensor 'a' has unknown dtype \"F33\""});
    expect(R"({"a": {"dtype": 4, "shape": [1], "data_offsets": [0, 4]}})", 4,
           {"tensor 'a' has unknown dtype 4"});
    expect(R"({"a": {"dtype": "F32", "shape": [-1, 4], "data_offsets": [0, 4]}})", 4,
           {"tensor 'a' has a negative size in shape [-1, 4]"});
    expect(R"({"a": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}})", 4,
           {"tensor 'a' shape must be a list of integers, got [1.5]"});
    expect(R"({"a": {"dtype": "F32", "shape": [4611686018427387904, 4], "data_offsets": [0, 4]}})",
           4, {"tensor 'a' shape [4611686018427387904, 4] of F32 needs more than 2^63 bytes"});
    expect(R"({"__metadata__": {"rtol": 1e-4}})", 0,
           {"__metadata__ value of 'rtol' must be a string, got 0.0001"});
    expect(R"({"__metadata__": "x"})", 0, {"__metadata__ must be an object"});
}

TEST_CASE("safetensors: bad data offsets are rejected", "[io][safetensors]") {
    TempDir dir("st_offsets");
    std::string path = dir.file("bad.safetensors");
    auto expect = [&](const std::string& header, size_t data_bytes, const std::string& fragment) {
        INFO(header);
        write_header(path, header, data_bytes);
        require_error([&] { load_safetensors(path); }, {"[safetensors] " + path + ": " + fragment});
    };
    expect(R"({"p.weight": {"dtype": "F32", "shape": [5, 6], "data_offsets": [0, 100]}})", 120,
           "tensor 'p.weight' data_offsets [0, 100] hold 100 bytes but shape [5, 6] of F32 "
           "needs 120");
    expect(R"({"a": {"dtype": "F32", "shape": [100], "data_offsets": [0, 400]}})", 16,
           "tensor 'a' data_offsets [0, 400] run past the end of the data section (16 bytes)");
    expect(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [8, 4]}})", 16,
           "tensor 'a' data_offsets [8, 4] end before they begin");
    expect(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [-4, 0]}})", 16,
           "tensor 'a' data_offsets must be two non-negative integers [begin, end], got [-4,0]");
    expect(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})", 16,
           "tensor 'a' data_offsets must be two non-negative integers");
    expect(R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},)"
           R"( "b": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}})",
           24, "tensors 'a' [0, 16] and 'b' [8, 24] overlap");
}

TEST_CASE("safetensors: save rejects reserved names and reports unwritable paths",
          "[io][safetensors]") {
    TempDir dir("st_save");
    std::string path = dir.file("x.safetensors");
    auto save_one = [](const std::string& file, const std::string& name, const Tensor& t) {
        return [=] { save_safetensors(file, {{name, t}}); };
    };
    require_error(save_one(path, "__metadata__", ones({1})),
                  {"[safetensors]", "invalid tensor name '__metadata__'"});
    require_error(save_one(path, "a", Tensor()), {"[safetensors]", "tensor 'a' is undefined"});
    std::string nowhere = dir.file("no_such_dir/x.safetensors");
    require_error(save_one(nowhere, "a", ones({1})),
                  {"[safetensors]", "open for writing failed: No such file"});
    REQUIRE_FALSE(fs::exists(path));
}

TEST_CASE("safetensors: a header length into the padding or appended bytes are errors",
          "[io][safetensors][hostile]") {
    TempDir dir("st_shift");
    std::string path = dir.file("w.safetensors");
    save_safetensors(path, {{"w", tensor({1, 2, 3, 4, 5, 6})}});
    std::string bytes = read_file(path);
    uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    // The header ends in padding spaces; a length that stops inside them still parses as JSON
    // and would load the weights from that many bytes too early.
    size_t pad = 0;
    while (bytes[8 + n - 1 - pad] == ' ') ++pad;
    REQUIRE(pad >= 1);
    std::string shifted = bytes;
    uint64_t short_n = n - pad;
    std::memcpy(shifted.data(), &short_n, 8);
    std::string shifted_path = dir.file("shifted.safetensors");
    std::ofstream(shifted_path, std::ios::binary) << shifted;
    require_error(
        [&] { load_safetensors(shifted_path); },
        {shifted_path,
         "the data section has " + std::to_string(24 + pad) + " bytes but its tensors cover 24",
         std::to_string(pad) + " unexplained bytes"});
    std::string appended_path = dir.file("appended.safetensors");
    std::ofstream(appended_path, std::ios::binary) << bytes << "xyz";
    require_error([&] { load_safetensors(appended_path); }, {"3 unexplained bytes"});
    // A gap between tensors.
    std::string gap = dir.file("gap.safetensors");
    write_header(gap,
                 R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                 R"("b":{"dtype":"U8","shape":[1],"data_offsets":[2,3]}})",
                 3);
    require_error([&] { load_safetensors(gap); },
                  {"tensor 'b' starts at byte 2", "end at 1 (a gap of 1 bytes)"});
}

TEST_CASE("safetensors: repeated tensor or metadata keys are errors",
          "[io][safetensors][hostile]") {
    TempDir dir("st_dup");
    std::string path = dir.file("dup.safetensors");
    write_header(path,
                 R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                 R"("a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
                 2);
    require_error([&] { load_safetensors(path); }, {path, "duplicate key 'a'"});
    write_header(path, R"({"__metadata__":{"rtol":"1","rtol":"2"}})", 0);
    require_error([&] { load_safetensors(path); }, {"duplicate key '__metadata__.rtol'"});
}

TEST_CASE("safetensors: deep nesting and huge ranks are refused fast",
          "[io][safetensors][hostile]") {
    TempDir dir("st_deep");
    std::string path = dir.file("deep.safetensors");
    std::string deep = "{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
    auto start = std::chrono::steady_clock::now();
    write_header(path, deep, 0);
    require_error([&] { load_safetensors(path); }, {path, "JSON nested deeper than 8 levels"});
    // 30,000 dimensions took 16 s (each check printed the whole shape); a 3 MB header of
    // dimensions ran for hours.
    for (int dims : {30000, 1000000}) {
        std::string shape = "[1";
        for (int i = 1; i < dims; ++i) shape += ",1";
        shape += "]";
        write_header(path, R"({"a":{"dtype":"U8","shape":)" + shape + R"(,"data_offsets":[0,1]}})",
                     1);
        require_error([&] { load_safetensors(path); },
                      {"tensor 'a' has " + std::to_string(dims) +
                       " dimensions; lumen tensors have at most 8"});
    }
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK(seconds < 30.0);  // a hang guard (the quadratic case took hours), not a speed target
}

TEST_CASE("safetensors: the checksum catches a flipped bit anywhere",
          "[io][safetensors][hostile]") {
    TempDir dir("st_crc");
    std::string path = dir.file("c.safetensors");
    // A 0-d and an empty tensor after the others in name order: zlib restarts a CRC at a null
    // buffer, which once made the checksum cover only what came after them.
    save_safetensors(path,
                     {{"a", tensor({1, 2, 3, 4})},
                      {"b", tensor({5.0}, {1})},
                      {"c", scalar_tensor(2.0)},
                      {"d", zeros({0, 3})}},
                     {{"note", "hello"}});
    SafetensorsFile good = load_safetensors(path);
    CHECK(good.checksum_verified);
    CHECK(good.metadata == std::map<std::string, std::string>{{"note", "hello"}});
    std::string bytes = read_file(path);
    // One bit of a weight, then one bit of a metadata value ("hello" -> "iello").
    uint64_t header = 0;
    std::memcpy(&header, bytes.data(), 8);
    for (size_t offset : {size_t(8 + header + 2), bytes.size() - 3, bytes.find("hello")}) {
        std::string damaged = bytes;
        damaged[offset] ^= 1;
        std::string damaged_path = dir.file("damaged.safetensors");
        std::ofstream(damaged_path, std::ios::binary) << damaged;
        require_error([&] { load_safetensors(damaged_path); },
                      {damaged_path, "checksum mismatch", "the file is damaged"});
    }
    // Files from elsewhere have none, and load as before.
    CHECK_FALSE(
        load_safetensors(std::string(LUMEN_TEST_DATA) + "/oracle/ops/softmax_last.safetensors")
            .checksum_verified);
    require_error(
        [&] {
            save_safetensors(path, {{"w", ones({1})}}, {{"lumen.crc32", "0"}});
        },
        {"metadata key 'lumen.crc32' is reserved"});
}
