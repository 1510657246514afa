// The operations of one group posted to an in-process transport (host memory, CUDA peer copies),
// and their pairing: each receive with the send addressed to it, each all-gather with every
// rank's part. Local ranks are global ranks there: the whole group lives in this process.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "dist/comm.h"
#include "gpuattn/types.h"

namespace gpuattn::dist {

class PostedOps {
 public:
  void send(int rank, const void* buf, std::size_t bytes, int peer) {
    ops_.push_back({Kind::send, rank, peer, const_cast<void*>(buf), nullptr, bytes});
  }
  void recv(int rank, void* buf, std::size_t bytes, int peer) {
    ops_.push_back({Kind::recv, rank, peer, buf, nullptr, bytes});
  }
  void all_gather(int rank, const void* send, void* recv, std::size_t bytes) {
    ops_.push_back({Kind::gather, rank, -1, const_cast<void*>(send), recv, bytes});
  }
  void clear() { ops_.clear(); }

  // Calls copy(dst_rank, dst, src_rank, src, bytes) for every transfer the posted operations
  // make, in posting order. A receive without a matching send, or an all-gather a rank takes no
  // part in, is an invalid_argument naming them (`who`: the transport).
  template <class Copy>
  void pair(int world_size, const char* who, Copy&& copy) const {
    for (const Op& r : ops_) {
      if (r.kind == Kind::recv) {
        const Op* s = find(Kind::send, r.peer, r.rank);
        if (s == nullptr || s->bytes != r.bytes) {
          throw Error(ErrorCode::invalid_argument,
                      std::string(who) + ": rank " + std::to_string(r.rank) + " receives " +
                          std::to_string(r.bytes) + " bytes from rank " + std::to_string(r.peer) +
                          ", which sends no matching message");
        }
        copy(r.rank, r.buf, r.peer, static_cast<const void*>(s->buf), r.bytes);
      } else if (r.kind == Kind::gather) {
        for (int src = 0; src < world_size; ++src) {
          const Op* s = find(Kind::gather, src, -1);
          if (s == nullptr || s->bytes != r.bytes) {
            throw Error(ErrorCode::invalid_argument, std::string(who) + ": rank " +
                                                         std::to_string(src) +
                                                         " takes no part in the all-gather of " +
                                                         std::to_string(r.bytes) + " bytes");
          }
          copy(r.rank, static_cast<char*>(r.out) + static_cast<std::size_t>(src) * r.bytes, src,
               static_cast<const void*>(s->buf), r.bytes);
        }
      }
    }
  }

 private:
  enum class Kind { send, recv, gather };
  struct Op {
    Kind kind;
    int rank, peer;
    void* buf;
    void* out;
    std::size_t bytes;
  };
  // The operation of `kind` that `from` posted (to `to`, for a send).
  const Op* find(Kind kind, int from, int to) const {
    for (const Op& o : ops_) {
      if (o.kind == kind && o.rank == from && (kind != Kind::send || o.peer == to)) return &o;
    }
    return nullptr;
  }

  std::vector<Op> ops_;
};

// A transport that records a group's operations and runs them at group_end.
class PostingComm : public Comm {
 public:
  void group_start() override { ops_.clear(); }
  void send(int local, const void* buf, std::size_t bytes, int peer) override {
    ops_.send(local, buf, bytes, peer);
  }
  void recv(int local, void* buf, std::size_t bytes, int peer) override {
    ops_.recv(local, buf, bytes, peer);
  }
  void all_gather(int local, const void* send, void* recv, std::size_t bytes) override {
    ops_.all_gather(local, send, recv, bytes);
  }

 protected:
  PostedOps ops_;
};

}  // namespace gpuattn::dist
