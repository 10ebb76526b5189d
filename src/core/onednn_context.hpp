// The oneDNN engine and stream a harness runs on, pinned to one thread count.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <string>
#include <unordered_map>

namespace attnbench {

// Creating a context sets the OpenMP thread count that every primitive created
// and executed afterwards on this thread uses. Example: OneDnnContext ctx(2);
class OneDnnContext {
 public:
  explicit OneDnnContext(int threads);

  dnnl::engine& engine() { return engine_; }
  dnnl::stream& stream() { return stream_; }
  int threads() const { return threads_; }

 private:
  int threads_;
  dnnl::engine engine_;
  dnnl::stream stream_;
};

// Arguments of one primitive execution.
using ExecArgs = std::unordered_map<int, dnnl::memory>;

// A memory object over caller-owned f32 data, row-major with the given dims.
dnnl::memory wrap(OneDnnContext& ctx, const dnnl::memory::dims& dims, const float* data);

// A plain row-major f32 descriptor.
dnnl::memory::desc plain_desc(const dnnl::memory::dims& dims);

// Copies f32 data from the layout of `from` into a new memory of layout `to`.
dnnl::memory reorder_into(OneDnnContext& ctx, const dnnl::memory& from, const dnnl::memory::desc& to);

// oneDNN's version, e.g. "2.6.3".
std::string onednn_version();

// The instruction set oneDNN dispatches to here, e.g. "avx512_core_bf16".
std::string effective_isa_name();

}  // namespace attnbench
