// SPDX-License-Identifier: Apache-2.0
// `deepflow`: one CLI11 app with a subcommand per tools/cli/cmd_<verb>.cpp.
//
//   deepflow --help
//   deepflow checkpoint inspect /runs/a
//   deepflow saved_model show --dir /models/m/1 --all
//
// Exit codes: 0 on success; 1 with "deepflow: <message>" on stderr when a command
// fails (deepflow::Error, or any other exception); CLI11's own codes for bad usage.
#include <exception>
#include <iostream>

#include "cli.h"
#include "deepflow/core/error.h"
#include "deepflow/tf/checkpoint.h"
#include "deepflow/tf/saved_model.h"

int main(int argc, char** argv) {
  CLI::App app{"deepflow: train, inspect, convert and serve models"};
  app.name("deepflow");
  app.require_subcommand(1);
  app.footer("Run 'deepflow <command> --help' for the options of a command.");
  // SavedModels written by TensorFlow load wherever deepflow's do (saved_model, serve).
  deepflow::tf::register_tf_saved_model_format();
  // So do TensorFlow's checkpoints, for io::Checkpoint's restore.
  deepflow::tf::register_tf_checkpoint_format();
  for (deepflow::cli::CommandSetup setup : deepflow::cli::registered_commands()) setup(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const deepflow::Error& e) {
    std::cout.flush();
    std::cerr << "deepflow: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << "deepflow: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
