// SPDX-License-Identifier: Apache-2.0
// io::CheckpointManager: max_to_keep (files deleted, the state file's list), recovery of
// the list by a new manager, keep_checkpoint_every_n_hours on a fake clock, explicit
// checkpoint numbers, restore_or_initialize, and the clean-up of killed writers' files.
#include "deepflow/io/checkpoint_manager.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "deepflow/io/bundle.h"
#include "deepflow/ops/ops.h"
#include "io_test_util.h"
#include "test_util.h"

namespace deepflow::io {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::error_of;
using testing::TempDir;

TEST(CheckpointManager, KeepsTheNewestAndDeletesTheRest) {
  TempDir dir;
  Variable v(scalar(0), "v");
  CheckpointManager m(Checkpoint({{"v", v}}), dir.path(), 2);
  EXPECT_EQ(m.latest_checkpoint(), "");
  for (int i = 1; i <= 4; ++i) {
    v.assign(scalar(i));
    EXPECT_EQ(m.save(), dir / ("ckpt-" + std::to_string(i)));
  }
  EXPECT_THAT(m.checkpoints(), ElementsAre(dir / "ckpt-3", dir / "ckpt-4"));
  EXPECT_EQ(m.latest_checkpoint(), dir / "ckpt-4");
  EXPECT_EQ(testing::list_dir(dir.path()),
            (std::vector<std::string>{"checkpoint", "ckpt-3.data-00000-of-00001", "ckpt-3.index",
                                      "ckpt-4.data-00000-of-00001", "ckpt-4.index"}));
  const std::string state = testing::read_bytes(dir / "checkpoint");
  EXPECT_THAT(state, HasSubstr("model_checkpoint_path: \"ckpt-4\"\n"
                               "all_model_checkpoint_paths: \"ckpt-3\"\n"
                               "all_model_checkpoint_paths: \"ckpt-4\"\n"
                               "all_model_checkpoint_timestamps: "));
  EXPECT_EQ(latest_checkpoint(dir.path()), dir / "ckpt-4");
  EXPECT_EQ(BundleReader(dir / "ckpt-3").read("v/.ATTRIBUTES/VARIABLE_VALUE").item<float>(), 3.f);

  // A new manager (a restarted job) recovers the list and, once restored, the numbering.
  Variable w(scalar(0), "v");
  CheckpointManager again(Checkpoint({{"v", w}}), dir.path() + "/", 2);
  EXPECT_THAT(again.checkpoints(), ElementsAre(dir / "ckpt-3", dir / "ckpt-4"));
  EXPECT_EQ(again.restore_or_initialize(), dir / "ckpt-4");
  EXPECT_EQ(w.value().item<float>(), 4.f);
  EXPECT_EQ(again.save(), dir / "ckpt-5");
  EXPECT_THAT(again.checkpoints(), ElementsAre(dir / "ckpt-4", dir / "ckpt-5"));
  EXPECT_FALSE(testing::file_exists(dir / "ckpt-3.index"));
}

TEST(CheckpointManager, KeepsOneEveryNHours) {
  TempDir dir;
  Variable v(scalar(0), "v");
  double now = 0;
  CheckpointManager m(Checkpoint({{"v", v}}), dir.path(), 1, 1.0);
  m.set_clock([&] { return now; });
  for (int i = 1; i <= 5; ++i) {
    now = 1800.0 * (i - 1);  // every half hour, from the manager's start
    m.save();
  }
  // ckpt-3 (saved 1 h after the start) is kept for good; ckpt-5 is the one managed.
  EXPECT_THAT(m.checkpoints(), ElementsAre(dir / "ckpt-5"));
  EXPECT_EQ(testing::list_dir(dir.path()),
            (std::vector<std::string>{"checkpoint", "ckpt-3.data-00000-of-00001", "ckpt-3.index",
                                      "ckpt-5.data-00000-of-00001", "ckpt-5.index"}));
  EXPECT_THAT(testing::read_bytes(dir / "checkpoint"), HasSubstr("last_preserved_timestamp: 3600"));
}

TEST(CheckpointManager, NumbersNamesAndOptions) {
  TempDir dir;
  Variable v(scalar(0), "v");
  CheckpointManager m(Checkpoint({{"v", v}}), dir / "sub/dir", std::nullopt, std::nullopt, "model");
  EXPECT_EQ(m.save(100), dir / "sub/dir/model-100");  // the directory is created
  EXPECT_EQ(m.save(7), dir / "sub/dir/model-7");
  EXPECT_EQ(m.save(100), dir / "sub/dir/model-100");  // saved again: now the newest
  EXPECT_THAT(m.checkpoints(), ElementsAre(dir / "sub/dir/model-7", dir / "sub/dir/model-100"));
  EXPECT_EQ(m.save(), dir / "sub/dir/model-4");  // the counter counts every save
  EXPECT_EQ(m.checkpoints().size(), 3u);         // max_to_keep unset: none deleted

  EXPECT_THAT(error_of([&] { CheckpointManager bad(Checkpoint({{"v", v}}), dir.path(), 0); }),
              HasSubstr("[CheckpointManager] max_to_keep must be at least 1"));
  EXPECT_THAT(error_of([&] { CheckpointManager bad(Checkpoint({{"v", v}}), dir.path(), 1, std::nullopt, "a/b"); }),
              HasSubstr("checkpoint_name 'a/b' must be a non-empty file name"));
  TempDir fresh;
  CheckpointManager none(Checkpoint({{"v", v}}), fresh.path(), 1);
  EXPECT_EQ(none.restore_or_initialize(), "");
}

TEST(CheckpointManager, RemovesWhatKilledWritersLeft) {
  TempDir dir;
  testing::write_bytes(dir / "ckpt-9.index.tmp-999999999-0", "half");
  testing::write_bytes(dir / "ckpt-9.data-00000-of-00001.tmp-999999999-1", "half");
  testing::write_bytes(dir / "checkpoint.tmp-999999999-2", "half");
  testing::write_bytes(dir / "unrelated.tmp-999999999-2", "not ours");
  Variable v(scalar(0), "v");
  CheckpointManager m(Checkpoint({{"v", v}}), dir.path(), 1);
  m.save();
  EXPECT_EQ(testing::list_dir(dir.path()),
            (std::vector<std::string>{"checkpoint", "ckpt-1.data-00000-of-00001", "ckpt-1.index",
                                      "unrelated.tmp-999999999-2"}));
}

}  // namespace
}  // namespace deepflow::io
