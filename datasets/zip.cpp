// ZIP reading over a read-only mapping of the file (nothing is read outside it) and writing
// with FileWriter. Layout (PKWARE APPNOTE 6.3): local headers with the data, then the central
// directory (one 46-byte entry per member), then the end-of-central-directory record (22
// bytes, found by scanning back over at most a 64 KiB comment); archives over 4 GiB or 65535
// members keep 64-bit fields in a ZIP64 record located just before it.
#include "datasets/zip.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include <sys/mman.h>
#include <zlib.h>

#include "core/error.h"
#include "core/file_io.h"

namespace lumen::datasets {

namespace {

constexpr uint32_t kLocalSignature = 0x04034b50, kCentralSignature = 0x02014b50,
                   kEndSignature = 0x06054b50, kEnd64Signature = 0x06064b50,
                   kLocator64Signature = 0x07064b50;
constexpr uint64_t kMaxDeflateRatio = 1032;  // deflate cannot compress better than this

// A read-only view of the mapped file with bounds-checked little-endian reads.
class Bytes {
  public:
    Bytes(const unsigned char* data, uint64_t size, std::string owner, std::string path)
        : data_(data), size_(size), owner_(std::move(owner)), path_(std::move(path)) {}
    uint64_t size() const { return size_; }
    const unsigned char* at(uint64_t offset, uint64_t length, const char* what) const {
        LUMEN_CHECK(offset <= size_ && length <= size_ - offset, owner_, path_, ": ", what,
                    " at byte ", offset, " (", length, " bytes) runs past the end of the file (",
                    size_, " bytes)");
        return data_ + offset;
    }
    template <typename T>
    T read(uint64_t offset, const char* what) const {
        const unsigned char* p = at(offset, sizeof(T), what);
        T value = 0;
        for (size_t i = 0; i < sizeof(T); ++i) value |= T(p[i]) << (8 * i);
        return value;
    }
    [[noreturn]] void fail(const std::string& problem) const {
        LUMEN_FAIL(owner_, path_, ": ", problem);
    }

