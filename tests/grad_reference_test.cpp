// Gradients against central differences of the double reference: each scorer's backward on
// its own, and the whole harness's backward (every parameter, masked lengths, an ignored
// target, 1 and 2 threads).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/reference.hpp"
#include "test_support.hpp"
#include "train/backprop.hpp"
#include "train/parameters.hpp"
#include "variants/registry.hpp"

namespace attnbench {
namespace {

// Parameters are f32: a step of 2^-14 is exact for |x| < 2^10, so x +- h is what it says;
// the central differences' truncation error is O(h^2) ~ 1e-9 relative.
constexpr double kParamStep = 0x1p-14;
// Inputs of reference_score are double: a small step.
constexpr double kInputStep = 1e-6;

// One gradient tensor, ours (f32) and the central differences of the double reference.
struct GradCheck {
  std::string name;
  std::vector<double> ours, reference;
};

// Element i passes when |ours_i - ref_i| <= 1e-4 x max(|ref_i|, 1% of its tensor's largest
// |ref|, 1e-3 x the largest |ref| of all tensors). The last floor, an absolute 1e-7 x the
// largest gradient (f32's unit roundoff is 6e-8), is f32 rounding: a gradient's error scales
// with the largest terms of the backward, not with its own size (additive_linear's
// scorer.W gradient is exactly 0 in double, ~1e-9 x largest in f32; the worst element seen,
// general's cell.weight_hh, is off by 1.2e-8 x largest).
void expect_near_gradients(const std::vector<GradCheck>& checks) {
  double largest = 0.0;
  for (const GradCheck& c : checks)
    for (double r : c.reference) largest = std::max(largest, std::abs(r));
  ASSERT_GT(largest, 0.0);
  for (const GradCheck& c : checks) {
    double tensor_largest = 0.0;
    for (double r : c.reference) tensor_largest = std::max(tensor_largest, std::abs(r));
    const double floor_fraction = std::max(0.01, tensor_largest > 0 ? 1e-3 * largest / tensor_largest : 1.0);
    if (tensor_largest == 0.0) {
      for (std::size_t i = 0; i < c.ours.size(); ++i)
        EXPECT_LE(std::abs(c.ours[i]), 1e-7 * largest) << c.name << "[" << i << "] should be 0";
      continue;
    }
    EXPECT_TRUE(test::near_reference(c.name, c.ours, c.reference, test::Tolerance{1e-4, floor_fraction}));
  }
}

// d f / d x[i] for every i by central differences; x is restored.
template <typename T, typename F>
std::vector<double> central_differences(std::span<T> x, double step, F&& f) {
  std::vector<double> d(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const T kept = x[i];
    x[i] = static_cast<T>(kept + step);
    const double up = f();
    x[i] = static_cast<T>(kept - step);
    const double down = f();
    x[i] = kept;
    d[i] = (up - down) / (2 * step);
  }
  return d;
}

std::vector<double> to_double(std::span<const float> v) { return {v.begin(), v.end()}; }

std::vector<double> random_values(std::size_t n, std::mt19937& rng) {
  std::normal_distribution<double> normal;
  std::vector<double> v(n);
  for (double& x : v) x = normal(rng);
  return v;
}

class ScorerGradients : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

// loss = sum_bj g_bj e_bj for fixed random g: backward_score(de = g) then backward_keys
// must give d loss / d parameters, d loss / ds and d loss / dH of reference_score.
TEST_P(ScorerGradients, EqualCentralDifferencesOfTheReference) {
  const auto& [name, threads] = GetParam();
  const ScorerShape shape{3, 5, 6, 7, 4};
  ParamSource source(InitKind::fast, 11);
  std::unique_ptr<Scorer> scorer = find_scorer(name).make(source, shape);
  std::mt19937 rng(5);
  std::vector<double> s = random_values(static_cast<std::size_t>(shape.batch * shape.dec_dim), rng);
  std::vector<double> H = random_values(static_cast<std::size_t>(shape.batch * shape.src_len * shape.enc_dim), rng);
  const std::vector<double> g = random_values(static_cast<std::size_t>(shape.batch * shape.src_len), rng);
  const auto loss = [&] {
    const std::vector<double> e = scorer->reference_score(s, H);
    double sum = 0.0;
    for (std::size_t i = 0; i < e.size(); ++i) sum += g[i] * e[i];
    return sum;
  };

  OneDnnContext ctx(threads);
  scorer->build(ctx, Impl::onednn);
  scorer->build_backward(ctx);
  const std::vector<float> s32(s.begin(), s.end()), H32(H.begin(), H.end()), g32(g.begin(), g.end());
  // The f32 path sees the f32-rounded inputs; the reference gets the same values.
  s.assign(s32.begin(), s32.end());
  H.assign(H32.begin(), H32.end());
  std::vector<std::vector<float>> grads;
  std::vector<std::span<float>> spans;
  const std::vector<ParamView> params = scorer->parameters();
  for (const ParamView& p : params) grads.emplace_back(p.value.size(), 0.f);
  for (std::vector<float>& v : grads) spans.emplace_back(v);
  std::vector<float> ds(s.size()), dH(H.size(), 0.f);
  scorer->prepare(H32.data());
  scorer->backward_score(s32.data(), g32.data(), ds.data(), spans);
  scorer->backward_keys(H32.data(), dH.data(), spans);

  std::vector<GradCheck> checks;
  for (std::size_t i = 0; i < params.size(); ++i)
    checks.push_back({params[i].name, to_double(grads[i]), central_differences(params[i].value, kParamStep, loss)});
  checks.push_back({"ds", to_double(ds), central_differences(std::span(s), kInputStep, loss)});
  checks.push_back({"dH", to_double(dH), central_differences(std::span(H), kInputStep, loss)});
  expect_near_gradients(checks);
}

INSTANTIATE_TEST_SUITE_P(EveryScorerOneAndTwoThreads, ScorerGradients,
                         ::testing::Combine(::testing::ValuesIn(test::all_scorer_names()), ::testing::Values(1, 2)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + std::to_string(std::get<1>(info.param)) + "t";
                         });

// The scorer's backward at a size where its own loops run on every thread (additive's
// (B, L, A) loop from 128K elements): 2 threads give 1 thread's gradients.
TEST(ScorerGradients, TwoThreadsEqualOneAboveTheParallelSize) {
  const ScorerShape shape{8, 64, 12, 10, 256};
  std::mt19937 rng(9);
  const auto to_float = [](const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); };
  const std::vector<float> s = to_float(random_values(static_cast<std::size_t>(shape.batch * shape.dec_dim), rng));
  const std::vector<float> H =
      to_float(random_values(static_cast<std::size_t>(shape.batch * shape.src_len * shape.enc_dim), rng));
  const std::vector<float> g = to_float(random_values(static_cast<std::size_t>(shape.batch * shape.src_len), rng));
  for (const std::string& name : test::all_scorer_names()) {
    std::vector<std::vector<double>> results[2];
    for (int threads : {1, 2}) {
      ParamSource source(InitKind::fast, 4);
      std::unique_ptr<Scorer> scorer = find_scorer(name).make(source, shape);
      OneDnnContext ctx(threads);
      scorer->build(ctx, Impl::onednn);
      scorer->build_backward(ctx);
      std::vector<std::vector<float>> grads;
      std::vector<std::span<float>> spans;
      for (const ParamView& p : scorer->parameters()) grads.emplace_back(p.value.size(), 0.f);
      for (std::vector<float>& v : grads) spans.emplace_back(v);
      std::vector<float> ds(s.size()), dH(H.size(), 0.f);
      scorer->prepare(H.data());
      scorer->backward_score(s.data(), g.data(), ds.data(), spans);
      scorer->backward_keys(H.data(), dH.data(), spans);
      for (const std::vector<float>& v : grads) results[threads - 1].push_back(to_double(v));
      results[threads - 1].push_back(to_double(ds));
      results[threads - 1].push_back(to_double(dH));
    }
    for (std::size_t i = 0; i < results[0].size(); ++i)
      EXPECT_TRUE(test::near_reference(name + " tensor " + std::to_string(i), results[1][i], results[0][i]));
  }
}

// Small sizes, every one distinct, lengths 4, 3, 2.
Problem tiny_point(const std::string& scorer, int threads) {
  Problem p;
  p.scorer = scorer;
  p.batch = 3;
  p.src_len = 4;
  p.tgt_len = 3;
  p.emb_dim = 3;
  p.enc_dim = 4;
  p.dec_dim = 5;
  p.attn_dim = 6;
  p.vocab = 7;
  p.len_min = 2;
  p.threads = threads;
  p.seed = 3;
  return p;
}

class HarnessGradients : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(HarnessGradients, EqualCentralDifferencesOfTheReferenceLoss) {
  const auto& [name, threads] = GetParam();
  const Problem p = tiny_point(name, threads);
  Model model = make_model(p, find_scorer(p.scorer).make);
  std::vector<std::int64_t> gold(static_cast<std::size_t>(p.batch * p.tgt_len));
  for (std::size_t i = 0; i < gold.size(); ++i) gold[i] = static_cast<std::int64_t>((5 * i + 1) % p.vocab);
  gold[4] = kIgnoreTarget;  // a padded target adds nothing and is not counted

  OneDnnContext ctx(p.threads);
  Backprop backprop(ctx, model);
  Gradients grads = make_gradients(model);
  const double loss = backprop.forward(gold);
  backprop.backward(grads);
  const auto reference_loss = [&] { return ref::decode_loss(model, gold, kIgnoreTarget); };
  const double expected = reference_loss();
  EXPECT_NEAR(loss, expected, 1e-6 * expected);

  const std::vector<NamedTensor> params = named_parameters(model), ours = named_gradients(grads, model);
  ASSERT_EQ(params.size(), ours.size());
  std::vector<GradCheck> checks;
  for (std::size_t i = 0; i < params.size(); ++i) {
    ASSERT_EQ(params[i].name, ours[i].name);
    checks.push_back(
        {ours[i].name, to_double(ours[i].data), central_differences(params[i].data, kParamStep, reference_loss)});
  }
  expect_near_gradients(checks);
}

INSTANTIATE_TEST_SUITE_P(EveryScorerOneAndTwoThreads, HarnessGradients,
                         ::testing::Combine(::testing::ValuesIn(test::all_scorer_names()), ::testing::Values(1, 2)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + std::to_string(std::get<1>(info.param)) + "t";
                         });

}  // namespace
}  // namespace attnbench
