#pragma once
// The side of a churn client (churn.hpp) that reports progress: after each step has been
// answered (a roundtrip), one byte to the fd the test named in argv[2].

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "wl_client.hpp"

namespace ferry::itest {

// argv: SOCKET_PATH PROGRESS_FD. The connection is made here; bad arguments end the
// client with status 64, a failed connection with 1.
class ChurnProgress {
 public:
  ChurnProgress(int argc, char** argv) {
    if (argc != 3) std::exit(64);
    fd_ = std::atoi(argv[2]);
    std::string err;
    client_ = WlClient::connect(argv[1], &err);
    if (!client_) {
      std::fprintf(stderr, "churn client: %s\n", err.c_str());
      std::exit(1);
    }
  }
  WlClient& client() const { return *client_; }
  // The step's requests were answered: report it. A failed connection ends the client
  // with status 2 (the test then sees fewer steps than it waited for).
  void step_done(WlClient& c) const {
    if (c.roundtrip() < 0) {
      std::fprintf(stderr, "churn client: connection failed\n");
      std::exit(2);
    }
    char b = 'k';
    if (write(fd_, &b, 1) != 1) std::exit(3);
  }

 private:
  int fd_ = -1;
  std::unique_ptr<WlClient> client_;
};

}  // namespace ferry::itest
