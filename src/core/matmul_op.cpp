#include "core/matmul_op.hpp"

#include <algorithm>

namespace attnbench {

namespace {
using dims = dnnl::memory::dims;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

dnnl::memory unbound(OneDnnContext& ctx, const dnnl::memory::desc& desc) {
  return dnnl::memory(desc, ctx.engine(), DNNL_MEMORY_NONE);
}

// The data type the matmul multiplies on ctx: bf16 on a bf16 context where oneDNN has a bf16
// matmul, else f32.
dt input_type(const OneDnnContext& ctx) {
  return ctx.dtype() == DType::bf16 && onednn_has_bf16_matmul() ? dt::bf16 : dt::f32;
}

// True on a bf16 context where oneDNN has no bf16 matmul: its operands are rounded to bf16.
bool rounds_through_bf16(const OneDnnContext& ctx) { return ctx.dtype() == DType::bf16 && !onednn_has_bf16_matmul(); }
}  // namespace

Bf16Operand::Bf16Operand(OneDnnContext& ctx, const dnnl::memory::desc& from, const dnnl::memory::desc& to,
                         bool through_bf16)
    : ctx_(&ctx), from_(unbound(ctx, from)), to_(to, ctx.engine()) {
  const dnnl::memory::desc first = through_bf16 ? plain_desc(from.dims(), dt::bf16) : to;
  reorder_ = dnnl::reorder(dnnl::reorder::primitive_desc(ctx.engine(), from, ctx.engine(), first));
  if (through_bf16) {
    rounded_ = dnnl::memory(first, ctx.engine());
    widen_ = dnnl::reorder(dnnl::reorder::primitive_desc(ctx.engine(), first, ctx.engine(), to));
    widen_args_ = {{DNNL_ARG_FROM, rounded_}, {DNNL_ARG_TO, to_}};
  }
  args_ = {{DNNL_ARG_FROM, from_}, {DNNL_ARG_TO, through_bf16 ? rounded_ : to_}};
}

void Bf16Operand::convert(const float* data) {
  from_.set_data_handle(const_cast<float*>(data));
  reorder_.execute(ctx_->stream(), args_);
  if (rounded_) widen_.execute(ctx_->stream(), widen_args_);
}

dnnl::primitive_attr eltwise_attr(dnnl::algorithm activation, float alpha, float beta) {
  dnnl::primitive_attr attr;
  if (activation == dnnl::algorithm::undef) return attr;
  dnnl::post_ops ops;
  ops.append_eltwise(1.f, activation, alpha, beta);
  attr.set_post_ops(ops);
  return attr;
}

MatmulOp::MatmulOp(OneDnnContext& ctx, const dnnl::memory::desc& src, const dnnl::memory::desc& weights,
                   const dnnl::memory::desc& dst, const dnnl::primitive_attr& attr, WeightsLayout layout)
    : ctx_(&ctx), bf16_(ctx.dtype() == DType::bf16), convert_weights_(bf16_ || layout == WeightsLayout::preferred),
      src_(unbound(ctx, src)), weights_(unbound(ctx, weights)), dst_(unbound(ctx, dst)) {
  const dnnl::memory::desc matmul_src = bf16_ ? plain_desc(src.dims(), input_type(ctx)) : src;
  const dnnl::memory::desc matmul_weights = layout == WeightsLayout::preferred
                                                ? dnnl::memory::desc(weights.dims(), input_type(ctx), tag::any)
                                            : bf16_ ? plain_desc(weights.dims(), input_type(ctx))
                                                    : weights;
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(matmul_src, matmul_weights, dst), attr, ctx.engine());
  primitive_ = dnnl::matmul(pd);
  impl_info_ = pd.impl_info_str();
  if (bf16_) src_bf16_ = Bf16Operand(ctx, src, matmul_src, rounds_through_bf16(ctx));
  if (convert_weights_) weights_bf16_ = Bf16Operand(ctx, weights, pd.weights_desc(), rounds_through_bf16(ctx));
  args_ = {{DNNL_ARG_SRC, bf16_ ? src_bf16_.converted() : src_},
           {DNNL_ARG_WEIGHTS, convert_weights_ ? weights_bf16_.converted() : weights_},
           {DNNL_ARG_DST, dst_}};
}

void MatmulOp::set_src(const float* src) {
  if (bf16_)
    src_bf16_.convert(src);
  else
    src_.set_data_handle(const_cast<float*>(src));
}

void MatmulOp::set_weights(const float* weights) {
  if (convert_weights_)
    weights_bf16_.convert(weights);
  else
    weights_.set_data_handle(const_cast<float*>(weights));
}

void MatmulOp::execute(float* dst) {
  dst_.set_data_handle(dst);
  primitive_.execute(ctx_->stream(), args_);
  ctx_->stream().wait();
}

