// A self-contained SVG chart of training curves (no scripts, fonts or files referenced): one
// panel per group of series sharing a y axis, e.g. "loss" (train and test loss) and "accuracy"
// (train and test accuracy), x = epochs (fractional for per-step points).
#pragma once

#include <string>
#include <vector>

namespace lumen::train {

struct PlotSeries {
    std::string label;  // legend text
    std::vector<double> x, y;
};

struct PlotPanel {
    std::string title;  // also the y axis label
    std::vector<PlotSeries> series;
};

// The SVG document: panels side by side, each with axes, 5 ticks per axis, grid lines and a
// legend; non-finite points are skipped; an empty panel shows "no data yet".
std::string render_svg_plot(const std::vector<PlotPanel>& panels, const std::string& title);

}  // namespace lumen::train
