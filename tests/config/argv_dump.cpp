// Test helper for ferry-run: writes its arguments (argv[1..]) NUL-terminated to the file
// named by $ARGV_DUMP_OUT, then "NAME=value\0" for each variable named in $ARGV_DUMP_ENV
// (space separated; "NAME" alone when unset) to $ARGV_DUMP_OUT.env.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>

int main(int argc, char** argv) {
  const char* out = std::getenv("ARGV_DUMP_OUT");
  if (!out) return 3;
  FILE* f = std::fopen(out, "wb");
  if (!f) return 4;
  for (int i = 1; i < argc; ++i) std::fwrite(argv[i], 1, std::strlen(argv[i]) + 1, f);
  std::fclose(f);
  std::string env_path = std::string(out) + ".env";
  FILE* e = std::fopen(env_path.c_str(), "wb");
  if (!e) return 5;
  std::istringstream names(std::getenv("ARGV_DUMP_ENV") ? std::getenv("ARGV_DUMP_ENV") : "");
  std::string name;
  while (names >> name) {
    const char* v = std::getenv(name.c_str());
    std::string line = v ? name + "=" + v : name;
    std::fwrite(line.c_str(), 1, line.size() + 1, e);
  }
  std::fclose(e);
  return 0;
}
