// Adam and gradient clipping against values printed by torch.optim.Adam and
// torch.nn.utils.clip_grad_norm_ (torch 1.13) for the same inputs.
#include <gtest/gtest.h>

#include <vector>

#include "train/adam.hpp"
#include "train/clip.hpp"

namespace attnbench {
namespace {

// p = nn.Parameter(tensor([0.5, -1.0, 2.0, 0.0, 3.0])); opt = torch.optim.Adam([p], lr=0.01);
// then for each row of kGrads: p.grad = tensor(row); opt.step(); print p.
TEST(Adam, EqualsTorchOptimAdamStepByStep) {
  const std::vector<std::vector<float>> grads = {
      {0.1f, -0.2f, 0.3f, 0.0f, 5.0f}, {1.0f, 0.5f, -0.25f, 1e-3f, -5.0f}, {-0.3f, 0.0f, 2.0f, -1e-4f, 1e-6f}};
  const std::vector<std::vector<float>> torch_after = {
      {0.49000001f, -0.99000001f, 1.99000001f, 0.f, 2.99000001f},
      {0.481929123f, -0.994422138f, 1.98961878f, -0.00744126271f, 2.99052644f},
      {0.477779329f, -0.997840464f, 1.98329246f, -0.0125288395f, 2.99093318f}};
  std::vector<float> value = {0.5f, -1.0f, 2.0f, 0.0f, 3.0f}, grad(5);
  const std::vector<NamedTensor> params = {{"p", {5}, value}}, grad_list = {{"p", {5}, grad}};
  Adam adam(params, AdamOptions{0.01});
  for (std::size_t k = 0; k < grads.size(); ++k) {
    grad = grads[k];
    adam.step(params, grad_list);
    for (std::size_t i = 0; i < value.size(); ++i) EXPECT_NEAR(value[i], torch_after[k][i], 2e-7) << "step " << k + 1;
  }
  EXPECT_EQ(adam.steps(), 3);
}

// Two tensors [3, 4] and [12]: total norm 13. clip_grad_norm_(max_norm=6.5) gave
// 1.49999988, 1.99999988, 5.99999952 (factor 6.5 / (13 + 1e-6)).
TEST(ClipGradNorm, ScalesByMaxNormOverTheGlobalNormLikeTorch) {
  std::vector<float> a = {3.f, 4.f}, b = {12.f};
  const std::vector<NamedTensor> grads = {{"a", {2}, a}, {"b", {1}, b}};
  EXPECT_DOUBLE_EQ(clip_grad_norm(grads, 6.5), 13.0);
  EXPECT_NEAR(a[0], 1.49999988f, 1e-7);
  EXPECT_NEAR(a[1], 1.99999988f, 1e-7);
  EXPECT_NEAR(b[0], 5.99999952f, 2e-7);
}

TEST(ClipGradNorm, LeavesGradientsBelowTheMaxNorm) {
  std::vector<float> a = {3.f, 4.f};
  const std::vector<NamedTensor> grads = {{"a", {2}, a}};
  EXPECT_DOUBLE_EQ(clip_grad_norm(grads, 100.0), 5.0);
  EXPECT_EQ(a, (std::vector<float>{3.f, 4.f}));
}

}  // namespace
}  // namespace attnbench
