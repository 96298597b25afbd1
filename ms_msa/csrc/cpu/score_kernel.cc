#include "score_kernel.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

#include "block_max.h"
#include "dtype_convert.h"

namespace msa {
namespace cpu {
namespace {

// Query rows per task: enough to reuse each decoded KV block many times, few enough that a task's
// query tile (rows x D fp32) stays in L1/L2.
constexpr int64_t kTargetRowsPerTask = 64;
// Below this many multiply-adds the thread start-up costs more than it saves.
constexpr double kMinWorkPerThread = 2e6;

struct Request {
  int64_t q_begin, q_len, kv_len, key_row0;
};

struct Task {
  int64_t b, g, t_begin, t_end;  // token offsets inside request b
};

Request RequestOf(const ScoreProblem &p, int64_t b) {
  Request r;
  r.q_begin = p.qlen[b];
  r.q_len = static_cast<int64_t>(p.qlen[b + 1]) - p.qlen[b];
  if (p.attrs.layout == Layout::kTND) {
    r.key_row0 = p.klen[b];
    r.kv_len = static_cast<int64_t>(p.klen[b + 1]) - p.klen[b];
  } else {
    r.key_row0 = 0;
    r.kv_len = p.klen[b];
  }
  return r;
}

// SPEC §4: the exclusive end of the keys token t_off of the request sees.
int64_t VisibleEnd(const ScoreProblem &p, const Request &r, int64_t t_off) {
  if (p.attrs.sparse_mode == 0) return r.kv_len;
  return std::min(std::max<int64_t>(r.kv_len - r.q_len + t_off + 1, 0), r.kv_len);
}

// Scratch of one worker; sized once per launch, O(rows x D + D x P), independent of sequence length.
struct Scratch {
  std::vector<float> q;        // rows_pad x D
  std::vector<float> kt;       // D x P
  std::vector<float> key_row;  // D
  std::vector<float> scale;    // P
  std::vector<int64_t> vis_end, limit;
  std::vector<float> row_max;
};

class TaskRunner {
 public:
  TaskRunner(const ScoreProblem &p, BlockMaxFn block_max)
      : p_(p), block_max_(block_max), group_(p.geo.n1 / p.geo.n2), P_(p.geo.block_size), D_(p.geo.d),
        W_(p.geo.out_width) {}

  int64_t tokens_per_task() const { return std::max<int64_t>(1, kTargetRowsPerTask / group_); }

  void Prepare(Scratch *s) const {
    const int64_t rows_pad = RoundUp(tokens_per_task() * group_, kRowBlock);
    s->q.assign(rows_pad * D_, 0.0f);
    s->kt.assign(D_ * P_, 0.0f);
    s->key_row.assign(D_, 0.0f);
    s->scale.assign(P_, 0.0f);
    s->vis_end.assign(tokens_per_task(), 0);
    s->limit.assign(rows_pad, 0);
    s->row_max.assign(rows_pad, 0.0f);
  }

  void Run(const Task &task, Scratch *s) const {
    const Request req = RequestOf(p_, task.b);
    const int64_t ntok = task.t_end - task.t_begin;
    const int64_t rows = ntok * group_;
    const int64_t rows_pad = RoundUp(rows, kRowBlock);
    int64_t max_vis = 0;
    for (int64_t i = 0; i < ntok; ++i) {
      s->vis_end[i] = VisibleEnd(p_, req, task.t_begin + i);
      max_vis = std::max(max_vis, s->vis_end[i]);
    }
    // Whole rows start as fill; visible blocks and forcing overwrite them.
    for (int64_t r = 0; r < rows; ++r) {
      float *row = OutRow(req, task, r);
      std::fill(row, row + W_, p_.fill_value);
    }
    if (max_vis > 0) {
      LoadQueries(req, task, rows, rows_pad, s);
      const int64_t blocks = CeilDiv(max_vis, P_);
      for (int64_t beta = 0; beta < blocks; ++beta) ScoreBlock(req, task, beta, max_vis, rows, rows_pad, s);
    }
    for (int64_t r = 0; r < rows; ++r) Force(req, task, s->vis_end[r / group_], OutRow(req, task, r));
  }

 private:
  float *OutRow(const Request &req, const Task &task, int64_t r) const {
    const int64_t token = req.q_begin + task.t_begin + r / group_;
    const int64_t head = task.g * group_ + r % group_;
    return p_.out + (head * p_.geo.t1 + token) * W_;
  }

  void LoadQueries(const Request &req, const Task &task, int64_t rows, int64_t rows_pad, Scratch *s) const {
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t token = req.q_begin + task.t_begin + r / group_;
      const int64_t head = task.g * group_ + r % group_;
      DecodeRow(p_.query_dtype, p_.query, (token * p_.geo.n1 + head) * D_, D_, s->q.data() + r * D_);
    }
    std::fill(s->q.begin() + rows * D_, s->q.begin() + rows_pad * D_, 0.0f);
  }

