// The Problem flags every subcommand shares, with one spelling everywhere
// (core/problem_fields.def).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/problem.hpp"

namespace attnbench {

// Flag values; to_problem() checks them.
struct ProblemFlags {
  Problem problem;
};

// Adds the Problem flags to `app` as single values, storing into `flags`; without
// decoder_flags, the decoder-only ones (--tgt-len, --emb-dim, --vocab, --len-min) are left out.
// Enum words are converted by CLI11 (an unknown word: "--impl: unknown impl 'x'; known: onednn, fused").
void add_problem_flags(CLI::App& app, ProblemFlags& flags, bool decoder_flags = true);

// The checked Problem; throws std::invalid_argument naming the flag and value.
Problem to_problem(const ProblemFlags& flags);

// Adds every Problem flag as a grid spec (a value, a list "8,32", a range "10:100:10"
// or "16:1024:*2"); a given flag stores its text in specs[field] (field = "src_len").
void add_grid_flags(CLI::App& app, std::map<std::string, std::string>& specs);

// The valid source length of each example from "--lengths 10,7,4" (one per example, each
// in 1..src_len), or source_lengths(p) when text is empty; throws naming --lengths.
std::vector<std::int64_t> parse_lengths(const std::string& text, const Problem& p);

}  // namespace attnbench
