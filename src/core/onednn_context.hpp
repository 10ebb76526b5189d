// The oneDNN engine and stream a harness runs on, pinned to one thread count.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <string>
#include <unordered_map>

#include "core/problem.hpp"

namespace attnbench {

// Creating a context sets the OpenMP thread count that every primitive created
// and executed afterwards on this thread uses. `dtype` is the input type of every
// matmul built on it (LinearOp, MatmulOp): bf16 converts both operands to bf16 and
// accumulates in f32 (where oneDNN has no bf16 matmul, onednn_has_bf16_matmul(), an f32
// matmul on the operands rounded to bf16: the same products, exact in f32, summed in f32);
// softmax, binary ops and the GRU layers stay f32 either way.
// Example: OneDnnContext ctx(p.threads, p.dtype);
class OneDnnContext {
 public:
  explicit OneDnnContext(int threads, DType dtype = DType::f32);

  dnnl::engine& engine() { return engine_; }
  dnnl::stream& stream() { return stream_; }
  int threads() const { return threads_; }
  DType dtype() const { return dtype_; }

 private:
  int threads_;
  DType dtype_;
  dnnl::engine engine_;
  dnnl::stream stream_;
};

// Arguments of one primitive execution.
using ExecArgs = std::unordered_map<int, dnnl::memory>;

// A memory object over caller-owned f32 data, row-major with the given dims.
dnnl::memory wrap(OneDnnContext& ctx, const dnnl::memory::dims& dims, const float* data);

// A plain row-major (dense) descriptor, f32 unless `type` says otherwise.
dnnl::memory::desc plain_desc(const dnnl::memory::dims& dims,
                              dnnl::memory::data_type type = dnnl::memory::data_type::f32);

// Copies data from the layout of `from` into a new memory of layout `to`, converting
// the data type when the two differ (e.g. f32 weights into a bf16 blocked layout).
dnnl::memory reorder_into(OneDnnContext& ctx, const dnnl::memory& from, const dnnl::memory::desc& to);

// oneDNN's version, e.g. "2.6.3".
std::string onednn_version();

// The instruction set oneDNN dispatches to here, e.g. "avx512_core_bf16".
std::string effective_isa_name();

// True when oneDNN has a bf16 matmul here (oneDNN 2.6: from avx512_core on; not below, e.g. on
// an AMD EPYC Zen 3, nor under ONEDNN_MAX_CPU_ISA=AVX2). Probed once per process (thread-safe).
bool onednn_has_bf16_matmul();

// True when oneDNN's bf16 matmul outruns its f32 one here: where oneDNN dispatches to AMX, and
// on AMD CPUs where it dispatches to avx512_core_bf16. Measured by `attnbench roofline` (the
// best of its matmul sizes, 1 thread), bf16 over f32: Intel Xeon with AMX 6.0x (2026-12-04),
// AMD EPYC Zen 4 2.0x (2026-12-03), Zen 5 2.1x (2026-12-05); an Intel Xeon family 6 model 207
// with avx512_core_bf16 and no AMX 0.54x (86.6 against 160.7 GFLOP/s, 2026-12-06); below
// avx512_core_bf16 oneDNN has no bf16 instructions. Depends on the CPU and on oneDNN's ISA
// limit (DNNL_MAX_CPU_ISA) only, so a machine decides alike in every run.
bool bf16_matmul_outruns_f32();

}  // namespace attnbench
