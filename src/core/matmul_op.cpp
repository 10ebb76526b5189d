#include "core/matmul_op.hpp"

namespace attnbench {

namespace {
using dims = dnnl::memory::dims;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

dnnl::memory unbound(OneDnnContext& ctx, const dnnl::memory::desc& desc) {
  return dnnl::memory(desc, ctx.engine(), DNNL_MEMORY_NONE);
}
}  // namespace

dnnl::primitive_attr eltwise_attr(dnnl::algorithm activation, float alpha, float beta) {
  dnnl::primitive_attr attr;
  if (activation == dnnl::algorithm::undef) return attr;
  dnnl::post_ops ops;
  ops.append_eltwise(1.f, activation, alpha, beta);
  attr.set_post_ops(ops);
  return attr;
}

MatmulOp::MatmulOp(OneDnnContext& ctx, const dnnl::memory::desc& src, const dnnl::memory::desc& weights,
                   const dnnl::memory::desc& dst, const dnnl::primitive_attr& attr)
    : ctx_(&ctx),
      primitive_(dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, weights, dst), attr, ctx.engine())),
      src_(unbound(ctx, src)),
      weights_(unbound(ctx, weights)),
      dst_(unbound(ctx, dst)) {}

void MatmulOp::run(const float* src, const float* weights, float* dst) {
  src_.set_data_handle(const_cast<float*>(src));
  weights_.set_data_handle(const_cast<float*>(weights));
  dst_.set_data_handle(dst);
  primitive_.execute(ctx_->stream(), {{DNNL_ARG_SRC, src_}, {DNNL_ARG_WEIGHTS, weights_}, {DNNL_ARG_DST, dst_}});
  ctx_->stream().wait();
}

LinearOp::LinearOp(OneDnnContext& ctx, std::int64_t rows, const LinearParams& params, dnnl::algorithm activation)
    : ctx_(&ctx) {
  const dnnl::memory::desc src = plain_desc({rows, params.in});
  const dnnl::memory::desc dst = plain_desc({rows, params.out});
  const dnnl::memory::desc user_weights({params.in, params.out}, dt::f32, tag::ba);  // torch's (out, in)
  const dnnl::memory::desc any_weights({params.in, params.out}, dt::f32, tag::any);
  const bool has_bias = !params.bias.empty();
  const dnnl::memory::desc bias = has_bias ? plain_desc({1, params.out}) : dnnl::memory::desc();
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, any_weights, bias, dst),
                                        eltwise_attr(activation), ctx.engine());
  primitive_ = dnnl::matmul(pd);
  const dnnl::memory given(user_weights, ctx.engine(), const_cast<float*>(params.weight.data()));
  weights_ = reorder_into(ctx, given, pd.weights_desc());
  if (has_bias) {
    bias_ = dnnl::memory(bias, ctx.engine());
    std::copy(params.bias.begin(), params.bias.end(), static_cast<float*>(bias_.get_data_handle()));
  }
  src_ = unbound(ctx, src);
  dst_ = unbound(ctx, dst);
}

void LinearOp::run(const float* x, float* y) {
  src_.set_data_handle(const_cast<float*>(x));
  dst_.set_data_handle(y);
  ExecArgs args{{DNNL_ARG_SRC, src_}, {DNNL_ARG_WEIGHTS, weights_}, {DNNL_ARG_DST, dst_}};
  if (bias_) args.emplace(DNNL_ARG_BIAS, bias_);
  primitive_.execute(ctx_->stream(), args);
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
}

void BinaryAddOp::run(const float* src0, const float* src1, float* dst) {
  src0_.set_data_handle(const_cast<float*>(src0));
  src1_.set_data_handle(const_cast<float*>(src1));
  dst_.set_data_handle(dst);
  primitive_.execute(ctx_->stream(), {{DNNL_ARG_SRC_0, src0_}, {DNNL_ARG_SRC_1, src1_}, {DNNL_ARG_DST, dst_}});
  ctx_->stream().wait();
}

}  // namespace attnbench