void MatmulOp::run(const float* src, const float* weights, float* dst) {
  set_src(src);
  set_weights(weights);
  execute(dst);
}

void MatmulOp::bind_src(const float* src) {
  set_src(src);
  ctx_->stream().wait();
}

void MatmulOp::bind_weights(const float* weights) {
  set_weights(weights);
  ctx_->stream().wait();
}

void MatmulOp::run_with_bound_src(const float* weights, float* dst) {
  set_weights(weights);
  execute(dst);
}

void MatmulOp::run_with_bound_weights(const float* src, float* dst) {
  set_src(src);
  execute(dst);
}

void MatmulOp::run_bound(float* dst) { execute(dst); }

dnnl::primitive_attr scaled_attr(float scale, bool accumulate) {
  dnnl::primitive_attr attr;
  dnnl::post_ops ops;
  if (scale != 1.f) ops.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, scale, 0.f);
  if (accumulate) ops.append_sum(1.f);
  attr.set_post_ops(ops);
  return attr;
}

LinearOp::LinearOp(OneDnnContext& ctx, std::int64_t rows, const LinearParams& params, dnnl::algorithm activation)
    : ctx_(&ctx), bf16_(ctx.dtype() == DType::bf16), params_(&params) {
  const dnnl::memory::desc src = plain_desc({rows, params.in});
  const dnnl::memory::desc matmul_src = plain_desc({rows, params.in}, input_type(ctx));
  const dnnl::memory::desc dst = plain_desc({rows, params.out});
  const dnnl::memory::desc user_weights({params.in, params.out}, dt::f32, tag::ba);  // torch's (out, in)
  const dnnl::memory::desc any_weights({params.in, params.out}, input_type(ctx), tag::any);
  const bool has_bias = !params.bias.empty();
  const dnnl::memory::desc bias = has_bias ? plain_desc({1, params.out}) : dnnl::memory::desc();
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(matmul_src, any_weights, bias, dst), eltwise_attr(activation),
                                        ctx.engine());
  primitive_ = dnnl::matmul(pd);
  weights_ = Bf16Operand(ctx, user_weights, pd.weights_desc(), rounds_through_bf16(ctx));  // bf16 on a bf16 context
  weights_.convert(params.weight.data());
  ctx.stream().wait();
  src_ = unbound(ctx, src);
  dst_ = unbound(ctx, dst);
  if (bf16_) src_bf16_ = Bf16Operand(ctx, src, matmul_src, rounds_through_bf16(ctx));
  args_ = {{DNNL_ARG_SRC, bf16_ ? src_bf16_.converted() : src_}, {DNNL_ARG_WEIGHTS, weights_.converted()},
           {DNNL_ARG_DST, dst_}};
  if (has_bias) {
    bias_ = dnnl::memory(bias, ctx.engine());
    std::copy(params.bias.begin(), params.bias.end(), static_cast<float*>(bias_.get_data_handle()));
    args_.emplace(DNNL_ARG_BIAS, bias_);
  }
}

void LinearOp::reload() {
  if (!ctx_) return;  // never built
  weights_.convert(params_->weight.data());
  ctx_->stream().wait();
  if (!params_->bias.empty())
    std::copy(params_->bias.begin(), params_->bias.end(), static_cast<float*>(bias_.get_data_handle()));
}

void LinearOp::run(const float* x, float* y) {
  if (bf16_)
    src_bf16_.convert(x);
  else
    src_.set_data_handle(const_cast<float*>(x));
  dst_.set_data_handle(y);
  primitive_.execute(ctx_->stream(), args_);
  ctx_->stream().wait();
}

BinaryAddOp::BinaryAddOp(OneDnnContext& ctx, const dims& src0, const dims& src1, dnnl::algorithm activation)
    : ctx_(&ctx) {
  const dnnl::memory::desc a = plain_desc(src0), b = plain_desc(src1);
  primitive_ = dnnl::binary(dnnl::binary::primitive_desc(dnnl::binary::desc(dnnl::algorithm::binary_add, a, b, a),
                                                         eltwise_attr(activation), ctx.engine()));
  src0_ = unbound(ctx, a);
  src1_ = unbound(ctx, b);
  dst_ = unbound(ctx, a);
  args_ = {{DNNL_ARG_SRC_0, src0_}, {DNNL_ARG_SRC_1, src1_}, {DNNL_ARG_DST, dst_}};
}

void BinaryAddOp::run(const float* src0, const float* src1, float* dst) {
  src0_.set_data_handle(const_cast<float*>(src0));
  src1_.set_data_handle(const_cast<float*>(src1));
  dst_.set_data_handle(dst);
  primitive_.execute(ctx_->stream(), args_);
  ctx_->stream().wait();
}

}  // namespace attnbench
