// Importer inputs that are not what they claim (docs/formats.md, "What is refused before parsing"),
// through the library API: what a byte order mark does to references and content hashes, regular-file
// reading, ids on some lines.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "kplab/io.h"
#include "temp_dir.h"

namespace kplab {
namespace {

using test::TempDir;

std::string WriteHostileFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// The BOM is stripped at the start of a file: the first reference is "graph neural networks", not
// "\xEF\xBB\xBFgraph neural networks"; the content hash still tells the two files apart.
TEST(IoHostileTest, ByteOrderMarkIsStrippedButHashed) {
  TempDir dir;
  const std::string plain = WriteHostileFile(dir / "plain_allkeywords.txt", "graph neural networks;traffic\nsoil\n");
  const std::string marked =
      WriteHostileFile(dir / "bom_allkeywords.txt", "\xEF\xBB\xBFgraph neural networks;traffic\nsoil\n");
  auto a = ImportDataset(plain);
  auto b = ImportDataset(marked);
  ASSERT_TRUE(a.ok()) << a.error().message;
  ASSERT_TRUE(b.ok()) << b.error().message;
  ASSERT_EQ(b->docs.size(), 2u);
  EXPECT_EQ(b->docs[0].refs[0][0], "graph neural networks");
  EXPECT_EQ(a->docs[0].refs, b->docs[0].refs);
  EXPECT_NE(a->content_hash, b->content_hash);
  // A BOM elsewhere than at the start is text (U+FEFF) and stays.
  auto c = ImportDataset(WriteHostileFile(dir / "mid_allkeywords.txt",
                                          "a\n\xEF\xBB\xBF"
                                          "b\n"));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->docs[1].refs[0][0], "\xEF\xBB\xBF" "b");
  // Predictions: a BOM before the first JSON object no longer makes line 1 malformed.
  auto p =
      ImportPredictions(WriteHostileFile(dir / "p.jsonl", "\xEF\xBB\xBF{\"id\": \"1\", \"predictions\": [\"x\"]}\n"));
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->docs[0].doc_id, "1");
}

TEST(IoHostileTest, ReadRegularFileRefusesBeforeReading) {
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "f").c_str(), 0644), 0);
  EXPECT_EQ(ReadRegularFile(dir / "f", "X").error().message, dir / "f" + ": a FIFO, not a regular file (expected X)");
  EXPECT_EQ(ReadRegularFile("/dev/zero", "X").error().message,
            "/dev/zero: a character device, not a regular file (expected X)");
  EXPECT_EQ(ReadRegularFile(dir.path(), "X").error().message, dir.path() + ": a directory, not a regular file (expected X)");
  EXPECT_EQ(ReadRegularFile(dir / "none", "X").error().message, dir / "none" + ": no such file (expected X)");
  EXPECT_EQ(ReadRegularFile(std::string("a\0b", 3), "X").error().message,
            "a: path contains a NUL byte (expected X)");
  std::filesystem::create_symlink("l", dir / "l");
  EXPECT_EQ(ReadRegularFile(dir / "l", "X").error().message, dir / "l" + ": symbolic link loop (expected X)");
  // Files whose size the kernel reports as 0 are read to their end.
  auto self = ReadRegularFile("/proc/self/status", "X");
  ASSERT_TRUE(self.ok()) << self.error().message;
  EXPECT_NE(self->find("Pid:"), std::string::npos);
  EXPECT_EQ(*ReadRegularFile(WriteHostileFile(dir / "r", std::string(100000, 'r')), "X"), std::string(100000, 'r'));
}

}  // namespace
}  // namespace kplab
