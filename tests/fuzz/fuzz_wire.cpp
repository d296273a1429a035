// libFuzzer target: the Wayland wire. ferryd's Server runs in-process (headless, llvmpipe
// EGL surfaceless, one tiny output at 1 kHz so that frame callbacks and presentation run
// during an input). The input is a program: each step picks a live object and one of its
// requests from the table generated from the protocol XML (wire_table.hpp), fills the
// arguments from the input (objects of the right interface mostly, fresh new_ids, fds from
// a pool: memfds of chosen sizes, sealed memfds, /dev/null, a pipe, a directory), marshals a
// real wire message onto a socketpair whose other end is a wl_client of the server, and
// dispatches the server. Other steps truncate a memfd the client already sent, write
// malformed bytes, or reconnect.
// Oracle, after every input: the fuzzed client is destroyed; then no surface of it is left
// in the server, the oracle client is the only client, and it still gets the
// wl_display.sync callback it asks for.
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <wayland-server-core.h>

#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/seat.hpp"
#include "core/server.hpp"
#include "util/log.hpp"
#include "wire_client.hpp"
#include "wire_table.hpp"

namespace ferry::fuzz {
namespace {

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz-wire: %s\n", what);
  std::abort();
}

struct Global {
  uint32_t name;
  int16_t interface;
  uint32_t version;
};

class Fuzzer {
  bool trace_ = getenv("FUZZ_WIRE_TRACE") != nullptr;  // prints each request, and disconnects

 public:
  Fuzzer() {
    log::set_level(log::Level::error);
    // Every refused request logs; FUZZ_WIRE_TRACE=1 keeps libwayland's messages.
    if (!trace_) wl_log_set_handler_server([](const char*, va_list) {});
    ServerOptions opts;
    opts.outputs.push_back(OutputMode{64, 48, 1000000});
    server_ = std::make_unique<Server>(opts);
    std::string error;
    if (!server_->init(&error)) {
      std::fprintf(stderr, "fuzz-wire: server init failed: %s\n", error.c_str());
      std::exit(1);
    }
    oracle_ = connect();
    if (!oracle_) fail("cannot create the oracle client");
    oracle_->send_get_registry(true);
    if (!sync(*oracle_)) fail("the oracle's first sync got no answer");
    for (const auto& g : oracle_->globals()) globals_.push_back({g.name, g.interface, g.version});
    if (globals_.empty()) fail("no globals");
  }

  void run(const uint8_t* data, size_t size) {
    Reader in{data, size};
    // Inputs share one server; the pointer is the state they most often inherit (a virtual
    // pointer moves it). Each input starts with it at the output's centre, so that a crash
    // replays from its own input alone.
    server_->seat().pointer_motion_absolute(0, 32, 24);
    client_ = connect();
    if (!client_) fail("cannot create a client");
    client_->send_get_registry();
    pump();
    for (int step = 0; step < 256 && !in.done(); ++step) {
      if (client_->dead()) {
        if (trace_) std::fprintf(stderr, "fuzz-wire: client disconnected\n");
        drop_client();
        client_ = connect();
        if (!client_) fail("cannot create a client");
        client_->send_get_registry();
      }
      this->step(in);
      pump();
      client_->read_events();
    }
    if (trace_ && client_->dead()) std::fprintf(stderr, "fuzz-wire: client disconnected\n");
    drop_client();
    check_after_input();
  }

 private:
  std::unique_ptr<Server> server_;
  std::unique_ptr<WireClient> oracle_, client_;
  std::vector<Global> globals_;

