// Progress output (terminal bar redrawn with \r, plain lines every n steps, none), duration
// formatting, and the SVG plot (self-contained, one polyline per non-empty series, escaped text).
#include <sstream>

#include "support/gradcheck.h"
#include "train/plot_svg.h"
#include "train/progress.h"

using namespace lumen;
using namespace lumen::testing;

TEST_CASE("progress: bar on a terminal, lines otherwise, modes and durations",
          "[train][progress]") {
    CHECK(train::parse_progress_mode("auto", true) == train::ProgressMode::bar);
    CHECK(train::parse_progress_mode("auto", false) == train::ProgressMode::lines);
    CHECK(train::parse_progress_mode("none", true) == train::ProgressMode::none);
    require_error([] { train::parse_progress_mode("fancy", true); },
                  {"[progress]", "auto, bar, lines or none", "\"fancy\""});
    CHECK(train::format_duration(42.4) == "42s");
    CHECK(train::format_duration(187) == "3m07s");
    CHECK(train::format_duration(3720) == "1h02m");
    CHECK(train::format_duration(-1) == "?");

    std::ostringstream lines;
    train::Progress plain(lines, train::ProgressMode::lines, 2);
    plain.start_epoch(0, 3, 5);
    for (int i = 0; i < 5; ++i) plain.step(1.0 - 0.1 * i, 1e-3);
    plain.end_epoch("epoch 1/3: done");
    const std::string text = lines.str();
    CHECK(text.find("epoch 1/3 step 2/5") != std::string::npos);
    CHECK(text.find("epoch 1/3 step 4/5") != std::string::npos);
    CHECK(text.find("epoch 1/3 step 5/5") != std::string::npos);  // the epoch's last step
    CHECK(text.find("step 3/5") == std::string::npos);
    CHECK(text.find("lr 1.00e-03") != std::string::npos);
    CHECK(text.find('\r') == std::string::npos);
    CHECK(text.find("epoch 1/3: done\n") != std::string::npos);

    std::ostringstream bar;
    train::Progress terminal(bar, train::ProgressMode::bar);
    terminal.start_epoch(1, 3, 4, 2);  // a resumed epoch: 2 of 4 done
    terminal.step(0.5, 1e-3);
    terminal.step(0.4, 1e-3);  // the last step always redraws
    terminal.end_epoch("epoch 2/3: done");
    CHECK(bar.str().find("\repoch 2/3 [") != std::string::npos);
    CHECK(bar.str().find("4/4") != std::string::npos);
    CHECK(bar.str().find("ETA") != std::string::npos);
    CHECK(bar.str().find("\nepoch 2/3: done\n") != std::string::npos);

    std::ostringstream quiet;
    train::Progress none(quiet, train::ProgressMode::none);
    none.start_epoch(0, 1, 1);
    none.step(1.0, 1.0);
    none.end_epoch("x");
    CHECK(quiet.str().empty());
}

TEST_CASE("the SVG plot is self-contained with one line per series", "[train][plot]") {
    train::PlotPanel loss{
        "loss", {{"train", {0.5, 1, 2}, {2.0, 1.0, 0.5}}, {"test <a&b>", {1, 2}, {1.1, 0.7}}}};
    train::PlotPanel empty{"accuracy", {{"test", {}, {}}}};
    std::string svg = train::render_svg_plot({loss, empty}, "run");
    CHECK(svg.rfind("<?xml", 0) == 0);
    CHECK(svg.find("<svg xmlns='http://www.w3.org/2000/svg'") != std::string::npos);
    size_t polylines = 0;
    for (size_t at = svg.find("<polyline"); at != std::string::npos;
         at = svg.find("<polyline", at + 1))
        ++polylines;
    CHECK(polylines == 2);
    CHECK(svg.find("test &lt;a&amp;b&gt;") != std::string::npos);
    CHECK(svg.find("no data yet") != std::string::npos);
    CHECK(svg.find("href") == std::string::npos);  // nothing external
    CHECK(svg.find("</svg>") != std::string::npos);
}
