// libFuzzer target: ferry.toml text -> parse_config, then every rule against client
// identities taken from the same input. Oracles: a parsed config never holds a rule with
// no matcher, a failed parse always explains itself with "path:line:column", and
// match_rule returns the first rule that rule_matches accepts.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "config/config.hpp"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ferry::config;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string error;
  std::optional<Config> cfg = parse_config(text, "fuzz.toml", &error);
  if (!cfg) {
    check(error.rfind("fuzz.toml:", 0) == 0);
    return 0;
  }
  // Identities from the input's tail: a few fixed ones and three slices of it.
  ClientInfo clients[4] = {{"org.example.App", "/usr/bin/glxgears", "game"},
                           {"", "", ""},
                           {std::string(text.substr(0, 16)), std::string(text.substr(size / 3, 24)),
                            std::string(text.substr(size / 2, 8))},
                           {"steam_app_1", "/opt/steam/bin/steam", ""}};
  for (const Rule& r : cfg->rules) check(!r.app_id.empty() || !r.exe.empty() || !r.tag.empty());
  for (const ClientInfo& c : clients) {
    size_t index = 0;
    const Rule* r = match_rule(*cfg, c, &index);
    size_t first = cfg->rules.size();
    for (size_t i = 0; i < cfg->rules.size(); ++i)
      if (rule_matches(cfg->rules[i], c)) {
        first = i;
        break;
      }
    check(r ? (index == first && r == &cfg->rules[first]) : first == cfg->rules.size());
  }
  HeadlessOutput out;
  (void)parse_output_mode(text.substr(0, 32), &out);
  return 0;
}
