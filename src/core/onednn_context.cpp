#include "core/onednn_context.hpp"

#include <cpuid.h>
#include <omp.h>

#include <cstring>
#include <string_view>

namespace attnbench {

namespace {
dnnl::engine make_engine(int threads) {
  omp_set_num_threads(threads);
  return dnnl::engine(dnnl::engine::kind::cpu, 0);
}
}  // namespace

OneDnnContext::OneDnnContext(int threads, DType dtype)
    : threads_(threads), dtype_(dtype), engine_(make_engine(threads)), stream_(engine_) {}

dnnl::memory::desc plain_desc(const dnnl::memory::dims& dims, dnnl::memory::data_type type) {
  dnnl::memory::dims strides(dims.size(), 1);
  for (std::size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return dnnl::memory::desc(dims, type, strides);
}

dnnl::memory wrap(OneDnnContext& ctx, const dnnl::memory::dims& dims, const float* data) {
  return dnnl::memory(plain_desc(dims), ctx.engine(), const_cast<float*>(data));
}

dnnl::memory reorder_into(OneDnnContext& ctx, const dnnl::memory& from, const dnnl::memory::desc& to) {
  dnnl::memory out(to, ctx.engine());
  dnnl::reorder(from, out).execute(ctx.stream(), const_cast<dnnl::memory&>(from), out);
  ctx.stream().wait();
  return out;
}

std::string onednn_version() {
  const dnnl_version_t* v = dnnl_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

std::string effective_isa_name() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    default: return "other";
  }
}

namespace {
bool cpu_vendor_is_amd() {
  unsigned max_leaf = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0, &max_leaf, &ebx, &ecx, &edx) == 0) return false;
  char vendor[12];
  std::memcpy(vendor, &ebx, 4);
  std::memcpy(vendor + 4, &edx, 4);
  std::memcpy(vendor + 8, &ecx, 4);
  return std::string_view(vendor, sizeof vendor) == "AuthenticAMD";
}
}  // namespace

bool onednn_has_bf16_matmul() {
  static const bool has = [] {
    const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    const dnnl::memory::desc bf16 = plain_desc({64, 64}, dnnl::memory::data_type::bf16);
    try {
      dnnl::matmul::primitive_desc(dnnl::matmul::desc(bf16, bf16, plain_desc({64, 64})), engine);
      return true;
    } catch (const dnnl::error& e) {
      if (e.status != dnnl_unimplemented) throw;
      return false;
    }
  }();
  return has;
}

bool bf16_matmul_outruns_f32() {
  const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
  return isa == dnnl::cpu_isa::avx512_core_amx || (isa == dnnl::cpu_isa::avx512_core_bf16 && cpu_vendor_is_amd());
}

}  // namespace attnbench
