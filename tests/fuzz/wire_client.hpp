// The wire fuzzer's client (tests/fuzz/fuzz_wire.cpp): a raw Wayland connection that
// marshals requests itself (header, 32-bit words, padded strings and arrays, fds as
// SCM_RIGHTS), and reads the server's events only as far as the fuzzer needs: objects the
// server creates, ids it deletes, wl_display.error, wl_callback.done, wl_registry.global.
// Single-threaded; the server runs in the same thread and is dispatched by the caller.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

struct wl_client;

namespace ferry::fuzz {

// Reads the fuzzer's input front to back; zeros once it is used up.
struct Reader {
  const uint8_t* data;
  size_t size, at = 0;
  bool done() const { return at >= size; }
  uint8_t byte() { return at < size ? data[at++] : 0; }
  uint32_t u32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= uint32_t(byte()) << (8 * i);
    return v;
  }
};

// One request being marshalled. Owns the fds it carries until it is sent.
struct Message {
  std::vector<uint32_t> words;  // words[0] object id, words[1] size << 16 | opcode
  std::vector<int> fds;
  Message() = default;
  Message(Message&& o) noexcept : words(std::move(o.words)), fds(std::move(o.fds)) { o.fds.clear(); }
  Message& operator=(Message&&) = delete;
  ~Message();
  void put(uint32_t w) { words.push_back(w); }
  void put_string(const std::string& s);  // length with the NUL, padded to 4 bytes
  void put_array(const std::vector<uint8_t>& bytes);
  void put_fd(int fd) { if (fd >= 0) fds.push_back(fd); }
};

// Index of an interface in wire_interfaces by name, or -1.
int16_t interface_index(const char* name);

class WireClient {
 public:
  struct Object {
    int16_t interface;
    uint32_t version;
  };
  struct GlobalInfo {
    uint32_t name;
    int16_t interface;
    uint32_t version;
  };

  // 'fd': this end of the socketpair; 'server_side': the wl_client on the other end.
  WireClient(int fd, wl_client* server_side);
  ~WireClient();
  WireClient(const WireClient&) = delete;
  WireClient& operator=(const WireClient&) = delete;

  // Destroys the server's wl_client (if the server has not already) and closes the socket.
  void disconnect();
  // A wl_display.error arrived, the server closed the connection, or it destroyed the client.
  bool dead() const { return dead_ || !server_side_; }

  // 'want_globals': parse the wl_registry.global events (globals()).
  void send_get_registry(bool want_globals = false);
  uint32_t registry_id() const { return registry_; }
  uint32_t send_sync();  // returns the callback's id
  bool callback_done(uint32_t id) const { return done_.count(id) != 0; }
  const std::vector<GlobalInfo>& globals() const { return globals_; }
  // One of the last uint/int values the server sent in events (serials, sizes), or 0;
  // sel 0 is the latest.
  uint32_t recent_value(uint8_t sel) const {
    return recent_[(recent_at_ + recent_.size() - 1 - sel % recent_.size()) % recent_.size()];
  }

  Message begin(uint32_t id, uint16_t opcode);
  void send(Message& m);
  void send_garbage(Reader& in);

  uint32_t new_object(int16_t interface, uint32_t version);
  void forget(uint32_t id);
  // A live object chosen by 'sel' (0 when there are none); one of the given interface.
  uint32_t pick_object(uint8_t sel) const;
  uint32_t pick_object_of(int16_t interface, uint8_t sel) const;
  const Object& object(uint32_t id) const { return objects_.at(id); }

  // An fd of the kind 'kind' chooses (memfd of 'size' bytes, sealed memfd, /dev/null, a
  // pipe, a directory), owned by the caller. Plain memfds are also kept, for truncate_memfd.
  int make_fd(uint8_t kind, off_t size);
  void truncate_memfd(uint8_t which, off_t size);

  // Reads and parses every event available without blocking.
  void read_events();

 private:
  int fd_;
  wl_client* server_side_;
  struct DestroyWatch;
  DestroyWatch* watch_;
  bool dead_ = false;
  uint32_t next_id_ = 2;
  uint32_t registry_ = 0;
  bool want_globals_ = false;
  std::unordered_map<uint32_t, Object> objects_;
  std::vector<uint32_t> ids_;  // live objects, for picking by index
  std::unordered_set<uint32_t> done_;
  std::vector<GlobalInfo> globals_;
  std::vector<int> memfds_;
  std::vector<uint8_t> in_;
  std::array<uint32_t, 8> recent_{};
  size_t recent_at_ = 0;

  void add_object(uint32_t id, int16_t interface, uint32_t version);
  void parse_event(const uint32_t* words, size_t count);
};

}  // namespace ferry::fuzz
