// ZIP archives, as NumPy's .npz files use them (numpy.savez / savez_compressed): reading the
// members of a stored or deflated archive (ZIP64 included), and writing one. Only what .npz
// needs: no encryption, no multi-disk archives, no data descriptors on reading sizes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lumen::datasets {

struct ZipMember {
    std::string name;
    std::string data;  // the uncompressed bytes
};

// Reads every member of a ZIP archive. Everything the archive claims is checked against the
// file before it is used or allocated: the end-of-central-directory record (and the ZIP64 one),
// each entry's offsets and sizes within the file, the method (0 stored, 8 deflated), the
// uncompressed size (at most `max_member_bytes`, and for deflated data at most 1032 times the
// compressed size, the format's limit), the inflated length, and each member's CRC-32.
// Throws lumen::Error "[<owner>] <path>: <problem>" naming the member.
std::vector<ZipMember> read_zip(const std::string& path, const std::string& owner,
                                uint64_t max_member_bytes);

// Writes `members` as a ZIP archive, each stored or deflated (zlib level 6), atomically
// (a temporary file renamed over `path`). Members of 4 GiB or more are refused (no ZIP64 on
// writing). Throws "[<owner>] <path>: ..." for I/O errors with the failing call's reason.
void write_zip(const std::string& path, const std::string& owner,
               const std::vector<ZipMember>& members, bool deflate);

}  // namespace lumen::datasets
