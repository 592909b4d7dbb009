// The Python module `kplab` (pybind11): evaluate documents and predictions held in Python lists and
// dicts, read the run store, and register any Python callable (list of strings -> vectors) as an
// embedding model that fills kplab's phrase cache and drives the semantic metrics. See docs/python.md.
//
// Threads and the GIL: evaluate() releases the GIL while kplab works (corpus building, Lua scoring,
// storing); the plan phase may call a registered Python embedder from kplab's own threads, and
// PyEmbedder::Embed takes the GIL for the call. Python objects are touched only with the GIL held.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compare.h"
#include "eval_store.h"
#include "evaluate.h"
#include "exit_code.h"
#include "kplab/corpus.h"
#include "kplab/embed.h"
#include "kplab/homog.h"
#include "kplab/homog_corpus.h"
#include "kplab/io.h"
#include "kplab/io_memory.h"
#include "kplab/json.h"
#include "kplab/profile.h"
#include "kplab/registry.h"
#include "kplab/safe_text.h"
#include "kplab/store.h"
#include "kplab/text.h"
#include "merge.h"
#include "table.h"

namespace py = pybind11;

namespace kplab::python {
namespace {

// Exception classes, created in module init: Error(Exception); InputError(Error, ValueError) for bad
// input, unknown names and options; ScriptError(Error) for metric plugins that fail; StoreError(Error)
// for the run store.
PyObject* g_error = nullptr;
PyObject* g_input_error = nullptr;
PyObject* g_script_error = nullptr;
PyObject* g_store_error = nullptr;
PyObject* g_usage_error = nullptr;     // UsageError(InputError): what InputError was raised for before
PyObject* g_limit_error = nullptr;     // LimitError(ScriptError): the command line exits 3 for a limit too
PyObject* g_internal_error = nullptr;  // InternalError(Error)

// The exception class of an error of this kind: host/engine/exit_code.h's table, by class name.
PyObject* ClassFor(ErrorKind kind) {
  const std::string name = host::FormFor(kind).python_class;
  for (const auto& [n, cls] : {std::pair{"UsageError", &g_usage_error}, {"InputError", &g_input_error},
                               {"ScriptError", &g_script_error}, {"LimitError", &g_limit_error},
                               {"StoreError", &g_store_error}, {"InternalError", &g_internal_error}}) {
    if (name == n) return *cls;
  }
  return g_error;
}

[[noreturn]] void Raise(PyObject* type, const std::string& message) {
  PyErr_SetString(type, message.c_str());
  throw py::error_already_set();
}

// An int argument as a 64-bit integer; anything else -- a bool, a float, an int beyond 64 bits -- is
// InputError "WHAT: REPR (expected EXPECTED)", not pybind11's cast error.
std::int64_t IntArg(const py::handle& h, const std::string& what, const std::string& expected) {
  auto fail = [&] {
    Raise(g_input_error, fmt::format("{}: {} (expected {})", what, py::repr(h).cast<std::string>(), expected));
  };
  if (!py::isinstance<py::int_>(h) || py::isinstance<py::bool_>(h)) fail();
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
  if (v == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    fail();
  }
  if (overflow != 0) fail();
  return v;
}

// Set when a Python embedder's call raised KeyboardInterrupt (or SystemExit) on a kplab thread: the call
// that ran it raises it again once kplab's work has stopped (RaisePendingInterrupt), instead of reporting
// an embedding error: Ctrl-C must reach the program.
std::atomic<bool> g_interrupted{false};

void RaisePendingInterrupt() {
  if (g_interrupted.exchange(false)) {
    PyErr_SetNone(PyExc_KeyboardInterrupt);
    throw py::error_already_set();
  }
}

bool NumpyAvailable() {
  static const bool available = [] {
    try {
      py::module_::import("numpy");
      return true;
    } catch (py::error_already_set&) {
      return false;
    }
  }();
  return available;
}

std::string TypeName(const py::handle& h) { return py::str(py::type::handle_of(h).attr("__name__")); }

// ---------------------------------------------------------------------------------------------------
// Python embedders.

// A Python callable as an Embedder. Its fingerprint is
//   SHA-256("kplab-python-embedder/1\n" + name + "\n" + version + "\n" + dims)
// so vectors cached under it are reused by later processes that register the same name, version and
// dimension; the user changes `version` whenever the callable would return different vectors.
class PyEmbedder final : public Embedder {
 public:
  PyEmbedder(std::string name, py::object fn, int dims, std::string fingerprint)
      : name_(std::move(name)), fn_(std::move(fn)), dims_(dims), fingerprint_(std::move(fingerprint)) {}

  ~PyEmbedder() override {
    // The last reference may go away on a kplab thread (GIL not held) or after the interpreter ended.
    if (Py_IsInitialized()) {
      py::gil_scoped_acquire gil;
      fn_ = py::object();
    } else {
      fn_.release();
    }
  }

  std::string_view backend() const override { return "python"; }
  int dims() const override { return dims_; }
  const std::string& fingerprint() const override { return fingerprint_; }

  Status Embed(const std::vector<std::string_view>& phrases, float* out, std::uint8_t* has) const override {
    py::gil_scoped_acquire gil;
    try {
      py::list batch(phrases.size());
      for (std::size_t i = 0; i < phrases.size(); ++i) {
        batch[i] = py::str(phrases[i].data(), phrases[i].size());
      }
      py::object result = fn_(batch);
      std::string err = Fill(result, phrases.size(), out, has);
      if (err.empty()) err = NonFinite(phrases.size(), out, has);
      if (!err.empty()) return Error::Script(fmt::format("embedder '{}': {}", name_, err));
      return Status::Ok();
    } catch (py::error_already_set& e) {
      if (e.matches(PyExc_KeyboardInterrupt) || e.matches(PyExc_SystemExit)) {
        g_interrupted = true;
        return Error::Script(fmt::format("embedder '{}' was interrupted", name_));
      }
      return Error::Script(fmt::format("embedder '{}' raised {}", name_, e.what()));
    } catch (const std::exception& e) {
      return Error::Script(fmt::format("embedder '{}': {}", name_, e.what()));
    }
  }

  // The first value of a row that is not finite, as an error text ("" when there is none). The callable
  // returned it, so it is the embedder's failure (a script error), where the phrase cache would call a
  // model's non-finite vector bad input (design note 52).
  std::string NonFinite(std::size_t n, const float* out, const std::uint8_t* has) const {
    for (std::size_t i = 0; i < n; ++i) {
      if (!has[i]) continue;
      for (int j = 0; j < dims_; ++j) {
        const float x = out[i * static_cast<std::size_t>(dims_) + j];
        if (!std::isfinite(x)) return fmt::format("row {} item {} is {} (expected a finite number)", i, j, x);
      }
    }
    return "";
  }

  // Converts the callable's result for n phrases into rows of out. Accepted: a 2-D numpy array (any
  // real dtype, any strides) or anything numpy turns into one (torch tensors on the CPU, lists), or
  // without numpy a sequence of n rows; a row may be None (the phrase has no vector). Returns an error
  // text, "" when fine.
  std::string Fill(const py::object& result, std::size_t n, float* out, std::uint8_t* has) const {
    const std::string want = fmt::format("{} rows of {} numbers, one per phrase", n, dims_);
    const bool is_list = py::isinstance<py::list>(result) || py::isinstance<py::tuple>(result);
    if (!is_list && NumpyAvailable()) {
      auto arr = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(result);
      if (!arr) {
        PyErr_Clear();
        return fmt::format("returned a {} that numpy cannot read as numbers (expected {})", TypeName(result), want);
      }
      if (arr.ndim() != 2 || static_cast<std::size_t>(arr.shape(0)) != n || arr.shape(1) != dims_) {
        std::string shape;
        for (py::ssize_t d = 0; d < arr.ndim(); ++d) shape += fmt::format("{}{}", d ? ", " : "", arr.shape(d));
        return fmt::format("returned an array of shape ({}) for {} phrases (expected ({}, {}))", shape, n, n, dims_);
      }
      std::memcpy(out, arr.data(), n * static_cast<std::size_t>(dims_) * sizeof(float));
      std::memset(has, 1, n);
      return "";
    }
    if (!py::isinstance<py::sequence>(result) || py::isinstance<py::str>(result)) {
      return fmt::format("returned a {} (expected {})", TypeName(result), want);
    }
    py::sequence rows = result.cast<py::sequence>();
    if (rows.size() != n) return fmt::format("returned {} rows for {} phrases (expected {})", rows.size(), n, want);
    for (std::size_t i = 0; i < n; ++i) {
      py::object row = rows[i];
      float* dst = out + i * static_cast<std::size_t>(dims_);
      if (row.is_none()) {
        std::fill(dst, dst + dims_, 0.0f);
        has[i] = 0;
        continue;
      }
      if (!py::isinstance<py::sequence>(row) && NumpyAvailable()) {
        row = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(row);
        if (!row) PyErr_Clear();
      }
      if (!row || !py::isinstance<py::sequence>(row)) {
        return fmt::format("row {} is a {} (expected {} numbers or None)", i, TypeName(rows[i]), dims_);
      }
      py::sequence values = row.cast<py::sequence>();
      if (static_cast<int>(values.size()) != dims_) {
        return fmt::format("row {} has {} numbers (expected {})", i, values.size(), dims_);
      }
      for (int j = 0; j < dims_; ++j) {
        py::object v = values[static_cast<std::size_t>(j)];
        double x = PyFloat_AsDouble(v.ptr());
        if (x == -1.0 && PyErr_Occurred()) {
          PyErr_Clear();
          return fmt::format("row {} item {} is a {} (expected a number)", i, j, TypeName(v));
        }
        dst[j] = static_cast<float>(x);
      }
      has[i] = 1;
    }
    return "";
  }

