// SPDX-License-Identifier: Apache-2.0
// The `deepflow` command: one subcommand per cmd_<verb>.cpp, each registering itself.
//
//   // cmd_checkpoint.cpp
//   void setup_checkpoint(CLI::App& app) {
//     CLI::App* cmd = app.add_subcommand("checkpoint", "Inspect training checkpoints");
//     ...
//     sub->callback([opts] { ... });   // throws deepflow::Error on bad input
//   }
//   DF_CLI_COMMAND(setup_checkpoint)
//
// main.cpp builds the CLI11 app from every registered setup function, parses, and
// turns a deepflow::Error into "deepflow: <message>" on stderr with exit code 1
// (CLI11's own parse errors keep CLI11's exit codes).
#pragma once

#include <CLI/CLI.hpp>

namespace deepflow::cli {

using CommandSetup = void (*)(CLI::App& app);

/// Registers a subcommand's setup function at start-up.
struct CommandRegistrar {
  explicit CommandRegistrar(CommandSetup setup);
};

/// The registered setup functions, in registration order.
const std::vector<CommandSetup>& registered_commands();

}  // namespace deepflow::cli

#define DF_CLI_COMMAND(fn) static ::deepflow::cli::CommandRegistrar df_cli_command_##fn(&fn);
