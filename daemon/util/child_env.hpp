#pragma once
// What a child process is started with, built before fork(): ferryd and the test processes
// have threads, and the child of a multithreaded process may only make async-signal-safe
// calls until it execs (an allocation there deadlocks when another thread held the
// allocator's lock at the fork).

#include <sys/types.h>

#include <string>
#include <vector>

namespace ferry {

// This process's environment without the variables that 'set' (NAME=VALUE entries) or
// 'drop' (NAME) name, followed by 'set'.
std::vector<std::string> child_environment(const std::vector<std::string>& set,
                                           const std::vector<std::string>& drop = {});

// execve-style pointers into 'strings', null-terminated; valid while 'strings' lives
// unchanged.
std::vector<char*> exec_pointers(std::vector<std::string>& strings);

// Starts argv[0] (searched in PATH) with this process's environment plus 'set' (NAME=VALUE
// entries replace their names), all signals unblocked, and in a session of its own if
// 'new_session' (a terminal's Ctrl+C at ferryd does not reach it). Returns its pid, or -1
// if fork() failed; an exec that fails is reported on stderr and exits 127. The caller
// reaps it (ferryd: its SIGCHLD handler).
pid_t spawn_child(const std::vector<std::string>& argv, const std::vector<std::string>& set,
                  bool new_session = false);

}  // namespace ferry
