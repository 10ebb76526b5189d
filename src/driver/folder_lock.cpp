#include "driver/folder_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace attnbench {

FolderLock::FolderLock(const std::filesystem::path& dir, Wait wait) {
  fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) throw std::invalid_argument(dir.string() + ": cannot open (" + std::strerror(errno) + ")");
  int locked = 0;
  do {
    locked = ::flock(fd_, LOCK_EX | (wait == Wait::no ? LOCK_NB : 0));
  } while (locked != 0 && errno == EINTR);
  if (locked != 0) {
    const int error = errno;
    ::close(fd_);
    fd_ = -1;
    if (error == EWOULDBLOCK)
      throw std::invalid_argument(dir.string() + ": another attnbench is writing this folder; wait for it to end");
    throw std::invalid_argument(dir.string() + ": cannot lock (" + std::strerror(error) + ")");
  }
}

FolderLock::~FolderLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

FolderLock::FolderLock(FolderLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

FolderLock& FolderLock::operator=(FolderLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

}  // namespace attnbench
