#pragma once
// A Wayland client that writes the wire format by hand (no libwayland-client), for the
// hostile suite: messages libwayland-client would refuse to send (unknown object ids,
// opcodes past the interface, truncated arguments, fd-carrying requests without the fd,
// requests newer than the bound version), and floods. Reads the server's events back and
// reports a wl_display.error or the end of the connection. One thread at a time.

#include <cstdint>
#include <string>
#include <vector>

namespace ferry::itest {

class RawWire {
 public:
  // Connects to 'socket_path'; ok() is false when that failed.
  explicit RawWire(const std::string& socket_path);
  ~RawWire();
  RawWire(const RawWire&) = delete;
  RawWire& operator=(const RawWire&) = delete;
  bool ok() const { return fd_ >= 0; }

  // Appends a request: header (object, opcode, size from the words) then 'words'. 'fd' >= 0
  // travels as SCM_RIGHTS with it. false when the socket refused the bytes.
  bool request(uint32_t object, uint16_t opcode, const std::vector<uint32_t>& words,
               int fd = -1);
  // 'n' wl_display.sync requests (new callback ids) in one write, as libwayland-client
  // sends what it queued at a flush. Writing them one syscall each instead, without reading,
  // is a different client: a compositor that answers each at once (ferryd at real-time
  // priority) puts every answer in a socket buffer entry of its own, and a few hundred of
  // them fill the socket and libwayland's buffer behind it (docs/reliability.md).
  bool syncs(int n);
  // Writes raw bytes as they are (a header that lies about its size, ...).
  bool write_bytes(const void* data, size_t size, int fd = -1);
  // Wire encoding of a string argument (length with the NUL, padded to 4 bytes).
  static std::vector<uint32_t> string_words(const std::string& s);
  // A new object id (from 2 on, in order, as the protocol wants).
  uint32_t new_id() { return next_id_++; }

  // get_registry + sync, then bind the first global named 'interface' at 'version'.
  // Returns the new object's id, 0 when ferryd has no such global.
  uint32_t bind(const std::string& interface, uint32_t version);
  // The registry name of the first global named 'interface' (0: none); gets the registry
  // first if needed.
  uint32_t global_name(const std::string& interface);
  // The wl_registry's id (0 until bind or global_name made it).
  uint32_t registry() const { return registry_; }

  struct End {
    bool error = false;       // a wl_display.error arrived
    uint32_t object = 0;      // its object id
    uint32_t code = 0;        // its code
    std::string message;      // its message
    bool closed = false;      // the server closed the connection
  };
  // Reads events until a wl_display.error, the end of the connection or 'timeout_ms'
  // without either (then both flags are false).
  End wait_for_end(int timeout_ms);
  // True when a wl_display.sync sent now is answered (done) within 'timeout_ms'.
  bool roundtrip(int timeout_ms);

 private:
  // Reads whatever is available (up to 'timeout_ms' for the first bytes); false at EOF.
  bool read_some(int timeout_ms);
  // Parses complete messages from in_; records errors, globals and callback dones.
  void parse();

  struct Global {
    uint32_t name;
    std::string interface;
    uint32_t version;
  };
  int fd_ = -1;
  uint32_t next_id_ = 2;
  uint32_t registry_ = 0;
  std::vector<uint8_t> in_;
  std::vector<Global> globals_;
  std::vector<uint32_t> done_callbacks_;
  End end_;
};

}  // namespace ferry::itest
