// SPDX-License-Identifier: Apache-2.0
// The subcommand registry (cli.h). A function-local static, so registrations from
// other translation units' static initializers never see it unconstructed.
#include "cli.h"

#include <vector>

namespace deepflow::cli {
namespace {
std::vector<CommandSetup>& registry() {
  static std::vector<CommandSetup> commands;
  return commands;
}
}  // namespace

CommandRegistrar::CommandRegistrar(CommandSetup setup) { registry().push_back(setup); }

const std::vector<CommandSetup>& registered_commands() { return registry(); }

}  // namespace deepflow::cli
