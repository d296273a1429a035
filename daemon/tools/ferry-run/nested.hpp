#pragma once
// ferry-run --nested: a private ferryd (--backend wayland --private) inside the desktop the
// caller runs in, for one program. The program runs with the nested ferryd's socket; when
// it exits the nested ferryd is stopped and the program's exit status is passed through.

#include <sys/types.h>

#include <string>
#include <vector>

#include "launch.hpp"

namespace ferry::run {

struct NestedRequest {
  std::string size;         // "WxH" or empty (ferryd's default output)
  bool fullscreen = false;
  std::string self_path;    // argv[0] of ferry-run, to find ferryd beside it
};

// "WxH" with 1..16384 each.
bool valid_size(const std::string& size);
// The socket name the nested ferryd of this process listens on.
std::string nested_socket_name();

class NestedFerryd {
 public:
  // Starts ferryd and waits (up to 20 s) until its socket accepts connections. false with
  // *error when ferryd cannot be run, exits, or does not listen in time.
  bool start(const NestedRequest& req, std::string* error);
  // SIGTERM, then SIGKILL after 5 s; returns ferryd's wait status (-1 if none ran).
  int stop();
  ~NestedFerryd();

  pid_t pid() const { return pid_; }
  // ferryd was reaped by someone else's waitpid(): nothing left to stop.
  void forget() { pid_ = -1; }
  const std::string& socket() const { return socket_; }

 private:
  pid_t pid_ = -1;
  std::string socket_;
};

// Runs the plan's program (environment applied in the child), forwarding SIGINT, SIGTERM
// and SIGHUP to it, and returns its exit status (128 + signal when killed; 126/127 when it
// cannot be run). 'ferryd' is stopped afterwards.
int run_in_nested(const LaunchPlan& plan, NestedFerryd& ferryd);

}  // namespace ferry::run
