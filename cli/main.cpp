// fsdpsim: plan, predict and check FSDP training before launch. The program only wires the libraries together.
#include <string>
#include <vector>

#include "cli/app.h"

int main(int argc, char** argv) {
  return fsdpsim::cli::main_with_status(std::vector<std::string>(argv + 1, argv + argc));
}
