// oneDNN matmul primitives created once and run many times on caller-owned buffers.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <string>

#include "core/onednn_context.hpp"
#include "core/param_source.hpp"

namespace attnbench {

// The f32 -> bf16 conversion of one operand of a bf16 matmul (or any reorder of an f32
// operand into another layout, `to`): the reorder primitive and the destination buffer
// are created once, convert() only enqueues the reorder on ctx's stream (the caller's
// next primitive on that stream sees the result). With `through_bf16` (a bf16 context where
// oneDNN has no bf16 matmul) `to` is f32 and convert() rounds through a bf16 buffer into it.
// Example: Bf16Operand x(ctx, plain_desc({B, K}), plain_desc({B, K}, bf16)); x.convert(data);
class Bf16Operand {
 public:
  Bf16Operand() = default;
  Bf16Operand(OneDnnContext& ctx, const dnnl::memory::desc& from, const dnnl::memory::desc& to,
              bool through_bf16 = false);

  // Enqueues the conversion of `data`, laid out as `from`, into converted().
  void convert(const float* data);
  const dnnl::memory& converted() const { return to_; }

 private:
  OneDnnContext* ctx_ = nullptr;
  dnnl::reorder reorder_, widen_;  // widen_: bf16 back to f32, with through_bf16 only
  dnnl::memory from_, rounded_, to_;
  ExecArgs args_, widen_args_;
};

// How a MatmulOp takes its weights: as given (plain row-major, any strides), or in
// oneDNN's preferred layout for the CPU, reordered into it at each binding (for weights
// bound once and used many times).
enum class WeightsLayout { plain, preferred };

// dst = src x weights (+ post-ops), all plain row-major f32 with possibly strided
// weights; the buffers are given at each run. Example: a (B,L,A) x (B,A,1) batched product.
// On a bf16 context both inputs are activations converted to plain bf16 at each run
// (Bf16Operand), or once at binding for a bound operand; the product accumulates in
// f32 and dst stays f32 (where oneDNN has no bf16 matmul: an f32 matmul on the operands
// rounded to bf16, OneDnnContext). With WeightsLayout::preferred the weights are only ever bound
// (bind_weights) and reordered then.
// Example (the roofline's timed product): MatmulOp op(ctx, plain_desc({n, n}), plain_desc({n, n}),
//   plain_desc({n, n}), {}, WeightsLayout::preferred); op.bind_src(a); op.bind_weights(b); op.run_bound(c);
class MatmulOp {
 public:
  MatmulOp() = default;
  MatmulOp(OneDnnContext& ctx, const dnnl::memory::desc& src, const dnnl::memory::desc& weights,
           const dnnl::memory::desc& dst, const dnnl::primitive_attr& attr = {},
           WeightsLayout layout = WeightsLayout::plain);

  void run(const float* src, const float* weights, float* dst);

  // For an operand that stays the same over many runs (the annotations, the cached keys):
  // binds it for run_with_bound_src()/run_with_bound_weights(); on a bf16 context it is
  // converted here, once, not at every run. Bind again when its data changes.
  void bind_src(const float* src);
  void bind_weights(const float* weights);
  // dst = bound src x weights, dst = src x bound weights, and dst = bound src x bound
  // weights (the matmul primitive alone: nothing is converted or reordered).
  void run_with_bound_src(const float* weights, float* dst);
  void run_with_bound_weights(const float* src, float* dst);
  void run_bound(float* dst);

  // oneDNN's name of the implementation that runs, e.g. "brg:avx512_core".
  const std::string& impl_info() const { return impl_info_; }

 private:
  void set_src(const float* src);
  void set_weights(const float* weights);
  void execute(float* dst);

  OneDnnContext* ctx_ = nullptr;
  bool bf16_ = false, convert_weights_ = false;  // bf16_: the context's dtype is bf16
  dnnl::matmul primitive_;
  dnnl::memory src_, weights_, dst_;
  Bf16Operand src_bf16_, weights_bf16_;  // weights_bf16_: the weights' conversion and/or reorder
  ExecArgs args_;
  std::string impl_info_;
};

// y = act(x W^T + b) for a (rows, in) input, like nn.Linear followed by an optional
// eltwise activation. The weights are reordered once into oneDNN's preferred layout.
// On a bf16 context that layout is bf16 (converted once) and x is converted to bf16 at
// each run into a buffer allocated once; the bias, the accumulation and y stay f32 (where
// oneDNN has no bf16 matmul: f32 weights and x rounded to bf16, OneDnnContext).
class LinearOp {
 public:
  LinearOp() = default;
  LinearOp(OneDnnContext& ctx, std::int64_t rows, const LinearParams& params,
           dnnl::algorithm activation = dnnl::algorithm::undef);

  void run(const float* x, float* y);
  // Reads the weights and bias of the LinearParams given at construction again (after an
  // optimizer changed them in place); allocates nothing.
  void reload();

 private:
  OneDnnContext* ctx_ = nullptr;
  bool bf16_ = false;
  const LinearParams* params_ = nullptr;
  dnnl::matmul primitive_;
  dnnl::memory src_, bias_, dst_;
  Bf16Operand src_bf16_, weights_;  // weights_: params_->weight into the matmul's layout and type
  ExecArgs args_;
};

// dst = act(src0 + src1) with numpy broadcasting of src1 (e.g. (B,L,A) + (B,1,A)).
class BinaryAddOp {
 public:
  BinaryAddOp() = default;
  BinaryAddOp(OneDnnContext& ctx, const dnnl::memory::dims& src0, const dnnl::memory::dims& src1,
              dnnl::algorithm activation = dnnl::algorithm::undef);

  void run(const float* src0, const float* src1, float* dst);

 private:
  OneDnnContext* ctx_ = nullptr;
  dnnl::binary primitive_;
  dnnl::memory src0_, src1_, dst_;
  ExecArgs args_;
};

// Attributes with one eltwise post-op (alpha, beta as in oneDNN), or none for undef.
dnnl::primitive_attr eltwise_attr(dnnl::algorithm activation, float alpha = 0.f, float beta = 0.f);

// Attributes of a matmul that computes dst = scale * product (+ dst, when accumulate).
dnnl::primitive_attr scaled_attr(float scale, bool accumulate);

}  // namespace attnbench
