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

#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"

namespace lumen {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; a big-endian host would need byte swaps");

namespace {

using Json = nlohmann::json;

constexpr uint64_t kMaxHeaderBytes = 100ull << 20;  // 100 MB, as the reference implementation
const char* const kEntryKeys[] = {"dtype", "shape", "data_offsets"};

struct DTypeName {
    DType dtype;
    const char* name;
};
constexpr DTypeName kDTypeNames[] = {{DType::float32, "F32"}, {DType::float64, "F64"},
                                     {DType::float16, "F16"}, {DType::bfloat16, "BF16"},
                                     {DType::int64, "I64"},   {DType::int32, "I32"},
                                     {DType::uint8, "U8"},    {DType::bool_, "BOOL"}};

// Every error reads "[safetensors] <path>: <problem>".
template <typename... Parts>
void check(bool cond, const std::string& path, const Parts&... parts) {
    if (!cond) LUMEN_FAIL("safetensors", path, ": ", parts...);
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
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    check(fd >= 0, path, "cannot open: ", std::strerror(errno));
    struct stat info {};
    if (::fstat(fd, &info) != 0) {
        int error = errno;
        ::close(fd);
        check(false, path, "cannot stat: ", std::strerror(error));
    }
    if (!S_ISREG(info.st_mode)) {
        ::close(fd);
        check(false, path, "not a regular file");
    }
    size_t size = size_t(info.st_size);
    if (size < 8) {
        ::close(fd);
        check(false, path, "file is ", size, " bytes, shorter than the 8-byte header length");
    }
    void* data = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    int error = errno;
    ::close(fd);  // the mapping keeps the file alive
    check(data != MAP_FAILED, path, "cannot memory-map ", size, " bytes: ", std::strerror(error));
    return std::make_shared<Mapping>(data, size);
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
    check(value.is_array(), path, "tensor '", name, "' shape must be a list of integers, got ",
          value.dump());
    Shape shape;
    for (const Json& size : value) {
        check(size.is_number_integer(), path, "tensor '", name,
              "' shape must be a list of integers, got ", value.dump());
        check(!size.is_number_unsigned() ||
                  size.get<uint64_t>() <= uint64_t(std::numeric_limits<int64_t>::max()),
              path, "tensor '", name, "' shape ", value.dump(), " has a size beyond 2^63");
        shape.push_back(size.get<int64_t>());
    }
    for (int64_t size : shape)
        check(size >= 0, path, "tensor '", name, "' has a negative size in shape ", shape);
    return shape;
}

// prod(shape) * itemsize, or throws when it does not fit in int64.
uint64_t byte_size(const std::string& path, const Entry& entry) {
    int64_t bytes = int64_t(itemsize(entry.dtype));
    for (int64_t size : entry.shape) {
        check(!__builtin_mul_overflow(bytes, size, &bytes), path, "tensor '", entry.name,
              "' shape ", entry.shape, " of ", dtype_to_name(entry.dtype),
              " needs more than 2^63 bytes");
    }
    return uint64_t(bytes);
}

void parse_offsets(const std::string& path, const Json& value, uint64_t data_size, Entry* entry) {
    const std::string& name = entry->name;
    bool ok = value.is_array() && value.size() == 2 && value[0].is_number_unsigned() &&
              value[1].is_number_unsigned();
    check(ok, path, "tensor '", name,
          "' data_offsets must be two non-negative integers [begin, end], got ", value.dump());
    entry->begin = value[0].get<uint64_t>();
    entry->end = value[1].get<uint64_t>();
    check(entry->begin <= entry->end, path, "tensor '", name, "' data_offsets [", entry->begin,
          ", ", entry->end, "] end before they begin");
    check(entry->end <= data_size, path, "tensor '", name, "' data_offsets [", entry->begin, ", ",
          entry->end, "] run past the end of the data section (", data_size, " bytes)");
    uint64_t needed = byte_size(path, *entry);
    check(entry->end - entry->begin == needed, path, "tensor '", name, "' data_offsets [",
          entry->begin, ", ", entry->end, "] hold ", entry->end - entry->begin, " bytes but shape ",
          entry->shape, " of ", dtype_to_name(entry->dtype), " needs ", needed);
}

Entry parse_entry(const std::string& path, const std::string& name, const Json& value,
                  uint64_t data_size) {
    check(value.is_object(), path, "tensor '", name,
          "' must be an object {dtype, shape, data_offsets}, got ", value.dump());
    for (const auto& [key, unused] : value.items()) {
        bool known = key == kEntryKeys[0] || key == kEntryKeys[1] || key == kEntryKeys[2];
        check(known, path, "tensor '", name, "' has unknown key '", key,
              "' (expected dtype, shape, data_offsets)");
    }
    for (const char* key : kEntryKeys)
        check(value.contains(key), path, "tensor '", name, "' has no '", key, "'");
    Entry entry;
    entry.name = name;
    const Json& dtype = value["dtype"];
    check(dtype.is_string() && name_to_dtype(dtype.get<std::string>(), &entry.dtype), path,
          "tensor '", name, "' has unknown dtype ", dtype.dump(),
          " (expected F32, F64, F16, BF16, I64, I32, U8 or BOOL)");
    entry.shape = parse_shape(path, name, value["shape"]);
    parse_offsets(path, value["data_offsets"], data_size, &entry);
    return entry;
}

std::map<std::string, std::string> parse_metadata(const std::string& path, const Json& value) {
    check(value.is_object(), path, "__metadata__ must be an object of strings, got ", value.dump());
    std::map<std::string, std::string> metadata;
    for (const auto& [key, item] : value.items()) {
        check(item.is_string(), path, "__metadata__ value of '", key, "' must be a string, got ",
              item.dump());
        metadata[key] = item.get<std::string>();
    }
    return metadata;
}

// Sorted by begin, each tensor must start at or after the end of the previous one.
void check_no_overlap(const std::string& path, std::vector<Entry> entries) {
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    for (size_t i = 1; i < entries.size(); ++i) {
        const Entry& a = entries[i - 1];
        const Entry& b = entries[i];
        bool empty = a.begin == a.end || b.begin == b.end;  // zero bytes overlap nothing
        check(empty || b.begin >= a.end, path, "tensors '", a.name, "' [", a.begin, ", ", a.end,
              "] and '", b.name, "' [", b.begin, ", ", b.end, "] overlap");
    }
}

// Reads and checks the 8-byte length and the JSON header; returns the header object.
Json read_header(const std::string& path, const Mapping& file, uint64_t* header_size) {
    uint64_t n = 0;
    std::memcpy(&n, file.bytes(), 8);
    uint64_t rest = file.size() - 8;
    check(n <= rest, path, "header length ", n, " runs past the end of the file (", rest,
          " bytes follow the length field)");
    check(n <= kMaxHeaderBytes, path, "header length ", n, " exceeds the limit of ",
          kMaxHeaderBytes, " bytes");
    Json header;
    try {
        header = Json::parse(file.bytes() + 8, file.bytes() + 8 + n);
    } catch (const Json::exception& e) {
        check(false, path, "header is not valid JSON: ", e.what());
    }
    check(header.is_object(), path, "header must be a JSON object, got a ", header.type_name());
    *header_size = n;
    return header;
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
    check_no_overlap(path, entries);
    for (const Entry& entry : entries) out.tensors[entry.name] = make_tensor(file, data, entry);
    return out;
}

// ---- writing ----

namespace {

struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
};

void write_bytes(std::FILE* f, const void* data, size_t nbytes, const std::string& path) {
    if (nbytes == 0) return;
    check(std::fwrite(data, 1, nbytes, f) == nbytes, path, "write of ", nbytes,
          " bytes failed: ", std::strerror(errno));
}

std::string build_header(const std::string& path, const std::map<std::string, Tensor>& tensors,
                         const std::map<std::string, std::string>& metadata) {
    Json header = Json::object();
    uint64_t offset = 0;
    for (const auto& [name, tensor] : tensors) {
        check(!name.empty() && name != "__metadata__", path, "invalid tensor name '", name, "'");
        check(tensor.defined(), path, "tensor '", name, "' is undefined");
        uint64_t nbytes = uint64_t(tensor.numel()) * tensor.element_size();
        header[name] = {{"dtype", dtype_to_name(tensor.dtype())},
                        {"shape", tensor.shape()},
                        {"data_offsets", {offset, offset + nbytes}}};
        offset += nbytes;
    }
    if (!metadata.empty()) header["__metadata__"] = metadata;
    std::string text;
    try {
        text = header.dump();
    } catch (const Json::exception& e) {
        check(false, path,
              "cannot encode the header (names and metadata must be UTF-8): ", e.what());
    }
    text.append((8 - text.size() % 8) % 8, ' ');  // keeps the data section 8-byte aligned
    return text;
}

}  // namespace

void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
    std::string header = build_header(path, tensors, metadata);
    std::string temp = path + ".tmp";
    std::unique_ptr<std::FILE, FileCloser> f(std::fopen(temp.c_str(), "wb"));
    check(f != nullptr, temp, "cannot open for writing: ", std::strerror(errno));
    try {
        uint64_t n = header.size();
        write_bytes(f.get(), &n, 8, temp);
        write_bytes(f.get(), header.data(), header.size(), temp);
        for (const auto& [name, tensor] : tensors) {
            // One tensor at a time, so a CUDA model never needs a full host copy at once.
            Tensor host = tensor.detach().contiguous().cpu();
            write_bytes(f.get(), host.data_ptr(), size_t(host.numel()) * host.element_size(), temp);
        }
        check(std::fclose(f.release()) == 0, temp, "close failed: ", std::strerror(errno));
    } catch (...) {
        f.reset();
        std::remove(temp.c_str());
        throw;
    }
    if (std::rename(temp.c_str(), path.c_str()) != 0) {
        int error = errno;
        std::remove(temp.c_str());
        check(false, path, "cannot rename ", temp, " to it: ", std::strerror(error));
    }
}

}  // namespace lumen
