#include "CheckpointFixtures.h"
#include "TestRuns.h"

#include "core/checkpoint/CheckpointReader.h"
#include "core/checkpoint/PickleReader.h"
#include "core/tensor/TensorStats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

namespace fs = std::filesystem;
using namespace nanscope;
using namespace nanscope::test;

namespace {

class CheckpointReaderTest : public ::testing::Test
{
protected:
    std::string write(const std::string& name, const std::string& bytes)
    {
        const std::string path = m_dir / name;
        writeFile(path, bytes);
        return path;
    }

    // A state_dict {"w": float32 tensor of `values`} as torch.save lays it out.
    std::string stateDict(const std::vector<float>& values)
    {
        PickleWriter p;
        p.emptyOrderedDict().mark().text("w").tensor("FloatStorage", "0", int64_t(values.size()), 0,
                                                       {int64_t(values.size())}, {1});
        p.op('u');
        return makeZip({{"ckpt/data.pkl", p.finish()}, {"ckpt/data/0", rawBytes(values)}, {"ckpt/version", "3\n"}});
    }

    std::string archiveWithPickle(const std::string& pickle, const std::string& storage = std::string(16, '\0'))
    {
        return makeZip({{"ckpt/data.pkl", pickle}, {"ckpt/data/0", storage}});
    }

