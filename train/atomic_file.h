// Crash-safe file replacement for run directories: write a temporary file, fsync it, rename it
// over the final name, fsync the directory. A kill or power loss at any moment leaves either
// the old file or the complete new one under the final name, never a torn one.
#pragma once

#include <functional>
#include <string>

namespace lumen::train {

// Flushes a file's or a directory's data and metadata to disk (fsync). Throws [atomic_file]
// naming the path and the system's reason.
void fsync_path(const std::string& path);

// fsync(temp), rename(temp, path), fsync(directory of path). Throws [atomic_file] naming both
// paths; the temporary file is removed on failure.
void commit_file(const std::string& temp, const std::string& path);

// Calls write(temp) to create "<path>.partial", then commit_file. `write` must create the file
// it is given (and may throw; the partial file is then removed).
void write_atomically(const std::string& path,
                      const std::function<void(const std::string&)>& write);

// write_atomically for a text file.
void write_text_atomically(const std::string& path, const std::string& text);

// Creates a directory and its parents (mkdir -p); throws [atomic_file] naming the path.
void make_directories(const std::string& path);

}  // namespace lumen::train
