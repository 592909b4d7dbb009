// FileBytes: a regular file's bytes for the importers, mapped in place rather than copied where the
// process allows it (design note 66). Not installed; the importers' FileData holds one.
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "kplab/result.h"

namespace kplab::io_internal {

class FileBytes {
 public:
  // The file at path, with ReadRegularFile's checks and errors (the file gate, then anything but a
  // regular file refused before it is opened). Mapped read-only when mapping is on in this process
  // (SetMappedFileReads, kplab/io.h) and the file has at least kMinMapped bytes; read into memory otherwise, or when
  // the system refuses the mapping.
  static Result<std::shared_ptr<const FileBytes>> Open(const std::string& path, std::string_view expected);
  static constexpr std::size_t kMinMapped = std::size_t{64} << 10;

  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;
  ~FileBytes();

  // The bytes, as long as this object lives.
  std::string_view view() const { return view_; }
  bool mapped() const { return base_ != nullptr; }
  // A mapped file changed since it was mapped: it was cut shorter under the mapping (a read past its new
  // end was given zero bytes, where the system would have killed the process with SIGBUS), or its size,
  // modification time or change time is not what they were. (A write already under way when the file
  // was opened, and not finished by then, changes none of them afterwards: as with a copy read then,
  // it is not seen.) A reader that has finished with the bytes asks this
  // before it trusts what it read (CheckUnchanged). Never for a file read into memory.
  bool Changed() const;

 private:
  FileBytes() = default;
  std::string_view view_;
  std::string read_;  // the bytes of a file read into memory
  // A mapped file: its descriptor, its status when mapped, the region (the file's pages, then one page
  // of zeros, so that a word read across the end never leaves the region) and its guard slot.
  int fd_ = -1;
  struct stat at_open_ {};
  void* base_ = nullptr;
  std::size_t region_ = 0;
  int slot_ = -1;
};

// ReadRegularFile in two steps: the checks and the open (a descriptor and its status: a regular file),
// then the read of the whole file. Errors as ReadRegularFile's.
struct OpenedFile {
  int fd = -1;
  struct stat st {};
};
Result<OpenedFile> OpenRegularFile(const std::string& path, std::string_view expected);
Result<std::string> ReadOpenedFile(OpenedFile file, const std::string& path, std::string_view expected);

}  // namespace kplab::io_internal
