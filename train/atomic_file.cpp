// POSIX fsync/rename sequence of the atomic write; std::filesystem for paths and mkdir -p.
#include "train/atomic_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <unistd.h>

#include "core/error.h"
#include "core/fault.h"
#include "core/file_io.h"

namespace lumen::train {

namespace fs = std::filesystem;

void fsync_path(const std::string& path) {
    // O_RDONLY works for directories as well as files; fsync applies to the inode, so a
    // descriptor opened after the writer closed still flushes the writer's data.
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        int error = errno;
        LUMEN_FAIL("atomic_file", path, ": cannot open to fsync: ", std::strerror(error));
    }
    int result = ::fsync(fd);
    int error = errno;
    ::close(fd);
    LUMEN_CHECK(result == 0, "atomic_file", path, ": fsync failed: ", std::strerror(error));
}

void commit_file(const std::string& temp, const std::string& path) {
    try {
        fsync_path(temp);
        fault::at("atomic.before_rename");
        if (std::rename(temp.c_str(), path.c_str()) != 0) {
            int error = errno;
            LUMEN_FAIL("atomic_file", "cannot rename ", temp, " to ", path, ": ",
                       std::strerror(error));
        }
    } catch (...) {
        std::remove(temp.c_str());
        throw;
    }
    fault::at("atomic.after_rename");
    fs::path parent = fs::path(path).parent_path();
    fsync_path(parent.empty() ? "." : parent.string());
}

void write_atomically(const std::string& path,
                      const std::function<void(const std::string&)>& write) {
    const std::string temp = path + ".partial";
    try {
        write(temp);
    } catch (...) {
        std::remove(temp.c_str());
        throw;
    }
    commit_file(temp, path);
}

void write_text_atomically(const std::string& path, const std::string& text) {
    write_atomically(path, [&](const std::string& temp) {
        FileWriter out(temp, "atomic_file");
        out.write(text);
        out.close();
    });
}

void make_directories(const std::string& path) {
    std::error_code error;
    fs::create_directories(path, error);
    LUMEN_CHECK(!error, "atomic_file", path, ": cannot create the directory: ", error.message());
}

}  // namespace lumen::train
