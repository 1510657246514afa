// Python binding of the GPT-2 engine (gpuattn/gpt2.h): `_C.Gpt2Engine` over weights on disk,
// token ids in and out as Python lists, logits out as a numpy array. Errors cross as the rest of
// the module's do (gpuattn::Error -> ValueError / NotImplementedError / RuntimeError; backend
// 'cuda' where no CUDA device is usable: RuntimeError).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gpuattn/gpt2.h"
#include "gpuattn/tokenizer.h"
#include "py_args.h"

namespace nb = nanobind;
using gpuattn_py::float32_arg;
using gpuattn_py::ids_arg;
using gpuattn_py::int32_arg;
using gpuattn_py::u64_arg;

void require_cuda_device(const std::string& what);  // module.cpp: RuntimeError when none is usable

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

// A path with a NUL would be cut there by the C library (model.safetensors\0.bin loaded
// model.safetensors): refused, as Python's open() does.
void check_path(const std::string& path, const char* name) {
  if (path.find('\0') != std::string::npos) {
    throw nb::value_error((std::string(name) + " holds a NUL character").c_str());
  }
}

// One engine serves one call at a time (its pool, graphs and staging buffers are shared by
// every call): the lock is taken after the GIL is released, so that the two never deadlock.
class PyGpt2Engine {
 public:
  PyGpt2Engine(const std::string& path, const std::string& backend, const std::string& dtype,
               nb::handle page_size, nb::handle num_pages, nb::handle max_batch,
               nb::handle max_prefill_tokens, nb::handle cuda_graphs, nb::handle num_threads,
               const std::string& linear_weights, const std::string& head_weights,
               const std::string& kv_cache, nb::handle max_cuda_graphs) {
    check_path(path, "path");
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
    o.page_size = int32_arg(page_size, "page_size");
    o.num_pages = int32_arg(num_pages, "num_pages");
    o.scheduler.max_batch = int32_arg(max_batch, "max_batch");
    o.scheduler.max_prefill_tokens = int32_arg(max_prefill_tokens, "max_prefill_tokens");
    o.cuda_graphs = gpuattn_py::bool_arg(cuda_graphs, "cuda_graphs");
    o.max_cuda_graphs = int32_arg(max_cuda_graphs, "max_cuda_graphs");
    o.num_threads = int32_arg(num_threads, "num_threads");
    if (o.backend == gpuattn::Backend::cuda) require_cuda_device("Gpt2Engine backend 'cuda'");
    nb::gil_scoped_release release;
    const gpuattn::Gpt2Weights w = gpuattn::Gpt2Weights::load(path);
    engine_ = std::make_unique<gpuattn::Gpt2Engine>(w, o);
  }

  std::vector<std::vector<std::int32_t>> generate(nb::handle prompts, nb::handle max_new_tokens,
                                                  nb::handle temperature, nb::handle top_k,
                                                  nb::handle top_p, nb::handle seed,
                                                  nb::handle eos) {
    if (PyUnicode_Check(prompts.ptr()) || !nb::hasattr(prompts, "__iter__")) {
      throw nb::type_error(
          ("prompts must be a list of token-id lists, got " + gpuattn_py::repr_of(prompts))
              .c_str());
    }
    gpuattn::GenerationRequest base;
    base.max_new_tokens = int32_arg(max_new_tokens, "max_new_tokens");
    base.sampling.temperature = float32_arg(temperature, "temperature");
    base.sampling.top_k = int32_arg(top_k, "top_k");
    base.sampling.top_p = float32_arg(top_p, "top_p");
    {  // judged as passed: 1.00000005 would round to 1
      const double p = PyFloat_AsDouble(top_p.ptr());
      if (!(p > 0.0 && p <= 1.0)) {
        throw nb::value_error(
            ("top_p is " + gpuattn_py::repr_of(top_p) + ", must be in (0, 1]").c_str());
      }
    }
    base.sampling.seed = u64_arg(seed, "seed");
    base.eos = int32_arg(eos, "eos");
    std::vector<gpuattn::GenerationRequest> reqs;
    std::size_t i = 0;
    for (nb::handle p : prompts) {
      reqs.push_back(base);
      reqs.back().prompt = ids_arg(p, "prompts[" + std::to_string(i++) + "]", INT32_MIN, INT32_MAX);
    }
    nb::gil_scoped_release release;
    const std::lock_guard<std::mutex> lock(mu_);
    return engine_->generate(reqs);
  }

