// `attnbench train`: the trained ablation, a sweep of trainings like `run`.
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cmath>
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "cli/commands.hpp"
#include "cli/source_paths.hpp"
#include "cli/sweep_plan.hpp"
#include "driver/csv_io.hpp"
#include "driver/estimate.hpp"
#include "driver/folder_kind.hpp"
#include "driver/interrupt.hpp"
#include "driver/meta_file.hpp"
#include "driver/run_folder.hpp"
#include "driver/scenario.hpp"
#include "driver/train_sweep.hpp"
#include "driver/value_spec.hpp"
#include "train/tasks.hpp"
#include "variants/registry.hpp"

namespace attnbench {

namespace {

// The sweep's fields: a flag --x-y is the field / scenario column x_y. Expansion order: the last varies fastest.
const std::vector<std::string>& train_fields() {
  static const std::vector<std::string> fields = {
      "task",     "scorer", "threads",  "batch",   "len_min", "src_len",    "emb_dim",   "enc_dim", "dec_dim",
      "attn_dim", "lr",     "clip",     "steps",   "eval_every", "eval_size", "long_len", "seed"};
  return fields;
}

std::string flag_of(std::string field) {
  for (char& c : field)
    if (c == '_') c = '-';
  return "--" + field;
}

struct TrainOptionsCli {
  std::map<std::string, std::string> specs;  // field -> spec text of the flags given
  std::string scenario, out, resume, shard = "1/1";
  bool force = false, dry_run = false, quiet = false;
  std::string command_line;
};

std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> items;
  for (const std::string& item : parse_word_spec(text, separator)) items.push_back(item);
  return items;
}

double positive_number(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno != 0 || !std::isfinite(v) || !(v > 0))
    throw std::invalid_argument("must be a number more than 0, got '" + text + "'");
  return v;
}

// The values one field's spec stands for, each as text.
std::vector<std::string> expand_field(const std::string& field, const std::string& spec, char separator) {
  std::vector<std::string> out;
  if (field == "task") {
    for (const std::string& name : split(spec, separator)) {
      if (name == "all") {
        for (const TaskInfo& t : all_tasks()) out.emplace_back(t.name);
        continue;
      }
      find_task(name);
      out.push_back(name);
    }
  } else if (field == "scorer") {
    out = parse_scorer_spec(spec, separator);
  } else if (field == "lr" || field == "clip") {
    for (const std::string& item : split(spec, separator)) {
      positive_number(item);
      out.push_back(item);
    }
  } else if (field == "seed") {
    for (std::uint64_t v : parse_uint_spec(spec, separator)) out.push_back(std::to_string(v));
  } else {
    for (std::int64_t v : parse_int_spec(spec, separator)) out.push_back(std::to_string(v));
  }
  return out;
}

void set_field(TrainSetup& s, const std::string& field, const std::string& value) {
  Problem& p = s.problem;
  const auto whole = [&] { return std::stoll(value); };
  if (field == "task") s.task = value;
  else if (field == "scorer") p.scorer = value;
  else if (field == "threads") p.threads = static_cast<int>(whole());
  else if (field == "batch") p.batch = whole();
  else if (field == "len_min") p.len_min = whole();
  else if (field == "src_len") p.src_len = whole();
  else if (field == "emb_dim") p.emb_dim = whole();
  else if (field == "enc_dim") p.enc_dim = whole();
  else if (field == "dec_dim") p.dec_dim = whole();
  else if (field == "attn_dim") p.attn_dim = whole();
  else if (field == "lr") s.lr = std::stod(value);
  else if (field == "clip") s.clip = std::stod(value);
  else if (field == "steps") s.steps = whole();
  else if (field == "eval_every") s.eval_every = whole();
  else if (field == "eval_size") s.eval_size = whole();
  else if (field == "long_len") s.long_len = whole();
  else if (field == "seed") p.seed = std::stoull(value);
}

// The model and run defaults of the issue: batch 64, emb 32, enc/dec/attn 64, lengths 5..20,
// lr 1e-3, clip 5, 1500 steps, evaluation every 100 steps on 1000 examples, long set up to 30.
TrainSetup default_setup() {
  TrainSetup s;
  s.task = "reverse";
  s.problem.scorer = "additive";
  s.problem.batch = 64;
  s.problem.emb_dim = 32;
  s.problem.enc_dim = s.problem.dec_dim = s.problem.attn_dim = 64;
  s.problem.len_min = 5;
  s.problem.src_len = 20;
  s.problem.threads = 1;
  s.problem.seed = 1;
  return s;
}

