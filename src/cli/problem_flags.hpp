// The Problem flags every subcommand shares, with one spelling everywhere.
#pragma once

#include <CLI/CLI.hpp>

#include "core/problem.hpp"

namespace attnbench {

// Raw flag values; to_problem() checks them.
struct ProblemFlags {
  Problem problem;
  std::string dtype = "f32";
  std::string init = "fast";
};


// Adds the Problem flags to `app`, storing into `flags`.
void add_problem_flags(CLI::App& app, ProblemFlags& flags, bool decoder_flags = true);

// The checked Problem; throws std::invalid_argument naming the flag and value.
Problem to_problem(const ProblemFlags& flags);

}  // namespace attnbench