  private:
    const unsigned char* data_;
    uint64_t size_;
    std::string owner_, path_;
};

struct Entry {
    std::string name;
    uint16_t flags = 0, method = 0;
    uint32_t crc = 0;
    uint64_t compressed = 0, uncompressed = 0, local_offset = 0;
};

struct Directory {
    uint64_t entries = 0, offset = 0, size = 0;
};

// The end-of-central-directory record (and the ZIP64 one when present).
Directory read_directory(const Bytes& file) {
    if (file.size() < 22)
        file.fail("is " + std::to_string(file.size()) +
                  " bytes, too short for a ZIP archive (at least 22)");
    // Scan back for the record: 22 bytes plus a comment of at most 65535 bytes.
    uint64_t lowest = file.size() >= 22 + 65535 ? file.size() - 22 - 65535 : 0;
    uint64_t end = file.size() - 22;
    for (;; --end) {
        if (file.read<uint32_t>(end, "the end record") == kEndSignature &&
            end + 22 + file.read<uint16_t>(end + 20, "the end record") == file.size())
            break;
        if (end == lowest) file.fail("is not a ZIP archive (no end-of-central-directory record)");
    }
    Directory d{file.read<uint16_t>(end + 10, "the end record"),
                file.read<uint32_t>(end + 16, "the end record"),
                file.read<uint32_t>(end + 12, "the end record")};
    if (file.read<uint16_t>(end + 4, "the end record") != 0 ||
        file.read<uint16_t>(end + 6, "the end record") != 0)
        file.fail("is a multi-disk ZIP archive, which is not supported");
    bool zip64 = d.entries == 0xFFFF || d.offset == 0xFFFFFFFF || d.size == 0xFFFFFFFF;
    if (zip64) {
        if (end < 20 || file.read<uint32_t>(end - 20, "the ZIP64 locator") != kLocator64Signature)
            file.fail("has 64-bit fields but no ZIP64 locator before its end record");
        uint64_t record = file.read<uint64_t>(end - 12, "the ZIP64 locator");
        if (file.read<uint32_t>(record, "the ZIP64 end record") != kEnd64Signature)
            file.fail("the ZIP64 end record at byte " + std::to_string(record) +
                      " has no signature");
        d.entries = file.read<uint64_t>(record + 32, "the ZIP64 end record");
        d.size = file.read<uint64_t>(record + 40, "the ZIP64 end record");
        d.offset = file.read<uint64_t>(record + 48, "the ZIP64 end record");
    }
    file.at(d.offset, d.size, "the central directory");
    // Each entry takes at least 46 bytes: a count beyond that is a lie.
    if (d.entries > d.size / 46)
        file.fail("claims " + std::to_string(d.entries) + " members in a central directory of " +
                  std::to_string(d.size) + " bytes");
    return d;
}

// The ZIP64 extra field (id 1) replaces the 32-bit fields that hold 0xFFFFFFFF, in order.
void read_zip64_extra(const Bytes& file, uint64_t extra, uint64_t extra_end, Entry* e) {
    while (extra + 4 <= extra_end) {
        uint16_t id = file.read<uint16_t>(extra, "an extra field");
        uint16_t length = file.read<uint16_t>(extra + 2, "an extra field");
        uint64_t field = extra + 4, field_end = field + length;
        if (field_end > extra_end) file.fail("member '" + e->name + "' has a torn extra field");
        if (id == 1) {
            for (uint64_t* value : {&e->uncompressed, &e->compressed, &e->local_offset}) {
                if (*value != 0xFFFFFFFF) continue;
                if (field + 8 > field_end)
                    file.fail("member '" + e->name + "' has a short ZIP64 extra field");
                *value = file.read<uint64_t>(field, "a ZIP64 field");
                field += 8;
            }
        }
        extra = field_end;
    }
}

std::vector<Entry> read_entries(const Bytes& file, const Directory& d) {
    std::vector<Entry> entries;
    uint64_t at = d.offset, end = d.offset + d.size;
    for (uint64_t i = 0; i < d.entries; ++i) {
        if (at + 46 > end || file.read<uint32_t>(at, "a directory entry") != kCentralSignature)
            file.fail("central directory entry " + std::to_string(i) + " at byte " +
                      std::to_string(at) + " is damaged");
        Entry e;
        e.flags = file.read<uint16_t>(at + 8, "a directory entry");
        e.method = file.read<uint16_t>(at + 10, "a directory entry");
        e.crc = file.read<uint32_t>(at + 16, "a directory entry");
        e.compressed = file.read<uint32_t>(at + 20, "a directory entry");
        e.uncompressed = file.read<uint32_t>(at + 24, "a directory entry");
        uint16_t name_length = file.read<uint16_t>(at + 28, "a directory entry");
        uint16_t extra_length = file.read<uint16_t>(at + 30, "a directory entry");
        uint16_t comment_length = file.read<uint16_t>(at + 32, "a directory entry");
        e.local_offset = file.read<uint32_t>(at + 42, "a directory entry");
        const unsigned char* name = file.at(at + 46, name_length, "a member name");
        e.name.assign(reinterpret_cast<const char*>(name), name_length);
        read_zip64_extra(file, at + 46 + name_length, at + 46 + name_length + extra_length, &e);
        at += 46 + uint64_t(name_length) + extra_length + comment_length;
        if (at > end) file.fail("the central directory entry of '" + e.name + "' runs past it");
        entries.push_back(std::move(e));
    }
    return entries;
}

std::string inflate_member(const Bytes& file, const Entry& e, const unsigned char* data) {
    // One byte of room beyond the claimed size: a stream that holds more than it claims then
    // shows as a longer output instead of stalling.
    std::string out(size_t(e.uncompressed) + 1, '\0');
    z_stream stream{};
    if (inflateInit2(&stream, -15) != Z_OK) file.fail("cannot start inflating (zlib)");
    stream.next_in = const_cast<unsigned char*>(data);
    stream.avail_in = 0;
    stream.next_out = reinterpret_cast<unsigned char*>(out.data());
    uint64_t in_left = e.compressed, out_left = e.uncompressed + 1;
    int status = Z_OK;
    while (status == Z_OK) {
        // zlib counts in 32-bit units: feed at most 1 GiB at a time.
        if (stream.avail_in == 0 && in_left > 0) {
            stream.avail_in = unsigned(std::min<uint64_t>(in_left, 1u << 30));
            in_left -= stream.avail_in;
        }
        if (stream.avail_out == 0 && out_left > 0) {
            stream.avail_out = unsigned(std::min<uint64_t>(out_left, 1u << 30));
            out_left -= stream.avail_out;
        }
        status = inflate(&stream, Z_NO_FLUSH);
        if (status == Z_BUF_ERROR && (stream.avail_in > 0 || in_left > 0) &&
            (stream.avail_out > 0 || out_left > 0))
            status = Z_OK;  // more of both to come
    }
    uint64_t produced = uint64_t(reinterpret_cast<char*>(stream.next_out) - out.data());
    inflateEnd(&stream);
    if (status != Z_STREAM_END || produced != e.uncompressed)
        file.fail("member '" + e.name + "' is corrupt: its deflate data " +
                  (status == Z_STREAM_END ? "gives " + std::to_string(produced) + " bytes"
                                          : std::string("does not end where it should")) +
                  " (expected " + std::to_string(e.uncompressed) + " bytes)");
    out.resize(size_t(produced));
    return out;
}

class Mapping {
  public:
    explicit Mapping(const std::string& path, const std::string& owner) {
        FileHandle file = open_regular_file(path, owner, &size_);
        if (size_ == 0) return;
        void* data = ::mmap(nullptr, size_t(size_), PROT_READ, MAP_PRIVATE, file.get(), 0);
        int error = errno;
        LUMEN_CHECK(data != MAP_FAILED, owner, path, ": cannot memory-map ", size_,
                    " bytes: ", std::strerror(error));
        data_ = static_cast<const unsigned char*>(data);
    }
    ~Mapping() {
        if (data_) ::munmap(const_cast<unsigned char*>(data_), size_t(size_));
    }
    Mapping(const Mapping&) = delete;
    Mapping& operator=(const Mapping&) = delete;
    const unsigned char* data() const { return data_; }
    uint64_t size() const { return size_; }

