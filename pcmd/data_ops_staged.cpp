// data_ops_staged.cpp — the requests of keys the ranks store themselves (store.h): the staging
// directory, and a store's record (or its failure) made the key's data, on the data thread
// behind the stores and loads queued before it.
#include "data_ops.h"
#include "error.h"
#include "pcm_types.h"

namespace pcm::detail {

using proto::json;

json DataOps::stage_dir(const ops::StageDir& r, std::vector<char>& reply_data) {
  const Job& job = jobs_.find(r.job);
  return disk_.defer({[this, name = job.name](std::vector<char>&) {
                        auto d = store_.stage_dir(name);
                        return json{{"ok", true}, {"dir", d.dir.string()}, {"token", d.token}};
                      },
                      nullptr},
                     reply_data);
}

json DataOps::store_staged(const ops::StoreStaged& r, std::vector<char>& reply_data) {
  const Job& job = jobs_.find(r.job);
  std::optional<ShardRecord> rec;
  if (r.record) rec = ShardRecord::from_json(*r.record);  // PCM_ERR_ARG when malformed
  return disk_.defer({[this, name = job.name, r, rec](std::vector<char>&) {
                        if (rec) {
                          store_.put_staged(name, r.rank, r.key, *rec);
                        } else {
                          store_.failed_staged(name, r.rank, r.key);
                          log_->warn("job {}: rank {} could not store '{}': {}", name, r.rank,
                                     r.key, proto::printable(*r.error));
                        }
                        return proto::ok_reply();
                      },
                      nullptr},
                     reply_data);
}

}  // namespace pcm::detail
