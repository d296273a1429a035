#pragma once
// A well-behaved client on its own thread: a mapped toplevel that redraws on every frame
// callback. Records when each callback arrived, so tests can check that ferryd keeps
// pacing it at the output rate while other clients misbehave or die. Each frame also asks
// for presentation feedback; the refresh sequence numbers of the presented frames show
// whether it got a frame at every refresh.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ferry::itest {

class FrameCounter {
 public:
  explicit FrameCounter(std::string socket_path);
  ~FrameCounter();  // stops the thread
  FrameCounter(const FrameCounter&) = delete;
  FrameCounter& operator=(const FrameCounter&) = delete;

  // Callbacks received in [from, to) (steady clock).
  int count_between(std::chrono::steady_clock::time_point from,
                    std::chrono::steady_clock::time_point to) const;
  int total() const;
  // wp_presentation 'seq' of each presented frame, in order.
  std::vector<uint64_t> presented_seqs() const;
  bool failed() const { return failed_; }
  std::string error() const;

 private:
  void run();

  std::string socket_;
  std::atomic<bool> stop_{false}, failed_{false};
  mutable std::mutex mu_;
  std::vector<std::chrono::steady_clock::time_point> times_;
  std::vector<uint64_t> seqs_;
  std::string error_;
  std::thread thread_;
};

}  // namespace ferry::itest
