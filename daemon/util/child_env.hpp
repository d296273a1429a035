#pragma once
// What a child process is started with, built before fork(): ferryd and the test processes
// have threads, and the child of a multithreaded process may only make async-signal-safe
// calls until it execs (an allocation there deadlocks when another thread held the
// allocator's lock at the fork).

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

}  // namespace ferry
