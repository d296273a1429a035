#pragma once
// Client shared memory behind ferry's own wl_shm (protocol/wl_shm.cpp).
//
// A ShmMapping is one mmap of a client's file. The wl_shm_pool and every ShmBuffer made
// from it share it (std::shared_ptr): destroying the pool leaves its buffers usable, and a
// resize gives the pool a new mapping while older buffers keep the old one, so no buffer
// ever sees its memory unmapped.
//
// Reading or writing client memory is guarded twice (begin_access / end_access):
// 1. begin_access fstat()s the file (kept open with the mapping) and refuses when a regular
//    file no longer holds the bytes about to be touched: the client truncated it.
// 2. What still faults during an access (the file shrank after the check, or a file whose
//    size fstat does not tell) is caught by the SIGBUS handler that
//    install_shm_sigbus_handler() installs: it maps zero pages over the whole mapping, the
//    access goes on reading zeros, and end_access reports the failure. A SIGBUS outside
//    every access goes to the handler installed before ours (or kills the process).
//
// Main thread only, except the SIGBUS handler, which runs on whichever thread faults (a
// driver thread reading the memory during an access included).

#include <cstdint>
#include <memory>
#include <string>

#include "util/unique_fd.hpp"

namespace ferry {

class ShmMapping {
 public:
  // Maps the first 'size' (> 0) bytes of 'file' shared: read-write, or read-only when the
  // file refuses writable shared mappings (a write-sealed memfd, a read-only fd). Null on
  // failure, with errno set.
  static std::shared_ptr<ShmMapping> map(std::shared_ptr<const UniqueFd> file, int64_t size);
  ~ShmMapping();
  ShmMapping(const ShmMapping&) = delete;
  ShmMapping& operator=(const ShmMapping&) = delete;

  uint8_t* data() const { return data_; }
  int64_t size() const { return size_; }
  bool writable() const { return writable_; }
  // Shared with the pool's later mappings (resize maps the same file again).
  const std::shared_ptr<const UniqueFd>& file() const { return file_; }
  // True once a SIGBUS hit this mapping: it reads zeros from then on and is never accessed
  // again.
  bool faulted() const { return faulted_; }

  enum class Access { ok, file_too_small, faulted, busy };
  // Starts an access to the bytes [0, end) of the mapping (end <= size()). Anything but ok
  // means no access (and no end_access): file_too_small (a regular file shorter than 'end';
  // *file_size gets its size), faulted (an earlier access faulted), busy (more concurrent
  // accesses than the guard has slots; cannot happen with ferry's callers). Nests.
  Access begin_access(int64_t end, int64_t* file_size);
  // Ends an access; false if a SIGBUS hit the mapping during it (the bytes read were zeros).
  bool end_access();

 private:
  ShmMapping() = default;

  std::shared_ptr<const UniqueFd> file_;
  uint8_t* data_ = nullptr;
  int64_t size_ = 0;
  bool writable_ = false;
  bool faulted_ = false;
  int slot_ = -1;   // guard slot while accessed
  int depth_ = 0;   // nested accesses
};

// Installs the SIGBUS handler (once per process; later calls do nothing). The handler it
// replaces gets every SIGBUS that is not a guarded access's.
void install_shm_sigbus_handler();

// Bytes one row of 'width' pixels takes in a single-plane wl_shm format (packed YUV 4:2:2
// counts whole 2-pixel blocks). 0 for formats ferry cannot bound this way (unknown, or
// planar): such formats are never advertised.
int64_t shm_row_bytes(uint32_t shm_format, int32_t width);

// Bytes a buffer occupies from its first byte: stride * (height - 1) + one row. Exact in
// 64 bits for every int32 argument (no overflow). Arguments must be valid.
int64_t shm_buffer_span(uint32_t shm_format, int32_t width, int32_t height, int32_t stride);

// Checks wl_shm_pool.create_buffer's geometry against a pool of 'pool_size' bytes (the
// format must be one shm_row_bytes knows). Empty if valid; otherwise why not, for the
// wl_shm.error.invalid_stride message.
std::string check_shm_buffer(int64_t pool_size, int32_t offset, int32_t width, int32_t height,
                             int32_t stride, uint32_t shm_format);

}  // namespace ferry
