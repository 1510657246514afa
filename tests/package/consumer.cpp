// Uses only the installed public headers: attention on host tensors vs the fp64 reference.
#include <gpuattn/attention.h>
#include <gpuattn/reference.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

int main() {
  const int B = 1, S = 33, H = 2, D = 64;
  std::vector<float> q(B * S * H * D), k(q.size()), v(q.size()), out(q.size(), NAN);
  std::mt19937 rng(7);
  std::normal_distribution<float> n;
  for (auto* t : {&q, &k, &v})
    for (float& x : *t) x = n(rng);
  using gpuattn::Device;
  using gpuattn::DType;
  using gpuattn::TensorView;
  gpuattn::AttentionArgs a;
  a.q = TensorView::contiguous(q.data(), DType::f32, Device::cpu, {B, S, H, D});
  a.k = TensorView::contiguous(k.data(), DType::f32, Device::cpu, {B, S, H, D});
  a.v = TensorView::contiguous(v.data(), DType::f32, Device::cpu, {B, S, H, D});
  a.out = TensorView::contiguous(out.data(), DType::f32, Device::cpu, {B, S, H, D});
  a.causal = true;
  gpuattn::attention_forward(a);
  const gpuattn::ReferenceResult ref = gpuattn::reference_attention(a);
  double err = 0;
  for (std::size_t i = 0; i < out.size(); ++i) err = std::fmax(err, std::fabs(out[i] - ref.out[i]));
  std::printf("consumer: max abs error %.3g\n", err);
  return err < 1e-4 ? 0 : 1;
}
