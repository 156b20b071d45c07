// cli.h — what pcmctl's subcommands share (pcmctl.cpp holds main and most of them;
// versions_cli.cpp those of a job's versions: checkpoints, checkpoint, stop, verify, prune).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

#include "pcmctl.h"

namespace pcm::ctl {

// What the subcommands share: how to reach pcmd, and the exit code of the one that ran.
struct Cli {
  ConnectOptions connect;
  int exit_code = 0;
};

// Makes run sub's callback, with a connection to pcmd. Errors become a message and exit code 3
// when pcmd or its configuration cannot be used, else 1.
void on_run(CLI::App* sub, Cli& cli, std::function<int(Connection&)> run);

// versions_cli.cpp: a job's versions.
void add_checkpoints(CLI::App& app, Cli& cli);
void add_checkpoint(CLI::App& app, Cli& cli);
void add_stop(CLI::App& app, Cli& cli);
void add_verify(CLI::App& app, Cli& cli);
void add_prune(CLI::App& app, Cli& cli);

}  // namespace pcm::ctl
