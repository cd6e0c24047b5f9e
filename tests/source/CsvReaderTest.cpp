#include "core/importers/CsvReader.h"

#include "SourceTestSupport.h"

using namespace nanscope;
using namespace nanscope::testing;

namespace {

using Fields = std::vector<std::string>;

std::vector<CsvProblem> problemsOfKind(const CsvTable& table, CsvProblem::Kind kind)
{
    std::vector<CsvProblem> found;
    for (const CsvProblem& problem : table.problems)
        if (problem.kind == kind)
            found.push_back(problem);
    return found;
}

} // namespace

TEST(CsvReader, QuotedFieldsHoldCommasQuotesAndLineBreaks)
{
    const CsvTable table = parseCsv("name,note,value\n"
                                    "\"loss, train\",\"said \"\"hi\"\"\",1.5\n"
                                    "\"two\nlines\",\"\",2\n"
                                    "plain,\"crlf\r\ninside\",3\n"
                                    "last,x,4\n");
    EXPECT_EQ(table.header, (Fields { "name", "note", "value" }));
    ASSERT_EQ(table.rows.size(), 4u);
    EXPECT_EQ(table.rows[0].fields, (Fields { "loss, train", "said \"hi\"", "1.5" }));
    EXPECT_EQ(table.rows[1].fields, (Fields { "two\nlines", "", "2" }));
    EXPECT_EQ(table.rows[2].fields, (Fields { "plain", "crlf\r\ninside", "3" }));
    // Lines are counted in the text, so a record after multi-line fields names its real line.
    EXPECT_EQ(table.rows[0].line, 2);
    EXPECT_EQ(table.rows[1].line, 3);
    EXPECT_EQ(table.rows[2].line, 5);
    EXPECT_EQ(table.rows[3].line, 7);
    EXPECT_TRUE(table.problems.empty());
}

TEST(CsvReader, CrlfBomAndALastLineWithoutLineBreak)
{
    const CsvTable table = parseCsv("\xEF\xBB\xBFstep,loss\r\n1,0.5\r\n2,0.4\n3,0.3");
    EXPECT_EQ(table.header, (Fields { "step", "loss" }));
    ASSERT_EQ(table.rows.size(), 3u);
    EXPECT_EQ(table.rows[0].fields, (Fields { "1", "0.5" }));
    EXPECT_EQ(table.rows[2].fields, (Fields { "3", "0.3" }));
    EXPECT_EQ(table.rows[2].line, 4);
    EXPECT_FALSE(table.endsWithLineBreak);
    EXPECT_TRUE(parseCsv("a\n1\n").endsWithLineBreak);
}

TEST(CsvReader, EmptyFieldsAreKeptAndBlankLinesSkipped)
{
    const CsvTable table = parseCsv("a,b,c\n1,,3\n\n,,\n4,5,\n");
    ASSERT_EQ(table.rows.size(), 3u);
    EXPECT_EQ(table.rows[0].fields, (Fields { "1", "", "3" }));
    EXPECT_EQ(table.rows[1].fields, (Fields { "", "", "" }));
    EXPECT_EQ(table.rows[1].line, 4);
    EXPECT_EQ(table.rows[2].fields, (Fields { "4", "5", "" }));
    EXPECT_TRUE(table.problems.empty());
}

TEST(CsvReader, RaggedRowsAreReportedByLine)
{
    const CsvTable table = parseCsv("a,b,c\n1,2,3\n1,2\n1,2,3,4\n\"x\ny\",2,3\n5\n");
    ASSERT_EQ(table.rows.size(), 5u);
    EXPECT_EQ(table.rows[1].fields, (Fields { "1", "2" }));
    EXPECT_EQ(table.rows[2].fields, (Fields { "1", "2", "3", "4" }));
    const std::vector<CsvProblem> ragged = problemsOfKind(table, CsvProblem::Kind::RaggedRecord);
    ASSERT_EQ(ragged.size(), 3u);
    EXPECT_EQ(ragged[0].line, 3);
    EXPECT_EQ(ragged[0].message, "line 3: 2 fields where the header has 3");
    EXPECT_EQ(ragged[1].line, 4);
    EXPECT_EQ(ragged[1].message, "line 4: 4 fields where the header has 3");
    EXPECT_EQ(ragged[2].line, 7); // after a record that spans lines 5 and 6
}

TEST(CsvReader, QuotesOutOfPlaceAreKeptAsTextAndReported)
{
    const CsvTable table = parseCsv("a,b\n5\"7,\"x\"y\n");
    ASSERT_EQ(table.rows.size(), 1u);
    EXPECT_EQ(table.rows[0].fields, (Fields { "5\"7", "xy" }));
    EXPECT_EQ(problemsOfKind(table, CsvProblem::Kind::StrayQuote).size(), 2u);
    EXPECT_EQ(table.problems[0].line, 2);
}

TEST(CsvReader, QuoteLeftOpenAtTheEndKeepsTheRecord)
{
    const CsvTable table = parseCsv("a,b\n1,2\n3,\"open\nstill open");
    ASSERT_EQ(table.rows.size(), 2u);
    EXPECT_EQ(table.rows[1].fields, (Fields { "3", "open\nstill open" }));
    const std::vector<CsvProblem> unclosed = problemsOfKind(table, CsvProblem::Kind::UnclosedQuote);
    ASSERT_EQ(unclosed.size(), 1u);
    EXPECT_EQ(unclosed[0].line, 3);
    EXPECT_FALSE(table.endsWithLineBreak);
}

TEST(CsvReader, EmptyTextHasNoHeader)
{
    EXPECT_TRUE(parseCsv("").header.empty());
    EXPECT_TRUE(parseCsv("\xEF\xBB\xBF").header.empty());
    EXPECT_TRUE(parseCsv("\n\n").header.empty());
}

TEST(CsvReader, GarbageNeverStopsTheReader)
{
    std::string garbage;
    for (int i = 0; i < 20000; ++i)
        garbage += static_cast<char>((i * 7919) % 256);
    const CsvTable table = parseCsv(garbage);
    EXPECT_LE(table.problems.size(), 1000u);
}

TEST(CsvReader, FileThatCannotBeReadIsAnErrorNamingIt)
{
    ScratchFolder scratch;
    const std::string absent = scratch.path() + "/absent.csv";
    const Result<CsvTable> table = readCsvFile(absent);
    ASSERT_FALSE(table.ok());
    EXPECT_EQ(table.error().rfind(absent + ": ", 0), 0u) << table.error();

    const std::string present = scratch.write("small.csv", "x,y\n1,2\n");
    const Result<CsvTable> read = readCsvFile(present);
    ASSERT_TRUE(read.ok()) << read.error();
    EXPECT_EQ(read->rows.size(), 1u);
}
