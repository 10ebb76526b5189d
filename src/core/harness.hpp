// Runs a Model on oneDNN: BiGRU encoder, bridge, and the attention decoder, stage by stage.
#pragma once

#include <cstdint>
#include <vector>

#include "core/attend.hpp"
#include "core/fused_attend.hpp"
#include "core/gru_layer.hpp"
#include "core/matmul_op.hpp"
#include "core/model.hpp"
#include "core/onednn_context.hpp"
#include "core/trace.hpp"

namespace attnbench {

// All primitives are created in the constructor, on ctx's thread count; the stage
// methods allocate nothing. problem.impl picks how score and attend are computed:
// oneDNN primitives (Impl::onednn) or the fused per-example kernels (Impl::fused);
// either way they fill the same tensors. Example:
//   OneDnnContext ctx(p.threads); Model m = make_model(p, factory);
//   Harness h(ctx, m); DecodeTrace trace = h.run_traced();
class Harness {
 public:
  Harness(OneDnnContext& ctx, Model& model);

  // Stage `encoder`: embeds the source, runs the BiGRU and sets s_0 = tanh(W_s h_1(backward) + b).
  void encode();
  // Stage `keys`: the scorer's step-independent keys from H.
  void prepare_keys();
  // Stage `score`: e = score(s_{t-1}, keys).
  void score();
  // Stage `attend`: masked softmax and context vector.
  void attend();
  // Stage `step`: score() and attend(); Impl::fused does both in one pass over the examples.
  void score_and_attend();
  // Stage `cell`: s_t = GRUCell([emb(y_t); c_t], s_{t-1}), teacher-forced on target column t.
  void cell(std::int64_t t);
  // Stage `output`: logits = Out([s_t; c_t]).
  void output();
  // Stage `decode`: keys, then every step (score, attend, cell, output).
  void decode();

  // encode() + decode(), recording every tensor of every step.
  DecodeTrace run_traced();

  const std::vector<float>& annotations() const { return annotations_; }
  const std::vector<float>& state() const { return state_; }
  const std::vector<float>& scores() const { return scores_; }
  const std::vector<float>& weights() const { return weights_; }
  const std::vector<float>& context() const { return context_; }
  const std::vector<float>& logits() const { return logits_; }

 private:
  // Decode step t of decode(): score_and_attend(), cell(t), output(). Not the stage `step`,
  // which is score_and_attend() alone.
  void decode_step(std::int64_t t);

  Model& model_;
  const Problem& p_;
  GruLayer encoder_, cell_;
  LinearOp bridge_, out_;
  Attend attend_;      // Impl::onednn
  FusedAttend fused_;  // Impl::fused
  std::vector<float> embedded_, annotations_, final_iter_, state_, next_state_, scores_, weights_, context_,
      cell_input_, out_input_, logits_;
};

}  // namespace attnbench