    ScratchDir m_dir;
};

TEST_F(CheckpointReaderTest, ReadsAStateDictWrittenLikeTorchSave)
{
    const auto path = write("sd.pt", stateDict({1.f, -2.f, 3.f, 0.f}));
    auto checkpoint = readCheckpoint(path);
    ASSERT_TRUE(checkpoint) << checkpoint.error();
    EXPECT_EQ(checkpoint->format, CheckpointFormat::StateDict);
    ASSERT_EQ(checkpoint->tensors.size(), 1u);
    EXPECT_EQ(checkpoint->tensors[0].name, "w");
    const auto stats = computeTensorStats("w", checkpoint->tensors[0].tensor);
    EXPECT_EQ(stats.numel, 4);
    EXPECT_DOUBLE_EQ(*stats.min, -2.0);
    EXPECT_DOUBLE_EQ(*stats.max, 3.0);
    EXPECT_DOUBLE_EQ(*stats.mean, 0.5);
    EXPECT_EQ(stats.zero, 1);
}

TEST_F(CheckpointReaderTest, TruncatedArchiveIsAnErrorNamingTheFile)
{
    const std::string whole = stateDict({1.f, 2.f, 3.f, 4.f});
    // Every truncation and a sweep of corrupted bytes: an error or a result, never a crash.
    for (size_t length = 0; length < whole.size(); ++length) {
        const auto path = write("cut.pt", whole.substr(0, length));
        auto checkpoint = readCheckpoint(path);
        if (length < whole.size() - 22)
            ASSERT_FALSE(checkpoint) << "length " << length;
        if (!checkpoint)
            EXPECT_NE(checkpoint.error().find(path), std::string::npos) << checkpoint.error();
    }
    for (size_t i = 0; i < whole.size(); ++i) {
        std::string corrupted = whole;
        corrupted[i] = char(corrupted[i] ^ 0xa5);
        (void)readCheckpoint(write("flip.pt", corrupted));
    }
}

TEST_F(CheckpointReaderTest, FlippedByteInsideTensorDataIsACorruptionErrorNotWrongStatistics)
{
    const std::string whole = stateDict({1.f, 2.f, 3.f, 4.f});
    ASSERT_TRUE(readCheckpoint(write("good.pt", whole)));
    // One bit of the third float's high byte: 3.0f (0x40400000) becomes 12.0f (0x41400000), a
    // plausible value that would otherwise pass unnoticed.
    const std::string needle = rawBytes(std::vector<float>{1.f, 2.f, 3.f, 4.f});
    const size_t at = whole.find(needle);
    ASSERT_NE(at, std::string::npos);
    std::string damaged = whole;
    damaged[at + 11] = char(damaged[at + 11] ^ 0x01);
    const auto path = write("damaged.pt", damaged);
    auto checkpoint = readCheckpoint(path);
    ASSERT_FALSE(checkpoint);
    EXPECT_NE(checkpoint.error().find(path), std::string::npos) << checkpoint.error();
    EXPECT_NE(checkpoint.error().find("ckpt/data/0"), std::string::npos) << checkpoint.error();
    EXPECT_NE(checkpoint.error().find("checksum"), std::string::npos) << checkpoint.error();
}

TEST_F(CheckpointReaderTest, ArchiveWithoutChecksumsIsRead)
{
    // PyTorch 2.6+ can write archives with every CRC-32 field 0 (set_crc32_options(False)).
    PickleWriter p;
    p.emptyOrderedDict().mark().text("w").tensor("FloatStorage", "0", 2, 0, {2}, {1});
    p.op('u');
    const auto path = write("nocrc.pt", makeZip({{"ckpt/data.pkl", p.finish(), 0, false},
                                                 {"ckpt/data/0", rawBytes(std::vector<float>{1.f, 3.f}), 0, false}}));
    auto checkpoint = readCheckpoint(path);
    ASSERT_TRUE(checkpoint) << checkpoint.error();
    EXPECT_DOUBLE_EQ(*computeTensorStats("w", checkpoint->tensors[0].tensor).mean, 2.0);
}

TEST_F(CheckpointReaderTest, PickleCallingOsSystemIsRefused)
{
    // The file the command would create is this test's own: a stale one elsewhere proves nothing.
    const std::string pwned = m_dir / "pwned";
    PickleWriter p;
    p.global("os", "system").mark().text("touch " + pwned).tuple().op('R');
    const auto path = write("evil.pt", archiveWithPickle(p.finish()));
    auto checkpoint = readCheckpoint(path);
    ASSERT_FALSE(checkpoint);
    EXPECT_NE(checkpoint.error().find("os.system"), std::string::npos) << checkpoint.error();
    EXPECT_NE(checkpoint.error().find(path), std::string::npos);
    EXPECT_FALSE(fs::exists(pwned));
}

TEST_F(CheckpointReaderTest, BuiltinsEvalThroughStackGlobalIsRefused)
{
    PickleWriter p;
    p.text("builtins").text("eval").op(char(0x93)).mark().text("1+1").tuple().op('R');
    auto checkpoint = readCheckpoint(write("evil.pt", archiveWithPickle(p.finish())));
    ASSERT_FALSE(checkpoint);
    EXPECT_NE(checkpoint.error().find("builtins.eval"), std::string::npos) << checkpoint.error();
}

TEST_F(CheckpointReaderTest, UnknownOpcodeIsRefused)
{
    std::string pickle = "\x80\x02" "I1\n.";
    auto checkpoint = readCheckpoint(write("op.pt", archiveWithPickle(pickle)));
    ASSERT_FALSE(checkpoint);
    EXPECT_NE(checkpoint.error().find("unsupported pickle opcode 0x49"), std::string::npos) << checkpoint.error();
}

TEST_F(CheckpointReaderTest, TensorReachingPastItsStorageIsRefused)
{
    PickleWriter p;
    p.emptyOrderedDict().mark().text("w").tensor("FloatStorage", "0", 4, 2, {3}, {1}).op('u');
    auto checkpoint = readCheckpoint(write("range.pt", archiveWithPickle(p.finish())));
    ASSERT_FALSE(checkpoint);
    EXPECT_NE(checkpoint.error().find("out of range"), std::string::npos) << checkpoint.error();
}

TEST_F(CheckpointReaderTest, StorageLargerThanItsBytesIsRefusedBeforeAllocating)
{
    PickleWriter p;
    p.tensor("FloatStorage", "0", int64_t(1) << 60, 0, {int64_t(1) << 60}, {1});
    auto checkpoint = readCheckpoint(write("big.pt", archiveWithPickle(p.finish())));
    ASSERT_FALSE(checkpoint);
    EXPECT_NE(checkpoint.error().find("holds 16 bytes"), std::string::npos) << checkpoint.error();
}

TEST_F(CheckpointReaderTest, AbsurdShapeOverflowIsRefused)
{
    PickleWriter p;
    const int64_t huge = int64_t(1) << 40;
    p.tensor("FloatStorage", "0", 4, 0, {huge, huge, huge}, {0, 0, 0});
    auto checkpoint = readCheckpoint(write("shape.pt", archiveWithPickle(p.finish())));
    ASSERT_FALSE(checkpoint);
    EXPECT_NE(checkpoint.error().find("overflow"), std::string::npos) << checkpoint.error();
}

TEST_F(CheckpointReaderTest, HugeViewOfATinyStorageIsRefused)
{
    // Stride 0 keeps every index in range, but walking 2^40 elements is no checkpoint.
    PickleWriter p;
    p.tensor("FloatStorage", "0", 4, 0, {int64_t(1) << 20, int64_t(1) << 20}, {0, 0});
    auto checkpoint = readCheckpoint(write("expand.pt", archiveWithPickle(p.finish())));
    ASSERT_FALSE(checkpoint);
    EXPECT_NE(checkpoint.error().find("absurd shape"), std::string::npos) << checkpoint.error();
}

TEST_F(CheckpointReaderTest, SelfContainingListIsRefused)
{
    // l = []; l.append(l)
    const std::string pickle("\x80\x02]q\x00h\x00" "a.", 9);
    auto checkpoint = readCheckpoint(write("cycle.pt", archiveWithPickle(pickle)));
    ASSERT_FALSE(checkpoint);
    EXPECT_NE(checkpoint.error().find("nested deeper"), std::string::npos) << checkpoint.error();
}

TEST_F(CheckpointReaderTest, CompressedEntryIsExplained)
{
    PickleWriter p;
    p.op('N');
    const auto path = write("deflate.pt", makeZip({{"ckpt/data.pkl", p.finish(), 8}}));
    auto checkpoint = readCheckpoint(path);
    ASSERT_FALSE(checkpoint);
    EXPECT_NE(checkpoint.error().find("compressed"), std::string::npos) << checkpoint.error();
}

TEST_F(CheckpointReaderTest, NotACheckpointIsAClearError)
{
    auto checkpoint = readCheckpoint(write("text.pt", "hello, world"));
    ASSERT_FALSE(checkpoint);
    EXPECT_NE(checkpoint.error().find("not a checkpoint"), std::string::npos) << checkpoint.error();
    auto missing = readCheckpoint(m_dir / "missing.pt");
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.error().find("missing.pt"), std::string::npos);
}

