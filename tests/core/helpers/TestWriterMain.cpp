// A writer in its own process, for the tests that follow a run while it is written and that
// kill a writer mid-run. Writes ROWS rows to RUN_DIR, one every DELAY_MS milliseconds, and prints
// "row N" after each flushed append so the test knows what must be readable. With --hold, after
// the last row it waits for its stdin to close before it closes the run: a test then sees the run
// while its writer holds it open for as long as it needs, on any machine.
#include "core/run/RunWriter.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

int main(int argc, char** argv)
{
    const bool hold = argc == 5 && std::string(argv[4]) == "--hold";
    if (argc != 4 && !hold) {
        std::fprintf(stderr, "usage: nanscope_test_writer RUN_DIR ROWS DELAY_MS [--hold]\n");
        return 2;
    }
    const int rows = std::atoi(argv[2]);
    const int delayMs = std::atoi(argv[3]);
    nanscope::RunSchema schema;
    schema.scalars = {"loss", "grad_norm"};
    schema.layers = {"a.weight", "b.weight", "c.weight"};
    auto writer = nanscope::RunWriter::create(argv[1], schema);
    if (!writer) {
        std::fprintf(stderr, "%s\n", writer.error().c_str());
        return 1;
    }
    for (int i = 0; i < rows; ++i) {
        const float v = float(i);
        auto status = (*writer)->appendScalars(i * 10, {{"loss", 1.0 / (i + 1)}, {"grad_norm", double(i)}});
        if (status)
            status = (*writer)->appendRow("layers", i * 10, {{"grad_norm", {v, v + 0.5f, v + 0.25f}}});
        if (!status) {
            std::fprintf(stderr, "%s\n", status.error().c_str());
            return 1;
        }
        std::printf("row %d\n", i);
        std::fflush(stdout);
        std::this_thread::sleep_for(std::chrono::milliseconds(delayMs));
    }
    if (hold)
        while (std::fgetc(stdin) != EOF) {
        }
    return 0; // the writer closes the run here
}