  nb::ndarray<nb::numpy, float, nb::ndim<2>> forward_logits(nb::handle tokens_arg,
                                                            nb::handle prompt_arg) {
    const std::vector<std::int32_t> tokens = ids_arg(tokens_arg, "tokens", INT32_MIN, INT32_MAX);
    const int prompt = int32_arg(prompt_arg, "prompt");
    auto* logits = new std::vector<float>();
    try {
      nb::gil_scoped_release release;
      const std::lock_guard<std::mutex> lock(mu_);
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
  std::mutex mu_;
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
      .def(nb::init<const std::string&, const std::string&, const std::string&, nb::handle,
                    nb::handle, nb::handle, nb::handle, nb::handle, nb::handle, const std::string&,
                    const std::string&, const std::string&, nb::handle>(),
           nb::arg("path"), nb::arg("backend") = "auto", nb::arg("dtype") = "float16",
           nb::arg("page_size") = 16, nb::arg("num_pages") = 0, nb::arg("max_batch") = 64,
           nb::arg("max_prefill_tokens") = 8192, nb::arg("cuda_graphs") = true,
           nb::arg("num_threads") = 0, nb::arg("linear_weights") = "dense",
           nb::arg("head_weights") = "dense", nb::arg("kv_cache") = "model",
           nb::arg("max_cuda_graphs") = 64,
           "Loads `path` (model.safetensors, or a directory with it and config.json, Hugging "
           "Face layout) onto `backend` ('auto', 'cpu', 'cuda'); dtype is the CUDA storage type "
           "('float16', 'bfloat16'; the CPU computes in fp32); linear_weights 'int8' or 'int4' "
           "stores the "
           "layers' linears as weight-only int8 or int4 with group-wise scales; head_weights "
           "'int8' or 'int4' the output head (tied to the embedding) likewise; kv_cache 'e4m3' "
           "stores the KV cache as FP8 E4M3 (unit scales); max_cuda_graphs (>= 1) caps the "
           "decode steps' CUDA graphs kept at once (least recently replayed dropped first).")
      .def("generate", &PyGpt2Engine::generate, nb::arg("prompts"), nb::arg("max_new_tokens") = 16,
           nb::arg("temperature") = 0.0, nb::arg("top_k") = 0, nb::arg("top_p") = 1.0,
           nb::arg("seed") = 0, nb::arg("eos") = -1,
           "Generates for every prompt (a list of token-id lists) through the continuous-batching "
           "scheduler; returns the new tokens of each. temperature 0 is greedy; eos (a token id, "
           "-1: none) ends a request, kept in its output. One call at a time per engine (calls "
           "from several threads take turns).")
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
            check_path(path, "path");
            new (self) gpuattn::Gpt2Tokenizer(gpuattn::Gpt2Tokenizer::load(path));
          },
          nb::arg("path"))
      .def(
          "encode",
          [](const gpuattn::Gpt2Tokenizer& t, nb::str text) { return t.encode(utf8_of(text)); },
          nb::arg("text"), "The token ids of `text` (a str).")
      .def(
          "decode",
          [](const gpuattn::Gpt2Tokenizer& t, nb::handle ids) {
            const std::string b = t.decode(ids_arg(ids, "ids", INT32_MIN, INT32_MAX));
            // A cut inside a character decodes as U+FFFD, as Hugging Face's decode does.
            return nb::steal<nb::str>(
                PyUnicode_DecodeUTF8(b.data(), static_cast<Py_ssize_t>(b.size()), "replace"));
          },
          nb::arg("ids"), "The text of `ids`; bytes that are no UTF-8 character read U+FFFD.")
      .def(
          "decode_bytes",
          [](const gpuattn::Gpt2Tokenizer& t, nb::handle ids) {
            const std::string b = t.decode(ids_arg(ids, "ids", INT32_MIN, INT32_MAX));
            return nb::bytes(b.data(), b.size());
          },
          nb::arg("ids"), "The bytes of `ids`, as they are.")
      .def_static(
          "pretokenize",
          [](nb::str text) { return gpuattn::Gpt2Tokenizer::pretokenize(utf8_of(text)); },
          nb::arg("text"), "GPT-2's pre-tokens of `text` (the split encode starts from).")
      .def_prop_ro("vocab_size", &gpuattn::Gpt2Tokenizer::vocab_size);
}
