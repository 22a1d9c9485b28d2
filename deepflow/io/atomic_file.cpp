// SPDX-License-Identifier: Apache-2.0
#include "deepflow/io/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>

#include "deepflow/core/error.h"

namespace deepflow::io::detail {

std::string dir_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string temp_path(const std::string& final_path) {
  // The counter keeps two writers of one process apart; the pid tells a later process
  // whether the writer is still alive.
  static std::atomic<uint64_t> counter{0};
  return final_path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
}

void write_all(int fd, const void* data, size_t n, const std::string& path, const std::string& who) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) fail(who, path, ": cannot write: ", std::strerror(errno));
    p += w;
    n -= size_t(w);
  }
}

void fsync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

void rename_file(const std::string& from, const std::string& to, const std::string& who) {
  if (::rename(from.c_str(), to.c_str()) != 0)
    fail(who, to, ": cannot rename ", from, " over it: ", std::strerror(errno));
}

void write_file_atomic(const std::string& path, std::string_view bytes, const std::string& who) {
  const std::string tmp = temp_path(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) fail(who, path, ": cannot create ", tmp, ": ", std::strerror(errno));
  try {
    write_all(fd, bytes.data(), bytes.size(), tmp, who);
    if (::fsync(fd) != 0) fail(who, tmp, ": cannot fsync: ", std::strerror(errno));
    if (::close(fd) != 0) fail(who, tmp, ": cannot close: ", std::strerror(errno));
  } catch (...) {
    ::close(fd);  // a second close of a closed fd only returns EBADF
    ::unlink(tmp.c_str());
    throw;
  }
  try {
    rename_file(tmp, path, who);
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  fsync_dir(dir_of(path));
}

std::string read_file(const std::string& path, const std::string& who) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(who, path, ": cannot open: ", std::strerror(errno));
  std::unique_ptr<int, void (*)(int*)> guard(new int(fd), [](int* f) {
    ::close(*f);
    delete f;
  });
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail(who, path, ": cannot stat: ", std::strerror(errno));
  DF_CHECK(S_ISREG(st.st_mode), who, path, ": not a regular file");
  std::string out(size_t(st.st_size), '\0');
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t r = ::pread(fd, out.data() + done, out.size() - done, off_t(done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) fail(who, path, ": read error: ", std::strerror(errno));
    if (r == 0) break;  // shrank while reading: what we got is what there is
    done += size_t(r);
  }
  out.resize(done);
  return out;
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

int remove_stale_temporaries(const std::string& dir, const std::string& name_prefix) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return 0;
  int removed = 0;
  while (const dirent* ent = ::readdir(d)) {
    const std::string name = ent->d_name;
    if (name.compare(0, name_prefix.size(), name_prefix) != 0) continue;
    const size_t tmp = name.rfind(".tmp-");
    if (tmp == std::string::npos) continue;
    // ".tmp-<pid>-<n>": both numbers, or it is not one of ours.
    const size_t dash = name.find('-', tmp + 5);
    if (dash == std::string::npos || dash == tmp + 5 || dash + 1 == name.size()) continue;
    const std::string pid_text = name.substr(tmp + 5, dash - tmp - 5);
    if (pid_text.find_first_not_of("0123456789") != std::string::npos ||
        name.find_first_not_of("0123456789", dash + 1) != std::string::npos || pid_text.size() > 9)
      continue;
    const pid_t pid = pid_t(std::stol(pid_text));
    if (pid == ::getpid()) continue;  // another writer of this process, still working
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive (or not ours to judge)
    if (::unlink((dir + "/" + name).c_str()) == 0) ++removed;
  }
  ::closedir(d);
  return removed;
}

}  // namespace deepflow::io::detail
