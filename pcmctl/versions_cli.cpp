// versions_cli.cpp — pcmctl's subcommands on a job's versions: checkpoints (list), checkpoint
// (ask one), stop (a last one, then the end), verify, prune.
#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "cli.h"
#include "pcm_types.h"

namespace pcm::ctl {

using proto::json;

void add_checkpoints(CLI::App& app, Cli& cli) {
  struct Args {
    std::string job;
    bool as_json = false;
  };
  auto a = std::make_shared<Args>();
  auto* sub = app.add_subcommand("checkpoints", "list a job's committed versions, verified");
  sub->add_option("job", a->job, "job name")->required();
  sub->add_flag("--json", a->as_json, "print JSON for scripts");
  on_run(sub, cli, [a](Connection& pcmd) {
    const json r = pcmd.request(req_checkpoints(a->job));
    if (a->as_json) {
      std::cout << r.at("versions").dump(2) << "\n";
    } else {
      print_versions(r.at("versions"));
    }
    return 0;
  });
}

void add_checkpoint(CLI::App& app, Cli& cli) {
  struct Args {
    std::string job;
    std::string why;
  };
  auto a = std::make_shared<Args>();
  auto* sub = app.add_subcommand(
      "checkpoint", "ask a job for a checkpoint now (written at its next PCM_Adapt agreement)");
  sub->add_option("job", a->job, "job name")->required();
  sub->add_option("--why", a->why, "the reason, for the job's events");
  on_run(sub, cli, [a](Connection& pcmd) {
    const json r = pcmd.request(req_checkpoint(a->job, a->why));
    std::cout << r.at("text").get<std::string>()
              << "\n(the job writes it at its next PCM_Adapt agreement; `pcmctl checkpoints "
              << a->job << "` lists the versions)\n";
    return 0;
  });
}

void add_stop(CLI::App& app, Cli& cli) {
  struct Args {
    std::string job;
    std::string why;
  };
  auto a = std::make_shared<Args>();
  auto* sub = app.add_subcommand(
      "stop", "ask a job to write a last version and end (resumed later with PCM_RESTART=1)");
  sub->add_option("job", a->job, "job name")->required();
  sub->add_option("--why", a->why, "the reason, for the job's events");
  on_run(sub, cli, [a](Connection& pcmd) {
    const json r = pcmd.request(req_checkpoint(a->job, a->why, true, true));
    std::cout << r.at("text").get<std::string>()
              << "\n(at its next agreement the job writes a version and ends; `pcmctl wait "
              << a->job << " --ended` waits for it: state stopped)\n";
    return 0;
  });
}

void add_verify(CLI::App& app, Cli& cli) {
  struct Args {
    std::string job;
    long version = -1;  // every version
  };
  auto a = std::make_shared<Args>();
  auto* sub = app.add_subcommand("verify", "verify a job's versions (checksums included)");
  sub->add_option("job", a->job, "job name")->required();
  sub->add_option("iteration", a->version, "only this version");
  on_run(sub, cli, [a](Connection& pcmd) {
    const json r = pcmd.request(req_verify(a->job, a->version));
    return print_versions(r.at("versions")) ? 0 : 1;
  });
}

void add_prune(CLI::App& app, Cli& cli) {
  struct Args {
    std::string job;
    int keep = 0;
  };
  auto a = std::make_shared<Args>();
  auto* sub = app.add_subcommand("prune", "remove all but the newest versions");
  sub->add_option("job", a->job, "job name")->required();
  sub->add_option("--keep", a->keep, "how many to keep (the newest valid one always stays)")
      ->required()
      ->check(CLI::Range(1, 1000000));
  on_run(sub, cli, [a](Connection& pcmd) {
    const json r = pcmd.request(req_prune(a->job, a->keep));
    std::cout << "removed versions: " << r.at("pruned").dump() << "\n";
    return 0;
  });
}

}  // namespace pcm::ctl
