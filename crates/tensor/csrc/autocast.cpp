// The autocast dtype of CUDA, which tch does not expose: tch's `autocast` turns CUDA autocast on
// with libtorch's default dtype (fp16); asymflow's `precision = "bf16"` needs bfloat16. The
// dtype is thread-local in libtorch, so it is set on the thread that runs the forward pass.
#include <ATen/autocast_mode.h>

extern "C" void asymflow_autocast_cuda_bf16(void) {
  at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
}

extern "C" int asymflow_autocast_cuda_is_bf16(void) {
  return at::autocast::get_autocast_dtype(at::kCUDA) == at::kBFloat16 ? 1 : 0;
}
