#include "util/child_env.hpp"

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

}  // namespace ferry
