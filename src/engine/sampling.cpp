#include "engine/sampling.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace gpuattn::engine {

std::int32_t sample_row_host(const float* logits, int V, const SampleRow& row) {
  float lmax = -INFINITY;
  for (int i = 0; i < V; ++i) {
    if (std::isnan(logits[i]) || logits[i] == INFINITY) return kBadLogits;
    lmax = std::max(lmax, logits[i]);
  }
  if (lmax == -INFINITY) return kBadLogits;
  if (row.temperature <= 0.0f) {
    int best = 0;
    for (int i = 1; i < V; ++i) {
      if (logits[i] > logits[best]) best = i;
    }
    return best;
  }
  std::vector<float> z(static_cast<std::size_t>(V));
  for (int i = 0; i < V; ++i) z[i] = (logits[i] - lmax) / row.temperature;
  // Threshold of the top_k set: the k-th largest z (ties at it stay in).
  float threshold = -INFINITY;
  if (row.top_k > 0 && row.top_k < V) {
    std::vector<float> s(z);
    std::nth_element(s.begin(), s.begin() + (row.top_k - 1), s.end(), std::greater<float>());
    threshold = s[static_cast<std::size_t>(row.top_k - 1)];
  }
  if (row.top_p < 1.0f) {
    std::vector<float> kept;
    for (float v : z) {
      if (v >= threshold) kept.push_back(v);
    }
    std::sort(kept.begin(), kept.end(), std::greater<float>());
    const float zmax = kept.front();
    float total = 0.0f;
    for (float v : kept) total += std::exp(v - zmax);
    // The largest value t whose mass {z >= t} reaches top_p: walk down the sorted values, a run
    // of ties at a time.
    float mass = 0.0f;
    for (std::size_t i = 0; i < kept.size();) {
      std::size_t j = i;
      while (j < kept.size() && kept[j] == kept[i]) mass += std::exp(kept[j++] - zmax);
      if (mass >= row.top_p * total) {
        threshold = kept[i];
        break;
      }
      i = j;
    }
  }
  int best = -1;
  float best_score = 0.0f;
  for (int i = 0; i < V; ++i) {
    if (!(z[i] >= threshold)) continue;
    const float score = z[i] - std::log(-std::log(uniform01(row, i)));
    if (best < 0 || score > best_score) {
      best = i;
      best_score = score;
    }
  }
  return best;
}

}  // namespace gpuattn::engine