TEST_F(CheckpointReaderTest, SafetensorsWithOffsetsOutsideTheFileIsRefused)
{
    const std::string header = R"({"w":{"dtype":"F32","shape":[1000000],"data_offsets":[0,4000000]}})";
    std::string file;
    putLe(file, header.size(), 8);
    file += header + std::string(16, '\0');
    auto checkpoint = readCheckpoint(write("bad.safetensors", file));
    ASSERT_FALSE(checkpoint);
    EXPECT_NE(checkpoint.error().find("outside"), std::string::npos) << checkpoint.error();
}

TEST_F(CheckpointReaderTest, ReadsSafetensors)
{
    const std::string header = R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})";
    std::string file;
    putLe(file, header.size(), 8);
    file += header + rawBytes(std::vector<float>{1.f, 2.f, std::nanf(""), 4.f});
    auto checkpoint = readCheckpoint(write("ok.safetensors", file));
    ASSERT_TRUE(checkpoint) << checkpoint.error();
    EXPECT_EQ(checkpoint->format, CheckpointFormat::Safetensors);
    ASSERT_EQ(checkpoint->tensors.size(), 1u);
    const auto stats = computeTensorStats("a", checkpoint->tensors[0].tensor);
    EXPECT_EQ(stats.nan, 1);
    EXPECT_DOUBLE_EQ(*stats.max, 4.0);
}

