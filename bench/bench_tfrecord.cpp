// SPDX-License-Identifier: Apache-2.0
// TFRecord reading (the target: >= 500 MB/s from the page cache with CRC checks
// on). A 64 MiB file of 1 KiB records is written once to /tmp (kept between runs) and
// read again and again, so it comes from the page cache:
//   tfrecord/reader_1KB        RecordReader: both CRCs of every record, views into its buffer
//   tfrecord/dataset_1KB       Dataset::tfrecord: the same plus one string tensor per record
//   tfrecord/crc32c_1MB        the checksum alone, SSE4.2 path (and _table: the fallback)
// Reported as a "GB" rate counter (GB/s of file bytes) and bytes_per_second.
#include <benchmark/benchmark.h>
#include <sys/stat.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"
#include "deepflow/core/crc32c.h"
#include "deepflow/data/dataset.h"
#include "deepflow/data/tfrecord.h"

namespace deepflow {
namespace {

using bench::warm_up;

constexpr int64_t kRecords = 64 * 1024;
constexpr int64_t kRecordBytes = 1024;
constexpr int64_t kFileBytes = kRecords * (kRecordBytes + 16);

// The file, written on first use (again when its size is wrong).
const std::string& bench_file() {
  static const std::string path = [] {
    std::string p = "/tmp/deepflow_bench_tfrecord_64MiB_1KiB.tfrecord";
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0 && st.st_size == kFileBytes) return p;
    std::mt19937_64 rng(5);
    std::string rec(kRecordBytes, '\0');
    data::RecordWriter w(p);
    for (int64_t i = 0; i < kRecords; ++i) {
      for (size_t k = 0; k < rec.size(); k += 8) {
        const uint64_t v = rng();
        rec.replace(k, 8, reinterpret_cast<const char*>(&v), 8);
      }
      w.write(rec);
    }
    w.close();
    return p;
  }();
  return path;
}

void set_rate(benchmark::State& state, double bytes_per_iteration) {
  state.SetBytesProcessed(int64_t(bytes_per_iteration) * state.iterations());
  state.counters["GB"] = benchmark::Counter(bytes_per_iteration * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

int64_t read_all(const std::string& path) {
  data::RecordReader r(path);
  int64_t n = 0;
  while (auto rec = r.read()) n += int64_t(rec->size());
  return n;
}

void bm_reader(benchmark::State& state) {
  if (!warm_up(state, [] { read_all(bench_file()); })) return;  // also pulls the file into the page cache
  for (auto _ : state) {
    const int64_t n = read_all(bench_file());
    if (n != kRecords * kRecordBytes) state.SkipWithError("short read");
    benchmark::DoNotOptimize(n);
  }
  set_rate(state, double(kFileBytes));
}

void bm_dataset(benchmark::State& state) {
  const data::Dataset ds = data::Dataset::tfrecord({bench_file()});
  auto pass = [&] {
    int64_t n = 0;
    for (const data::Element& e : ds) n += int64_t(e[0].data<std::string>()->size());
    return n;
  };
  if (!warm_up(state, pass)) return;
  for (auto _ : state) benchmark::DoNotOptimize(pass());
  set_rate(state, double(kFileBytes));
}

void bm_crc(benchmark::State& state, bool table) {
  std::vector<char> buf(1 << 20);
  std::mt19937 rng(1);
  for (auto& c : buf) c = char(rng());
  for (auto _ : state)
    benchmark::DoNotOptimize(table ? detail::crc32c_extend_portable(0, buf.data(), buf.size())
                                   : crc32c(buf.data(), buf.size()));
  set_rate(state, double(buf.size()));
}

BENCHMARK(bm_reader)->Name("tfrecord/reader_1KB")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(bm_dataset)->Name("tfrecord/dataset_1KB")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_crc, sse42, false)->Name("tfrecord/crc32c_1MB")->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(bm_crc, table, true)->Name("tfrecord/crc32c_table_1MB")->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace deepflow
