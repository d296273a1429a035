// ferryd entry point: parses the command line, builds a Server and runs it. Everything
// else lives in the subsystem libraries.
#include <getopt.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/cli.hpp"
#include "core/server.hpp"
#include "util/log.hpp"

int main(int argc, char** argv) {
  ferry::CliOptions cli;
  std::string error;
  switch (ferry::parse_cli(argc, argv, &cli, &error)) {
    case ferry::CliResult::exit_ok:
      return 0;
    case ferry::CliResult::error:
      std::fprintf(stderr, "ferryd: %s\nTry 'ferryd --help'.\n", error.c_str());
      return 2;
    case ferry::CliResult::run:
      break;
  }
  return ferry::run_daemon(cli);
}
