// Python binding of the GPT-2 engine (gpuattn/gpt2.h): `_C.Gpt2Engine` over weights on disk,
// token ids in and out as Python lists, logits out as a numpy array. Errors cross as the rest of
// the module's do (gpuattn::Error -> ValueError / NotImplementedError / RuntimeError).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <string>
#include <vector>

#include "gpuattn/gpt2.h"
#include "gpuattn/tokenizer.h"

namespace nb = nanobind;

namespace {

gpuattn::Backend engine_backend(const std::string& s) {
  if (s == "auto") return gpuattn::Backend::automatic;
  if (s == "cpu") return gpuattn::Backend::cpu;
  if (s == "cuda") return gpuattn::Backend::cuda;
  throw gpuattn::Error(gpuattn::ErrorCode::invalid_argument,
                       "backend '" + s + "' is not one of 'auto', 'cpu', 'cuda'");
}

// `what` names the argument (linear_weights, head_weights) in the error.
gpuattn::LinearWeights engine_linear_weights(const std::string& s, const char* what) {
  if (s == "dense") return gpuattn::LinearWeights::dense;
  if (s == "int8") return gpuattn::LinearWeights::int8;
  if (s == "int4") return gpuattn::LinearWeights::int4;
  throw gpuattn::Error(gpuattn::ErrorCode::invalid_argument,
                       std::string(what) + " '" + s + "' is not one of 'dense', 'int8', 'int4'");
}

gpuattn::DType engine_dtype(const std::string& s) {
  if (s == "float16" || s == "f16") return gpuattn::DType::f16;
  if (s == "bfloat16" || s == "bf16") return gpuattn::DType::bf16;
  throw gpuattn::Error(gpuattn::ErrorCode::invalid_argument,
                       "dtype '" + s + "' is not one of 'float16', 'bfloat16'");
}

class PyGpt2Engine {
 public:
  PyGpt2Engine(const std::string& path, const std::string& backend, const std::string& dtype,
               int page_size, int num_pages, int max_batch, int max_prefill_tokens,
               bool cuda_graphs, int num_threads, const std::string& linear_weights,
               const std::string& head_weights, const std::string& kv_cache) {
    gpuattn::EngineOptions o;
    if (kv_cache != "model" && kv_cache != "e4m3") {
      throw gpuattn::Error(gpuattn::ErrorCode::invalid_argument,
                           "kv_cache '" + kv_cache + "' is not one of 'model', 'e4m3'");
    }
    o.kv_cache = kv_cache == "e4m3" ? gpuattn::KvCache::e4m3 : gpuattn::KvCache::model;
    o.linear_weights = engine_linear_weights(linear_weights, "linear_weights");
    o.head_weights = engine_linear_weights(head_weights, "head_weights");
    o.backend = engine_backend(backend);
    o.dtype = engine_dtype(dtype);
    o.page_size = page_size;
    o.num_pages = num_pages;
    o.scheduler.max_batch = max_batch;
    o.scheduler.max_prefill_tokens = max_prefill_tokens;
    o.cuda_graphs = cuda_graphs;
    o.num_threads = num_threads;
    nb::gil_scoped_release release;
    const gpuattn::Gpt2Weights w = gpuattn::Gpt2Weights::load(path);
    engine_ = std::make_unique<gpuattn::Gpt2Engine>(w, o);
  }

  std::vector<std::vector<std::int32_t>> generate(
      const std::vector<std::vector<std::int32_t>>& prompts, int max_new_tokens, float temperature,
      int top_k, float top_p, std::uint64_t seed, std::int32_t eos) {
    std::vector<gpuattn::GenerationRequest> reqs(prompts.size());
    for (std::size_t i = 0; i < prompts.size(); ++i) {
      reqs[i].prompt = prompts[i];
      reqs[i].max_new_tokens = max_new_tokens;
      reqs[i].sampling.temperature = temperature;
      reqs[i].sampling.top_k = top_k;
      reqs[i].sampling.top_p = top_p;
      reqs[i].sampling.seed = seed;
      reqs[i].eos = eos;
    }
    nb::gil_scoped_release release;
    return engine_->generate(reqs);
  }

  nb::ndarray<nb::numpy, float, nb::ndim<2>> forward_logits(const std::vector<std::int32_t>& tokens,
                                                            int prompt) {
    auto* logits = new std::vector<float>();
    try {
      nb::gil_scoped_release release;
      *logits = engine_->forward_logits(tokens, prompt);
    } catch (...) {
      delete logits;
      throw;
    }
    nb::capsule owner(logits, [](void* p) noexcept { delete static_cast<std::vector<float>*>(p); });
    const std::size_t shape[2] = {tokens.size(),
                                  static_cast<std::size_t>(engine_->config().vocab_size)};
    return nb::ndarray<nb::numpy, float, nb::ndim<2>>(logits->data(), 2, shape, owner);
  }

  nb::dict config() const {
    const gpuattn::Gpt2Config& c = engine_->config();
    nb::dict d;
    d["n_layer"] = c.n_layer;
    d["n_head"] = c.n_head;
    d["n_embd"] = c.n_embd;
    d["n_positions"] = c.n_positions;
    d["vocab_size"] = c.vocab_size;
    d["layer_norm_epsilon"] = c.layer_norm_epsilon;
    return d;
  }