// Refuses a training the bullet 4 (and the sizes' ranges) call bad; the message names the flag.
void check(const TrainSetup& s) {
  const Problem& p = s.problem;
  const TaskInfo& task = find_task(s.task);
  const auto bad = [](const std::string& field, const std::string& why) {
    throw std::invalid_argument(flag_of(field) + ": " + why);
  };
  for (const auto& [field, value] : std::vector<std::pair<std::string, std::int64_t>>{
           {"batch", p.batch}, {"emb_dim", p.emb_dim}, {"enc_dim", p.enc_dim}, {"dec_dim", p.dec_dim},
           {"attn_dim", p.attn_dim}, {"threads", p.threads}, {"steps", s.steps}, {"eval_every", s.eval_every},
           {"eval_size", s.eval_size}, {"len_min", p.len_min}, {"src_len", p.src_len}})
    if (value < 1) bad(field, "must be at least 1, got " + std::to_string(value));
  if (p.enc_dim % 2 != 0) bad("enc_dim", "must be even (two directions), got " + std::to_string(p.enc_dim));
  if (p.len_min > p.src_len)
    bad("len_min", std::to_string(p.len_min) + " is more than --src-len " + std::to_string(p.src_len));
  if (p.src_len < task.min_src_len)
    bad("src_len", std::to_string(p.src_len) + " is too short for task " + s.task + " (needs at least " +
                       std::to_string(task.min_src_len) + ")");
  if (s.eval_every > s.steps)
    bad("eval_every", std::to_string(s.eval_every) + " is more than --steps " + std::to_string(s.steps));
  if (s.long_len < 0) bad("long_len", "must be 0 or more, got " + std::to_string(s.long_len));
}

// Every training of one block of specs (flags or a scenario row): the product of its fields' values.
void expand_block(const std::map<std::string, std::string>& specs, char separator, const TrainSetup& base,
                  const std::function<std::string(const std::string&)>& where, std::vector<TrainSetup>& out) {
  std::vector<std::pair<std::string, std::vector<std::string>>> axes;
  for (const std::string& field : train_fields()) {
    const auto it = specs.find(field);
    if (it == specs.end()) continue;
    try {
      axes.emplace_back(field, expand_field(field, it->second, separator));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(where(field) + ": bad value '" + it->second + "': " + e.what());
    }
  }
  std::function<void(std::size_t, TrainSetup)> walk = [&](std::size_t axis, TrainSetup s) {
    if (axis == axes.size()) {
      out.push_back(s);
      return;
    }
    for (const std::string& value : axes[axis].second) {
      set_field(s, axes[axis].first, value);
      walk(axis + 1, s);
    }
  };
  walk(0, base);
}

// The trainings of a scenario file: each row's columns (fields, ';' lists) over the defaults,
// the flags given overriding every row.
std::vector<TrainSetup> scenario_trainings(const std::filesystem::path& file, const TrainOptionsCli& o) {
  const CsvDocument doc = read_csv(file, true);
  for (const std::string& column : doc.header)
    if (std::find(train_fields().begin(), train_fields().end(), column) == train_fields().end())
      throw std::invalid_argument(doc.where(doc.header_line) + ": unknown column '" + column + "'");
  std::vector<TrainSetup> out;
  for (const CsvRow& row : doc.rows) {
    std::map<std::string, std::string> specs;
    for (std::size_t c = 0; c < doc.header.size(); ++c)
      if (!row.cells[c].empty()) specs[doc.header[c]] = row.cells[c];
    std::vector<TrainSetup> block;
    expand_block(specs, ';', default_setup(),
                 [&](const std::string& field) { return doc.where(row.line) + ": column '" + field + "'"; }, block);
    for (TrainSetup& s : block) {
      std::vector<TrainSetup> flagged;
      expand_block(o.specs, ',', s, flag_of, flagged);
      out.insert(out.end(), flagged.begin(), flagged.end());
    }
  }
  return out;
}

TrainSweepOptions sweep_options(const TrainOptionsCli& o) {
  TrainSweepOptions s;
  s.command_line = o.command_line;
  s.force = o.force;
  s.dry_run = o.dry_run;
  s.quiet = o.quiet;
  std::tie(s.shard_index, s.shard_count) = parse_shard(o.shard);
  if (!o.resume.empty()) {
    if (!o.specs.empty() || !o.scenario.empty() || !o.out.empty())
      throw std::invalid_argument("--resume: continues the run as it was planned; drop the flags, --scenario and --out");
    s.resumed = read_run_meta(o.resume);  // checked field by field (meta_check.hpp)
    if (folder_kind(*s.resumed) != FolderKind::train)
      throw std::invalid_argument("--resume: " + o.resume + " holds a `run`, not a `train` run; resume it with `" +
                                  resume_command(FolderKind::run) + "`");
    const nlohmann::json& grid = (*s.resumed)["grid"];
    for (std::size_t i = 0; i < grid.size(); ++i) {
      TrainSetup t = default_setup();
      for (const std::string& field : train_fields())
        if (grid[i].contains(field)) set_field(t, field, grid[i][field].get<std::string>());
      try {
        check(t);
        find_scorer(t.problem.scorer);
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument((std::filesystem::path(o.resume) / "meta.json").string() + ": field 'grid[" +
                                    std::to_string(i) + "]': " + e.what());
      }
      s.trainings.push_back(t);
    }
    s.out_dir = o.resume;
    s.scenario = s.resumed->value("scenario", "train");
    std::tie(s.shard_index, s.shard_count) = parse_shard(s.resumed->value("shard", std::string("1/1")));
    return s;
  }
  if (o.scenario.empty() && !o.specs.empty()) {
    expand_block(o.specs, ',', default_setup(), flag_of, s.trainings);
    s.scenario = "train_custom";
  } else {
    const std::filesystem::path file = resolve_scenario(o.scenario.empty() ? "train_default" : o.scenario, scenarios_dir());
    s.trainings = scenario_trainings(file, o);
    s.scenario = file.stem().string();
    s.scenario_files = {file};
  }
  for (const TrainSetup& t : s.trainings) check(t);
  s.out_dir = o.out.empty() ? default_run_dir(project_root() / "results", s.scenario) : std::filesystem::path(o.out);
  return s;
}

