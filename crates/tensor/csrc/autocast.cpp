// bfloat16 autocast, which tch does not expose: tch's `autocast` turns CUDA autocast on with
// libtorch's default dtype (fp16) and does nothing on a CPU-only machine; asymflow's
// `precision = "bf16"` needs bfloat16 on CUDA and on CPU. Autocast's state (enabled, dtype,
// nesting, weight-cast cache) is thread-local in libtorch, so it is entered and left on the
// thread that runs the forward pass.
#include <ATen/autocast_mode.h>

// Turns bfloat16 autocast on for CUDA and CPU tensors; returns the previous enabled flags
// (bit 0: CUDA, bit 1: CPU) for `asymflow_autocast_bf16_exit`.
extern "C" int asymflow_autocast_bf16_enter(void) {
  int previous = (at::autocast::is_autocast_enabled(at::kCUDA) ? 1 : 0) |
                 (at::autocast::is_autocast_enabled(at::kCPU) ? 2 : 0);
  for (auto device : {at::kCUDA, at::kCPU}) {
    at::autocast::set_autocast_dtype(device, at::kBFloat16);
    at::autocast::set_autocast_enabled(device, true);
  }
  at::autocast::increment_nesting();
  return previous;
}

// Leaves the autocast region entered by `asymflow_autocast_bf16_enter`: drops the cached bf16
// copies of the weights when the outermost region ends and restores the enabled flags.
extern "C" void asymflow_autocast_bf16_exit(int previous) {
  if (at::autocast::decrement_nesting() == 0) {
    at::autocast::clear_cache();
  }
  at::autocast::set_autocast_enabled(at::kCUDA, (previous & 1) != 0);
  at::autocast::set_autocast_enabled(at::kCPU, (previous & 2) != 0);
}

// The autocast dtype of `cuda ? CUDA : CPU` on this thread is bfloat16 (for the tests).
extern "C" int asymflow_autocast_is_bf16(int cuda) {
  return at::autocast::get_autocast_dtype(cuda ? at::kCUDA : at::kCPU) == at::kBFloat16 ? 1 : 0;
}

// Autocast is on for `cuda ? CUDA : CPU` on this thread (for the tests).
extern "C" int asymflow_autocast_is_enabled(int cuda) {
  return at::autocast::is_autocast_enabled(cuda ? at::kCUDA : at::kCPU) ? 1 : 0;
}