  // Element offsets of key n of logical block beta, and of its scale.
  void KeyOffsets(const Request &req, const Task &task, int64_t beta, int64_t n, int64_t *key_off,
                  int64_t *scale_off) const {
    const int64_t N2 = p_.geo.n2, g = task.g;
    if (p_.attrs.layout == Layout::kTND) {
      const int64_t row = req.key_row0 + beta * P_ + n;
      *key_off = (row * N2 + g) * D_;
      *scale_off = row * N2 + g;
      return;
    }
    const int64_t page = p_.block_table[task.b * p_.geo.table_width + beta];
    *key_off = p_.attrs.layout == Layout::kBBND ? ((page * P_ + n) * N2 + g) * D_ : ((page * N2 + g) * P_ + n) * D_;
    *scale_off = (page * N2 + g) * P_ + n;
  }

  void ScoreBlock(const Request &req, const Task &task, int64_t beta, int64_t max_vis, int64_t rows,
                  int64_t rows_pad, Scratch *s) const {
    const int64_t first_key = beta * P_;
    const int64_t nkeys = std::min(P_, max_vis - first_key);
    const int64_t nkeys_pad = RoundUp(nkeys, kKeyBlock);
    float *kt = s->kt.data();
    for (int64_t n = 0; n < nkeys; ++n) {
      int64_t key_off, scale_off;
      KeyOffsets(req, task, beta, n, &key_off, &scale_off);
      DecodeRow(p_.key_dtype, p_.key, key_off, D_, s->key_row.data());
      for (int64_t d = 0; d < D_; ++d) kt[d * P_ + n] = s->key_row[d];
      if (p_.scale != nullptr) s->scale[n] = p_.scale[scale_off];
    }
    for (int64_t d = 0; d < D_; ++d) std::fill(kt + d * P_ + nkeys, kt + d * P_ + nkeys_pad, 0.0f);
    std::fill(s->scale.begin() + nkeys, s->scale.begin() + nkeys_pad, 0.0f);

    for (int64_t r = 0; r < rows_pad; ++r) {
      const int64_t visible = r < rows ? s->vis_end[r / group_] - first_key : 0;
      s->limit[r] = std::min(std::max<int64_t>(visible, 0), nkeys);
    }
    block_max_(s->q.data(), rows_pad, D_, kt, P_, p_.scale != nullptr ? s->scale.data() : nullptr, s->limit.data(),
               s->row_max.data());
    for (int64_t r = 0; r < rows; ++r) {
      if (s->limit[r] > 0) OutRow(req, task, r)[beta] = s->row_max[r];
    }
  }

  // SPEC §4 forcing: replaces values; local wins over init.
  void Force(const Request &req, const Task &task, int64_t vis_end, float *row) const {
    const int64_t init = p_.attrs.init_blocks, local = p_.attrs.local_blocks;
    int64_t init_end, local_lo, local_hi;  // init [0, init_end), local [local_lo, local_hi)
    if (p_.attrs.local_window == LocalWindow::kToken) {
      const int64_t n_vis = CeilDiv(vis_end, P_);
      init_end = std::min(init, n_vis);
      local_lo = std::max<int64_t>(0, n_vis - local);
      local_hi = n_vis;
    } else {
      const int64_t n_req = CeilDiv(req.kv_len, P_);
      init_end = std::min(init, n_req);
      if (local > 0 && p_.start_loc != nullptr) {
        const int64_t s = p_.start_loc[task.b];
        local_lo = std::max<int64_t>(0, s + 1 - local);
        local_hi = std::min(s + 1, n_req);
      } else {
        local_lo = local_hi = 0;
      }
    }
    for (int64_t beta = 0; beta < init_end; ++beta) row[beta] = kInitForceValue;
    for (int64_t beta = local_lo; beta < local_hi; ++beta) row[beta] = kLocalForceValue;
  }

  const ScoreProblem &p_;
  BlockMaxFn block_max_;
  int64_t group_, P_, D_, W_;
};

}  // namespace

int ConfiguredThreads() {
  const char *env = std::getenv("MS_MSA_NUM_THREADS");
  if (env != nullptr) {
    const int n = std::atoi(env);
    if (n >= 1) return n;
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

void RunScore(const ScoreProblem &p, int num_threads) {
  const BlockMaxImpl impl = SelectBlockMax();
  TaskRunner runner(p, impl.fn);
  const int64_t tpt = runner.tokens_per_task();
  std::vector<Task> tasks;
  double work = 0.0;
  for (int64_t b = 0; b < p.geo.batch; ++b) {
    const Request req = RequestOf(p, b);
    work += static_cast<double>(req.q_len) * static_cast<double>(req.kv_len) * p.geo.n1 * p.geo.d;
    for (int64_t g = 0; g < p.geo.n2; ++g) {
      for (int64_t t = 0; t < req.q_len; t += tpt) tasks.push_back({b, g, t, std::min(t + tpt, req.q_len)});
    }
  }
  const int64_t by_work = static_cast<int64_t>(work / kMinWorkPerThread) + 1;
  const int threads = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>({num_threads, (int64_t)tasks.size(), by_work})));

  std::vector<Scratch> scratch(threads);
  for (auto &s : scratch) runner.Prepare(&s);
  std::atomic<int64_t> next{0};
  auto worker = [&](int id) {
    for (int64_t i = next.fetch_add(1); i < static_cast<int64_t>(tasks.size()); i = next.fetch_add(1)) {
      runner.Run(tasks[i], &scratch[id]);
    }
  };
  std::vector<std::thread> pool;
  for (int id = 1; id < threads; ++id) pool.emplace_back(worker, id);
  worker(0);
  for (auto &t : pool) t.join();
}

}  // namespace cpu
}  // namespace msa