  std::string backend() const {
    return engine_->backend() == gpuattn::Backend::cuda ? "cuda" : "cpu";
  }

 private:
  std::unique_ptr<gpuattn::Gpt2Engine> engine_;
};

// A str's UTF-8 (valid while the str lives): a lone surrogate raises Python's
// UnicodeEncodeError, which names its position.
std::string_view utf8_of(const nb::str& text) {
  Py_ssize_t n = 0;
  const char* p = PyUnicode_AsUTF8AndSize(text.ptr(), &n);
  if (p == nullptr) throw nb::python_error();
  return std::string_view(p, static_cast<std::size_t>(n));
}

}  // namespace

void bind_engine(nb::module_& m) {
  nb::class_<PyGpt2Engine>(m, "Gpt2Engine",
                           "The GPT-2 engine (gpuattn::Gpt2Engine) over weights on disk.")
      .def(nb::init<const std::string&, const std::string&, const std::string&, int, int, int, int,
                    bool, int, const std::string&, const std::string&, const std::string&>(),
           nb::arg("path"), nb::arg("backend") = "auto", nb::arg("dtype") = "float16",
           nb::arg("page_size") = 16, nb::arg("num_pages") = 0, nb::arg("max_batch") = 64,
           nb::arg("max_prefill_tokens") = 8192, nb::arg("cuda_graphs") = true,
           nb::arg("num_threads") = 0, nb::arg("linear_weights") = "dense",
           nb::arg("head_weights") = "dense", nb::arg("kv_cache") = "model",
           "Loads `path` (model.safetensors, or a directory with it and config.json, Hugging "
           "Face layout) onto `backend` ('auto', 'cpu', 'cuda'); dtype is the CUDA storage type "
           "('float16', 'bfloat16'; the CPU computes in fp32); linear_weights 'int8' or 'int4' "
           "stores the "
           "layers' linears as weight-only int8 or int4 with group-wise scales; head_weights "
           "'int8' or 'int4' the output head (tied to the embedding) likewise; kv_cache 'e4m3' "
           "stores the KV cache as FP8 E4M3 (unit scales).")
      .def("generate", &PyGpt2Engine::generate, nb::arg("prompts"), nb::arg("max_new_tokens") = 16,
           nb::arg("temperature") = 0.0f, nb::arg("top_k") = 0, nb::arg("top_p") = 1.0f,
           nb::arg("seed") = 0, nb::arg("eos") = -1,
           "Generates for every prompt (a list of token-id lists) through the continuous-batching "
           "scheduler; returns the new tokens of each. temperature 0 is greedy.")
      .def("forward_logits", &PyGpt2Engine::forward_logits, nb::arg("tokens"),
           nb::arg("prompt") = 0,
           "The fp32 logits [len(tokens), vocab_size] of one sequence, as a numpy array. With "
           "prompt (1 to len(tokens)), the tokens after the first `prompt` run as decode steps "
           "through the KV cache, as generate() runs them.")
      .def_prop_ro("config", &PyGpt2Engine::config)
      .def_prop_ro("backend", &PyGpt2Engine::backend);

  nb::class_<gpuattn::Gpt2Tokenizer>(
      m, "Gpt2Tokenizer",
      "GPT-2's byte-level BPE (gpuattn::Gpt2Tokenizer) from a directory's vocab.json and "
      "merges.txt (a Hugging Face GPT-2 checkpoint).")
      .def(
          "__init__",
          [](gpuattn::Gpt2Tokenizer* self, const std::string& path) {
            new (self) gpuattn::Gpt2Tokenizer(gpuattn::Gpt2Tokenizer::load(path));
          },
          nb::arg("path"))
      .def(
          "encode",
          [](const gpuattn::Gpt2Tokenizer& t, nb::str text) { return t.encode(utf8_of(text)); },
          nb::arg("text"), "The token ids of `text` (a str).")
      .def(
          "decode",
          [](const gpuattn::Gpt2Tokenizer& t, const std::vector<std::int32_t>& ids) {
            const std::string b = t.decode(ids);
            // A cut inside a character decodes as U+FFFD, as Hugging Face's decode does.
            return nb::steal<nb::str>(
                PyUnicode_DecodeUTF8(b.data(), static_cast<Py_ssize_t>(b.size()), "replace"));
          },
          nb::arg("ids"), "The text of `ids`; bytes that are no UTF-8 character read U+FFFD.")
      .def(
          "decode_bytes",
          [](const gpuattn::Gpt2Tokenizer& t, const std::vector<std::int32_t>& ids) {
            const std::string b = t.decode(ids);
            return nb::bytes(b.data(), b.size());
          },
          nb::arg("ids"), "The bytes of `ids`, as they are.")
      .def_static(
          "pretokenize",
          [](nb::str text) { return gpuattn::Gpt2Tokenizer::pretokenize(utf8_of(text)); },
          nb::arg("text"), "GPT-2's pre-tokens of `text` (the split encode starts from).")
      .def_prop_ro("vocab_size", &gpuattn::Gpt2Tokenizer::vocab_size);
}
