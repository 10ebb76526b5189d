#include "driver/train_sweep.hpp"

#include <cstdio>
#include <iostream>
#include <set>
#include <stdexcept>

#include "driver/csv_io.hpp"
#include "driver/estimate.hpp"
#include "driver/folder_kind.hpp"
#include "driver/interrupt.hpp"
#include "driver/meta_file.hpp"
#include "driver/progress.hpp"
#include "driver/run_folder.hpp"
#include "driver/run_journal.hpp"
#include "driver/run_meta.hpp"
#include "driver/train_rows.hpp"
#include "train/tasks.hpp"
#include "variants/registry.hpp"

namespace attnbench {

namespace {

std::string key_id(const std::vector<std::string>& key) {
  std::string id;
  for (const std::string& cell : key) id += cell + '\x1f';
  return id;
}

std::string describe(const TrainSetup& s) {
  const Problem& p = s.problem;
  return s.task + " " + p.scorer + " seed " + std::to_string(p.seed) + " attn " + std::to_string(p.attn_dim) +
         " len " + std::to_string(p.effective_len_min()) + ".." + std::to_string(p.src_len) + " lr " +
         metric_cell(s.lr);
}

// The keys of the trainings the folder's train_final.csv commits (read after RunFolder
// recovered it: exactly what the journal commits).
std::set<std::string> finished_trainings(const std::filesystem::path& dir) {
  const CsvDocument doc = read_run_csv(dir, finished_rows_file(FolderKind::train));
  std::set<std::string> done;
  const std::size_t n = train_key_columns().size();
  for (const CsvRow& row : doc.rows) done.insert(key_id({row.cells.begin(), row.cells.begin() + static_cast<long>(n)}));
  return done;
}

nlohmann::json training_json(const TrainSetup& s) {
  nlohmann::json j;
  std::vector<std::string> columns = train_key_columns(), values = train_key(s);
  for (const std::string& column : train_setting_columns()) columns.push_back(column);
  for (const std::string& value : train_settings(s)) values.push_back(value);
  for (std::size_t i = 0; i < columns.size(); ++i) j[columns[i]] = values[i];
  return j;
}

nlohmann::json new_meta(const TrainSweepOptions& o, std::size_t shard_trainings, const nlohmann::json& machine) {
  nlohmann::json files = nlohmann::json::array();
  for (const auto& file : o.scenario_files) files.push_back({{"path", file.string()}, {"sha256", sha256_of_file(file)}});
  nlohmann::json meta;  // the fields of run's meta.json, with grid the trainings
  meta["build"] = machine;
  meta["kind"] = "train";
  meta["command"] = o.command_line;
  meta["scenario"] = o.scenario;
  meta["scenario_files"] = files;
  meta["grid"] = trainings_json(o.trainings);
  meta["shard"] = std::to_string(o.shard_index) + "/" + std::to_string(o.shard_count);
  meta["points"] = shard_trainings;
  meta["start_utc"] = utc_now();
  meta["end_utc"] = nullptr;
  return meta;
}

void print_plan(const std::vector<TrainSetup>& trainings) {
  double total = 0;
  std::printf("%5s  %-60s  %7s  %9s\n", "train", "task scorer seed sizes", "steps", "time");
  for (std::size_t i = 0; i < trainings.size(); ++i) {
    const double t = training_seconds(trainings[i]);
    total += t;
    std::printf("%5zu  %-60s  %7lld  %9s\n", i + 1, describe(trainings[i]).c_str(),
                static_cast<long long>(trainings[i].steps), format_duration(t).c_str());
  }
  std::printf("total: %zu trainings, about %s (from the train_step cost model; one at a time)\n", trainings.size(),
              format_duration(total).c_str());
}

// Trains every training of `trainings` not in `done`, each committed to `folder` as one
// journal record (its curve, attention and final rows together) once it ends; stops at a
// signal (the training under way is dropped). Counts the trainings committed in `finished`.
void train_all(const std::vector<TrainSetup>& trainings, const std::set<std::string>& done, bool quiet,
               RunFolder& folder, std::size_t& finished) {
  install_interrupt_handlers();
  double total_estimate = 0, done_estimate = 0;
  for (const TrainSetup& s : trainings) total_estimate += training_seconds(s);
  Progress progress(quiet, total_estimate, trainings.size());
  for (std::size_t i = 0; i < trainings.size() && !stop_requested(); ++i) {
    const TrainSetup& s = trainings[i];
    if (done.contains(key_id(train_key(s)))) {
      done_estimate += training_seconds(s);
      continue;
    }
    progress.start_point(i, describe(s), done_estimate);
    const TrainOutcome outcome = train_on_task(s, find_scorer(s.problem.scorer).make, stop_requested);
    if (outcome.status == "interrupted") break;
    folder.append({train_curve_rows(s, outcome), train_attention_rows(s, outcome), train_final_row(s, outcome)});
    done_estimate += training_seconds(s);
    ++finished;
  }
  progress.finish();
}

}  // namespace

std::vector<TrainSetup> shard_of_trainings(const std::vector<TrainSetup>& all, int index, int count) {
  std::vector<TrainSetup> out;
  for (std::size_t i = 0; i < all.size(); ++i)
    if (static_cast<int>(i % static_cast<std::size_t>(count)) == index - 1) out.push_back(all[i]);
  return out;
}

nlohmann::json trainings_json(const std::vector<TrainSetup>& trainings) {
  nlohmann::json grid = nlohmann::json::array();
  for (const TrainSetup& s : trainings) grid.push_back(training_json(s));
  return grid;
}

double training_seconds(const TrainSetup& setup) {
  const Problem p = task_problem(setup);
  const double step = stage_call_seconds(p, "train_step");
  const double evals = static_cast<double>(setup.steps / setup.eval_every + 1);
  const double eval_batches = static_cast<double>((setup.eval_size + p.batch - 1) / p.batch);
  return static_cast<double>(setup.steps) * step + evals * eval_batches * step / 3.0;  // a forward ~ 1/3 step
}

int run_train_sweep(const TrainSweepOptions& options) {
  const std::vector<TrainSetup> trainings = shard_of_trainings(options.trainings, options.shard_index, options.shard_count);
  if (options.dry_run) {
    print_plan(trainings);
    return 0;
  }
  const nlohmann::json machine = build_and_machine();
  if (options.resumed && !options.force) {
    const std::string why = resume_mismatch(*options.resumed, machine);
    if (!why.empty()) throw std::invalid_argument("--resume: " + why + " (--force continues anyway)");
  }
  RunFolder folder(options.out_dir, FolderKind::train, options.resumed.has_value());  // locked until the end
  const std::set<std::string> done = options.resumed ? finished_trainings(options.out_dir) : std::set<std::string>{};
  RunMetaFile meta(options.out_dir, options.resumed ? *options.resumed : new_meta(options, trainings.size(), machine),
                   options.resumed.has_value(), timing_warnings(machine), nullptr);

  std::size_t finished = 0;
  meta.fail_on_throw(finished, [&] { train_all(trainings, done, options.quiet, folder, finished); });
  const bool interrupted = stop_requested();
  meta.finish(interrupted ? "interrupted" : "complete", finished);
  std::cout << "results: " << options.out_dir.string() << "\n";
  if (interrupted)
    std::cerr << "attnbench: interrupted after " << finished << " trainings; continue with --resume "
              << options.out_dir.string() << "\n";
  return interrupted ? kExitInterrupted : 0;
}

}  // namespace attnbench
