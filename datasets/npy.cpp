// .npy parsing (the header is a Python dict literal, parsed by the small reader below) and
// writing; .npz through datasets/zip.h.
#include "datasets/npy.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "core/file_io.h"
#include "core/safetensors.h"
#include "datasets/zip.h"
#include "ops/shape.h"

namespace lumen::datasets {

namespace {

constexpr uint64_t kMaxArrayBytes = uint64_t(1) << 36;  // 64 GiB: beyond it the header lies
constexpr int kMaxDims = 8;

#define NPY_CHECK(cond, source, ...) LUMEN_CHECK(cond, "npy", source, ": ", __VA_ARGS__)

// The header dict: {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }.
struct Header {
    std::string descr;
    bool fortran = false;
    Shape shape;
};

class HeaderParser {
  public:
    HeaderParser(const std::string& text, const std::string& source)
        : text_(text), source_(source) {}

    Header parse() {
        Header h;
        bool descr = false, fortran = false, shape = false;
        expect('{');
        while (true) {
            skip_space();
            if (peek() == '}') break;
            std::string key = quoted();
            expect(':');
            if (key == "descr" && !descr) {
                h.descr = quoted();
                descr = true;
            } else if (key == "fortran_order" && !fortran) {
                h.fortran = boolean();
                fortran = true;
            } else if (key == "shape" && !shape) {
                h.shape = tuple();
                shape = true;
            } else {
                fail("unexpected or repeated key '" + key.substr(0, 40) + "'");
            }
            skip_space();
            if (peek() == ',') ++pos_;
        }
        expect('}');
        skip_space();
        NPY_CHECK(pos_ == text_.size(), source_, "the header has text after its dict");
        NPY_CHECK(descr && fortran && shape, source_,
                  "the header must have 'descr', 'fortran_order' and 'shape', got ", excerpt());
        return h;
    }

