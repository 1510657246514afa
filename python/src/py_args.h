// Python arguments taken as Python objects and converted here, so that every bad one is named
// with its value as passed: a bool where an int belongs (Python's or numpy's), an int past the C++
// type (nanobind's overload matching answered both with a signature dump, or took True as 1), a
// float that float32 would round to 0 or inf (1e-300 became 0.0: greedy sampling without a word).
// TypeError for a wrong type, ValueError for a value out of range.
#pragma once

#include <nanobind/nanobind.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace gpuattn_py {

namespace nb = nanobind;

// repr() of a Python object, for messages.
inline std::string repr_of(nb::handle h) {
  return nb::cast<std::string>(nb::repr(h));
}

inline bool is_bool(nb::handle h) {
  if (PyBool_Check(h.ptr())) return true;
  const std::string type = nb::cast<std::string>(nb::str(h.type().attr("__name__")));
  return type == "bool_" || type == "bool";  // numpy's bool (numpy.bool_ / numpy.bool)
}

// True or False (Python's or numpy's bool).
inline bool bool_arg(nb::handle h, const std::string& name) {
  if (!is_bool(h)) {
    throw nb::type_error((name + " must be a bool, got " + repr_of(h)).c_str());
  }
  return PyObject_IsTrue(h.ptr()) == 1;
}

// An integer (Python int or anything with __index__: numpy's integers) in [lo, hi].
inline std::int64_t int_arg(nb::handle h, const std::string& name, std::int64_t lo,
                            std::int64_t hi) {
  if (is_bool(h) || !PyIndex_Check(h.ptr())) {
    throw nb::type_error((name + " must be an int, got " + repr_of(h) + " (" +
                          nb::cast<std::string>(nb::str(h.type().attr("__name__"))) + ")")
                             .c_str());
  }
  nb::object index = nb::steal(PyNumber_Index(h.ptr()));
  if (!index.is_valid()) throw nb::python_error();
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (v == -1 && PyErr_Occurred()) throw nb::python_error();
  if (overflow != 0 || v < lo || v > hi) {  // the value as an int (numpy's repr adds its type)
    throw nb::value_error((name + " is " + nb::cast<std::string>(nb::str(index)) +
                           ", must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]")
                              .c_str());
  }
  return v;
}

inline int int32_arg(nb::handle h, const std::string& name, std::int64_t lo = INT32_MIN,
                     std::int64_t hi = INT32_MAX) {
  return static_cast<int>(int_arg(h, name, lo, hi));
}

// An integer in [0, 2^64 - 1].
inline std::uint64_t u64_arg(nb::handle h, const std::string& name) {
  if (is_bool(h) || !PyIndex_Check(h.ptr())) {
    throw nb::type_error((name + " must be an int, got " + repr_of(h)).c_str());
  }
  nb::object index = nb::steal(PyNumber_Index(h.ptr()));
  if (!index.is_valid()) throw nb::python_error();
  const unsigned long long v = PyLong_AsUnsignedLongLong(index.ptr());
  if (v == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
    PyErr_Clear();
    throw nb::value_error(
        (name + " is " + nb::cast<std::string>(nb::str(index)) + ", must be in [0, 2^64 - 1]")
            .c_str());
  }
  return v;
}

// A real number (int or float, numpy's too; not a bool) that float32 holds: a finite value that
// would round to inf, or a nonzero one that would round to 0, is named as passed.
inline float float32_arg(nb::handle h, const std::string& name) {
  if (is_bool(h) || !(PyFloat_Check(h.ptr()) || PyLong_Check(h.ptr()) ||
                      PyObject_HasAttrString(h.ptr(), "__float__"))) {
    throw nb::type_error((name + " must be a number, got " + repr_of(h)).c_str());
  }
  const double v = PyFloat_AsDouble(h.ptr());
  if (v == -1.0 && PyErr_Occurred()) throw nb::python_error();
  const float f = static_cast<float>(v);
  if ((std::isfinite(v) && !std::isfinite(f)) || (v != 0.0 && f == 0.0f)) {
    throw nb::value_error((name + " is " + repr_of(h) + ", which float32 rounds to " +
                           (f == 0.0f ? "0" : "inf") +
                           " (float32 holds magnitudes from about 1.4e-45 to 3.4e38)")
                              .c_str());
  }
  return f;
}

// A sequence (list, tuple, 1-D numpy array) of ints in [lo, hi]; elements named name[i].
inline std::vector<std::int32_t> ids_arg(nb::handle h, const std::string& name, std::int64_t lo,
                                         std::int64_t hi) {
  if (PyUnicode_Check(h.ptr()) || PyBytes_Check(h.ptr()) || !nb::hasattr(h, "__iter__")) {
    throw nb::type_error((name + " must be a sequence of ints, got " + repr_of(h)).c_str());
  }
  std::vector<std::int32_t> out;
  std::size_t i = 0;
  for (nb::handle item : h) {
    out.push_back(
        static_cast<std::int32_t>(int_arg(item, name + "[" + std::to_string(i) + "]", lo, hi)));
    ++i;
  }
  return out;
}

}  // namespace gpuattn_py
