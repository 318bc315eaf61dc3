// safetensors reader (mmap + full header validation) and writer. The reader treats every file
// as hostile: each size and offset from the header is checked against the file before any
// byte of data is touched or any memory is allocated. Format: core/safetensors.h.
#include "core/safetensors.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include <sys/mman.h>
#include <zlib.h>

#include "core/error.h"
#include "core/fault.h"
#include "core/file_io.h"
#include "core/json_strict.h"

namespace lumen {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; a big-endian host would need byte swaps");

namespace {

using Json = nlohmann::json;

// The reference implementation allows 100 MB; a header of 100 MB took 20 s and 1.9 GB to parse
// here (1.6 million entries). 16 MB holds about 250,000 tensor entries, far beyond any real
// model (a 1,000-tensor checkpoint with its optimizer state has a header of about 400 KB), and
// parses in about 3 s.
constexpr uint64_t kMaxHeaderBytes = 16ull << 20;
// A valid header nests 3 levels (header, entry, shape); deeper is refused while parsing.
constexpr int kMaxHeaderDepth = 8;
const char* const kEntryKeys[] = {"dtype", "shape", "data_offsets"};
constexpr const char* kChecksumKey = "lumen.crc32";

struct DTypeName {
    DType dtype;
    const char* name;
};
constexpr DTypeName kDTypeNames[] = {{DType::float32, "F32"}, {DType::float64, "F64"},
                                     {DType::float16, "F16"}, {DType::bfloat16, "BF16"},
                                     {DType::int64, "I64"},   {DType::int32, "I32"},
                                     {DType::uint8, "U8"},    {DType::bool_, "BOOL"}};

// Every error reads "[safetensors] <path>: <problem>". A macro, so that the message (which may
// print a JSON value) is only built when the check fails.
#define ST_CHECK(cond, path, ...) LUMEN_CHECK(cond, "safetensors", path, ": ", __VA_ARGS__)
#define ST_FAIL(path, ...) LUMEN_FAIL("safetensors", path, ": ", __VA_ARGS__)

// A name from a file, quoted and cut for a message.
std::string quote_name(const std::string& name) {
    return "'" + (name.size() > 120 ? name.substr(0, 120) + "..." : name) + "'";
}

// A read-only file mapped copy-on-write (MAP_PRIVATE + PROT_WRITE): tensors that alias it may
// be written in place by the program without the file changing.
class Mapping {
  public:
    Mapping(void* data, size_t size) : data_(data), size_(size) {}
    ~Mapping() {
        if (data_ != nullptr) munmap(data_, size_);
    }
    Mapping(const Mapping&) = delete;
    Mapping& operator=(const Mapping&) = delete;
    const char* bytes() const { return static_cast<const char*>(data_); }
    char* mutable_bytes() const { return static_cast<char*>(data_); }
    size_t size() const { return size_; }

