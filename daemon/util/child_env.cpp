#include "util/child_env.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>

namespace ferry {

std::vector<std::string> child_environment(const std::vector<std::string>& set,
                                           const std::vector<std::string>& drop) {
  std::vector<std::string> names = drop;
  for (const std::string& e : set) names.push_back(e.substr(0, e.find('=')));
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) {
    const std::string_view entry(*e);
    const std::string_view name = entry.substr(0, entry.find('='));
    if (std::find(names.begin(), names.end(), name) == names.end()) out.emplace_back(entry);
  }
  out.insert(out.end(), set.begin(), set.end());
  return out;
}

std::vector<char*> exec_pointers(std::vector<std::string>& strings) {
  std::vector<char*> p;
  p.reserve(strings.size() + 1);
  for (std::string& s : strings) p.push_back(s.data());
  p.push_back(nullptr);
  return p;
}

pid_t spawn_child(const std::vector<std::string>& argv, const std::vector<std::string>& set,
                  bool new_session) {
  // Built before fork(): only async-signal-safe calls between it and the exec.
  std::vector<std::string> env = child_environment(set);
  std::vector<std::string> args = argv;
  std::vector<char*> envp = exec_pointers(env), argp = exec_pointers(args);
  const std::string failed = "ferryd: cannot run '" + (argv.empty() ? "" : argv[0]) + "'\n";
  if (argv.empty()) return -1;
  pid_t pid = fork();
  if (pid != 0) return pid;
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (new_session) setsid();
  execvpe(argp[0], argp.data(), envp.data());  // glibc: the PATH search allocates nothing
  ssize_t ignored = write(2, failed.data(), failed.size());
  (void)ignored;
  _exit(127);
}

}  // namespace ferry