 private:
  std::string name_;
  py::object fn_;
  int dims_;
  std::string fingerprint_;
};

// Dimension of a callable's vectors: it embeds one probe phrase.
int ProbeDims(const std::string& name, const py::object& fn) {
  py::list probe;
  probe.append("keyphrase");
  py::object r = fn(probe);
  if (NumpyAvailable() && !py::isinstance<py::list>(r) && !py::isinstance<py::tuple>(r)) {
    auto arr = py::array::ensure(r);
    if (arr && arr.ndim() == 2 && arr.shape(0) == 1) return static_cast<int>(arr.shape(1));
    PyErr_Clear();
  } else if (py::isinstance<py::sequence>(r) && py::len(r) == 1) {
    py::object row = r.cast<py::sequence>()[0];
    if (py::isinstance<py::sequence>(row)) return static_cast<int>(py::len(row));
  }
  Raise(g_input_error, fmt::format("register_embedder('{}'): the callable returned a {} for one phrase "
                                   "(expected one row of numbers; or pass dims=)",
                                   name, TypeName(r)));
}

void RegisterEmbedder(const std::string& name, py::object fn, std::optional<int> dims,
                      const std::string& version) {
  if (!PyCallable_Check(fn.ptr())) {
    Raise(PyExc_TypeError, fmt::format("register_embedder('{}'): a {} is not callable (expected a function "
                                       "mapping a list of strings to vectors)",
                                       name, TypeName(fn)));
  }
  const int d = dims ? *dims : ProbeDims(name, fn);
  if (d <= 0) Raise(g_input_error, fmt::format("register_embedder('{}'): dims={} (expected a positive number)", name, d));
  ModelInfo info;
  info.name = name;
  info.backend = "python";
  info.dims = d;
  info.config_json = fmt::format("{{\"dims\":{},\"version\":{}}}", d, kplab::JsonString(version));
  info.fingerprint = Sha256Hex(fmt::format("kplab-python-embedder/1\n{}\n{}\n{}", name, version, d));
  info.weights_sha256 = info.fingerprint;
  info.source = fmt::format("python: {}", std::string(py::repr(fn)));
  auto embedder = std::make_shared<PyEmbedder>(name, std::move(fn), d, info.fingerprint);
  Status st = RegisterRuntimeModel(info, std::move(embedder));
  if (!st.ok()) Raise(ClassFor(st.kind()), "register_embedder: " + st.message());
}

py::dict ModelDict(const ModelInfo& m) {
  py::dict d;
  d["name"] = m.name;
  d["backend"] = m.backend;
  d["fingerprint"] = m.fingerprint;
  d["dims"] = m.dims;
  d["config"] = m.config_json;
  d["source"] = m.source;
  return d;
}

// ---------------------------------------------------------------------------------------------------
// Input conversion.

std::string Str(const py::handle& h, const std::string& where) {
  if (py::isinstance<py::str>(h)) {
    Py_ssize_t size = 0;
    const char* utf8 = PyUnicode_AsUTF8AndSize(h.ptr(), &size);
    if (utf8 == nullptr) {  // a lone surrogate (e.g. from surrogateescape decoding)
      PyErr_Clear();
      Raise(g_input_error, fmt::format("{}: a string that is not valid Unicode (invalid UTF-8: expected UTF-8 text)", where));
    }
    return std::string(utf8, static_cast<std::size_t>(size));
  }
  Raise(g_input_error, fmt::format("{}: a {} (expected a string)", where, TypeName(h)));
}

std::string IdStr(const py::handle& h, const std::string& where) {
  if (py::isinstance<py::str>(h)) return Str(h, where);
  if (py::isinstance<py::int_>(h) && !py::isinstance<py::bool_>(h)) return py::str(h).cast<std::string>();
  Raise(g_input_error, fmt::format("{}: a {} (expected a string or an integer id)", where, TypeName(h)));
}

bool IsStrSequence(const py::handle& h) {
  return (py::isinstance<py::list>(h) || py::isinstance<py::tuple>(h));
}

// References: "a;b;c" (split on ';' as the line formats), [str, ...], or [[alternative, ...], ...].
void AddRefs(const py::handle& v, const std::string& where, RawDoc& doc) {
  if (py::isinstance<py::str>(v)) {
    const std::string s = Str(v, where);
    std::size_t start = 0;
    for (;;) {
      const std::size_t semi = s.find(';', start);
      doc.refs.push_back({s.substr(start, semi == std::string::npos ? std::string::npos : semi - start)});
      if (semi == std::string::npos) break;
      start = semi + 1;
    }
    return;
  }
  if (!IsStrSequence(v)) {
    Raise(g_input_error, fmt::format("{}: a {} (expected a ';'-joined string or a list of strings or of lists "
                                     "of alternatives)",
                                     where, TypeName(v)));
  }
  std::size_t i = 0;
  for (py::handle item : v) {
    const std::string w = fmt::format("{}[{}]", where, i++);
    if (py::isinstance<py::str>(item)) {
      doc.refs.push_back({Str(item, w)});
    } else if (IsStrSequence(item)) {
      std::vector<std::string> alts;
      std::size_t k = 0;
      for (py::handle a : item) alts.push_back(Str(a, fmt::format("{}[{}]", w, k++)));
      doc.refs.push_back(std::move(alts));
    } else {
      Raise(g_input_error, fmt::format("{}: a {} (expected a string or a list of alternatives)", w, TypeName(item)));
    }
  }
}

// Splits a pre-tokenized source "title [sep] body" (KPEval) or "title <eos> body" (Meng 2017).
void SplitSource(const std::string& src, RawDoc& doc) {
  for (const char* sep : {"[sep]", "<eos>"}) {
    std::string lower = src;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const std::size_t at = lower.find(sep);
    if (at == std::string::npos) continue;
    doc.title = src.substr(0, at);
    doc.body = src.substr(at + std::strlen(sep));
    doc.separator = src.substr(at, std::strlen(sep));
    return;
  }
  doc.body = src;
}

constexpr const char* kTextKeys[] = {"text", "abstract", "body", "document", "context"};
constexpr const char* kSourceKeys[] = {"source", "src"};
constexpr const char* kRefKeys[] = {"keyphrases", "keywords", "keyword", "target", "trg", "references", "refs"};

RawDoc ConvertDoc(const py::handle& h, std::size_t i, std::optional<bool> pretokenized) {
  const std::string where = fmt::format("documents[{}]", i);
  RawDoc doc;
  if (!py::isinstance<py::dict>(h)) {
    Raise(g_input_error, fmt::format("{}: a {} (expected a dict with \"id\", \"title\", \"abstract\" or \"text\" and "
                                     "\"keyphrases\")",
                                     where, TypeName(h)));
  }
  py::dict d = py::reinterpret_borrow<py::dict>(h);
  for (const char* k : {"id", "doc_id"}) {
    if (d.contains(k) && !d[k].is_none()) {
      doc.id = IdStr(d[k], fmt::format("{}[\"{}\"]", where, k));
      break;
    }
  }
  bool have_text = false, tokens = false;
  for (const char* k : kSourceKeys) {
    if (!d.contains(k)) continue;
    SplitSource(Str(d[k], fmt::format("{}[\"{}\"]", where, k)), doc);
    have_text = tokens = true;
    break;
  }
  if (!have_text) {
    for (const char* k : kTextKeys) {
      if (!d.contains(k)) continue;
      py::handle v = d[k];
      if (IsStrSequence(v)) {  // a token list (DeepKPG / Hugging Face midas datasets)
        std::size_t t = 0;
        for (py::handle tok : v) {
          doc.body += (t ? " " : "") + Str(tok, fmt::format("{}[\"{}\"][{}]", where, k, t));
          ++t;
        }
        tokens = true;
      } else {
        doc.body = Str(v, fmt::format("{}[\"{}\"]", where, k));
      }
      have_text = true;
      break;
    }
    if (d.contains("title")) {
      doc.title = Str(d["title"], where + "[\"title\"]");
      have_text = true;
    }
  }
  doc.has_text = have_text;
  doc.pretokenized = have_text && (pretokenized ? *pretokenized : tokens);
  bool have_refs = false;
  for (const char* k : kRefKeys) {
    if (!d.contains(k)) continue;
    AddRefs(d[k], fmt::format("{}[\"{}\"]", where, k), doc);
    have_refs = true;
    break;
  }
  if (!have_refs) {
    for (const char* k : {"extractive_keyphrases", "abstractive_keyphrases"}) {
      if (!d.contains(k)) continue;
      AddRefs(d[k], fmt::format("{}[\"{}\"]", where, k), doc);
      have_refs = true;
    }
  }
  if (!have_refs) {
    Raise(g_input_error, fmt::format("{}: no reference keyphrases (expected a field \"keyphrases\", \"keywords\", "
                                     "\"target\" or \"extractive_keyphrases\"/\"abstractive_keyphrases\")",
                                     where));
  }
  return doc;
}

// One system output: "a;b;c" (a prediction line, '<peos>' allowed), or [phrase | (phrase, score), ...].
RawPrediction ConvertPrediction(const py::handle& v, const std::string& where) {
  RawPrediction p;
  if (py::isinstance<py::str>(v)) {
    const std::string s = Str(v, where);
    std::size_t start = 0;
    for (;;) {
      const std::size_t semi = s.find(';', start);
      p.phrases.push_back(s.substr(start, semi == std::string::npos ? std::string::npos : semi - start));
      if (semi == std::string::npos) break;
      start = semi + 1;
    }
    p.from_line = true;
    return p;
  }
  if (!IsStrSequence(v) && !(NumpyAvailable() && py::isinstance<py::array>(v))) {
    Raise(g_input_error, fmt::format("{}: a {} (expected a ranked list of strings or of (phrase, score) pairs, or a "
                                     "';'-joined string)",
                                     where, TypeName(v)));
  }
  std::size_t i = 0;
  std::vector<bool> scored;
  for (py::handle item : v) {
    const std::string w = fmt::format("{}[{}]", where, i++);
    if (py::isinstance<py::str>(item)) {
      p.phrases.push_back(Str(item, w));
      scored.push_back(false);
    } else if (IsStrSequence(item) && py::len(item) == 2) {
      py::sequence pair = py::reinterpret_borrow<py::sequence>(item);
      p.phrases.push_back(Str(pair[0], w + "[0]"));
      double s = PyFloat_AsDouble(pair[1].ptr());
      if (s == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        Raise(g_input_error, fmt::format("{}[1]: a {} (expected a number)", w, TypeName(pair[1])));
      }
      p.scores.push_back(s);
      scored.push_back(true);
    } else {
      Raise(g_input_error, fmt::format("{}: a {} (expected a string or a (phrase, score) pair)", w, TypeName(item)));
    }
    if (scored.back() != scored.front()) {
      Raise(g_input_error, fmt::format("{}: {} (expected scores for all predictions of a list or for none)", w,
                                       scored.back() ? "has a score" : "has no score"));
    }
  }
  return p;
}

// A parameter value as the command line's text: a scalar as itself, a flat list joined with ',' (a
// cut-off list [5, 10, "M"] is "5,10,M"). Anything else -- a nested list, a dict -- becomes its repr,
// which no declared type accepts, so the plugin refuses it with the parameter's expected type instead of
// running with a flattened value ([[1]] is not ks = 1).
std::string ParamValue(const py::handle& v, bool nested = false) {
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>() ? "true" : "false";
  if (py::isinstance<py::str>(v)) return Str(v, "params value");
  if (IsStrSequence(v)) {
    if (nested) return py::repr(v).cast<std::string>();
    for (py::handle x : v) {
      if (IsStrSequence(x) || py::isinstance<py::dict>(x)) return py::repr(v).cast<std::string>();
    }
    std::string out;
    for (py::handle x : v) out += (out.empty() ? "" : ",") + ParamValue(x, true);
    return out;
  }
  if (py::isinstance<py::dict>(v)) return py::repr(v).cast<std::string>();
  return py::str(v).cast<std::string>();
}

// params: {"semrp": {"k": 2}} or {"semrp.k": 2}.
std::map<std::string, std::map<std::string, std::string>> ConvertParams(const py::object& params) {
  std::map<std::string, std::map<std::string, std::string>> out;
  if (params.is_none()) return out;
  if (!py::isinstance<py::dict>(params)) {
    Raise(g_input_error, fmt::format("params: a {} (expected a dict such as {{\"semrp\": {{\"k\": 2}}}} or "
                                     "{{\"semrp.k\": 2}})",
                                     TypeName(params)));
  }
  for (auto [k, v] : params.cast<py::dict>()) {
    const std::string key = Str(k, "params key");
    // {"semrp": {"k": 2}} and {"semrp.k": 2} together name semrp.k twice: refused, as a repeated --param.
    Status st = Status::Ok();
    if (py::isinstance<py::dict>(v)) {
      for (auto [pk, pv] : v.cast<py::dict>()) {
        st = host::AddParam(out, key, Str(pk, fmt::format("params[\"{}\"] key", key)), ParamValue(pv));
        if (!st.ok()) break;
      }
    } else {
      st = host::AddDottedParam(out, key, ParamValue(v));
    }
    if (!st.ok()) Raise(ClassFor(st.kind()), st.message());
  }
  return out;
}

std::vector<std::string> StrList(const py::object& v, const std::string& what) {
  std::vector<std::string> out;
  if (v.is_none()) return out;
  if (py::isinstance<py::str>(v)) {
    const std::string s = Str(v, what);
    std::size_t start = 0;
    for (;;) {
      const std::size_t c = s.find(',', start);
      std::string piece = s.substr(start, c == std::string::npos ? std::string::npos : c - start);
      if (!piece.empty()) out.push_back(piece);
      if (c == std::string::npos) break;
      start = c + 1;
    }
    return out;
  }
  if (!IsStrSequence(v)) Raise(g_input_error, fmt::format("{}: a {} (expected a list of strings)", what, TypeName(v)));
  std::size_t i = 0;
  for (py::handle x : v) out.push_back(Str(x, fmt::format("{}[{}]", what, i++)));
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Output conversion.

py::object Column(const std::vector<double>& values) {
  if (NumpyAvailable()) {
    py::array_t<double> a(static_cast<py::ssize_t>(values.size()));
    if (!values.empty()) std::memcpy(a.mutable_data(), values.data(), values.size() * sizeof(double));
    return py::object(std::move(a));
  }
  return py::cast(values);
}

py::object ParseJson(const std::string& text) {
  if (text.empty()) return py::dict();
  return py::module_::import("json").attr("loads")(text);
}

py::dict RunDict(const RunRecord& run, const std::vector<AggregateValue>& aggregates, const ScoreColumns& scores) {
  py::dict d;
  d["run_id"] = run.id > 0 ? py::object(py::int_(run.id)) : py::object(py::none());
  d["status"] = run.status;
  if (!run.error.empty()) d["error"] = run.error;
  d["dataset"] = run.dataset_name;
  d["dataset_hash"] = run.dataset_hash;
  d["system"] = run.system;
  d["profile"] = run.profile;
  d["n_docs"] = run.doc_ids.size();
  d["doc_ids"] = run.doc_ids.ToVector();
  if (run.shard) {
    py::dict sh;
    sh["index"] = run.shard->index;
    sh["count"] = run.shard->count;
    sh["begin"] = run.shard->begin;
    sh["end"] = run.shard->end;
    d["shard"] = sh;
  } else {
    d["shard"] = py::none();
  }
  d["params"] = ParseJson(run.params_json);
  py::list plugins;
  for (const auto& p : run.plugins) {
    py::dict pd;
    pd["name"] = p.name;
    pd["version"] = p.version;
    pd["sha256"] = p.sha256;
    plugins.append(pd);
  }
  d["plugins"] = plugins;
  d["embedder_fingerprint"] = run.embedder_fingerprint;
  d["kplab_version"] = run.kplab_version;
  d["created_at"] = run.created_at;
  d["elapsed_seconds"] = run.elapsed_seconds;
  py::dict agg, ci;
  for (const auto& a : aggregates) {
    agg[py::str(a.metric)] = a.value;
    if (a.ci_low && a.ci_high) ci[py::str(a.metric)] = py::make_tuple(*a.ci_low, *a.ci_high);
  }
  d["aggregates"] = agg;
  d["ci"] = ci;
  py::dict per;
  for (std::size_t i = 0; i < scores.metrics.size(); ++i) {
    // A shard's own columns cover its documents: padded with NaN to every document, as Store.run gives them.
    if (run.shard && scores.columns[i].size() != run.doc_ids.size()) {
      std::vector<double> full(run.doc_ids.size(), std::numeric_limits<double>::quiet_NaN());
      std::copy(scores.columns[i].begin(), scores.columns[i].end(),
                full.begin() + static_cast<std::ptrdiff_t>(run.shard->begin));
      per[py::str(scores.metrics[i])] = Column(full);
    } else {
      per[py::str(scores.metrics[i])] = Column(scores.columns[i]);
    }
  }
  d["per_document"] = per;
  return d;
}

// ---------------------------------------------------------------------------------------------------
// The run store.

// A Store's connection and the lock that lends it to one call at a time (a RunStore is not
// thread-safe, and calls release the GIL).
struct StoreHandle {
  std::mutex mu;
  std::optional<RunStore> store;  // empty once closed
};

// Lifetimes (docs/python.md, "Threads"): every call takes its own reference to the handle, with the GIL
// held, before it releases the GIL, so close() from another thread never frees the connection under a
// call. close() marks the Store closed at once (calls that start later raise StoreError), waits without
// the GIL for a call in flight to finish, then closes the connection.
class Store {
 public:
  explicit Store(std::optional<std::string> path)
      : path_(path ? *path : RunStore::DefaultPath()), h_(std::make_shared<StoreHandle>()) {
    Result<RunStore> s = Error::Internal("");
    {
      py::gil_scoped_release release;
      s = RunStore::Open(path_);
    }
    if (!s.ok()) Raise(ClassFor(s.error().kind), s.error().message);
    h_->store.emplace(std::move(*s));
  }
  const std::string& path() const { return path_; }
  // Raises StoreError when the store is closed (called with the GIL).
  void CheckOpen() const {
    if (!h_) Raise(g_store_error, fmt::format("{}: the store is closed", path_));
  }
  // f(RunStore&) with the GIL released and the connection to itself; f must not touch Python objects.
  template <class F>
  auto With(F&& f) -> decltype(f(std::declval<RunStore&>())) {
    CheckOpen();
    const std::shared_ptr<StoreHandle> h = h_;  // kept for the call, whatever close() does meanwhile
    std::optional<decltype(f(std::declval<RunStore&>()))> out;
    {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(h->mu);
      if (h->store) out.emplace(f(*h->store));
    }
    if (!out) Raise(g_store_error, fmt::format("{}: the store is closed", path_));
    return std::move(*out);
  }
  // The connection for a call that saves without the GIL (HandleSink); raises StoreError when closed.
  std::shared_ptr<StoreHandle> Handle() const {
    CheckOpen();
    return h_;
  }
  void Close() {
    const std::shared_ptr<StoreHandle> h = std::move(h_);
    h_.reset();
    if (!h) return;
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(h->mu);
    h->store.reset();
  }

  py::list Runs() {
    auto runs = With([](RunStore& s) { return s.ListRuns(); });
    if (!runs.ok()) Raise(ClassFor(runs.error().kind), runs.error().message);
    py::list out;
    for (const auto& r : *runs) {
      py::dict d;
      d["run_id"] = r.id;
      d["created_at"] = r.created_at;
      d["status"] = r.status;
      d["dataset"] = r.dataset_name;
      d["system"] = r.system;
      d["profile"] = r.profile;
      d["n_docs"] = r.n_docs;
      d["seed"] = r.seed ? py::object(py::int_(*r.seed)) : py::object(py::none());
      out.append(d);
    }
    return out;
  }

  py::dict Run(std::int64_t id) {
    struct Read {
      Result<RunRecord> run = Error::Internal("");
      Result<std::vector<AggregateValue>> agg = Error::Internal("");
      Result<ScoreColumns> scores = Error::Internal("");
    };
    Read r = With([&](RunStore& s) {
      Read out;
      out.run = s.GetRun(id);
      if (out.run.ok()) out.agg = s.GetAggregates(id);
      if (out.agg.ok()) out.scores = s.GetScores(id);
      return out;
    });
    if (!r.run.ok()) Raise(ClassFor(r.run.error().kind), r.run.error().message);
    if (!r.agg.ok()) Raise(ClassFor(r.agg.error().kind), r.agg.error().message);
    if (!r.scores.ok()) Raise(ClassFor(r.scores.error().kind), r.scores.error().message);
    return RunDict(*r.run, *r.agg, *r.scores);
  }

  void Delete(std::int64_t id) {
    Status st = With([&](RunStore& s) { return s.DeleteRun(id); });
    if (!st.ok()) Raise(ClassFor(st.kind()), st.message());
  }

  // `kplab runs compare A B`: per metric, both aggregates and, for a metric with per-document scores in
  // both runs, the paired difference B - A over the shared documents with its bootstrap CI, the
  // approximate-randomization p and Holm's adjustment (host/engine/compare.h).
  py::dict Compare(std::int64_t a, std::int64_t b, int resamples, std::uint64_t seed, const py::object& metrics,
                   bool force) {
    if (resamples < 0) Raise(g_input_error, fmt::format("compare: resamples = {} (expected >= 0; 0 = auto)", resamples));
    kplab::host::CompareOptions opt;
    opt.resamples = resamples;
    opt.seed = seed;
    opt.force = force;
    opt.metrics = Patterns(metrics);
    Result<kplab::host::Comparison> c = With([&](RunStore& s) { return kplab::host::CompareRuns(s, a, b, opt); });
    if (!c.ok()) Raise(c.error().IsUsage() ? g_input_error : g_store_error, c.error().message);
    for (const auto& w : c->warnings) {
      if (PyErr_WarnEx(PyExc_UserWarning, TerminalText(w).c_str(), 1) != 0) throw py::error_already_set();
    }
    py::dict out;
    out["a"] = c->a.id;
    out["b"] = c->b.id;
    out["shared_docs"] = c->shared_docs;
    out["family"] = c->family;
    out["resamples"] = c->resamples;
    py::dict rows;
    for (const auto& r : c->rows) {
      py::dict row;
      row["a"] = r.a;
      row["b"] = r.b;
      row["paired"] = r.paired;
      if (r.paired) {
        row["n"] = r.n;
        row["mean_diff"] = r.mean_diff;
        row["ci"] = py::make_tuple(r.ci_low, r.ci_high);
        row["p"] = r.p;
        row["p_holm"] = r.p_holm;
        if (!r.same_as.empty()) row["same_as"] = r.same_as;
        // A corpus-level metric re-aggregated over resampled documents or units (`eval --ci` runs).
        row["test"] = r.resampled ? "resampled" : "per_document";
        if (r.resampled) row["unit"] = r.unit;
      }
      if (!r.untested.empty()) row["untested"] = r.untested;
      rows[py::str(r.metric)] = row;
    }
    out["metrics"] = rows;
    return out;
  }

  // `kplab runs table` (docs/tables.md): one dict per cell (system, dataset, metric, mean, sd, n, best,
  // and against a baseline p, p_holm, significant), as a pandas DataFrame when pandas is installed and
  // as_frame is not False.
  // The render options of `kplab runs table` as keywords, set by the functions the command and
  // kp.runs.table use (host/engine/table.h), so all three accept and refuse the same values with the
  // same messages (spelled as in Lua: "layout", "format").
  struct TableRender {
    py::object format, decimals, fraction, labels, layout, fit, float_env, caption;
  };
  static std::optional<kplab::host::RenderOptions> RenderFrom(const TableRender& k) {
    using kplab::host::OptionSpelling;
    const OptionSpelling spell{"", "format"};
    auto check = [](const Status& st) {
      if (!st.ok()) Raise(ClassFor(st.error().kind), "table: " + st.error().message);
    };
    auto usage = [](const std::string& m) { Raise(g_usage_error, "table: " + m); };
    if (k.format.is_none()) {
      for (const auto& [name, v] : {std::pair{"decimals", &k.decimals},
                                    {"fraction", &k.fraction},
                                    {"labels", &k.labels},
                                    {"layout", &k.layout},
                                    {"fit", &k.fit},
                                    {"float", &k.float_env},
                                    {"caption", &k.caption}}) {
        if (!v->is_none()) usage(fmt::format("{} shapes the text: add format", name));
      }
      return std::nullopt;
    }
    kplab::host::RenderOptions ro;
    ro.format = Str(k.format, "table: format");
    if (ro.format != "table" && ro.format != "markdown" && ro.format != "latex" && ro.format != "csv" &&
        ro.format != "json") {
      usage(fmt::format("format must be table, markdown, latex, csv or json (got '{}')", ro.format));
    }
    if (!k.decimals.is_none()) {
      ro.decimals = static_cast<int>(IntArg(k.decimals, "table: decimals", "an integer from 0 to 9"));
      if (ro.decimals < 0 || ro.decimals > 9) usage("decimals must be an integer from 0 to 9");
    }
    auto flag = [&](const py::object& o, const char* name) {
      if (o.is_none()) return false;
      if (!py::isinstance<py::bool_>(o))
        usage(fmt::format("{} must be a bool (got {})", name, py::repr(o).cast<std::string>()));
      return o.cast<bool>();
    };
    ro.percent = !flag(k.fraction, "fraction");
    ro.fit = flag(k.fit, "fit");
    if (!k.labels.is_none()) {
      if (!py::isinstance<py::dict>(k.labels)) usage("labels must be a dict {name: text}");
      for (auto [name, text] : k.labels.cast<py::dict>()) {
        if (!py::isinstance<py::str>(name) || !py::isinstance<py::str>(text)) {
          usage(fmt::format("labels must map names to texts (got {}: {})", py::repr(name).cast<std::string>(),
                            py::repr(text).cast<std::string>()));
        }
        check(SetLabel(ro, name.cast<std::string>(), text.cast<std::string>(), spell));
      }
    }
    if (!k.layout.is_none()) check(SetLayout(ro, Str(k.layout, "table: layout"), spell));
    if (!k.float_env.is_none()) check(SetFloat(ro, Str(k.float_env, "table: float"), spell));
    if (!k.caption.is_none()) ro.caption = Str(k.caption, "table: caption");
    check(CheckRenderShape(ro, spell));
    return ro;
  }

  py::object Table(const py::object& metrics, const py::object& baseline, const py::object& system,
                   const py::object& dataset, const py::object& profile, const py::object& runs, int resamples,
                   std::uint64_t seed, const py::object& as_frame, const TableRender& render) {
    const std::optional<kplab::host::RenderOptions> ro = RenderFrom(render);
    kplab::host::TableOptions opt;
    opt.metrics = Patterns(metrics);
    auto opt_str = [](const py::object& o, const char* what) -> std::optional<std::string> {
      if (o.is_none()) return std::nullopt;
      return Str(o, what);
    };
    opt.baseline = opt_str(baseline, "baseline");
    opt.system = opt_str(system, "system");
    opt.dataset = opt_str(dataset, "dataset");
    opt.profile = opt_str(profile, "profile");
    if (!runs.is_none()) {
      for (py::handle h : runs) opt.runs.push_back(h.cast<std::int64_t>());
    }
    if (resamples < 100) Raise(g_input_error, fmt::format("table: resamples = {} (expected >= 100)", resamples));
    opt.resamples = resamples;
    opt.seed = seed;
    Result<kplab::host::Table> t = With([&](RunStore& s) { return kplab::host::BuildTable(s, opt); });
    if (!t.ok()) Raise(t.error().IsUsage() ? g_input_error : g_store_error, t.error().message);
    for (const auto& w : t->warnings) {
      if (PyErr_WarnEx(PyExc_UserWarning, TerminalText(w).c_str(), 1) != 0) throw py::error_already_set();
    }
    if (ro) {  // the command's text, byte for byte
      if (Status st = CheckRenderOptions(*t, *ro, kplab::host::OptionSpelling{"", "format"}); !st.ok()) {
        Raise(ClassFor(st.error().kind), "table: " + st.error().message);
      }
      return py::str(kplab::host::RenderTable(*t, *ro));
    }
    py::list rows;
    for (std::size_t r = 0; r < t->systems.size(); ++r) {
      for (std::size_t c = 0; c < t->columns.size(); ++c) {
        const auto& cell = t->cells[r][c];
        if (!cell.present) continue;
        py::dict d;
        d["system"] = t->systems[r];
        d["dataset"] = t->columns[c].dataset;
        d["metric"] = t->columns[c].metric;
        d["mean"] = cell.mean;
        d["sd"] = cell.sd;
        d["n"] = cell.n;
        d["best"] = cell.best;
        if (t->baseline) {
          d["p"] = cell.tested ? py::object(py::float_(cell.p)) : py::object(py::none());
          d["p_holm"] = cell.tested ? py::object(py::float_(cell.p_holm)) : py::object(py::none());
          d["significant"] = cell.tested ? py::object(py::bool_(cell.significant)) : py::object(py::none());
        }
        rows.append(d);
      }
    }
    if (!as_frame.is_none() && !as_frame.cast<bool>()) return py::object(std::move(rows));
    try {
      py::module_ pd = py::module_::import("pandas");
      return pd.attr("DataFrame")(rows);
    } catch (const py::error_already_set& e) {
      if (!e.matches(PyExc_ImportError)) throw;
      if (!as_frame.is_none()) throw;  // as_frame=True asked for pandas
      return py::object(std::move(rows));
    }
  }

 private:
  // Glob patterns: a list, or one string of ','-separated patterns (each stripped). Owned strings:
  // nothing here may point into a temporary.
  static std::vector<std::string> Patterns(const py::object& metrics) {
    if (!py::isinstance<py::str>(metrics)) return StrList(metrics, "metrics");
    std::vector<std::string> out;
    const std::string joined = Str(metrics, "metrics");
    for (std::string_view part : SplitOn(joined, ",")) {
      if (!Strip(part).empty()) out.emplace_back(Strip(part));
    }
    return out;
  }

  std::string path_;
  std::shared_ptr<StoreHandle> h_;  // null once closed
};

std::optional<std::string> PathArg(const py::object& v, const std::string& what) {
  if (v.is_none()) return std::nullopt;
  if (py::isinstance<py::str>(v)) return Str(v, what);
  if (py::hasattr(v, "__fspath__")) return py::str(v.attr("__fspath__")()).cast<std::string>();
  Raise(g_input_error, fmt::format("{}: a {} (expected a path)", what, TypeName(v)));
}

// A Store as the seam's sink: saves under the handle's lock, without the GIL (the seam runs without it).
class HandleSink : public host::RunSink {
 public:
  HandleSink(std::shared_ptr<StoreHandle> h, std::string path) : h_(std::move(h)), path_(std::move(path)) {}
  const std::string& path() const override { return path_; }
  Result<std::int64_t> Save(const RunRecord& run, const ScoreColumns& scores,
                            const std::vector<AggregateValue>& aggregates,
                            const std::vector<SlotColumn>& slots) override {
    std::lock_guard<std::mutex> lock(h_->mu);
    if (!h_->store) return Error::Store(fmt::format("{}: the store is closed", path_));
    return h_->store->SaveRun(run, scores, aggregates, slots);
  }

 private:
  std::shared_ptr<StoreHandle> h_;
  std::string path_;
};

// ---------------------------------------------------------------------------------------------------
// evaluate().

bool IsPathArg(const py::object& v) { return py::isinstance<py::str>(v) || py::hasattr(v, "__fspath__"); }

std::string OptStr(const py::object& v, const char* what) { return v.is_none() ? std::string() : Str(v, what); }

// shard=(i, n): the i-th (from 0) of n contiguous document ranges, as `kplab eval --shard i/n`; only with
// a store (a shard is kept for kplab.merge).
std::optional<host::EvalRequest::Shard> ShardArg(const py::object& shard, const py::object& store) {
  if (shard.is_none()) return std::nullopt;
  const std::string bad = fmt::format("shard: {} (expected a tuple (i, n) of ints with 0 <= i < n)",
                                      py::repr(shard).cast<std::string>());
  if (!py::isinstance<py::tuple>(shard) && !py::isinstance<py::list>(shard)) Raise(g_input_error, bad);
  py::sequence seq = shard.cast<py::sequence>();
  if (seq.size() != 2) Raise(g_input_error, bad);
  for (py::handle h : seq) {
    if (!py::isinstance<py::int_>(h) || py::isinstance<py::bool_>(h)) Raise(g_input_error, bad);
  }
  // An int beyond 64 bits is as out of range as any other (not pybind11's cast error).
  auto int_of = [&](const py::handle& h) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
    if (overflow != 0 || (v == -1 && PyErr_Occurred())) {
      PyErr_Clear();
      Raise(g_input_error, bad);
    }
    return static_cast<std::int64_t>(v);
  };
  const std::int64_t i = int_of(seq[0]), n = int_of(seq[1]);
  if (n < 1 || i < 0 || i >= n) Raise(g_input_error, bad);
  if (store.is_none() || (py::isinstance<py::bool_>(store) && !store.cast<bool>())) {
    Raise(g_input_error, "shard: a shard is a partial run kept for kplab.merge (expected store=PATH or a Store)");
  }
  return host::EvalRequest::Shard{i, n};
}

// evaluate()'s documents and their options (docs/formats.md, "Dataset options in every front-end").
struct DocumentArgs {
  const py::object &format, &split, &references, &hulth_keys, &semeval_answers, &source;
  bool refs_stemmed;
  const std::string& dataset;  // the dataset's name ("python": the file's own for a path)
  std::optional<bool> pretokenized;
};

// Documents into raw records (with the GIL: they are Python objects). A path is read by the same
// importers as `kplab eval --dataset` (docs/formats.md), with the same options.
RawDataset DocumentsArg(const py::object& documents, const DocumentArgs& a) {
  if (IsPathArg(documents)) {
    DatasetOptions opt;
    opt.format = OptStr(a.format, "dataset_format");
    opt.split = OptStr(a.split, "split");
    opt.hulth_keys = OptStr(a.hulth_keys, "hulth_keys");
    opt.semeval_answers = OptStr(a.semeval_answers, "semeval_answers");
    if (auto r = PathArg(a.references, "references")) opt.references = *r;
    opt.refs_stemmed = a.refs_stemmed;
    const std::string path = *PathArg(documents, "documents");
    const std::optional<std::string> source_path = PathArg(a.source, "source");
    Result<RawDataset> raw = Error::Internal("");
    {
      py::gil_scoped_release release;
      raw = ImportDataset(path, opt);
      // As `kplab eval --source`: the documents' text from a file of its own, one document a line.
      if (raw.ok() && source_path) {
        if (auto st = AttachSources(*raw, *source_path); !st) raw = st.error();
      }
    }
    if (!raw.ok()) Raise(ClassFor(raw.error().kind), raw.error().message);
    if (a.dataset != "python") raw->name = a.dataset;
    return std::move(*raw);
  }
  for (const auto& [v, name] : {std::pair{&a.format, "dataset_format"}, {&a.split, "split"},
                                {&a.references, "references"}, {&a.hulth_keys, "hulth_keys"},
                                {&a.semeval_answers, "semeval_answers"}, {&a.source, "source"}}) {
    if (!v->is_none()) {
      Raise(g_input_error, fmt::format("{}: given with in-memory documents (expected documents as a dataset path)", name));
    }
  }
  if (py::isinstance<py::str>(documents) || !py::isinstance<py::iterable>(documents)) {
    Raise(g_input_error, fmt::format("documents: a {} (expected a list of dicts or a dataset path)", TypeName(documents)));
  }
  std::vector<RawDoc> docs;
  for (py::handle h : documents) docs.push_back(ConvertDoc(h, docs.size(), a.pretokenized));
  for (auto& d : docs) d.refs_stemmed = d.refs_stemmed || a.refs_stemmed;
  if (docs.empty()) Raise(g_input_error, "documents: an empty list (expected at least one document)");
  auto raw = DatasetFromRecords(a.dataset, std::move(docs));
  if (!raw.ok()) Raise(ClassFor(raw.error().kind), raw.error().message);
  return std::move(*raw);
}

// Predictions aligned to `raw`: a file read as `kplab eval --predictions` reads it, a list of ranked
// lists (one per document) or a dict {document id: ranked list}.
RawPredictions PredictionsArg(const py::object& predictions, const RawDataset& raw, const py::object& system,
                              const py::object& predictions_format) {
  if (IsPathArg(predictions)) {
    const std::string path = *PathArg(predictions, "predictions");
    const std::string format = OptStr(predictions_format, "predictions_format");
    Result<RawPredictions> aligned = Error::Internal("");
    {
      py::gil_scoped_release release;
      auto p = ImportPredictions(path, format);
      aligned = p.ok() ? AlignPredictions(raw, std::move(*p)) : Result<RawPredictions>(p.error());
    }
    if (!aligned.ok()) Raise(ClassFor(aligned.error().kind), aligned.error().message);
    return std::move(*aligned);
  }
  if (!predictions_format.is_none()) {
    Raise(g_input_error, "predictions_format: given with in-memory predictions (expected predictions as a file path)");
  }
  std::vector<RawPrediction> preds;
  bool by_id = false;
  if (py::isinstance<py::dict>(predictions)) {
    by_id = true;
    for (auto [k, v] : predictions.cast<py::dict>()) {
      const std::string id = IdStr(k, "predictions key");
      const std::string where = fmt::format("predictions[\"{}\"]", id);
      RawPrediction p = ConvertPrediction(v, where);
      p.doc_id = id;
      p.loc = {where, 0};
      preds.push_back(std::move(p));
    }
  } else if (!py::isinstance<py::str>(predictions) && py::isinstance<py::iterable>(predictions)) {
    for (py::handle h : predictions) preds.push_back(ConvertPrediction(h, fmt::format("predictions[{}]", preds.size())));
  } else {
    Raise(g_input_error, fmt::format("predictions: a {} (expected a list of ranked lists, one per document, or a "
                                     "dict {{document id: ranked list}})",
                                     TypeName(predictions)));
  }
  auto made = PredictionsFromRecords(raw, system.is_none() ? "predictions" : Str(system, "system"), std::move(preds),
                                     by_id);
  if (!made.ok()) Raise(ClassFor(made.error().kind), made.error().message);
  return std::move(*made);
}

// An int from 0 to hi, as `kplab eval --verify-docs` / `--random-seed` take it (docs/plugins.md).
long long CountArg(const py::object& v, const char* what, long long hi) {
  if (!py::isinstance<py::int_>(v) || py::isinstance<py::bool_>(v)) {
    Raise(g_input_error, fmt::format("{}: a {} (expected an int from 0 to {})", what, TypeName(v), hi));
  }
  const py::int_ lo_bound(0), hi_bound(hi);
  if (v < lo_bound || v > hi_bound) {
    Raise(g_input_error, fmt::format("{}: {} (expected an int from 0 to {})", what, py::repr(v).cast<std::string>(), hi));
  }
  return v.cast<long long>();
}

// evaluate()'s settings of the run, as the seam's request.
struct RunArgs {
  const std::string& profile;
  const py::object &metrics, &plugins, &params, &threads, &verify_docs, &random_seed, &system, &seed, &model;
};

host::EvalRequest RequestArgs(const RunArgs& a) {
  host::EvalRequest req;
  req.profile = a.profile;
  req.metrics = StrList(a.metrics, "metrics");
  req.plugin_dirs = StrList(a.plugins, "plugins");
  req.params = ConvertParams(a.params);
  // As the command line's --threads: 0 for one per core.
  const std::string threads_expected = fmt::format("0 for one per core, or 1 to {}", host::kMaxThreads);
  const std::int64_t threads = IntArg(a.threads, "threads", threads_expected);
  if (threads < 0 || threads > host::kMaxThreads) {
    Raise(g_input_error, fmt::format("threads: {} (expected {})", threads, threads_expected));
  }
  req.threads = static_cast<int>(threads);
  if (!a.verify_docs.is_none()) {
    req.verify_docs = static_cast<int>(CountArg(a.verify_docs, "verify_docs", host::kMaxVerifyDocs));
  }
  if (!a.random_seed.is_none()) {
    const long long max_seed = std::numeric_limits<std::int64_t>::max();
    req.random_seed = static_cast<std::uint64_t>(CountArg(a.random_seed, "random_seed", max_seed));
  }
  req.system = a.system.is_none() ? "python" : Str(a.system, "system");
  if (!a.seed.is_none()) {
    if (!py::isinstance<py::int_>(a.seed) || py::isinstance<py::bool_>(a.seed)) {
      Raise(g_input_error, fmt::format("seed: a {} (expected an int)", TypeName(a.seed)));
    }
    req.seed = IntArg(a.seed, "seed", "an int of at most 64 bits");
  }
  if (!a.model.is_none()) req.model = Str(a.model, "model");
  return req;
}

// The Store a run is saved into: the caller's (its Python object is held by the argument for the call),
// or one opened here (in `own`) for a path or store=True; null for none. A closed store is an error
// before any work.
Store* StoreArg(const py::object& store, std::optional<Store>& own) {
  if (store.is_none() || (py::isinstance<py::bool_>(store) && !store.cast<bool>())) return nullptr;
  Store* s = nullptr;
  if (py::isinstance<Store>(store)) {
    s = store.cast<Store*>();
  } else if (py::isinstance<py::bool_>(store)) {  // store=True: the default store
    s = &own.emplace(std::nullopt);
  } else {
    s = &own.emplace(PathArg(store, "store"));
  }
  s->CheckOpen();
  return s;
}

// What evaluate() returns for a run the seam stored (or not): RunDict's fields, "store" and "embeddings".
py::dict ResultDict(host::EvalResult& res, const Store* store) {
  for (const auto& w : res.warnings) {
    if (PyErr_WarnEx(PyExc_UserWarning, TerminalText(w).c_str(), 1) != 0) throw py::error_already_set();
  }
  py::dict out = RunDict(res.run, res.aggregates, res.scores);
  if (store != nullptr) out["store"] = store->path();
  if (res.embeddings) {
    py::dict e;
    e["model"] = res.embeddings->model;
    e["fingerprint"] = res.embeddings->fingerprint;
    e["phrases"] = res.embeddings->phrases;
    e["hits"] = res.embeddings->hits;
    e["embedded"] = res.embeddings->embedded;
    e["no_vector"] = res.embeddings->no_vector;
    out["embeddings"] = e;
  } else {
    out["embeddings"] = py::none();
  }
  return out;
}

py::dict Evaluate(const py::object& documents, const py::object& predictions, const py::object& metrics,
                  const std::string& profile, const py::object& params, const py::object& model,
                  const py::object& store, const py::object& system, const std::string& dataset,
                  const py::object& plugins, std::optional<bool> pretokenized, const py::object& threads_arg,
                  const py::object& cache, bool refs_stemmed, const py::object& seed,
                  const py::object& dataset_format, const py::object& predictions_format, const py::object& split,
                  const py::object& references, const py::object& hulth_keys, const py::object& semeval_answers,
                  const py::object& shard, const py::object& verify_docs, const py::object& random_seed,
                  const py::object& source) {
  const auto start = std::chrono::steady_clock::now();
  const std::optional<host::EvalRequest::Shard> shard_spec = ShardArg(shard, store);
  RawDataset raw = DocumentsArg(documents, {dataset_format, split, references, hulth_keys, semeval_answers, source,
                                            refs_stemmed, dataset, pretokenized});
  RawPredictions raw_preds = PredictionsArg(predictions, raw, system, predictions_format);
  host::EvalRequest req = RequestArgs(
      {profile, metrics, plugins, params, threads_arg, verify_docs, random_seed, system, seed, model});
  req.shard = shard_spec;
  std::optional<Store> own_store;
  Store* store_obj = StoreArg(store, own_store);
  // The phrase cache lives in a run store's database: the one given, else the store's, else the default.
  if (auto c = PathArg(cache, "cache")) {
    req.cache_db = *c;
  } else if (store_obj != nullptr) {
    req.cache_db = store_obj->path();
  }
  auto prof = host::ProfileNamed(profile);
  if (!prof) Raise(ClassFor(prof.error().kind), prof.error().message);

  // kplab's work, without the GIL (a Python embedder takes it back for its calls): the seam every
  // front-end calls (eval_store.h), which also records a run whose plugin fails.
  std::optional<HandleSink> sink;
  if (store_obj != nullptr) sink.emplace(store_obj->Handle(), store_obj->path());
  Result<host::StoredRun> stored = Error::Internal("");
  {
    py::gil_scoped_release release;
    auto corpus = BuildCorpus(raw, &raw_preds, *prof);
    if (!corpus.ok()) {
      stored = corpus.error();
    } else {
      host::SeamHooks hooks;
      hooks.started = start;
      stored = host::EvaluateAndStore(req, std::make_shared<const Corpus>(std::move(*corpus)), sink ? &*sink : nullptr,
                                      hooks);
    }
  }
  RaisePendingInterrupt();  // Ctrl-C in a Python embedder: KeyboardInterrupt, not an embedding error
  if (!stored.ok()) Raise(ClassFor(stored.error().kind), stored.error().message);
  py::dict out = ResultDict(stored->result, store_obj);
  {
    // The corpus and Lua VMs are freed without the GIL (a Python embedder's last reference may go).
    py::gil_scoped_release release;
    stored->result.resources.reset();
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------
// mine_pairs(): the exact set-similarity join of docs/homogeneity.md, whole or one partition of it.

// partition=(p, n) as homog's Partition (0-based p, as Python indexes); None is the whole join.
homog::Partition PartitionArg(const py::object& v) {
  const char* expected = "(expected a pair (p, n) of ints with 0 <= p < n <= 4294967295)";
  if (v.is_none()) return {};
  if (!py::isinstance<py::tuple>(v) && !py::isinstance<py::list>(v)) {
    Raise(g_input_error, fmt::format("mine_pairs: partition is a {} {}", TypeName(v), expected));
  }
  const py::sequence seq = v.cast<py::sequence>();
  if (seq.size() != 2) Raise(g_input_error, fmt::format("mine_pairs: partition has {} items {}", seq.size(), expected));
  long long pn[2] = {0, 0};
  for (int k = 0; k < 2; ++k) {
    const py::object item = seq[k];
    if (!py::isinstance<py::int_>(item) || py::isinstance<py::bool_>(item)) {
      Raise(g_input_error, fmt::format("mine_pairs: partition[{}] is a {} {}", k, TypeName(item), expected));
    }
    int overflow = 0;
    pn[k] = PyLong_AsLongLongAndOverflow(item.ptr(), &overflow);
    if (overflow != 0) {
      pn[k] = overflow > 0 ? std::numeric_limits<long long>::max() : std::numeric_limits<long long>::min();
    }
  }
  if (pn[1] < 1 || pn[1] > 0xffffffffLL || pn[0] < 0 || pn[0] >= pn[1]) {
    Raise(g_input_error,
          fmt::format("mine_pairs: partition ({}, {}) is out of range {}", py::str(seq[0]).cast<std::string>(),
                      py::str(seq[1]).cast<std::string>(), expected));
  }
  return {static_cast<std::uint32_t>(pn[0]), static_cast<std::uint32_t>(pn[1])};
}

py::tuple MinePairs(const py::object& gold, double theta, const py::object& partition, bool stem,
                    const std::string& profile, const py::object& dataset_format, const py::object& split) {
  const homog::Partition part = PartitionArg(partition);
  std::vector<std::vector<std::uint32_t>> sets;
  if (py::isinstance<py::str>(gold) || py::hasattr(gold, "__fspath__")) {
    // A dataset path: its gold keyphrases under the profile, as normalized strings or stem keys.
    DatasetOptions opt;
    if (!dataset_format.is_none()) opt.format = Str(dataset_format, "dataset_format");
    if (!split.is_none()) opt.split = Str(split, "split");
    const std::string path = *PathArg(gold, "gold");
    const Result<Profile> prof = ResolveProfile(profile);
    if (!prof) Raise(ClassFor(prof.error().kind), prof.error().message);
    std::string error;
    {
      py::gil_scoped_release release;
      auto raw = ImportDataset(path, opt);
      auto corpus = raw.ok() ? BuildCorpus(*raw, nullptr, *prof) : Result<Corpus>(raw.error());
      if (corpus.ok()) {
        sets = homog::GoldSets(*corpus, stem);
      } else {
        error = corpus.error().message;
      }
    }
    if (!error.empty()) Raise(g_input_error, error);
  } else {
    for (const auto& [v, name] : {std::pair{&dataset_format, "dataset_format"}, {&split, "split"}}) {
      if (!v->is_none()) {
        Raise(g_input_error, fmt::format("mine_pairs: {} given with in-memory sets (expected a dataset path)", name));
      }
    }
    if (!py::isinstance<py::iterable>(gold)) {
      Raise(g_input_error, fmt::format("mine_pairs: gold is a {} (expected a list of sets of strings, one per "
                                       "document, or a dataset path)",
                                       TypeName(gold)));
    }
    // Strings compared exactly, as kp.homog.mine_pairs does with arrays of strings, and numbered in
    // byte order: a Python set iterates in an order that changes with the process's hash seed, and the
    // ids break ties in the token order that assigns pairs to partitions, so every worker must number
    // the same strings the same way.
    std::vector<std::vector<std::string>> docs;
    for (py::handle doc : gold) {
      const std::string where = fmt::format("mine_pairs: gold[{}]", docs.size());
      if (py::isinstance<py::str>(doc) || !py::isinstance<py::iterable>(doc)) {
        Raise(g_input_error, fmt::format("{}: a {} (expected a list or set of strings)", where, TypeName(doc)));
      }
      std::vector<std::string> keys;
      for (py::handle k : doc) keys.push_back(Str(k, where));
      docs.push_back(std::move(keys));
    }
    sets = homog::InternSets(docs);
  }
  homog::MineStats stats;
  Result<std::vector<homog::DocPair>> pairs = Error::Internal("");
  {
    py::gil_scoped_release release;
    pairs = homog::MinePairs(sets, theta, &stats, part);
  }
  if (!pairs.ok()) Raise(ClassFor(pairs.error().kind), "mine_pairs: " + pairs.error().message);
  py::list out;
  for (const homog::DocPair& p : *pairs) out.append(py::make_tuple(p.a, p.b, p.shared, p.uni, p.jaccard));
  py::dict st;
  st["sets"] = stats.sets;
  st["candidates"] = stats.candidates;
  st["pairs"] = stats.pairs;
  return py::make_tuple(out, st);
}

// merge(): `kplab runs merge` (host/engine/merge.h).
py::dict Merge(const py::object& stores, const py::object& runs, const py::object& out, const py::object& plugins) {
  host::MergeRequest req;
  if (py::isinstance<py::str>(stores) || py::hasattr(stores, "__fspath__")) {
    req.from.push_back(*PathArg(stores, "stores"));
  } else {
    if (!py::isinstance<py::iterable>(stores)) {
      Raise(g_input_error, fmt::format("stores: a {} (expected a path or a list of paths)", TypeName(stores)));
    }
    for (py::handle h : stores) req.from.push_back(*PathArg(py::reinterpret_borrow<py::object>(h), "stores"));
  }
  if (!runs.is_none()) {
    for (py::handle h : runs) {
      if (py::isinstance<py::int_>(h) && !py::isinstance<py::bool_>(h)) {
        req.runs.push_back(std::to_string(IntArg(h, "runs", "run ids of at most 64 bits, or 'FILE:ID' strings")));
      } else if (py::isinstance<py::str>(h)) {
        req.runs.push_back(h.cast<std::string>());
      } else {
        Raise(g_input_error, fmt::format("runs: a {} (expected run ids, or 'FILE:ID' strings)",
                                         TypeName(py::reinterpret_borrow<py::object>(h))));
      }
    }
  }
  req.plugin_dirs = StrList(plugins, "plugins");
  const std::string out_path = PathArg(out, "out").value_or(RunStore::DefaultPath());
  Result<host::MergeResult> merged = Error::Internal("");
  {
    py::gil_scoped_release release;
    merged = host::MergeShards(req);
  }
  if (!merged) {
    Raise(merged.error().IsScript() ? g_script_error : merged.error().IsStore() ? g_store_error : g_input_error,
          merged.error().message);
  }
  auto store = RunStore::Open(out_path);
  if (!store) Raise(ClassFor(store.error().kind), store.error().message);
  auto id = store->SaveRun(merged->run, merged->scores, merged->aggregates);
  if (!id) Raise(ClassFor(id.error().kind), id.error().message);
  merged->run.id = *id;
  py::dict d = RunDict(merged->run, merged->aggregates, merged->scores);
  d["store"] = out_path;
  d["shards"] = merged->shards;
  return d;
}

}  // namespace
}  // namespace kplab::python

PYBIND11_MODULE(kplab, m) {
  using namespace kplab::python;
  namespace kp = kplab;
  m.doc() = "kplab: keyphrase evaluation (see docs/python.md)";
  m.attr("__version__") = KPLAB_VERSION;

  g_error = PyErr_NewException("kplab.Error", PyExc_Exception, nullptr);
  py::tuple input_bases = py::make_tuple(py::handle(g_error), py::handle(PyExc_ValueError));
  g_input_error = PyErr_NewException("kplab.InputError", input_bases.ptr(), nullptr);
  g_script_error = PyErr_NewException("kplab.ScriptError", g_error, nullptr);
  g_store_error = PyErr_NewException("kplab.StoreError", g_error, nullptr);
  g_usage_error = PyErr_NewException("kplab.UsageError", g_input_error, nullptr);
  g_limit_error = PyErr_NewException("kplab.LimitError", g_script_error, nullptr);
  g_internal_error = PyErr_NewException("kplab.InternalError", g_error, nullptr);
  m.attr("UsageError") = py::handle(g_usage_error);
  m.attr("LimitError") = py::handle(g_limit_error);
  m.attr("InternalError") = py::handle(g_internal_error);
  m.attr("Error") = py::handle(g_error);
  m.attr("InputError") = py::handle(g_input_error);
  m.attr("ScriptError") = py::handle(g_script_error);
  m.attr("StoreError") = py::handle(g_store_error);

  m.def("evaluate", &Evaluate, py::arg("documents"), py::arg("predictions"), py::kw_only(),
        py::arg("metrics") = py::none(), py::arg("profile") = "kplab", py::arg("params") = py::none(),
        py::arg("model") = py::none(), py::arg("store") = py::none(), py::arg("system") = py::none(),
        py::arg("dataset") = "python", py::arg("plugins") = py::none(), py::arg("pretokenized") = py::none(),
        py::arg("threads") = 0, py::arg("cache") = py::none(), py::arg("refs_stemmed") = false,
        py::arg("seed") = py::none(), py::arg("dataset_format") = py::none(),
        py::arg("predictions_format") = py::none(), py::arg("split") = py::none(),
        py::arg("references") = py::none(), py::arg("hulth_keys") = py::none(),
        py::arg("semeval_answers") = py::none(), py::arg("shard") = py::none(), py::arg("verify_docs") = py::none(),
        py::arg("random_seed") = py::none(), py::arg("source") = py::none(),
        "Evaluates predictions against documents; returns a dict with 'aggregates' and 'per_document'.");

  m.def("merge", &Merge, py::arg("stores"), py::kw_only(), py::arg("runs") = py::none(), py::arg("out") = py::none(),
        py::arg("plugins") = py::none(),
        "Merges the shards of one evaluation (evaluate(..., shard=(i, n), store=...)) found in `stores` (a "
        "path or a list), or the runs named, into one run stored in `out` (default $KPLAB_DB or kplab.db), as "
        "`kplab runs merge`; returns that run as evaluate() does, with 'run_id', 'store' and 'shards'.");
  py::class_<Store>(m, "Store")
      .def(py::init([](const py::object& path) { return std::make_unique<Store>(PathArg(path, "path")); }),
           py::arg("path") = py::none())
      .def_property_readonly("path", &Store::path)
      .def("runs", &Store::Runs, "Summaries of every stored run, newest first.")
      .def("run", &Store::Run, py::arg("run_id"), "One run: its record, aggregates and per-document scores.")
      .def("delete", &Store::Delete, py::arg("run_id"))
      .def("compare", &Store::Compare, py::arg("a"), py::arg("b"), py::kw_only(), py::arg("resamples") = 0,
           py::arg("seed") = 1, py::arg("metrics") = py::none(), py::arg("force") = false,
           "Run B against run A, as `kplab runs compare`: {'a', 'b', 'shared_docs', 'family', 'resamples', "
           "'metrics': {name: {'a', 'b', 'paired', and when paired 'n', 'mean_diff', 'ci', 'p', 'p_holm', "
           "'same_as' for a column identical to an earlier one}}}. metrics: glob patterns (list or "
           "','-joined); resamples 0 = enough for Holm over the shown family to reach 0.05.")
      .def(
          "table",
          [](Store& s, const py::object& metrics, const py::object& baseline, const py::object& system,
             const py::object& dataset, const py::object& profile, const py::object& runs, int resamples,
             std::uint64_t seed, const py::object& as_frame, py::object format, py::object decimals,
             py::object fraction, py::object labels, py::object layout, py::object fit, py::object float_env,
             py::object caption) {
            return s.Table(metrics, baseline, system, dataset, profile, runs, resamples, seed, as_frame,
                           {format, decimals, fraction, labels, layout, fit, float_env, caption});
          },
          py::arg("metrics"), py::kw_only(), py::arg("baseline") = py::none(), py::arg("system") = py::none(),
          py::arg("dataset") = py::none(), py::arg("profile") = py::none(), py::arg("runs") = py::none(),
          py::arg("resamples") = 9999, py::arg("seed") = 1, py::arg("as_frame") = py::none(),
          py::arg("format") = py::none(), py::arg("decimals") = py::none(), py::arg("fraction") = py::none(),
          py::arg("labels") = py::none(), py::arg("layout") = py::none(), py::arg("fit") = py::none(),
          py::arg("float") = py::none(), py::arg("caption") = py::none(),
          "The leaderboard of `kplab runs table` (docs/tables.md): one row per cell with system, dataset, "
          "metric, mean, sd, n, best and, against a baseline, p, p_holm, significant. A pandas DataFrame "
          "when pandas is installed (as_frame=False: a list of dicts; True: pandas required). With format "
          "(table, markdown, latex, csv, json): the command's text, shaped by decimals, fraction, labels, "
          "layout, fit, float and caption as its options are.")
      .def("close", &Store::Close)
      .def(
          "__enter__", [](Store& s) -> Store& { return s; }, py::return_value_policy::reference)
      .def("__exit__", [](Store& s, py::args) { s.Close(); })
      .def("__repr__", [](const Store& s) { return fmt::format("kplab.Store('{}')", s.path()); });

  m.def("register_embedder", &RegisterEmbedder, py::arg("name"), py::arg("fn"), py::kw_only(),
        py::arg("dims") = py::none(), py::arg("version") = "",
        "Registers fn (list of str -> 2-D array of floats) as the embedding model `name`.");
  m.def("unregister_embedder", [](const std::string& name) { return kp::UnregisterRuntimeModel(name); },
        py::arg("name"));
  m.def("embedders", [] {
    py::list out;
    for (const auto& info : kp::RuntimeModels()) out.append(ModelDict(info));
    return out;
  });
  m.def("profiles", [] { return kp::ProfileNames(); });
  m.def("mine_pairs", &MinePairs, py::arg("gold"), py::kw_only(), py::arg("theta") = 0.5,
        py::arg("partition") = py::none(), py::arg("stem") = true, py::arg("profile") = "kplab",
        py::arg("dataset_format") = py::none(), py::arg("split") = py::none(),
        "Pairs of documents whose gold sets have Jaccard >= theta, as kp.homog.mine_pairs: ([(a, b, shared, "
        "union, jaccard), ...] 0-based and sorted, {'sets', 'candidates', 'pairs'}). gold: a list of sets of "
        "strings or a dataset path (its gold under `profile`, stem keys or normalized strings). partition=(p, n): "
        "only the pairs of partition p of n disjoint ones whose union is the whole result.");

  // Python embedders hold Python objects: drop them while the interpreter still runs.
  py::module_::import("atexit").attr("register")(py::cpp_function([] {
    for (const auto& info : kp::RuntimeModels()) {
      if (info.backend == "python") kp::UnregisterRuntimeModel(info.name);
    }
  }));
}