TEST_F(CheckpointReaderTest, StridedViewIsReadInItsOwnOrder)
{
    // A transposed 2x3 view of a 6-element storage, starting one element in: [[1,3],[2,4],...]
    PickleWriter p;
    p.tensor("FloatStorage", "0", 7, 1, {3, 2}, {1, 3});
    const auto path = write("view.pt", makeZip({{"ckpt/data.pkl", p.finish()},
                                                 {"ckpt/data/0", rawBytes(std::vector<float>{9, 1, 2, 3, 4, 5, 6})}}));
    auto checkpoint = readCheckpoint(path);
    ASSERT_TRUE(checkpoint) << checkpoint.error();
    EXPECT_EQ(checkpoint->format, CheckpointFormat::Tensor);
    const auto bytes = checkpoint->tensors[0].tensor.contiguousBytes();
    std::vector<float> values(6);
    std::memcpy(values.data(), bytes.data(), 24);
    EXPECT_EQ(values, (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

namespace {

// A float32 tensor viewing a copy of `values`.
TensorView floatView(const std::vector<float>& values)
{
    TensorView view;
    view.shape = {int64_t(values.size())};
    view.strides = {1};
    view.storage = std::make_shared<std::vector<uint8_t>>(reinterpret_cast<const uint8_t*>(values.data()),
                                                          reinterpret_cast<const uint8_t*>(values.data() + values.size()));
    return view;
}

// The figures of the finite values, in float64 sums: what the kernel is checked against.
struct FiniteReference
{
    double count = 0, mean = 0, std = 0, meanMagnitude = 0;
    double low = std::numeric_limits<double>::infinity(), high = -std::numeric_limits<double>::infinity();
    int64_t zeros = 0;

    explicit FiniteReference(const std::vector<float>& values)
    {
        double sum = 0, magnitudes = 0;
        for (float v : values) {
            zeros += v == 0.0f;
            if (!std::isfinite(v))
                continue;
            sum += v;
            magnitudes += std::fabs(double(v));
            ++count;
            low = std::min(low, double(v));
            high = std::max(high, double(v));
        }
        mean = sum / count;
        meanMagnitude = magnitudes / count;
        double m2 = 0;
        for (float v : values)
            if (std::isfinite(v))
                m2 += (double(v) - mean) * (double(v) - mean);
        std = std::sqrt(m2 / (count - 1));
    }
};

} // namespace

TEST(TensorStatsTest, CountsEveryKindOfValue)
{
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<float> values(10000, 1.0f);
    values[3] = std::nanf("");
    values[4] = inf;
    values[5] = -inf;
    values[6] = -inf;
    values[7] = 0.0f;
    values[8] = 1e-40f; // subnormal in float32
    values[9999] = -7.0f;
    const auto s = computeTensorStats("x", floatView(values), 4);
    EXPECT_EQ(s.nan, 1);
    EXPECT_EQ(s.posinf, 1);
    EXPECT_EQ(s.neginf, 2);
    EXPECT_EQ(s.zero, 1);
    EXPECT_EQ(s.subnormal, 1);
    EXPECT_DOUBLE_EQ(*s.min, -7.0);
    EXPECT_DOUBLE_EQ(*s.max, 1.0);
    EXPECT_EQ(s.histogram.front() + s.histogram.back(), s.finite());
}

TEST(TensorStatsTest, BlocksOfVeryDifferentMagnitudeKeepFullAccuracy)
{
    // The one-pass kernel centres each block on what came before: a block of 1e30s after a block
    // of 1e-3s, a constant block at 1000, zeros, subnormals and a NaN must all come out exact.
    std::vector<float> values;
    for (int i = 0; i < 5000; ++i)
        values.push_back(1e-3f * float(1 + i % 13));
    for (int i = 0; i < 5000; ++i)
        values.push_back(1e30f * float(1 + i % 7));
    for (int i = 0; i < 9000; ++i)
        values.push_back(1000.0f);
    for (int i = 0; i < 3000; ++i)
        values.push_back(i % 3 == 0 ? 0.0f : (i % 3 == 1 ? 1e-41f : -2.5f));
    values[12345] = std::nanf("");
    const FiniteReference expected(values);
    const auto s = computeTensorStats("x", floatView(values));
    EXPECT_EQ(s.nan, 1);
    EXPECT_EQ(s.zero, 1000);
    EXPECT_EQ(s.subnormal, 1000);
    EXPECT_NEAR(*s.mean, expected.mean, 1e-6 * std::fabs(expected.mean));
    EXPECT_NEAR(*s.std, expected.std, 1e-6 * expected.std);
    EXPECT_DOUBLE_EQ(*s.min, -2.5);
    EXPECT_DOUBLE_EQ(*s.max, double(7e30f));
}

TEST(TensorStatsTest, EveryBlockHoldingANaNStillGivesExactFigures)
{
    // Tensors of a few kernel blocks (4096 values), where the block that decides the figures holds
    // a NaN or an Inf and so takes the careful path: after a block near 1, a block near 1 (the
    // careful path's one read, centred as the fast path), a block near 1e30 (its centred squares
    // overflow and it sums again), and after zeros a block near 1e-25 (squares that flush to zero at
    // the zeros' scale). Checked against float64 sums, in both builds of the kernel.
    const int block = 4096;
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    struct Case
    {
        const char* what;
        std::vector<float> magnitudes; // one block each; 0 for a block of zeros
    };
    const Case cases[] = {{"near 1 after near 1", {1.0f, 1.0f}},
                          {"1e30 after near 1", {1.0f, 1e30f}},
                          {"1e-25 after zeros", {0.0f, 1e-25f}},
                          {"1000 after 3e-3, with a zero and a subnormal", {3e-3f, 1000.0f}}};
    for (const Case& c : cases) {
        std::vector<float> values;
        for (size_t b = 0; b < c.magnitudes.size(); ++b)
            for (int i = 0; i < block; ++i)
                values.push_back(c.magnitudes[b] * (1.0f + 0.01f * float((i * 7 + int(b)) % 101)) * (i % 3 ? 1.0f : -1.0f));
        values[values.size() - 700] = nan;
        values[values.size() - 900] = inf;
        values[values.size() - 1000] = 0.0f;
        values[values.size() - 1001] = 1e-41f;
        values.resize(values.size() - 3); // a tail shorter than a vector in the last block
        const FiniteReference expected(values);
        const auto s = computeTensorStats("x", floatView(values));
        EXPECT_EQ(s.nan, 1) << c.what;
        EXPECT_EQ(s.posinf, 1) << c.what;
        EXPECT_EQ(s.zero, expected.zeros) << c.what;
        EXPECT_EQ(s.subnormal, 1) << c.what;
        EXPECT_DOUBLE_EQ(*s.min, expected.low) << c.what;
        EXPECT_DOUBLE_EQ(*s.max, expected.high) << c.what;
        // As exact as a float32 sum can be: the bound of summation is relative to the values'
        // magnitudes, not to their mean (which the signs here bring near zero).
        EXPECT_NEAR(*s.mean, expected.mean, 1e-6 * expected.meanMagnitude) << c.what;
        EXPECT_NEAR(*s.std, expected.std, 1e-6 * expected.std) << c.what;
        ASSERT_TRUE(s.nonzeroAbsmin) << c.what;
        EXPECT_EQ(*s.nonzeroAbsmin, double(1e-41f)) << c.what;
    }
    // The kernel's build is picked once per process: the AVX2 and baseline builds run this test in
    // children (on a CPU without AVX-512 or AVX2 they run the same build as this process).
    if (!std::getenv("NANSCOPE_NO_AVX2") && !std::getenv("NANSCOPE_NO_AVX512")) {
        const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
        for (const std::string build : {"NANSCOPE_NO_AVX512", "NANSCOPE_NO_AVX2"}) {
            const std::string command = build + "=1 '" + self
                                        + "' --gtest_filter=TensorStatsTest.EveryBlockHoldingANaNStillGivesExactFigures"
                                          " >/dev/null 2>&1";
            EXPECT_EQ(std::system(command.c_str()), 0) << "the build of the kernel without " << build.substr(12);
        }
    }
}

TEST(TensorStatsTest, TorchPathAgreesWithTheFusedKernel)
{
    std::vector<double> values(300000);
    for (size_t i = 0; i < values.size(); ++i)
        values[i] = 1000.0 + std::sin(double(i)) * (i % 7);
    values[17] = std::numeric_limits<double>::quiet_NaN();
    NamedTensor t{"w", {}};
    t.tensor.dtype = DType::Float64;
    t.tensor.shape = {300, 1000};
    t.tensor.strides = {1000, 1};
    t.tensor.storage = std::make_shared<std::vector<uint8_t>>(reinterpret_cast<uint8_t*>(values.data()),
                                                              reinterpret_cast<uint8_t*>(values.data() + values.size()));
    auto viaTorch = computeCheckpointStats({t}, {StatsDevice::TorchCpu});
    auto viaKernel = computeCheckpointStats({t}, {StatsDevice::Cpu});
    ASSERT_TRUE(viaTorch) << viaTorch.error();
    ASSERT_TRUE(viaKernel);
    const auto& a = (*viaTorch)[0];
    const auto& b = (*viaKernel)[0];
    EXPECT_EQ(a.nan, b.nan);
    EXPECT_DOUBLE_EQ(*a.min, *b.min);
    EXPECT_DOUBLE_EQ(*a.max, *b.max);
    EXPECT_NEAR(*a.mean, *b.mean, 1e-9 * std::fabs(*b.mean));
    EXPECT_NEAR(*a.std, *b.std, 1e-9 * *b.std);
    EXPECT_NEAR(a.norm, b.norm, 1e-9 * b.norm);
}

TEST(TensorStatsTest, LargeBFloat16TensorSplitAcrossThreadsAgreesWithLibTorch)
{
    // 4.5 M elements: enough for the kernel to split the tensor across two threads, and for the
    // widening of bfloat16 to go through its vector path. Values 1.5 + a small pattern, with a
    // NaN, a -Inf and zeros in blocks of their own, checked against LibTorch's float64 reductions.
    const int64_t n = 4500000;
    auto storage = std::make_shared<std::vector<uint8_t>>(size_t(n) * 2);
    auto* bits = reinterpret_cast<uint16_t*>(storage->data());
    auto toBFloat16 = [](float f) {
        uint32_t u;
        std::memcpy(&u, &f, 4);
        return uint16_t(u >> 16); // truncation: exact for the values below
    };
    for (int64_t i = 0; i < n; ++i)
        bits[i] = toBFloat16(1.5f + 0.25f * float(i % 5) - 0.125f * float(i % 3));
    bits[123457] = 0x7fc0;      // NaN
    bits[n - 10] = 0xff80;      // -Inf
    bits[2000000] = 0;          // zero
    bits[3000001] = 0x0001;     // the smallest positive subnormal
    NamedTensor t{"w", {}};
    t.tensor.dtype = DType::BFloat16;
    t.tensor.shape = {n};
    t.tensor.strides = {1};
    t.tensor.storage = storage;

    const TensorStats one = computeTensorStats("w", t.tensor, 0, 1);
    const TensorStats two = computeTensorStats("w", t.tensor, 0, 2);
    auto viaTorch = computeCheckpointStats({t}, {StatsDevice::TorchCpu});
    ASSERT_TRUE(viaTorch) << viaTorch.error();
    const TensorStats& expected = (*viaTorch)[0];
    for (const TensorStats* s : {&one, &two}) {
        EXPECT_EQ(s->nan, 1);
        EXPECT_EQ(s->neginf, 1);
        EXPECT_EQ(s->posinf, 0);
        EXPECT_EQ(s->zero, expected.zero);
        EXPECT_EQ(s->subnormal, 1);
        EXPECT_EQ(*s->min, *expected.min);
        EXPECT_EQ(*s->max, *expected.max);
        EXPECT_NEAR(*s->mean, *expected.mean, 1e-12 * *expected.mean);
        // Within a block the kernel sums in the tensor's own precision (float32 here), as torch.std
        // does on a float32 tensor; LibTorch's path here sums in float64.
        EXPECT_NEAR(*s->std, *expected.std, 1e-6 * *expected.std);
        EXPECT_NEAR(s->norm, expected.norm, 1e-7 * expected.norm);
        ASSERT_TRUE(s->nonzeroAbsmin && expected.nonzeroAbsmin);
        EXPECT_EQ(*s->nonzeroAbsmin, *expected.nonzeroAbsmin) << "the subnormal, not the zeros";
    }
    // The same bits on any number of threads: the tensor is summed in fixed chunks, merged in order.
    const TensorStats three = computeTensorStats("w", t.tensor, 0, 3);
    for (const TensorStats* s : {&two, &three}) {
        EXPECT_EQ(*s->mean, *one.mean);
        EXPECT_EQ(*s->std, *one.std);
        EXPECT_EQ(s->norm, one.norm);
    }
}

TEST(TensorStatsTest, ManyTensorsSpreadOverThreadsKeepTheirOwnFigures)
{
    // 40 tensors of 100,000 float32 values: together enough to spread over threads. Tensor k holds
    // k + 0.5 everywhere but one NaN in the odd ones, so a figure landing on the wrong tensor shows.
    std::vector<NamedTensor> tensors;
    for (int k = 0; k < 40; ++k) {
        const int64_t n = 100000;
        auto storage = std::make_shared<std::vector<uint8_t>>(size_t(n) * 4);
        auto* values = reinterpret_cast<float*>(storage->data());
        for (int64_t i = 0; i < n; ++i)
            values[i] = float(k) + 0.5f;
        if (k % 2)
            values[k * 100] = std::numeric_limits<float>::quiet_NaN();
        tensors.push_back({"t" + std::to_string(k), {DType::Float32, {n}, {1}, 0, storage, "cpu"}});
    }
    StatsOptions twoThreads;
    twoThreads.device = StatsDevice::Cpu;
    twoThreads.threads = 2;
    auto stats = computeCheckpointStats(tensors, twoThreads);
    ASSERT_TRUE(stats);
    ASSERT_EQ(stats->size(), tensors.size());
    for (int k = 0; k < 40; ++k) {
        const TensorStats& s = (*stats)[size_t(k)];
        EXPECT_EQ(s.name, "t" + std::to_string(k));
        EXPECT_EQ(s.nan, k % 2);
        EXPECT_DOUBLE_EQ(*s.mean, k + 0.5);
        EXPECT_DOUBLE_EQ(*s.max, k + 0.5);
    }
}

TEST(TensorStatsTest, TinyValuesAfterLeadingZerosKeepTheirSpread)
{
    // The kernel centres its sums on the first values it sees; here they are zeros, and the rest
    // is +-1e-25, whose squares (1e-50) are below float32's range at the zeros' scale.
    for (DType dtype : {DType::Float32, DType::BFloat16}) {
        const int n = 4096;
        std::vector<float> values(n, 0.0f);
        for (int i = 64; i < n; ++i)
            values[size_t(i)] = (i % 2 ? 1e-25f : -1e-25f);
        TensorView view;
        view.dtype = dtype;
        view.shape = {n};
        view.strides = {1};
        auto storage = std::make_shared<std::vector<uint8_t>>();
        for (float v : values) {
            uint32_t bits;
            std::memcpy(&bits, &v, 4);
            const int bytes = dtype == DType::Float32 ? 4 : 2;
            if (dtype == DType::BFloat16)
                bits >>= 16;
            for (int k = 0; k < bytes; ++k)
                storage->push_back(uint8_t(bits >> (8 * k)));
        }
        view.storage = storage;
        const TensorStats s = computeTensorStats("x", view);
        double expectedNorm = 0, element = dtype == DType::Float32 ? double(1e-25f) : 0;
        if (dtype == DType::BFloat16) {
            uint32_t bits;
            const float f = 1e-25f;
            std::memcpy(&bits, &f, 4);
            bits &= 0xffff0000u;
            float truncated;
            std::memcpy(&truncated, &bits, 4);
            element = truncated;
        }
        expectedNorm = element * std::sqrt(double(n - 64));
        EXPECT_EQ(s.zero, 64);
        EXPECT_NEAR(s.norm, expectedNorm, 1e-6 * expectedNorm) << "dtype " << int(dtype);
        EXPECT_GT(*s.std, 0.9 * element) << "dtype " << int(dtype);
    }
}

TEST(TensorStatsTest, CudaWithoutAGpuIsAnErrorNotACrash)
{
    if (cudaAvailable())
        GTEST_SKIP() << "a GPU is present";
    auto stats = computeCheckpointStats({}, {StatsDevice::Cuda});
    ASSERT_FALSE(stats);
    EXPECT_NE(stats.error().find("CUDA"), std::string::npos);
}

TEST(DemoCheckpointTest, PoisonedBatchNormRunningMeanIsAllNaN)
{
    const std::string path = std::string(NANSCOPE_TEST_RUNS) + "/batchnorm-poisoned/checkpoints/step_00000250.pt";
    auto checkpoint = readCheckpoint(path);
    ASSERT_TRUE(checkpoint) << checkpoint.error();
    EXPECT_EQ(checkpoint->format, CheckpointFormat::TorchScript);
    bool found = false;
    for (const auto& t : checkpoint->tensors) {
        if (t.name != "bn1.running_mean")
            continue;
        found = true;
        const auto s = computeTensorStats(t.name, t.tensor);
        EXPECT_EQ(s.nan, s.numel);
        EXPECT_FALSE(s.mean.has_value());
    }
    EXPECT_TRUE(found);
}

TEST(DemoCheckpointTest, BatchFileReadsAsAnObjectTree)
{
    const std::string path = std::string(NANSCOPE_TEST_RUNS) + "/division-by-zero/batches/step_00000180.pt";
    auto batch = readPickledFile(path);
    ASSERT_TRUE(batch) << batch.error();
    ASSERT_NE(batch->find("inputs"), nullptr);
    EXPECT_TRUE(batch->find("inputs")->isTensor());
    EXPECT_EQ(batch->find("inputs")->tensor->shape, (std::vector<int64_t>{32, 16}));
    ASSERT_NE(batch->find("loss"), nullptr);
    EXPECT_EQ(batch->find("loss")->text, "cross_entropy");
    ASSERT_NE(batch->find("step"), nullptr);
    EXPECT_EQ(batch->find("step")->integer, 180);
}

} // namespace