  private:
    void* data_;
    size_t size_;
};

std::shared_ptr<Mapping> map_file(const std::string& path) {
    uint64_t size = 0;
    FileHandle file = open_regular_file(path, "safetensors", &size);
    ST_CHECK(size >= 8, path, "file is ", size, " bytes, shorter than the 8-byte header length");
    void* data = ::mmap(nullptr, size_t(size), PROT_READ | PROT_WRITE, MAP_PRIVATE, file.get(), 0);
    int error = errno;
    ST_CHECK(data != MAP_FAILED, path, "cannot memory-map ", size,
             " bytes: ", std::strerror(error));
    return std::make_shared<Mapping>(data, size_t(size));  // the mapping keeps the file alive
}

const char* dtype_to_name(DType dtype) {
    for (const DTypeName& entry : kDTypeNames)
        if (entry.dtype == dtype) return entry.name;
    LUMEN_FAIL("safetensors", "dtype ", dtype, " has no safetensors name");
}

bool name_to_dtype(const std::string& name, DType* dtype) {
    for (const DTypeName& entry : kDTypeNames) {
        if (name == entry.name) {
            *dtype = entry.dtype;
            return true;
        }
    }
    return false;
}

// One validated header entry; begin/end are offsets into the data section.
struct Entry {
    std::string name;
    DType dtype = DType::float32;
    Shape shape;
    uint64_t begin = 0;
    uint64_t end = 0;
};

Shape parse_shape(const std::string& path, const std::string& name, const Json& value) {
    ST_CHECK(value.is_array(), path, "tensor ", quote_name(name),
             " shape must be a list of integers, got ", json_excerpt(value));
    ST_CHECK(value.size() <= size_t(kMaxDims), path, "tensor ", quote_name(name), " has ",
             value.size(), " dimensions; lumen tensors have at most ", kMaxDims);
    Shape shape;
    for (const Json& size : value) {
        ST_CHECK(size.is_number_integer(), path, "tensor ", quote_name(name),
                 " shape must be a list of integers, got ", json_excerpt(value));
        ST_CHECK(!size.is_number_unsigned() ||
                     size.get<uint64_t>() <= uint64_t(std::numeric_limits<int64_t>::max()),
                 path, "tensor ", quote_name(name), " shape ", json_excerpt(value),
                 " has a size beyond 2^63");
        shape.push_back(size.get<int64_t>());
    }
    for (int64_t size : shape)
        ST_CHECK(size >= 0, path, "tensor ", quote_name(name), " has a negative size in shape ",
                 shape);
    return shape;
}

// prod(shape) * itemsize, or throws when it does not fit in int64.
uint64_t byte_size(const std::string& path, const Entry& entry) {
    int64_t bytes = int64_t(itemsize(entry.dtype));
    for (int64_t size : entry.shape) {
        ST_CHECK(!__builtin_mul_overflow(bytes, size, &bytes), path, "tensor ",
                 quote_name(entry.name), " shape ", entry.shape, " of ", dtype_to_name(entry.dtype),
                 " needs more than 2^63 bytes");
    }
    return uint64_t(bytes);
}

void parse_offsets(const std::string& path, const Json& value, uint64_t data_size, Entry* entry) {
    const std::string name = quote_name(entry->name);
    bool ok = value.is_array() && value.size() == 2 && value[0].is_number_unsigned() &&
              value[1].is_number_unsigned();
    ST_CHECK(ok, path, "tensor ", name,
             " data_offsets must be two non-negative integers [begin, end], got ",
             json_excerpt(value));
    entry->begin = value[0].get<uint64_t>();
    entry->end = value[1].get<uint64_t>();
    ST_CHECK(entry->begin <= entry->end, path, "tensor ", name, " data_offsets [", entry->begin,
             ", ", entry->end, "] end before they begin");
    ST_CHECK(entry->end <= data_size, path, "tensor ", name, " data_offsets [", entry->begin, ", ",
             entry->end, "] run past the end of the data section (", data_size, " bytes)");
    uint64_t needed = byte_size(path, *entry);
    ST_CHECK(entry->end - entry->begin == needed, path, "tensor ", name, " data_offsets [",
             entry->begin, ", ", entry->end, "] hold ", entry->end - entry->begin,
             " bytes but shape ", entry->shape, " of ", dtype_to_name(entry->dtype), " needs ",
             needed);
}

Entry parse_entry(const std::string& path, const std::string& name, const Json& value,
                  uint64_t data_size) {
    ST_CHECK(value.is_object(), path, "tensor ", quote_name(name),
             " must be an object {dtype, shape, data_offsets}, got ", json_excerpt(value));
    for (const auto& [key, unused] : value.items()) {
        bool known = key == kEntryKeys[0] || key == kEntryKeys[1] || key == kEntryKeys[2];
        ST_CHECK(known, path, "tensor ", quote_name(name), " has unknown key ", quote_name(key),
                 " (expected dtype, shape, data_offsets)");
    }
    for (const char* key : kEntryKeys)
        ST_CHECK(value.contains(key), path, "tensor ", quote_name(name), " has no '", key, "'");
    Entry entry;
    entry.name = name;
    const Json& dtype = value["dtype"];
    ST_CHECK(dtype.is_string() && name_to_dtype(dtype.get<std::string>(), &entry.dtype), path,
             "tensor ", quote_name(name), " has unknown dtype ", json_excerpt(dtype),
             " (expected F32, F64, F16, BF16, I64, I32, U8 or BOOL)");
    entry.shape = parse_shape(path, name, value["shape"]);
    parse_offsets(path, value["data_offsets"], data_size, &entry);
    return entry;
}

std::map<std::string, std::string> parse_metadata(const std::string& path, const Json& value) {
    ST_CHECK(value.is_object(), path, "__metadata__ must be an object of strings, got ",
             json_excerpt(value));
    std::map<std::string, std::string> metadata;
    for (const auto& [key, item] : value.items()) {
        ST_CHECK(item.is_string(), path, "__metadata__ value of ", quote_name(key),
                 " must be a string, got ", json_excerpt(item));
        metadata[key] = item.get<std::string>();
    }
    return metadata;
}

// The tensors, in offset order, must tile the data section exactly, as the reference
// implementation requires: no overlap, no gap, no byte after the last one. A header length
// that points into the header's padding, or bytes appended to a file, shift or extend the
// data section, and would otherwise load every weight from the wrong place.
void check_tiling(const std::string& path, std::vector<Entry> entries, uint64_t data_size) {
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    uint64_t position = 0;
    const Entry* previous = nullptr;
    for (const Entry& e : entries) {
        ST_CHECK(e.begin >= position, path, "tensors ", quote_name(previous->name), " [",
                 previous->begin, ", ", previous->end, "] and ", quote_name(e.name), " [", e.begin,
                 ", ", e.end, "] overlap");
        ST_CHECK(e.begin == position, path, "tensor ", quote_name(e.name), " starts at byte ",
                 e.begin, " of the data section but the tensors before it end at ", position,
                 " (a gap of ", e.begin - position, " bytes)");
        position = e.end;
        if (e.end > e.begin) previous = &e;
    }
    ST_CHECK(position == data_size, path, "the data section has ", data_size,
             " bytes but its tensors cover ", position, ": ", data_size - position,
             " unexplained bytes (a wrong header length, or data appended to the file)");
}

// Reads and checks the 8-byte length and the JSON header; returns the header object.
Json read_header(const std::string& path, const Mapping& file, uint64_t* header_size) {
    uint64_t n = 0;
    std::memcpy(&n, file.bytes(), 8);
    uint64_t rest = file.size() - 8;
    ST_CHECK(n <= rest, path, "header length ", n, " runs past the end of the file (", rest,
             " bytes follow the length field)");
    ST_CHECK(n <= kMaxHeaderBytes, path, "header length ", n, " exceeds the limit of ",
             kMaxHeaderBytes, " bytes (16 MB)");
    Json header = parse_json_strict(std::string_view(file.bytes() + 8, size_t(n)), "safetensors",
                                    path + ": header", kMaxHeaderDepth);
    ST_CHECK(header.is_object(), path, "header must be a JSON object, got a ", header.type_name());
    *header_size = n;
    return header;
}

// ---- the checksum ----
// lumen's files carry a CRC-32 of their content in the metadata key "lumen.crc32" (8 hex
// digits), over: for each tensor in name order its name, dtype, shape and data bytes, then
// each other metadata entry in key order. It is independent of the header's formatting, and
// covers every byte that means something.

uint32_t crc_bytes(uint32_t crc, const void* data, size_t nbytes) {
    // zlib returns the initial value 0 for a null buffer (a 0-d shape's data(), an empty
    // tensor's storage): that would restart the sum, so nothing is not hashed at all.
    if (nbytes == 0) return crc;
    return uint32_t(crc32_z(crc, static_cast<const Bytef*>(data), nbytes));
}

uint32_t crc_text(uint32_t crc, const std::string& text) {
    return crc_bytes(crc, text.c_str(), text.size() + 1);  // with the terminating NUL
}

uint32_t crc_tensor_head(uint32_t crc, const std::string& name, DType dtype, const Shape& shape) {
    crc = crc_text(crc_text(crc, name), dtype_to_name(dtype));
    uint64_t rank = shape.size();
    crc = crc_bytes(crc, &rank, 8);
    return crc_bytes(crc, shape.data(), shape.size() * sizeof(int64_t));
}

uint32_t crc_metadata(uint32_t crc, const std::map<std::string, std::string>& metadata) {
    for (const auto& [key, value] : metadata)
        if (key != kChecksumKey) crc = crc_text(crc_text(crc, key), value);
    return crc;
}

std::string hex8(uint32_t value) {
    char text[9];
    std::snprintf(text, sizeof(text), "%08x", value);
    return text;
}

void verify_checksum(const std::string& path, const std::string& recorded,
                     std::vector<Entry> entries, const char* data,
                     const std::map<std::string, std::string>& metadata) {
    std::sort(entries.begin(), entries.end(),
              [](const Entry& a, const Entry& b) { return a.name < b.name; });
    uint32_t crc = crc32_z(0, nullptr, 0);
    for (const Entry& e : entries) {
        crc = crc_tensor_head(crc, e.name, e.dtype, e.shape);
        crc = crc_bytes(crc, data + e.begin, size_t(e.end - e.begin));
    }
    crc = crc_metadata(crc, metadata);
    ST_CHECK(
        recorded.size() == 8 && recorded.find_first_not_of("0123456789abcdef") == std::string::npos,
        path, "metadata '", kChecksumKey, "' must be 8 lowercase hex digits, got '",
        recorded.substr(0, 40), "'");
    ST_CHECK(hex8(crc) == recorded, path, "checksum mismatch: the content's CRC-32 is ", hex8(crc),
             " but the file records ", recorded, " (the file is damaged)");
}

Tensor make_tensor(const std::shared_ptr<Mapping>& file, const char* data, const Entry& entry) {
    size_t nbytes = size_t(entry.end - entry.begin);
    const char* src = data + entry.begin;
    if (nbytes == 0) return empty(entry.shape, entry.dtype);
    if (entry.dtype == DType::bool_) {
        // A byte other than 0/1 read as C++ bool is undefined behaviour: normalize on copy.
        Tensor out = empty(entry.shape, entry.dtype);
        auto* dst = static_cast<bool*>(out.data_ptr());
        for (size_t i = 0; i < nbytes; ++i) dst[i] = src[i] != 0;
        return out;
    }
    if (reinterpret_cast<uintptr_t>(src) % itemsize(entry.dtype) != 0) {
        Tensor out = empty(entry.shape, entry.dtype);
        std::memcpy(out.data_ptr(), src, nbytes);
        return out;
    }
    // Alias the mapping; the release function holds the mapping until the storage dies.
    char* alias = file->mutable_bytes() + (src - file->bytes());
    auto impl = std::make_shared<TensorImpl>();
    impl->storage = std::make_shared<Storage>(alias, nbytes, Device::cpu(), [file] {});
    impl->shape = entry.shape;
    impl->strides = contiguous_strides(entry.shape);
    impl->dtype = entry.dtype;
    return Tensor(std::move(impl));
}

}  // namespace

const char* safetensors_dtype_name(DType dtype) { return dtype_to_name(dtype); }

SafetensorsFile load_safetensors(const std::string& path) {
    std::shared_ptr<Mapping> file = map_file(path);
    uint64_t header_size = 0;
    Json header = read_header(path, *file, &header_size);
    uint64_t data_size = file->size() - 8 - header_size;
    const char* data = file->bytes() + 8 + header_size;

    SafetensorsFile out;
    std::vector<Entry> entries;
    for (const auto& [name, value] : header.items()) {
        if (name == "__metadata__") {
            out.metadata = parse_metadata(path, value);
        } else {
            entries.push_back(parse_entry(path, name, value, data_size));
        }
    }
    check_tiling(path, entries, data_size);
    if (auto checksum = out.metadata.find(kChecksumKey); checksum != out.metadata.end()) {
        verify_checksum(path, checksum->second, entries, data, out.metadata);
        out.metadata.erase(checksum);
        out.checksum_verified = true;
    }
    for (const Entry& entry : entries) out.tensors[entry.name] = make_tensor(file, data, entry);
    return out;
}

// ---- writing ----

namespace {

// The header with the checksum as "00000000"; `checksum_at` receives the offset of those digits
// in the file, where save_safetensors writes the real value once the data is written.
std::string build_header(const std::string& path, const std::map<std::string, Tensor>& tensors,
                         std::map<std::string, std::string> metadata, uint64_t* checksum_at) {
    Json header = Json::object();
    uint64_t offset = 0;
    for (const auto& [name, tensor] : tensors) {
        ST_CHECK(!name.empty() && name != "__metadata__", path, "invalid tensor name ",
                 quote_name(name));
        ST_CHECK(tensor.defined(), path, "tensor ", quote_name(name), " is undefined");
        uint64_t nbytes = uint64_t(tensor.numel()) * tensor.element_size();
        header[name] = {{"dtype", dtype_to_name(tensor.dtype())},
                        {"shape", tensor.shape()},
                        {"data_offsets", {offset, offset + nbytes}}};
        offset += nbytes;
    }
    ST_CHECK(!metadata.count(kChecksumKey), path, "metadata key '", kChecksumKey,
             "' is reserved: lumen writes the file's checksum there");
    const std::string placeholder = "00000000";
    metadata[kChecksumKey] = placeholder;
    header["__metadata__"] = metadata;
    std::string text;
    try {
        text = header.dump();
    } catch (const Json::exception& e) {
        ST_FAIL(path, "cannot encode the header (names and metadata must be UTF-8): ", e.what());
    }
    // Names and values are escaped in the dump, so this quoted pair occurs exactly once.
    const std::string marker = std::string("\"") + kChecksumKey + "\":\"" + placeholder + "\"";
    size_t at = text.find(marker);
    LUMEN_ASSERT(at != std::string::npos);
    *checksum_at = 8 + at + marker.size() - 1 - placeholder.size();
    text.append((8 - text.size() % 8) % 8, ' ');  // keeps the data section 8-byte aligned
    return text;
}

}  // namespace

void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
    uint64_t checksum_at = 0;
    std::string header = build_header(path, tensors, metadata, &checksum_at);
    write_file_atomically(path, "safetensors", [&](FileWriter& out) {
        uint64_t n = header.size();
        out.write(&n, 8);
        out.write(header);
        uint32_t crc = crc32_z(0, nullptr, 0);
        for (const auto& [name, tensor] : tensors) {
            if (fault::at("safetensors.data"))
                ST_FAIL(out.path(), "write failed: ", std::strerror(ENOSPC));
            // One tensor at a time, so a CUDA model never needs a full host copy at once.
            Tensor host = tensor.detach().contiguous().cpu();
            size_t nbytes = size_t(host.numel()) * host.element_size();
            crc = crc_tensor_head(crc, name, host.dtype(), host.shape());
            crc = crc_bytes(crc, host.data_ptr(), nbytes);
            out.write(host.data_ptr(), nbytes);
        }
        crc = crc_metadata(crc, metadata);
        out.write_at(checksum_at, hex8(crc).data(), 8);
    });
}

}  // namespace lumen
