// ferryd entry point: parses the command line and runs a Server. Everything else lives
// in the subsystem libraries.
#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--version") == 0) {
      std::printf("ferryd %s\n", FERRY_VERSION);
      return 0;
    }
  }
  std::fprintf(stderr, "ferryd: not yet usable\n");
  return 1;
}
