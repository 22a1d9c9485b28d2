// SPDX-License-Identifier: Apache-2.0
// File helpers shared by the persistence code (bundles, checkpoint state files):
// atomic replacement, whole-file reads, and the clean-up of temporaries that a killed
// writer left behind. Internal to deepflow_io.
//
//   io::detail::write_file_atomic("/ckpt/checkpoint", text, "[CheckpointManager.save] ");
//   // a crash leaves the old file or the new one under that name, never half of one
//   std::string bytes = io::detail::read_file("/ckpt/checkpoint", "[latest_checkpoint] ");
//
// Temporaries are named "<final name>.tmp-<pid>-<n>", so a later writer can tell the
// leftovers of a dead process (remove_stale_temporaries) from a live writer's files.
#pragma once

#include <string>
#include <string_view>

namespace deepflow::io::detail {

/// The directory part of a path ("." for a bare name, "/" for "/x").
std::string dir_of(const std::string& path);
/// The last component of a path.
std::string base_of(const std::string& path);
/// A fresh temporary name next to `final_path`: "<final_path>.tmp-<pid>-<n>".
std::string temp_path(const std::string& final_path);

/// Writes every byte to fd; throws "<who><path>: cannot write: <strerror>".
void write_all(int fd, const void* data, size_t n, const std::string& path, const std::string& who);
/// fsyncs a directory so that renames and unlinks in it are durable (best effort:
/// filesystems that refuse fsync on directories are not an error).
void fsync_dir(const std::string& dir);
/// Renames `from` over `to`; throws naming both on failure.
void rename_file(const std::string& from, const std::string& to, const std::string& who);

/// Replaces `path` with `bytes` atomically: temporary in the same directory, write,
/// fsync, rename, fsync the directory. Errors name the path and the failing step.
void write_file_atomic(const std::string& path, std::string_view bytes, const std::string& who);
/// The whole file; throws "<who><path>: cannot open: <strerror>".
std::string read_file(const std::string& path, const std::string& who);
/// True when `path` exists (any kind of file).
bool file_exists(const std::string& path);

/// Removes "<name_prefix>...tmp-<pid>-<n>" files in `dir` whose writer process is gone.
/// Returns how many were removed.
int remove_stale_temporaries(const std::string& dir, const std::string& name_prefix);

}  // namespace deepflow::io::detail
