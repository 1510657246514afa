// The host transport: every rank lives in this process and its buffers are host memory, so a
// group of operations is a list of copies run at group_end.
#include <cstring>
#include <string>
#include <vector>

#include "dist/comm.h"

namespace gpuattn::dist {
namespace {

class HostComm final : public Comm {
 public:
  explicit HostComm(int world_size) : world_(world_size) {}

  void group_start() override {
    if (open_) throw Error(ErrorCode::invalid_argument, "host transport: group_start twice");
    open_ = true;
  }
  void send(int local, const void* buf, std::size_t bytes, int peer) override {
    ops_.push_back({Op::send, local, peer, const_cast<void*>(buf), nullptr, bytes});
  }
  void recv(int local, void* buf, std::size_t bytes, int peer) override {
    ops_.push_back({Op::recv, local, peer, buf, nullptr, bytes});
  }
  void all_gather(int local, const void* send, void* recv, std::size_t bytes) override {
    ops_.push_back({Op::gather, local, -1, const_cast<void*>(send), recv, bytes});
  }
  void group_end() override {
    std::vector<OpRec> ops;
    ops.swap(ops_);
    open_ = false;
    // Local rank i is global rank i: a host group is always whole in this process.
    for (const OpRec& r : ops) {
      if (r.kind == Op::recv) {
        const OpRec* s = find(ops, Op::send, r.peer, r.local);
        if (s == nullptr || s->bytes != r.bytes) {
          throw Error(ErrorCode::invalid_argument,
                      "host transport: rank " + std::to_string(r.local) + " receives " +
                          std::to_string(r.bytes) + " bytes from rank " + std::to_string(r.peer) +
                          ", which sends no matching message");
        }
        if (r.buf != s->buf) std::memmove(r.buf, s->buf, r.bytes);
      } else if (r.kind == Op::gather) {
        for (int src = 0; src < world_; ++src) {
          const OpRec* s = find(ops, Op::gather, src, -1);
          if (s == nullptr || s->bytes != r.bytes) {
            throw Error(ErrorCode::invalid_argument, "host transport: rank " + std::to_string(src) +
                                                         " takes no part in the all-gather of " +
                                                         std::to_string(r.bytes) + " bytes");
          }
          std::memcpy(static_cast<char*>(r.out) + static_cast<std::size_t>(src) * r.bytes, s->buf,
                      r.bytes);
        }
      }
    }
  }
  void* stream(int) override { return nullptr; }

 private:
  enum class Op { send, recv, gather };
  struct OpRec {
    Op kind;
    int local;
    int peer;
    void* buf;
    void* out;
    std::size_t bytes;
  };
  // The operation of `kind` that rank `from` posted (to `to`, for a send).
  static const OpRec* find(const std::vector<OpRec>& ops, Op kind, int from, int to) {
    for (const OpRec& o : ops) {
      if (o.kind == kind && o.local == from && (kind != Op::send || o.peer == to)) return &o;
    }
    return nullptr;
  }

  int world_;
  bool open_ = false;
  std::vector<OpRec> ops_;
};

}  // namespace

std::unique_ptr<Comm> make_host_comm(int world_size) {
  return std::make_unique<HostComm>(world_size);
}

}  // namespace gpuattn::dist