void add_train_options(CLI::App* sub, const std::shared_ptr<TrainOptionsCli>& o) {
  const auto spec = [&](const std::string& field, const std::string& help) {
    sub->add_option_function<std::string>(flag_of(field), [o, field](const std::string& text) { o->specs[field] = text; },
                                          help);
  };
  spec("task", "Tasks: copy, reverse, sort, recall or all (default reverse)");
  spec("scorer", "Scorers, or all (default additive)");
  spec("seed", "Seeds of the model, batches and evaluation sets (default 1)");
  spec("steps", "Adam steps per training (default 1500)");
  spec("lr", "Adam's learning rate (default 0.001)");
  spec("clip", "Max global gradient norm (default 5)");
  spec("eval_every", "Evaluate after every N steps and after the last (default 100)");
  spec("eval_size", "Held-out examples per evaluation, and long examples (default 1000)");
  spec("long_len", "Long set: sources src_len+1..N long (default 30; none if <= src_len)");
  spec("len_min", "Shortest source (default 5)");
  spec("src_len", "Longest source (default 20)");
  spec("batch", "Examples per batch (default 64)");
  spec("emb_dim", "Embedding size (default 32)");
  spec("enc_dim", "Encoder output size, 2 x the GRU's hidden size (default 64)");
  spec("dec_dim", "Decoder state size (default 64)");
  spec("attn_dim", "Attention size A (default 64)");
  spec("threads", "oneDNN threads per training (default 1)");
  sub->add_option("--scenario", o->scenario, "Scenario name in scenarios/ or a CSV path (default: train_default)");
  sub->add_option("--out", o->out, "Run folder to write (default results/<scenario>/<UTC timestamp>)");
  sub->add_option("--resume", o->resume, "Continue the run in this folder, skipping the trainings it holds");
  sub->add_flag("--force", o->force, "With --resume: continue a run made on another machine, oneDNN or commit");
  sub->add_flag("--dry-run", o->dry_run, "List the trainings with time estimates; train nothing");
  sub->add_option("--shard", o->shard, "Run shard K of N (every N-th training from K)")->capture_default_str();
  sub->add_flag("--quiet", o->quiet, "No progress line on stderr");
}

}  // namespace

// A train sweep's plan for `attnbench submit --sweep train`: one point per training; a
// training's memory is taken as 4x its model's inference harness (gradients and Adam's two
// moments beside the weights, activations of the target steps).
SweepPlan plan_train_sweep(const std::vector<std::string>& args, int shards) {
  const TrainSweepOptions s = sweep_options(*parse_sweep_flags<TrainOptionsCli>("train", args, add_train_options));
  SweepPlan plan{s.scenario, trainings_json(s.trainings), s.trainings.size(), {}};
  for (int k = 1; k <= shards; ++k) {
    ShardNeeds needs;
    for (const TrainSetup& t : shard_of_trainings(s.trainings, k, shards)) {
      ++needs.points;
      needs.seconds += training_seconds(t);
      needs.threads = std::max(needs.threads, static_cast<int>(t.problem.threads));
      needs.memory_bytes = std::max(needs.memory_bytes, 4 * point_memory_bytes({task_problem(t), {t.problem.scorer}}));
    }
    plan.shards.push_back(needs);
  }
  return plan;
}

void setup_train(CLI::App& app, int& exit_code, const std::string& command_line) {
  auto o = std::make_shared<TrainOptionsCli>();
  o->command_line = command_line;
  CLI::App* sub = app.add_subcommand(
      "train",
      "Train the encoder-decoder on synthetic tasks (copy, reverse, sort, recall; gold alignments) for every\n"
      "point of a grid and record learning curves and final quality per scorer. Each of the flags below\n"
      "takes a value or a list (additive,dot); whole-number flags also ranges (64:512:*2). With no flags it\n"
      "runs scenarios/train_default.csv (reverse, additive vs additive_linear, 3 seeds). Writes train.csv,\n"
      "train_final.csv and meta.json to results/<scenario>/<UTC time>/ (or --out). A sweep is sharded with\n"
      "--shard K/N, joined with `attnbench merge`, and sent to Slurm with `attnbench submit --sweep train`.");
  add_train_options(sub, o);
  sub->callback([o, &exit_code] { exit_code = run_train_sweep(sweep_options(*o)); });
}

}  // namespace attnbench