  private:
    const unsigned char* data_ = nullptr;
    uint64_t size_ = 0;
};

}  // namespace

std::vector<ZipMember> read_zip(const std::string& path, const std::string& owner,
                                uint64_t max_member_bytes) {
    Mapping mapping(path, owner);
    Bytes file(mapping.data(), mapping.size(), owner, path);
    Directory directory = read_directory(file);
    std::vector<ZipMember> members;
    for (const Entry& e : read_entries(file, directory)) {
        const std::string member = "member '" + e.name + "'";
        if (e.flags & 1) file.fail(member + " is encrypted, which is not supported");
        if (e.method != 0 && e.method != 8)
            file.fail(member + " uses compression method " + std::to_string(e.method) +
                      " (supported: 0 stored, 8 deflated)");
        if (e.uncompressed > max_member_bytes)
            file.fail(member + " claims " + std::to_string(e.uncompressed) +
                      " bytes, over the limit of " + std::to_string(max_member_bytes));
        if (e.method == 0 && e.compressed != e.uncompressed)
            file.fail(member + " is stored but its sizes differ (" + std::to_string(e.compressed) +
                      " and " + std::to_string(e.uncompressed) + " bytes)");
        if (e.method == 8 && e.uncompressed > kMaxDeflateRatio * e.compressed + 64)
            file.fail(member + " claims " + std::to_string(e.uncompressed) + " bytes from " +
                      std::to_string(e.compressed) + " compressed, beyond what deflate can do");
        if (file.read<uint32_t>(e.local_offset, "a local header") != kLocalSignature)
            file.fail(member + ": no local header at byte " + std::to_string(e.local_offset));
        uint64_t name_length = file.read<uint16_t>(e.local_offset + 26, "a local header");
        uint64_t extra_length = file.read<uint16_t>(e.local_offset + 28, "a local header");
        uint64_t start = e.local_offset + 30 + name_length + extra_length;
        const unsigned char* data = file.at(start, e.compressed, "the data of a member");
        ZipMember out{e.name, {}};
        if (e.method == 0)
            out.data.assign(reinterpret_cast<const char*>(data), size_t(e.compressed));
        else
            out.data = inflate_member(file, e, data);
        uint32_t crc =
            uint32_t(crc32_z(0, reinterpret_cast<const Bytef*>(out.data.data()), out.data.size()));
        if (!out.data.empty() && crc != e.crc)
            file.fail(member + " fails its CRC-32 check (the archive is damaged)");
        members.push_back(std::move(out));
    }
    return members;
}

namespace {

void put16(std::string& out, uint16_t v) {
    for (int i = 0; i < 2; ++i) out.push_back(char(v >> (8 * i)));
}
void put32(std::string& out, uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(char(v >> (8 * i)));
}

std::string deflate_raw(const std::string& data, const std::string& owner,
                        const std::string& path) {
    z_stream stream{};
    LUMEN_CHECK(deflateInit2(&stream, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) == Z_OK, owner,
                path, ": cannot start deflating (zlib)");
    std::string out(deflateBound(&stream, uLong(data.size())), '\0');
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    stream.avail_in = uInt(data.size());
    stream.next_out = reinterpret_cast<Bytef*>(out.data());
    stream.avail_out = uInt(out.size());
    int status = deflate(&stream, Z_FINISH);
    out.resize(stream.total_out);
    deflateEnd(&stream);
    LUMEN_CHECK(status == Z_STREAM_END, owner, path, ": deflate failed (zlib status ", status, ")");
    return out;
}

}  // namespace

void write_zip(const std::string& path, const std::string& owner,
               const std::vector<ZipMember>& members, bool deflate) {
    write_file_atomically(path, owner, [&](FileWriter& out) {
        std::string directory;
        uint64_t offset = 0;
        for (const ZipMember& m : members) {
            LUMEN_CHECK(m.data.size() < 0xFFFFFFFFull && m.name.size() < 0xFFFF, owner, path,
                        ": member '", m.name, "' is too large for a ZIP archive without ZIP64");
            uint32_t crc =
                uint32_t(crc32_z(0, reinterpret_cast<const Bytef*>(m.data.data()), m.data.size()));
            std::string packed = deflate ? deflate_raw(m.data, owner, path) : std::string();
            const std::string& body = deflate ? packed : m.data;
            LUMEN_CHECK(offset < 0xFFFFFFFFull, owner, path,
                        ": the archive outgrows 4 GiB (no ZIP64 on writing)");
            std::string header;
            put32(header, kLocalSignature);
            put16(header, 20);  // version needed: 2.0
            put16(header, 0);   // flags
            put16(header, deflate ? 8 : 0);
            put16(header, 0);     // time 00:00
            put16(header, 0x21);  // date 1980-01-01
            put32(header, crc);
            put32(header, uint32_t(body.size()));
            put32(header, uint32_t(m.data.size()));
            put16(header, uint16_t(m.name.size()));
            put16(header, 0);  // extra length
            header += m.name;
            std::string entry;
            put32(entry, kCentralSignature);
            put16(entry, 20);             // made by: 2.0
            entry.append(header, 4, 26);  // version needed ... extra length, as in the header
            put16(entry, 0);              // comment length
            put16(entry, 0);              // disk
            put16(entry, 0);              // internal attributes
            put32(entry, 0);              // external attributes
            put32(entry, uint32_t(offset));
            entry += m.name;
            directory += entry;
            out.write(header);
            out.write(body);
            offset += header.size() + body.size();
        }
        LUMEN_CHECK(members.size() < 0xFFFF && offset < 0xFFFFFFFFull, owner, path,
                    ": too many members or bytes for a ZIP archive without ZIP64");
        std::string end;
        put32(end, kEndSignature);
        put16(end, 0);
        put16(end, 0);
        put16(end, uint16_t(members.size()));
        put16(end, uint16_t(members.size()));
        put32(end, uint32_t(directory.size()));
        put32(end, uint32_t(offset));
        put16(end, 0);  // comment length
        out.write(directory);
        out.write(end);
    });
}

}  // namespace lumen::datasets
