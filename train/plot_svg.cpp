// SVG drawing of the curves: linear scales from the data range (padded 5%), polylines in a
// fixed colour cycle.
#include "train/plot_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace lumen::train {

namespace {

constexpr double kPanelWidth = 460, kPanelHeight = 320, kLeft = 64, kRight = 16, kTop = 40,
                 kBottom = 44;
const char* const kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd"};

struct Range {
    double low = INFINITY, high = -INFINITY;
    void add(double v) {
        if (!std::isfinite(v)) return;
        low = std::min(low, v);
        high = std::max(high, v);
    }
    bool empty() const { return low > high; }
    // Pads flat or tight ranges so that a line never sits on the frame.
    void pad() {
        double span = high - low;
        double margin = span > 0 ? 0.05 * span : std::max(1e-3, std::abs(low) * 0.05);
        low -= margin;
        high += margin;
    }
};

std::string number(double v) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.4g", v);
    return text;
}

std::string escape(const std::string& text) {
    std::string out;
    for (char c : text) {
        if (c == '<')
            out += "&lt;";
        else if (c == '>')
            out += "&gt;";
        else if (c == '&')
            out += "&amp;";
        else
            out += c;
    }
    return out;
}

struct Frame {
    double x0, y0, width, height;
    Range xs, ys;
    double px(double x) const { return x0 + (x - xs.low) / (xs.high - xs.low) * width; }
    double py(double y) const { return y0 + height - (y - ys.low) / (ys.high - ys.low) * height; }
};

void draw_axes(std::ostringstream& svg, const Frame& f, const std::string& title) {
    svg << "<rect x='" << f.x0 << "' y='" << f.y0 << "' width='" << f.width << "' height='"
        << f.height << "' fill='white' stroke='#444'/>\n";
    for (int i = 0; i <= 4; ++i) {
        double x = f.xs.low + (f.xs.high - f.xs.low) * i / 4, px = f.px(x);
        double y = f.ys.low + (f.ys.high - f.ys.low) * i / 4, py = f.py(y);
        svg << "<line x1='" << px << "' y1='" << f.y0 << "' x2='" << px << "' y2='"
            << f.y0 + f.height << "' stroke='#ddd'/>\n"
            << "<text x='" << px << "' y='" << f.y0 + f.height + 16 << "' text-anchor='middle'>"
            << number(x) << "</text>\n"
            << "<line x1='" << f.x0 << "' y1='" << py << "' x2='" << f.x0 + f.width << "' y2='"
            << py << "' stroke='#ddd'/>\n"
            << "<text x='" << f.x0 - 6 << "' y='" << py + 4 << "' text-anchor='end'>" << number(y)
            << "</text>\n";
    }
    svg << "<text x='" << f.x0 + f.width / 2 << "' y='" << f.y0 - 12
        << "' text-anchor='middle' font-weight='bold'>" << escape(title) << "</text>\n"
        << "<text x='" << f.x0 + f.width / 2 << "' y='" << f.y0 + f.height + 34
        << "' text-anchor='middle'>epoch</text>\n";
}

void draw_panel(std::ostringstream& svg, const PlotPanel& panel, double offset_x) {
    Frame f{offset_x + kLeft,
            kTop + 20,
            kPanelWidth - kLeft - kRight,
            kPanelHeight - kTop - kBottom,
            {},
            {}};
    for (const PlotSeries& s : panel.series)
        for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i)
            if (std::isfinite(s.x[i]) && std::isfinite(s.y[i])) {
                f.xs.add(s.x[i]);
                f.ys.add(s.y[i]);
            }
    if (f.xs.empty()) {
        f.xs = {0, 1};
        f.ys = {0, 1};
        draw_axes(svg, f, panel.title);
        svg << "<text x='" << f.x0 + f.width / 2 << "' y='" << f.y0 + f.height / 2
            << "' text-anchor='middle' fill='#888'>no data yet</text>\n";
        return;
    }
    f.xs.pad();
    f.ys.pad();
    draw_axes(svg, f, panel.title);
    for (size_t k = 0; k < panel.series.size(); ++k) {
        const PlotSeries& s = panel.series[k];
        const char* colour = kColours[k % 5];
        svg << "<polyline fill='none' stroke='" << colour << "' stroke-width='1.5' points='";
        size_t points = 0;
        for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i)
            if (std::isfinite(s.x[i]) && std::isfinite(s.y[i])) {
                svg << f.px(s.x[i]) << "," << f.py(s.y[i]) << " ";
                ++points;
            }
        svg << "'/>\n";
        // A single point draws no line: mark every point when there are few.
        if (points <= 20)
            for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i)
                if (std::isfinite(s.x[i]) && std::isfinite(s.y[i]))
                    svg << "<circle cx='" << f.px(s.x[i]) << "' cy='" << f.py(s.y[i])
                        << "' r='2.5' fill='" << colour << "'/>\n";
        double ly = f.y0 + 14 + 16 * double(k);
        svg << "<line x1='" << f.x0 + f.width - 110 << "' y1='" << ly - 4 << "' x2='"
            << f.x0 + f.width - 92 << "' y2='" << ly - 4 << "' stroke='" << colour
            << "' stroke-width='2'/>\n<text x='" << f.x0 + f.width - 88 << "' y='" << ly << "'>"
            << escape(s.label) << "</text>\n";
    }
}

}  // namespace

std::string render_svg_plot(const std::vector<PlotPanel>& panels, const std::string& title) {
    std::ostringstream svg;
    const double width = kPanelWidth * double(std::max<size_t>(1, panels.size()));
    svg << "<?xml version='1.0' encoding='UTF-8'?>\n"
        << "<svg xmlns='http://www.w3.org/2000/svg' width='" << width << "' height='"
        << kPanelHeight + 20 << "' font-family='sans-serif' font-size='11'>\n"
        << "<rect width='100%' height='100%' fill='#fafafa'/>\n"
        << "<text x='" << width / 2 << "' y='18' text-anchor='middle' font-size='14'>"
        << escape(title) << "</text>\n";
    for (size_t i = 0; i < panels.size(); ++i) draw_panel(svg, panels[i], kPanelWidth * double(i));
    svg << "</svg>\n";
    return svg.str();
}

}  // namespace lumen::train