  private:
    [[noreturn]] void fail(const std::string& what) {
        LUMEN_FAIL("npy", source_, ": cannot read the header (", what, "): ", excerpt());
    }
    std::string excerpt() const {
        return text_.size() > 120 ? text_.substr(0, 120) + "..." : text_;
    }
    void skip_space() {
        while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n')) ++pos_;
    }
    char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
    void expect(char c) {
        skip_space();
        if (peek() != c) fail(std::string("expected '") + c + "'");
        ++pos_;
    }
    std::string quoted() {
        skip_space();
        char q = peek();
        if (q != '\'' && q != '"') fail("expected a quoted string");
        size_t end = text_.find(q, pos_ + 1);
        if (end == std::string::npos) fail("unterminated string");
        std::string s = text_.substr(pos_ + 1, end - pos_ - 1);
        pos_ = end + 1;
        return s;
    }
    bool boolean() {
        skip_space();
        if (text_.compare(pos_, 4, "True") == 0) return pos_ += 4, true;
        if (text_.compare(pos_, 5, "False") == 0) return pos_ += 5, false;
        fail("'fortran_order' must be True or False");
    }
    Shape tuple() {
        expect('(');
        Shape shape;
        while (true) {
            skip_space();
            if (peek() == ')') break;
            if (peek() < '0' || peek() > '9') fail("a shape of non-negative integers");
            int64_t size = 0;
            while (peek() >= '0' && peek() <= '9') {
                if (size > (std::numeric_limits<int64_t>::max() - 9) / 10)
                    fail("a dimension beyond 2^63");
                size = size * 10 + (text_[pos_++] - '0');
            }
            if (peek() == 'L') ++pos_;  // Python 2 long literals in old files
            shape.push_back(size);
            if (shape.size() > size_t(kMaxDims)) fail("more than 8 dimensions");
            skip_space();
            if (peek() == ',') ++pos_;
        }
        ++pos_;
        return shape;
    }
    const std::string& text_;
    const std::string& source_;
    size_t pos_ = 0;
};

struct Type {
    char kind;    // b, u, i, f
    int bytes;    // item size on disk
    DType dtype;  // in memory
};

Type parse_descr(const std::string& descr, const std::string& source, bool* big_endian) {
    NPY_CHECK(descr.size() >= 3, source, "unsupported dtype '", descr, "'");
    char order = descr[0], kind = descr[1];
    const std::string size = descr.substr(2);
    NPY_CHECK(order == '<' || order == '>' || order == '|' || order == '=', source,
              "unsupported dtype '", descr, "' (byte order '", order, "')");
    *big_endian = order == '>';
    struct Known {
        char kind;
        const char* size;
        DType dtype;
    };
    static const Known kKnown[] = {
        {'b', "1", DType::bool_},   {'u', "1", DType::uint8},   {'i', "1", DType::int32},
        {'i', "2", DType::int32},   {'u', "2", DType::int32},   {'i', "4", DType::int32},
        {'u', "4", DType::int64},   {'i', "8", DType::int64},   {'u', "8", DType::int64},
        {'f', "2", DType::float16}, {'f', "4", DType::float32}, {'f', "8", DType::float64}};
    for (const Known& k : kKnown)
        if (k.kind == kind && size == k.size) return {kind, std::stoi(size), k.dtype};
    LUMEN_FAIL("npy", source, ": unsupported dtype '", descr,
               "' (supported: bool, int8-64, uint8-64, float16, float32, float64)");
}

// Converts `count` items of `type` at `src` (file byte order) into `dst` of type.dtype.
void convert(const unsigned char* src, int64_t count, const Type& type, bool big_endian, void* dst,
             const std::string& source) {
    auto load = [&](int64_t i) {  // the item's bytes as an unsigned integer, host order
        uint64_t v = 0;
        const unsigned char* p = src + i * type.bytes;
        for (int b = 0; b < type.bytes; ++b)
            v |= uint64_t(p[big_endian ? type.bytes - 1 - b : b]) << (8 * b);
        return v;
    };
    auto sign_extend = [&](uint64_t v) {
        int shift = 64 - 8 * type.bytes;
        return int64_t(v << shift) >> shift;
    };
    for (int64_t i = 0; i < count; ++i) {
        uint64_t v = load(i);
        switch (type.dtype) {
            case DType::bool_: static_cast<bool*>(dst)[i] = v != 0; break;
            case DType::uint8: static_cast<uint8_t*>(dst)[i] = uint8_t(v); break;
            case DType::int32:
                static_cast<int32_t*>(dst)[i] =
                    int32_t(type.kind == 'i' ? sign_extend(v) : int64_t(v));
                break;
            case DType::int64:
                NPY_CHECK(type.kind != 'u' || type.bytes < 8 || v <= uint64_t(INT64_MAX), source,
                          "value ", v, " of the uint64 array does not fit int64");
                static_cast<int64_t*>(dst)[i] = type.kind == 'i' ? sign_extend(v) : int64_t(v);
                break;
            case DType::float16: static_cast<uint16_t*>(dst)[i] = uint16_t(v); break;
            case DType::float32: {
                uint32_t bits = uint32_t(v);
                std::memcpy(static_cast<float*>(dst) + i, &bits, 4);
                break;
            }
            case DType::float64: std::memcpy(static_cast<double*>(dst) + i, &v, 8); break;
            default: LUMEN_FAIL("npy", source, ": internal dtype error");
        }
    }
}

}  // namespace

NpyArray parse_npy(const std::string& bytes, const std::string& source) {
    NPY_CHECK(bytes.size() >= 10 && bytes.compare(0, 6, "\x93NUMPY") == 0, source,
              "not a .npy file (no \\x93NUMPY magic)");
    const int major = uint8_t(bytes[6]);
    NPY_CHECK(major >= 1 && major <= 3, source, "unsupported .npy version ", major, ".",
              int(uint8_t(bytes[7])), " (supported: 1, 2, 3)");
    const size_t length_bytes = major == 1 ? 2 : 4;
    NPY_CHECK(bytes.size() >= 8 + length_bytes, source, "file too short for its header length");
    uint64_t header_length = 0;
    for (size_t b = 0; b < length_bytes; ++b)
        header_length |= uint64_t(uint8_t(bytes[8 + b])) << (8 * b);
    const uint64_t data_start = 8 + length_bytes + header_length;
    NPY_CHECK(data_start <= bytes.size(), source, "header length ", header_length,
              " runs past the end of the file (", bytes.size(), " bytes)");
    const std::string text = bytes.substr(8 + length_bytes, header_length);
    Header header = HeaderParser(text, source).parse();
    bool big_endian = false;
    Type type = parse_descr(header.descr, source, &big_endian);
    uint64_t count = 1;
    for (int64_t size : header.shape)
        NPY_CHECK(!__builtin_mul_overflow(count, uint64_t(size), &count), source, "shape ",
                  header.shape, " overflows");
    uint64_t nbytes = 0;
    NPY_CHECK(
        !__builtin_mul_overflow(count, uint64_t(type.bytes), &nbytes) && nbytes <= kMaxArrayBytes,
        source, "shape ", header.shape, " of ", header.descr, " claims more than 64 GiB");
    const uint64_t available = bytes.size() - data_start;
    NPY_CHECK(available == nbytes, source, "shape ", header.shape, " of ", header.descr, " needs ",
              nbytes, " bytes of data but the file has ", available);
    // Fortran order: the file holds the transpose in C order.
    Shape stored = header.shape;
    if (header.fortran) std::reverse(stored.begin(), stored.end());
    Tensor data = empty(stored, type.dtype);
    convert(reinterpret_cast<const unsigned char*>(bytes.data()) + data_start, int64_t(count), type,
            big_endian, data.data_ptr(), source);
    if (header.fortran && stored.size() > 1) {
        std::vector<int64_t> reversed(stored.size());
        for (size_t d = 0; d < stored.size(); ++d) reversed[d] = int64_t(stored.size() - 1 - d);
        data = permute(data, reversed).contiguous();
    }
    return {data, header.descr};
}

NpyArray read_npy(const std::string& path) {
    // The data must fit in the file, so the file's size bounds what is read and allocated.
    return parse_npy(read_file(path, "npy", kMaxArrayBytes + (1 << 20), "an .npy file"), path);
}

std::map<std::string, NpyArray> read_npz(const std::string& path) {
    std::map<std::string, NpyArray> arrays;
    for (ZipMember& member : read_zip(path, "npz", kMaxArrayBytes + (1 << 20))) {
        const std::string& name = member.name;
        LUMEN_CHECK(name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0, "npz", path,
                    ": member '", name, "' is not an .npy array");
        const std::string key = name.substr(0, name.size() - 4);
        LUMEN_CHECK(!arrays.count(key), "npz", path, ": two members are named '", name, "'");
        arrays[key] = parse_npy(member.data, path + ":" + name);
    }
    return arrays;
}

std::string npy_descr(DType dtype) {
    switch (dtype) {
        case DType::bool_: return "|b1";
        case DType::uint8: return "|u1";
        case DType::int32: return "<i4";
        case DType::int64: return "<i8";
        case DType::float16: return "<f2";
        case DType::float32: return "<f4";
        case DType::float64: return "<f8";
        default:
            LUMEN_FAIL("npy", "NumPy has no dtype for ", dtype,
                       "; convert the tensor (e.g. to float32) first");
    }
}

namespace {

// The bytes of a version 1.0 .npy file holding `tensor`.
std::string npy_bytes(const Tensor& tensor) {
    Tensor host = tensor.detach().contiguous().cpu();
    // As Python prints a tuple: (), (5,), (3, 4).
    std::string shape = "(";
    for (size_t d = 0; d < host.shape().size(); ++d)
        shape += (d ? ", " : "") + std::to_string(host.shape()[d]);
    shape += host.ndim() == 1 ? ",)" : ")";
    std::string header = "{'descr': '" + npy_descr(host.dtype()) +
                         "', 'fortran_order': False, 'shape': " + shape + ", }";
    // Padded with spaces so that magic + version + length + header + '\n' is a multiple of 64.
    size_t total = 10 + header.size() + 1;
    header.append((64 - total % 64) % 64, ' ');
    header += '\n';
    std::string bytes = "\x93NUMPY";
    bytes += char(1);
    bytes += char(0);
    bytes += char(header.size() & 0xFF);
    bytes += char(header.size() >> 8);
    bytes += header;
    bytes.append(static_cast<const char*>(host.data_ptr()),
                 size_t(host.numel()) * host.element_size());
    return bytes;
}

}  // namespace

void write_npy(const std::string& path, const Tensor& tensor) {
    LUMEN_CHECK(tensor.defined(), "npy", path, ": the tensor is undefined");
    const std::string bytes = npy_bytes(tensor);
    write_file_atomically(path, "npy", [&](FileWriter& out) { out.write(bytes); });
}

void write_npz(const std::string& path, const std::map<std::string, Tensor>& tensors,
               bool compress) {
    std::vector<ZipMember> members;
    for (const auto& [name, tensor] : tensors) {
        LUMEN_CHECK(tensor.defined(), "npz", path, ": tensor '", name, "' is undefined");
        members.push_back({name + ".npy", npy_bytes(tensor)});
    }
    write_zip(path, "npz", members, compress);
}

Tensor read_feature_bag(const std::string& path) {
    const bool safetensors =
        path.size() >= 12 && path.compare(path.size() - 12, 12, ".safetensors") == 0;
    Tensor bag;
    if (safetensors) {
        SafetensorsFile file = load_safetensors(path);
        auto it = file.tensors.find("features");
        LUMEN_CHECK(it != file.tensors.end() || file.tensors.size() == 1, "bag", path, ": holds ",
                    file.tensors.size(), " tensors and none is named 'features'");
        bag = it != file.tensors.end() ? it->second : file.tensors.begin()->second;
    } else {
        bag = read_npy(path).data;
    }
    LUMEN_CHECK(bag.ndim() == 2 && bag.size(0) >= 1 && bag.size(1) >= 1, "bag", path,
                ": a bag is (instances, features) with at least one of each, got shape ",
                bag.shape());
    LUMEN_CHECK(bag.dtype() != DType::bool_, "bag", path, ": features must be numbers, got bool");
    return bag.to(DType::float32).contiguous();
}

}  // namespace lumen::datasets