  std::unique_ptr<WireClient> connect() {
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds) != 0) return nullptr;
    wl_client* c = wl_client_create(server_->display(), fds[0]);
    if (!c) {
      close(fds[0]);
      close(fds[1]);
      return nullptr;
    }
    return std::make_unique<WireClient>(fds[1], c);
  }

  void pump(int timeout_ms = 0) {
    wl_display_flush_clients(server_->display());
    wl_event_loop_dispatch(server_->loop(), timeout_ms);
    wl_display_flush_clients(server_->display());
  }

  // Sends wl_display.sync and pumps the server until the callback is done (true), or the
  // client is disconnected or 10 s pass (false: the server stopped answering).
  bool sync(WireClient& c) {
    uint32_t id = c.send_sync();
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      pump(1);
      c.read_events();
      if (c.dead()) return false;
      if (c.callback_done(id)) return true;
    }
    return false;
  }

  void drop_client() {
    client_->disconnect();  // destroys the server's wl_client if it is still there
    client_.reset();
    pump();
  }

  void check_after_input() {
    if (!server_->surfaces().empty()) fail("a destroyed client's surfaces are still in the server");
    wl_list* clients = wl_display_get_client_list(server_->display());
    if (wl_list_length(clients) != 1) fail("a destroyed client is still in the server's client list");
    if (!sync(*oracle_)) fail("the oracle client got no wl_display.sync callback");
  }

  void step(Reader& in) {
    uint8_t op = in.byte();
    switch (op % 32) {
      case 0:
      case 1: bind(in); return;
      case 2: client_->truncate_memfd(in.byte(), memfd_size(in)); return;
      case 3:
        drop_client();
        client_ = connect();
        if (!client_) fail("cannot create a client");
        client_->send_get_registry();
        return;
      case 4: client_->send_garbage(in); return;
      case 5: pump(1 + in.byte() % 4); return;  // let a vblank or two happen
      default: request(in); return;
    }
  }

  void bind(Reader& in) {
    uint32_t registry = client_->registry_id();
    if (!registry) return;
    Message m = client_->begin(registry, 0);
    fill_bind(m, in);
    client_->send(m);
  }

  void fill_bind(Message& m, Reader& in) {
    // The byte names an interface (the table's order, fixed at build time, so that seed
    // programs stay valid); interfaces ferryd does not serve fall back to the list's order.
    uint8_t sel = in.byte();
    const Global* chosen = &globals_[sel % globals_.size()];
    for (const Global& candidate : globals_) {
      if (size_t(candidate.interface) == sel % wire_interface_count) chosen = &candidate;
    }
    const Global& g = *chosen;
    uint8_t v = in.byte();
    uint32_t version = v < 224 ? g.version : v % (g.version + 2);  // 0 and past the max: errors
    m.put(g.name);
    m.put_string(wire_interfaces[g.interface].name);
    m.put(version);
    m.put(client_->new_object(g.interface, version ? version : 1));
  }

  void request(Reader& in) {
    uint32_t id = client_->pick_object(in.byte());
    if (!id) return;
    const WireClient::Object& obj = client_->object(id);
    const WireInterface& iface = wire_interfaces[obj.interface];
    if (iface.request_count == 0) return;
    uint16_t opcode = uint16_t(in.byte() % iface.request_count);
    // Mostly requests the object's version has; now and then one it does not.
    if (iface.requests[opcode].since > obj.version && in.byte() % 8 != 0) {
      for (opcode = 0; opcode < iface.request_count; ++opcode)
        if (iface.requests[opcode].since <= obj.version) break;
      if (opcode == iface.request_count) return;
    }
    const WireMessage& msg = iface.requests[opcode];
    uint32_t version = obj.version;
    Message m = client_->begin(id, opcode);
    for (uint8_t a = 0; a < msg.arg_count; ++a) fill_arg(m, msg.args[a], version, in);
    client_->send(m);
    if (trace_) std::fprintf(stderr, "fuzz-wire: %s@%u.%s\n", iface.name, id, msg.name);
    if (msg.destructor) client_->forget(id);
  }

  static uint32_t pick_enum(const WireEnum& e, Reader& in) {
    if (e.value_count == 0) return 0;
    uint32_t v = e.values[in.byte() % e.value_count];
    if (e.bitfield && in.byte() % 2) v |= e.values[in.byte() % e.value_count];
    return v;
  }

  uint32_t pick_int(Reader& in) {
    switch (in.byte() % 9) {
      case 8: return client_->recent_value(in.byte());  // a serial, a name, a size seen
      case 0: return 0;
      case 1: return 1;
      case 2: return uint32_t(-1);
      case 3: return in.byte() % 2 ? uint32_t(INT32_MAX) : uint32_t(INT32_MIN);
      case 4:
      case 5: return uint32_t(int32_t(int8_t(in.byte())));
      default: return in.u32();
    }
  }

  static off_t memfd_size(Reader& in) {
    switch (in.byte() % 4) {
      case 0: return 0;
      case 1: return off_t(in.byte()) * 4096;
      case 2: return off_t(in.byte()) * 16;
      default: return off_t(in.u32() % (1u << 20));
    }
  }

  void fill_arg(Message& m, const WireArg& arg, uint32_t version, Reader& in) {
    switch (arg.type) {
      case 'i':
      case 'u':
        if (arg.enum_index >= 0 && in.byte() < 192)
          m.put(pick_enum(wire_enums[arg.enum_index], in));
        else
          m.put(pick_int(in));
        return;
      case 'f': m.put(in.byte() % 2 ? pick_int(in) << 8 : pick_int(in)); return;
      case 's': {
        uint8_t sel = in.byte();
        if (arg.nullable && sel < 16) {
          m.put(0);
          return;
        }
        std::string s;
        for (uint8_t n = in.byte() % 24; n > 0; --n) {
          char c = char(in.byte());
          s.push_back(c ? c : '0');  // the wire string's own NUL ends it
        }
        m.put_string(s);
        return;
      }
      case 'o': {
        uint8_t sel = in.byte();
        if (sel < 208 && arg.interface >= 0) {
          m.put(client_->pick_object_of(arg.interface, in.byte()));
        } else if (sel < 232) {
          m.put(client_->pick_object(in.byte()));
        } else if (sel < 248) {
          m.put(0);
        } else {
          m.put(in.u32());
        }
        return;
      }
      case 'n': {
        uint8_t sel = in.byte();
        if (sel < 250 || arg.interface < 0) {
          m.put(client_->new_object(arg.interface < 0 ? 0 : arg.interface, version));
        } else {
          m.put(sel == 255 ? 0 : client_->pick_object(in.byte()));  // an id in use, or 0
        }
        return;
      }
      case 'N': fill_bind(m, in); return;
      case 'a': {
        uint32_t n = in.byte() % 64;
        std::vector<uint8_t> bytes(n);
        for (auto& b : bytes) b = in.byte();
        m.put_array(bytes);
        return;
      }
      case 'h': m.put_fd(client_->make_fd(in.byte(), memfd_size(in))); return;
    }
  }
};

Fuzzer* g_fuzzer;

}  // namespace
}  // namespace ferry::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (!getenv("XDG_RUNTIME_DIR")) {
    static char dir[] = "/tmp/fuzz-wire.XXXXXX";
    if (!mkdtemp(dir)) return 1;
    setenv("XDG_RUNTIME_DIR", dir, 1);
  }
  ferry::fuzz::g_fuzzer = new ferry::fuzz::Fuzzer();  // lives until exit: one server
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ferry::fuzz::g_fuzzer->run(data, size);
  return 0;
}
