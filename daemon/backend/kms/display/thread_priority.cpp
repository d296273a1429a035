#include "backend/kms/display/thread_priority.hpp"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/log.hpp"

namespace ferry::kms {

ThreadPriority raise_thread_priority() {
  sched_param param{};
  param.sched_priority = sched_get_priority_min(SCHED_FIFO);
  // pid 0 is the calling thread on Linux, not the whole process.
  if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &param) == 0) {
    log_info("display thread: SCHED_FIFO priority %d", param.sched_priority);
    return ThreadPriority::sched_fifo;
  }
  const int fifo_errno = errno;
  const pid_t tid = gettid();
  for (int nice = -10; nice < 0; ++nice) {
    if (setpriority(PRIO_PROCESS, id_t(tid), nice) == 0) {
      log_info("display thread: SCHED_FIFO not permitted (%s), nice %d", strerror(fifo_errno),
               nice);
      return ThreadPriority::nice;
    }
  }
  log_info("display thread: neither SCHED_FIFO (%s) nor a negative nice permitted; normal "
           "priority",
           strerror(fifo_errno));
  return ThreadPriority::unchanged;
}

}  // namespace ferry::kms
